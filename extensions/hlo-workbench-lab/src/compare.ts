// Two saved explorations (.hlox files) side by side: what differs between them, worked out from their
// manifests and texts alone (no kernel, no DOM; compareview.ts draws it). Stages are aligned by name
// (the pass and its #k), and a stage's module is compared by the text hash its manifest stores: two
// stages whose hashes match hold the same module, byte for byte, without reading either text.
import { lineDiff } from '../../../workbench/assets/diffview.js';
import { IExplorationView, IHloxFile } from './exploration';

/** One of the two files compared. */
export interface IHloxSide {
  /** the file's path, as the contents API names it */
  path: string;
  file: IHloxFile;
  view: IExplorationView;
}

/** How a stage of one file stands against the stage of the same name in the other. */
export type StageMatch = 'same' | 'differs' | 'only-a' | 'only-b' | 'unknown';

export interface IAlignedStage {
  name: string;
  group: string;
  /** the stage's index in A's and in B's stage list; -1 where that file has none of this name */
  a: number;
  b: number;
  match: StageMatch;
  /** what more there is to say: why the match is unknown, or that a stage failed on one side */
  note: string;
}

/** One cost column of an aligned stage: both values and B minus A, each null where unknown. */
export interface ICostDelta {
  column: string;
  a: number | null;
  b: number | null;
  delta: number | null;
}

/** A version or a setting of both files, as text. */
export interface IValueDiff {
  name: string;
  a: string;
  b: string;
  same: boolean;
  /** e.g. "2 only in B" for a list */
  note: string;
}

/** The line diff of a stage of A and a stage of B, as diffview.js reads it, or why there is none. */
export interface IStagePairDiff {
  aStage: string;
  bStage: string;
  before: string;
  after: string;
  rows: Int32Array;
  /** shown instead of the diff; "" when there is one */
  message: string;
  /** how the diff was made, and what it leaves out */
  note: string;
}

export interface IComparison {
  a: IHloxSide;
  b: IHloxSide;
  stages: IAlignedStage[];
  /** the first aligned stage whose module differs, in the stage order */
  firstDifference: IAlignedStage | null;
  /** the cost columns compared: those of COST_COLUMNS either table holds a number in */
  costColumns: string[];
  cost(stage: IAlignedStage): ICostDelta[];
  versions: IValueDiff[];
  settings: IValueDiff[];
  /** the last MLIR stage of A against the last MLIR stage of B */
  final: IStagePairDiff;
  /** the diff of stage `aStage` of A and stage `bStage` of B */
  diff(aStage: string, bStage: string): IStagePairDiff;
}

/** The cost table's columns the comparison shows, with their headings: the workbench's own count of the
 * module, then XLA's, then the compiled program's scratch memory. */
export const COST_COLUMNS: readonly (readonly [string, string])[] = [
  ['ops', 'ops'], ['flops', 'flops'], ['bytes', 'bytes'], ['xla_flops', 'XLA flops'], ['xla_bytes', 'XLA bytes'],
  ['temp_bytes', 'temp memory']
];

/** Beyond these, the page would spend seconds on a diff nobody reads line by line. */
export const DIFF_LIMITS = Object.freeze({ lines: 100_000, changed: 3_000 });

/** The versions compared, in this order; `date` is left out: two saves always differ in it. */
const VERSION_KEYS = ['workbench', 'jax', 'jaxlib', 'enzyme-ad', 'python', 'platform'];
/** How many names of a list setting are written out. */
const LIST_SHOWN = 12;

interface IStageEntry {
  name: string;
  group: string;
  text: string | null;
  /** The hash of the module as normalized (workbench's module_shape): equal ones differ at most by renaming. */
  normalized: string | null;
  error: string;
}

function entries(side: IHloxSide): IStageEntry[] {
  return (side.file.manifest.stages ?? []).map((s: any) => ({
    name: String(s.name), group: String(s.group ?? ''), text: s.text ?? null,
    normalized: typeof s.normalized === 'string' ? s.normalized : null, error: s.error ? String(s.error) : ''
  }));
}

function matchOf(a: IStageEntry, b: IStageEntry): [StageMatch, string] {
  if (a.error && b.error) return ['unknown', 'failed in both'];
  if (a.error || b.error) return ['differs', `failed in ${a.error ? 'A' : 'B'} only`];
  if (a.text === null || b.text === null) {
    const which = a.text === null && b.text === null ? 'either file' : a.text === null ? 'A' : 'B';
    return ['unknown', `no text saved in ${which}`];
  }
  if (a.text === b.text) return ['same', ''];
  // files from this workbench say whether two texts differ beyond renaming, as hlo-workbench diff does;
  // older ones are compared by their texts
  if (a.normalized !== null && b.normalized !== null) {
    return a.normalized === b.normalized ? ['same', 'renamed only'] : ['differs', ''];
  }
  return ['differs', ''];
}

/** The stages of A and B aligned by name, in A's order; a stage only B has comes where B has it, after
 * the stages both hold that come before it in B. */
export function alignStages(a: IHloxSide, b: IHloxSide): IAlignedStage[] {
  const sa = entries(a);
  const sb = entries(b);
  const inB = new Map(sb.map((s, j) => [s.name, j]));
  const inA = new Set(sa.map(s => s.name));
  const out: IAlignedStage[] = [];
  let next = 0;  // B's stages before this one are listed
  const onlyB = (upTo: number) => {
    for (; next < upTo; next++) {
      if (!inA.has(sb[next].name)) {
        out.push({ name: sb[next].name, group: sb[next].group, a: -1, b: next, match: 'only-b', note: '' });
      }
    }
  };
  sa.forEach((s, i) => {
    const j = inB.get(s.name);
    if (j === undefined) {
      out.push({ name: s.name, group: s.group, a: i, b: -1, match: 'only-a', note: '' });
      return;
    }
    onlyB(j);
    next = Math.max(next, j + 1);
    const [match, note] = matchOf(s, sb[j]);
    out.push({ name: s.name, group: s.group, a: i, b: j, match, note });
  });
  onlyB(sb.length);
  return out;
}

/** The first aligned stage whose module differs, or null. */
export function firstDifference(stages: IAlignedStage[]): IAlignedStage | null {
  return stages.find(s => s.match === 'differs') ?? null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The cost table's numbers by stage name, then column. */
function costByStage(side: IHloxSide): Map<string, Map<string, number | null>> {
  const out = new Map<string, Map<string, number | null>>();
  const cost = side.view.cost;
  if (!cost) return out;
  const at = cost.columns.indexOf('stage');
  if (at < 0) return out;
  for (const row of cost.rows) {
    const values = new Map<string, number | null>();
    cost.columns.forEach((c, k) => values.set(c, num(row[k])));
    out.set(String(row[at]), values);
  }
  return out;
}

function costOf(ca: Map<string, Map<string, number | null>>, cb: Map<string, Map<string, number | null>>) {
  return (stage: IAlignedStage, columns: string[]): ICostDelta[] => columns.map(column => {
    const a = stage.a >= 0 ? ca.get(stage.name)?.get(column) ?? null : null;
    const b = stage.b >= 0 ? cb.get(stage.name)?.get(column) ?? null : null;
    return { column, a, b, delta: a !== null && b !== null ? b - a : null };
  });
}

function text(v: unknown): string {
  if (v === null || v === undefined || v === '') return '(none)';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The versions each file was saved by (`saved_by`), every one either names, but the date. */
export function compareVersions(a: any, b: any): IValueDiff[] {
  const keys = [...VERSION_KEYS.filter(k => k in (a ?? {}) || k in (b ?? {})),
    ...[...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])]
      .filter(k => !VERSION_KEYS.includes(k) && k !== 'date').sort()];
  return keys.map(name => {
    const [va, vb] = [text(a?.[name]), text(b?.[name])];
    return { name, a: va, b: vb, same: va === vb, note: '' };
  });
}

function listText(items: string[]): string {
  if (!items.length) return '(none)';
  const shown = items.slice(0, LIST_SHOWN).join(', ');
  return items.length > LIST_SHOWN ? `${shown} and ${(items.length - LIST_SHOWN).toLocaleString('en-US')} more` : shown;
}

/** A list setting (patterns, XLA options): both lists, sorted, and how many names only one holds. */
function listDiff(name: string, a: string[], b: string[]): IValueDiff {
  const [sa, sb] = [new Set(a), new Set(b)];
  const onlyA = [...sa].filter(x => !sb.has(x)).length;
  const onlyB = [...sb].filter(x => !sa.has(x)).length;
  const note = [onlyA ? `${onlyA.toLocaleString('en-US')} only in A` : '',
    onlyB ? `${onlyB.toLocaleString('en-US')} only in B` : ''].filter(Boolean).join(', ');
  return { name, a: listText([...sa].sort()), b: listText([...sb].sort()), same: !onlyA && !onlyB, note };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

function xlaPairs(v: unknown): string[] {
  return (Array.isArray(v) ? v : []).filter(Array.isArray).map((p: unknown[]) => `${p[0]}=${p[1]}`);
}

function one(name: string, a: unknown, b: unknown): IValueDiff {
  const [va, vb] = [text(a), text(b)];
  return { name, a: va, b: vb, same: va === vb, note: '' };
}

/** The settings of both explorations (`spec`) that make their modules: the pipeline and its pattern
 * switches and options, XLA's options, the device, hand edits. */
export function compareSettings(a: any, b: any): IValueDiff[] {
  const [sa, sb] = [a ?? {}, b ?? {}];
  const out = [
    one('pipeline', sa.pipeline, sb.pipeline),
    listDiff('patterns off', strings(sa.disabled), strings(sb.disabled)),
    listDiff('patterns added', strings(sa.enabled), strings(sb.enabled)),
    listDiff('XLA options', xlaPairs(sa.xla_options), xlaPairs(sb.xla_options)),
    one('device', sa.device, sb.device),
    one('inline', sa.inline, sb.inline),
    one('Shardy passes', sa.shardy_passes, sb.shardy_passes),
    one('optimize communications', sa.optimize_communications, sb.optimize_communications),
    one('source', sa.source, sb.source),
    one('hand edits', (sa.edits ?? []).length || null, (sb.edits ?? []).length || null)
  ];
  const [pa, pb] = [sa.pattern_options ?? {}, sb.pattern_options ?? {}];
  for (const k of [...new Set([...Object.keys(pa), ...Object.keys(pb)])].sort()) {
    out.push(one(`pattern option ${k}`, pa[k], pb[k]));
  }
  return out;
}

function splitLines(t: string): string[] {
  const lines = t.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The last MLIR stage of a side with a module saved: the final module the pipeline made. */
export function lastMlirStage(side: IHloxSide): string {
  const stages = entries(side).filter(s => s.group === 'mlir' && !s.error && s.text !== null);
  return stages.length ? stages[stages.length - 1].name : '';
}

/** Rows up to the `most`-th row that is not equal: [rows kept, rows that are not equal in all]. */
function keepChanges(rows: Int32Array, most: number): [Int32Array, number] {
  let changed = 0;
  let cut = rows.length;
  for (let k = 2; k < rows.length; k += 3) {
    if (rows[k] !== 0 && ++changed === most + 1) cut = k - 2;
  }
  return [cut < rows.length ? rows.slice(0, cut) : rows, changed];
}

/** Stage `aStage` of A against stage `bStage` of B: a line diff made in the page (diffview.js's lineDiff:
 * lines aligned with value names blanked), cut after DIFF_LIMITS.changed lines that are not equal. */
export function diffStages(a: IHloxSide, aStage: string, b: IHloxSide, bStage: string): IStagePairDiff {
  const out: IStagePairDiff = { aStage, bStage, before: '', after: '', rows: new Int32Array(0), message: '', note: '' };
  if (!aStage || !bStage) {
    out.message = `${!aStage ? 'A' : 'B'} has no MLIR stage with its module saved: there is no final module to compare`;
    return out;
  }
  const ta = a.view.text(aStage);
  const tb = b.view.text(bStage);
  for (const [side, name, t] of [['A', aStage, ta], ['B', bStage, tb]] as const) {
    if (t.state !== 'ok') {
      out.message = `stage ${name} of ${side} has no text to compare: ${t.note}`;
      return out;
    }
  }
  if (ta.text === tb.text) {
    out.message = `A's ${aStage} and B's ${bStage} hold the same module`;
    return out;
  }
  const before = splitLines(ta.text);
  const after = splitLines(tb.text);
  const longest = Math.max(before.length, after.length);
  if (longest > DIFF_LIMITS.lines) {
    out.message = `the modules have ${before.length.toLocaleString('en-US')} and ${after.length.toLocaleString('en-US')} ` +
      `lines, over the ${DIFF_LIMITS.lines.toLocaleString('en-US')} this page diffs: open each stage as a document, ` +
      'or diff them in Python';
    return out;
  }
  const [rows, changed] = keepChanges(lineDiff(before, after), DIFF_LIMITS.changed);
  out.before = before.join('\n');
  out.after = after.join('\n');
  out.rows = rows;
  out.note = 'line diff computed in this page (lines aligned with their value names blanked)';
  if (changed > DIFF_LIMITS.changed) {
    out.note += `; cut: the first ${DIFF_LIMITS.changed.toLocaleString('en-US')} of the ` +
      `${changed.toLocaleString('en-US')} lines that differ are shown`;
  }
  return out;
}

/** What differs between saved explorations A and B. */
export function compareHlox(a: IHloxSide, b: IHloxSide): IComparison {
  const stages = alignStages(a, b);
  const [ca, cb] = [costByStage(a), costByStage(b)];
  const cost = costOf(ca, cb);
  const costColumns = COST_COLUMNS.map(([c]) => c).filter(c => stages.some(s => {
    const [d] = cost(s, [c]);
    return d.a !== null || d.b !== null;
  }));
  return {
    a,
    b,
    stages,
    firstDifference: firstDifference(stages),
    costColumns,
    cost: (stage: IAlignedStage) => cost(stage, costColumns),
    versions: compareVersions(a.file.manifest.saved_by, b.file.manifest.saved_by),
    settings: compareSettings(a.file.manifest.spec, b.file.manifest.spec),
    final: diffStages(a, lastMlirStage(a), b, lastMlirStage(b)),
    diff: (aStage: string, bStage: string) => diffStages(a, aStage, b, bStage)
  };
}

// -- the words the comparison is shown in (compareview.ts puts them in the page) ---------------------

/** The module column of the aligned stage list. */
export const MATCH_WORDS: Readonly<Record<StageMatch, string>> = Object.freeze({
  same: 'same', differs: 'differs', 'only-a': 'only in A', 'only-b': 'only in B', unknown: 'not compared'
});

/** The headline: the first aligned stage whose module differs, named, or what else there is to say. */
export function firstDifferenceText(c: IComparison): string {
  if (c.firstDifference) return `first difference: ${c.firstDifference.name}`;
  const one = c.stages.filter(s => s.match === 'only-a' || s.match === 'only-b').length;
  const unknown = c.stages.filter(s => s.match === 'unknown').length;
  const bits = [one ? `${one} ${one === 1 ? 'stage is' : 'stages are'} in one file only` : '',
    unknown ? `${unknown} could not be compared` : ''].filter(Boolean);
  if (!bits.length) return 'no difference: every stage holds the same module in both';
  return `no stage both hold differs; ${bits.join(', ')}`;
}

function names(stages: IAlignedStage[]): string {
  const shown = stages.slice(0, 4).map(s => s.name).join(', ');
  return stages.length > 4 ? `${shown}, \u2026` : shown;
}

/** One line: how many stages each file has, how many both hold, differ, and are in one only. */
export function stageCountsText(c: IComparison): string {
  const count = (m: StageMatch) => c.stages.filter(s => s.match === m);
  const both = c.stages.filter(s => s.a >= 0 && s.b >= 0).length;
  const [onlyA, onlyB] = [count('only-a'), count('only-b')];
  const bits = [`${c.a.view.stages.length} stages in A, ${c.b.view.stages.length} in B`,
    `${both} in both, ${count('differs').length} of them differ`];
  if (onlyA.length) bits.push(`only in A: ${names(onlyA)}`);
  if (onlyB.length) bits.push(`only in B: ${names(onlyB)}`);
  return bits.join('; ');
}

/** A number as the cost table writes it: integers with thousands separators, others to 6 digits. */
export function numberText(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : String(+v.toPrecision(6));
}

/** A delta with its sign: "+266", "\u221212", "0". */
export function signed(v: number): string {
  if (v === 0) return '0';
  return (v > 0 ? '+' : '\u2212') + numberText(Math.abs(v));
}

/** One cost cell: the value when both sides agree, else "A \u2192 B (delta)"; "" when neither has one. */
export function costCellText(d: ICostDelta): string {
  if (d.a === null && d.b === null) return '';
  if (d.a !== null && d.b !== null) {
    return d.a === d.b ? numberText(d.a) : `${numberText(d.a)} \u2192 ${numberText(d.b)} (${signed(d.b - d.a)})`;
  }
  return `${d.a === null ? '\u2014' : numberText(d.a)} \u2192 ${d.b === null ? '\u2014' : numberText(d.b)}`;
}

/** The heading of each cost column. */
export function costHeading(column: string): string {
  return COST_COLUMNS.find(([c]) => c === column)?.[1] ?? column;
}
