// XLA's compile profile: time per pass, as the workbench measured it.
import { section, table } from './dom';
import type { IViewModel } from './model';

export function compileSection(m: IViewModel): HTMLElement | null {
  const t = m.compile?.table;
  if (!t) return null;
  const { node, body } = section('compile', 'Compile profile', t.rows.length);
  body.append(table('hwbv-compile-table', t.columns, t.rows));
  return node;
}
