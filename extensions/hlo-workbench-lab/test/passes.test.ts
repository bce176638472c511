// The Passes tab's pure part (src/components/passes.ts): what a click on a group's box switches.
// The tab drawn in the panel, in Chromium: tests/test_browser.py.
import { describe, expect, it } from 'vitest';

import { groupClick, type Toggle } from '../src/components/passes';

const ITEMS: Toggle[] = [
  ['a', 'g', true],
  ['b', 'g', false],
  ['c', 'g', true],
  ['x', 'h', true]
];

describe('groupClick', () => {
  it('switches a group with every switch off on, and a mixed or full one off', () => {
    expect(groupClick(ITEMS, new Set(['x']), 'g')).toEqual({ names: ['a', 'b', 'c'], on: true });
    expect(groupClick(ITEMS, new Set(['a', 'x']), 'g')).toEqual({ names: ['a'], on: false });
    expect(groupClick(ITEMS, new Set(['a', 'b', 'c']), 'g')).toEqual({ names: ['a', 'b', 'c'], on: false });
    expect(groupClick(ITEMS, new Set(), 'none')).toEqual({ names: [], on: true });
  });
});
