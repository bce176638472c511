// The panel's Collectives tab (kind "collectives"): the collectives of stage B and, per stage, how many there are
// and the bytes they move, as Python computed them (workbench/views/widgets/collectives.py, tab_data). A click on
// one of B's collectives asks the panel to mark its op in the diff ("op": {stage, result, func}); a click on a
// stage of the per-stage table makes it B ("stage": {stage}).
// Facts: [data-hwb="collective"] per collective of B (data-op: its name in the stage's text, data-kind,
// data-stage); [data-hwb="collective-stage"] per line of the per-stage table (data-first, data-last,
// data-stages, data-collectives, data-b).
import { button, h, note, table } from './dom';
import type { IMounted, ITable } from './model';
import { register, type IWidgetHost } from './widget';

/** A line of the per-stage table: stages `first` .. `last` alike; `b`: stage B's line. */
type Line = {
  first: string;
  last: string;
  stages: number;
  collectives: number | null;
  bytes: string;
  kinds: string;
  b: boolean;
};

/** What Python sends (tab_data): notes; B's caption and table; the per-stage table; "busy" while it reads. */
export interface ICollectives {
  state: 'empty' | 'one-device' | 'shown' | 'error';
  notes?: string[];
  busy?: string;
  error?: string;
  stage?: string;
  here?: { status: string; caption: string; table?: ITable };
  summary?: { caption: string; lines: Line[] };
}

/** B's collectives: the table Python made, each row's op name a button that marks it in the diff. */
function stageB(d: ICollectives, host: IWidgetHost): HTMLElement[] {
  const here = d.here!;
  const out: HTMLElement[] = [h('div', 'hwbv-caption', here.caption)];
  if (!here.table) return out;
  const { columns, rows } = here.table;
  const [kind, result, func] = ['kind', 'result', 'func'].map(c => columns.indexOf(c));
  const wrap = table('hwbv-coll-table', columns, rows);
  wrap.querySelectorAll('tbody tr').forEach((tr, k) => {
    const [op, stage] = [String(rows[k][result] ?? ''), d.stage ?? ''];
    Object.assign((tr as HTMLElement).dataset, { hwb: 'collective', op, kind: String(rows[k][kind]), stage });
    const cell = (tr as HTMLTableRowElement).cells[result];
    const payload = { stage, result: op, func: func < 0 ? '' : String(rows[k][func] ?? '') };
    if (op) cell.replaceChildren(button('hwbv-link', op, () => host.act('op', payload), 'mark it in the Diff tab'));
  });
  out.push(wrap);
  return out;
}

/** The per-stage table: a run of stages alike is one line; a stage's name is a button that makes it B. */
function perStage(s: NonNullable<ICollectives['summary']>, host: IWidgetHost): HTMLElement[] {
  const rows = s.lines.map(l => ['', l.collectives, l.bytes, l.kinds]);
  const wrap = table('hwbv-coll-stages', ['stage', 'collectives', 'bytes per device', 'kinds'], rows);
  wrap.querySelectorAll('tbody tr').forEach((tr, k) => {
    const l = s.lines[k];
    const row = tr as HTMLTableRowElement;
    Object.assign(row.dataset, {
      hwb: 'collective-stage',
      first: l.first,
      last: l.last,
      stages: String(l.stages),
      collectives: l.collectives === null ? '' : String(l.collectives),
      b: String(l.b)
    });
    if (l.b) row.classList.add('hwbv-coll-b');
    const pick = (name: string) => button('hwbv-link', name, () => host.act('stage', { stage: name }), 'make it B');
    row.cells[0].classList.add('hwbv-wrap');
    row.cells[0].append(pick(l.first));
    if (l.stages > 1) row.cells[0].append(' \u2026 ', pick(l.last), ` (${l.stages} stages)`);
  });
  return [h('div', 'hwbv-caption', s.caption), wrap];
}

function draw(root: HTMLElement, d: ICollectives, host: IWidgetHost): void {
  root.dataset.state = d.state;
  const parts: HTMLElement[] = (d.notes ?? []).map(t => note(t));
  if (d.busy) parts.push(note(d.busy));
  if (d.error) parts.push(h('div', 'hwbv-error', d.error));
  if (d.here) parts.push(...stageB(d, host));
  if (d.summary) parts.push(...perStage(d.summary, host));
  root.replaceChildren(...parts);
}

register('collectives', (el, data: ICollectives, host): IMounted => {
  const root = h('div', 'hwbv hwbv-collectives');
  root.dataset.hwb = 'collectives';
  el.append(root);
  draw(root, data, host);
  return {
    update: next => draw(root, next as unknown as ICollectives, host),
    dispose: () => root.remove()
  };
});
