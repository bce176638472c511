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
import './collectives';
import { compileSection } from './compile';
import { costSection } from './cost';
import { diffView, IDiffView } from './diff';
import { h, section } from './dom';
import { driftSection } from './drift';
import { editsSection } from './edits';
import { header } from './header';
import type { IHost, IMounted, IViewModel } from './model';
import './passes';
import { runsSection } from './runs';
import './source';
import { stageList } from './stages';
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
export { NO_HOST_DIFF, pageModel } from './diff';
export { checkWords } from './runs';
export { transposed } from './cost';
export { register, kinds, render } from './widget';
export type { Factory, IWidgetHost } from './widget';

/** Which of the view's sections to draw (default: all), by their data-hwb names: "header", "stages", "diff",
 * "cost", "edits", "runs", "drift", "compile". The panel draws its tabs' parts apart. */
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

  const pick = (left: string, right: string, told = true) => {
    pair = [left, right];
    mark(left, right);
    void diff?.show(left, right);
    if (told) host?.act?.('pair', { left, right });
  };

  function draw(): void {
    const open = new Map<string, boolean>();
    root.querySelectorAll<HTMLDetailsElement>(':scope > details[data-hwb]').forEach((d) => open.set(d.dataset.hwb!, d.open));
    diff?.dispose();
    root.dataset.source = m.source;
    root.dataset.stages = String(m.stages.length);
    root.dataset.complete = String(m.complete);
    const stages = stageList(m, pick, () => pair);
    mark = stages.mark;
    diff = diffView(m, host);
    const diffSection = section('diff-section', 'Diff');
    diffSection.body.append(diff.node);
    const all: [string, HTMLElement | null][] = [['header', header(m)], ['stages', stages.node],
      ['diff', diffSection.node], ['cost', costSection(m)], ['edits', editsSection(m)], ['runs', runsSection(m)],
      ['drift', driftSection(m)], ['compile', compileSection(m)]];
    const wanted = options.sections ? new Set(options.sections) : null;
    const parts = all.filter(([name, p]) => p !== null && (!wanted || wanted.has(name))).map(([, p]) => p!);
    for (const p of parts) {
      if (p instanceof HTMLDetailsElement && open.has(p.dataset.hwb!)) p.open = open.get(p.dataset.hwb!)!;
    }
    root.replaceChildren(...parts);
    pick(pair[0], pair[1], false);
  }

  draw();
  return {
    update(next: IViewModel) {
      const names = new Set(next.stages.map((s) => s.stage));
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

// The view model itself as a panel component ("view"): `data` is a view model, the host's asks answer a pair's diff.
register('view', (el, data, host) =>
  mount(el, data.model, { act: host.act, diff: (left, right) => host.ask('diff', { left, right }) },
    { sections: data.sections ?? undefined }));

/** anywidget's entry: views.js is the panel's module too. */
export default { render };
