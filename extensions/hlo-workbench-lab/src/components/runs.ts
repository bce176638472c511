// The runs of the session, in order: each with its time, its check leaf by leaf (the program's outputs,
// as RunResult.check.table() lists them), what the program printed (host callbacks, warnings) and, when the
// program shown is not the one it ran, why (stale).
import { h, note, section, table } from './dom';
import { formatMs, formatNumber, formatShape } from './format';
import type { ICheck, ILeaf, IRun, MaybeNumber } from './model';

/** A check in one line: "FAILED vs f in float64: max |error| 4.45 (2 of 2 leaves failed)". */
export function checkWords(c: ICheck): string {
  const failed = c.leaves.filter(l => !l.passed).length;
  const leaves = c.leaves.length === 1 ? '1 leaf' : `${c.leaves.length} leaves`;
  return (
    `${c.passed ? 'passed' : 'FAILED'} vs ${c.reference}: max |error| ${formatNumber(c.max_abs) || '\u2014'}, ` +
    `max relative ${formatNumber(c.max_rel) || '\u2014'} (${failed ? `${failed} of ${leaves} failed` : `${leaves}, all within tolerance`})`
  );
}

const COLUMNS = ['leaf', 'shape', 'dtype', 'max |error|', 'max relative', 'tolerance', 'verdict', 'rule'];

function leafRow(l: ILeaf): unknown[] {
  const rule = l.computed ? `${l.rule}, computed in ${l.computed}` : l.rule;
  const maxAbs = l.max_abs ?? (l.passed ? null : 'not finite');
  return [l.path, formatShape(l.shape), l.dtype, maxAbs, l.max_rel, l.tolerance, l.passed ? 'passed' : 'FAILED', rule];
}

/** The check leaf by leaf: [data-hwb="leaf"] per leaf (data-path, data-passed). */
function leaves(c: ICheck): HTMLElement {
  const wrap = table('hwbv-leaf-table', COLUMNS, c.leaves.map(leafRow));
  wrap.querySelectorAll('tbody tr').forEach((tr, k) => {
    const l = c.leaves[k];
    Object.assign((tr as HTMLElement).dataset, { hwb: 'leaf', path: l.path, passed: String(l.passed) });
    tr.className = l.passed ? 'hwbv-pass' : 'hwbv-fail';
    const cells = (tr as HTMLTableRowElement).cells;
    cells[0].className = 'hwbv-wrap'; // a long path wraps anywhere, not held to a long text's width
    cells[6].classList.add('hwbv-verdict');
  });
  return wrap;
}

/** `e`, found by tests and hosts as [data-hwb=`hwb`]. */
function tagged<E extends HTMLElement>(e: E, hwb: string): E {
  e.dataset.hwb = hwb;
  return e;
}

function run(r: IRun, n: number): HTMLElement {
  const box = h('div', 'hwbv-run');
  Object.assign(box.dataset, { hwb: 'run', stage: r.stage, stale: String(!!r.stale) });
  const c = r.check;
  if (c) box.dataset.passed = String(c.passed);
  const ms = (v: MaybeNumber | undefined) => formatMs(v) || '\u2014';
  const times = `median ${ms(r.median_ms)}, fastest ${ms(r.min_ms)}, IQR ${ms(r.iqr_ms)} of ${r.repeat}`;
  const head = h('div', 'hwbv-run-head');
  head.append(h('span', 'hwbv-label', `run ${n}`), h('code', 'hwbv-wrap', r.stage), h('span', '', `on ${r.device}`));
  head.append(h('span', '', times));
  if (c) head.append(h('span', `hwbv-badge hwbv-badge-${c.passed ? 'pass' : 'error'}`, c.passed ? 'passed' : 'FAILED'));
  box.append(head);
  if (r.settings) box.append(tagged(note(`ran: ${r.settings}`, 'hwbv-wrap'), 'run-settings'));
  if (r.stale) box.append(tagged(note(`stale: ${r.stale}`, 'hwbv-warn hwbv-stale'), 'stale'));
  if (c) {
    const lowered = formatNumber(c.lowered_abs);
    box.append(h('div', 'hwbv-check', checkWords(c) + (lowered ? `; the program as lowered: ${lowered}` : '')));
    if (c.note) box.append(note(c.note));
    box.append(leaves(c));
  } else box.append(note('not checked'));
  if (r.printed) {
    const p = h('div', 'hwbv-printed');
    p.append(h('div', 'hwbv-label', r.printed_cut ? 'printed (the first part)' : 'printed'));
    p.append(tagged(h('pre', 'hwbv-pre hwbv-code', r.printed), 'printed'));
    box.append(p);
  }
  return box;
}

/** The runs as a section, numbered in order; `newestFirst` (the panel's Run tab): the last on top. */
export function runsSection(runs: readonly IRun[], newestFirst = false): HTMLElement | null {
  if (!runs.length) return null;
  const { node, body } = section('runs', 'Runs', runs.length);
  const boxes = runs.map((r, k) => run(r, k + 1));
  body.append(...(newestFirst ? boxes.reverse() : boxes));
  return node;
}
