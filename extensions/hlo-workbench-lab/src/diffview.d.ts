// Types of what workbench/assets/diffview.js exports to other JavaScript: this extension imports the
// tokenizer from that file (the one copy the panel and the offline report load too).
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

  /** Rows (before line, after line, kind) for two lists of lines: a line diff, value names blanked. */
  export function lineDiff(before: string[], after: string[]): Int32Array;
  /** The rows of a workbench diff's runs (Diff.runs(): "=12~1-3+2=40") for texts of `nBefore` and `nAfter`
   * lines, or why they do not fit them. */
  export function rowsOfRuns(runs: unknown, nBefore: number, nAfter: number): Int32Array | string;
  /** How many rows of each kind (by code: equal, changed, deleted, inserted, moved) the header counts. */
  export function rowCounts(rows: Int32Array): number[];

  const widget: { render(props: { model: unknown; el: HTMLElement }): unknown };
  export default widget;
}
