// The diff of a pair: the virtualized viewer every view shares (workbench/assets/diffview.js), fed with the
// structural diff Python made (normalized texts and runs, read into rows by rows.ts). A pair the model does not
// carry is asked of the host (host.diff: the panel's kernel, or the Jupyter server extension); without one the view
// says so. Above the viewer, the counts by kind ([data-hwb="diff-counts"]) and the ops whose count changed
// ([data-hwb="ops-delta"]).
//
// The panel's Diff tab is kind "diff" (workbench/views/widgets/diffview.py makes its facts): the A and B pickers
// and swap ([data-hwb="diff-picker"] data-side, [data-hwb="diff-swap"]) over the diff Python sent, the lines the
// Source and Collectives tabs mark, a sharded stage's shardings on its names. Actions: "pick" {side, stage},
// "swap", "op" {side, line} (a click on a code row). Its part "changes" is what the last toggle changed
// ([data-hwb="changes"]) and two buttons that diff the final MLIR stage or xla:optimized against before it
// (action "changes" {which}).
import { render } from '../../../../workbench/assets/diffview.js';

import { button, h, note } from './dom';
import { formatNumber } from './format';
import type { IDiffEntry, IHost, IMounted, IOpDelta, IText, IViewModel } from './model';
import { entryRows, rowCounts } from './rows';
import { register, type IWidgetHost } from './widget';

export const NO_HOST_DIFF = 'this view carries only the pair shown; open it in the panel';
const NORMALIZED =
  'normalized text: values renumbered in order (%0, %1, \u2026; B\u2019s onto A\u2019s), locations, metadata and ' +
  'public dropped (the structural diff of ex.diff; ex["B"].text is the stage as written)';

const key = (left: string, right: string) => `${left}\u0000${right}`;

/** Each side's value shardings (sharding_tips.tips), shown while a value's name is hovered. */
type Tips = { before?: unknown; after?: unknown };

/** Lines of either side marked (0-based, as shown) and the side scrolled to first ("": either). */
export interface IMarks {
  before: number[];
  after: number[];
  focus: '' | 'before' | 'after';
}

export interface IDiffOptions {
  /** The viewer's height in px. */
  height?: number;
  /** Where a click on a code row goes (side "before" | "after", its 0-based line); given, lines can be marked. */
  onOp?: (side: string, line: number) => void;
  /** Shown in place of the pair's names (the panel's pickers). */
  head?: HTMLElement;
  /** The layout first shown (auto, split, unified), and who hears the user pick another. */
  mode?: string;
  onMode?: (mode: string) => void;
}

export interface IDiffView {
  node: HTMLElement;
  /** Shows `left` -> `right`: the model's diff, one asked of the host before, or asks the host now. */
  show(left: string, right: string): Promise<void>;
  /** Shows `d`, a diff Python sent, and its sides' `tips`. */
  put(d: IDiffEntry, tips?: Tips): void;
  /** Marks lines (`onOp` given). */
  mark(marks: IMarks): void;
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
    const delta = `${formatNumber(r.before)}\u2192${formatNumber(r.after)} (${r.delta > 0 ? '+' : ''}${r.delta})`;
    chip.append(h('code', '', r.op), ` ${delta}`);
    box.append(chip);
  }
  return box;
}

function textBlock(t: IText): HTMLElement {
  const d = h('details', 'hwbv-text');
  d.dataset.stage = t.stage;
  const lines = t.state === 'ok' ? `${formatNumber(t.lines)} lines` : t.state;
  d.append(h('summary', '', `${t.stage}: ${lines}` + (t.note ? ` (${t.note})` : '')));
  if (t.text) d.append(h('pre', 'hwbv-pre hwbv-code', t.text));
  return d;
}

export function diffView(
  m: Pick<IViewModel, 'diff' | 'ops_delta' | 'texts'>,
  host: IHost | undefined,
  options: IDiffOptions = {}
): IDiffView {
  const node = h('div', 'hwbv-diff');
  node.dataset.hwb = 'diff';
  const pairLine = options.head ?? h('div', 'hwbv-pairline');
  const counts = h('div', 'hwbv-diff-counts');
  counts.dataset.hwb = 'diff-counts';
  const msg = note('');
  const ops = h('div', 'hwbv-ops-slot');
  const viewer = h('div', 'hwbv-diffviewer');
  const texts = h('div', 'hwbv-texts');
  node.append(pairLine, counts, msg, ops, viewer, texts);
  const view = render(viewer, options);
  const known = new Map<string, IDiffEntry>([[key(m.diff.left, m.diff.right), { ...m.diff, ops_delta: m.ops_delta }]]);
  let asked = 0; // the latest pair asked for: an older answer that comes late is not shown
  let tips: Tips = {}; // the shardings of the diff Python sent

  /** `d`: the diff to show, or null with `why` there is none yet (`state` waiting) or here (unavailable). */
  function draw(left: string, right: string, d: IDiffEntry | null, why = '', state = 'unavailable'): void {
    if (!options.head) {
      pairLine.replaceChildren(
        h('span', 'hwbv-label', 'A'),
        h('code', 'hwbv-wrap', left),
        ' \u2192 ',
        h('span', 'hwbv-label', 'B'),
        h('code', 'hwbv-wrap', right)
      );
    }
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
      const words = (['changed', 'deleted', 'inserted', 'moved'] as const)
        .filter(k => c[k])
        .map(k => `${formatNumber(c[k])} ${k}`);
      counts.append(
        h('span', '', words.length ? words.join(', ') : 'no line changed'),
        h('span', 'hwbv-muted', ` of ${formatNumber(rows.length / 3)} rows; ${NORMALIZED}`)
      );
    }
    msg.textContent = ok ? '' : rows;
    msg.classList.toggle('hwbv-warn', !ok && !!d);
    ops.replaceChildren(...(d?.ops_delta ? [opsDelta(d.ops_delta)] : []));
    const [before, after] = ok ? [d!.before!, d!.after!] : ['', ''];
    view.load({
      before,
      after,
      rows: ok ? rows : new Int32Array(0),
      beforeName: left,
      afterName: right,
      tips: [tips.before, tips.after]
    });
    viewer.hidden = !ok;
    // without a diff, the texts the model holds of the pair (the pair it shows) are there to read
    const names = [left, right].filter((n, i, a) => a.indexOf(n) === i && m.texts[n]);
    texts.replaceChildren(...(ok ? [] : names.map(n => textBlock(m.texts[n]))));
  }

  return {
    node,
    async show(left: string, right: string) {
      const ticket = ++asked;
      tips = {};
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
    put(d: IDiffEntry, t: Tips = {}) {
      ++asked;
      tips = t;
      draw(d.left, d.right, d);
    },
    mark: (marks: IMarks) => view.mark(marks.before, marks.after, marks.focus),
    dispose: () => view.dispose()
  };
}

/** What the panel's Diff tab is sent (diffview.py): the pickers' stages and pair, the diff shown (`shown` counts
 * them: marks are of one), its ops delta (null: none to say), a note on what it is, the marks and shardings. */
interface IPanelDiff {
  stages: string[];
  left: string;
  right: string;
  shown: number;
  diff: IDiffEntry;
  ops_delta: IOpDelta[] | null;
  note: string;
  marks: IMarks;
  tips: Tips;
  height: number;
  mode: string;
}

function panelDiff(el: HTMLElement, first: IPanelDiff, host: IWidgetHost): IMounted {
  const picker = (side: string) => {
    const s = h('select', 'hwbv-diff-picker');
    Object.assign(s.dataset, { hwb: 'diff-picker', side });
    s.setAttribute('aria-label', side === 'left' ? 'stage A' : 'stage B');
    s.addEventListener('change', () => host.act('pick', { side, stage: s.value }));
    return s;
  };
  const [a, b] = [picker('left'), picker('right')];
  const swap = button('hwbv-pick', '\u21c4 swap', () => host.act('swap'), 'put B on the left and A on the right');
  swap.dataset.hwb = 'diff-swap';
  const head = h('div', 'hwbv-pairline hwbv-pickers-row');
  head.append(h('span', 'hwbv-label', 'A'), a, swap, h('span', 'hwbv-label', 'B'), b);
  const said = note('');
  const view = diffView({ diff: first.diff, ops_delta: [], texts: {} }, undefined, {
    height: first.height,
    head,
    onOp: (side, line) => host.act('op', { side, line }),
    mode: first.mode,
    onMode: mode => host.act('mode', { mode })
  });
  const root = h('div', 'hwbv hwbv-panel-diff');
  root.append(said, view.node);
  el.append(root);
  let stages = '';
  let shown = -1;
  let marked = '';
  const update = (d: IPanelDiff) => {
    if (d.stages.join('\n') !== stages) {
      stages = d.stages.join('\n');
      for (const s of [a, b]) s.replaceChildren(...d.stages.map(n => Object.assign(h('option', '', n), { value: n })));
    }
    a.value = d.left;
    b.value = d.right;
    said.textContent = d.note;
    said.hidden = !d.note;
    const marks = JSON.stringify(d.marks);
    if (d.shown !== shown) view.put({ ...d.diff, ops_delta: d.ops_delta ?? undefined }, d.tips);
    if (d.shown !== shown || marks !== marked) view.mark(d.marks);
    [shown, marked] = [d.shown, marks];
  };
  update(first);
  return {
    update: (d: any) => update(d),
    dispose() {
      view.dispose();
      root.remove();
    }
  };
}

/** What the last toggle changed (changes.py): the settings (`head`), then each phrase, a changed module's marked. */
interface IChanges {
  head?: string;
  parts?: { text: string; changed: boolean }[];
  error?: string;
  mlir?: boolean;
  xla?: boolean;
}

function changesLine(el: HTMLElement, first: IChanges, host: IWidgetHost): IMounted {
  const line = h('div', 'hwbv-changes');
  line.dataset.hwb = 'changes';
  const act = (which: string) => () => host.act('changes', { which });
  const tip = 'against itself before the last toggle';
  const mlir = button('hwbv-pick', 'final MLIR vs before', act('mlir'), `diff the final MLIR stage ${tip}`);
  const xla = button('hwbv-pick', 'xla:optimized vs before', act('xla'), `diff xla:optimized ${tip}`);
  const root = h('div', 'hwbv hwbv-changes-row');
  root.append(line, mlir, xla);
  el.append(root);
  const update = (d: IChanges) => {
    root.hidden = !d.head && !d.error;
    line.classList.toggle('hwbv-error', !!d.error);
    line.replaceChildren(...(d.error ? [d.error] : [h('b', '', d.head ?? ''), ': ']));
    (d.parts ?? []).forEach((p, k) =>
      line.append(k ? ' \u00b7 ' : '', h('span', p.changed ? 'hwbv-changed' : '', p.text))
    );
    mlir.disabled = !d.mlir;
    xla.disabled = !d.xla;
  };
  update(first);
  return { update: (d: any) => update(d), dispose: () => root.remove() };
}

register('diff', (el, data, host) => (data.part === 'changes' ? changesLine : panelDiff)(el, data, host));
