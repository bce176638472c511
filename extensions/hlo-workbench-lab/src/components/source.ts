// The panel's Source tab (kind "source"; workbench/views/widgets/source.py makes every fact): part "listing" is the
// user's code line by line, a heat bar of what each line became in stage B and its op count, long runs of lines
// without ops folded, the note on what the bars measure; part "trail", under the diff view, says what is marked and
// shows an op's lineage. Actions: "line" {file, line} (a click on a line with ops), "metric" {metric}. Facts:
// [data-hwb="source-line"] (data-file, data-line, data-ops, data-selected), [data-hwb="source-metric"] (data-metric,
// aria-pressed), [data-hwb="source-status"] (data-error), [data-hwb="lineage"] (data-stage, data-result,
// data-removed-by) and a [data-hwb="lineage-row"] per stage (data-stage, data-side, data-count, data-state).
import { button, h, note } from './dom';
import type { IMounted } from './model';
import { register, type IWidgetHost } from './widget';

interface IRow {
  k: 'file' | 'line' | 'gap' | 'none';
  file: string;
  line: number;
  code: string;
  ops?: number;
  frac?: number;
  label?: string;
  title?: string;
  lib?: string;
}
interface IListing {
  metric: string;
  unit: string;
  note: string;
  message: string;
  rows: IRow[];
  selected: string[];
}
interface ILineage {
  stage: string;
  result: string;
  op: string;
  sources: string[];
  removed_by: string;
  rows: {
    stage: string;
    side: string;
    count: number;
    state: string;
    note: string;
    more: number;
    ops: { result: string; op: string; text: string }[];
  }[];
}
interface ITrail {
  status: { text: string; error: boolean }[];
  lineage: ILineage | { error: string } | null;
}

const METRICS = [
  ['flops', "each line's flops"],
  ['bytes', "each line's bytes"],
  ['measured', "each line's measured run time (JAX's profiler runs the last MLIR stage)"]
];

/** `el` with `parts` appended: text or nodes. */
const put = <E extends HTMLElement>(el: E, ...parts: (string | Node)[]): E => (el.append(...parts), el);

function row(r: IRow): HTMLElement {
  if (r.k === 'file') return Object.assign(h('div', 'wbsrc-file', r.code), { title: r.file });
  if (r.k === 'gap') return h('div', 'wbsrc-gap', r.code);
  const ops = r.ops ?? 0;
  const e = h('div', `wbsrc-line${ops > 0 ? ' wbsrc-ops' : ''}${r.k === 'none' ? ' wbsrc-none' : ''}`);
  Object.assign(e.dataset, { hwb: 'source-line', file: r.file, line: String(r.line), ops: String(ops) });
  e.title = r.title ?? '';
  const heat = h('span', 'wbsrc-heat');
  if (r.frac) put(heat, h('span', 'wbsrc-bar')).style.setProperty('--frac', `${(100 * r.frac).toFixed(1)}%`);
  const code = put(h('span', 'wbsrc-code', r.code), ...(r.lib ? [h('span', 'wbsrc-lib', r.lib)] : []));
  return put(
    e,
    put(heat, h('span', 'wbsrc-val', r.label ?? '')),
    h('span', 'wbsrc-n', ops ? String(ops) : ''),
    h('span', 'wbsrc-ln', r.line ? String(r.line) : ''),
    code
  );
}

function listing(el: HTMLElement, first: IListing, host: IWidgetHost): IMounted {
  const metrics = METRICS.map(([name, tip]) =>
    button('hwbv-pick', name, () => host.act('metric', { metric: name }), `the bars show ${tip}`)
  );
  metrics.forEach((b, k) => Object.assign(b.dataset, { hwb: 'source-metric', metric: METRICS[k][0] }));
  const said = note('');
  const unit = h('span', 'wbsrc-heat');
  const list = h('div', 'wbsrc-list');
  const msg = h('div', 'wbsrc-msg');
  const box = put(
    h('div', 'wbsrc'),
    put(
      h('div', 'wbsrc-head'),
      unit,
      h('span', 'wbsrc-n', 'ops'),
      h('span', 'wbsrc-ln', 'line'),
      h('span', 'wbsrc-code', 'code')
    ),
    list,
    msg
  );
  const top = put(
    h('div', 'wbsrc-top'),
    put(h('span', 'wbsrc-title', ''), h('b', '', 'Your code'), ', line by line: what it became in B'),
    put(h('span', 'wbsrc-metrics'), ...metrics)
  );
  const root = put(h('div', 'hwbv wbsrc-tab'), top, said, box);
  el.append(root);
  list.addEventListener('click', e => {
    const line = (e.target as HTMLElement).closest<HTMLElement>('.wbsrc-line.wbsrc-ops');
    if (line) host.act('line', { file: line.dataset.file, line: Number(line.dataset.line) });
  });
  let drawn = '';
  const draw = (d: IListing) => {
    metrics.forEach(b => b.setAttribute('aria-pressed', String(b.dataset.metric === d.metric)));
    Object.assign(said, { textContent: d.note, hidden: !d.note });
    msg.textContent = d.message;
    box.classList.toggle('wbsrc-has-msg', !!d.message);
    unit.textContent = d.unit;
    if (JSON.stringify(d.rows) !== drawn) list.replaceChildren(...d.rows.map(row));
    drawn = JSON.stringify(d.rows);
    const keys = new Set(d.selected);
    const lines = Array.from(list.querySelectorAll<HTMLElement>('.wbsrc-line'));
    for (const e of lines) {
      e.dataset.selected = String(keys.has(`${e.dataset.file}:${e.dataset.line}`));
      e.classList.toggle('wbsrc-sel', e.dataset.selected === 'true');
    }
    // the first line selected scrolled into the list (not the page) unless it is in view
    const s = lines.find(e => e.dataset.selected === 'true');
    if (s && (s.offsetTop < list.scrollTop || s.offsetTop + s.offsetHeight > list.scrollTop + list.clientHeight)) {
      list.scrollTop = Math.max(0, s.offsetTop - list.clientHeight / 3);
    }
  };
  draw(first);
  return { update: (d: any) => draw(d), dispose: () => root.remove() };
}

function lineage(l: ILineage): HTMLElement {
  const code = (text: string, title = '') => Object.assign(h('code', '', text), { title });
  const head = put(
    h('div', 'wbsrc-lineage-head'),
    h('b', '', 'Lineage'),
    ' of ',
    code(l.result),
    ` (${l.op}) of `,
    h('b', '', l.stage),
    ...(l.sources.length ? [', from '] : []),
    ...l.sources.flatMap((s, k) => (k ? [', ', code(s)] : [code(s)])),
    l.removed_by
      ? put(h('span', 'wbsrc-removed', ' · removed by '), h('b', '', l.removed_by))
      : ' · it lives on to the last stage'
  );
  const t = h('table', 'hwbv-table');
  put(t.createTHead().insertRow(), ...['', 'stage', 'ops', 'counterparts'].map(c => h('th', '', c)));
  const body = t.createTBody();
  for (const r of l.rows) {
    const tr = put(body, h('tr', `wbsrc-lin-${r.state}${r.side ? ' wbsrc-lin-pair' : ''}`))
      .lastElementChild as HTMLElement;
    Object.assign(tr.dataset, {
      hwb: 'lineage-row',
      stage: r.stage,
      side: r.side,
      count: String(r.count),
      state: r.state
    });
    const what = r.ops.length
      ? r.ops.flatMap((o, k) => [...(k ? [' · '] : []), code(o.result, o.text), ` ${o.op}`])
      : [h('span', 'hwbv-note', r.note)];
    put(
      tr,
      put(h('td'), h('b', '', r.side)),
      h('td', 'hwbv-wrap', r.stage),
      h('td', 'hwbv-num', String(r.count)),
      put(h('td', 'hwbv-wrap'), ...what, ...(r.more ? [` · … ${r.more} more`] : []))
    );
  }
  const wrap = put(
    h('div', 'wbsrc-lineage'),
    head,
    note(
      "values as each stage's own text names them (the diff " +
        "shows B's under the names of their counterparts in A); hover one for its line"
    ),
    put(h('div', 'hwbv-table-wrap wbsrc-lineage-rows'), t)
  );
  Object.assign(wrap.dataset, { hwb: 'lineage', stage: l.stage, result: l.result, removedBy: l.removed_by });
  return wrap;
}

function trail(el: HTMLElement, first: ITrail): IMounted {
  const root = h('div', 'hwbv wbsrc-trail');
  el.append(root);
  const draw = (d: ITrail) => {
    const parts: HTMLElement[] = d.status.map(s => h('div', s.error ? 'hwbv-error' : 'hwbv-note', s.text));
    d.status.forEach((s, k) => Object.assign(parts[k].dataset, { hwb: 'source-status', error: String(s.error) }));
    if (d.lineage && 'error' in d.lineage) {
      const e = put(h('div', 'wbsrc-lineage'), h('div', 'hwbv-error', d.lineage.error));
      e.dataset.hwb = 'lineage';
      parts.push(e);
    } else if (d.lineage) parts.push(lineage(d.lineage));
    root.replaceChildren(...parts);
    root.hidden = !parts.length;
  };
  draw(first);
  return { update: (d: any) => draw(d), dispose: () => root.remove() };
}

register('source', (el, data, host) => (data.part === 'trail' ? trail(el, data) : listing(el, data, host)));
