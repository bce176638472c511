// Types of what workbench/assets/diffview.js exports to other JavaScript: this extension imports the
// tokenizer from that file (the one copy the panel and the offline report load too), and the view
// components (src/components) its viewer, `render({model, el})`. The rows it shows are made by Python
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

  const widget: { render(props: { model: unknown; el: HTMLElement }): unknown };
  export default widget;
}
