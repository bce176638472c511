// What ex.drift found: one sentence, the user's line, and the op where the numbers first leave the
// reference's with what made it (the stage, its pass, the patterns).
import { h, note, section } from './dom';
import { formatNumber } from './format';
import type { IDrift, MaybeNumber } from './model';

function fact(label: string, value: string | HTMLElement): HTMLElement {
  const line = h('div', 'hwbv-fact');
  line.append(h('span', 'hwbv-label', label), typeof value === 'string' ? h('span', 'hwbv-wrap', value) : value);
  return line;
}

export function driftSection(d: IDrift | null): HTMLElement | null {
  if (!d) return null;
  const { node, body } = section('drift', 'Drift');
  Object.assign(node.dataset, { found: String(d.found), stage: d.stage });
  body.append(h('div', 'hwbv-drift-summary hwbv-wrap', d.summary));
  if (d.line) body.append(fact('your line', h('code', 'hwbv-wrap', d.line)));
  const op = d.op;
  const dash = (v: MaybeNumber) => formatNumber(v) || '\u2014';
  if (op) {
    body.append(fact('op', h('code', 'hwbv-wrap', `${op.result} = ${op.op} (line ${op.line + 1} of ${d.stage})`)));
    if (op.text) body.append(h('pre', 'hwbv-pre hwbv-code', op.text));
    if (op.made_by) body.append(fact('made by', `${op.made_by}${op.made_by_pass ? ` (${op.made_by_pass})` : ''}`));
    const cause = op.cause; // one cause, as Python names it: the user's hand edit, or a stage's patterns
    if (cause) {
      const line = fact('cause', cause.words.replace(/^the cause: /, ''));
      Object.assign(line.dataset, { hwb: 'cause', kind: cause.kind, stage: cause.stage });
      body.append(line);
    }
    if (op.blame) body.append(note(op.blame));
    body.append(fact('error', `max |error| ${dash(op.max_abs)}, tolerance ${dash(op.tolerance)}`));
    if (op.source) body.append(fact('source', op.source));
  }
  const counts = `${formatNumber(d.compared)} of ${formatNumber(d.ops)} ops compared in ${formatNumber(d.runs)} runs`;
  body.append(note(`${counts} against ${d.reference} on ${d.device}`));
  return node;
}
