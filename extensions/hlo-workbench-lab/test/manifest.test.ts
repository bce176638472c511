// The manifest check (src/manifest.ts) on real files the workbench saved (test/make_view_fixtures.py,
// test/make_check_fixture.py): they pass, NaN and Infinity included where Python writes them; each
// change in fixtures/wrong-manifests.json is refused at the field the Python loader refuses it at (or
// accepted where it accepts it); and the schema checked against is the file the Python side writes.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';

import schemaFile from '../../../workbench/assets/hlox-manifest.schema.json';
import { HloxError, ManifestError, hloxView, readHlox } from '../src/exploration';
import { MANIFEST_SCHEMA, manifestProblem, manifestValidator, schemaCompilations } from '../src/manifest';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURES = join(HERE, 'fixtures');
const SCHEMA_PATH = join(HERE, '../../../workbench/assets/hlox-manifest.schema.json');
const bytesOf = (name: string) => new Uint8Array(readFileSync(join(FIXTURES, name)));

/** JSON as Python's json.dumps writes it: NaN and infinities bare. */
function pythonJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? `\u0000${v}` : v))
    .replace(/"\\u0000(NaN|Infinity|-Infinity)"/g, '$1');
}

/** `file` (a real .hlox) with its manifest replaced by `manifest`, written as Python writes JSON. */
function withManifest(file: Uint8Array, manifest: unknown): Uint8Array {
  const members = unzipSync(file);
  return zipSync({
    'manifest.json': [new TextEncoder().encode(pythonJson(manifest)), { level: 6 }],
    'texts.zst': [members['texts.zst'], { level: 0 }]
  });
}

/** readHlox's refusal of `bytes`: it must throw a ManifestError. */
function refusal(bytes: Uint8Array): ManifestError {
  try {
    readHlox(bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(ManifestError);
    return err as ManifestError;
  }
  throw new Error('the file was read, not refused');
}

interface ICase {
  what: string;
  path: (string | number)[];
  delete: boolean;
  value?: unknown;
  python: { where: string; why: string } | null;
}

const fromFixture = (v: any): unknown =>
  v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && 'nonfinite' in v
    ? Number(v.nonfinite) : v;

/** `manifest` with `c`'s change made, on a copy. */
function changed(manifest: unknown, c: ICase): any {
  const out: any = structuredClone(manifest);
  let at = out;
  for (const key of c.path.slice(0, -1)) at = at[key];
  const last = c.path[c.path.length - 1];
  if (c.delete) delete at[last];
  else at[last] = fromFixture(c.value);
  return out;
}

describe('the schema the extension checks against', () => {
  it('is workbench/assets/hlox-manifest.schema.json, imported, not a copy', () => {
    expect(MANIFEST_SCHEMA).toBe(schemaFile);  // the same module: the file itself
    expect(MANIFEST_SCHEMA).toEqual(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')));
    expect(MANIFEST_SCHEMA.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    const src = join(HERE, '../src');
    expect(readdirSync(src).filter(f => f.endsWith('.json'))).toEqual([]);
    expect(readFileSync(join(src, 'manifest.ts'), 'utf8'))
      .toContain('import schema from \'../../../workbench/assets/hlox-manifest.schema.json\';');
  });

  it('is compiled once, however many files are read', () => {
    for (const name of ['attention.hlox', 'checked.hlox', 'attention.hlox']) readHlox(bytesOf(name));
    expect(manifestValidator()).toBe(manifestValidator());
    expect(schemaCompilations()).toBe(1);
  });
});

describe('a real file', () => {
  it('passes: the attention example as saved', () => {
    const file = readHlox(bytesOf('attention.hlox'));
    expect(manifestProblem(file.manifest)).toBeNull();
    expect(file.manifest.stages.length).toBeGreaterThan(20);
  });

  it('with a run whose check holds Infinity passes, the Infinity read as a number', () => {
    const text = new TextDecoder().decode(unzipSync(bytesOf('checked.hlox'))['manifest.json']);
    expect(/"max_abs": ?Infinity/.test(text)).toBe(true);  // as Python's json wrote it
    const file = readHlox(bytesOf('checked.hlox'));
    const [passed, failed] = file.manifest.runs;
    expect(passed.check.leaves[0].passed).toBe(true);
    expect(Number.isFinite(passed.check.leaves[0].max_abs)).toBe(true);
    expect(failed.check.leaves[0]).toMatchObject({ passed: false, max_abs: Infinity, max_rel: Infinity });
    expect(hloxView(file).stages.length).toBe(file.manifest.stages.length);
  });

  it('with NaN written where Python writes it passes; NaN where it may not be is refused', () => {
    const real = readHlox(bytesOf('checked.hlox')).manifest;
    const nan = structuredClone(real);
    nan.runs[0].check.leaves[0].max_rel = NaN;
    nan.xla.cost.flops = NaN;
    nan.cost.rows[0][3] = -Infinity;
    const back = readHlox(withManifest(bytesOf('checked.hlox'), nan)).manifest;
    expect(back.runs[0].check.leaves[0].max_rel).toBeNaN();
    expect(back.xla.cost.flops).toBeNaN();
    expect(back.cost.rows[0][3]).toBe(-Infinity);
    nan.stages[3].seconds = NaN;
    const e = refusal(withManifest(bytesOf('checked.hlox'), nan));
    expect(e.where).toBe('stages[3].seconds');
    expect(e.message).toBe('corrupt manifest.json: stages[3].seconds: must be number or null (NaN and infinities are ' +
      'not allowed here), got number NaN');
  });
});

describe('a wrong manifest', () => {
  const cases: ICase[] = JSON.parse(readFileSync(join(FIXTURES, 'wrong-manifests.json'), 'utf8'));
  const real = readHlox(bytesOf('checked.hlox')).manifest;

  it('is refused at the field the Python loader refuses, or accepted where it accepts (each change)', () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
    const refused = cases.filter(c => c.python);
    expect(refused.length).toBeGreaterThanOrEqual(20);
    for (const c of cases) {
      const problem = manifestProblem(changed(real, c));
      expect({ what: c.what, where: problem?.where ?? null }).toEqual({ what: c.what, where: c.python?.where ?? null });
    }
  });

  it('is refused by readHlox with a ManifestError naming the field, before any view reads it', () => {
    for (const c of cases.filter(x => x.python)) {
      const e = refusal(withManifest(bytesOf('checked.hlox'), changed(real, c)));
      expect(e).toBeInstanceOf(HloxError);
      expect(e.where).toBe(c.python!.where);
      expect(e.message.startsWith(`corrupt manifest.json: ${c.python!.where}: `)).toBe(true);
    }
  });

  it('says what was expected and what was found', () => {
    const why = (c: string) => manifestProblem(changed(real, cases.find(x => x.what === c)!));
    expect(why('a string for a number')).toEqual({ where: 'stages[3].seconds', why: 'must be number or null, got string "fast"' });
    expect(why('a negative duration')).toEqual({ where: 'stages[3].seconds', why: 'must be >= 0, got number -1' });
    expect(why('an infinite run time')!.why).toBe('must be number (NaN and infinities are not allowed here), got number Infinity');
    expect(why('a negative dimension')!.why).toBe('must be >= 0, got number -2');
    expect(why('a fraction for the format')!.why).toBe('must be integer, got number 1.5');
    expect(why('an empty device')!.why).toBe('must NOT have fewer than 1 characters, got string ""');
    expect(why('a group the workbench does not have')!.why)
      .toBe('must be one of "trace", "mlir", "xla", "backend", got string "hlo"');
    expect(why('a text that is no SHA-256')!.why).toMatch(/^must match pattern "\^\(\?:\[0-9a-f\]\{64\}\)\$", got string "xyz"$/);
    expect(why('a number for a stage error\'s stage')).toEqual({ where: 'pipeline_error.stage', why: 'must be string, got number 1' });
    expect(why('a number where a stage error is')!.why).toBe('must be object or null, got number 7');
    expect(why('a stage without its group')).toEqual({ where: 'stages[2].group', why: 'missing (a required field)' });
    expect(why('an unknown pattern option')!.why).toMatch(/^is not a field of spec\.pattern_options \(its fields: no_nan, all_finite, /);
    expect(why('a stage named as an earlier one')!.why).toBe('"inline#1" is also stages[2]\'s name');
    expect(why('a parent that comes later')!.why).toBe('"cse#1" is not an earlier stage');
    expect(why('a gap in the texts\' index')!.why).toMatch(/^expected \d+ \(where texts\[0\] ends\), got \d+$/);
  });

  it('that is no object at all, or holds a key named __proto__, is refused by field', () => {
    expect(manifestProblem([])).toEqual({ where: '', why: 'must be object, got a list of 0' });
    const proto = structuredClone(real);
    Object.defineProperty(proto.spec.pattern_options, '__proto__', { value: 1, enumerable: true });
    expect(pythonJson(proto).includes('"__proto__":1}')).toBe(true);  // written as a key, as a hostile file would
    expect(refusal(withManifest(bytesOf('checked.hlox'), proto)).where).toBe('spec.pattern_options.__proto__');
  });
});
