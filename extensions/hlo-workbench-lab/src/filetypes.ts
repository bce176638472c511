// The program-text file types, MLIR (StableHLO, Enzyme-JaX and upstream dialects) and XLA HLO text: each is
// a document-registry file type (the file browser knows it) and an editor language (the file editor
// highlights it with the workbench tokenizer, components/language.ts).
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

import { mlir } from './components/language';

export const FILE_TYPES = [
  { name: 'mlir', displayName: 'MLIR', extension: '.mlir', mime: 'text/x-mlir' },
  { name: 'stablehlo', displayName: 'StableHLO', extension: '.stablehlo', mime: 'text/x-stablehlo' },
  { name: 'xla-hlo', displayName: 'XLA HLO', extension: '.hlo', mime: 'text/x-xla-hlo' }
] as const;

export const programText: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:program-text',
  description: 'MLIR, StableHLO and XLA HLO file types, highlighted with the workbench tokenizer.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    const support = mlir(); // one language for all three: the tokenizer reads each of them
    for (const { name, displayName, extension, mime } of FILE_TYPES) {
      app.docRegistry.addFileType({
        name,
        displayName,
        extensions: [extension],
        mimeTypes: [mime],
        fileFormat: 'text',
        contentType: 'file'
      });
      languages.addLanguage({ name, displayName, mime, extensions: [extension.slice(1)], support });
    }
  }
};
