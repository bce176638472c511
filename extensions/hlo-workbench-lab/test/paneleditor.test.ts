// The panel's stage editor as CodeMirror (src/paneleditor.ts): the line MLIR's diagnostic names is read from
// the runner's message, as the panel shows it.
import { describe, expect, it } from 'vitest';

import { diagnosticLine } from '../src/paneleditor';

describe("the line of an edit's diagnostic", () => {
  it("reads the runner's message", () => {
    const said = "the text does not parse as MLIR:\n  6:33: error: use of value '%cst' expects different type\n" +
      '  line 6:\n        %4 = stablehlo.multiply %1, %cst : tensor<4x8xf32>\n';
    expect(diagnosticLine(said)).toBe(6);
  });
  it('reads a bare MLIR diagnostic', () => {
    expect(diagnosticLine('  12:5: error: expected SSA operand')).toBe(12);
  });
  it('names no line where the message has none', () => {
    expect(diagnosticLine('the pipeline could not run')).toBeNull();
  });
});
