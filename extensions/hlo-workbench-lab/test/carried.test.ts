// The structural diff the saved forms carry (src/carried.ts): a real .hlox and a real %%hlo bundle of the
// attention example (test/make_view_fixtures.py) show the panel's diff of a stage and its parent -- the rows
// ex.diff gives, counted as the panel's header counts them -- and say so; any other pair, a form without a
// carried diff, and a damaged one get the page's line diff, and the note says why.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { rowCounts, rowsOfRuns } from '../../../workbench/assets/diffview.js';
import { IExplorationView, bundleView, diffPair, hloxView, readHlox } from '../src/exploration';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const file = readHlox(new Uint8Array(readFileSync(join(FIXTURES, 'attention.hlox'))));
const expected = JSON.parse(readFileSync(join(FIXTURES, 'attention.expect.json'), 'utf8'));
const bundle = JSON.parse(readFileSync(join(FIXTURES, 'attention.bundle.json'), 'utf8'));
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const [A, B] = expected.pair;  // a stage and its parent
const panel = expected.structural;  // ex.diff(A, B) as the panel shows it

/** The file with stage `name`'s carried diff changed by `change`. */
function withDiff(name: string, change: (d: any) => any): IExplorationView {
  const stages = file.manifest.stages.map((s: any) => (s.name === name ? { ...s, diff: change(s.diff) } : s));
  return hloxView({ ...file, manifest: { ...file.manifest, stages } });
}

describe('the structural diff a .hlox carries', () => {
  const view = hloxView(file);

  it('is the panel\'s diff of a stage and its parent: its texts, its rows and their counts', () => {
    const d = diffPair(view, A, B);
    expect([d.kind, d.message]).toEqual(['structural', '']);
    expect(d.note).toMatch(/^the structural diff the panel shows \(ex\.diff\), saved with the exploration; normalized/);
    expect([sha256(d.before), sha256(d.after)]).toEqual([panel.before, panel.after]);
    expect(d.rows).toEqual(rowsOfRuns(panel.runs, d.before.split('\n').length, d.after.split('\n').length));
    expect(d.rows.length / 3).toBe(panel.rows);
    // what the header counts ("~19 changed −20 deleted 2 moved"), the panel's counts of the same pair
    expect(rowCounts(d.rows)).toEqual(panel.counts);
    expect(panel.counts[2]).toBeGreaterThan(5);
  });

  it('is carried for every stage with a parent: the pair opened first and each "diff" button\'s', () => {
    expect(diffPair(view, ...view.first).kind).toBe('structural');
    const diffed = view.stages.filter(s => s.parent && !s.error);
    expect(diffed.length).toBe(view.stages.length - 1);
    for (const s of diffed) {
      const d = diffPair(view, s.parent!, s.name);
      expect([s.name, d.kind]).toEqual([s.name, 'structural']);
      // each before and after line is shown once, in order
      const sides = [[] as number[], [] as number[]];
      for (let k = 0; k < d.rows.length; k += 3) {
        if (d.rows[k] >= 0) sides[0].push(d.rows[k]);
        if (d.rows[k + 1] >= 0) sides[1].push(d.rows[k + 1]);
      }
      expect(sides[0]).toEqual([...Array(d.before ? d.before.split('\n').length : 0).keys()]);
      expect(sides[1]).toEqual([...Array(d.after ? d.after.split('\n').length : 0).keys()]);
    }
  });

  it('is for a stage and its parent only: another pair is diffed in the page, and the note says so', () => {
    for (const [a, b] of [[B, A], ['stablehlo', B], [A, A]]) {
      const d = diffPair(view, a, b);
      expect(d.kind).toBe('line');
      expect(d.note).toBe('a line diff computed in this page (lines aligned with SSA value names blanked), not the ' +
        'panel\'s structural diff (ex.diff): a .hlox holds it for each stage and its parent only');
    }
  });

  it('falls back to the page\'s line diff when it is missing or damaged, and says why', () => {
    const cases: [any, RegExp][] = [
      [() => undefined, /this file holds none for this pair \(over what a \.hlox carries/],
      [(d: any) => ({ ...d, runs: '=1' }),
        /the one saved for this pair is damaged \(the runs do not cover the texts' \d+ and \d+ lines\)/],
      [(d: any) => ({ ...d, runs: `=${'9'.repeat(9)}` }), /is damaged \(the runs do not cover/],
      [(d: any) => ({ ...d, runs: '=3 x' }), /is damaged \(the runs are not tags and counts \(at character 2\)\)/],
      [(d: any) => ({ ...d, runs: 12 }), /names a text it does not hold/],
      [(d: any) => ({ ...d, after: 'f'.repeat(64) }), /names a text it does not hold/],
      [(d: any) => ({ ...d, before: 7 }), /names a text it does not hold/]
    ];
    for (const [change, why] of cases) {
      const d = diffPair(withDiff(B, change), A, B);
      expect(d.kind).toBe('line');
      expect(d.note).toMatch(why);
      expect(d.rows.length).toBeGreaterThan(0);
    }
    // a file from a workbench that carried none: every pair is diffed in the page
    const older = hloxView({ ...file, manifest: { ...file.manifest,
      stages: file.manifest.stages.map(({ diff, ...s }: any) => s) } });
    expect(diffPair(older, A, B).note).toMatch(/: this file was saved without it \(by an older hlo-workbench\)$/);
  });
});

describe('the structural diff a %%hlo bundle carries', () => {
  const view = bundleView(bundle);

  it('is the panel\'s diff of the pair the output showed, as the .hlox carries it', () => {
    expect(view.first).toEqual([A, B]);
    const d = diffPair(view, A, B);
    expect([d.kind, sha256(d.before), sha256(d.after)]).toEqual(['structural', panel.before, panel.after]);
    expect(rowCounts(d.rows)).toEqual(panel.counts);
    expect(d.rows).toEqual(diffPair(hloxView(file), A, B).rows);
  });

  it('is for the pair shown only; an output without one says why', () => {
    expect(diffPair(view, B, A).note).toMatch(
      new RegExp(`: this output holds it for the pair it showed only \\(${A} \u2192 ${B}\\)$`));
    const none = bundleView({ ...bundle, diff: { left: A, right: B, note: 'over 20,000 lines, ...' } });
    expect(diffPair(none, A, B).note).toMatch(/: this output holds none: over 20,000 lines, \.\.\.$/);
    const older = bundleView({ ...bundle, diff: undefined });
    expect(diffPair(older, A, B).note).toMatch(/: this output was saved without it \(by an older hlo-workbench\)$/);
    for (const diff of [{ ...bundle.diff, runs: 'zz' }, { ...bundle.diff, before: bundle.diff.before + '\nx' }]) {
      const d = diffPair(bundleView({ ...bundle, diff }), A, B);
      expect([d.kind, d.note.includes('is damaged')]).toEqual(['line', true]);
    }
    for (const diff of [null, 7, 'x', [], { left: A, right: B }, { left: A, right: B, before: 1, after: 2, runs: 3 }]) {
      expect(diffPair(bundleView({ ...bundle, diff }), A, B).kind).toBe('line');
    }
  });
});

describe('rowsOfRuns', () => {
  it('reads Diff.runs() back, and refuses runs that do not fit before allocating them', () => {
    expect(Array.from(rowsOfRuns('=1-1+1~1<1>1', 4, 4) as Int32Array)).toEqual(
      [0, 0, 0, 1, -1, 2, -1, 1, 3, 2, 2, 1, 3, -1, 4, -1, 3, 4]);
    expect(rowsOfRuns('', 0, 0)).toEqual(new Int32Array(0));
    expect(rowsOfRuns('', 1, 0)).toMatch(/do not cover/);
    expect(rowsOfRuns('=999999999=999999999', 10, 10)).toMatch(/do not cover/);
    expect(rowsOfRuns('=0', 0, 0)).toMatch(/not tags and counts/);
    expect(rowsOfRuns('=01', 1, 1)).toMatch(/not tags and counts/);
    expect(rowsOfRuns(null, 0, 0)).toMatch(/not a string/);
  });
});
