// Notebook cells that start with %%mlir hold MLIR text: their editor gets the extension's MLIR language
// (the files' highlighting). A cell's editor language follows its model's MIME type, which the notebook
// sets from the kernel's language for every code cell; this plugin sets text/x-mlir on the cells whose
// first line is %%mlir, puts the notebook's back when that line goes, and sets its own again when the
// notebook resets them all (a kernel change).
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { INotebookTracker, Notebook } from '@jupyterlab/notebook';

import { isMlirCell } from './cellcode';

export const MLIR_CELL_MIME = 'text/x-mlir';

function follow(notebook: Notebook, model: ICellModel, followed: WeakSet<ICellModel>): void {
  if (model.type !== 'code' || followed.has(model)) return;
  followed.add(model);
  const code = model as ICodeCellModel;
  const apply = () => {
    if (notebook.isDisposed) return;
    const want = isMlirCell(code.sharedModel.getSource()) ? MLIR_CELL_MIME : notebook.codeMimetype;
    if (code.mimeType !== want) code.mimeType = want;
  };
  code.contentChanged.connect(apply);
  code.mimeTypeChanged.connect(apply);
  apply();
}

export const mlirCells: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:mlir-cells',
  description: 'Highlights notebook cells that start with %%mlir as MLIR.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      const notebook = panel.content;
      const followed = new WeakSet<ICellModel>();
      const all = () => {
        const cells = notebook.model?.cells;
        if (!cells) return;
        for (let i = 0; i < cells.length; i++) follow(notebook, cells.get(i), followed);
      };
      notebook.modelChanged.connect(all);
      notebook.modelContentChanged.connect(all);
      void panel.context.ready.then(all);
      all();
    });
  }
};
