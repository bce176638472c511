// The panel's stage editor (workbench/views/widgets/editbox.py) is an ipywidgets text area, so that it works
// wherever the panel does. Where this extension is installed, each such text area (`.wb-editor textarea`) is
// shown as a CodeMirror editor with the extension's MLIR language and line numbers instead: the text area
// stays in the page, hidden, and holds the text -- each edit is written into it with an `input` event, as
// typing would, so the widget's model (and Python) has it; a text the kernel puts there (another stage
// opened) is read back into the editor. The line MLIR's diagnostic names (`line N:` in the editor's error
// area, `.wb-edit-error`) is marked.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { EditorState, StateEffect, StateField } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, lineNumbers } from '@codemirror/view';

import { mlir } from './language';

const ENHANCED = 'hwbEditor';
const READ_BACK_MS = 250;

/** The line a diagnostic names: MLIR's `line N:` (the runner's message), 1-based; null when none. */
export function diagnosticLine(message: string): number | null {
  const m = /\bline (\d+):/.exec(message) ?? /^\s*(\d+):\d+: error/m.exec(message);
  return m ? Number(m[1]) : null;
}

const markLine = StateEffect.define<number | null>();
const marked = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (e.is(markLine)) {
        const n = e.value;
        deco = n === null || n < 1 || n > tr.state.doc.lines ? Decoration.none
          : Decoration.set([Decoration.line({ class: 'hwb-diagnostic-line' }).range(tr.state.doc.line(n).from)]);
      }
    }
    return deco.map(tr.changes);
  },
  provide: f => EditorView.decorations.from(f)
});

/** Show `area` as a CodeMirror editor kept in step with it; returns the editor. */
export function enhance(area: HTMLTextAreaElement): EditorView {
  area.dataset[ENHANCED] = '1';
  let synced = area.value;
  const view = new EditorView({
    state: EditorState.create({
      doc: area.value,
      extensions: [
        lineNumbers(), mlir(), marked,
        EditorView.editorAttributes.of({ class: 'hwb-panel-editor' }),  // CodeMirror owns its root's classes
        EditorView.updateListener.of(update => {
          if (!update.docChanged) return;
          synced = area.value = update.state.doc.toString();
          area.dispatchEvent(new Event('input', { bubbles: true }));
        })
      ]
    })
  });
  area.style.display = 'none';
  area.insertAdjacentElement('afterend', view.dom);
  const errors = () => area.closest('.wb-editor')?.parentElement?.querySelector('.wb-edit-error');
  let shownError = '';
  const timer = window.setInterval(() => {
    if (!view.dom.isConnected) {
      window.clearInterval(timer);
      view.destroy();
      return;
    }
    if (area.value !== synced) {  // the kernel put another text there
      synced = area.value;
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: synced } });
    }
    const error = errors()?.textContent ?? '';
    if (error !== shownError) {
      shownError = error;
      view.dispatch({ effects: markLine.of(error ? diagnosticLine(error) : null) });
    }
  }, READ_BACK_MS);
  return view;
}

/** Every `.wb-editor textarea` under `root` that is shown (its editor opened) and not yet an editor: a panel's
 * closed editor stays a hidden text area, so a notebook holds no editor that nobody opened. */
export function enhanceAll(root: ParentNode): number {
  let n = 0;
  root.querySelectorAll<HTMLTextAreaElement>('.wb-editor textarea').forEach(area => {
    if (!area.dataset[ENHANCED] && area.getClientRects().length > 0) {
      enhance(area);
      n++;
    }
  });
  return n;
}

export const panelEditors: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:panel-editors',
  description: "Shows the panel's stage editor as a CodeMirror editor with MLIR highlighting.",
  autoStart: true,
  activate: (_app: JupyterFrontEnd) => {
    // a new text area, or one shown (the panel's editor opened: its box's style changes)
    const observer = new MutationObserver(() => enhanceAll(document.body));
    observer.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['style'] });
    enhanceAll(document.body);
  }
};
