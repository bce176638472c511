// The .hlox viewer: a document widget factory, the default for double-clicking a .hlox file, that reads
// the file in the page (base64 through the contents API, unzipped and zstd-decoded by exploration.ts)
// and shows its stage list, any two stages' diff and the cost table. It starts no kernel. Its toolbar's
// "Compare with…" (comparecommand.ts) sets it beside another .hlox file.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ToolbarButton } from '@jupyterlab/apputils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, IDocumentWidget } from '@jupyterlab/docregistry';
import { Widget } from '@lumino/widgets';

import { IHloxSide } from './compare';
import { fromBase64, hloxView, IHloxFile, readHlox } from './exploration';
import { ExplorationWidget, errorNode } from './view';

export const HLOX_FILE_TYPE = 'hlox';
export const HLOX_FACTORY = 'HLO Workbench exploration';
/** "Compare with…": registered by comparecommand.ts, on each .hlox tab's toolbar from here. */
export const COMPARE_COMMAND = 'hlo-workbench:compare-hlox';

/** The document's content: waits for the file, then shows it (or why it cannot). */
export class HloxContent extends Widget {
  constructor(private readonly context: DocumentRegistry.Context) {
    super();
    this.addClass('hwb-hlox');
    this.node.textContent = 'reading the saved exploration\u2026';
    void context.ready.then(() => {
      this.load(context.model.toString());
      context.model.contentChanged.connect(() => this.load(context.model.toString()));
    });
  }

  private view: ExplorationWidget | null = null;
  private file: IHloxFile | null = null;

  /** The exploration shown (null until the file is read, or when it cannot be shown). */
  get exploration(): ExplorationWidget | null {
    return this.view;
  }

  /** The file shown, as one side of a comparison (null until it is read, or when it cannot be shown). */
  get side(): IHloxSide | null {
    return this.view && this.file ? { path: this.context.path, file: this.file, view: this.view.view } : null;
  }

  private load(base64: string): void {
    this.view?.dispose();
    this.view = null;
    this.file = null;
    this.node.textContent = '';
    try {
      const file = readHlox(fromBase64(base64));
      const view = new ExplorationWidget(hloxView(file), { height: 560 });
      this.view = view;
      this.file = file;
      Widget.attach(view, this.node);
      this.node.dataset.ready = '1';
    } catch (err) {
      this.node.append(errorNode(`This .hlox file cannot be shown: ${(err as Error).message}`));
      this.node.dataset.ready = 'error';
    }
  }

  dispose(): void {
    this.view?.dispose();
    super.dispose();
  }
}

class HloxFactory extends ABCWidgetFactory<IDocumentWidget<HloxContent>> {
  constructor(options: DocumentRegistry.IWidgetFactoryOptions<IDocumentWidget<HloxContent>>,
    private readonly commands: JupyterFrontEnd['commands']) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): IDocumentWidget<HloxContent> {
    const widget = new DocumentWidget({ content: new HloxContent(context), context });
    widget.addClass('hwb-hlox-document');
    widget.title.iconClass = 'jp-MaterialIcon jp-FileIcon';
    widget.title.className = 'hwb-hlox-tab';  // the tab's context menu offers "Compare with…" on it
    // the button names its own tab: a click on another tab's toolbar compares that tab's file
    widget.toolbar.addItem('hwb-compare', new ToolbarButton({
      className: 'hwb-compare-button',
      label: 'Compare with\u2026',
      tooltip: 'Compare this saved exploration with another .hlox file',
      onClick: () => void this.commands.execute(COMPARE_COMMAND, { id: widget.id })
    }));
    return widget;
  }
}

export const hloxViewer: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:hlox-viewer',
  description: 'Opens saved explorations (.hlox) in a tab of their own: stage list, diff and cost, no kernel.',
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
    app.docRegistry.addWidgetFactory(new HloxFactory({
      name: HLOX_FACTORY,
      label: 'HLO Workbench exploration',
      modelName: 'base64',
      fileTypes: [HLOX_FILE_TYPE],
      defaultFor: [HLOX_FILE_TYPE],
      readOnly: true,
      preferKernel: false,
      canStartKernel: false
    }, app.commands));
  }
};
