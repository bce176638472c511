// The Graph tab's pure parts (src/components/graph.ts): neighbourhoods by hops, the compact layout of a focused
// neighbourhood, the edges drawn between its new places, and group paths cut as Python cuts them. The tab drawn from
// a real graphviz SVG, in Chromium: tests/test_browser_graph.py.
import { describe, expect, it } from 'vitest';

import { compactLayout, neighbourhood, route, splitPath } from '../src/components/graph';

const EDGES: [string, string][] = [
  ['a', 'b'],
  ['b', 'c'],
  ['c', 'd'],
  ['e', 'c'],
  ['d', 'f']
];
const hood = (start: string, k: number) => [...neighbourhood(EDGES, start, k)].sort();

describe('neighbourhood', () => {
  it('follows edges either way, k of them', () => {
    expect(hood('c', 1)).toEqual(['b', 'c', 'd', 'e']);
    expect(hood('c', 2)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(hood('f', 0)).toEqual(['f']);
  });
});

describe('compactLayout', () => {
  it("keeps graphviz's rows in order and leaves the space between them out", () => {
    const boxes = new Map([
      ['low', { x: 900, y: 5000, width: 60, height: 20 }],
      ['right', { x: 800, y: 0, width: 40, height: 20 }],
      ['left', { x: 100, y: 0, width: 40, height: 20 }],
      ['mid', { x: 300, y: 500, width: 80, height: 30 }]
    ]);
    const centres = [...compactLayout(boxes, 40, 20)].map(([name, [cx, cy]]) => [name, cx, cy]).sort();
    expect(centres).toEqual([
      ['left', -30, 10],
      ['low', 0, 140],
      ['mid', 0, 75],
      ['right', 30, 10]
    ]);
  });
});

describe('route', () => {
  it("leaves the tail's bottom (its top when the head is higher) and ends its arrowhead on the head", () => {
    const down = route([0, 0, 40, 20], [0, 100, 40, 20], 7);
    expect(down.d.startsWith('M0,10 ') && down.d.endsWith(' 0,83')).toBe(true);
    expect(down.points.startsWith('0,90 ')).toBe(true);
    const up = route([0, 100, 40, 20], [50, 0, 40, 20], 7);
    expect(up.d.startsWith('M0,90 ') && up.points.startsWith('50,10 ')).toBe(true);
  });
});

describe('splitPath', () => {
  it("cuts where Python's scopes.split_path cuts: not inside a transformation's parentheses", () => {
    expect(['', 'block_0', 'transpose(jvp(block_0/x))/attn/[1-3]'].map(splitPath)).toEqual([
      [],
      ['block_0'],
      ['transpose(jvp(block_0/x))', 'attn', '[1-3]']
    ]);
  });
});
