// The little DOM the components share. Every text goes in as text (textContent), never as HTML: stage names,
// pass strings, program text and printed output are the user's and the compiler's, not markup.
import { clip, formatNumber } from './format';

const CELL_CHARS = 200; // a table cell shows this much of a text (a pass string can be 12,000 characters)

/** A new element of `tag` with CSS class `cls` (space-separated) and `text` as its text. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls = '', text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A button of type "button" (never a form's submit) that runs `onClick`. */
export function button(cls: string, text: string, onClick: () => void, title = ''): HTMLButtonElement {
  const b = h('button', cls, text);
  b.type = 'button';
  if (title) b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

/** A section: its heading (with `count` where given) over its body, open unless `closed`. `hwb`: the section's
 * data-hwb name, by which hosts and tests find it. */
export function section(
  hwb: string,
  heading: string,
  count?: number,
  closed = false
): { node: HTMLDetailsElement; body: HTMLElement } {
  const node = h('details', 'hwbv-section');
  node.dataset.hwb = hwb;
  node.open = !closed;
  const summary = h('summary', 'hwbv-section-head', heading);
  if (count !== undefined) summary.append(h('span', 'hwbv-count', ` (${count.toLocaleString('en-US')})`));
  const body = h('div', 'hwbv-section-body');
  node.append(summary, body);
  return { node, body };
}

/** A table of `columns` over `rows`, each cell's value written by formatNumber; numbers right-aligned. */
export function table(cls: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): HTMLElement {
  const wrap = h('div', `hwbv-table-wrap ${cls}-wrap`);
  const t = h('table', `hwbv-table ${cls}`);
  const head = t.createTHead().insertRow();
  for (const c of columns) head.append(h('th', '', c));
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const v of row) {
      const text = formatNumber(v);
      const td = h(
        'td',
        typeof v === 'number' ? 'hwbv-num' : text.length > 40 ? 'hwbv-wrap hwbv-long' : '',
        clip(text, CELL_CHARS)
      );
      if (text.length > CELL_CHARS) td.title = clip(text, 4000);
      tr.append(td);
    }
  }
  wrap.append(t);
  return wrap;
}

/** A line of muted words. */
export function note(text: string, cls = ''): HTMLElement {
  return h('div', `hwbv-note ${cls}`.trim(), text);
}

/** A new `tag` in `parent`, in its namespace (SVG's, as the parser made the chart: the report names no URL, not
 * even a namespace's), with `attrs` and `text`. */
export function add(parent: Element, tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(parent.namespaceURI, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  parent.append(e);
  return e;
}
