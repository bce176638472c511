// Types of what workbench/assets/diffview.js exports to other JavaScript: this extension imports the
// tokenizer from that file (the one copy the panel and the offline report load too), and the view
// components (src/components) its viewer, `render(el, options)`. The rows it shows are made by Python
// (read from a diff's runs by src/components/rows.ts): no view diffs lines in JavaScript.
declare module '*/workbench/assets/diffview.js' {
  /** A token: its text and its class ("" for plain text); class `c` is shown as the CSS class `h-c`. */
  export type Token = [text: string, cls: string];

  /** Every class `tokenize` gives a token, in the order its rules are tried. */
  export const TOKEN_CLASSES: readonly string[];
  /** The tokenizer's rules: one named group per class (group `dattr` is reported as `attr`). */
  export const RULES: RegExp;
  /** One line of MLIR / StableHLO / XLA HLO as tokens whose texts join to the line. */
  export function tokenize(line: string): Token[];
  export function escape(s: string): string;
  export function toHtml(tokens: Token[], from?: number, to?: number): string;
  export function changedRange(a: Token[], b: Token[]): [number, number, number];

  /** The viewer in `el` (diffview.js's header): `load` shows a diff; with `onOp`, `mark` marks lines. */
  export function render(
    el: HTMLElement,
    options?: { height?: number; onOp?: (side: string, line: number) => void; mode?: string; onMode?: (mode: string) => void }
  ): {
    load(d: { before: string; after: string; rows: Int32Array; beforeName: string; afterName: string; tips?: unknown[] }): void;
    mark(before: number[], after: number[], first?: string): void;
    dispose(): void;
  };
}
