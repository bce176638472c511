// Hostile .hlox files, built here byte by byte (a zip writer that declares whatever sizes it is told, deflate
// bombs made by repeating one sync-flushed deflate block of zeros, zstd frames of RLE blocks), read as the
// .hlox viewer reads them. Each is refused with a message naming the member, the size and the limit, and the
// meter readHlox counts into shows how little was inflated or decompressed first: bytes, never seconds.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';

import { unzipSync } from 'fflate';
import { decompress } from 'fzstd';
import { describe, expect, it } from 'vitest';

import { HLOX_LIMITS, HloxError, IHloxLimits, IHloxMeter, INFLATE_PIECE, hloxView, readHlox } from '../src/exploration';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const encode = (s: string) => new TextEncoder().encode(s);
const meter = (): IHloxMeter => ({ entries: 0, inflated: 0, unpacked: 0 });
/** the most one piece of compressed data can add past a limit: deflate's 1032:1, plus a partial symbol */
const ONE_PIECE = 1032 * (INFLATE_PIECE + 16);

function crc32(data: Uint8Array): number {
  let c = -1;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ -1) >>> 0;
}

interface IMember {
  name: string;
  /** the bytes stored in the zip (compressed already when method is 8) */
  data: Uint8Array;
  method?: number;
  /** the uncompressed size the directory declares (default: data's length) */
  size?: number;
  crc?: number;
  flags?: number;
}

/** A zip of `members`, each declaring what it is told; zip64 end records when there are 0xffff or more. */
function zip(members: IMember[]): Uint8Array {
  const locals: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let at = 0;
  for (const m of members) {
    const name = encode(m.name);
    const local = new Uint8Array(30 + name.length);
    const entry = new Uint8Array(46 + name.length);
    const lv = new DataView(local.buffer);
    const cv = new DataView(entry.buffer);
    const crc = m.crc ?? crc32(m.data);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint16(6, m.flags ?? 0, true);
    lv.setUint16(8, m.method ?? 0, true);
    lv.setUint32(14, crc, true);
    lv.setUint32(18, m.data.length, true);
    lv.setUint32(22, m.size ?? m.data.length, true);
    lv.setUint16(26, name.length, true);
    local.set(name, 30);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint16(8, m.flags ?? 0, true);
    cv.setUint16(10, m.method ?? 0, true);
    cv.setUint32(16, crc, true);
    cv.setUint32(20, m.data.length, true);
    cv.setUint32(24, m.size ?? m.data.length, true);
    cv.setUint16(28, name.length, true);
    cv.setUint32(42, at, true);
    entry.set(name, 46);
    locals.push(local, m.data);
    central.push(entry);
    at += local.length + m.data.length;
  }
  const dirSize = central.reduce((n, c) => n + c.length, 0);
  const tail: Uint8Array[] = [];
  const wide = members.length >= 0xffff;
  if (wide) {
    const record = new Uint8Array(56 + 20);
    const v = new DataView(record.buffer);
    v.setUint32(0, 0x06064b50, true);
    v.setBigUint64(4, 44n, true);
    v.setUint16(12, 45, true);
    v.setBigUint64(24, BigInt(members.length), true);
    v.setBigUint64(32, BigInt(members.length), true);
    v.setBigUint64(40, BigInt(dirSize), true);
    v.setBigUint64(48, BigInt(at), true);
    v.setUint32(56, 0x07064b50, true);
    v.setBigUint64(64, BigInt(at + dirSize), true);
    v.setUint32(72, 1, true);
    tail.push(record);
  }
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, wide ? 0xffff : members.length, true);
  ev.setUint16(10, wide ? 0xffff : members.length, true);
  ev.setUint32(12, dirSize, true);
  ev.setUint32(16, at, true);
  tail.push(end);
  const parts = [...locals, ...central, ...tail];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let k = 0;
  for (const p of parts) out.set(p, k), k += p.length;
  return out;
}

/** A raw deflate stream of `chunks` x 4 MiB of zeros: one sync-flushed (byte-aligned, not final) block
 * repeated, then an empty final block. Its back-references only ever reach zeros, so it is valid. */
function zerosBomb(chunks: number): Uint8Array {
  const block = deflateRawSync(Buffer.alloc(4 * MiB), { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  const last = deflateRawSync(Buffer.alloc(0));
  const out = new Uint8Array(block.length * chunks + last.length);
  for (let k = 0; k < chunks; k++) out.set(block, k * block.length);
  out.set(last, block.length * chunks);
  return out;
}

/** A zstd frame of `blocks` RLE blocks of `each` bytes of 'a'; its header declares `declared` bytes
 * (single segment) or nothing (a window of `window` bytes, a power of two of at least 1 KiB). */
function zstdRle(blocks: number, each: number, header: { declared?: number; window?: number }): Uint8Array {
  const head: number[] = [0x28, 0xb5, 0x2f, 0xfd];
  if (header.declared !== undefined) {
    head.push(0xe0);  // 8-byte content size, single segment
    for (let k = 0; k < 8; k++) head.push(Math.floor(header.declared / 2 ** (8 * k)) & 255);
  } else {
    head.push(0x00, (Math.log2(header.window ?? MiB) - 10) << 3);
  }
  const out = new Uint8Array(head.length + 4 * blocks);
  out.set(head);
  for (let k = 0, at = head.length; k < blocks; k++, at += 4) {
    const h = (each << 3) | (1 << 1) | (k === blocks - 1 ? 1 : 0);
    out.set([h & 255, (h >> 8) & 255, (h >> 16) & 255, 0x61], at);
  }
  return out;
}

/** The smallest manifest the schema and its rules pass, of one stage whose text is the `size` bytes of
 * texts.zst (none when `size` is 0), with `extra`'s fields on top. */
function manifestJson(size: number, extra: object = {}): object {
  const sha = 'ab'.repeat(32);
  return {
    format: 1, kind: 'hlo-workbench exploration', saved_by: { workbench: '0.1.0' },
    spec: { title: 'hostile', pipeline: '', inline: false, pattern_options: {}, disabled: [], enabled: [],
      xla_options: [], device: 'cpu', timeout: 60 },
    early: 1,
    stages: [{ name: 'input', group: 'mlir', produced_by: 'the text', changed: true, seconds: null, parent: null,
      error: null, cached: false, text: size ? sha : null }],
    pipeline_error: null, xla_error: null, args: [], arrays: false, runs: [],
    texts: size ? [{ sha256: sha, offset: 0, length: size }] : [], texts_bytes: size, texts_sha256: sha, ...extra
  };
}

const manifest = (size: number, extra: object = {}) => encode(JSON.stringify(manifestJson(size, extra)));

const deflated = (name: string, data: Uint8Array): IMember =>
  ({ name, data: deflateRawSync(data), method: 8, size: data.length, crc: crc32(data) });

/** readHlox's error for `bytes` (it must throw one), with the meter it counted into. */
function refusal(bytes: Uint8Array, limits?: Partial<IHloxLimits>): { message: string; m: IHloxMeter } {
  const m = meter();
  try {
    readHlox(bytes, { limits, meter: m });
  } catch (err) {
    expect(err).toBeInstanceOf(HloxError);
    return { message: (err as Error).message, m };
  }
  throw new Error('the file was read, not refused');
}

describe('the hostile files these tests build', () => {
  it('are what they say: the bomb inflates to its zeros, the RLE frame decodes', () => {
    const bomb = inflateRawSync(zerosBomb(3));
    expect(bomb.length).toBe(12 * MiB);
    expect(bomb.every(b => b === 0)).toBe(true);
    expect(zerosBomb(256).length).toBeLessThan(1.5 * MiB);  // 1 GiB of zeros
    const text = decompress(zstdRle(3, 1000, { declared: 3000 }));
    expect(new TextDecoder().decode(text)).toBe('a'.repeat(3000));
    const blob = readHlox(zip([deflated('manifest.json', manifest(3000)),
      { name: 'texts.zst', data: zstdRle(3, 1000, { window: MiB }) }]));
    expect(hloxView(blob).text('input').text).toBe('a'.repeat(3000));
  });
});

describe('a deflate bomb in manifest.json', () => {
  const bomb = zerosBomb(256);  // 1 GiB of zeros in ~1 MB

  it('declared at its size is refused at the real limits before a byte is inflated', () => {
    const { message, m } = refusal(zip([{ name: 'manifest.json', data: bomb, method: 8, size: GiB, crc: 0 }]));
    expect(message).toBe('manifest.json is 1,073,741,824 bytes (1.0 GiB) uncompressed, over the limit of ' +
      '33,554,432 bytes (32.0 MiB); refused without reading it');
    expect(m.inflated).toBe(0);
    expect(HLOX_LIMITS.manifest).toBe(32 * MiB);
  });

  it('declared small is stopped once it inflates past that, one piece at most', () => {
    const { message, m } = refusal(zip([{ name: 'manifest.json', data: bomb, method: 8, size: MiB, crc: 0 }]));
    expect(message).toMatch(/^manifest\.json inflates past the 1,048,576 bytes \(1\.0 MiB\) its zip entry declares \(the limit is 33,554,432 bytes \(32\.0 MiB\)\); refused after inflating [\d,]+ bytes/);
    expect(m.inflated).toBeGreaterThan(MiB);
    expect(m.inflated).toBeLessThanOrEqual(MiB + ONE_PIECE);
    expect(message).toContain(`after inflating ${m.inflated.toLocaleString('en-US')} bytes`);
  });

  it('declared at a lower limit than the real one is refused at that one', () => {
    const small = zerosBomb(16);  // 64 MiB
    const honest = refusal(zip([{ name: 'manifest.json', data: small, method: 8, size: 64 * MiB, crc: 0 }]),
      { manifest: MiB });
    expect(honest.message).toMatch(/^manifest\.json is 67,108,864 bytes \(64\.0 MiB\) uncompressed, over the limit of 1,048,576 bytes/);
    expect(honest.m.inflated).toBe(0);
    const lying = refusal(zip([{ name: 'manifest.json', data: small, method: 8, size: MiB, crc: 0 }]), { manifest: MiB });
    expect(lying.m.inflated).toBeLessThanOrEqual(MiB + ONE_PIECE);
  });
});

describe('a zstd bomb in texts.zst', () => {
  const withTexts = (size: number, frame: Uint8Array) =>
    zip([deflated('manifest.json', manifest(size)), { name: 'texts.zst', data: frame }]);

  it('that goes on past the size the manifest says is stopped one block after it', () => {
    // 8192 RLE blocks of 128 KiB: 1 GiB in 32 KB, no size in its header
    const { message, m } = refusal(withTexts(MiB, zstdRle(8192, 128 * 1024, { window: MiB })));
    expect(message).toBe('texts.zst decompresses past the 1,048,576 bytes (1.0 MiB) the manifest says; refused ' +
      'after 1,179,648 bytes (1.1 MiB)');
    expect(m.unpacked).toBe(MiB + 128 * 1024);
  });

  it('that declares more than the manifest says is refused before decompressing', () => {
    const { message, m } = refusal(withTexts(MiB, zstdRle(8192, 128 * 1024, { declared: GiB })));
    expect(message).toBe('texts.zst\'s zstd frame declares 1,073,741,824 bytes (1.0 GiB), where the manifest says ' +
      '1,048,576 bytes (1.0 MiB); refused before decompressing');
    expect(m.unpacked).toBe(0);
  });

  it('that asks for a larger window than its texts need is refused before fzstd allocates it', () => {
    const { message, m } = refusal(withTexts(1000, zstdRle(1, 1000, { window: GiB })));
    expect(message).toMatch(/^texts\.zst's zstd frame needs a window of 1,073,741,824 bytes \(1\.0 GiB\); texts of 1,000 bytes need at most 1,048,576 bytes \(1\.0 MiB\); refused before decompressing$/);
    expect(m.unpacked).toBe(0);
  });

  it('whose manifest says the texts are over the viewer\'s limit is refused before texts.zst is read', () => {
    const { message, m } = refusal(withTexts(GiB, zstdRle(8192, 128 * 1024, { declared: GiB })));
    expect(message).toMatch(/^refused: the manifest says the stage texts are 1,073,741,824 bytes \(1\.0 GiB\), over this viewer's limit of 268,435,456 bytes \(256\.0 MiB\)/);
    expect(m.unpacked).toBe(0);
    expect(refusal(withTexts(2 * MiB, zstdRle(16, 128 * 1024, { declared: 2 * MiB })), { texts: MiB }).message)
      .toMatch(/over this viewer's limit of 1,048,576 bytes/);
  });

  it('whose index names the blob many times over is refused: each byte is decoded once', () => {
    const sha = (k: number) => k.toString(16).padStart(64, '0');
    const texts = Array.from({ length: 1000 }, (_, k) => ({ sha256: sha(k), offset: 0, length: MiB }));
    const m = manifest(MiB, { texts, stages: [], early: 0 });
    const { message, m: counted } = refusal(zip([deflated('manifest.json', m),
      { name: 'texts.zst', data: zstdRle(8, 128 * 1024, { declared: MiB }) }]));
    expect(message).toBe('corrupt manifest.json: texts[1].offset: expected 1048576 (where texts[0] ends), got 0');
    expect(counted.unpacked).toBe(0);
  });
});

describe('the zip\'s directory', () => {
  const empty = new Uint8Array(0);

  it('listing 100,000 members is refused from its end record, before an entry is read', () => {
    const names = Array.from({ length: 100_000 }, (_, k) => ({ name: `m${k}`, data: empty }));
    const { message, m } = refusal(zip(names));  // a zip64 end record: the 16-bit count cannot say 100,000
    expect(message).toMatch(/^the file's directory lists 100,000 members in [\d,]+ bytes \([\d.]+ MiB\); it may list at most 16 in 5,840 bytes \(5\.7 KiB\); refused before reading it$/);
    expect(m.entries).toBe(0);
    const some = refusal(zip(names.slice(0, 17)));
    expect(some.message).toMatch(/^the file's directory lists 17 members/);
    expect(some.m.entries).toBe(0);
  });

  it('may hold only manifest.json, texts.zst, arrays.npz and the profile traces, each once, plainly named, stored or deflated', () => {
    const good = deflated('manifest.json', manifest(0));
    const cases: [IMember[], RegExp][] = [
      [[good, { name: '../manifest.json', data: empty }], /member named "\.\.\/manifest\.json", not a plain file name/],
      [[good, { name: 'dir/texts.zst', data: empty }], /member named "dir\/texts\.zst", not a plain file name/],
      [[good, { name: '/etc/passwd', data: empty }], /member named "\/etc\/passwd", not a plain file name/],
      [[good, { name: 'texts..zst', data: empty }], /member named "texts\.\.zst", not a plain file name/],
      [[good, good], /holds the member "manifest\.json" twice/],
      [[good, { name: 'evil.js', data: empty }], /a member "evil\.js", which a \.hlox of format 1 does not have/],
      [[{ ...good, method: 12 }], /member manifest\.json uses compression method 12; only stored \(0\) and deflated \(8\)/],
      [[{ ...good, flags: 1 }], /member manifest\.json is encrypted/]
    ];
    for (const [members, why] of cases) {
      const { message, m } = refusal(zip(members));
      expect(message).toMatch(why);
      expect(m.inflated).toBe(0);
    }
    expect(readHlox(zip([good, { name: 'arrays.npz', data: encode('never read') }])).members)
      .toEqual(['manifest.json', 'arrays.npz']);
    // save(profile=True) keeps the profiler's own traces: never read here, never refused
    expect(readHlox(zip([good, { name: 'profile_run.xplane.pb', data: encode('never read') }])).members)
      .toEqual(['manifest.json', 'profile_run.xplane.pb']);
  });

  it('must describe members that are there, whole and matching their CRC', () => {
    const good = deflated('manifest.json', manifest(0));
    const whole = zip([good]);
    expect(refusal(whole.slice(0, whole.length - 30)).message).toMatch(/corrupt or truncated .*no zip end record/);
    expect(refusal(zip([{ ...good, crc: good.crc! ^ 1 }])).message).toBe('corrupt .hlox file: manifest.json does not ' +
      'match its CRC-32');
    expect(refusal(zip([{ ...good, size: good.size! + 1 }])).message).toMatch(/manifest\.json inflates to [\d,]+ bytes, its zip entry declares/);
    expect(refusal(zip([{ ...good, data: good.data.slice(0, 20) }])).message).toMatch(/manifest\.json does not inflate/);
  });
});

describe('the manifest\'s JSON', () => {
  const withManifest = (text: string) => zip([deflated('manifest.json', encode(text))]);

  it('nested deeper than 32 levels is refused before JSON.parse sees it', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(refusal(withManifest(deep)).message).toBe('manifest.json nests 100,000 levels deep; a manifest nests at most 32');
    expect(refusal(withManifest('['.repeat(33) + ']'.repeat(33))).message).toMatch(/nests 33 levels deep/);
    expect(refusal(withManifest('['.repeat(32) + ']'.repeat(32))).message).toMatch(/its manifest is not an hlo-workbench one/);
  });

  it('holding more values than the limit is refused', () => {
    const many = `[${'[],'.repeat(2000)}[]]`;  // 1 + 2,002 opened + 2,000 commas, as manifest.py counts
    expect(refusal(withManifest(many), { values: 1000 }).message).toBe('manifest.json holds about 4,003 values; a ' +
      'manifest holds at most 1,000');
  });

  it('reads brackets and NaN inside strings as text, and bare NaN / Infinity as the numbers Python wrote', () => {
    const title = 'a, NaN] [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ "quoted" -Infinity}';
    const base = manifestJson(0, { cost: { columns: ['stage', 'flops'], rows: [['a', 0]] } }) as any;
    base.spec.title = title;
    const text = JSON.stringify(base).replace('[["a",0]]', '[["a",NaN],["b", Infinity],["c",-Infinity]]');
    const file = readHlox(withManifest(text));
    expect(file.manifest.spec.title).toBe(title);
    expect(file.manifest.cost.rows).toEqual([['a', NaN], ['b', Infinity], ['c', -Infinity]]);
  });

  it('holding NaN\'s stand-in as a string is refused, not read as NaN', () => {
    const base = manifestJson(0, { cost: { columns: ['stage', 'flops'], rows: [['a', 0]] } }) as any;
    base.spec.title = '\udeadNaN';  // a lone surrogate: JSON.stringify writes it as \udead
    const text = JSON.stringify(base);
    expect(text).toContain('"\\udeadNaN"');
    expect(readHlox(withManifest(text)).manifest.spec.title).toBe('\udeadNaN');  // without a bare NaN: a string
    expect(refusal(withManifest(text.replace('[["a",0]]', '[["a",NaN]]'))).message)
      .toMatch(/manifest\.json holds a string that starts with a lone surrogate/);
  });
});

describe('the real .hlox file', () => {
  it('is read at the real limits, its members inflated and decompressed exactly once', () => {
    const bytes = new Uint8Array(readFileSync(join(FIXTURES, 'attention.hlox')));
    const m = meter();
    const file = readHlox(bytes, { meter: m });
    expect(m.entries).toBe(file.members.length);
    expect(m.unpacked).toBe(file.manifest.texts_bytes);
    // fflate's own unzip of the same file: manifest.json is inflated once, to its size, and nothing else is
    expect(m.inflated).toBe(unzipSync(bytes, { filter: f => f.name === 'manifest.json' })['manifest.json'].length);
  });
});
