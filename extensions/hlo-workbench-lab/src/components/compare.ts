// The comparison of two explorations, as the extension's Compare tab shows it: drawn from the comparison
// model Python makes (workbench/artifacts/comparison_model.py, of wb.compare_explorations; its schema
// workbench/assets/compare.schema.json). Nothing here computes a fact: what differs, the alignment, the
// costs and the final modules' diffs are the model's; a stage's diff across the two files is asked of the
// host (the Jupyter server extension). On top what differs (the first differing stage, versions, settings,
// the stages aligned by name with their measures, the final modules' diffs), below each file's own view
// (`mount`). Facts carry data attributes: the root [data-hwb-comparison] (data-identical, data-first),
// [data-hwb="first-difference"] (data-stage), [data-hwb="compare-row"] per aligned stage (data-stage,
// data-side, data-same), [data-hwb="setting"] and [data-hwb="version"] (data-name) per one that differs,
// [data-hwb="module"] per final module (data-what, data-changed), [data-hwb="compare-side"] per file.
import { diffView, IDiffView } from './diff';
import { button, h, note, section, table } from './dom';
import { formatNumber } from './format';
import { mount } from './index';
import type { IDiffEntry, IHost, IOpDelta, IViewModel, MaybeNumber } from './model';

export type Side = 'both' | 'a' | 'b';

/** A stage of the alignment: which files have it, whether the modules there are the same beyond renaming,
 * and per measure of `columns` [A's, B's, B - A]. */
export interface IComparisonRow {
  stage: string;
  group: 'trace' | 'mlir' | 'xla';
  side: Side;
  same: boolean;
  [measure: string]: string | boolean | [MaybeNumber, MaybeNumber, MaybeNumber];
}

export interface IModuleChange {
  what: string;
  label: string;
  changed: boolean;
  words: string;
  ops: IOpDelta[];
  diff: IDiffEntry;
}

export interface IComparisonModel {
  schema: 'hlo-workbench/comparison';
  format: 1;
  labels: [string, string];
  paths: [string, string];
  identical: boolean;
  same_input: boolean;
  first_difference: { stage: string; side: Side; words: string } | null;
  versions: { name: string; a: string | null; b: string | null }[];
  settings: string[];
  lines: string[];
  columns: string[];
  rows: IComparisonRow[];
  final: { measure: string; what: string; a: MaybeNumber; b: MaybeNumber; growth: string }[];
  modules: IModuleChange[];
  times: { a_ms: MaybeNumber; b_ms: MaybeNumber } | null;
  views: IViewModel[];
}

/** What the host answers: stage `left` of A against stage `right` of B, and each file's own view's host. */
export interface IComparisonHost {
  across?(left: string, right: string): Promise<IDiffEntry>;
  side?(k: 0 | 1): IHost;
}

const MATCH: Record<Side, string> = { both: '', a: 'only in A', b: 'only in B' };

function measure(v: [MaybeNumber, MaybeNumber, MaybeNumber] | undefined): string {
  if (!v) return '';
  const [a, b, d] = v;
  if (a === null && b === null) return '';
  const delta = d === null || d === 0 ? '' : ` (${d > 0 ? '+' : ''}${formatNumber(d)})`;
  return a === b
    ? formatNumber(a)
    : `${a === null ? '-' : formatNumber(a)} \u2192 ${b === null ? '-' : formatNumber(b)}${delta}`;
}

function differences(m: IComparisonModel): HTMLElement {
  const { node, body } = section('made-by', 'What made them', m.versions.length + m.settings.length);
  if (!m.versions.length) body.append(note('versions: the same in both'));
  else {
    const t = table(
      'hwbc-versions',
      ['version', 'A', 'B'],
      m.versions.map(v => [v.name, v.a ?? 'none', v.b ?? 'none'])
    );
    t.querySelectorAll('tbody tr').forEach((tr, k) => {
      (tr as HTMLElement).dataset.hwb = 'version';
      (tr as HTMLElement).dataset.name = m.versions[k].name;
    });
    body.append(t);
  }
  if (!m.settings.length) body.append(note('settings: the same in both'));
  for (const s of m.settings) {
    const line = h('div', 'hwbc-setting', s);
    line.dataset.hwb = 'setting';
    line.dataset.name = s;
    body.append(line);
  }
  if (!m.same_input)
    body.append(h('div', 'hwbv-warn', 'the input modules differ (the program as lowered is not the same)'));
  return node;
}

function finalMeasures(m: IComparisonModel): HTMLElement | null {
  if (!m.final.length && !m.times) return null;
  const { node, body } = section('final', 'The final modules, measured');
  const rows: unknown[][] = m.final.filter(f => f.a !== null || f.b !== null).map(f => [f.measure, f.a, f.b, f.growth]);
  if (m.times) rows.push(['run time, median (ms)', m.times.a_ms, m.times.b_ms, '']);
  body.append(table('hwbc-final', ['measure', 'A', 'B', 'change'], rows));
  return node;
}

/** Draws comparison `model` into `el` (appended); `host` answers a stage's diff across the files. */
export function mountComparison(
  el: HTMLElement,
  model: IComparisonModel,
  host: IComparisonHost = {}
): { dispose(): void } {
  const m = model;
  const root = h('div', 'hwbv hwbc');
  root.dataset.hwbComparison = '';
  root.dataset.identical = String(m.identical);
  root.dataset.first = m.first_difference?.stage ?? '';
  el.append(root);
  const disposers: (() => void)[] = [];

  const head = h('div', 'hwbv-header');
  head.append(h('div', 'hwbv-title', `${m.labels[0]} \u21c4 ${m.labels[1]}`));
  m.paths.forEach((p, k) => {
    const line = h('div', 'hwbc-file');
    line.append(h('span', 'hwbv-label', k ? 'B' : 'A'), h('code', 'hwbv-wrap', p || m.labels[k]));
    head.append(line);
  });
  const first = h(
    'div',
    'hwbc-first',
    m.first_difference
      ? `first difference: ${m.first_difference.words}`
      : 'first difference: none (the same modules throughout)'
  );
  first.dataset.hwb = 'first-difference';
  first.dataset.stage = m.first_difference?.stage ?? '';
  head.append(first);
  root.append(head, differences(m));

  // a stage's diff across the files, asked of the host
  const stageDiff = section('stage-diff', 'A stage of A against the same stage of B');
  const across: IDiffView = diffView(
    { diff: { left: '', right: '', note: 'pick "diff" on a stage that differs' }, ops_delta: [], texts: {} },
    host.across ? { diff: host.across } : undefined
  );
  disposers.push(() => across.dispose());
  stageDiff.body.append(across.node);
  const showAcross = (stage: string) => {
    stageDiff.node.open = true;
    stageDiff.node.dataset.stage = stage;
    void across.show(stage, stage);
    stageDiff.node.scrollIntoView({ block: 'nearest' });
  };

  const aligned = section('aligned', 'Stages, aligned by name', m.rows.length);
  const wrap = h('div', 'hwbv-table-wrap hwbc-aligned-wrap');
  const t = h('table', 'hwbv-table hwbc-aligned');
  const hr = t.createTHead().insertRow();
  for (const c of ['stage', 'group', 'module', ...m.columns]) hr.append(h('th', '', c));
  const tbody = t.createTBody();
  for (const r of m.rows) {
    const tr = tbody.insertRow();
    tr.dataset.hwb = 'compare-row';
    tr.dataset.stage = r.stage;
    tr.dataset.side = r.side;
    tr.dataset.same = String(r.same);
    if (!r.same) tr.classList.add('hwbc-differs');
    if (r.stage === m.first_difference?.stage) tr.classList.add('hwbc-first');
    const name = h('td', 'hwbc-stage', r.stage);
    if (!r.same && r.side === 'both' && host.across) {
      name.append(
        ' ',
        button('hwbv-pick hwbc-diff', 'diff', () => showAcross(r.stage), `A's ${r.stage} \u2192 B's ${r.stage}`)
      );
    }
    tr.append(name, h('td', '', r.group), h('td', '', MATCH[r.side] || (r.same ? 'same' : 'differs')));
    for (const c of m.columns) {
      tr.append(h('td', 'hwbv-num', measure(r[c] as [MaybeNumber, MaybeNumber, MaybeNumber] | undefined)));
    }
  }
  wrap.append(t);
  aligned.body.append(wrap);
  root.append(aligned.node);
  const measured = finalMeasures(m);
  if (measured) root.append(measured);

  m.modules.forEach((mod, k) => {
    const s = section('module', mod.label, undefined, k > 0);
    s.node.dataset.what = mod.what;
    s.node.dataset.changed = String(mod.changed);
    s.body.append(note(mod.words));
    const d = diffView({ diff: mod.diff, ops_delta: mod.ops, texts: {} }, undefined);
    disposers.push(() => d.dispose());
    s.body.append(d.node);
    void d.show(mod.diff.left, mod.diff.right);
    root.append(s.node);
  });
  root.append(stageDiff.node);

  if (m.views.length) {
    const sides = h('div', 'hwbc-sides');
    m.views.forEach((view, k) => {
      const col = h('div', 'hwbc-side');
      col.dataset.hwb = 'compare-side';
      col.dataset.path = m.paths[k];
      col.append(h('div', 'hwbc-side-head', `${k ? 'B' : 'A'}: ${m.paths[k] || m.labels[k]}`));
      sides.append(col);
      const mounted = mount(col, view, host.side?.(k as 0 | 1));
      disposers.push(() => mounted.dispose());
    });
    root.append(sides);
  }
  return {
    dispose() {
      for (const f of disposers) f();
      root.remove();
    }
  };
}
