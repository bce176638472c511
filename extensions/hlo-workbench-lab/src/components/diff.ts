// The diff of the pair shown: the panel's own virtualized viewer (workbench/assets/diffview.js, an
// anywidget-style `render({model, el})`) driven by a small in-page model, fed with the structural diff Python
// made (normalized texts and runs, read into rows by rows.ts). A pair the model does not carry is asked of
// the host (host.diff: the panel's kernel, or the Jupyter server extension); without one the view says so.
// Above the viewer, the counts by kind ([data-hwb="diff-counts"]) and the ops whose count changed.
import diffview from '../../../../workbench/assets/diffview.js';

import { h, note } from './dom';
import { formatNumber } from './format';
import type { IDiffEntry, IHost, IOpDelta, IText, IViewModel } from './model';
import { entryRows, rowCounts } from './rows';

type Handler = () => void;

/** The little of an anywidget model that diffview.js uses, held in the page. */
export function pageModel(values: Record<string, unknown>) {
  const handlers: Record<string, Handler[]> = {};
  return {
    get: (k: string) => values[k],
    set(k: string, v: unknown) {
      if (values[k] === v) return;
      values[k] = v;
      for (const f of handlers['change:' + k] ?? []) f();
    },
    on(event: string, f: Handler) {
      (handlers[event] ??= []).push(f);
    },
    off() {},
    save_changes() {}
  };
}

export const NO_HOST_DIFF = 'this view carries only the pair shown; open it in the panel';
const NORMALIZED =
  'the structural diff of ex.diff: values renumbered in order (B\u2019s onto A\u2019s), locations and metadata dropped';

const key = (left: string, right: string) => `${left}\u0000${right}`;

export interface IDiffView {
  node: HTMLElement;
  /** Shows `left` -> `right`: the model's diff, one asked of the host before, or asks the host now. */
  show(left: string, right: string): Promise<void>;
  dispose(): void;
}

function opsDelta(rows: IOpDelta[]): HTMLElement {
  const box = h('div', 'hwbv-ops');
  box.dataset.hwb = 'ops-delta';
  if (!rows.length) {
    box.append(h('span', 'hwbv-muted', 'op counts: the same'));
    return box;
  }
  box.append(h('span', 'hwbv-label', 'op counts'));
  for (const r of rows) {
    const chip = h('span', `hwbv-chip ${r.delta > 0 ? 'hwbv-up' : 'hwbv-down'}`);
    chip.dataset.op = r.op;
    chip.append(h('code', '', r.op), ` ${formatNumber(r.before)}\u2192${formatNumber(r.after)} (${r.delta > 0 ? '+' : ''}${r.delta})`);
    box.append(chip);
  }
  return box;
}

function textBlock(t: IText): HTMLElement {
  const d = h('details', 'hwbv-text');
  d.dataset.stage = t.stage;
  d.append(h('summary', '', `${t.stage}: ${t.state === 'ok' ? `${formatNumber(t.lines)} lines` : t.state}` +
    (t.note ? ` (${t.note})` : '')));
  if (t.text) d.append(h('pre', 'hwbv-pre hwbv-code', t.text));
  return d;
}

export function diffView(m: Pick<IViewModel, 'diff' | 'ops_delta' | 'texts'>, host: IHost | undefined): IDiffView {
  const node = h('div', 'hwbv-diff');
  node.dataset.hwb = 'diff';
  const pairLine = h('div', 'hwbv-pairline');
  const counts = h('div', 'hwbv-diff-counts');
  counts.dataset.hwb = 'diff-counts';
  const msg = note('');
  const ops = h('div', 'hwbv-ops-slot');
  const viewer = h('div', 'hwbv-diffviewer');
  const texts = h('div', 'hwbv-texts');
  node.append(pairLine, counts, msg, ops, viewer, texts);
  const model = pageModel({ before: '', after: '', rows: new DataView(new ArrayBuffer(0)), before_name: '',
    after_name: '', message: '', height: 420, mode: 'auto' });
  const cleanup = diffview.render({ model, el: viewer });
  const known = new Map<string, IDiffEntry>([[key(m.diff.left, m.diff.right), { ...m.diff, ops_delta: m.ops_delta }]]);
  let asked = 0; // the latest pair asked for: an older answer that comes late is not shown

  /** `d`: the diff to show, or null with `why` there is none yet (`state` waiting) or here (unavailable). */
  function draw(left: string, right: string, d: IDiffEntry | null, why = '', state = 'unavailable'): void {
    pairLine.replaceChildren(h('span', 'hwbv-label', 'A'), h('code', 'hwbv-wrap', left), ' \u2192 ',
      h('span', 'hwbv-label', 'B'), h('code', 'hwbv-wrap', right));
    counts.dataset.left = left;
    counts.dataset.right = right;
    const rows = d ? entryRows(d) : why;
    const ok = typeof rows !== 'string';
    counts.dataset.state = ok ? 'ok' : d ? 'none' : state;
    for (const k of ['changed', 'deleted', 'inserted', 'moved', 'equal']) delete counts.dataset[k];
    counts.replaceChildren();
    if (ok) {
      const c = rowCounts(rows);
      for (const [k, v] of Object.entries(c)) counts.dataset[k] = String(v);
      const words = (['changed', 'deleted', 'inserted', 'moved'] as const).filter((k) => c[k]).map((k) => `${formatNumber(c[k])} ${k}`);
      counts.append(h('span', '', words.length ? words.join(', ') : 'no line changed'),
        h('span', 'hwbv-muted', ` of ${formatNumber(rows.length / 3)} rows; ${NORMALIZED}`));
    }
    msg.textContent = ok ? '' : rows;
    msg.classList.toggle('hwbv-warn', !ok && !!d);
    ops.replaceChildren(...(d?.ops_delta ? [opsDelta(d.ops_delta)] : []));
    const empty = new Int32Array(0);
    const r = ok ? rows : empty;
    model.set('message', ok ? '' : rows);
    model.set('before_name', left);
    model.set('after_name', right);
    model.set('before', ok ? d!.before : '');
    model.set('after', ok ? d!.after : '');
    model.set('rows', new DataView(r.buffer, r.byteOffset, r.byteLength));
    viewer.hidden = !ok;
    // without a diff, the texts the model holds of the pair (the pair it shows) are there to read
    texts.replaceChildren(...(ok ? [] : [left, right].filter((n, i, a) => a.indexOf(n) === i && m.texts[n])
      .map((n) => textBlock(m.texts[n]))));
  }

  return {
    node,
    async show(left: string, right: string) {
      const ticket = ++asked;
      const k = key(left, right);
      const have = known.get(k);
      if (have) return draw(left, right, have);
      if (!host?.diff) {
        return draw(left, right, null, `${NO_HOST_DIFF} (it carries ${m.diff.left} \u2192 ${m.diff.right})`);
      }
      draw(left, right, null, `making the diff of ${left} \u2192 ${right}\u2026`, 'waiting');
      let d: IDiffEntry;
      try {
        d = await host.diff(left, right);
      } catch (err) {
        d = { left, right, note: `the diff could not be made: ${err instanceof Error ? err.message : String(err)}` };
      }
      if (d.before !== undefined || d.note === undefined) known.set(k, d);
      if (ticket === asked) draw(left, right, d);
    },
    dispose() {
      if (typeof cleanup === 'function') (cleanup as () => void)();
    }
  };
}
