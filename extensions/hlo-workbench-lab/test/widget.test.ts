// The panel's anywidget entry (src/components/widget.ts): a component gets its data with the blobs Python sent
// apart ({$blob: key} -> the text) in place, at first and on each change of `data`. Python's side, and what it sends:
// tests/test_component_blobs.py.
import { describe, expect, it } from 'vitest';

import { register, render, resolve } from '../src/components/widget';

describe('resolve', () => {
  it('puts each blob back where data refers to it, and leaves the rest as it is', () => {
    const blobs = { k1: 'module @a {}', k2: '<svg/>' };
    const data = { diff: { before: { $blob: 'k1' }, runs: [[0, 1]] }, svgs: [{ $blob: 'k2' }], n: 3, none: null };
    expect(resolve(data, blobs)).toEqual({
      diff: { before: 'module @a {}', runs: [[0, 1]] },
      svgs: ['<svg/>'],
      n: 3,
      none: null
    });
    expect(resolve({ text: { $blob: 'gone' } }, blobs)).toEqual({ text: '' });
    expect(resolve({ x: { $blob: 'k1', other: 1 } }, blobs)).toEqual({ x: { $blob: 'k1', other: 1 } });
  });
});

describe('render', () => {
  it('draws the data with its blobs, and updates on a change of data', () => {
    const seen: unknown[] = [];
    register('blob-test', (_el, data) => {
      seen.push(data);
      return { update: next => seen.push(next), dispose: () => {} };
    });
    const attrs: Record<string, any> = { kind: 'blob-test', data: { text: { $blob: 'a' }, n: 1 }, blobs: { a: 'A' } };
    const handlers = new Map<string, (...args: any[]) => void>();
    const model = {
      get: (name: string) => attrs[name],
      on: (event: string, f: (...args: any[]) => void) => handlers.set(event, f),
      off: (event?: string | null) => event && handlers.delete(event),
      send: () => {}
    };
    const dispose = render({ model, el: {} as HTMLElement });
    attrs.data = { text: { $blob: 'a' }, n: 2 };
    handlers.get('change:data')!();
    [attrs.blobs, attrs.data] = [{ b: 'B' }, { text: { $blob: 'b' }, n: 3 }];
    handlers.get('change:data')!();
    expect(seen).toEqual([
      { text: 'A', n: 1 },
      { text: 'A', n: 2 },
      { text: 'B', n: 3 }
    ]);
    dispose();
    expect(handlers.has('change:data')).toBe(false);
  });
});
