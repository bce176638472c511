// The structural diff a saved form carries (workbench/artifacts/stage_diffs.py): the diff the panel's Diff
// tab shows (ex.diff), as its two normalized texts and its rows as runs (Diff.runs(), read by diffview.js's
// rowsOfRuns), so that the kernel-free views show and count exactly what the panel shows. A %%hlo output's
// bundle carries the diff of the pair it showed (its JSON's `diff`); a .hlox each stage's diff against its
// parent (the stage entry's `diff`, its texts among the file's by SHA-256). Any other pair, a saved form
// without one (an older workbench) and one whose runs do not fit its texts get the page's line diff, and the
// note under the pickers says which diff is shown and why.
import { rowsOfRuns } from '../../../workbench/assets/diffview.js';

/** A carried diff: the normalized texts (lines joined by newlines) and the rows as runs. */
export interface ICarriedDiff {
  before: string;
  after: string;
  runs: string;
}

/** What the panel's Diff tab says of its text (workbench/views/widgets/html.py's NORMALIZED). */
export const STRUCTURAL_NOTE =
  'the structural diff the panel shows (ex.diff), saved with the exploration; normalized text: values ' +
  'renumbered in order (%0, %1, \u2026; B\'s onto A\'s), locations, metadata and public dropped ' +
  '(ex["B"].text is the stage as written)';

export const LINE_DIFF_NOTE =
  'a line diff computed in this page (lines aligned with SSA value names blanked), not the panel\'s structural ' +
  'diff (ex.diff)';

/** Lines of a carried text as diffview.js splits it (none for ""). */
function shownLines(text: string): number {
  if (!text) return 0;
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The rows of a carried diff, or why they cannot be shown (runs that do not fit the texts). */
export function carriedRows(d: ICarriedDiff): Int32Array | string {
  return rowsOfRuns(d.runs, shownLines(d.before), shownLines(d.after));
}

/** A bundle's carried diff of `a` → `b` (its JSON's `diff`), or why the output has none. */
export function bundleCarried(diff: any, a: string, b: string): ICarriedDiff | string {
  if (!diff || typeof diff !== 'object') return 'this output was saved without it (by an older hlo-workbench)';
  if (diff.left !== a || diff.right !== b) {
    return `this output holds it for the pair it showed only (${String(diff.left)} \u2192 ${String(diff.right)})`;
  }
  const { before, after, runs } = diff;
  if (typeof before === 'string' && typeof after === 'string' && typeof runs === 'string') {
    return { before, after, runs };
  }
  return `this output holds none: ${typeof diff.note === 'string' && diff.note ? diff.note : 'no reason given'}`;
}

/** A .hlox's carried diff of `a` → stage `b` (its manifest entry `stage`), or why the file has none.
 * `anyCarried`: whether any stage of the file carries one (none: a file of an older workbench). */
export function hloxCarried(stage: any, a: string, texts: Map<string, string>,
  anyCarried: boolean): ICarriedDiff | string {
  if (!stage || stage.parent !== a) return 'a .hlox holds it for each stage and its parent only';
  const d = stage.diff;
  if (!d || typeof d !== 'object') {
    return anyCarried ? 'this file holds none for this pair (over what a .hlox carries, or a text the diff ' +
      'cannot read)' : 'this file was saved without it (by an older hlo-workbench)';
  }
  const text = (sha: unknown) => (sha === null ? '' : typeof sha === 'string' ? texts.get(sha) : undefined);
  const before = text(d.before);
  const after = text(d.after);
  if (before === undefined || after === undefined || typeof d.runs !== 'string') {
    return 'this file\'s diff of the pair names a text it does not hold';
  }
  return { before, after, runs: d.runs };
}
