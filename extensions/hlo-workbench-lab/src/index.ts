// The hlo-workbench JupyterLab extension: one plugin per job, each in its own module; index.ts only
// lists them: file types and highlighting, the .hlox viewer, the %%hlo output renderer, the commands,
// the highlighting of %%mlir cells, and "Compare with…" on a .hlox tab. (The panel's stage editor is a
// view component, src/components/editor.ts, in the panel's own module: nothing here watches the page.)
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

import { bundleRenderer } from './bundle';
import { commands } from './commands';
import { hloxCompare } from './comparecommand';
import { FILE_TYPES } from './filetypes';
import { hloxViewer } from './hlox';
import { mlir } from './components/language';
import { mlirCells } from './mlircells';

export { FILE_TYPES } from './filetypes';
export { mlir, mlirLanguage, TOKEN_TAGS, cssClass } from './components/language';
export { exploreCode, saveCode, hloxName, isMlirCell, cellMagic } from './cellcode';

/** .mlir, .stablehlo and .hlo files: known to the file browser, highlighted in the editor. */
const programText: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:program-text',
  description: 'MLIR, StableHLO and XLA HLO file types, highlighted with the workbench tokenizer.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    const support = mlir(); // one language for all three: the tokenizer reads each of them
    for (const type of FILE_TYPES) {
      app.docRegistry.addFileType({
        name: type.name,
        displayName: type.displayName,
        extensions: [...type.extensions],
        mimeTypes: [...type.mimeTypes],
        fileFormat: 'text',
        contentType: 'file'
      });
      languages.addLanguage({
        name: type.name,
        displayName: type.displayName,
        mime: [...type.mimeTypes],
        extensions: type.extensions.map(e => e.slice(1)),
        support
      });
    }
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [
  programText,
  hloxViewer,
  bundleRenderer,
  commands,
  mlirCells,
  hloxCompare
];
export default plugins;
