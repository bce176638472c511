// The comparison of two saved explorations in the page (compare.ts works it out): on top what differs
// (the first differing stage in words, versions, settings, the stages aligned by name with their costs,
// the final modules' diff in the panel's diff viewer), below the two explorations side by side, each in
// the .hlox viewer's own view. Plain DOM in a Lumino widget; every text goes in as text.
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import diffview from '../../../workbench/assets/diffview.js';
import {
  IAlignedStage, IComparison, IStagePairDiff, IValueDiff, MATCH_WORDS, costCellText, costHeading, firstDifferenceText,
  stageCountsText
} from './compare';
import { ExplorationWidget, pageModel } from './view';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function table(cls: string, head: string[]): HTMLTableElement {
  const t = el('table', `hwb-table ${cls}`);
  t.append(el('thead'), el('tbody'));
  const tr = el('tr');
  for (const h of head) tr.append(el('th', '', h));
  t.tHead!.append(tr);
  return t;
}

function button(text: string, title: string, cls: string, onClick: () => void): HTMLButtonElement {
  const b = el('button', cls, text);
  b.type = 'button';
  b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

/** Versions or settings: only those that differ are listed; the summary says how many are the same. */
function valueSection(what: string, cls: string, values: IValueDiff[], withNote: boolean): HTMLElement {
  const differ = values.filter(v => !v.same);
  const box = el('details', `hwb-compare-values ${cls}`);
  box.open = differ.length > 0;
  const same = values.length - differ.length;
  box.append(el('summary', '', differ.length
    ? `${what}: ${differ.length} differ${same ? `, ${same} the same` : ''}`
    : `${what}: the same in both (${values.filter(v => v.a !== '(none)').map(v => `${v.name} ${v.a}`)
      .slice(0, 8).join(', ')})`));
  if (!differ.length) return box;
  const t = table('hwb-compare-value-table', withNote ? ['', 'A', 'B', ''] : ['', 'A', 'B']);
  for (const v of differ) {
    const tr = el('tr');
    tr.dataset.name = v.name;
    tr.append(el('th', '', v.name), el('td', 'hwb-side-a', v.a), el('td', 'hwb-side-b', v.b));
    if (withNote) tr.append(el('td', 'hwb-compare-aside', v.note));
    t.tBodies[0].append(tr);
  }
  box.append(t);
  return box;
}

export class ComparisonWidget extends Widget {
  readonly comparison: IComparison;
  private sides: ExplorationWidget[] = [];
  private diffHead: HTMLElement;
  private note: HTMLElement;
  private cleanup: (() => void) | null;
  private model = pageModel({ before: '', after: '', rows: new DataView(new ArrayBuffer(0)), before_name: '',
    after_name: '', message: '', height: 420, mode: 'auto' });

  constructor(comparison: IComparison) {
    super();
    this.comparison = comparison;
    const c = comparison;
    this.addClass('hwb-compare');
    const n = this.node;
    const head = el('div', 'hwb-head');
    head.append(el('b', 'hwb-title', 'Comparing two saved explorations'), ' ',
      el('span', 'hwb-summary', '(.hlox, read in the page: no kernel)'));
    n.append(head);
    for (const [label, side] of [['A', c.a], ['B', c.b]] as const) {
      const line = el('div', `hwb-compare-file hwb-compare-file-${label.toLowerCase()}`);
      line.append(el('b', '', `${label}: ${side.path}`), ' ', el('span', 'hwb-summary',
        `${side.view.title} \u00b7 ${side.view.summary}`));
      n.append(line);
    }
    const first = el('div', 'hwb-first-difference', firstDifferenceText(c));
    first.dataset.stage = c.firstDifference?.name ?? '';
    n.append(first, el('div', 'hwb-compare-counts', stageCountsText(c)));
    n.append(valueSection('versions', 'hwb-compare-versions', c.versions, false));
    n.append(valueSection('settings', 'hwb-compare-settings', c.settings, true));
    n.append(this.stageSection());

    this.diffHead = el('div', 'hwb-compare-diffhead');
    this.note = el('div', 'hwb-note');
    const host = el('div', 'hwb-diff');
    n.append(this.diffHead, this.note, host);
    const cleanup = diffview.render({ model: this.model, el: host });
    this.cleanup = typeof cleanup === 'function' ? (cleanup as () => void) : null;
    this.showFinal();

    const sides = el('div', 'hwb-compare-sides');
    for (const [label, side] of [['A', c.a], ['B', c.b]] as const) {
      const column = el('div', `hwb-compare-side hwb-compare-side-${label.toLowerCase()}`);
      column.append(el('div', 'hwb-compare-side-head', `${label}: ${side.path}`));
      sides.append(column);
      const view = new ExplorationWidget(side.view, { height: 420 });
      // each side opens on what its own pass did at the first difference: the stage against its parent
      const row = side.view.stages.find(s => s.name === c.firstDifference?.name);
      if (row?.parent && side.view.pickable.includes(row.parent)) view.showPair(row.parent, row.name);
      this.sides.push(view);
    }
    n.append(sides);
  }

  // Lumino attaches a widget only to a host in the page: the two views go in once this one is there.
  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    const columns = this.node.querySelectorAll<HTMLElement>('.hwb-compare-side');
    this.sides.forEach((view, k) => {
      if (!view.isAttached) Widget.attach(view, columns[k]);
    });
  }

  /** The two explorations' own views: A's, then B's. */
  get explorations(): readonly ExplorationWidget[] {
    return this.sides;
  }

  /** The aligned stage list: the module's match and each cost column, A and B with the delta. */
  private stageSection(): HTMLElement {
    const c = this.comparison;
    const box = el('details', 'hwb-compare-stages');
    box.open = true;
    box.append(el('summary', '', `stages, aligned by name (${c.stages.length})`));
    const t = table('hwb-compare-stage-table',
      ['stage', 'group', 'module', ...c.costColumns.map(costHeading)]);
    for (const s of c.stages) t.tBodies[0].append(this.stageRow(s));
    box.append(t);
    return box;
  }

  private stageRow(s: IAlignedStage): HTMLTableRowElement {
    const c = this.comparison;
    const tr = el('tr', `hwb-match-${s.match}`);
    tr.dataset.stage = s.name;
    tr.dataset.match = s.match;
    if (s === c.firstDifference) tr.classList.add('hwb-first');
    const name = el('td', '', s.name);
    if (s.match === 'differs') {  // a stage without text on a side ('unknown') has nothing to diff
      name.append(' ', button('diff', `A's ${s.name} \u2192 B's ${s.name} in the diff viewer below`, 'hwb-pick',
        () => this.showStages(s.name, s.name)));
    }
    const match = el('td', 'hwb-match', MATCH_WORDS[s.match] + (s.note ? ` (${s.note})` : ''));
    tr.append(name, el('td', '', s.group), match);
    for (const d of c.cost(s)) {
      const td = el('td', 'hwb-cost-cell', costCellText(d));
      if (d.delta !== null && d.delta !== 0) td.classList.add(d.delta > 0 ? 'hwb-up' : 'hwb-down');
      tr.append(td);
    }
    return tr;
  }

  /** The final modules (the last MLIR stage of each) in the diff viewer. */
  showFinal(): void {
    this.showDiff(this.comparison.final, true);
  }

  /** Stage `a` of A against stage `b` of B in the diff viewer. */
  showStages(a: string, b: string): void {
    this.showDiff(this.comparison.diff(a, b), false);
  }

  private showDiff(d: IStagePairDiff, final: boolean): void {
    const m = this.model;
    m.set('message', d.message);
    m.set('before_name', d.aStage ? `A: ${d.aStage}` : 'A');
    m.set('after_name', d.bStage ? `B: ${d.bStage}` : 'B');
    m.set('before', d.before);
    m.set('after', d.after);
    m.set('rows', new DataView(d.rows.buffer, d.rows.byteOffset, d.rows.byteLength));
    this.diffHead.textContent = '';
    const what = final ? 'final module' : 'stage';
    this.diffHead.append(el('b', '', `${what}: A's ${d.aStage || '(none)'} \u2192 B's ${d.bStage || '(none)'}`));
    if (!final) {
      this.diffHead.append(' ', button('final modules', "the last MLIR stage of each, in the diff viewer",
        'hwb-pick hwb-show-final', () => this.showFinal()));
    }
    this.note.textContent = d.message ? '' : `Shown: ${d.note}.`;
    this.node.dataset.pair = `${d.aStage} \u2192 ${d.bStage}`;
    this.node.dataset.final = final ? '1' : '';
  }

  dispose(): void {
    for (const view of this.sides) view.dispose();
    this.sides = [];
    this.cleanup?.();
    this.cleanup = null;
    super.dispose();
  }
}
