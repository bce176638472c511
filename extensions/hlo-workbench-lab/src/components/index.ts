// The one set of view components: every view of an exploration (the panel's saved view in a notebook, the
// offline report, the JupyterLab extension's .hlox viewer and Compare tab) is `mount`ed from the one view
// model Python makes (workbench/artifacts/viewmodel.py; its schema workbench/assets/view.schema.json).
// Nothing here computes a fact: a pair's diff the model does not carry is asked of the host.
//
// Built by build-views.mjs (esbuild) into workbench/assets/views.js (+ views.css, from views.css here); the
// extension imports this folder directly. The facts carry data attributes, so that one browser test reads
// the same facts from every host: the root [data-hwb-view] (data-source), [data-hwb="stage"] per stage
// (data-name, data-edit), [data-hwb="toggles"] (data-patterns-disabled, data-xla-disabled: comma-joined),
// [data-hwb="edit"] per edit, [data-hwb="diff-counts"] (data-changed, -deleted, -inserted, -moved),
// [data-hwb="run"] per run, [data-hwb="leaf"] per check leaf (data-path, data-passed), and
// [data-hwb="printed"] per run's printed output.
import { backendSection } from './backend';
import './collectives';
import { compileSection } from './compile';
import { costSection } from './cost';
import { diffView, IDiffView } from './diff';
import { h, note, section } from './dom';
import { driftSection } from './drift';
import { editsSection } from './edits';
import './graph';
import { header } from './header';
import { memorySection } from './memory';
import type { IHost, IMounted, IViewModel } from './model';
import './passes';
import './analyze';
import { runsSection } from './runs';
import './runtab';
import './source';
import { IStageList, stageList, stageState } from './stages';
import { register, render } from './widget';

export type {
  ICheck,
  IDiffEntry,
  IDrift,
  IDriftOp,
  IEdit,
  IHost,
  ILeaf,
  IMounted,
  IOpDelta,
  IRun,
  IStage,
  IText,
  ITable,
  IViewModel,
  MaybeNumber,
  StageEdit,
  StageGroup
} from './model';
export { KINDS, entryRows, rowCounts, rowsOfRuns, textLines } from './rows';
export { clip, formatMs, formatNumber, formatShape } from './format';
export { NO_HOST_DIFF } from './diff';
export { checkWords } from './runs';
export { mountComparison } from './compare';
export { transposed } from './cost';
export { register, kinds, render } from './widget';
export type { Factory, IWidgetHost } from './widget';

/** Which of the view's sections to draw (default: all), by their data-hwb names: "header", "stages", "diff",
 * "cost", "memory", "backend", "edits", "runs", "drift", "compile". The panel draws its tabs' parts apart. */
export interface IMountOptions {
  sections?: readonly string[];
}

/** Draws `model` into `el` (appended, in a root of its own); `host` answers what the model does not carry
 * and hears the user's actions ("pair": {left, right}, when the user picks a pair to compare). */
export function mount(el: HTMLElement, model: IViewModel, host?: IHost, options: IMountOptions = {}): IMounted {
  const root = h('div', 'hwbv');
  root.dataset.hwbView = '';
  el.append(root);
  let m = model;
  let pair: [string, string] = [m.shown.left, m.shown.right];
  let diff: IDiffView | null = null;
  let mark: (left: string, right: string) => void = () => {};
  const ui = stageState(); // what the user set in the stage list, kept through updates

  const pick = (left: string, right: string, told = true) => {
    pair = [left, right];
    mark(left, right);
    void diff?.show(left, right);
    if (told) host?.act?.('pair', { left, right });
  };

  function draw(): void {
    const open = new Map<string, boolean>();
    root
      .querySelectorAll<HTMLDetailsElement>(':scope > details[data-hwb]')
      .forEach(d => open.set(d.dataset.hwb!, d.open));
    const list = root.querySelector<HTMLElement>('.hwbv-stage-scroll');
    if (list) ui.height = list.offsetHeight;
    diff?.dispose();
    diff = null;
    root.dataset.source = m.source;
    root.dataset.stages = String(m.stages.length);
    root.dataset.complete = String(m.complete);
    let stages = null as IStageList | null; // made only where it is drawn, as the diff is
    const diffSection = (): HTMLElement => {
      // made only where it is drawn: it asks the host for its pair
      diff = diffView(m, host);
      const { node, body } = section('diff-section', 'Diff');
      body.append(diff.node);
      return node;
    };
    const all: [string, () => HTMLElement | null][] = [
      ['header', () => header(m)],
      ['stages', () => (stages = stageList(m, pick, () => pair, ui)).node],
      ['diff', diffSection],
      ['cost', () => costSection(m)],
      ['memory', () => memorySection(m)],
      ['backend', () => backendSection(m)],
      ['edits', () => editsSection(m)],
      ['runs', () => runsSection(m.runs)],
      ['drift', () => driftSection(m.drift)],
      ['compile', () => compileSection(m, pick)]
    ];
    const wanted = options.sections ? new Set(options.sections) : null;
    const parts = all
      .filter(([name]) => !wanted || wanted.has(name))
      .map(([, make]) => make())
      .filter(p => p !== null);
    for (const p of parts) {
      if (p instanceof HTMLDetailsElement && open.has(p.dataset.hwb!)) p.open = open.get(p.dataset.hwb!)!;
    }
    root.replaceChildren(...parts);
    mark = stages?.mark ?? (() => {});
    stages?.restore();
    pick(pair[0], pair[1], false);
  }

  draw();
  return {
    update(next: IViewModel) {
      const names = new Set(next.stages.map(s => s.stage));
      const moved = next.shown.left !== m.shown.left || next.shown.right !== m.shown.right;
      m = next;
      if (moved || !names.has(pair[0]) || !names.has(pair[1])) pair = [m.shown.left, m.shown.right];
      draw();
    },
    dispose() {
      diff?.dispose();
      diff = null;
      root.remove();
    }
  };
}

// The view model as a panel component ("view"): `data.model` a view model (none yet: `data.loading` says why),
// `data.sections` the sections drawn, the host's asks answer a pair's diff. `data.fold` (px): the stage list folds
// to its heading while the panel is narrower, until the user opens or folds it.
register('view', (el, data, host) => {
  let d = data;
  let view: IMounted | null = null;
  let chosen = false; // the user opened or folded the stage list
  const wait = note('', 'hwbv-loading');
  el.append(wait);
  let panel: Element | null = null;
  const fold = () => {
    if (!d.fold) return;
    const outer = el.closest('.wb-panel');
    if (outer && outer !== panel) sizes.observe((panel = outer)); // in the page now: watch the panel's width
    const list = el.querySelector<HTMLDetailsElement>(':scope > .hwbv > details[data-hwb="stages"]');
    const width = panel?.clientWidth ?? 0;
    if (list && !chosen && width) list.open = width >= d.fold;
    if (list) el.dataset.folded = String(!list.open);
  };
  const clicked = (e: Event) => {
    if ((e.target as Element).closest('details[data-hwb="stages"] > summary')) chosen = true;
  };
  el.addEventListener('click', clicked);
  el.addEventListener('toggle', () => fold(), true); // a details' toggle does not bubble
  const sizes = new ResizeObserver(() => fold());
  sizes.observe(el);
  const show = (next: any) => {
    d = next;
    wait.textContent = d.model ? '' : (d.loading ?? '');
    wait.hidden = !!d.model;
    if (view && d.model) view.update(d.model);
    else if (d.model) {
      view = mount(
        el,
        d.model,
        { act: host.act, diff: (left, right) => host.ask('diff', { left, right }) },
        { sections: d.sections ?? undefined }
      );
    }
    fold();
  };
  show(data);
  return {
    update: show,
    dispose() {
      sizes.disconnect();
      view?.dispose();
      wait.remove();
    }
  };
});

/** anywidget's entry: views.js is the panel's module too. */
export default { render };
