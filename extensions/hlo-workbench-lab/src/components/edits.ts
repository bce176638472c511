// The exploration's hand edits, in order: a replaced text, a pass inserted, a pass left out.
import { h, section } from './dom';
import type { IViewModel } from './model';

export function editsSection(m: IViewModel): HTMLElement | null {
  if (!m.edits.length) return null;
  const { node, body } = section('edits', 'Edits', m.edits.length);
  const list = h('ol', 'hwbv-list');
  for (const e of m.edits) {
    const li = h('li', 'hwbv-edit');
    li.dataset.hwb = 'edit';
    li.dataset.kind = e.kind;
    li.dataset.stage = e.stage;
    li.append(h('span', 'hwbv-wrap', e.what));
    if (e.kind === 'text') li.append(h('span', 'hwbv-muted', ` (${e.text_lines.toLocaleString('en-US')} lines)`));
    if (e.kind === 'insert' && e.pass) li.append(' ', h('code', 'hwbv-wrap', e.pass));
    list.append(li);
  }
  body.append(list);
  return node;
}
