// The runs of the session, newest last: each with its time, its check leaf by leaf (the program's outputs,
// as RunResult.check.table() lists them), what the program printed (host callbacks, warnings) and, when the
// program shown is not the one it ran, why (stale).
import { h, note, section } from './dom';
import { formatMs, formatNumber, formatShape } from './format';
import type { ICheck, IRun, IViewModel } from './model';

/** A check in one line: "FAILED vs f in float64: max |error| 4.45 (2 of 2 leaves failed)". */
export function checkWords(c: ICheck): string {
  const failed = c.leaves.filter((l) => !l.passed).length;
  const leaves = c.leaves.length === 1 ? '1 leaf' : `${c.leaves.length} leaves`;
  return `${c.passed ? 'passed' : 'FAILED'} vs ${c.reference}: max |error| ${formatNumber(c.max_abs) || '\u2014'}, ` +
    `max relative ${formatNumber(c.max_rel) || '\u2014'} (${failed ? `${failed} of ${leaves} failed` : `${leaves}, all within tolerance`})`;
}

function leaves(c: ICheck): HTMLElement {
  const wrap = h('div', 'hwbv-table-wrap');
  const t = h('table', 'hwbv-table hwbv-leaf-table');
  const head = t.createTHead().insertRow();
  for (const col of ['leaf', 'shape', 'dtype', 'max |error|', 'max relative', 'tolerance', 'verdict', 'rule'])
    head.append(h('th', '', col));
  const body = t.createTBody();
  for (const l of c.leaves) {
    const tr = body.insertRow();
    tr.dataset.hwb = 'leaf';
    tr.dataset.path = l.path;
    tr.dataset.passed = String(l.passed);
    tr.className = l.passed ? 'hwbv-pass' : 'hwbv-fail';
    const rule = l.computed ? `${l.rule}, computed in ${l.computed}` : l.rule;
    tr.append(h('td', 'hwbv-wrap', l.path), h('td', '', formatShape(l.shape)), h('td', '', l.dtype),
      h('td', 'hwbv-num', formatNumber(l.max_abs) || (l.passed ? '' : 'not finite')),
      h('td', 'hwbv-num', formatNumber(l.max_rel)), h('td', 'hwbv-num', formatNumber(l.tolerance)),
      h('td', 'hwbv-verdict', l.passed ? 'passed' : 'FAILED'), h('td', '', rule));
  }
  wrap.append(t);
  return wrap;
}

function run(r: IRun, n: number): HTMLElement {
  const box = h('div', 'hwbv-run');
  box.dataset.hwb = 'run';
  box.dataset.stage = r.stage;
  box.dataset.stale = String(!!r.stale);
  if (r.check) box.dataset.passed = String(r.check.passed);
  const head = h('div', 'hwbv-run-head');
  head.append(h('span', 'hwbv-label', `run ${n}`), h('code', 'hwbv-wrap', r.stage), h('span', '', `on ${r.device}`),
    h('span', '', `median ${formatMs(r.median_ms) || '\u2014'}, fastest ${formatMs(r.min_ms) || '\u2014'}, ` +
      `IQR ${formatMs(r.iqr_ms) || '\u2014'} of ${r.repeat}`));
  if (r.check) head.append(h('span', r.check.passed ? 'hwbv-badge hwbv-badge-pass' : 'hwbv-badge hwbv-badge-error',
    r.check.passed ? 'passed' : 'FAILED'));
  box.append(head);
  if (r.settings) {
    const s = note(`ran: ${r.settings}`, 'hwbv-wrap');
    s.dataset.hwb = 'run-settings';
    box.append(s);
  }
  if (r.stale) {
    const s = note(`stale: ${r.stale}`, 'hwbv-warn hwbv-stale');
    s.dataset.hwb = 'stale';
    box.append(s);
  }
  if (r.check) {
    box.append(h('div', 'hwbv-check', checkWords(r.check) + (r.check.lowered_abs === null || r.check.lowered_abs === undefined
      ? '' : `; the program as lowered: ${formatNumber(r.check.lowered_abs)}`)));
    if (r.check.note) box.append(note(r.check.note));
    box.append(leaves(r.check));
  } else box.append(note('not checked'));
  if (r.printed) {
    const p = h('div', 'hwbv-printed');
    p.append(h('div', 'hwbv-label', r.printed_cut ? 'printed (the first part)' : 'printed'));
    const pre = h('pre', 'hwbv-pre hwbv-code', r.printed);
    pre.dataset.hwb = 'printed';
    p.append(pre);
    box.append(p);
  }
  return box;
}

export function runsSection(m: IViewModel): HTMLElement | null {
  if (!m.runs.length) return null;
  const { node, body } = section('runs', 'Runs', m.runs.length);
  m.runs.forEach((r, k) => body.append(run(r, k + 1)));
  return node;
}
