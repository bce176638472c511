// The program-text file types: MLIR (StableHLO, Enzyme-JaX and upstream dialects) and XLA HLO text.
// Each is one document-registry file type (so the file browser knows it) and one editor language
// (so the file editor highlights it).
export interface IProgramFileType {
  /** The file type's and the editor language's name. */
  readonly name: string;
  readonly displayName: string;
  /** With the leading dot, as the document registry wants them. */
  readonly extensions: readonly string[];
  /** The first is the type's own; the language answers to all. */
  readonly mimeTypes: readonly string[];
}

export const FILE_TYPES: readonly IProgramFileType[] = [
  {
    name: 'mlir',
    displayName: 'MLIR',
    extensions: ['.mlir'],
    mimeTypes: ['text/x-mlir']
  },
  {
    name: 'stablehlo',
    displayName: 'StableHLO',
    extensions: ['.stablehlo'],
    mimeTypes: ['text/x-stablehlo']
  },
  {
    name: 'xla-hlo',
    displayName: 'XLA HLO',
    extensions: ['.hlo'],
    mimeTypes: ['text/x-xla-hlo']
  }
];
