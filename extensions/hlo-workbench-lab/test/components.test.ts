// The view components' pure parts (src/components): the rows of a diff Python made (runs -> int32 rows, as
// workbench/analysis/diff/result.py's rows_of_runs reads them), their counts, and how numbers are written.
// The components drawn from a real model in Chromium: tests/test_views_bundle.py.
import { describe, expect, it } from 'vitest';

import {
  KINDS,
  checkWords,
  clip,
  entryRows,
  formatMs,
  formatNumber,
  formatShape,
  rowCounts,
  rowsOfRuns,
  textLines,
  transposed
} from '../src/components';
import type { ICheck } from '../src/components';

const triples = (rows: Int32Array | string) => {
  expect(typeof rows).not.toBe('string');
  const r = Array.from(rows as Int32Array);
  const out: [number, number, string][] = [];
  for (let k = 0; k < r.length; k += 3) out.push([r[k], r[k + 1], KINDS[r[k + 2]]]);
  return out;
};

describe('rowsOfRuns', () => {
  it('reads every tag as Diff.runs() writes it: each line of a side in one row, in order', () => {
    expect(triples(rowsOfRuns('=1-1+1~1<1>1', 4, 4))).toEqual([
      [0, 0, 'equal'],
      [1, -1, 'deleted'],
      [-1, 1, 'inserted'],
      [2, 2, 'changed'],
      [3, -1, 'moved'],
      [-1, 3, 'moved']
    ]);
    expect(triples(rowsOfRuns('=12', 12, 12)).every(([i, j, k], n) => i === n && j === n && k === 'equal')).toBe(true);
  });

  it('gives no rows for two empty texts, and says why runs do not fit their texts', () => {
    expect(rowsOfRuns('', 0, 0)).toEqual(new Int32Array(0));
    expect(rowsOfRuns('', 1, 0)).toMatch(/do not cover the texts' 1 and 0 lines/);
    expect(rowsOfRuns('=3', 2, 3)).toMatch(/do not cover/);
    expect(rowsOfRuns('=999999999=999999999', 10, 10)).toMatch(/do not cover/); // stops before allocating
    expect(rowsOfRuns('=0', 0, 0)).toMatch(/not tags and counts \(at character 0\)/);
    expect(rowsOfRuns('=1x', 1, 1)).toMatch(/not tags and counts \(at character 2\)/);
    expect(rowsOfRuns('=01', 1, 1)).toMatch(/not tags and counts/);
    expect(rowsOfRuns(null, 0, 0)).toMatch(/not a string/);
  });

  it('counts rows by kind as the viewer\u2019s header does (a moved line is two rows)', () => {
    const rows = rowsOfRuns('=5~2-3+1<1=2>1', 13, 11) as Int32Array;
    expect(rowCounts(rows)).toEqual({ equal: 7, changed: 2, deleted: 3, inserted: 1, moved: 2 });
    expect(rowCounts(new Int32Array(0))).toEqual({ equal: 0, changed: 0, deleted: 0, inserted: 0, moved: 0 });
  });
});

describe('a diff entry of the model', () => {
  it('counts its texts\u2019 lines as the viewer splits them (none for an empty text)', () => {
    expect(textLines('')).toBe(0);
    expect(textLines('a')).toBe(1);
    expect(textLines('a\nb')).toBe(2);
    expect(textLines('a\n')).toBe(2);
  });

  it('gives its rows, or its note, or why its runs do not fit', () => {
    const d = { left: 'a', right: 'b', before: 'x\ny\nz', after: 'x\nw', runs: '=1~1-1' };
    expect(triples(entryRows(d))).toEqual([
      [0, 0, 'equal'],
      [1, 1, 'changed'],
      [2, -1, 'deleted']
    ]);
    expect(entryRows({ left: 'a', right: 'b', note: 'a stage shown has no text to compare' })).toBe(
      'a stage shown has no text to compare'
    );
    expect(entryRows({ ...d, runs: '=1~1' })).toMatch(/do not cover the texts' 3 and 2 lines/);
  });
});

describe('numbers in words', () => {
  it('writes counts with separators and measures to 4 significant digits', () => {
    expect(formatNumber(null)).toBe('');
    expect(formatNumber(undefined)).toBe('');
    expect(formatNumber(0)).toBe('0');
    expect(formatNumber(1234567)).toBe('1,234,567');
    expect(formatNumber(4.449663834399017)).toBe('4.45');
    expect(formatNumber(0.05230946)).toBe('0.05231');
    expect(formatNumber(7.037752945984691e-6)).toBe('7.038e-6');
    expect(formatNumber(-2.5e7 + 0.5)).toBe('-2.5e+7');
    expect(formatNumber(true)).toBe('yes');
    expect(formatNumber(false)).toBe('no');
    expect(formatNumber('cpu:0')).toBe('cpu:0');
  });

  it('writes times in ms or s', () => {
    expect(formatMs(null)).toBe('');
    expect(formatMs(0.4346750010881806)).toBe('0.435 ms');
    expect(formatMs(12.58)).toBe('12.6 ms');
    expect(formatMs(345.6)).toBe('346 ms');
    expect(formatMs(1240)).toBe('1.24 s');
  });

  it('writes shapes as Python does, and cuts a long text saying how much is left out', () => {
    expect(formatShape([])).toBe('()');
    expect(formatShape([8])).toBe('(8,)');
    expect(formatShape([4, 16])).toBe('(4, 16)');
    expect(clip('abcdef', 10)).toBe('abcdef');
    expect(clip('a'.repeat(2000), 10)).toBe('aaaaaaaaaa\u2026 (1,990 more characters)');
  });
});

describe('the cost table of a few stages', () => {
  it('is drawn one row per measure, one column per stage, measures without a value left out', () => {
    const t = transposed({
      columns: ['stage', 'group', 'flops', 'xla_flops'],
      rows: [
        ['inline#1', 'mlir', 46, null],
        ['canonicalize#1', 'mlir', 40, null]
      ]
    });
    expect(t).toEqual({
      columns: ['measure', 'inline#1', 'canonicalize#1'],
      rows: [
        ['group', 'mlir', 'mlir'],
        ['flops', 46, 40]
      ]
    });
  });
});

describe('a check in one line', () => {
  const leaf = { shape: [8], dtype: 'float32', max_rel: 0.9, tolerance: 7e-6, rule: 'float64', computed: 'float32' };
  const check: ICheck = {
    passed: false,
    reference: 'f in float64',
    kind: 'float64',
    source: 'traced',
    note: '',
    max_abs: 4.449663834399017,
    max_rel: 0.9,
    leaves: [
      { ...leaf, path: "['a']", max_abs: 4.45, passed: false },
      { ...leaf, path: "['b']", max_abs: 1e-7, passed: true }
    ]
  };
  it('says the verdict, the reference, the errors and how many leaves failed', () => {
    expect(checkWords(check)).toBe('FAILED vs f in float64: max |error| 4.45, max relative 0.9 (1 of 2 leaves failed)');
    expect(checkWords({ ...check, passed: true, leaves: [check.leaves[1]] })).toBe(
      'passed vs f in float64: max |error| 4.45, max relative 0.9 (1 leaf, all within tolerance)'
    );
  });
});
