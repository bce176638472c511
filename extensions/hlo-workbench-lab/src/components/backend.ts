// The panel's Backend tab (kind "backend"): what the TPU made of each fusion, as Python read it from libtpu's LLO
// dump (workbench/views/widgets/backendtab.py; the table is viewmodel.backend_entry's): per fusion its kernel,
// bundles, bundles issued per call, MXU occupancy, busiest other unit, time, verdict and the user's line. A click on
// a fusion opens its kernel ("fusion": {fusion}): its bundles with each unit's slots coloured, the user's lines it
// came from (a click: "select_line" {file, line}) and its LLO passes (a click: "pass" {stage}; Python shows the
// pass in the tab's diff view). The fusions a line of the user's went into (`chosen`: the Source tab's line) are
// marked. The saved view draws the table from the view model's `backend` ("backend" section), without the clicks.
// Facts: [data-hwb="backend"] (data-state, data-rows, data-opened, data-line), [data-hwb="backend-row"] per fusion
// (data-fusion, data-kernel, data-mxu, data-line, data-chosen, data-opened), [data-hwb="backend-kernel"] (data-name,
// data-bundles, data-listed), [data-hwb="backend-bundle"] per bundle (data-address, data-slots),
// [data-hwb="backend-slot"] per slot used (data-unit), [data-hwb="backend-pass"] (data-stage, data-changed,
// data-shown), [data-hwb="backend-line"] per line of the kernel's (data-line).
import { button, h, note, section, table } from './dom';
import { formatNumber } from './format';
import { rowsTable } from './memory';
import type { IMounted, IViewModel } from './model';
import { register, type IWidgetHost } from './widget';

type At = { file: string; line: number } | null;

/** A fusion of the entry computation and the kernel it runs (a row of `backend_entry`). */
type Row = {
  fusion: string;
  kernel: string;
  bundles: number;
  issued: number | null;
  occupancy: Record<string, number>;
  busiest: string;
  time: number | null;
  unit: string;
  bound: string;
  line: string;
  at: At;
};

/** `viewmodel.backend_entry`: the fusions, the longest first (`more`: rows left out), and what each unit is. */
export interface IBackend {
  summary: string;
  device_kind: string;
  rows: Row[];
  more: number;
  units: Record<string, string>;
}

/** `backendtab.kernel_data`: one kernel, its first bundles ([address, loops, runs, slots per unit, ops]). */
interface IKernel {
  fusion: string;
  name: string;
  fusions: string[];
  bundles: number;
  issued: number | null;
  occupancy: Record<string, number>;
  units: string[];
  rows: [string, number, number | null, number[], string][];
  more: number;
  lines: { line: string; at: At }[];
  passes: { stage: string; pass: string; changed: boolean }[];
  error?: string;
}

/** What Python sends: the table, the line of Python, why there is none (`why`, `error`) or what is under way
 * (`busy`); the fusions of the user's line selected (`chosen`, `line`), the kernel opened and its pass shown. */
interface IBackendTab {
  backend?: IBackend;
  python?: string;
  busy?: string;
  error?: string;
  why?: string;
  chosen?: string[];
  line?: string;
  opened?: string;
  kernel?: IKernel;
  shown_pass?: string;
}

const pct = (v: number | undefined) => (v === undefined ? '' : `${Math.round(100 * v)} %`);
const unitClass = (u: string) => `hwbv-be-${u.toLowerCase().replace(':', '-')}`;

function fusions(b: IBackend, d: IBackendTab, host: IWidgetHost | null): HTMLElement[] {
  const chosen = new Set(d.chosen ?? []);
  const rows = b.rows.map(r => [
    r.fusion,
    r.bundles,
    r.issued,
    pct(r.occupancy.MXU),
    r.busiest ? `${r.busiest} ${pct(r.occupancy[r.busiest])}` : '',
    r.time === null ? '' : `${formatNumber(r.time)} ${r.unit}`,
    r.bound,
    r.line.split('/').pop()!,
    r.kernel === r.fusion ? '' : r.kernel
  ]);
  const columns = ['fusion', 'bundles', 'issued', 'MXU', 'busiest other', 'time', 'bound', 'line', 'kernel (shared)'];
  const wrap = rowsTable(
    'hwbv-be-fusions',
    columns,
    rows,
    [3, 5],
    k => {
      const r = b.rows[k];
      const [ch, op] = [chosen.has(r.fusion), r.fusion === d.opened];
      return { hwb: 'backend-row', fusion: r.fusion, kernel: r.kernel, mxu: `${r.occupancy.MXU ?? ''}`, line: r.line,
               chosen: `${ch}`, opened: `${op}` }; // prettier-ignore
    },
    k => (host ? () => host.act('fusion', { fusion: b.rows[k].fusion }) : null)
  );
  wrap.querySelectorAll<HTMLTableRowElement>('tbody tr').forEach((tr, k) => {
    tr.classList.toggle('hwbv-be-chosen', tr.dataset.chosen === 'true');
    tr.classList.toggle('hwbv-mem-sel', tr.dataset.opened === 'true');
    tr.cells[7].title = b.rows[k].line;
    tr.title = Object.entries(b.rows[k].occupancy)
      .map(([u, v]) => `${u} ${pct(v)}: ${b.units[u] ?? ''}`)
      .join('\n');
  });
  const out: HTMLElement[] = [h('div', 'hwbv-caption', `Fusions (${b.rows.length + b.more}), the longest first`)];
  if (d.line) {
    const n = chosen.size;
    out.push(note(`${d.line}: ${n ? `${n} fusion${n > 1 ? 's' : ''} (marked)` : "in no kernel's fusion"}`));
  }
  out.push(wrap);
  if (b.more) out.push(note(`and ${formatNumber(b.more)} more fusions`));
  return out;
}

function kernel(k: IKernel, d: IBackendTab, host: IWidgetHost | null): HTMLElement {
  const box = h('div', 'hwbv-be-kernel');
  Object.assign(box.dataset, {
    hwb: 'backend-kernel',
    name: k.name,
    bundles: `${k.bundles}`,
    listed: `${k.rows.length}`
  });
  const runs = k.fusions.length > 1 ? ` (it runs ${k.fusions.join(', ')})` : '';
  const issued = k.issued === null ? '? (a trip count is unknown)' : formatNumber(k.issued);
  box.append(
    h('div', 'hwbv-caption', `Kernel ${k.name}${runs}: ${formatNumber(k.bundles)} bundles, ${issued} issued per call`)
  );
  if (k.error) box.append(h('div', 'hwbv-error', k.error));
  const legend = h('div', 'hwbv-be-legend');
  for (const u of Object.keys(k.occupancy))
    legend.append(h('span', `hwbv-be-chip ${unitClass(u)}`, `${u} ${pct(k.occupancy[u])}`));
  const lines = h('div', 'hwbv-be-lines', 'From your lines: ');
  for (const l of k.lines) {
    const at = l.at;
    const go = at && host ? () => host.act('select_line', { file: at.file, line: at.line }) : null;
    const e = go ? button('hwbv-link', l.line, go, 'select it in the Source tab') : h('span', '', l.line);
    e.dataset.hwb = 'backend-line';
    e.dataset.line = l.line;
    lines.append(e, ' ');
  }
  const passes = h('div', 'hwbv-be-passes');
  const changed = k.passes.filter(p => p.changed).length;
  passes.append(`LLO passes (${k.passes.length}, ${changed} changed it; a click shows one against the one before): `);
  for (const p of k.passes) {
    const b = button(`hwbv-pick${p.changed ? '' : ' hwbv-be-same'}`, p.pass, () =>
      host?.act('pass', { stage: p.stage })
    );
    Object.assign(b.dataset, {
      hwb: 'backend-pass',
      stage: p.stage,
      changed: `${p.changed}`,
      shown: `${p.stage === d.shown_pass}`
    });
    b.setAttribute('aria-pressed', b.dataset.shown!);
    passes.append(b);
  }
  const cols = ['address', 'loops', 'runs', ...k.units, 'ops'];
  const wrap = table(
    'hwbv-be-bundles',
    cols,
    k.rows.map(([a, l, r, , ops]) => [a, l, r, ...k.units.map(() => ''), ops])
  );
  wrap.querySelectorAll<HTMLTableRowElement>('tbody tr').forEach((tr, i) => {
    const slots = k.rows[i][3];
    tr.dataset.hwb = 'backend-bundle';
    tr.dataset.address = k.rows[i][0];
    tr.dataset.slots = k.units
      .map((u, j) => (slots[j] ? `${u}:${slots[j]}` : ''))
      .filter(Boolean)
      .join(' ');
    k.units.forEach((u, j) => {
      for (let n = 0; n < slots[j]; n++) {
        const s = tr.cells[3 + j].appendChild(h('span', `hwbv-be-slot ${unitClass(u)}`));
        Object.assign(s.dataset, { hwb: 'backend-slot', unit: u });
      }
    });
  });
  box.append(legend, lines, passes, wrap);
  if (k.more)
    box.append(note(`and ${formatNumber(k.more)} more bundles (ex.backend(fusion=…).bundle_table() has all)`));
  return box;
}

function draw(root: HTMLElement, d: IBackendTab, host: IWidgetHost | null): void {
  const b = d.backend;
  root.dataset.state = b ? 'shown' : d.error ? 'error' : d.why ? 'none' : d.busy ? 'busy' : 'empty';
  Object.assign(root.dataset, { rows: `${b?.rows.length ?? 0}`, opened: d.opened ?? '', line: d.line ?? '' });
  const parts: HTMLElement[] = [];
  if (d.busy) parts.push(note(d.busy));
  if (d.error) parts.push(h('div', 'hwbv-error', d.error));
  if (d.why) parts.push(h('div', 'hwbv-be-why', `No TPU kernels to show: ${d.why}`));
  if (b) {
    const head = h('div', 'hwbv-mem-summary');
    head.append(h('b', '', b.summary), ...(d.python ? [' ', h('code', '', d.python)] : []));
    parts.push(head, ...fusions(b, d, host));
  }
  if (d.kernel) parts.push(kernel(d.kernel, d, host));
  root.replaceChildren(...parts);
}

/** The view model's "backend" section: the fusions, read-only; null where the model carries no kernels. */
export function backendSection(m: IViewModel): HTMLElement | null {
  if (!m.backend) return null;
  const { node, body } = section('backend-section', 'TPU kernels');
  const root = body.appendChild(h('div', 'hwbv hwbv-backend'));
  root.dataset.hwb = 'backend';
  draw(root, { backend: m.backend, python: `${m.variable ?? 'ex'}.backend()` }, null);
  return node;
}

register('backend', (el, data: IBackendTab, host): IMounted => {
  const root = el.appendChild(h('div', 'hwbv hwbv-backend'));
  root.dataset.hwb = 'backend';
  draw(root, data, host);
  return {
    update: next => draw(root, next as unknown as IBackendTab, host),
    dispose: () => root.remove()
  };
});
