// What ex.drift found: one sentence, the user's line, and the op where the numbers first leave the
// reference's with what made it (the stage, its pass, the patterns).
import { h, note, section } from './dom';
import { formatNumber } from './format';
import type { IViewModel } from './model';

function fact(label: string, value: string | HTMLElement): HTMLElement {
  const line = h('div', 'hwbv-fact');
  line.append(h('span', 'hwbv-label', label), typeof value === 'string' ? h('span', 'hwbv-wrap', value) : value);
  return line;
}

export function driftSection(m: IViewModel): HTMLElement | null {
  const d = m.drift;
  if (!d) return null;
  const { node, body } = section('drift', 'Drift');
  node.dataset.found = String(d.found);
  node.dataset.stage = d.stage;
  body.append(h('div', 'hwbv-drift-summary hwbv-wrap', d.summary));
  if (d.line) body.append(fact('your line', h('code', 'hwbv-wrap', d.line)));
  const op = d.op;
  if (op) {
    body.append(fact('op', h('code', 'hwbv-wrap', `${op.result} = ${op.op} (line ${op.line} of ${d.stage})`)));
    if (op.text) body.append(h('pre', 'hwbv-pre hwbv-code', op.text));
    if (op.made_by) body.append(fact('made by', `${op.made_by}${op.made_by_pass ? ` (${op.made_by_pass})` : ''}`));
    const cause = op.cause;  // one cause, as Python names it: the user's hand edit, or a stage's patterns
    if (cause) {
      const line = fact('cause', cause.words.replace(/^the cause: /, ''));
      line.dataset.hwb = 'cause';
      line.dataset.kind = cause.kind;
      line.dataset.stage = cause.stage;
      body.append(line);
    }
    if (op.blame) body.append(note(op.blame));
    body.append(fact('error', `max |error| ${formatNumber(op.max_abs) || '\u2014'}, tolerance ${formatNumber(op.tolerance) || '\u2014'}`));
    if (op.source) body.append(fact('source', op.source));
  }
  body.append(note(`${formatNumber(d.compared)} of ${formatNumber(d.ops)} ops compared in ${formatNumber(d.runs)} runs ` +
    `against ${d.reference} on ${d.device}`));
  return node;
}
