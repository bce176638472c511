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

/** What is drawn: the profile's table, the stages a click can show (`links`), a note on the whole; `busy` or
 * `error` while there is no table. */
export interface ICompile {
  table?: ITable | null;
  links?: string[];
  note?: string;
  busy?: string;
  error?: string;
}

interface IStep {
  kind: string;
  name: string;
  pipeline: string;
  stage: string;
  ms: string;
  share: number;
  changed: boolean;
}

function steps(t: ITable): IStep[] {
  const at = (r: unknown[], c: string) => r[t.columns.indexOf(c)];
  return t.rows.map(r => ({
    kind: String(at(r, 'kind')),
    name: String(at(r, 'name')),
    pipeline: String(at(r, 'pipeline') ?? ''),
    stage: String(at(r, 'stage') ?? ''),
    ms: formatMs(1e3 * Number(at(r, 'seconds'))) + (at(r, 'cached') === true ? ' (cached)' : ''),
    share: Number(at(r, 'share')),
    changed: at(r, 'changed') === true
  }));
}

/** The list of steps under its filter (`few` keeps its state through redraws), with what the host says above. */
function compileList(d: ICompile, onStage: ((stage: string) => void) | null, few = { checked: true }): HTMLElement {
  const node = h('div', 'hwbv-cp');
  if (d.busy) node.append(note(d.busy, 'hwbv-busy'));
  if (d.error) node.append(h('div', 'hwbv-error', d.error));
  if (d.note) node.append(note(d.note));
  if (!d.table) return node;
  const all = steps(d.table);
  const links = new Set(onStage ? d.links : []);
  const top = Math.max(...all.map(s => s.share), 1e-12);
  const box = Object.assign(h('input'), { type: 'checkbox', checked: few.checked });
  const [head, label, count, list] = [
    h('div', 'hwbv-cp-head'),
    h('label'),
    h('span', 'hwbv-muted'),
    h('div', 'hwbv-cp-list')
  ];
  label.append(box, ' only the steps that made a stage or took 1 %');
  head.append(label, count);
  const row = (s: IStep) => {
    const r = h('div', `hwbv-cp-row hwbv-cp-${s.kind.replace(' ', '-')}`);
    const link = links.has(s.stage);
    Object.assign(r.dataset, { hwb: 'compile-step', kind: s.kind, stage: s.stage, link: String(link) });
    r.title = `${s.name}${s.pipeline ? ` in ${s.pipeline}` : ''}: ${s.ms}, ${(100 * s.share).toFixed(2)} %`;
    const share = `${(100 * s.share).toFixed(1)} %`;
    const cells = {
      bar: '',
      kind: s.kind,
      name: s.name,
      stage: s.stage,
      ms: s.ms,
      share,
      changed: s.changed ? 'changed' : ''
    };
    r.append(...Object.entries(cells).map(([c, text]) => h('span', `hwbv-cp-${c}`, text)));
    const fill = r.firstChild!.appendChild(h('span'));
    fill.style.width = `${((100 * s.share) / top).toFixed(1)}%`;
    if (link) r.addEventListener('click', () => onStage!(s.stage));
    return r;
  };
  const draw = () => {
    few.checked = box.checked;
    const shown = all.filter(s => !box.checked || links.has(s.stage) || s.share >= 0.01 || s.kind !== 'xla pass');
    count.textContent = all.length ? `${shown.length} of ${all.length} steps` : '';
    list.replaceChildren(...shown.map(row));
  };
  box.addEventListener('change', draw);
  draw();
  node.append(head, list);
  if (links.size) node.append(note('click a step that made a stage to diff it with its parent'));
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
  const root = h('div', 'hwbv hwbv-compile');
  const few = { checked: true };
  const draw = (d: ICompile) => root.replaceChildren(compileList(d, name => host.act('stage', { name }), few));
  el.append(root);
  draw(data);
  return { update: d => draw(d as unknown as ICompile), dispose: () => root.remove() };
});
