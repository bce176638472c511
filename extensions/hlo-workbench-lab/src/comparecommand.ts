// "Compare with…": on a .hlox tab (its toolbar, its tab's and its page's context menus, the command
// palette), asks for another .hlox file in JupyterLab's file dialog, reads it through the contents API
// as the viewer reads its own file, and opens the comparison (compareview.ts) in a tab beside it.
// A file that cannot be read is refused in words; the tab compared from is left as it is.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { FileDialog } from '@jupyterlab/filebrowser';
import { Widget } from '@lumino/widgets';

import { IHloxSide, compareHlox } from './compare';
import { ComparisonWidget } from './compareview';
import { fromBase64, hloxView, readHlox } from './exploration';
import { COMPARE_COMMAND, HloxContent } from './hlox';
import { errorNode } from './view';

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
    const node = app.contextMenuHitTest(n => n.classList.contains('hwb-hlox-tab') ||
      n.classList.contains('hwb-hlox-document'));
    id = (node?.classList.contains('hwb-hlox-tab') ? node.dataset.id : node?.id) ?? '';
  }
  if (!id) return isHlox(app.shell.currentWidget) ? app.shell.currentWidget : null;
  for (const w of app.shell.widgets('main')) {
    if (w.id === id) return isHlox(w) ? w : null;
  }
  return null;
}

/** The reason, in the dialog the viewer's error words are shown in. */
async function refuse(message: string): Promise<void> {
  const body = new Widget();
  body.addClass('hwb-compare-refused');
  body.node.append(errorNode(message));
  await showDialog({ title: TITLE, body, buttons: [Dialog.okButton()] });
}

/** A .hlox file, read through the contents API as the document's context reads the viewer's own. */
async function readSide(app: JupyterFrontEnd, path: string): Promise<IHloxSide> {
  const model = await app.serviceManager.contents.get(path, { type: 'file', format: 'base64', content: true });
  if (typeof model.content !== 'string') throw new Error('the server sent no content for it');
  const file = readHlox(fromBase64(model.content));
  return { path, file, view: hloxView(file) };
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

async function compareWith(app: JupyterFrontEnd, docs: IDocumentManager, tab: HloxDocument | null): Promise<void> {
  const a = tab?.content.side;
  if (!tab || !a) {
    await refuse(tab ? 'This tab\'s file is not shown (it could not be read): there is nothing to compare.'
      : 'Open a saved exploration (.hlox) first: "Compare with\u2026" compares its tab with another file.');
    return;
  }
  const picked = await FileDialog.getOpenFiles({
    manager: docs,
    title: TITLE,
    label: `Compare ${basename(a.path)} (A) with the saved exploration (B):`,
    defaultPath: a.path.includes('/') ? a.path.slice(0, a.path.lastIndexOf('/')) : '',
    filter: m => (m.type === 'directory' || m.name.endsWith('.hlox') ? {} : null)
  });
  if (!picked.button.accept) return;
  const file = (picked.value ?? []).find(m => m.type !== 'directory');
  if (!file) {
    await refuse('No file was picked: select a .hlox file in the dialog, then Select.');
    return;
  }
  let b: IHloxSide;
  try {
    b = await readSide(app, file.path);
  } catch (err) {
    await refuse(`${file.path} cannot be compared: ${(err as Error).message}`);
    return;
  }
  const content = new ComparisonWidget(compareHlox(a, b));
  const widget = new MainAreaWidget({ content });
  widget.id = `hwb-compare-${++opened}`;
  widget.addClass('hwb-compare-document');
  widget.title.label = `${basename(a.path)} \u21c4 ${basename(b.path)}`;
  widget.title.caption = `A: ${a.path}\nB: ${b.path}`;
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
      caption: 'Compare this saved exploration (.hlox) with another: stages aligned by name, the first that ' +
        'differs, costs, versions, settings and the final modules\' diff',
      isEnabled: args => target(app, args)?.content.side != null,
      execute: args => compareWith(app, docs, target(app, args))
    });
    palette?.addItem({ command: COMPARE_COMMAND, category: 'hlo-workbench' });
  }
};
