// "Compare with…": two real .hlox files (test/make_compare_fixtures.py saves the MLP example under the
// default settings and under "no_enzyme" with two patterns off) compared as the page compares them,
// against what Python reads back from the same files; and small hand-made manifests for the edges.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import {
  DIFF_LIMITS, IHloxSide, alignStages, compareHlox, compareSettings, compareVersions, costCellText, diffStages,
  firstDifferenceText, lastMlirStage, signed, stageCountsText
} from '../src/compare';
import { hloxView, readHlox } from '../src/exploration';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const expected = JSON.parse(readFileSync(join(FIXTURES, 'mlp.compare.json'), 'utf8'));

function side(name: string): IHloxSide {
  const file = readHlox(new Uint8Array(readFileSync(join(FIXTURES, name))));
  return { path: name, file, view: hloxView(file) };
}

const SHA = (k: number) => k.toString(16).padStart(64, '0');

/** A side made from stage tuples [name, group, text (a number standing for its hash) or null, error]. */
function made(stages: [string, string, number | null, string?][], texts: Record<number, string> = {},
  extra: Record<string, unknown> = {}): IHloxSide {
  const manifest = {
    kind: 'hlo-workbench exploration', saved_by: { jax: '0.10.2' }, spec: { pipeline: 'all' }, ...extra,
    stages: stages.map(([name, group, text, error], k) => ({ name, group, produced_by: name, changed: true,
      seconds: null, parent: k ? stages[k - 1][0] : null, error: error ?? null, cached: false,
      text: text === null ? null : SHA(text) }))
  };
  const map = new Map(Object.entries(texts).map(([k, t]) => [SHA(Number(k)), t]));
  const file = { manifest, texts: map, members: ['manifest.json'] };
  return { path: 'made.hlox', file, view: hloxView(file) };
}

describe('two saved explorations of one program', () => {
  const [a, b] = expected.files.map(side);
  const c = compareHlox(a, b);

  it('aligns their stages by name, in the order of each, marking a stage only one holds', () => {
    const namesA: string[] = expected.stages[expected.files[0]].map((s: any) => s.name);
    const namesB: string[] = expected.stages[expected.files[1]].map((s: any) => s.name);
    const names = c.stages.map(s => s.name);
    expect(names.length).toBe(new Set([...namesA, ...namesB]).size);
    expect(names.filter(n => namesA.includes(n))).toEqual(namesA);
    expect(names.filter(n => namesB.includes(n))).toEqual(namesB);
    const onlyA = namesA.filter(n => !namesB.includes(n));
    const onlyB = namesB.filter(n => !namesA.includes(n));
    expect(onlyA).toEqual(['enzyme#1']);  // no_enzyme runs no Enzyme autodiff pass
    expect(onlyB.length).toBeGreaterThan(0);  // and XLA runs a pass more on what it is given
    expect(c.stages.filter(s => s.match === 'only-a').map(s => s.name)).toEqual(onlyA);
    expect(c.stages.filter(s => s.match === 'only-b').map(s => s.name)).toEqual(onlyB);
    // a stage only B holds comes right after the stage before it in B
    const at = names.indexOf(onlyB[0]);
    expect(names[at - 1]).toBe(namesB[namesB.indexOf(onlyB[0]) - 1]);
    const row = c.stages.find(s => s.name === 'enzyme#1')!;
    expect([row.a, row.b]).toEqual([namesA.indexOf('enzyme#1'), -1]);
  });

  it('says which modules differ beyond renaming, stage for stage as wb.compare_explorations does', () => {
    const same: Record<string, boolean> = expected.same;
    expect(Object.keys(same).length).toBeGreaterThan(30);
    for (const [name, isSame] of Object.entries(same)) {
      expect(c.stages.find(r => r.name === name)!.match, name).toBe(isSame ? 'same' : 'differs');
    }
    expect(c.stages.find(s => s.name === 'cse#1')!.match).toBe('same');
  });

  it('counts two texts that differ only by renaming as the same module, where the files say so', () => {
    const a = made([['x', 'mlir', 1]]);
    const b = made([['x', 'mlir', 2]]);
    expect(alignStages(a, b)[0].match).toBe('differs');  // files without the normalized hashes: by their texts
    (a.file.manifest.stages[0] as any).normalized = SHA(7);
    (b.file.manifest.stages[0] as any).normalized = SHA(7);
    expect(alignStages(a, b).map(r => [r.match, r.note])).toEqual([['same', 'renamed only']]);
    (b.file.manifest.stages[0] as any).normalized = SHA(8);
    expect(alignStages(a, b)[0].match).toBe('differs');
  });

  it('names the first aligned stage whose module differs', () => {
    expect(expected.first_difference).toBe('enzyme-hlo-patterns#1');
    expect(c.firstDifference!.name).toBe(expected.first_difference);
    expect(firstDifferenceText(c)).toBe('first difference: enzyme-hlo-patterns#1');
    expect(stageCountsText(c)).toMatch(
      /^\d+ stages in A, \d+ in B; \d+ in both, \d+ of them differ; only in A: enzyme#1; only in B: xla:\S+$/);
  });

  it('sets each aligned stage\'s costs side by side with the delta', () => {
    expect(c.costColumns).toEqual(['ops', 'flops', 'bytes', 'xla_flops', 'xla_bytes', 'temp_bytes']);
    const cost = (stage: string) => c.cost(c.stages.find(s => s.name === stage)!);
    const table = (s: IHloxSide, stage: string, column: string) => {
      const cols = s.view.cost!.columns;
      return s.view.cost!.rows.find(r => r[0] === stage)![cols.indexOf(column)];
    };
    const [ops] = cost('enzyme-hlo-patterns#3');
    expect([ops.a, ops.b]).toEqual([table(a, 'enzyme-hlo-patterns#3', 'ops'), table(b, 'enzyme-hlo-patterns#3', 'ops')]);
    expect(ops.delta).toBe(ops.b! - ops.a!);
    expect(ops.delta).not.toBe(0);  // the two patterns off leave broadcasts in the module
    expect(costCellText(ops)).toBe(`${ops.a} \u2192 ${ops.b} (${signed(ops.delta!)})`);
    const temp = cost('xla:optimized').find(d => d.column === 'temp_bytes')!;
    expect(temp.a).toBe(table(a, 'xla:optimized', 'temp_bytes'));
    expect(cost('enzyme#1').every(d => d.b === null && d.delta === null)).toBe(true);
  });

  it('lists the settings that differ and the versions, which do not', () => {
    const differ = c.settings.filter(s => !s.same);
    expect(differ.map(s => s.name)).toEqual(['pipeline', 'patterns off']);
    expect([differ[0].a, differ[0].b]).toEqual(['all', 'no_enzyme']);
    expect(differ[1]).toMatchObject({ a: '(none)', b: 'broadcast_in_dim_op_canon, broadcast_in_dim_simplify',
      note: '2 only in B' });
    expect(c.versions.every(v => v.same)).toBe(true);
    expect(c.versions.map(v => v.name).slice(0, 5)).toEqual(['workbench', 'jax', 'jaxlib', 'enzyme-ad', 'python']);
  });

  it('diffs the final modules: the last MLIR stage of each', () => {
    expect([c.final.aStage, c.final.bStage]).toEqual([lastMlirStage(a), lastMlirStage(b)]);
    expect(c.final.aStage).toBe('enzyme-hlo-patterns#3');
    expect(c.final.message).toBe('');
    expect(c.final.before).toBe(a.view.text(c.final.aStage).text.replace(/\n$/, ''));
    const kinds = new Set<number>();
    for (let k = 2; k < c.final.rows.length; k += 3) kinds.add(c.final.rows[k]);
    expect(kinds.has(0)).toBe(true);  // equal lines
    expect([...kinds].some(k => k !== 0)).toBe(true);
    expect(c.final.note).toMatch(/line diff computed in this page/);
    expect(c.diff('cse#1', 'cse#1').message).toBe("A's cse#1 and B's cse#1 hold the same module");
  });
});

describe('the comparison of hand-made manifests', () => {
  it('puts a stage only B has after the stages both hold that come before it in B', () => {
    const a = made([['x', 'trace', 1], ['p#1', 'mlir', 2], ['q#1', 'mlir', 3], ['r#1', 'mlir', 4]]);
    const b = made([['x', 'trace', 1], ['s#1', 'mlir', 2], ['q#1', 'mlir', 5], ['r#1', 'mlir', 4], ['t#1', 'xla', 6]]);
    const rows = alignStages(a, b);
    expect(rows.map(r => [r.name, r.match])).toEqual([['x', 'same'], ['p#1', 'only-a'], ['s#1', 'only-b'],
      ['q#1', 'differs'], ['r#1', 'same'], ['t#1', 'only-b']]);
    expect(compareHlox(a, b).firstDifference!.name).toBe('q#1');
    // stages in another order: each listed once, paired by name
    const crossed = alignStages(a, made([['r#1', 'mlir', 4], ['n#1', 'mlir', 7], ['x', 'trace', 1]]));
    expect(crossed.map(r => [r.name, r.match])).toEqual([['n#1', 'only-b'], ['x', 'same'], ['p#1', 'only-a'],
      ['q#1', 'only-a'], ['r#1', 'same']]);
  });

  it('counts a stage that failed on one side as a difference, and says what it could not compare', () => {
    const a = made([['x', 'trace', 1], ['p#1', 'mlir', null, 'boom'], ['q#1', 'mlir', null], ['r#1', 'mlir', 2]]);
    const b = made([['x', 'trace', 1], ['p#1', 'mlir', null, 'boom'], ['q#1', 'mlir', 3], ['r#1', 'mlir', null, 'bang']]);
    const rows = alignStages(a, b);
    expect(rows.map(r => [r.match, r.note])).toEqual([['same', ''], ['unknown', 'failed in both'],
      ['unknown', 'no text saved in A'], ['differs', 'failed in B only']]);
    const c = compareHlox(a, b);
    expect(firstDifferenceText(c)).toBe('first difference: r#1');
    const same = compareHlox(a, a);
    expect(firstDifferenceText(same)).toBe('no stage both hold differs; 2 could not be compared');
    const plain = made([['x', 'trace', 1]]);
    expect(firstDifferenceText(compareHlox(plain, plain))).toBe('no difference: every stage holds the same module in both');
    expect(firstDifferenceText(compareHlox(plain, made([['x', 'trace', 1], ['y', 'mlir', 1]]))))
      .toBe('no stage both hold differs; 1 stage is in one file only');
  });

  it('names every version but the date, and the settings as lists', () => {
    const v = compareVersions({ jax: '0.10.2', workbench: '0.1.0', date: 'today', extra: 'x' },
      { jax: '0.11.0', workbench: '0.1.0', date: 'tomorrow' });
    expect(v.map(x => [x.name, x.a, x.b, x.same])).toEqual([['workbench', '0.1.0', '0.1.0', true],
      ['jax', '0.10.2', '0.11.0', false], ['extra', 'x', '(none)', false]]);
    const many = Array.from({ length: 20 }, (_, k) => `p${String(k).padStart(2, '0')}`);
    const s = compareSettings({ pipeline: 'all', disabled: many, xla_options: [['xla_disable_hlo_passes', 'cse']],
      pattern_options: { no_nan: false } }, { pipeline: 'all', disabled: many.slice(1), pattern_options: { no_nan: true } });
    const by = new Map(s.map(x => [x.name, x]));
    expect(by.get('pipeline')!.same).toBe(true);
    expect(by.get('patterns off')).toMatchObject({ same: false, note: '1 only in A', b: expect.stringMatching(/^p01, .* and 7 more$/) });
    expect(by.get('XLA options')).toMatchObject({ a: 'xla_disable_hlo_passes=cse', b: '(none)', same: false });
    expect(by.get('pattern option no_nan')).toMatchObject({ a: 'false', b: 'true', same: false });
  });

  it('cuts the diff of modules far apart, and refuses modules too long to diff here', () => {
    const n = DIFF_LIMITS.changed * 2;
    const before = Array.from({ length: n }, (_, k) => `x${k} = op_a ${k}`).join('\n');
    const after = Array.from({ length: n }, (_, k) => `y${k} = op_b ${k}`).join('\n');
    const a = made([['m#1', 'mlir', 1]], { 1: before });
    const b = made([['m#1', 'mlir', 2]], { 2: after });
    const d = diffStages(a, 'm#1', b, 'm#1');
    expect(d.message).toBe('');
    let shown = 0;
    for (let k = 2; k < d.rows.length; k += 3) if (d.rows[k] !== 0) shown++;
    expect(shown).toBe(DIFF_LIMITS.changed);
    expect(d.note).toMatch(/cut: the first 3,000 of the 12,000 lines that differ are shown/);
    const long = 'l\n'.repeat(DIFF_LIMITS.lines + 1);
    const refused = diffStages(made([['m#1', 'mlir', 1]], { 1: long }), 'm#1', b, 'm#1');
    expect(refused.message).toMatch(/over the 100,000 this page diffs/);
    expect(refused.rows.length).toBe(0);
    expect(diffStages(a, '', b, 'm#1').message).toMatch(/^A has no MLIR stage/);
    expect(diffStages(a, 'nope', b, 'm#1').message).toMatch(/stage nope of A has no text to compare/);
  });

  it('writes each cost cell as the value, or A \u2192 B with the signed delta', () => {
    expect(costCellText({ column: 'ops', a: 43, b: 43, delta: 0 })).toBe('43');
    expect(costCellText({ column: 'ops', a: 1234, b: 1000, delta: -234 })).toBe('1,234 \u2192 1,000 (\u2212234)');
    expect(costCellText({ column: 'ops', a: 0.5, b: 1.25, delta: 0.75 })).toBe('0.5 \u2192 1.25 (+0.75)');
    expect(costCellText({ column: 'ops', a: null, b: 7, delta: null })).toBe('\u2014 \u2192 7');
    expect(costCellText({ column: 'ops', a: null, b: null, delta: null })).toBe('');
  });
});
