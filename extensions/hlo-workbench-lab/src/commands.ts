// The commands: "Explore this cell with hlo-workbench", "Open stage as document" and "Save
// exploration…", in the command palette, the notebook cell's context menu (schema/commands.json) and on
// keyboard shortcuts that sit with JupyterLab's run-cell ones (Accel Alt Enter, Accel Alt O, Accel Alt S).
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, InputDialog, MainAreaWidget, Notification, showErrorMessage } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { OutputArea } from '@jupyterlab/outputarea';
import { EditorState } from '@codemirror/state';
import { EditorView, lineNumbers } from '@codemirror/view';
import { Widget } from '@lumino/widgets';

import { exploreCode, hloxName, saveCode } from './cellcode';
import type { IText, IViewModel } from './components';
import { HloxContent } from './hlox';
import { mlir } from './components/language';
import { BUNDLE_MIME } from './mime';
import { viewOf } from './server';

export const COMMANDS = {
  explore: 'hlo-workbench:explore-cell',
  openStage: 'hlo-workbench:open-stage',
  save: 'hlo-workbench:save-exploration'
} as const;
const CATEGORY = 'hlo-workbench';

/** The exploration the user looks at: a .hlox tab's, or the active cell's %%hlo output's. */
interface IShown {
  model: IViewModel;
  /** the stage on the right of its diff */
  right: string;
  /** the stages whose text can be opened: a .hlox's every stage, an output's the texts it carries */
  names: string[];
  /** a stage's text: the model's, or asked of the server (a .hlox: Python reads the file) */
  text(name: string): Promise<IText | undefined>;
}

function activeCell(tracker: INotebookTracker): { panel: NotebookPanel; cell: CodeCell } | null {
  const panel = tracker.currentWidget;
  const cell = panel?.content.activeCell;
  return panel && cell instanceof CodeCell ? { panel, cell } : null;
}

/** The view model of `cell`'s newest %%hlo output, or null. */
function outputBundle(cell: CodeCell | undefined): any | null {
  const outputs = cell?.model.outputs;
  if (!outputs) return null;
  for (let i = outputs.length - 1; i >= 0; i--) {
    const data = outputs.get(i).data[BUNDLE_MIME];
    if (data && typeof data === 'object') return data;
  }
  return null;
}

function shown(app: JupyterFrontEnd, tracker: INotebookTracker): IShown | null {
  const current = app.shell.currentWidget;
  const hlox = current instanceof DocumentWidget && current.content instanceof HloxContent ? current.content : null;
  if (hlox?.model) {
    const path = hlox.path;
    return {
      model: hlox.model,
      right: hlox.pair[1],
      names: hlox.model.stages.filter(s => !s.error).map(s => s.stage),
      text: async name => (await viewOf(path, name, name)).texts[name]
    };
  }
  const bundle = outputBundle(activeCell(tracker)?.cell);
  if (!bundle || typeof bundle.texts !== 'object' || !bundle.shown) return null;
  const model = bundle as IViewModel;
  return {
    model,
    right: model.shown.right,
    names: Object.values(model.texts)
      .filter(t => t.state === 'ok')
      .map(t => t.stage),
    text: async name => model.texts[name]
  };
}

/** A read-only editor tab holding one stage's text, highlighted by the extension's language. */
export class StageDocument extends Widget {
  readonly editor: EditorView;
  constructor(text: string) {
    super();
    this.addClass('hwb-stage-doc');
    this.editor = new EditorView({
      parent: this.node,
      state: EditorState.create({
        doc: text,
        extensions: [lineNumbers(), mlir(), EditorState.readOnly.of(true), EditorView.editable.of(false)]
      })
    });
  }
  dispose(): void {
    this.editor.destroy();
    super.dispose();
  }
}

/** Runs a command; an Error it throws is shown in a dialog titled `title`, in the error's words. */
async function explained(title: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    await showErrorMessage(title, err instanceof Error ? err.message : String(err));
  }
}

async function openStage(app: JupyterFrontEnd, tracker: INotebookTracker, stage?: string): Promise<void> {
  const at = shown(app, tracker);
  if (!at) throw new Error('Select a cell with a %%hlo output, or a saved exploration (.hlox) tab, first.');
  const { model, names } = at;
  let name = stage;
  if (!name) {
    if (!names.length) throw new Error('No stage of this exploration has its text saved.');
    const picked = await InputDialog.getItem({
      title: 'Open stage as document',
      label: `Stage of ${model.title}`,
      items: names,
      current: Math.max(0, names.indexOf(at.right))
    });
    if (!picked.button.accept || !picked.value) return;
    name = picked.value;
  }
  const text = await at.text(name);
  if (!text || text.state !== 'ok') {
    const why = text?.note ? ': ' + text.note : ' (this output carries the pair it shows)';
    throw new Error(`Stage ${name} has no text here${why}`);
  }
  const widget = new MainAreaWidget({ content: new StageDocument(text.text) });
  widget.id = `hwb-stage-${Date.now()}`;
  widget.title.label = `${name} \u2014 ${model.title}`;
  widget.title.caption = `${name} of ${model.title} (read-only)${text.note ? ': ' + text.note : ''}`;
  widget.title.closable = true;
  widget.addClass('hwb-stage-document');
  widget.node.dataset.stage = name;
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
}

async function explore(tracker: INotebookTracker): Promise<void> {
  const at = activeCell(tracker);
  if (!at) throw new Error('Select a code cell of a notebook first.');
  const { panel, cell } = at;
  const code = exploreCode(cell.model.sharedModel.getSource());
  const session = panel.sessionContext;
  await session.ready;
  if (!session.session?.kernel) throw new Error('The notebook has no kernel: start one (Kernel menu) first.');
  // as CodeCell.execute runs a cell, with this code instead of the cell's text
  const model = cell.model;
  model.sharedModel.transact(() => {
    model.clearExecution();
    cell.outputHidden = false;
  }, false);
  model.executionState = 'running';
  model.trusted = true; // the user runs it: its outputs are trusted, as notebook:run-cell's are
  try {
    const reply = await OutputArea.execute(code, cell.outputArea, session, { cellId: model.sharedModel.getId() });
    model.executionCount = reply?.content.execution_count ?? null;
  } finally {
    model.executionState = 'idle';
  }
}

async function save(tracker: INotebookTracker): Promise<void> {
  const at = activeCell(tracker);
  const bundle = outputBundle(at?.cell);
  if (!at || !bundle) throw new Error('Select a cell with a %%hlo output first.');
  const kernel = at.panel.sessionContext.session?.kernel;
  if (!kernel) {
    throw new Error('The notebook has no kernel: the exploration lives in the kernel. Run the cell, then save.');
  }
  const variable = typeof bundle.variable === 'string' ? bundle.variable : '';
  if (!variable) {
    throw new Error(
      'This output does not say which variable holds its Exploration ' +
        '(a panel shown without bind=): save it from Python, ex.save("name.hlox").'
    );
  }
  const asked = await InputDialog.getText({
    title: 'Save exploration',
    label: `Save ${variable} (${bundle.title ?? 'exploration'}) as a .hlox file, in the notebook's folder:`,
    text: hloxName(at.panel.context.path, String(bundle.title ?? variable)),
    okLabel: 'Save'
  });
  if (!asked.button.accept || !asked.value) return;
  const file = asked.value.endsWith('.hlox') ? asked.value : asked.value + '.hlox';
  const future = kernel.requestExecute({ code: saveCode(variable, file), silent: false, store_history: false });
  let printed = '';
  let error = '';
  future.onIOPub = msg => {
    const content = msg.content as any;
    if (msg.header.msg_type === 'stream') printed += content.text;
    if (msg.header.msg_type === 'error') error = `${content.ename}: ${content.evalue}`;
  };
  const reply = await future.done;
  if (reply.content.status !== 'ok' || error) throw new Error(error || 'the kernel could not save it');
  Notification.success(`Saved ${printed.trim() || file}`, { autoClose: 5000 });
}

export const commands: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:commands',
  description: 'Explore this cell, open a stage as a document, save an exploration.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, palette: ICommandPalette | null) => {
    const hasCell = () => activeCell(tracker) !== null;
    app.commands.addCommand(COMMANDS.explore, {
      label: 'Explore this cell with hlo-workbench',
      caption: 'Run the cell under %%hlo (its text stays as it is): every compiler stage, the pass-toggle panel',
      isEnabled: hasCell,
      execute: () => explained('Explore this cell', () => explore(tracker))
    });
    app.commands.addCommand(COMMANDS.openStage, {
      label: 'Open stage as document',
      caption: 'A read-only editor tab with one stage of the exploration shown (a %%hlo output or a .hlox tab)',
      isEnabled: () => shown(app, tracker) !== null,
      execute: args =>
        explained('Open stage as document', () =>
          openStage(app, tracker, typeof args.stage === 'string' ? args.stage : undefined)
        )
    });
    app.commands.addCommand(COMMANDS.save, {
      label: 'Save exploration\u2026',
      caption: "Save the active cell's exploration (the kernel's) as a .hlox file",
      isEnabled: () => outputBundle(activeCell(tracker)?.cell) !== null,
      execute: () => explained('Save exploration', () => save(tracker))
    });
    for (const command of Object.values(COMMANDS)) palette?.addItem({ command, category: CATEGORY });
  }
};
