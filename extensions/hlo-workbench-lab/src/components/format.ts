// How the views write numbers: one place, so the panel, the report and the extension read alike.

/** A count or a measured number in words: "" for none, integers with thousands separators, other numbers
 * to 4 significant digits (exponent form outside 1e-3..1e6). */
export function formatNumber(v: unknown): string {
  if (v === null || v === undefined || v === '') return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3).replace(/\.?0+e/, 'e');
  return String(+v.toPrecision(4));
}

/** A time given in milliseconds: "0.435 ms", "12.3 ms", "1.24 s"; "" for none. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  if (ms >= 1000) return `${+(ms / 1000).toPrecision(3)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${+ms.toPrecision(3)} ms`;
}

/** A shape as the workbench writes it: "(8, 16)", "()" for a scalar. */
export function formatShape(shape: readonly number[]): string {
  return `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;
}

/** `text` cut to `limit` characters, saying how much was left out (a pass string can be 12,000). */
export function clip(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}\u2026 (${(text.length - limit).toLocaleString('en-US')} more characters)`;
}

/** The first line of `text`, clipped. */
export function firstLine(text: string, limit = 200): string {
  const nl = text.indexOf('\n');
  return clip(nl === -1 ? text : text.slice(0, nl), limit);
}
