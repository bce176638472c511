// The panel's Memory tab (kind "memory"): where the bytes go in XLA's compile, as Python read them from XLA's own
// buffer assignment and live ranges (workbench/views/widgets/memorytab.py, from `Memory.to_json()`): the summary
// line, the live bytes over the schedule with the peak marked, the bytes live at the peak by line, and the largest
// buffers live at the peak. A click on a buffer asks the panel to follow its instruction ("select_op":
// {instruction, buffer}); a click on a line of the user's asks it to select that line ("select_line": {file, line}).
// The saved view draws the same from the view model's `memory` (its "memory" section, `memorySection`), without
// the clicks: there is no panel to follow them.
// Facts: [data-hwb="memory"] (data-state, data-peak-bytes, data-peak-at, data-positions), [data-hwb="memory-peak"]
// (the peak's marker: data-peak-bytes, data-peak-at, data-instruction), [data-hwb="memory-line"] per line
// (data-line, data-bytes, data-selectable), [data-hwb="memory-buffer"] per buffer (data-buffer, data-instruction,
// data-bytes, data-kind, data-line, data-selected), [data-hwb="memory-donation"] per donation candidate
// (data-argument, data-saves).
import { add, h, note, section, table } from './dom';
import { formatNumber } from './format';
import type { IMounted, IViewModel } from './model';
import { register, type IWidgetHost } from './widget';

/** Where a row's line is in the user's code (null: an argument, a constant, a library's line or none). */
type At = { file: string; line: number } | null;

/** A buffer live at the peak (a row of `Memory.at_peak()`, the columns the tab shows and `at`). */
type Buffer = {
  buffer: string;
  bytes: number;
  kind: string;
  shape: string;
  line: string;
  instruction: string;
  computation?: string;
  at?: At;
};

/** A line's bytes at the peak (a row of `Memory.by_line()` and `at`). */
type Line = { line: string; bytes: number; share: number; buffers: number; kinds: string; at?: At };

/** An argument an output could reuse (`Memory.donation()`), or a donated one XLA did not alias. */
type Donation = { argument: string; shape: string; bytes: number; donated: boolean; saves: number; why: string };

/** `Memory.to_json()`: the peak, the timeline ([position, live bytes, instruction], the peak's point kept), the
 * buffers at the peak (the largest; `more_buffers` and `more_bytes` the rest) and the bytes by line. */
export interface IMemory {
  peak_bytes: number;
  peak_at: number;
  peak_instruction: string;
  peak_computation: string;
  space: string;
  platform: string;
  positions: number;
  timeline: [number, number, string][];
  buffers: Buffer[];
  more_buffers: number;
  more_bytes: number;
  by_line: Line[];
  more_lines?: number;
  donation?: Donation[];
  reported?: { explained?: string };
  summary: string;
}

/** What Python sends: the memory and the line of Python that reads it, or why there is none (`error`), or what is
 * under way (`busy`); `selected` is the buffer followed last. */
export interface IMemoryTab {
  memory?: IMemory;
  python?: string;
  busy?: string;
  error?: string;
  note?: string;
  selected?: string;
}

const [WIDTH, HEIGHT, LEFT, TOP, BOTTOM] = [900, 220, 78, 30, 28]; // the timeline's drawing, in its own units
const BUFFERS_DRAWN = 50; // the largest buffers listed (the rest summed in a note)

/** Bytes in words: "3.5 MiB", "512 B". */
export function formatBytes(n: number): string {
  for (const [size, unit] of [
    [2 ** 30, 'GiB'],
    [2 ** 20, 'MiB'],
    [2 ** 10, 'KiB']
  ] as const) {
    if (Math.abs(n) >= size) return `${+(n / size).toPrecision(3)} ${unit}`;
  }
  return `${n} B`;
}

/** The live bytes at each position of the schedule, a step line (a position's bytes hold until the next point),
 * the peak a vertical line with its bytes and instruction. */
export function timeline(m: IMemory): SVGSVGElement {
  const holder = h('div');
  holder.innerHTML = `<svg class="hwbv-mem-chart" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}"></svg>`;
  const svg = holder.firstElementChild as SVGSVGElement;
  const [plotW, plotH] = [WIDTH - LEFT - 12, HEIGHT - TOP - BOTTOM];
  const last = Math.max(1, m.positions);
  const top = Math.max(1, m.peak_bytes, ...m.timeline.map(p => p[1]));
  const x = (pos: number) => LEFT + (plotW * pos) / last;
  const y = (bytes: number) => TOP + plotH - (plotH * bytes) / top;
  add(svg, 'line', { x1: LEFT, y1: TOP, x2: LEFT, y2: TOP + plotH, class: 'hwbv-mem-axis' });
  add(svg, 'line', { x1: LEFT, y1: TOP + plotH, x2: LEFT + plotW, y2: TOP + plotH, class: 'hwbv-mem-axis' });
  add(svg, 'text', { x: LEFT - 6, y: TOP + 4, 'text-anchor': 'end' }, formatBytes(top));
  add(svg, 'text', { x: LEFT - 6, y: TOP + plotH, 'text-anchor': 'end' }, '0');
  add(svg, 'text', { x: LEFT, y: HEIGHT - 8 }, '0');
  add(svg, 'text', { x: LEFT + plotW, y: HEIGHT - 8, 'text-anchor': 'end' }, `${formatNumber(m.positions)}`);
  add(svg, 'text', { x: LEFT + plotW / 2, y: HEIGHT - 8, 'text-anchor': 'middle' }, "position in XLA's schedule");
  const points: string[] = [];
  m.timeline.forEach(([pos, bytes], k) => {
    const next = k + 1 < m.timeline.length ? m.timeline[k + 1][0] : pos + 1;
    points.push(`${x(pos).toFixed(1)},${y(bytes).toFixed(1)}`, `${x(next).toFixed(1)},${y(bytes).toFixed(1)}`);
  });
  const line = add(svg, 'polyline', { points: points.join(' '), class: 'hwbv-mem-line' });
  line.dataset.hwb = 'memory-timeline';
  const peak = add(svg, 'g', { class: 'hwbv-mem-peak' });
  Object.assign(peak.dataset, {
    hwb: 'memory-peak',
    peakBytes: String(m.peak_bytes),
    peakAt: String(m.peak_at),
    instruction: m.peak_instruction
  });
  const px = x(m.peak_at + 0.5);
  add(peak, 'line', { x1: px, y1: TOP - 6, x2: px, y2: TOP + plotH });
  add(peak, 'circle', { cx: px, cy: y(m.peak_bytes), r: 3.5 });
  const words = `peak ${formatBytes(m.peak_bytes)} (${formatNumber(m.peak_bytes)} B) at ${m.peak_instruction}`;
  const right = px > LEFT + plotW / 2; // the label on the side with room
  add(peak, 'text', { x: right ? px - 6 : px + 6, y: TOP - 10, 'text-anchor': right ? 'end' : 'start' }, words);
  add(peak, 'title', {}, `${words}, position ${m.peak_at} of ${m.positions} (${m.peak_computation})`);
  return svg;
}

/** A table whose rows carry their facts and, where `onClick` gives one, act when clicked; the `numeric` columns
 * (sizes in words) right-aligned as numbers are. */
export function rowsTable(
  cls: string,
  columns: readonly string[],
  rows: readonly (readonly unknown[])[],
  numeric: readonly number[],
  facts: (k: number) => Record<string, string>,
  onClick: (k: number) => (() => void) | null
): HTMLElement {
  const wrap = table(cls, columns, rows);
  wrap.querySelectorAll('tbody tr').forEach((tr, k) => {
    const row = tr as HTMLTableRowElement;
    for (const c of numeric) row.cells[c].classList.add('hwbv-num');
    Object.assign(row.dataset, facts(k));
    const act = onClick(k);
    if (!act) return;
    row.classList.add('hwbv-mem-click');
    row.tabIndex = 0;
    row.addEventListener('click', act);
    row.addEventListener('keydown', e => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        act();
      }
    });
  });
  return wrap;
}

function byLine(m: IMemory, host: IWidgetHost | null): HTMLElement[] {
  const rows = m.by_line.map(l => [
    l.line,
    formatBytes(l.bytes),
    `${(100 * l.share).toFixed(1)} %`,
    l.buffers,
    l.kinds
  ]);
  const wrap = rowsTable(
    'hwbv-mem-lines',
    ['line', 'bytes', 'share', 'buffers', 'kinds'],
    rows,
    [1, 2],
    k => ({
      hwb: 'memory-line',
      line: m.by_line[k].line,
      bytes: String(m.by_line[k].bytes),
      selectable: `${!!m.by_line[k].at}`
    }),
    k => {
      const at = m.by_line[k].at;
      return at && host ? () => host.act('select_line', { file: at.file, line: at.line }) : null;
    }
  );
  const title = 'select a line of yours: its ops in the Source tab and the diff';
  wrap.querySelectorAll<HTMLElement>('tr.hwbv-mem-click').forEach(r => (r.title = title));
  const out = [h('div', 'hwbv-caption', `At the peak, by line (${m.by_line.length + (m.more_lines ?? 0)})`), wrap];
  if (m.more_lines) out.push(note(`and ${formatNumber(m.more_lines)} more lines`));
  return out;
}

function largest(m: IMemory, selected: string, host: IWidgetHost | null): HTMLElement[] {
  const shown = m.buffers.slice(0, BUFFERS_DRAWN);
  const rows = shown.map(b => [b.buffer, formatBytes(b.bytes), b.kind, b.shape, b.line, b.instruction]);
  const wrap = rowsTable(
    'hwbv-mem-buffers',
    ['buffer', 'bytes', 'kind', 'shape', 'line', 'instruction'],
    rows,
    [1],
    k => {
      const b = shown[k];
      return {
        hwb: 'memory-buffer',
        buffer: b.buffer,
        instruction: b.instruction,
        bytes: String(b.bytes),
        kind: b.kind,
        line: b.line,
        selected: `${b.buffer === selected}`
      };
    },
    k => (host ? () => host.act('select_op', { instruction: shown[k].instruction, buffer: shown[k].buffer }) : null)
  );
  wrap.querySelectorAll<HTMLElement>('tr.hwbv-mem-click').forEach(r => {
    r.title = 'follow its instruction in xla:optimized: the Source tab, the diff and its lineage';
    if (r.dataset.selected === 'true') r.classList.add('hwbv-mem-sel');
  });
  const more = m.buffers.length - shown.length + m.more_buffers;
  const rest = shown.reduce((s, b) => s - b.bytes, m.peak_bytes);
  const out = [
    h('div', 'hwbv-caption', `The largest buffers at the peak (${shown.length} of ${shown.length + more})`),
    wrap
  ];
  if (more) out.push(note(`and ${formatNumber(more)} more buffers: ${formatBytes(rest)}`));
  return out;
}

function donation(m: IMemory): HTMLElement[] {
  const rows = m.donation ?? [];
  if (!rows.length) return [];
  const saves = rows.reduce((s, r) => s + r.saves, 0);
  const wrap = rowsTable(
    'hwbv-mem-donation',
    ['argument', 'shape', 'bytes', 'donated', 'saves', 'why'],
    rows.map(r => [r.argument, r.shape, formatBytes(r.bytes), r.donated ? 'yes' : 'no', formatBytes(r.saves), r.why]),
    [2, 4],
    k => ({ hwb: 'memory-donation', argument: rows[k].argument, saves: String(rows[k].saves) }),
    () => null
  );
  const caption = saves
    ? `Donation: ${formatBytes(saves)} to save (donate_argnums)`
    : 'Donation: donated arguments XLA did not reuse';
  return [h('div', 'hwbv-caption', caption), wrap];
}

function draw(root: HTMLElement, d: IMemoryTab, host: IWidgetHost | null): void {
  const m = d.memory;
  root.dataset.state = m ? 'shown' : d.error ? 'error' : d.busy ? 'busy' : 'empty';
  for (const k of ['peakBytes', 'peakAt', 'positions'] as const) delete root.dataset[k];
  const parts: HTMLElement[] = [];
  if (d.busy) parts.push(note(d.busy));
  if (d.note) parts.push(note(d.note));
  if (d.error) parts.push(h('div', 'hwbv-error', d.error));
  if (m) {
    Object.assign(root.dataset, {
      peakBytes: String(m.peak_bytes),
      peakAt: String(m.peak_at),
      positions: String(m.positions)
    });
    const head = h('div', 'hwbv-mem-summary');
    head.dataset.hwb = 'memory-summary';
    head.append(h('b', '', m.summary), ...(d.python ? [' ', h('code', '', d.python)] : []));
    const chart = h('div', 'hwbv-mem-chart-wrap');
    chart.append(timeline(m));
    parts.push(head, chart, ...byLine(m, host), ...largest(m, d.selected ?? '', host), ...donation(m));
    if (m.reported?.explained) parts.push(note(m.reported.explained));
  }
  root.replaceChildren(...parts);
}

/** The view model's "memory" section: the same drawing, read-only; null where the model carries no memory. */
export function memorySection(m: IViewModel): HTMLElement | null {
  if (!m.memory) return null;
  const { node, body } = section('memory-section', 'Memory');
  const root = h('div', 'hwbv hwbv-memory');
  root.dataset.hwb = 'memory';
  draw(root, { memory: m.memory, python: `${m.variable ?? 'ex'}.memory()` }, null);
  body.append(root);
  return node;
}

register('memory', (el, data: IMemoryTab, host): IMounted => {
  const root = h('div', 'hwbv hwbv-memory');
  root.dataset.hwb = 'memory';
  el.append(root);
  draw(root, data, host);
  return {
    update: next => draw(root, next as unknown as IMemoryTab, host),
    dispose: () => root.remove()
  };
});
