// What the kernel-free views show, read from the two things a kernel leaves behind:
//  - the `application/vnd.hlo-workbench.exploration+json` bundle a %%hlo output carries
//    (workbench/views/widgets/bundle.py: the stage table, the shown pair's texts, maybe a cost table);
//  - a `.hlox` file (workbench/artifacts/saved.py): a zip of manifest.json (deflated), texts.zst (one
//    zstd frame of every distinct stage text, stored) and maybe arrays.npz (never read here), decoded
//    within limits with fflate's and fzstd's streaming decoders, bundled into the extension.
// Both become one `IExplorationView`; view.ts draws it. Nothing here touches the DOM or a kernel. Both may
// carry the workbench's structural diff of a pair (carried.ts): the diff shown for it is then the panel's.
import { Inflate } from 'fflate';
import { Decompress } from 'fzstd';

import { lineDiff } from '../../../workbench/assets/diffview.js';
import { ICarriedDiff, LINE_DIFF_NOTE, STRUCTURAL_NOTE, bundleCarried, carriedRows, hloxCarried } from './carried';
import { manifestProblem } from './manifest';

export { LINE_DIFF_NOTE, STRUCTURAL_NOTE } from './carried';

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
  /** "structural": the workbench's, carried by the saved form; "line": made in the page; "": a message */
  kind: 'structural' | 'line' | '';
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
  /** The structural diff of `a` → `b` the saved form carries (carried.ts), or why it has none. */
  carried(a: string, b: string): ICarriedDiff | string;
}

/** The number of lines of a text, as the workbench's Stage.lines counts them. */
export function countLines(text: string): number {
  if (!text) return 0;
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n - 1 : n;
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The diff of stages `a` and `b` of `view`: the structural diff the saved form carries for the pair (the
 * panel's), else one made in the page (lineDiff of diffview.js), its note saying which and why. */
export function diffPair(view: IExplorationView, a: string, b: string): IPairDiff {
  const ta = view.text(a);
  const tb = view.text(b);
  for (const [name, t] of [[b, tb], [a, ta]] as const) {
    if (t.state !== 'ok') {
      return { before: '', after: '', rows: new Int32Array(0), note: '', kind: '',
        message: `stage ${name} has no text to compare: ${t.note}` };
    }
  }
  const carried = view.carried(a, b);
  let why = typeof carried === 'string' ? carried : '';
  if (typeof carried !== 'string') {
    const rows = carriedRows(carried);
    if (typeof rows !== 'string') {
      return { before: carried.before, after: carried.after, rows, message: '', note: STRUCTURAL_NOTE,
        kind: 'structural' };
    }
    why = `the one saved for this pair is damaged (${rows})`;
  }
  const before = splitLines(ta.text);
  const after = splitLines(tb.text);
  const rows = lineDiff(before, after);
  const notes = [`${LINE_DIFF_NOTE}: ${why}`];
  for (const [name, t] of [[a, ta], [b, tb]] as const) {
    if (t.note) notes.push(`${name}: ${t.note}`);
  }
  return { before: before.join('\n'), after: after.join('\n'), rows, message: '', note: notes.join('; '),
    kind: 'line' };
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
    costNote: bundleCostNote(cost !== null, data.cost_note),
    carried: (a: string, b: string) => bundleCarried(data.diff, a, b),
    text(name: string): IStageText {
      const t = texts[name];
      if (!t) return { state: 'missing', text: '', note: 'this output holds no text of this stage (only the pair shown)' };
      const state = t.state === 'failed' || t.state === 'missing' ? t.state : 'ok';
      return { state, text: String(t.text ?? ''), note: String(t.note ?? '') };
    }
  };
}

// A stage too big for a saved notebook's cost rows is named in the bundle's cost_note (bundle.py).
function bundleCostNote(hasCost: boolean, leftOut: unknown): string {
  const note = typeof leftOut === 'string' ? leftOut : '';
  if (!hasCost) return note || 'no cost table in this output';
  return 'cost of the stages shown, as the kernel computed it' + (note ? `; ${note}` : '');
}

function costTable(cost: any): ICostTable | null {
  if (!cost || !Array.isArray(cost.columns) || !Array.isArray(cost.rows)) return null;
  return { columns: cost.columns.map(String), rows: cost.rows.filter(Array.isArray) };
}

// -- the .hlox file ----------------------------------------------------------------------------------
// A .hlox file may come from anyone, and this page has one tab's memory: nothing it declares is
// allocated or inflated before it is checked against a limit, as workbench/pipeline/archive.py and
// saved.py do on the Python side. The zip's end record is read first (how many members, how large the
// directory), then the directory (plain, known, distinct member names; stored or deflated; not
// encrypted), then only the members shown: manifest.json inflated piece by piece and counted, then
// checked against the manifest's JSON Schema and rules (manifest.ts) before anything reads a field of
// it, texts.zst decompressed by fzstd's streaming decoder and counted. arrays.npz is never read.

/** What a .hlox file may make this page hold. `texts` is lower than the workbench's TEXTS_LIMIT
 * (1 GiB): a tab holds the decompressed texts, fzstd's window and the decoded strings at once. */
export interface IHloxLimits {
  /** members the zip's directory may list, checked on its end record before the directory is read */
  members: number;
  /** bytes of manifest.json, inflated (saved.py's MANIFEST_LIMIT) */
  manifest: number;
  /** bytes of the stage texts, decompressed; the manifest's texts_bytes is the limit below this */
  texts: number;
  /** nesting of the manifest's JSON (manifest.py's MAX_DEPTH) */
  depth: number;
  /** JSON values in the manifest, counted from brackets and commas (manifest.py's MAX_VALUES) */
  values: number;
  /** the largest zstd window decoded (archive.py's ZSTD_WINDOW_LIMIT): fzstd allocates it up front */
  window: number;
}

export const HLOX_LIMITS: Readonly<IHloxLimits> = Object.freeze({
  members: 16,
  manifest: 32 * 2 ** 20,
  texts: 256 * 2 ** 20,
  depth: 32,
  values: 4_000_000,
  window: 2 ** 27
});

/** Bytes of compressed data handed to the inflater at a time. Deflate makes at most 1032 bytes of one
 * (a 258-byte match in 2 bits), so one piece inflates to at most ~4 MiB before its count is checked. */
export const INFLATE_PIECE = 4096;

/** How much work reading a file took: tests read it to see a hostile file refused early. */
export interface IHloxMeter {
  /** entries of the zip's central directory parsed */
  entries: number;
  /** bytes the inflater produced (deflated members) */
  inflated: number;
  /** bytes the zstd decoder produced */
  unpacked: number;
}

export interface IReadHloxOptions {
  /** limits to use instead of HLOX_LIMITS' */
  limits?: Partial<IHloxLimits>;
  /** counted into as the file is read */
  meter?: IHloxMeter;
}

/** A .hlox file that cannot be shown; the message says which member and why. */
export class HloxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HloxError';
  }
}

/** A manifest that does not match its description (manifest.ts): `where` is the field as a path from
 * the top, as the Python loader names it (`stages[3].seconds`), `why` what was expected and found. */
export class ManifestError extends HloxError {
  constructor(readonly where: string, readonly why: string) {
    super(`corrupt manifest.json: ${where ? `${where}: ` : ''}${why}`);
    this.name = 'ManifestError';
  }
}

export interface IHloxFile {
  manifest: any;
  /** sha256 -> text */
  texts: Map<string, string>;
  /** the members of the zip */
  members: string[];
}

/** `n` bytes, exactly and roughly, as archive.py's size_text writes it: "1,073,741,824 bytes (1.0 GiB)". */
export function sizeText(n: number): string {
  const exact = `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} bytes`;
  for (const [unit, scale] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) {
    if (n >= scale) return `${exact} (${(n / scale).toFixed(1)} ${unit})`;
  }
  return exact;
}

/** The bytes of a base64 string (the contents API's `format: "base64"`, maybe with line breaks). */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64.replace(/\s+/g, ''));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// the profiler's trace files of save(profile=True) (saved_profiles.py) are never read here either
const MEMBERS = ['manifest.json', 'texts.zst', 'arrays.npz', 'profile_run.xplane.pb', 'profile_compile.xplane.pb'];
const PLAIN_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

interface IZipEntry {
  name: string;
  method: number;
  crc: number;
  compressed: number;
  size: number;
  /** where its local header starts */
  offset: number;
}

function u64(view: DataView, at: number): number {
  return view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;
}

/** The zip's members by name, from its central directory, after its end record has bounded it. */
function readDirectory(bytes: Uint8Array, limits: IHloxLimits, meter: IHloxMeter): Map<string, IZipEntry> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) {
    throw new HloxError('corrupt or truncated .hlox file: it has no zip end record (a zip\'s start without its end)');
  }
  let entries = view.getUint16(end + 10, true);
  let dirSize = view.getUint32(end + 12, true);
  let dirAt = view.getUint32(end + 16, true);
  if ((entries === 0xffff || dirSize === 0xffffffff || dirAt === 0xffffffff) && end >= 20 &&
      view.getUint32(end - 20, true) === 0x07064b50) {
    const where = u64(view, end - 12);  // the zip64 end record, where the locator says
    if (where + 56 <= bytes.length && view.getUint32(where, true) === 0x06064b50) {
      entries = u64(view, where + 32);
      dirSize = u64(view, where + 40);
      dirAt = u64(view, where + 48);
    }
  }
  const most = limits.members * (46 + 255 + 64);  // an entry: fixed part, a name, a zip64 extra field
  if (entries > limits.members || dirSize > most) {
    throw new HloxError(`the file's directory lists ${entries.toLocaleString('en-US')} members in ` +
      `${sizeText(dirSize)}; it may list at most ${limits.members} in ${sizeText(most)}; refused before reading it`);
  }
  if (dirAt + dirSize > bytes.length) {
    throw new HloxError(`corrupt or truncated .hlox file: its directory lies past the end (${sizeText(dirAt + dirSize)} ` +
      `of a ${sizeText(bytes.length)} file)`);
  }
  const out = new Map<string, IZipEntry>();
  const dirEnd = dirAt + dirSize;
  let at = dirAt;
  for (let k = 0; k < entries; k++) {
    if (at + 46 > dirEnd || view.getUint32(at, true) !== 0x02014b50) {
      throw new HloxError(`corrupt .hlox file: the zip's directory entry ${k} is damaged`);
    }
    meter.entries++;
    const flags = view.getUint16(at + 8, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const next = at + 46 + nameLength + extraLength + view.getUint16(at + 32, true);
    if (next > dirEnd) throw new HloxError(`corrupt .hlox file: the zip's directory entry ${k} runs past the directory`);
    const raw = bytes.subarray(at + 46, at + 46 + nameLength);
    const name = new TextDecoder(flags & 0x800 ? 'utf-8' : 'latin1').decode(raw);
    const entry: IZipEntry = {
      name,
      method: view.getUint16(at + 10, true),
      crc: view.getUint32(at + 16, true),
      compressed: view.getUint32(at + 20, true),
      size: view.getUint32(at + 24, true),
      offset: view.getUint32(at + 42, true)
    };
    zip64Sizes(view, at + 46 + nameLength, extraLength, entry);
    if (!PLAIN_NAME.test(name) || name.includes('..')) {
      throw new HloxError(`the file holds a member named ${JSON.stringify(name.slice(0, 100))}, not a plain file ` +
        'name (no folders, no \'..\', no absolute paths)');
    }
    if (out.has(name)) throw new HloxError(`the file holds the member ${JSON.stringify(name)} twice`);
    if (!MEMBERS.includes(name)) {
      throw new HloxError(`corrupt or refused: the zip holds a member ${JSON.stringify(name)}, which a .hlox of ` +
        `format 1 does not have (it holds ${MEMBERS.join(', ')})`);
    }
    if (entry.method !== 0 && entry.method !== 8) {
      throw new HloxError(`the file's member ${name} uses compression method ${entry.method}; only stored (0) and ` +
        'deflated (8) members are read');
    }
    if (flags & 1) throw new HloxError(`the file's member ${name} is encrypted`);
    out.set(name, entry);
    at = next;
  }
  return out;
}

/** Sizes and offset from the zip64 extra field, where the directory entry's 32-bit ones say to look. */
function zip64Sizes(view: DataView, at: number, length: number, entry: IZipEntry): void {
  const wanted = (['size', 'compressed', 'offset'] as const).filter(k => entry[k] === 0xffffffff);
  if (!wanted.length) return;
  for (let p = at; p + 4 <= at + length;) {
    const id = view.getUint16(p, true);
    const size = view.getUint16(p + 2, true);
    if (id === 1) {
      for (const [i, k] of wanted.entries()) {
        if (8 * i + 8 <= size && p + 4 + 8 * i + 8 <= at + length) entry[k] = u64(view, p + 4 + 8 * i);
      }
      return;
    }
    p += 4 + size;
  }
}

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

function crc32(data: Uint8Array): number {
  let c = -1;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]) & 255] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

/** The bytes of one member, refused when its declared size passes `limit` (before a byte is inflated)
 * or when inflating it goes past its declared size (counted after each piece). */
function readMember(bytes: Uint8Array, entry: IZipEntry, limit: number, meter: IHloxMeter): Uint8Array {
  const what = entry.name;
  if (entry.size > limit) {
    throw new HloxError(`${what} is ${sizeText(entry.size)} uncompressed, over the limit of ${sizeText(limit)}; ` +
      'refused without reading it');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = entry.offset;
  if (at + 30 > bytes.length || view.getUint32(at, true) !== 0x04034b50) {
    throw new HloxError(`corrupt or truncated .hlox file: ${what}'s local header is missing`);
  }
  const nameLength = view.getUint16(at + 26, true);
  const local = new TextDecoder('latin1').decode(bytes.subarray(at + 30, at + 30 + nameLength));
  if (local !== what) {
    throw new HloxError(`corrupt .hlox file: the directory's member ${what} has the local header of ` +
      `${JSON.stringify(local.slice(0, 100))}`);
  }
  const start = at + 30 + nameLength + view.getUint16(at + 28, true);
  const stop = start + entry.compressed;
  if (stop > bytes.length) {
    throw new HloxError(`corrupt or truncated .hlox file: ${what}'s ${sizeText(entry.compressed)} run past the end of ` +
      'the file');
  }
  let data: Uint8Array;
  if (entry.method === 0) {
    if (entry.compressed !== entry.size) {
      throw new HloxError(`corrupt .hlox file: ${what} is stored in ${sizeText(entry.compressed)} but declares ` +
        `${sizeText(entry.size)}`);
    }
    data = bytes.subarray(start, stop);
  } else {
    data = new Uint8Array(entry.size);
    let made = 0;
    const inflater = new Inflate((chunk: Uint8Array) => {
      meter.inflated += chunk.length;
      if (made + chunk.length > entry.size) {
        throw new HloxError(`${what} inflates past the ${sizeText(entry.size)} its zip entry declares (the limit is ` +
          `${sizeText(limit)}); refused after inflating ${sizeText(made + chunk.length)}`);
      }
      data.set(chunk, made);
      made += chunk.length;
    });
    try {
      if (start === stop) inflater.push(new Uint8Array(0), true);
      for (let p = start; p < stop; p += INFLATE_PIECE) {
        inflater.push(bytes.subarray(p, Math.min(p + INFLATE_PIECE, stop)), p + INFLATE_PIECE >= stop);
      }
    } catch (err) {
      if (err instanceof HloxError) throw err;
      throw new HloxError(`corrupt or truncated .hlox file: ${what} does not inflate (${(err as Error).message})`);
    }
    if (made !== entry.size) {
      throw new HloxError(`corrupt or truncated .hlox file: ${what} inflates to ${sizeText(made)}, its zip entry ` +
        `declares ${sizeText(entry.size)}`);
    }
  }
  if (crc32(data) !== entry.crc) throw new HloxError(`corrupt .hlox file: ${what} does not match its CRC-32`);
  return data;
}

// JSON.parse reads no NaN: it is written as this string, and a reviver turns the string back into NaN.
// A lone low surrogate starts it, which no text holds (manifest.py refuses one in every string it
// reads); a file that writes this very string anyway is refused, not misread (see parseManifest).
const NAN_STAND_IN = '\udeadNaN';

/** The manifest's JSON, nesting and size checked by one linear scan before JSON.parse sees it. The bare
 * NaN / Infinity / -Infinity Python's json writes (allow_nan) are read as those numbers, as Python's
 * json.loads reads them: the schema check then refuses them where the manifest may not hold them. */
function parseManifest(data: Uint8Array, limits: IHloxLimits): any {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    throw new HloxError('corrupt .hlox file: manifest.json is not UTF-8 text');
  }
  let depth = 0;
  let deepest = 0;
  let values = 1;
  let inString = false;
  let nan = false;
  let standIn = false;  // a string starts with \uDEAD, as NaN's stand-in does
  const parts: string[] = [];
  let copied = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;  // the escaped character is text
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
      if (text.charCodeAt(i + 1) === 0x5c && text.slice(i + 2, i + 7).toLowerCase() === 'udead') standIn = true;
    } else if (c === 0x5b || c === 0x7b) {  // [ {
      values++;
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) {  // ] }
      depth--;
    } else if (c === 0x2c) {  // ,
      values++;
    } else if (c === 0x4e || c === 0x49 || c === 0x2d) {  // N I -
      const word = text.startsWith('NaN', i) ? 'NaN' : text.startsWith('Infinity', i) ? 'Infinity' :
        text.startsWith('-Infinity', i) ? '-Infinity' : '';
      if (word) {
        // 1e999 is a JSON number JSON.parse reads as Infinity
        const number = word === 'NaN' ? JSON.stringify(NAN_STAND_IN) : word === 'Infinity' ? '1e999' : '-1e999';
        parts.push(text.slice(copied, i), number);
        copied = i + word.length;
        i = copied - 1;
        nan ||= word === 'NaN';
      }
    }
  }
  if (deepest > limits.depth) {
    throw new HloxError(`manifest.json nests ${deepest.toLocaleString('en-US')} levels deep; a manifest nests at ` +
      `most ${limits.depth}`);
  }
  if (values > limits.values) {
    throw new HloxError(`manifest.json holds about ${values.toLocaleString('en-US')} values; a manifest holds at ` +
      `most ${limits.values.toLocaleString('en-US')}`);
  }
  if (nan && standIn) {
    throw new HloxError('corrupt .hlox file: manifest.json holds a string that starts with a lone surrogate (\\uDEAD), ' +
      'which is not text');
  }
  parts.push(text.slice(copied));
  try {
    const json = parts.join('');
    return nan ? JSON.parse(json, (_key, v) => (v === NAN_STAND_IN ? NaN : v)) : JSON.parse(json);
  } catch (err) {
    throw new HloxError(`corrupt .hlox file: manifest.json is not JSON (${(err as Error).message})`);
  }
}

const ZSTD_BLOCK = 128 * 1024;  // the largest block a zstd frame may hold

/** The one zstd frame at the start of `packed`, decompressed: exactly `size` bytes, or an HloxError. Its
 * header is read first: a frame declaring another size, or a window larger than it needs, is refused
 * before fzstd allocates anything; decoding stops at the first block past `size`. */
function unpackZstd(packed: Uint8Array, size: number, limits: IHloxLimits, meter: IHloxMeter): Uint8Array {
  const what = 'texts.zst';
  if (packed.length < 6 || packed[0] !== 0x28 || packed[1] !== 0xb5 || packed[2] !== 0x2f || packed[3] !== 0xfd) {
    throw new HloxError(`corrupt .hlox file: ${what} is not a zstd frame`);
  }
  const flags = packed[4];
  const single = (flags >> 5) & 1;
  let at = 5;
  let window = -1;
  if (!single) {
    const exponent = packed[at] >> 3;
    const base = 2 ** (10 + exponent);
    window = base + (base / 8) * (packed[at] & 7);
    at++;
  }
  let dictionary = 0;
  for (let k = 0, n = [0, 1, 2, 4][flags & 3]; k < n; k++) dictionary += packed[at++] * 2 ** (8 * k);
  const sizeBytes = flags >> 6 ? 1 << (flags >> 6) : single;
  if (at + sizeBytes > packed.length) throw new HloxError(`corrupt or truncated .hlox file: ${what} is truncated`);
  let declared = sizeBytes ? (sizeBytes === 2 ? 256 : 0) : -1;
  for (let k = 0; k < sizeBytes; k++) declared += packed[at++] * 2 ** (8 * k);
  if (single) window = declared;
  if (flags & 8) throw new HloxError(`corrupt .hlox file: ${what}'s zstd frame header sets a reserved bit`);
  if (dictionary) throw new HloxError(`corrupt .hlox file: ${what} needs zstd dictionary ${dictionary}, which no .hlox holds`);
  if (declared !== -1 && declared !== size) {
    throw new HloxError(`${what}'s zstd frame declares ${sizeText(declared)}, where the manifest says ${sizeText(size)}; ` +
      'refused before decompressing');
  }
  // saved.py's window is the texts' size rounded up to a power of two, at least 1 MiB, at most 128 MiB
  const room = Math.min(limits.window, Math.max(2 ** 20, 2 * size));
  if (window > room) {
    throw new HloxError(`${what}'s zstd frame needs a window of ${sizeText(window)}; texts of ${sizeText(size)} need ` +
      `at most ${sizeText(room)}; refused before decompressing`);
  }
  for (let last = 0; !last;) {  // find where the frame ends: fzstd would read a frame after it as well
    if (at + 3 > packed.length) throw new HloxError(`corrupt or truncated .hlox file: ${what} is truncated`);
    const header = packed[at] | (packed[at + 1] << 8) | (packed[at + 2] << 16);
    last = header & 1;
    const type = (header >> 1) & 3;
    const length = header >>> 3;
    if (type === 3) throw new HloxError(`corrupt .hlox file: ${what} holds a zstd block of a reserved type`);
    if (length > ZSTD_BLOCK) {
      throw new HloxError(`corrupt .hlox file: ${what} holds a zstd block of ${sizeText(length)}; zstd blocks are at ` +
        `most ${sizeText(ZSTD_BLOCK)}`);
    }
    at += 3 + (type === 1 ? 1 : length);
  }
  at += (flags >> 2) & 1 ? 4 : 0;
  if (at > packed.length) throw new HloxError(`corrupt or truncated .hlox file: ${what} is truncated`);
  const out = new Uint8Array(size);
  let made = 0;
  const decoder = new Decompress((chunk: Uint8Array) => {
    meter.unpacked += chunk.length;
    if (made + chunk.length > size) {
      throw new HloxError(`${what} decompresses past the ${sizeText(size)} the manifest says; refused after ` +
        sizeText(made + chunk.length));
    }
    out.set(chunk, made);
    made += chunk.length;
  });
  try {
    decoder.push(packed.subarray(0, at), true);
  } catch (err) {
    if (err instanceof HloxError) throw err;
    throw new HloxError(`corrupt or truncated .hlox file: ${what} does not decompress (zstd: ${(err as Error).message})`);
  }
  if (made !== size) {
    throw new HloxError(`corrupt or truncated .hlox file: ${what} decompresses to ${sizeText(made)} of the ` +
      `${sizeText(size)} the manifest says`);
  }
  return out;
}

/** Reads a .hlox file: its manifest and every text it holds. Throws an HloxError saying what is wrong
 * with a bad file, before more than its limits (HLOX_LIMITS, or `options.limits`) are allocated. */
export function readHlox(bytes: Uint8Array, options: IReadHloxOptions = {}): IHloxFile {
  const limits: IHloxLimits = { ...HLOX_LIMITS, ...options.limits };
  const meter: IHloxMeter = options.meter ?? { entries: 0, inflated: 0, unpacked: 0 };
  if (bytes.length < 4 || bytes[0] !== 0x50 || bytes[1] !== 0x4b) {
    throw new HloxError(bytes.length ? 'not a saved exploration (.hlox): it is not a zip archive' : 'the file is empty');
  }
  const members = readDirectory(bytes, limits, meter);
  const manifestEntry = members.get('manifest.json');
  if (!manifestEntry) throw new HloxError('not a saved exploration (.hlox): the zip has no manifest.json');
  const manifest = parseManifest(readMember(bytes, manifestEntry, limits.manifest, meter), limits);
  if (!manifest || manifest.kind !== HLOX_KIND) {
    throw new HloxError('not a saved exploration (.hlox): its manifest is not an hlo-workbench one');
  }
  if (Number.isInteger(manifest.format) && manifest.format > 1) {  // else the schema says what is wrong with it
    throw new HloxError(`this file was written by a newer hlo-workbench (format ${manifest.format}); this extension ` +
      'reads format 1');
  }
  // every field the views read has its type and range, and the texts' index tiles the blob (each byte
  // is decoded once, however many entries): manifest.ts, the Python loader's description and rules
  const problem = manifestProblem(manifest);
  if (problem) throw new ManifestError(problem.where, problem.why);
  const index: { sha256: string; offset: number; length: number }[] = manifest.texts;
  const texts = new Map<string, string>();
  if (index.length) {
    const size: number = manifest.texts_bytes;
    if (size > limits.texts) {
      throw new HloxError(`refused: the manifest says the stage texts are ${sizeText(size)}, over this viewer's limit of ` +
        `${sizeText(limits.texts)} (the workbench itself loads up to 1 GiB: open the file with wb.load)`);
    }
    const entry = members.get('texts.zst');
    if (!entry) throw new HloxError('corrupt .hlox file: no texts.zst');
    // a zstd frame is at most its content plus 1/256 of it and a few headers (saved.py's bound)
    const blob = unpackZstd(readMember(bytes, entry, size + Math.floor(size / 256) + 1024, meter), size, limits, meter);
    const decoder = new TextDecoder('utf-8');
    for (const t of index) texts.set(t.sha256, decoder.decode(blob.subarray(t.offset, t.offset + t.length)));
  }
  return { manifest, texts, members: [...members.keys()] };
}

/** The header's words for a saved spec's XLA options (`[name, value]` pairs), as the panel says them:
 * "XLA off: algsimp, cse" for the disabled HLO passes, then any other option as name=value. */
export function xlaOptionBits(options: unknown): string[] {
  const pairs = (Array.isArray(options) ? options : []).filter(
    (p: unknown): p is [string, string] => Array.isArray(p) && p.length === 2);
  const bits: string[] = [];
  const off = pairs.filter(([k]) => k === 'xla_disable_hlo_passes')
    .flatMap(([, v]) => String(v).split(',')).map(n => n.trim()).filter(Boolean);
  if (off.length) bits.push(`XLA off: ${off.join(', ')}`);
  const other = pairs.filter(([k]) => k !== 'xla_disable_hlo_passes');
  if (other.length) bits.push(`XLA options: ${other.map(([k, v]) => `${k}=${v}`).join(', ')}`);
  return bits;
}

/** The view of a read .hlox file: every stage pickable. */
export function hloxView(file: IHloxFile): IExplorationView {
  const m = file.manifest;
  const byName = new Map<string, any>();
  // counted once per text: many stages name the same one (an unchanged stage names its parent's)
  const lines = new Map<string, number>();
  const stages: IStageRow[] = (m.stages ?? []).map((s: any) => {
    byName.set(String(s.name), s);
    const text = s.text ? file.texts.get(s.text) : undefined;
    if (text !== undefined && !lines.has(s.text)) lines.set(s.text, countLines(text));
    return {
      name: String(s.name),
      group: String(s.group ?? ''),
      changed: !!s.changed,
      lines: text === undefined ? (s.text ? null : 0) : lines.get(s.text)!,
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
  bits.push(...xlaOptionBits(spec.xla_options));
  if (versions) bits.push(`saved by ${versions}${by.date ? ' on ' + by.date : ''}`);
  const errors = [m.pipeline_error, m.xla_error].filter(Boolean)
    .map((e: any) => `${e.stage}: ${e.reason ?? ''}`);
  const first = defaultPair(stages);
  const cost = costTable(m.cost);
  const anyCarried = (m.stages ?? []).some((s: any) => s.diff);
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
    carried: (a: string, b: string) => hloxCarried(byName.get(b), a, file.texts, anyCarried),
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
