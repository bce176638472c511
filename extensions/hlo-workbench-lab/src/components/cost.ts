// The cost of stages, in every view (the panel's Cost tab, kind "cost"; the view's "cost" section): the cost table
// Python made (the analytic model's rows, XLA's where the host measured them), a chart of ops, flops and bytes
// across the module stages drawn from the same rows, and in the panel the per-op cost of stage B or why it has
// none (workbench/views/widgets/costtab.py). With a few stages the table is drawn one row per measure and one
// column per stage, so that two dozen measures fit a narrow page; the stage column of a wider table stays first.
// Facts: [data-hwb="cost-table"], [data-hwb="cost-bar"] per bar (data-stage, data-measure, data-value,
// data-changed), [data-hwb="op-costs"] (data-stage).
import { add, h, note, section, table } from './dom';
import { formatNumber } from './format';
import type { IMounted, ITable, IViewModel } from './model';
import { register } from './widget';

/** What is drawn: the rows and the line of Python that makes them; the stages whose seconds are their first
 * run's (served from a cache) and those that changed the module (red in the chart); the per-op cost of one stage
 * (its table, or `error`: `words` say why none); `busy` while the host computes them. */
export interface ICost {
  table?: ITable | null;
  python?: string;
  note?: string;
  cached?: string[];
  changed?: string[];
  ops?: { stage: string; title: string; python?: string; words: string; error?: boolean; table?: ITable };
  busy?: string;
}

/** `t` turned so that each row is a column of it: [measure, value of row 1, value of row 2, ...], headed by
 * the first column's values (the stages); measures with no value in any row are left out. */
export function transposed(t: ITable): ITable {
  const columns = [t.columns[0], ...t.rows.map(r => String(r[0]))];
  const rows: unknown[][] = [];
  t.columns.forEach((c, k) => {
    if (k === 0) return;
    const values = t.rows.map(r => r[k]);
    if (values.every(v => v === null || v === undefined || v === '')) return;
    rows.push([c, ...values]);
  });
  return { columns: columns.map((c, k) => (k === 0 ? 'measure' : c)), rows };
}

const MEASURES = Object.entries({ ops: 'ops', flops: 'flops', bytes: 'bytes (unfused)' });
const [BAR, STRIP, GAP, LEFT, NAMES] = [14, 44, 10, 96, 120]; // px
const NAME_CHARS = 22; // a stage's name under its bars, cut (whole in its title)

/** A bar per module stage (those the model counted: `ops` has a number) for each of ops, flops and bytes, scaled
 * to the largest, its name under them; null for fewer than two such stages. */
export function costChart(t: ITable, changed: ReadonlySet<string>): SVGSVGElement | null {
  const col = (c: string) => t.columns.indexOf(c);
  const rows = t.rows.filter(r => typeof r[col('ops')] === 'number');
  if (rows.length < 2) return null;
  const [width, height] = [LEFT + rows.length * BAR, MEASURES.length * (STRIP + GAP) + NAMES];
  const holder = h('div');
  holder.innerHTML = `<svg class="hwbv-cost-chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"></svg>`;
  const chart = holder.firstElementChild as SVGSVGElement;
  MEASURES.forEach(([c, words], k) => {
    const values = rows.map(r => Number(r[col(c)] ?? 0));
    const top = Math.max(...values) || 1;
    const y = k * (STRIP + GAP);
    add(chart, 'text', { x: LEFT - 6, y: y + 12, 'text-anchor': 'end' }, words);
    add(chart, 'text', { x: LEFT - 6, y: y + 26, 'text-anchor': 'end' }, `max ${formatNumber(top)}`);
    rows.forEach((r, i) => {
      const stage = String(r[0]);
      const tall = Math.max((STRIP * values[i]) / top, values[i] ? 1 : 0);
      const bar = add(chart, 'rect', { x: LEFT + i * BAR, y: y + STRIP - tall, width: BAR - 3, height: tall });
      const facts = { hwb: 'cost-bar', stage, measure: c, value: `${values[i]}`, changed: `${changed.has(stage)}` };
      Object.assign(bar.dataset, facts);
      add(bar, 'title', {}, `${stage}: ${formatNumber(values[i])} ${words}`);
    });
  });
  rows.forEach((r, i) => {
    const [x, y, stage] = [LEFT + i * BAR + BAR / 2, MEASURES.length * (STRIP + GAP), String(r[0])];
    const cut = stage.length > NAME_CHARS ? `${stage.slice(0, NAME_CHARS - 1)}\u2026` : stage;
    add(
      add(chart, 'text', { x, y, transform: `rotate(-60 ${x} ${y})`, 'text-anchor': 'end' }, cut),
      'title',
      {},
      stage
    );
  });
  return chart;
}

/** The table with " (cached)" after the seconds of the `cached` stages. */
function marked(t: ITable, cached: readonly string[]): ITable {
  const k = t.columns.indexOf('seconds');
  const mark = (r: unknown[]) =>
    r.map((v, j) => (j === k && v !== null && cached.includes(String(r[0])) ? `${formatNumber(v)} (cached)` : v));
  return k < 0 ? t : { columns: t.columns, rows: t.rows.map(mark) };
}

/** A heading in bold, the line of Python that makes what follows, and words after it. */
function line(title: string, python = '', words = '', cls = ''): HTMLElement {
  const div = h('div', 'hwbv-cost-line');
  div.append(h('b', '', title), ...(python ? [' ', h('code', '', python)] : []), h('span', cls, words));
  return div;
}

export function costParts(d: ICost): Element[] {
  const parts: Element[] = [d.busy, d.note].filter(t => t).map(t => note(t!));
  if (d.table) {
    if (d.python) parts.push(line('Every stage', d.python));
    const t = marked(d.table, d.cached ?? []);
    const shown = t.rows.length <= 6 ? transposed(t) : t;
    const wrap = table('hwbv-cost-table', shown.columns, shown.rows);
    wrap.dataset.hwb = 'cost-table';
    const chart = costChart(d.table, new Set(d.changed));
    parts.push(wrap, ...(chart ? [chart] : []));
  } else if (d.table === null) parts.push(h('div', 'hwbv-muted', 'no cost rows'));
  const ops = d.ops;
  if (ops) {
    const div = h('div', 'hwbv-op-costs');
    Object.assign(div.dataset, { hwb: 'op-costs', stage: ops.stage });
    div.append(line(ops.title, ops.python, ops.words, ops.error ? 'hwbv-error' : ''));
    if (ops.table) div.append(table('hwbv-op-cost-table', ops.table.columns, ops.table.rows));
    parts.push(div);
  }
  return parts;
}

export function costSection(m: IViewModel): HTMLElement | null {
  if (!m.cost && !m.cost_note) return null;
  const { node, body } = section('cost', 'Cost', m.cost ? m.cost.rows.length : undefined);
  const changed = m.stages.filter(s => s.changed).map(s => s.stage);
  body.append(...costParts({ table: m.cost, note: m.cost_note, changed }));
  return node;
}

register('cost', (el, data: ICost): IMounted => {
  const root = el.appendChild(h('div', 'hwbv hwbv-cost'));
  const draw = (d: ICost) => root.replaceChildren(...costParts(d));
  draw(data);
  return { update: d => draw(d as unknown as ICost), dispose: () => root.remove() };
});
