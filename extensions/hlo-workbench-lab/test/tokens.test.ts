// The shared tokenizer (workbench/assets/diffview.js) and the CodeMirror language built on it, on real
// program texts from the workbench (test/fixtures/, written by test/make_fixtures.py): StableHLO as
// JAX lowers it (with locations), the last Enzyme-JaX pattern stage, and XLA's optimized HLO.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { highlightTree, tagHighlighter, tags as t } from '@lezer/highlight';
import { describe, expect, it } from 'vitest';

import { TOKEN_CLASSES, tokenize } from '../../../workbench/assets/diffview.js';
import { cssClass, mlirLanguage, tokenClasses } from '../src/components/language';

const fixture = (name: string): string => readFileSync(join(__dirname, 'fixtures', name), 'utf8');
const STABLEHLO = fixture('attention.stablehlo.mlir');
const ENZYME = fixture('attention.enzyme.mlir');
const HLO = fixture('attention.xla-optimized.hlo');
const ALL: Record<string, string> = { STABLEHLO, ENZYME, HLO };

/** The classed tokens of a line, as "class:text". */
const classed = (line: string): string[] =>
  tokenize(line)
    .filter(([, cls]) => cls)
    .map(([text, cls]) => `${cls}:${text}`);

/** The first line of `text` that matches `re`. */
function lineOf(text: string, re: RegExp): string {
  const line = text.split('\n').find(l => re.test(l));
  if (line === undefined) throw new Error(`no line matches ${re}`);
  return line;
}

describe('the tokenizer on real texts', () => {
  it('covers every line exactly and uses only the known classes', () => {
    for (const [name, text] of Object.entries(ALL)) {
      for (const line of text.split('\n')) {
        const tokens = tokenize(line);
        expect(tokens.map(([s]) => s).join(''), name).toBe(line);
        for (const [, cls] of tokens) if (cls) expect(TOKEN_CLASSES, name).toContain(cls);
      }
    }
  });

  it('StableHLO: module, symbols, attributes, SSA values, ops, types and locations', () => {
    const module = classed(lineOf(STABLEHLO, /^module /));
    expect(module).toEqual([
      'kw:module',
      'sym:@jit_fn',
      'kw:attributes',
      'attr:mhlo.num_partitions',
      'num:1',
      'type:i32',
      'attr:mhlo.num_replicas',
      'num:1',
      'type:i32'
    ]);

    const main = classed(lineOf(STABLEHLO, /func\.func public @main/));
    expect(main.slice(0, 4)).toEqual(['op:func.func', 'sym:@main', 'ssa:%arg0', 'type:tensor<64xf32>']);

    const dot = classed(lineOf(STABLEHLO, /= stablehlo\.dot_general .*loc\(#loc\d+\)$/));
    expect(dot[0]).toMatch(/^ssa:%\d+$/);
    expect(dot[1]).toBe('op:stablehlo.dot_general');
    expect(dot).toContain('attr:contracting_dims');
    expect(dot.some(c => /^type:tensor<[\dx]+xf32>$/.test(c))).toBe(true);
    expect(dot.slice(-2)).toEqual(['loc:loc', expect.stringMatching(/^loc:#loc\d+$/)]);

    const constant = classed(lineOf(STABLEHLO, /stablehlo\.constant dense</));
    expect(constant.slice(0, 3)).toEqual([expect.stringMatching(/^ssa:%cst/), 'op:stablehlo.constant', 'kw:dense']);

    // the location table: an alias, `loc`, a string, a nested alias
    const alias = classed(lineOf(STABLEHLO, /^#loc\d+ = loc\(".*"\(#loc\d+\)\)$/));
    expect(alias).toEqual([
      expect.stringMatching(/^loc:#loc\d+$/),
      'loc:loc',
      expect.stringMatching(/^str:".*"$/),
      expect.stringMatching(/^loc:#loc\d+$/)
    ]);
    expect(classed('#loc1 = loc("p[\'ln1_b\']")')).toEqual(['loc:#loc1', 'loc:loc', 'str:"p[\'ln1_b\']"']);
  });

  it('StableHLO: a commented-out line is one comment; a string keeps its //', () => {
    const line = lineOf(STABLEHLO, /stablehlo\.dot_general/);
    expect(classed('// ' + line.trim())).toEqual(['com:// ' + line.trim()]);
    expect(classed(line + ' // was: stablehlo.transpose').at(-1)).toBe('com:// was: stablehlo.transpose');
    expect(classed('#loc = loc("http://x.py":3:4)')).toEqual([
      'loc:#loc',
      'loc:loc',
      'str:"http://x.py"',
      'num:3',
      'num:4'
    ]);
  });

  it('Enzyme-JaX stage: every op of every line is an op token', () => {
    let ops = 0;
    for (const line of ENZYME.split('\n')) {
      const m = /^\s*(?:%[\w#:]+(?:, %[\w#]+)* = )?([a-z_]+\.[a-z_.]+)/.exec(line);
      if (!m) continue;
      ops++;
      expect(classed(line), line).toContain(`op:${m[1]}`);
    }
    expect(ops).toBeGreaterThan(50);
    expect(ENZYME).toContain('stablehlo.dot_general');
    const dot = classed(lineOf(ENZYME, /stablehlo\.dot_general/));
    expect(dot.filter(c => c.startsWith('ssa:')).length).toBeGreaterThanOrEqual(3);
    expect(dot.filter(c => c.startsWith('type:tensor<')).length).toBeGreaterThanOrEqual(3);
  });

  it('XLA HLO: header, ENTRY, ROOT, instructions, shapes, attributes, metadata and block comments', () => {
    const header = classed(lineOf(HLO, /^HloModule /));
    expect(header.slice(0, 1)).toEqual(['kw:HloModule']);
    expect(header).toContain('attr:entry_computation_layout');
    expect(header).toContain('com:/*index=5*/');
    expect(header).toContain('type:f32[64,128]{1,0}');

    expect(classed(lineOf(HLO, /^ENTRY /)).slice(0, 2)).toEqual(['kw:ENTRY', expect.stringMatching(/^ssa:%/)]);

    const root = classed(lineOf(HLO, /^\s+ROOT %dot\.\d+ = f32\[64,64\]\{1,0\} dot\(/));
    expect(root.slice(0, 4)).toEqual([
      'kw:ROOT',
      expect.stringMatching(/^ssa:%dot\.\d+$/),
      'type:f32[64,64]{1,0}',
      'op:dot'
    ]);
    for (const a of ['lhs_contracting_dims', 'rhs_contracting_dims', 'metadata', 'op_name']) {
      expect(root).toContain(`attr:${a}`);
    }
    expect(root.some(c => /^str:"jit\(call\)\//.test(c))).toBe(true);
    expect(root.filter(c => c.startsWith('ssa:%param_')).length).toBe(2);
  });
});

/** The (from, to, classes) spans a highlighter gives the CodeMirror parse of `text`. */
function highlighted(text: string, highlighter: Parameters<typeof highlightTree>[1]): Map<string, string> {
  const tree = mlirLanguage.parser.parse(text);
  const out = new Map<string, string>();
  highlightTree(tree, highlighter, (from, to, classes) => {
    out.set(`${from}-${to}`, classes);
  });
  return out;
}

describe('the CodeMirror language', () => {
  it('gives each token the class the diff view gives it (h-op, h-ssa, ...), on every fixture', () => {
    for (const [name, text] of Object.entries(ALL)) {
      const expected = new Map<string, string>();
      let pos = 0;
      for (const line of text.split('\n')) {
        for (const [s, cls] of tokenize(line)) {
          if (cls) expected.set(`${pos}-${pos + s.length}`, cssClass(cls));
          pos += s.length;
        }
        pos += 1; // the newline
      }
      expect(expected.size, name).toBeGreaterThan(1000);
      expect(highlighted(text, tokenClasses), name).toEqual(expected);
    }
  });

  it('also tags tokens with the standard tags, which JupyterLab themes colour', () => {
    const text = lineOf(STABLEHLO, /= stablehlo\.dot_general .*loc\(#loc\d+\)$/);
    const standard = tagHighlighter([
      { tag: t.keyword, class: 'keyword' },
      { tag: t.special(t.variableName), class: 'variable-2' },
      { tag: t.standard(t.typeName), class: 'builtin' },
      { tag: t.attributeName, class: 'attribute' },
      { tag: t.annotation, class: 'annotation' }
    ]);
    const got = highlighted(text, standard);
    const at = (s: string): string | undefined => {
      const from = text.indexOf(s);
      return got.get(`${from}-${from + s.length}`);
    };
    expect(at('stablehlo.dot_general')).toBe('keyword');
    expect(at('contracting_dims')).toBe('attribute');
    expect(at(text.match(/tensor<[^>]+>/)![0])).toBe('builtin');
    expect(at(text.match(/%\d+/)![0])).toBe('variable-2');
    expect(at(text.match(/#loc\d+/)![0])).toBe('annotation');
  });
});
