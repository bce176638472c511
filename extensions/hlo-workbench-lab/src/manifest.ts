// A .hlox manifest is checked before any view reads a field of it, against the description the Python
// side keeps (workbench/artifacts/manifest.py): every field's type and range from its JSON Schema
// (workbench/assets/hlox-manifest.schema.json, imported here, never copied), validated by Ajv; then the
// rules between fields that JSON Schema cannot say, as manifest.py's check_manifest states them.
// A problem comes back as { where, why }: `where` is the field as a path from the top, written the way
// the Python loader writes it (`stages[3].seconds`), `why` what was expected and what was found.
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';

import schema from '../../../workbench/assets/hlox-manifest.schema.json';

/** The manifest's JSON Schema (draft 2020-12), as the Python side wrote it. */
export const MANIFEST_SCHEMA = schema;

export interface IManifestProblem {
  /** the field, as a path from the top ("stages[3].seconds"; "" for the whole manifest) */
  where: string;
  /** what was expected there, and what was found */
  why: string;
}

let compiled: ValidateFunction | null = null;
let compilations = 0;

/** The schema's validator, compiled on first use and kept: one compilation per page. `strictNumbers`:
 * NaN and infinities are not JSON numbers, so a schema's "number" and "integer" refuse them, except
 * where the description allows them (see MAY_BE_NON_FINITE). `strict`: a schema Ajv would have to
 * guess at is an error here, caught by the tests, not a guess in the page. */
export function manifestValidator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, strictNumbers: true, verbose: true });
    compiled = ajv.compile(MANIFEST_SCHEMA);
    compilations++;
  }
  return compiled;
}

/** How many times the schema has been compiled in this page (tests check it is once). */
export function schemaCompilations(): number {
  return compilations;
}

// Python's json writes NaN and Infinity (exploration.ts's parseManifest reads them back as such), and
// the Python description allows them in a few fields: Num(finite=False) (a check's errors, XLA's cost
// and memory figures) and Scalar (a cost table's cells, XLA's option values). JSON Schema has no
// words for them, so these paths are validated with a non-finite number standing in as 0; a NaN
// anywhere else the schema describes is refused, as manifest.py refuses it. '*': any key or index.
const MAY_BE_NON_FINITE: readonly (readonly string[])[] = [
  ...['max_abs', 'max_rel', 'tolerance', 'lowered_abs'].map(k => ['runs', '*', 'check', 'leaves', '*', k]),
  ['xla', 'cost', '*'],
  ['xla', 'memory', '*'],
  ['xla', 'options', '*'],
  ['cost', 'rows', '*', '*']
];

/** `value` with every non-finite number at the end of one of `paths` replaced by 0; copied only along
 * the way to such a number, so a manifest without one is returned as it is. */
function finiteStandIns(value: unknown, paths: readonly (readonly string[])[]): unknown {
  if (paths.some(p => p.length === 0)) return typeof value === 'number' && !Number.isFinite(value) ? 0 : value;
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const any = paths.some(p => p[0] === '*');
  const keys = any ? Object.keys(obj) : [...new Set(paths.map(p => p[0]))].filter(k => Object.hasOwn(obj, k));
  let out: Record<string, unknown> | null = null;
  for (const key of keys) {
    const rest = paths.filter(p => p[0] === '*' || p[0] === key).map(p => p.slice(1));
    const was = obj[key];
    const now = finiteStandIns(was, rest);
    if (now !== was) {
      out ??= (Array.isArray(obj) ? [...obj] : { ...obj }) as Record<string, unknown>;
      Object.defineProperty(out, key, { value: now, enumerable: true, writable: true, configurable: true });
    }
  }
  return out ?? value;
}

const short = (s: string) => (s.length > 80 ? `${s.slice(0, 80)}\u2026` : s);

/** The Python loader's path of a field: `/stages/3/seconds` (a JSON pointer) becomes `stages[3].seconds`,
 * indices in brackets where `data` holds a list, keys after dots; `extra` is a key one level further. */
function fieldPath(pointer: string, data: unknown, extra?: string): string {
  const keys = pointer ? pointer.slice(1).split('/').map(s => s.replace(/~1/g, '/').replace(/~0/g, '~')) : [];
  if (extra !== undefined) keys.push(extra);
  let out = '';
  let at: unknown = data;
  for (const key of keys) {
    out += Array.isArray(at) ? `[${key}]` : out ? `.${short(key)}` : short(key);
    at = at !== null && typeof at === 'object' && Object.hasOwn(at, key) ? (at as Record<string, unknown>)[key] : undefined;
  }
  return out;
}

/** A value as a message shows what was found: its JSON kind, and a scalar's value. */
function found(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `string ${JSON.stringify(short(v))}`;
  return `${typeof v} ${String(v)}`;
}

const depthOf = (e: ErrorObject) =>
  (e.instancePath ? e.instancePath.split('/').length - 1 : 0) +
  (e.keyword === 'required' || e.keyword === 'additionalProperties' ? 1 : 0);

/** The first problem of a failed validation, from Ajv's errors (it stops at the first failing keyword,
 * but reports every branch of an anyOf that failed on the way). Of the branches, the one that got
 * deepest says the most: `{"reason": 1}` fails the object branch at .reason, the null branch at the
 * object itself; at the same depth a branch whose type matched (a pattern, a minimum) says more than
 * the other's type; branches that all failed on type are joined ("must be number or null"). */
function schemaProblem(errors: ErrorObject[], data: unknown): IManifestProblem {
  const branches = errors.filter(e => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  if (!branches.length) return { where: fieldPath(errors[0].instancePath, data), why: String(errors[0].message) };
  const deepest = Math.max(...branches.map(depthOf));
  const here = branches.filter(e => depthOf(e) === deepest && e.instancePath === branches.find(
    b => depthOf(b) === deepest)!.instancePath);
  const e = here.find(x => x.keyword !== 'type') ?? here[0];
  const value = e.data;
  switch (e.keyword) {
    case 'type': {
      const types = here.filter(x => x.keyword === 'type').flatMap(x => String(x.params.type).split(','));
      const nonFinite = typeof value === 'number' && !Number.isFinite(value);
      return { where: fieldPath(e.instancePath, data),
        why: `must be ${[...new Set(types)].join(' or ')}${nonFinite ? ' (NaN and infinities are not allowed here)' : ''}` +
          `, got ${found(value)}` };
    }
    case 'required':
      return { where: fieldPath(e.instancePath, data, e.params.missingProperty), why: 'missing (a required field)' };
    case 'additionalProperties': {
      const fields = Object.keys((e.parentSchema as { properties?: object }).properties ?? {});
      const owner = fieldPath(e.instancePath, data);
      return { where: fieldPath(e.instancePath, data, e.params.additionalProperty),
        why: `is not a field of ${owner || 'the manifest'} (its fields: ${fields.join(', ')})` };
    }
    case 'enum':
      return { where: fieldPath(e.instancePath, data),
        why: `must be one of ${(e.params.allowedValues as unknown[]).map(v => JSON.stringify(v)).join(', ')}, ` +
          `got ${found(value)}` };
    default:
      return { where: fieldPath(e.instancePath, data), why: `${e.message}, got ${found(value)}` };
  }
}

const quote = (s: string) => JSON.stringify(short(s));

/** The rules between fields that the schema cannot say, as manifest.py's check_manifest checks them, on
 * a manifest that passed the schema: stage names are distinct and a parent is an earlier stage (walking
 * parents ends; the views pair a stage with its parent), `early` counts stages there are, the texts'
 * index tiles the decompressed texts exactly (each byte decoded once) and names each text once, every
 * text a stage (its structural diff, or the input) names is in the index, a run is of a stage of the file (unless it is
 * marked `earlier`), and a cost table's rows have a cell per column. */
function ruleProblem(m: any): IManifestProblem | null {
  const names = new Map<string, number>();
  for (const [i, s] of m.stages.entries()) {
    if (names.has(s.name)) {
      return { where: `stages[${i}].name`, why: `${quote(s.name)} is also stages[${names.get(s.name)}]'s name` };
    }
    if (s.parent !== null && !names.has(s.parent)) {
      return { where: `stages[${i}].parent`, why: `${quote(s.parent)} is not an earlier stage` };
    }
    names.set(s.name, i);
  }
  if (m.early > m.stages.length) {
    return { where: 'early', why: `${m.early} stages, more than the ${m.stages.length} there are` };
  }
  let at = 0;
  const hashes = new Set<string>();
  for (const [i, t] of m.texts.entries()) {
    if (t.offset !== at) {
      return { where: `texts[${i}].offset`,
        why: i ? `expected ${at} (where texts[${i - 1}] ends), got ${t.offset}` : `expected 0, got ${t.offset}` };
    }
    if (hashes.has(t.sha256)) return { where: `texts[${i}].sha256`, why: 'is also an earlier text\'s' };
    hashes.add(t.sha256);
    at += t.length;
  }
  if (at !== m.texts_bytes) {
    return { where: 'texts_bytes', why: `the texts' index covers ${at} bytes, not ${m.texts_bytes}` };
  }
  for (const [i, s] of m.stages.entries()) {
    const named: [string, unknown][] = [['text', s.text], ['located', s.located]];
    if (s.diff !== undefined) named.push(['diff.before', s.diff.before], ['diff.after', s.diff.after]);
    for (const [key, sha] of named) {
      if (sha !== undefined && sha !== null && !hashes.has(sha as string)) {
        return { where: `stages[${i}].${key}`, why: 'names no text in the texts\' index' };
      }
    }
  }
  if (m.input !== undefined && m.input !== null && !hashes.has(m.input)) {
    return { where: 'input', why: 'names no text in the texts\' index' };
  }
  for (const [k, r] of m.runs.entries()) {
    // a run made on an exploration this one was made from (by a toggle) may name a stage that is gone
    if (!names.has(r.stage) && !r.earlier) {
      return { where: `runs[${k}].stage`, why: `${quote(r.stage)} is not a stage of the file` };
    }
  }
  for (const [r, row] of (m.cost?.rows ?? []).entries()) {
    if (row.length !== m.cost.columns.length) {
      return { where: `cost.rows[${r}]`, why: `expected ${m.cost.columns.length} cells, got ${row.length}` };
    }
  }
  return null;
}

/** The first thing wrong with `manifest` (its JSON, parsed), or null when the views may read it: the
 * schema first, then the rules between fields. */
export function manifestProblem(manifest: unknown): IManifestProblem | null {
  const validate = manifestValidator();
  const checked = finiteStandIns(manifest, MAY_BE_NON_FINITE);
  if (!validate(checked)) return schemaProblem(validate.errors ?? [], checked);
  return ruleProblem(manifest);
}
