// The .hlox viewer: a document widget factory, the default for double-clicking a .hlox file, that asks the
// workbench's Jupyter server extension for the file's view model (Python reads the file: server.ts) and
// draws it with the view components' `mount`; a pair the model does not carry is Python's diff, asked the
// same way. The page never fetches the file itself (its model factory asks the contents API for no content),
// and it starts no kernel. Its toolbar's "Compare with…" (comparecommand.ts) sets it beside another
// .hlox file.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ToolbarButton } from '@jupyterlab/apputils';
import {
  ABCWidgetFactory,
  Base64ModelFactory,
  DocumentRegistry,
  DocumentWidget,
  IDocumentWidget
} from '@jupyterlab/docregistry';
import { Widget } from '@lumino/widgets';

import { IMounted, IViewModel, mount } from './components';
import { diffOf, viewOf } from './server';
import { errorNode } from './view';

export const HLOX_FILE_TYPE = 'hlox';
export const HLOX_FACTORY = 'HLO Workbench exploration';
/** "Compare with…": registered by comparecommand.ts, on each .hlox tab's toolbar from here. */
export const COMPARE_COMMAND = 'hlo-workbench:compare-hlox';
/** The document model of a .hlox tab: the file's metadata only, its content left on the server. */
export const HLOX_MODEL = 'hlo-workbench-path';

class PathModelFactory extends Base64ModelFactory {
  get name(): string {
    return HLOX_MODEL;
  }
  get fileFormat(): null {
    return null;
  }
}

/** The document's content: asks for the file's view model once the file is there, then draws it (or says
 * why it cannot). */
export class HloxContent extends Widget {
  constructor(private readonly context: DocumentRegistry.Context) {
    super();
    this.addClass('hwb-hlox');
    this.node.textContent = 'reading the saved exploration\u2026';
    let modified = '';
    void context.ready.then(() => {
      modified = context.contentsModel?.last_modified ?? '';
      void this.load();
      // File > Reload from Disk, or the file saved anew: the server's model of the new file
      context.fileChanged.connect((_, file) => {
        if (file.last_modified && file.last_modified !== modified) {
          modified = file.last_modified;
          void this.load();
        }
      });
    });
  }

  /** The view model shown (null until it came, or when the file cannot be shown). */
  model: IViewModel | null = null;
  /** The pair shown now: the model's, or the one the user picked since. */
  pair: [string, string] = ['', ''];
  private mounted: IMounted | null = null;
  private asked = 0;

  /** The file's path, as the contents API names it. */
  get path(): string {
    return this.context.path;
  }

  private async load(): Promise<void> {
    const ticket = ++this.asked;
    const model = await viewOf(this.path).catch((err: Error) => err);
    if (ticket !== this.asked || this.isDisposed) return; // a newer load, or the tab closed
    this.clear();
    if (model instanceof Error) {
      this.node.append(errorNode(`This .hlox file cannot be shown: ${model.message}`));
      this.node.dataset.ready = 'error';
      return;
    }
    this.model = model;
    this.pair = [model.shown.left, model.shown.right];
    const path = this.path;
    this.mounted = mount(this.node, model, {
      diff: (left, right) => diffOf(path, left, right),
      act: (action, payload) => {
        if (action === 'pair') this.pair = [String(payload.left), String(payload.right)];
      }
    });
    this.node.dataset.ready = '1';
  }

  private clear(): void {
    this.mounted?.dispose();
    this.mounted = null;
    this.model = null;
    this.node.textContent = '';
    delete this.node.dataset.ready;
  }

  dispose(): void {
    this.clear();
    super.dispose();
  }
}

class HloxFactory extends ABCWidgetFactory<IDocumentWidget<HloxContent>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<IDocumentWidget<HloxContent>>,
    private readonly commands: JupyterFrontEnd['commands']
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): IDocumentWidget<HloxContent> {
    const widget = new DocumentWidget({ content: new HloxContent(context), context });
    widget.addClass('hwb-hlox-document');
    widget.title.iconClass = 'jp-MaterialIcon jp-FileIcon';
    widget.title.className = 'hwb-hlox-tab'; // the tab's context menu offers "Compare with…" on it
    // the button names its own tab: a click on another tab's toolbar compares that tab's file
    widget.toolbar.addItem(
      'hwb-compare',
      new ToolbarButton({
        className: 'hwb-compare-button',
        label: 'Compare with\u2026',
        tooltip: 'Compare this saved exploration with another .hlox file',
        onClick: () => void this.commands.execute(COMPARE_COMMAND, { id: widget.id })
      })
    );
    return widget;
  }
}

export const hloxViewer: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:hlox-viewer',
  description: 'Opens saved explorations (.hlox) in a tab of their own, as the workbench reads them, no kernel.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    app.docRegistry.addFileType({
      name: HLOX_FILE_TYPE,
      displayName: 'HLO Workbench exploration',
      extensions: ['.hlox'],
      mimeTypes: ['application/x-hlo-workbench-exploration'],
      fileFormat: 'base64',
      contentType: 'file'
    });
    app.docRegistry.addModelFactory(new PathModelFactory());
    app.docRegistry.addWidgetFactory(
      new HloxFactory(
        {
          name: HLOX_FACTORY,
          label: 'HLO Workbench exploration',
          modelName: HLOX_MODEL,
          fileTypes: [HLOX_FILE_TYPE],
          defaultFor: [HLOX_FILE_TYPE],
          readOnly: true,
          preferKernel: false,
          canStartKernel: false
        },
        app.commands
      )
    );
  }
};
