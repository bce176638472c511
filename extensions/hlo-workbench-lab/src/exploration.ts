// What the kernel-free views show, read from the two things a kernel leaves behind:
//  - the `application/vnd.hlo-workbench.exploration+json` bundle a %%hlo output carries
//    (workbench/views/widgets/bundle.py: the stage table, the shown pair's texts, maybe a cost table);
//  - a `.hlox` file (workbench/pipeline/saved.py): a zip of manifest.json (deflated), texts.zst (one
//    zstd frame of every distinct stage text, stored) and maybe arrays.npz, decoded here with fflate and
//    fzstd, bundled into the extension.
// Both become one `IExplorationView`; view.ts draws it. Nothing here touches the DOM or a kernel.
import { unzipSync } from 'fflate';
import { decompress } from 'fzstd';

import { lineDiff } from '../../../workbench/assets/diffview.js';

export const BUNDLE_MIME = 'application/vnd.hlo-workbench.exploration+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
export const HLOX_KIND = 'hlo-workbench exploration';

/** One row of the stage list. */
export interface IStageRow {
  name: string;
  group: string;
  changed: boolean;
  /** null: not known (a bundle's stage is listed with its lines; a .hlox stage without text has 0) */
  lines: number | null;
  ms: number | null;
  error: string;
  parent: string | null;
}

export interface ICostTable {
  columns: string[];
  rows: unknown[][];
}

/** A stage's text as a view has it. */
export interface IStageText {
  state: 'ok' | 'failed' | 'missing';
  text: string;
  /** e.g. "cut: the first 1,000 of 9,000 lines are kept" or why there is no text */
  note: string;
}

/** The diff of two stages, as diffview.js reads it. */
export interface IPairDiff {
  before: string;
  after: string;
  /** Int32 triples (before line, after line, kind) */
  rows: Int32Array;
  /** shown instead of the diff (a failed stage, a missing text); "" when there is a diff */
  message: string;
  /** how the diff was made, and what was left out */
  note: string;
}

export interface IExplorationView {
  /** "bundle" (a %%hlo output) or "hlox" (a saved file) */
  source: 'bundle' | 'hlox';
  title: string;
  /** one line: pipeline, device, versions, ... */
  summary: string;
  /** an error of the whole exploration, or "" */
  error: string;
  stages: IStageRow[];
  /** the stages the pickers offer */
  pickable: string[];
  /** the pair shown first */
  first: [string, string];
  cost: ICostTable | null;
  /** what the cost table is, or why there is none */
  costNote: string;
  text(name: string): IStageText;
}

export const LINE_DIFF_NOTE =
  'a line diff computed in this page (lines aligned with SSA value names blanked); the structural diff ' +
  '(value renumbering and locations ignored, ex.diff) needs the kernel';

/** The number of lines of a text, as the workbench's Stage.lines counts them. */
export function countLines(text: string): number {
  if (!text) return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The diff of stages `a` and `b` of `view`, made in the page (lineDiff of diffview.js). */
export function diffPair(view: IExplorationView, a: string, b: string): IPairDiff {
  const ta = view.text(a);
  const tb = view.text(b);
  for (const [name, t] of [[b, tb], [a, ta]] as const) {
    if (t.state !== 'ok') {
      return { before: '', after: '', rows: new Int32Array(0), note: '',
        message: `stage ${name} has no text to compare: ${t.note}` };
    }
  }
  const before = splitLines(ta.text);
  const after = splitLines(tb.text);
  const rows = lineDiff(before, after);
  const notes = [LINE_DIFF_NOTE];
  for (const [name, t] of [[a, ta], [b, tb]] as const) {
    if (t.note) notes.push(`${name}: ${t.note}`);
  }
  return { before: before.join('\n'), after: after.join('\n'), rows, message: '', note: notes.join('; ') };
}

// -- the bundle of a %%hlo output -------------------------------------------------------------------
interface IBundleText {
  text?: string;
  lines?: number;
  kept_lines?: number;
  cut?: boolean;
  note?: string;
  state?: string;
}

/** The view of a bundle's JSON (format 1). Throws on anything that is not one. */
export function bundleView(data: any): IExplorationView {
  if (!data || typeof data !== 'object' || !Array.isArray(data.stages) || !data.shown) {
    throw new Error('not an hlo-workbench exploration bundle (no stages or shown pair)');
  }
  if (typeof data.format === 'number' && data.format > 1) {
    throw new Error(`this output was written by a newer hlo-workbench (bundle format ${data.format}); ` +
      'this extension reads format 1');
  }
  const stages: IStageRow[] = data.stages.map((r: any) => ({
    name: String(r.stage),
    group: String(r.group ?? ''),
    changed: !!r.changed,
    lines: typeof r.lines === 'number' ? r.lines : null,
    ms: typeof r.ms === 'number' ? r.ms : null,
    error: String(r.error ?? ''),
    parent: r.parent ?? null
  }));
  const texts: Record<string, IBundleText> = data.texts ?? {};
  const left = String(data.shown.left);
  const right = String(data.shown.right);
  const pickable = stages.map(s => s.name).filter(n => n in texts);
  for (const n of Object.keys(texts)) {
    if (!pickable.includes(n)) pickable.push(n);
  }
  const bits = [`pipeline ${data.pipeline ?? ''}`, String(data.device ?? '')];
  const toggles = data.toggles ?? {};
  if (toggles.patterns_disabled?.length) bits.push(`patterns off: ${toggles.patterns_disabled.join(', ')}`);
  if (toggles.patterns_enabled?.length) bits.push(`patterns added: ${toggles.patterns_enabled.join(', ')}`);
  if (toggles.xla_disabled?.length) bits.push(`XLA off: ${toggles.xla_disabled.join(', ')}`);
  if (data.complete === false) bits.push('XLA was still compiling: its stages are not listed');
  const versions = Object.entries(data.versions ?? {}).map(([k, v]) => `${k} ${v}`).join(', ');
  if (versions) bits.push(versions);
  const cost = costTable(data.cost);
  return {
    source: 'bundle',
    title: String(data.title ?? 'exploration'),
    summary: bits.filter(Boolean).join(' · '),
    error: data.error ? String(data.error.message ?? '') : '',
    stages,
    pickable,
    first: [left, right],
    cost,
    costNote: cost ? 'cost of the stages shown, as the kernel computed it' : 'no cost table in this output',
    text(name: string): IStageText {
      const t = texts[name];
      if (!t) return { state: 'missing', text: '', note: 'this output holds no text of this stage (only the pair shown)' };
      const state = t.state === 'failed' || t.state === 'missing' ? t.state : 'ok';
      return { state, text: String(t.text ?? ''), note: String(t.note ?? '') };
    }
  };
}

function costTable(cost: any): ICostTable | null {
  if (!cost || !Array.isArray(cost.columns) || !Array.isArray(cost.rows)) return null;
  return { columns: cost.columns.map(String), rows: cost.rows.filter(Array.isArray) };
}

// -- the .hlox file ----------------------------------------------------------------------------------
export interface IHloxFile {
  manifest: any;
  /** sha256 -> text */
  texts: Map<string, string>;
  /** the members of the zip */
  members: string[];
}

/** The bytes of a base64 string (the contents API's `format: "base64"`, maybe with line breaks). */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64.replace(/\s+/g, ''));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Reads a .hlox file: its manifest and every text it holds. Throws a readable Error on a bad file. */
export function readHlox(bytes: Uint8Array): IHloxFile {
  if (bytes.length < 4 || bytes[0] !== 0x50 || bytes[1] !== 0x4b) {
    throw new Error(bytes.length ? 'not a saved exploration (.hlox): it is not a zip archive' : 'the file is empty');
  }
  let files: Record<string, Uint8Array>;
  try {
    // arrays.npz is not shown: leave it packed
    files = unzipSync(bytes, { filter: f => f.name !== 'arrays.npz' });
  } catch (err) {
    throw new Error(`corrupt or truncated .hlox file: ${(err as Error).message}`);
  }
  const members = Object.keys(files);
  if (!files['manifest.json']) throw new Error('not a saved exploration (.hlox): the zip has no manifest.json');
  const decoder = new TextDecoder('utf-8');
  // Python's json writes NaN / Infinity (allow_nan): JSON.parse does not read them
  const raw = decoder.decode(files['manifest.json']).replace(/(?<=[:,[]\s*)(-?Infinity|NaN)(?=\s*[,\]}])/g, 'null');
  const manifest = JSON.parse(raw);
  if (!manifest || manifest.kind !== HLOX_KIND) {
    throw new Error('not a saved exploration (.hlox): its manifest is not an hlo-workbench one');
  }
  if (typeof manifest.format === 'number' && manifest.format > 1) {
    throw new Error(`this file was written by a newer hlo-workbench (format ${manifest.format}); this extension reads format 1`);
  }
  const texts = new Map<string, string>();
  const index: { sha256: string; offset: number; length: number }[] = manifest.texts ?? [];
  if (index.length) {
    const packed = files['texts.zst'];
    if (!packed) throw new Error('corrupt .hlox file: no texts.zst');
    const blob = decompress(packed);
    if (typeof manifest.texts_bytes === 'number' && blob.length !== manifest.texts_bytes) {
      throw new Error(`corrupt .hlox file: texts.zst holds ${blob.length} bytes, the manifest says ${manifest.texts_bytes}`);
    }
    for (const t of index) {
      if (t.offset + t.length > blob.length) throw new Error(`corrupt .hlox file: text ${t.sha256} lies past the end`);
      texts.set(t.sha256, decoder.decode(blob.subarray(t.offset, t.offset + t.length)));
    }
  }
  return { manifest, texts, members };
}

/** The view of a read .hlox file: every stage pickable. */
export function hloxView(file: IHloxFile): IExplorationView {
  const m = file.manifest;
  const byName = new Map<string, any>();
  const stages: IStageRow[] = (m.stages ?? []).map((s: any) => {
    byName.set(String(s.name), s);
    const text = s.text ? file.texts.get(s.text) : undefined;
    return {
      name: String(s.name),
      group: String(s.group ?? ''),
      changed: !!s.changed,
      lines: text === undefined ? (s.text ? null : 0) : countLines(text),
      ms: typeof s.seconds === 'number' ? Math.round(s.seconds * 1e5) / 100 : null,
      error: String(s.error ?? ''),
      parent: s.parent ?? null
    };
  });
  const spec = m.spec ?? {};
  const by = m.saved_by ?? {};
  const versions = ['workbench', 'jax', 'jaxlib', 'enzyme-ad']
    .filter(k => by[k]).map(k => `${k} ${by[k]}`).join(', ');
  const bits = [`pipeline ${spec.pipeline ?? ''}`, String(spec.device ?? ''),
    `${stages.length} stages, ${stages.filter(s => s.changed).length} changed`];
  if (spec.disabled?.length) bits.push(`patterns off: ${spec.disabled.join(', ')}`);
  if (spec.enabled?.length) bits.push(`patterns added: ${spec.enabled.join(', ')}`);
  if (versions) bits.push(`saved by ${versions}${by.date ? ' on ' + by.date : ''}`);
  const errors = [m.pipeline_error, m.xla_error].filter(Boolean)
    .map((e: any) => `${e.stage}: ${e.reason ?? ''}`);
  const first = defaultPair(stages);
  const cost = costTable(m.cost);
  return {
    source: 'hlox',
    title: String(spec.title ?? 'exploration'),
    summary: bits.filter(Boolean).join(' · '),
    error: errors.join('\n'),
    stages,
    pickable: stages.map(s => s.name),
    first,
    cost,
    costNote: cost ? 'cost of every stage, as the workbench computed it when saving' : 'no cost table in this file',
    text(name: string): IStageText {
      const s = byName.get(name);
      if (!s) return { state: 'missing', text: '', note: 'no such stage in this file' };
      if (s.error) return { state: 'failed', text: '', note: `the stage failed: ${s.error}` };
      if (!s.text) return { state: 'ok', text: '', note: '' };
      const t = file.texts.get(s.text);
      if (t === undefined) return { state: 'missing', text: '', note: 'the file does not hold this stage\'s text' };
      return { state: 'ok', text: t, note: '' };
    }
  };
}

/** The pair the panel shows first (bundle.py's default_right): a failed stage, else the first MLIR stage
 * that changed the module, else the last MLIR stage, else the last; against its parent. */
export function defaultPair(stages: IStageRow[]): [string, string] {
  if (!stages.length) return ['', ''];
  const mlir = stages.filter(s => s.group === 'mlir');
  const right = stages.find(s => s.error) ?? mlir.find(s => s.changed) ?? mlir[mlir.length - 1] ??
    stages[stages.length - 1];
  const left = right.parent && stages.some(s => s.name === right.parent) ? right.parent : stages[0].name;
  return [left, right.name];
}
