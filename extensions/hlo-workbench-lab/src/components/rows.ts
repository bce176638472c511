// The rows of a diff Python made, for the diff viewer (workbench/assets/diffview.js): Diff.runs()
// (workbench/analysis/diff/result.py, read back there by rows_of_runs) as int32 triples (before line,
// after line, kind code; -1 where a side has no line). The one reader of runs in JavaScript: no view diffs
// lines itself.

/** A row's kind by its code: workbench/analysis/diff/kinds.py's ROW_KINDS, diffview.js's KINDS. */
export const KINDS = ['equal', 'changed', 'deleted', 'inserted', 'moved'] as const;
export type RowKind = (typeof KINDS)[number];

const RUN = /([-=~+<>])([1-9][0-9]{0,8})/y;
// tag -> [takes a before line, takes an after line, kind code]
const TAG: Record<string, [number, number, number]> = {
  '=': [1, 1, 0],
  '~': [1, 1, 1],
  '-': [1, 0, 2],
  '+': [0, 1, 3],
  '<': [1, 0, 4],
  '>': [0, 1, 4]
};

/** How many lines the diff viewer shows of a carried text: its newline-separated parts, none for "". */
export function textLines(text: string): number {
  if (!text) return 0;
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The rows of `runs` for texts of `nBefore` and `nAfter` lines, or a sentence saying why they do not fit
 * them. The runs are read once to count their lines before the rows are allocated, so a damaged count
 * costs nothing. */
export function rowsOfRuns(runs: unknown, nBefore: number, nAfter: number): Int32Array | string {
  if (typeof runs !== 'string') return 'the runs are not a string';
  let i = 0;
  let j = 0;
  let n = 0;
  for (let at = 0; at < runs.length; at = RUN.lastIndex) {
    RUN.lastIndex = at;
    const m = RUN.exec(runs);
    if (!m) return `the runs are not tags and counts (at character ${at})`;
    const [left, right] = TAG[m[1]];
    const count = Number(m[2]);
    i += left * count;
    j += right * count;
    n += count;
    if (i > nBefore || j > nAfter) break;
  }
  if (i !== nBefore || j !== nAfter) return `the runs do not cover the texts' ${nBefore} and ${nAfter} lines`;
  const rows = new Int32Array(3 * n);
  i = j = 0;
  let k = 0;
  for (RUN.lastIndex = 0; RUN.lastIndex < runs.length;) {
    const m = RUN.exec(runs)!;
    const [left, right, code] = TAG[m[1]];
    for (let c = Number(m[2]); c > 0; c--, k += 3) {
      rows[k] = left ? i++ : -1;
      rows[k + 1] = right ? j++ : -1;
      rows[k + 2] = code;
    }
  }
  return rows;
}

/** How many rows of each kind `rows` holds (what the viewer's header counts; a moved line is two rows). */
export function rowCounts(rows: Int32Array): Record<RowKind, number> {
  const out: Record<RowKind, number> = { equal: 0, changed: 0, deleted: 0, inserted: 0, moved: 0 };
  for (let k = 2; k < rows.length; k += 3) out[KINDS[rows[k]]]++;
  return out;
}

/** The rows of a diff entry, or why there are none (its note, or runs that do not fit its texts). */
export function entryRows(d: { before?: string; after?: string; runs?: string; note?: string }): Int32Array | string {
  if (typeof d.before !== 'string' || typeof d.after !== 'string' || typeof d.runs !== 'string') {
    return d.note || 'the diff holds no texts and runs';
  }
  return rowsOfRuns(d.runs, textLines(d.before), textLines(d.after));
}
