// "Compare with…": on a .hlox tab (its toolbar, its tab's and its page's context menus, the command
// palette), asks for another .hlox file in JupyterLab's file dialog, asks the workbench's Jupyter server
// extension to compare the two in Python (server.ts), and opens the comparison it answers, drawn by
// components/compare.ts, in a tab beside it. A file that cannot be read is refused in the server's words;
// the tab compared from is left as it is.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { FileDialog } from '@jupyterlab/filebrowser';
import { Widget } from '@lumino/widgets';

import { IComparisonModel, mountComparison } from './components/compare';
import { COMPARE_COMMAND, HloxContent } from './hlox';
import { compareOf, diffAcross, diffOf } from './server';
import { ComponentView, errorNode } from './view';

const TITLE = 'Compare with\u2026';
let opened = 0;

type HloxDocument = DocumentWidget<HloxContent>;

function isHlox(w: Widget | null | undefined): w is HloxDocument {
  return w instanceof DocumentWidget && w.content instanceof HloxContent;
}

/** The .hlox tab the command acts on: the one named by `id` (its toolbar's button), the one right-clicked
 * (`from: "context"`, from the context menus), else the current one (the command palette). */
function target(app: JupyterFrontEnd, args: { readonly [key: string]: unknown }): HloxDocument | null {
  let id = typeof args.id === 'string' ? args.id : '';
  if (!id && args.from === 'context') {
    const node = app.contextMenuHitTest(
      n => n.classList.contains('hwb-hlox-tab') || n.classList.contains('hwb-hlox-document')
    );
    id = (node?.classList.contains('hwb-hlox-tab') ? node.dataset.id : node?.id) ?? '';
  }
  const w = id ? [...app.shell.widgets('main')].find(x => x.id === id) : app.shell.currentWidget;
  return isHlox(w) ? w : null;
}

/** The reason, in the dialog the viewer's error words are shown in. */
async function refuse(message: string): Promise<void> {
  const body = new Widget();
  body.addClass('hwb-compare-refused');
  body.node.append(errorNode(message));
  await showDialog({ title: TITLE, body, buttons: [Dialog.okButton()] });
}

async function compareWith(app: JupyterFrontEnd, docs: IDocumentManager, tab: HloxDocument | null): Promise<void> {
  const a = tab?.content.model ? tab.content.path : null;
  if (!tab || !a) {
    await refuse(
      tab
        ? "This tab's file is not shown (it could not be read): there is nothing to compare."
        : 'Open a saved exploration (.hlox) first: "Compare with\u2026" compares its tab with another file.'
    );
    return;
  }
  const picked = await FileDialog.getOpenFiles({
    manager: docs,
    title: TITLE,
    label: `Compare ${PathExt.basename(a)} (A) with the saved exploration (B):`,
    defaultPath: PathExt.dirname(a),
    filter: m => (m.type === 'directory' || m.name.endsWith('.hlox') ? {} : null)
  });
  if (!picked.button.accept) return;
  const file = (picked.value ?? []).find(m => m.type !== 'directory');
  if (!file) {
    await refuse('No file was picked: select a .hlox file in the dialog, then Select.');
    return;
  }
  const b = file.path;
  let model: IComparisonModel;
  try {
    model = await compareOf(a, b);
  } catch (err) {
    await refuse(`Cannot compare them: ${(err as Error).message}`);
    return;
  }
  // the comparison's views ask the server for the diffs they do not carry
  const content = new ComponentView('hwb-compare', node =>
    mountComparison(node, model, {
      across: (left, right) => diffAcross(a, left, b, right),
      side: k => ({ diff: (left, right) => diffOf(model.paths[k], left, right) })
    })
  );
  const widget = new MainAreaWidget({ content });
  widget.id = `hwb-compare-${++opened}`;
  widget.addClass('hwb-compare-document');
  widget.title.label = `${PathExt.basename(a)} \u21c4 ${PathExt.basename(b)}`;
  widget.title.caption = `A: ${a}\nB: ${b}`;
  widget.title.closable = true;
  app.shell.add(widget, 'main', { mode: 'tab-after', ref: tab.id });
  app.shell.activateById(widget.id);
}

export const hloxCompare: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:hlox-compare',
  description: 'Compare with\u2026: a saved exploration beside another, with what differs between them.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, docs: IDocumentManager, palette: ICommandPalette | null) => {
    app.commands.addCommand(COMPARE_COMMAND, {
      label: TITLE,
      caption:
        'Compare this saved exploration (.hlox) with another: stages aligned by name, the first that ' +
        "differs, costs, versions, settings and the final modules' diff",
      isEnabled: args => target(app, args)?.content.model != null,
      execute: args => compareWith(app, docs, target(app, args))
    });
    palette?.addItem({ command: COMPARE_COMMAND, category: 'hlo-workbench' });
  }
};
