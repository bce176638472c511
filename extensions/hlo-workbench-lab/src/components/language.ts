// The CodeMirror 6 language for MLIR, StableHLO and XLA HLO text: one copy for the extension (.mlir/.hlo
// files, %%mlir cells, a stage opened as a document) and the panel's stage editor (./editor.ts, in views.js).
// Its tokenizer is the diff view's (workbench/assets/diffview.js: one copy for the panel, the offline report
// and this extension), run a line at a time inside a StreamLanguage. Each token class `c` gets its own highlighting tag (next to
// the standard tag of the same meaning, which any CodeMirror theme colours) and the CSS class `h-c`,
// which diffview.css colours: the editor, the panel and the report look the same.
import {
  HighlightStyle,
  LanguageSupport,
  StreamLanguage,
  StreamParser,
  StringStream,
  syntaxHighlighting
} from '@codemirror/language';
import { Tag, tags as t } from '@lezer/highlight';

import { TOKEN_CLASSES, tokenize } from '../../../../workbench/assets/diffview.js';

/** The standard tag of each token class's meaning, which any CodeMirror theme colours. */
const STANDARD: Record<string, Tag> = {
  com: t.lineComment,
  str: t.string,
  loc: t.annotation,
  ssa: t.special(t.variableName),
  sym: t.definition(t.name),
  type: t.standard(t.typeName),
  attr: t.attributeName,
  op: t.keyword,
  kw: t.keyword,
  num: t.number
};

/** One highlighting tag of its own per token class of the shared tokenizer. (Tag.define() without a
 * name: @lezer/highlight before 1.2, which Notebook 7 shares, reads a first argument as a parent tag.) */
export const TOKEN_TAGS: Readonly<Record<string, Tag>> = Object.freeze(
  Object.fromEntries(TOKEN_CLASSES.map(cls => [cls, Tag.define()]))
);

/** The stream parser's name for a token class: prefixed, since StreamLanguage reads some plain names
 * ("type", "def", ...) as CodeMirror 5 style names before it looks at the token table. */
const tokenName = (cls: string): string => `hlo-${cls}`;

/** A token of class `cls` carries its own tag and the standard one. */
const TOKEN_TABLE: Record<string, readonly Tag[]> = Object.fromEntries(
  TOKEN_CLASSES.map(cls => {
    const standard = STANDARD[cls];
    if (!standard) {
      throw new Error(`hlo-workbench: token class ${cls} has no standard tag`);
    }
    return [tokenName(cls), [TOKEN_TAGS[cls], standard]];
  })
);

/** The CSS class of a token class: the diff view's (diffview.css). */
export const cssClass = (cls: string): string => `h-${cls}`;

/** Token tag -> CSS class; only tokens of this language get these classes. */
export const tokenClasses = HighlightStyle.define(
  TOKEN_CLASSES.map(cls => ({ tag: TOKEN_TAGS[cls], class: cssClass(cls) }))
);

/** A line's tokens as [start, end, class] spans, for the line last asked about. */
type Span = [number, number, string];
let lastLine: string | null = null;
let lastSpans: Span[] = [];

export function spans(line: string): Span[] {
  if (line !== lastLine) {
    let pos = 0;
    lastSpans = tokenize(line).map(([text, cls]) => {
      const span: Span = [pos, pos + text.length, cls];
      pos += text.length;
      return span;
    });
    lastLine = line;
  }
  return lastSpans;
}

/** The token at the stream's position: advance past it and return its class (null: plain text). */
function token(stream: StringStream): string | null {
  const line = spans(stream.string);
  let lo = 0;
  let hi = line.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [start, end, cls] = line[mid];
    if (end <= stream.pos) {
      lo = mid + 1;
    } else if (start > stream.pos) {
      hi = mid - 1;
    } else {
      stream.pos = end;
      return cls ? tokenName(cls) : null;
    }
  }
  stream.next(); // not reached: the tokens cover the line
  return null;
}

export const parser: StreamParser<null> = {
  name: 'mlir',
  startState: () => null,
  token,
  tokenTable: TOKEN_TABLE,
  languageData: { commentTokens: { line: '//' } }
};

export const mlirLanguage = StreamLanguage.define(parser);

/** The language with its token classes, as JupyterLab's editor language registry loads it. */
export function mlir(): LanguageSupport {
  return new LanguageSupport(mlirLanguage, [syntaxHighlighting(tokenClasses)]);
}
