// The panel's stage editor (kind "editor"): stage B's module as text in a CodeMirror 6 editor with the
// workbench's MLIR / StableHLO / XLA HLO highlighting (./language) and line numbers, and Apply / Cancel. Python
// (workbench/views/widgets/editbox.py) sends the facts: the stage open (`stage`, "" when closed), its text and
// `open`, which it counts up each time it puts a text here; a failed edit's `error` (MLIR's message, the line it
// names and that line quoted). The editor's text is replaced only when `open` changes, so what the user typed
// stays through Python's updates. Back to Python as actions, each with `open`: `text` {text} when the user
// pauses typing, `apply` {text}, `cancel`. The error shows above the editor, its line marked in the editor and
// scrolled to. Facts read by [data-hwb="editor"] (data-stage), [data-hwb="edit-error"] (data-line) and
// [data-hwb="edit-line"]; the editor's root is .hwb-panel-editor.
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { EditorState, StateEffect, StateField } from '@codemirror/state';
import {
  Decoration,
  type DecorationSet,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers
} from '@codemirror/view';

import { button, h } from './dom';
import { mlir } from './language';
import type { IMounted } from './model';
import { register, type IWidgetHost } from './widget';

// quoted: "line N: <its text>" with a caret line under it, or "" where the message quotes that line
export interface IEditError {
  message: string;
  line: number | null;
  column: number | null;
  quoted: string;
}
export interface IEditor {
  open?: number;
  stage?: string;
  text?: string;
  error?: IEditError | null;
}

const TYPED_MS = 400; // the text goes to Python when the user pauses this long

/** JupyterLab's editor look (its --jp-* variables) where JupyterLab hosts the panel, plain colours elsewhere. */
const jupyterLook = EditorView.theme({
  '&': {
    border: '1px solid var(--jp-border-color1, #ccc)',
    color: 'var(--jp-content-font-color1, #222)',
    background: 'var(--jp-cell-editor-background, var(--jp-layout-color0, #fff))',
    fontSize: 'var(--jp-code-font-size, 12px)'
  },
  '&.cm-focused': { outline: '1px solid var(--jp-brand-color1, #1976d2)' },
  '.cm-scroller': {
    fontFamily: 'var(--jp-code-font-family, ui-monospace, "DejaVu Sans Mono", monospace)',
    lineHeight: 'var(--jp-code-line-height, 1.4)'
  },
  '.cm-content': { caretColor: 'var(--jp-editor-cursor-color, #000)' },
  '.cm-cursor, .cm-dropCursor': { borderLeftColor: 'var(--jp-editor-cursor-color, #000)' },
  '.cm-gutters': {
    background: 'var(--jp-cell-editor-background, var(--jp-layout-color2, #f5f5f5))',
    color: 'var(--jp-ui-font-color2, #888)',
    borderRight: '1px solid var(--jp-border-color2, #ddd)'
  },
  '.cm-activeLine': { background: 'var(--jp-cell-editor-active-background, rgba(0, 0, 0, 0.04))' },
  '.cm-activeLineGutter': { background: 'var(--jp-layout-color3, rgba(0, 0, 0, 0.06))' },
  '.cm-selectionBackground': { background: 'var(--jp-editor-selected-background, #d9d9d9)' },
  '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground': {
    background: 'var(--jp-editor-selected-focused-background, #b5d5ff)'
  },
  '.hwb-diagnostic-line': { background: 'rgba(220, 0, 0, 0.15)' }
});

const markLine = StateEffect.define<number | null>();
/** The line a failed edit's message names, marked (class hwb-diagnostic-line); null: none. */
const marked = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (e.is(markLine)) {
        const n = e.value;
        deco =
          n === null || n < 1 || n > tr.state.doc.lines
            ? Decoration.none
            : Decoration.set([Decoration.line({ class: 'hwb-diagnostic-line' }).range(tr.state.doc.line(n).from)]);
      }
    }
    return deco.map(tr.changes);
  },
  provide: f => EditorView.decorations.from(f)
});

/** Line `n` of `view` marked and scrolled to the middle of the editor's own box (the page does not move). */
export function showLine(view: EditorView, n: number | null): void {
  view.dispatch({ effects: markLine.of(n) });
  if (n === null || n < 1 || n > view.state.doc.lines) return;
  const pos = view.state.doc.line(n).from;
  view.requestMeasure({
    read: v => v.lineBlockAt(pos),
    write: (block, v) => {
      v.scrollDOM.scrollTop = Math.max(0, block.top + block.height / 2 - v.scrollDOM.clientHeight / 2);
    }
  });
}

function editor(el: HTMLElement, first: IEditor, host: IWidgetHost): IMounted {
  const root = h('div', 'hwbv hwbv-editor');
  root.dataset.hwb = 'editor';
  const head = h('div', 'hwbv-editor-head');
  const error = h('div', 'hwbv-editor-error');
  const box = h('div', 'hwbv-editor-box');
  let d: IEditor = {};
  let view: EditorView | null = null;
  let typed = 0;
  const send = (action: string, withText: boolean) => {
    window.clearTimeout(typed);
    host.act(action, { open: d.open ?? 0, ...(withText && view ? { text: view.state.doc.toString() } : {}) });
  };
  const buttons = h('div', 'hwbv-editor-buttons');
  buttons.append(
    button(
      'hwbv-editor-apply',
      'Apply',
      () => send('apply', true),
      'replace the stage by this text and run the pipeline on from it (ex.with_text)'
    ),
    button('hwbv-editor-cancel', 'Cancel', () => send('cancel', false), 'close the editor; the exploration stays')
  );
  root.append(head, error, box, buttons);
  el.append(root);

  function make(text: string): EditorView {
    return new EditorView({
      parent: box,
      state: EditorState.create({
        doc: text,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          highlightActiveLine(),
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          mlir(),
          marked,
          jupyterLook,
          EditorView.editorAttributes.of({ class: 'hwb-panel-editor' }),
          EditorView.contentAttributes.of({ 'aria-label': 'the module of the stage being edited' }),
          EditorView.updateListener.of(u => {
            if (!u.docChanged) return;
            window.clearTimeout(typed);
            typed = window.setTimeout(() => send('text', true), TYPED_MS);
          })
        ]
      })
    });
  }

  function draw(next: IEditor): void {
    const reopened = next.open !== d.open || next.stage !== d.stage;
    const shownError = d.error;
    d = next;
    root.hidden = !d.stage;
    root.dataset.stage = d.stage ?? '';
    if (!d.stage) {
      window.clearTimeout(typed);
      view?.destroy();
      view = null;
      error.replaceChildren();
      return;
    }
    head.replaceChildren(
      h('b', '', `Editing ${d.stage}`),
      ' — Apply replaces its module and runs the pipeline on from it: its later MLIR passes, then XLA.'
    );
    if (reopened || !view) {
      view?.destroy();
      view = make(d.text ?? '');
    }
    const e = d.error ?? null;
    const message = h('pre', 'hwbv-editor-message', e?.message);
    const quoted = h('pre', 'hwbv-editor-quoted', e?.quoted);
    Object.assign(message.dataset, { hwb: 'edit-error', line: String(e?.line ?? '') });
    quoted.dataset.hwb = 'edit-line';
    error.replaceChildren(...(e ? [message] : []), ...(e?.quoted ? [quoted] : []));
    if (JSON.stringify(e) !== JSON.stringify(shownError ?? null) || reopened) {
      showLine(view, e?.line ?? null);
      if (e) error.scrollIntoView?.({ block: 'nearest' });
    }
  }

  draw(first);
  return {
    update: (next: any) => draw(next),
    dispose() {
      window.clearTimeout(typed);
      view?.destroy();
      root.remove();
    }
  };
}

register('editor', editor);
