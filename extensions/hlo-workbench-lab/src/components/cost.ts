// The cost table of the stages shown (the analytic model's rows, XLA's where the host measured them). With
// a few stages it is drawn one row per measure and one column per stage, so that two dozen measures fit a
// narrow page; the stage column of a wider table stays first.
import { h, note, section, table } from './dom';
import type { ITable, IViewModel } from './model';

/** `t` turned so that each row is a column of it: [measure, value of row 1, value of row 2, ...], headed by
 * the first column's values (the stages); measures with no value in any row are left out. */
export function transposed(t: ITable): ITable {
  const columns = [t.columns[0], ...t.rows.map((r) => String(r[0]))];
  const rows: unknown[][] = [];
  t.columns.forEach((c, k) => {
    if (k === 0) return;
    const values = t.rows.map((r) => r[k]);
    if (values.every((v) => v === null || v === undefined || v === '')) return;
    rows.push([c, ...values]);
  });
  return { columns: columns.map((c, k) => (k === 0 ? 'measure' : c)), rows };
}

export function costSection(m: IViewModel): HTMLElement | null {
  if (!m.cost && !m.cost_note) return null;
  const { node, body } = section('cost', 'Cost', m.cost ? m.cost.rows.length : undefined);
  if (m.cost_note) body.append(note(m.cost_note));
  if (m.cost) {
    const t = m.cost.rows.length <= 6 ? transposed(m.cost) : m.cost;
    body.append(table('hwbv-cost-table', t.columns, t.rows));
  } else body.append(h('div', 'hwbv-muted', 'no cost rows'));
  return node;
}
