// Where compile time goes, both pipelines in one list (ex.compile_profile()'s table as Python made it), in every
// view: the panel's Compile tab (kind "compile", workbench/views/widgets/compiletab.py) and the view's "compile"
// section. One row per step in the order they ran, with a bar of its share of the whole; "only the steps that
// made a stage or took 1 %" keeps the list short (XLA runs some 200 passes, most in microseconds). A step that
// made a stage shown is a link: the panel diffs that stage against its parent ("stage" {name}), a view picks
// that pair. Facts: [data-hwb="compile-step"] per step (data-kind, data-stage, data-link).
import { h, note, section } from './dom';
import { formatMs } from './format';
import type { IMounted, ITable, IViewModel } from './model';
import { register } from './widget';

/** The profile's table, the stages a click can show (`links`), a note on the whole; `busy` or `error` meanwhile. */
export type ICompile = { table?: ITable | null; links?: string[]; note?: string; busy?: string; error?: string };

const CELLS = ['bar', 'kind', 'name', 'stage', 'ms', 'share', 'changed'];

/** The list of steps under its filter (`few` keeps its state through redraws), with what the host says above. */
function compileList(d: ICompile, onStage: ((stage: string) => void) | null, few = { checked: true }): HTMLElement {
  const node = h('div', 'hwbv-cp');
  node.append(
    ...[d.busy, d.note].filter(t => t).map(t => note(t!)),
    ...(d.error ? [h('div', 'hwbv-error', d.error)] : [])
  );
  if (!d.table) return node;
  const { columns, rows } = d.table;
  const at = (r: unknown[], c: string) => r[columns.indexOf(c)];
  const links = new Set(onStage ? d.links : []);
  const top = Math.max(...rows.map(r => Number(at(r, 'share'))), 1e-12);
  const [head, label, count, list] = [
    h('div', 'hwbv-cp-head'),
    h('label'),
    h('span', 'hwbv-muted'),
    h('div', 'hwbv-cp-list')
  ];
  const box = Object.assign(h('input'), { type: 'checkbox', checked: few.checked });
  label.append(box, ' only the steps that made a stage or took 1 %');
  head.append(label, count);
  const row = (r: unknown[]) => {
    const [kind, name, pipeline, stage] = ['kind', 'name', 'pipeline', 'stage'].map(c => String(at(r, c) ?? ''));
    const share = Number(at(r, 'share'));
    const ms = formatMs(1e3 * Number(at(r, 'seconds'))) + (at(r, 'cached') === true ? ' (cached)' : '');
    const e = h('div', `hwbv-cp-row hwbv-cp-${kind.replace(' ', '-')}`);
    Object.assign(e.dataset, { hwb: 'compile-step', kind, stage, link: String(links.has(stage)) });
    e.title = `${name}${pipeline ? ` in ${pipeline}` : ''}: ${ms}, ${(100 * share).toFixed(2)} %`;
    const texts = [
      '',
      kind,
      name,
      stage,
      ms,
      `${(100 * share).toFixed(1)} %`,
      at(r, 'changed') === true ? 'changed' : ''
    ];
    e.append(...texts.map((t, k) => h('span', `hwbv-cp-${CELLS[k]}`, t)));
    e.firstChild!.appendChild(h('span')).style.width = `${((100 * share) / top).toFixed(1)}%`;
    if (links.has(stage)) e.addEventListener('click', () => onStage!(stage));
    return e;
  };
  const draw = () => {
    few.checked = box.checked;
    const shown = rows.filter(
      r =>
        !box.checked ||
        at(r, 'kind') !== 'xla pass' ||
        Number(at(r, 'share')) >= 0.01 ||
        links.has(String(at(r, 'stage')))
    );
    count.textContent = `${shown.length} of ${rows.length} steps`;
    list.replaceChildren(...shown.map(row));
  };
  box.addEventListener('change', draw);
  draw();
  node.append(head, list, ...(links.size ? [note('click a step that made a stage to diff it with its parent')] : []));
  return node;
}

export function compileSection(m: IViewModel, pick: (left: string, right: string) => void): HTMLElement | null {
  const t = m.compile?.table;
  if (!t) return null;
  const { node, body } = section('compile', 'Compile profile', t.rows.length);
  const parents = new Map(m.stages.filter(s => s.parent).map(s => [s.stage, s.parent!]));
  body.append(compileList({ table: t, links: [...parents.keys()] }, stage => pick(parents.get(stage)!, stage)));
  return node;
}

register('compile', (el, data: ICompile, host): IMounted => {
  const [root, few] = [h('div', 'hwbv hwbv-compile'), { checked: true }];
  const draw = (d: ICompile) => root.replaceChildren(compileList(d, name => host.act('stage', { name }), few));
  el.append(root);
  draw(data);
  return { update: d => draw(d as unknown as ICompile), dispose: () => root.remove() };
});
