// The kernel-free views' data: a real .hlox file (test/make_view_fixtures.py saves the attention example)
// decoded as the .hlox viewer decodes it, against what Python read back from the same file; and a real
// %%hlo bundle mapped to the view.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { bundleView, countLines, diffPair, fromBase64, hloxView, readHlox, xlaOptionBits } from '../src/exploration';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const hloxBytes = () => new Uint8Array(readFileSync(join(FIXTURES, 'attention.hlox')));
const expected = JSON.parse(readFileSync(join(FIXTURES, 'attention.expect.json'), 'utf8'));
const bundle = JSON.parse(readFileSync(join(FIXTURES, 'attention.bundle.json'), 'utf8'));
const NAME = /%([A-Za-z_\-]*)[\w.$#:\-]*/g;
const template = (line: string) => line.replace(NAME, '%$1').trim();

/** The template of every line the diff `d` shows as deleted. */
function deletedLines(d: { before: string; rows: Int32Array }): string[] {
  const before = d.before.split('\n');
  const out: string[] = [];
  for (let k = 0; k < d.rows.length; k += 3) if (d.rows[k + 2] === 2) out.push(template(before[d.rows[k]]));
  return out;
}

describe('the .hlox file', () => {
  const file = readHlox(hloxBytes());

  it('holds the manifest and every text, each matching its SHA-256', () => {
    expect(file.manifest.kind).toBe('hlo-workbench exploration');
    expect(file.members).toContain('texts.zst');
    expect(file.texts.size).toBe(file.manifest.texts.length);
    for (const [sha, text] of file.texts) {
      expect(createHash('sha256').update(text, 'utf8').digest('hex')).toBe(sha);
    }
  });

  it('says in its header the XLA passes the exploration switched off and its other XLA options', () => {
    expect(hloxView(file).summary).not.toMatch(/XLA off|XLA options/);  // saved with XLA's defaults
    const spec = { ...file.manifest.spec, xla_options: [['xla_disable_hlo_passes', 'algsimp,cse'],
      ['xla_cpu_enable_fast_math', 'true']] };
    const summary = hloxView({ ...file, manifest: { ...file.manifest, spec } }).summary;
    expect(summary).toContain('XLA off: algsimp, cse');
    expect(summary).toContain('XLA options: xla_cpu_enable_fast_math=true');
    expect(xlaOptionBits(undefined)).toEqual([]);
    expect(xlaOptionBits([['xla_disable_hlo_passes', ''], 'junk', [1]])).toEqual([]);
  });

  it('lists the stages Python reads back, with their groups, lines and texts', () => {
    const view = hloxView(file);
    expect(view.stages.map(s => s.name)).toEqual(expected.stages.map((s: any) => s.name));
    expect(view.pickable).toEqual(view.stages.map(s => s.name));
    for (const [k, s] of expected.stages.entries()) {
      const row = view.stages[k];
      expect([row.group, row.changed, row.error, row.parent]).toEqual([s.group, s.changed, s.error, s.parent]);
      expect(row.lines).toBe(s.lines);
      const t = view.text(s.name);
      if (s.sha256) expect(createHash('sha256').update(t.text, 'utf8').digest('hex')).toBe(s.sha256);
      else expect(t.text).toBe('');
    }
    expect(view.stages.length).toBeGreaterThan(40);
    expect(view.stages.some(s => s.group === 'xla')).toBe(true);
  });

  it('diffs two stages the file carries no diff of in the page, deleting what ex.diff deletes', () => {
    // the file carries each stage's diff against its parent (carried.test.ts): the page diffs the rest
    const view = hloxView({ ...file, manifest: { ...file.manifest,
      stages: file.manifest.stages.map(({ diff, ...s }: any) => s) } });
    const [a, b] = expected.pair;
    const d = diffPair(view, a, b);
    expect(d.message).toBe('');
    expect(d.kind).toBe('line');
    expect(d.note).toMatch(/line diff computed in this page/);
    expect(d.note).toMatch(/not the panel's structural diff \(ex\.diff\): this file was saved without it/);
    const ours = new Set(deletedLines(d));
    const python: string[] = expected.deleted.map((l: string) => template(l.slice(1)));
    expect(python.length).toBeGreaterThan(5);
    const both = python.filter(l => ours.has(l));
    // cse merges repeated ops: many lines it removes are removed in both diffs (the structural diff
    // aligns ops by structure, the line diff by text, so they need not agree on every line)
    expect(both.length).toBeGreaterThan(python.length / 4);
    // every row of the diff covers each line of both sides once, in order
    const seen = [new Set<number>(), new Set<number>()];
    for (let k = 0; k < d.rows.length; k += 3) {
      if (d.rows[k] >= 0) seen[0].add(d.rows[k]);
      if (d.rows[k + 1] >= 0) seen[1].add(d.rows[k + 1]);
    }
    expect(seen[0].size).toBe(d.before.split('\n').length);
    expect(seen[1].size).toBe(d.after.split('\n').length);
  });

  it('reads the cost table the file holds, or says there is none', () => {
    const view = hloxView(file);
    if (file.manifest.cost) {
      expect(view.cost!.columns.length).toBeGreaterThan(1);
      expect(view.cost!.rows.length).toBe(file.manifest.cost.rows.length);
    } else {
      expect(view.cost).toBeNull();
      expect(view.costNote).toBe('no cost table in this file');
    }
  });

  it('says what is wrong with a file that is not one', () => {
    expect(() => readHlox(new Uint8Array(0))).toThrow(/empty/);
    expect(() => readHlox(new TextEncoder().encode('hello world'))).toThrow(/not a zip/);
    const cut = hloxBytes().slice(0, 5000);
    expect(() => readHlox(cut)).toThrow(/corrupt or truncated|no manifest/);
  });

  it('decodes the base64 the contents API sends', () => {
    const bytes = hloxBytes();
    const b64 = Buffer.from(bytes).toString('base64').replace(/(.{76})/g, '$1\n');
    expect(fromBase64(b64)).toEqual(bytes);
  });
});

describe('the %%hlo bundle', () => {
  const view = bundleView(bundle);

  it('maps the stage table, the shown pair and its texts', () => {
    expect(view.source).toBe('bundle');
    expect(view.stages.map(s => s.name)).toEqual(bundle.stages.map((r: any) => r.stage));
    expect(view.first).toEqual([bundle.shown.left, bundle.shown.right]);
    expect(view.pickable).toEqual([bundle.shown.left, bundle.shown.right]);
    const row = view.stages.find(s => s.name === 'cse#1')!;
    const src = bundle.stages.find((r: any) => r.stage === 'cse#1');
    expect([row.group, row.changed, row.lines, row.ms, row.parent]).toEqual([src.group, src.changed, src.lines, src.ms, src.parent]);
    expect(view.text('cse#1').text).toBe(bundle.texts['cse#1'].text);
    expect(view.text('jaxpr').state).toBe('missing');
    expect(view.summary).toContain(bundle.pipeline);
  });

  it('diffs the shown pair as the .hlox viewer does', () => {
    const d = diffPair(view, bundle.shown.left, bundle.shown.right);
    const inFile = diffPair(hloxView(readHlox(hloxBytes())), bundle.shown.left, bundle.shown.right);
    expect([d.kind, inFile.kind]).toEqual(['structural', 'structural']);  // both carry the panel's diff
    expect([d.before, d.after, d.rows]).toEqual([inFile.before, inFile.after, inFile.rows]);
    const python: string[] = expected.deleted.map((l: string) => template(l.slice(1)));
    const ours = new Set(deletedLines(d));
    expect(python.filter(l => ours.has(l)).length).toBeGreaterThan(python.length / 4);
    expect(countLines(bundle.texts['cse#1'].text)).toBe(bundle.texts['cse#1'].kept_lines);
  });

  it('shows the cost table it carries, and says when there is none', () => {
    expect(view.cost!.columns).toEqual(bundle.cost.columns);
    expect(view.cost!.rows.map(r => r[0])).toEqual(['canonicalize#1', 'cse#1']);
    const none = bundleView({ ...bundle, cost: undefined });
    expect(none.cost).toBeNull();
    expect(none.costNote).toBe('no cost table in this output');
    // a stage over the kernel's line limit is left out of the rows, and the bundle's cost_note says which
    const note = 'cse#1: over 20,000 lines, a saved notebook keeps no cost rows';
    expect(bundleView({ ...bundle, cost: null, cost_note: note }).costNote).toBe(note);
    expect(bundleView({ ...bundle, cost_note: note }).costNote)
      .toBe(`cost of the stages shown, as the kernel computed it; ${note}`);
    expect(bundleView({ ...bundle, cost: null, cost_note: 7 }).costNote).toBe('no cost table in this output');
  });

  it('says why a failed or cut stage has no (whole) text', () => {
    const failed = bundleView({ ...bundle, texts: { ...bundle.texts,
      'cse#1': { state: 'failed', text: '', lines: 0, kept_lines: 0, cut: false, note: 'the stage failed: boom' } } });
    const d = diffPair(failed, 'canonicalize#1', 'cse#1');
    expect(d.message).toMatch(/cse#1 .*the stage failed: boom/);
    const cut = bundleView({ ...bundle, diff: undefined, texts: { ...bundle.texts,
      'cse#1': { ...bundle.texts['cse#1'], cut: true, note: 'cut: the first 10 of 200 lines are kept' } } });
    expect(diffPair(cut, 'canonicalize#1', 'cse#1').note).toMatch(/cse#1: cut: the first 10/);
    expect(() => bundleView({ format: 2, stages: [], shown: {} })).toThrow(/newer hlo-workbench/);
    expect(() => bundleView({})).toThrow(/not an hlo-workbench exploration bundle/);
  });
});
