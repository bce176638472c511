// The kernel-free view of an exploration (a %%hlo output's bundle or a .hlox file): the stage list, two
// stage pickers over the panel's own diff viewer (workbench/assets/diffview.js, driven by a small
// in-page model as the offline report drives it), and the cost table. Plain DOM in a Lumino widget;
// every text goes in as text (textContent), never as HTML.
import { Widget } from '@lumino/widgets';

import diffview from '../../../workbench/assets/diffview.js';
import { IExplorationView, diffPair } from './exploration';

type Handler = () => void;

/** The little of an anywidget model that diffview.js uses, held in the page. */
export function pageModel(values: Record<string, unknown>) {
  const handlers: Record<string, Handler[]> = {};
  return {
    get: (k: string) => values[k],
    set(k: string, v: unknown) {
      if (values[k] === v) return;
      values[k] = v;
      for (const f of handlers['change:' + k] ?? []) f();
    },
    on(event: string, f: Handler) {
      (handlers[event] ??= []).push(f);
    },
    off() {},
    save_changes() {}
  };
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return Number.isInteger(value) ? value.toLocaleString('en-US') : String(+value.toPrecision(6));
  if (typeof value === 'boolean') return value ? 'yes' : '';
  return String(value);
}

const STAGE_COLUMNS = ['stage', 'group', 'changed', 'lines', 'ms', 'error'];

export class ExplorationWidget extends Widget {
  readonly view: IExplorationView;
  private pickA: HTMLSelectElement;
  private pickB: HTMLSelectElement;
  private note: HTMLElement;
  private cleanup: (() => void) | null;
  private model = pageModel({ before: '', after: '', rows: new DataView(new ArrayBuffer(0)), before_name: '',
    after_name: '', message: '', height: 480, mode: 'auto' });

  constructor(view: IExplorationView, options: { height?: number } = {}) {
    super();
    this.view = view;
    this.addClass('hwb-view');
    this.node.dataset.source = view.source;
    if (options.height) this.model.set('height', options.height);
    const n = this.node;

    const head = el('div', 'hwb-head');
    head.append(el('b', 'hwb-title', view.title), ' ', el('span', 'hwb-summary', view.summary));
    n.append(head);
    n.append(el('div', 'hwb-kernelfree', view.source === 'bundle'
      ? 'saved view of this %%hlo output (no kernel): run the cell for the live panel'
      : 'saved exploration (.hlox), read in the page: no kernel'));
    if (view.error) n.append(el('pre', 'hwb-error', view.error));

    // the stage list
    const stages = el('details', 'hwb-stages');
    stages.open = true;
    stages.append(el('summary', '', `stages (${view.stages.length})`));
    const table = el('table', 'hwb-table hwb-stage-table');
    const hr = el('tr');
    for (const c of STAGE_COLUMNS) hr.append(el('th', '', c));
    table.append(el('thead'), el('tbody'));
    table.tHead!.append(hr);
    for (const s of view.stages) {
      const tr = el('tr');
      tr.dataset.stage = s.name;
      const first = s.error ? s.error.split('\n')[0].slice(0, 200) : '';
      for (const v of [s.name, s.group, s.changed, s.lines, s.ms, first]) tr.append(el('td', '', cell(v)));
      if (s.parent && view.pickable.includes(s.parent) && view.pickable.includes(s.name)) {
        const b = el('button', 'hwb-pick', 'diff');
        b.type = 'button';
        b.title = `${s.parent} \u2192 ${s.name} in the diff viewer`;
        b.addEventListener('click', () => this.showPair(s.parent!, s.name));
        tr.cells[0].append(' ', b);
      }
      table.tBodies[0].append(tr);
    }
    stages.append(table);
    n.append(stages);

    // the pickers and the diff
    const bar = el('div', 'hwb-pickers');
    this.pickA = el('select', 'hwb-pick-a');
    this.pickB = el('select', 'hwb-pick-b');
    for (const p of [this.pickA, this.pickB]) {
      for (const name of view.pickable) p.append(new Option(name, name));
      p.addEventListener('change', () => this.showPair(this.pickA.value, this.pickB.value));
    }
    const swap = el('button', 'hwb-swap', '\u21c4 swap');
    swap.type = 'button';
    swap.addEventListener('click', () => this.showPair(this.pickB.value, this.pickA.value));
    bar.append('A ', this.pickA, ' \u2192 B ', this.pickB, ' ', swap);
    n.append(bar);
    this.note = el('div', 'hwb-note');
    n.append(this.note);
    const host = el('div', 'hwb-diff');
    n.append(host);
    const cleanup = diffview.render({ model: this.model, el: host });
    this.cleanup = typeof cleanup === 'function' ? (cleanup as () => void) : null;

    // the cost table
    const cost = el('div', 'hwb-cost');
    cost.append(el('div', 'hwb-cost-head', view.costNote));
    if (view.cost) {
      const t = el('table', 'hwb-table hwb-cost-table');
      t.append(el('thead'), el('tbody'));
      const r = el('tr');
      for (const c of view.cost.columns) r.append(el('th', '', c));
      t.tHead!.append(r);
      for (const row of view.cost.rows) {
        const tr = el('tr');
        for (const v of row) tr.append(el('td', '', cell(v)));
        t.tBodies[0].append(tr);
      }
      cost.append(t);
    }
    n.append(cost);

    const [a, b] = view.first;
    if (a && b) this.showPair(a, b);
  }

  dispose(): void {
    this.cleanup?.();
    this.cleanup = null;
    super.dispose();
  }

  /** The two stages picked: [A (before), B (after)]. */
  get pair(): [string, string] {
    return [this.pickA.value, this.pickB.value];
  }

  /** Stages `a` (before) and `b` (after) in the diff viewer. */
  showPair(a: string, b: string): void {
    this.pickA.value = a;
    this.pickB.value = b;
    const d = diffPair(this.view, a, b);
    const m = this.model;
    m.set('message', d.message);
    m.set('before_name', a);
    m.set('after_name', b);
    m.set('before', d.before);
    m.set('after', d.after);
    m.set('rows', new DataView(d.rows.buffer, d.rows.byteOffset, d.rows.byteLength));
    this.note.textContent = d.message ? '' : `Shown: ${d.note}.`;
    this.node.dataset.diff = d.kind;
    this.node.dataset.pair = `${a} \u2192 ${b}`;
  }
}

/** A view that could not be made: says why. */
export function errorNode(message: string): HTMLElement {
  return el('pre', 'hwb-error', message);
}
