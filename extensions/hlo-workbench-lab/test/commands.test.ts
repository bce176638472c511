// What the commands send to the kernel: the Python that "Explore this cell" and "Save exploration…"
// run, read back by the project's own Python (ast), so quoting can never change the cell's text.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { cellMagic, exploreCode, hloxName, isMlirCell, saveCode } from '../src/cellcode';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PYTHON = [join(ROOT, '.venv', 'bin', 'python'), 'python3'].find(p => p === 'python3' || existsSync(p))!;

/** The calls of `code` as Python parses them: [function name, [its literal arguments]]. */
function calls(code: string): [string, unknown[]][] {
  const script = [
    'import ast, json, sys',
    'tree = ast.parse(sys.stdin.read())',
    'out = []',
    'for node in ast.walk(tree):',
    '    if isinstance(node, ast.Call):',
    '        f = node.func',
    '        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "?")',
    '        out.append([name, [a.value if isinstance(a, ast.Constant) else None for a in node.args]])',
    'print(json.dumps(out))'
  ].join('\n');
  return JSON.parse(execFileSync(PYTHON, ['-c', script], { input: code, encoding: 'utf8' }));
}

const CELL = 'def f(x):\n    return jnp.dot(x.T, x)  # "quotes" \'and\' \\backslash \u00e9\n\nf(jnp.ones((4, 8)))\n';

describe('Explore this cell', () => {
  it('runs a plain cell under %%hlo, its text exactly as written', () => {
    const code = exploreCode(CELL);
    const magic = calls(code).find(c => c[0] === 'run_cell_magic')!;
    expect(magic[1]).toEqual(['hlo', '', CELL]);
    expect(calls(code).some(c => c[0] === 'run_line_magic' && c[1][1] === 'workbench')).toBe(true);
  });

  it('keeps the options of a %%hlo or %%mlir cell', () => {
    const hlo = exploreCode('%%hlo -p none -o ex\n' + CELL);
    expect(calls(hlo).find(c => c[0] === 'run_cell_magic')![1]).toEqual(['hlo', '-p none -o ex', CELL]);
    const text =
      'module {\n  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n    return %arg0 : tensor<4xf32>\n  }\n}\n';
    const mlir = exploreCode('%%mlir -p canonicalize\n' + text);
    expect(calls(mlir).find(c => c[0] === 'run_cell_magic')![1]).toEqual(['mlir', '-p canonicalize', text]);
  });

  it('refuses an empty cell and another cell magic, saying why', () => {
    expect(() => exploreCode('  \n')).toThrow(/the cell is empty/);
    expect(() => exploreCode('%%time\nf(x)\n')).toThrow(/starts with %%time/);
  });
});

describe('reading cells', () => {
  it('knows a %%mlir cell by its first line', () => {
    expect(isMlirCell('%%mlir\nmodule {}')).toBe(true);
    expect(isMlirCell('%%mlir -p canonicalize -o m\nmodule {}')).toBe(true);
    expect(isMlirCell('%%mlirx\n')).toBe(false);
    expect(isMlirCell('%%hlo\nf(x)')).toBe(false);
    expect(isMlirCell('x = 1\n%%mlir')).toBe(false);
    expect(cellMagic('%%hlo -o ex  \nf(x)')).toEqual({ name: 'hlo', line: '-o ex' });
  });
});

describe('Save exploration', () => {
  it('saves the named Exploration to the path given', () => {
    const c = calls(saveCode('tb', 'my "run".hlox'));
    expect(c.find(x => x[0] === 'save')![1]).toEqual(['my "run".hlox']);
    expect(c.find(x => x[0] === 'get')![1]).toEqual(['tb']);
    expect(() => saveCode('a; import os', 'x.hlox')).toThrow(/not a Python name/);
  });

  it('names the file after the notebook and the exploration', () => {
    expect(hloxName('course/01 intro.ipynb', '%%hlo cell 3')).toBe('01 intro-hlo_cell_3.hlox');
    expect(hloxName('t.ipynb', 'tb')).toBe('t-tb.hlox');
  });
});
