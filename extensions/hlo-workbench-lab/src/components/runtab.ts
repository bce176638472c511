// The panel's Run tab (kind "run"): the stage, device and repeat to run with and Run; under a run whose check
// failed, "Find where it drifts" with its answer (drift.ts) and buttons that show the op in the Diff or the Source
// tab; the session's runs, newest on top (runs.ts); the stages to compare, "Compare stages" and its table.
// Python sends the facts (workbench/views/widgets/runtab.py); each click comes back as an action with the
// controls' values {stage, device, repeat, compare}: "set" (a control changed), "run", "compare", "drift" and
// "show" {where}. What the user picked stays through Python's updates until Python sends another value.
// Facts: the controls [data-hwb="run-stage"], "run-device", "run-repeat", "compare-stages", the buttons "run-go",
// "compare-go", "drift-find" and "drift-to" (data-where: diff or source), the table "compared", the answer "drift".
import { button, h, table } from './dom';
import { driftSection } from './drift';
import type { IDrift, IMounted, IRun, ITable } from './model';
import { runsSection } from './runs';
import { register, type IWidgetHost } from './widget';

export interface IRunTab {
  stages: string[];
  devices: string[];
  stage: string | null;
  device: string | null;
  repeat: number;
  compare: string[];
  busy: boolean;
  runs: IRun[];
  compared: ITable | null;
  drift: { stage: string; finding: boolean; found: IDrift | null } | null;
}

const FIND = 'tap the stage and the program as lowered, and find the first op whose value goes wrong (ex.drift)';
const TO = [
  ['diff', 'Op in the Diff', 'diff the stage against the reference, the op found marked'],
  ['source', 'Line in Source', "the op's line of your program, in the Source tab"]
] as const;

/** A `tag` of class `cls` holding `parts`. */
function box(tag: 'div' | 'label', cls: string, ...parts: (Node | string)[]): HTMLElement {
  const e = h(tag, cls);
  e.append(...parts);
  return e;
}

/** `into` holds `nodes` alone; a section the user folded stays folded. */
function put(into: HTMLElement, ...nodes: (HTMLElement | null)[]): void {
  const was = into.querySelector<HTMLDetailsElement>(':scope > details');
  for (const n of nodes) if (n instanceof HTMLDetailsElement && was) n.open = was.open;
  into.replaceChildren(...nodes.filter(n => n !== null));
}

register('run', (el, data: IRunTab, host: IWidgetHost): IMounted => {
  const root = h('div', 'hwbv hwbv-runtab');
  const [stage, device, compare] = [h('select'), h('select'), Object.assign(h('select'), { multiple: true, size: 6 })];
  const repeat = Object.assign(h('input'), { type: 'number', min: '1', max: '10000' });
  const values = () => ({
    stage: stage.value,
    device: device.value,
    repeat: Number(repeat.value),
    compare: Array.from(compare.selectedOptions, o => o.value)
  });
  const act = (action: string, more = {}) => host.act(action, { ...values(), ...more });
  const run = button('hwbv-run-go', '\u25b6 Run', () => act('run'), 'run the stage, time it and check its outputs');
  const go = button('hwbv-run-go', 'Compare stages', () => act('compare'), 'run each stage picked; tabulate them');
  const hwb = ['run-stage', 'run-device', 'compare-stages', 'run-repeat', 'run-go', 'compare-go'];
  [stage, device, compare, repeat, run, go].forEach((e, k) => (e.dataset.hwb = hwb[k]));
  for (const c of [stage, device, repeat, compare]) c.addEventListener('change', () => act('set'));
  const [drift, runs, compared] = [h('div', 'hwbv-run-drift'), h('div'), h('div')];
  const caption = 'Compare stages (ctrl/shift-click picks several; device and repeat from above)';
  const label = (text: string, c: HTMLElement) => box('label', '', `${text} `, c);
  const controls = box('div', 'hwbv-run-row', label('stage', stage), label('device', device), label('repeat', repeat));
  const comparing = box('div', 'hwbv-run-row', compare, go);
  controls.append(run);
  root.append(controls, drift, runs, box('div', 'hwbv-caption', caption), comparing, compared);
  el.append(root);

  const seen = new Map<HTMLElement, string>(); // Python's options and values last shown, by control
  const show = (s: HTMLSelectElement, names: string[], picked: (string | null)[]) => {
    const said = JSON.stringify([names, picked]);
    if (seen.get(s) === said) return; // nothing new from Python: what the user picked stays
    seen.set(s, said);
    s.replaceChildren(...names.map(n => Object.assign(h('option', '', n), { value: n, selected: picked.includes(n) })));
  };
  const draw = (d: IRunTab) => {
    if (!d?.stages) return; // nothing shown yet
    show(stage, d.stages, [d.stage]);
    show(device, d.devices, [d.device]);
    show(compare, d.stages, d.compare);
    if (seen.get(repeat) !== String(d.repeat)) seen.set(repeat, (repeat.value = String(d.repeat)));
    run.disabled = go.disabled = d.busy;
    const x = d.drift;
    if (!x) put(drift);
    else {
      const find = button('hwbv-drift-find', 'Find where it drifts', () => act('drift'), FIND);
      find.disabled = d.busy || x.finding;
      find.dataset.hwb = 'drift-find';
      const to = TO.map(([where, text, title]) => {
        const b = button('hwbv-drift-to', text, () => act('show', { where }), title);
        Object.assign(b.dataset, { hwb: 'drift-to', where });
        return b;
      });
      const finding = x.finding ? h('div', 'hwbv-note', `finding where ${x.stage} drifts\u2026`) : null;
      const links = x.found?.found && x.found.op?.result ? box('div', 'hwbv-run-row', ...to) : null;
      put(drift, find, finding, driftSection(x.found), links);
    }
    put(runs, runsSection(d.runs, true));
    const t = d.compared && table('hwbv-compare-table', d.compared.columns, d.compared.rows);
    if (t) t.dataset.hwb = 'compared';
    put(compared, t);
  };
  draw(data);
  return { update: d => draw(d as unknown as IRunTab), dispose: () => root.remove() };
});
