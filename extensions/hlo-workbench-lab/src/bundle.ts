// The kernel-free renderer of the `application/vnd.hlo-workbench.exploration+json` bundle that a %%hlo
// output carries next to the live panel's widget view (`application/vnd.jupyter.widget-view+json`).
//
// Which one shows: JupyterLab renders an output with the factory of lowest rank among its MIME types.
// @jupyter-widgets/jupyterlab-manager (8.x) registers its WidgetRenderer at rank -10, per notebook,
// once the notebook's widget manager exists; that renderer says "Error displaying widget: model not
// found" when the manager (restored from the kernel, or from the notebook's saved widget state) has no
// model of that id. This renderer ranks -20, so it gets the output first, and then:
//  - the output is trusted and the notebook's widget manager has the model (a live kernel made it, or
//    it was restored): it renders the notebook's own WidgetRenderer, i.e. the live panel;
//  - otherwise (no kernel, a kernel that does not know the panel, no widget state saved): the saved view
//    (the view model the bundle is, drawn by the view components' `mount`), and if the manager restores
//    the model later (a reconnected kernel), the live panel replaces it.
// The manager is read from the notebook's WidgetRenderer (its manager promise) and asked has_model(id),
// the public API of @jupyter-widgets/base-manager. Without that promise (another widgets version) the
// WidgetRenderer is rendered off the page and its outcome read: anything but "model not found" shows.
//
// While the panel lives, the kernel sends the output again (update_display) after each change of what the
// panel shows, with the newest view model (workbench/views/widgets/savedview.py). JupyterLab then calls
// renderModel again on this same renderer: the live panel stays as it is (its search boxes, folds and
// scroll), only the data kept for the saved view changes. The kernel sends those updates once told that a
// renderer keeps the live panel through them (a message on the panel's widget, KEEPS_LIVE). When the
// notebook's kernel restarts, dies or is shut down, the live panel's widgets are dead: the saved view of the
// newest model replaces them (data-kernel="gone"), and stays until the cell is run again.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { IViewModel, mount } from './components';
import { BUNDLE_MIME, WIDGET_MIME } from './mime';
import { ComponentView, errorNode } from './view';

export const RANK = -20; // below the widget renderer's -10
/** What the renderer tells the panel's widget once it shows it live (savedview.py's HOST_MESSAGE). */
export const KEEPS_LIVE = 'hwb-keeps-live';
/** The kernel states after which the live panel's widgets are dead. */
const GONE = new Set(['restarting', 'autorestarting', 'dead', 'terminating']);

const sleep = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms));
/** `p`'s value, or null if it takes longer than `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  return Promise.race([p, sleep(ms).then(() => null)]);
}

interface IWidgetModelLike {
  comm_live?: boolean;
  send?(content: unknown): void;
}

interface IWidgetManagerLike {
  has_model(id: string): boolean;
  get_model?(id: string): Promise<IWidgetModelLike> | undefined;
  restored?: ISignalLike<unknown>;
}

interface ISessionLike {
  statusChanged: ISignalLike<string>;
  kernelChanged: ISignalLike<unknown>;
}

interface ISignalLike<T> {
  connect(f: (sender: unknown, args: T) => void, thisArg?: unknown): boolean;
  disconnect(f: (sender: unknown, args: T) => void, thisArg?: unknown): boolean;
}

export class BundleRenderer extends Panel implements IRenderMime.IRenderer {
  private options: IRenderMime.IRendererOptions;
  private shown: 'none' | 'saved' | 'live' = 'none';
  private unwatch: (() => void) | null = null;
  private latest: IRenderMime.IMimeModel | null = null; // the newest bundle of the output
  private liveId = ''; // the widget model the live panel shows
  private rendering: Promise<void> | null = null; // the first render, while it runs
  private kernelGone = false; // the kernel of the live panel restarted, died or was shut down
  private session: ISessionLike | null = null; // the notebook's session context, followed while live

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.options = options;
    this.addClass('hwb-bundle');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.latest = model;
    const id = String((model.data[WIDGET_MIME] as any)?.model_id ?? '');
    if (this.kernelGone) return this.showSaved(model);
    if (this.shown === 'live' && id === this.liveId) return; // an update: the live panel stays, untouched
    if (this.rendering) return this.rendering; // an update during the first render: it keeps the newest data
    this.rendering = this.render(model, id);
    try {
      await this.rendering;
    } finally {
      this.rendering = null;
    }
  }

  private async render(model: IRenderMime.IMimeModel, id: string): Promise<void> {
    this.unwatch?.();
    this.unwatch = null;
    const rendermime = id && model.trusted ? await this.rendermime() : null;
    if (rendermime && (await this.tryLive(rendermime, id, model, 400))) return;
    this.showSaved(model);
    if (rendermime) void this.watch(rendermime, id, model);
  }

  dispose(): void {
    this.unwatch?.();
    this.session?.statusChanged.disconnect(this.onStatus, this);
    this.session?.kernelChanged.disconnect(this.onKernelGone, this);
    this.session = null;
    super.dispose();
  }

  /** The first value `pick` finds on this renderer's ancestors. */
  private ancestors<T>(pick: (w: any) => T | undefined): T | undefined {
    for (let w: Widget | null = this.parent; w; w = w.parent) {
      const found = pick(w);
      if (found) return found;
    }
  }

  /** The registry of the output area this renderer sits in (the notebook's: it has the widget renderer
   * bound to the notebook's widget manager). */
  private async rendermime(): Promise<IRenderMimeRegistry | null> {
    for (let k = 0; k < 200 && !this.isDisposed; k++) {
      const rm = this.ancestors(w => (typeof w.rendermime?.getFactory === 'function' ? w.rendermime : undefined));
      if (rm) return rm as IRenderMimeRegistry;
      if (this.parent && this.isAttached) return null; // in the page, in no output area
      await sleep(k < 20 ? 0 : 50);
    }
    return null;
  }

  /** The widget renderer of `rendermime` and its manager (null: not bound to a manager yet; undefined:
   * the renderer has no manager promise to read). */
  private async managed(rendermime: IRenderMimeRegistry, wait: number) {
    const factory = rendermime.getFactory(WIDGET_MIME);
    if (!factory) return null;
    const renderer = factory.createRenderer({ ...this.options, mimeType: WIDGET_MIME }) as IRenderMime.IRenderer;
    const promise = (renderer as any)._manager?.promise as Promise<IWidgetManagerLike> | undefined;
    const manager = promise ? await within(promise, wait) : undefined;
    return { renderer, manager };
  }

  /** Shows the live panel if the notebook's widget manager has model `id`; whether it did. */
  private async tryLive(
    rendermime: IRenderMimeRegistry,
    id: string,
    model: IRenderMime.IMimeModel,
    wait: number
  ): Promise<boolean> {
    const got = await this.managed(rendermime, wait);
    if (!got) return false;
    const { renderer, manager } = got;
    if (manager === undefined) {
      // no manager promise to ask: render it off the page and read what it says
      await renderer.renderModel(model);
      if (this.isDisposed || /model not found|Loading widget/.test(renderer.node.textContent ?? '')) {
        renderer.dispose();
        return false;
      }
      this.showLive(renderer, id);
      return true;
    }
    if (!manager || typeof manager.has_model !== 'function' || !manager.has_model(id)) {
      renderer.dispose();
      return false;
    }
    const widget = await manager.get_model?.(id)?.catch(() => undefined);
    if (this.isDisposed || this.kernelGone || widget?.comm_live === false) {
      renderer.dispose(); // a model whose kernel is gone (restarted; restored from the notebook): dead widgets
      return false;
    }
    this.showLive(renderer, id);
    await renderer.renderModel(model);
    widget?.send?.({ type: KEEPS_LIVE }); // the kernel may now send the output again as the panel changes
    return true;
  }

  /** After the saved view: the live panel when the widget manager comes to have the model (a notebook
   * whose manager was not ready yet, a kernel whose widgets are restored). */
  private async watch(rendermime: IRenderMimeRegistry, id: string, model: IRenderMime.IMimeModel): Promise<void> {
    let stop = false;
    this.unwatch = () => {
      stop = true;
    };
    for (let k = 0; k < 120 && !stop && !this.isDisposed; k++) {
      const got = await this.managed(rendermime, 1000);
      if (stop || this.isDisposed || this.kernelGone || !got) return;
      const { renderer, manager } = got;
      renderer.dispose();
      if (manager === undefined) return; // cannot tell: the saved view stays
      if (manager && typeof manager.has_model === 'function') {
        if (manager.has_model(id)) {
          await this.tryLive(rendermime, id, model, 1000);
          return;
        }
        const restored = manager.restored;
        if (!restored) return;
        const check = () => {
          if (manager.has_model(id)) {
            restored.disconnect(check);
            void this.tryLive(rendermime, id, model, 1000);
          }
        };
        restored.connect(check);
        this.unwatch = () => restored.disconnect(check);
        return;
      }
      await sleep(500);
    }
  }

  private clear(): void {
    for (const w of [...this.widgets]) w.dispose();
    this.node.textContent = '';
  }

  private showLive(renderer: IRenderMime.IRenderer, id: string): void {
    this.clear();
    this.addWidget(renderer);
    this.shown = 'live';
    this.liveId = id;
    this.node.dataset.shown = 'live';
    void this.followKernel();
  }

  /** Follow the notebook's kernel (its session context, found up the parents once the output is in the
   * notebook): when it restarts, dies or is shut down, the saved view replaces the live panel. */
  private async followKernel(): Promise<void> {
    for (let k = 0; k < 100 && !this.session && !this.isDisposed; k++) {
      const sc = this.ancestors<ISessionLike>(w =>
        w.sessionContext?.statusChanged && w.sessionContext?.kernelChanged ? w.sessionContext : undefined
      );
      if (sc) {
        this.session = sc;
        sc.statusChanged.connect(this.onStatus, this);
        // another kernel, or none: the live panel's widgets were the old kernel's
        sc.kernelChanged.connect(this.onKernelGone, this);
        return;
      }
      await sleep(100);
    }
  }

  private onStatus(_sender: unknown, status: string): void {
    if (GONE.has(status)) this.onKernelGone();
  }

  private onKernelGone(): void {
    if (this.shown !== 'live' || !this.latest || this.isDisposed) return;
    this.kernelGone = true;
    this.unwatch?.();
    this.unwatch = null;
    this.node.dataset.kernel = 'gone';
    this.showSaved(this.latest);
  }

  private showSaved(model: IRenderMime.IMimeModel): void {
    if (this.shown === 'saved') return;
    this.clear();
    const data = model.data[BUNDLE_MIME] as any;
    if (data?.schema !== 'hlo-workbench/view' || data?.format !== 2) {
      this.node.append(
        errorNode(
          'hlo-workbench: this output was saved by another version of hlo-workbench ' +
            `(view model format ${JSON.stringify(data?.format ?? null)}, this one reads 2): run the cell for the live panel`
        )
      );
    } else {
      try {
        this.addWidget(new ComponentView('hwb-saved', node => mount(node, data as IViewModel)));
      } catch (err) {
        this.node.append(errorNode(`hlo-workbench: this output cannot be shown: ${(err as Error).message}`));
      }
    }
    this.shown = 'saved';
    this.node.dataset.shown = 'saved';
  }
}

export const bundleRenderer: JupyterFrontEndPlugin<void> = {
  id: 'hlo-workbench-lab:exploration-renderer',
  description: 'Shows a %%hlo output without its kernel: stage list, diff of the stages shown, cost table.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    rendermime.addFactory(
      {
        safe: true, // it shows text only; the live panel it hands over to is shown for trusted outputs only
        mimeTypes: [BUNDLE_MIME],
        defaultRank: RANK,
        createRenderer: options => new BundleRenderer(options)
      },
      RANK
    );
  }
};
