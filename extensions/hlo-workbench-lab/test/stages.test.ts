// The stage list's pure part (src/components/stages.ts): what "hide unchanged" keeps.
// The list drawn in the panel, in Chromium: tests/test_browser.py.
import { describe, expect, it } from 'vitest';

import { kept } from '../src/components/stages';
import type { IStage } from '../src/components';

const stage = (name: string, changed: boolean, error = ''): IStage => ({
  stage: name,
  group: 'mlir',
  changed,
  lines: 3,
  ms: 1,
  cached: false,
  error,
  produced_by: name,
  parent: null,
  edit: ''
});

describe('kept', () => {
  it('keeps the stages that changed the module or failed, and the pair shown', () => {
    const pair = ['a', 'b'];
    expect(kept(stage('c', true), pair)).toBe(true);
    expect(kept(stage('d', false, 'boom'), pair)).toBe(true);
    expect(kept(stage('a', false), pair)).toBe(true);
    expect(kept(stage('e', false), pair)).toBe(false);
  });
});
