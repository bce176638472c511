// What ex.drift found: one sentence, the user's line, and the op where the numbers first leave the
// reference's with what made it (the stage, its pass, the patterns); the op beside its counterpart, its inputs
// beside theirs, and the values compared.
import { h, note, section, table } from './dom';
import { formatNumber } from './format';
import type { IDrift, IFirstRows, MaybeNumber } from './model';

function fact(label: string, value: string | HTMLElement): HTMLElement {
  const line = h('div', 'hwbv-fact');
  line.append(h('span', 'hwbv-label', label), typeof value === 'string' ? h('span', 'hwbv-wrap', value) : value);
  return line;
}

/** A table of the first rows under data-hwb `hwb`, a note counting the rows left out. */
function firstRows(hwb: string, t: IFirstRows, caption = ''): HTMLElement {
  const node = h('div', 'hwbv-drift-table');
  node.dataset.hwb = hwb;
  if (caption) node.append(note(caption));
  node.append(table(`hwbv-${hwb}`, t.columns, t.rows));
  if (t.more) node.append(note(`and ${formatNumber(t.more)} more`));
  return node;
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
    const ref = op.counterpart;
    if (ref) {
      const line = (n: number) => (n >= 0 ? n + 1 : null);
      const rows = [
        [d.stage, op.result, op.op, line(op.line), op.text],
        [d.reference, ref.result, ref.op, line(ref.line), ref.text]
      ];
      const columns = ['', 'result', 'op', 'line', 'text'];
      body.append(firstRows('drift-counterpart', { columns, rows, more: 0 }, 'beside its counterpart'));
    }
    if (op.inputs?.rows.length) body.append(firstRows('drift-inputs', op.inputs, "its inputs, beside the reference's"));
  }
  if (d.values) {
    const v = d.values;
    const { node: values, body: inside } = section('drift-values', 'Values compared', v.rows.length + v.more, true);
    inside.append(note(`${formatNumber(v.drifts)} drift`), firstRows('drift-values-table', v));
    body.append(values);
  }
  const counts = `${formatNumber(d.compared)} of ${formatNumber(d.ops)} ops compared in ${formatNumber(d.runs)} runs`;
  body.append(note(`${counts} against ${d.reference} on ${d.device}`));
  return node;
}
