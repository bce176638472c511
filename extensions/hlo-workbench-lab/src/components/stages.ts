// The stage list: one row per stage (edited and failed ones marked), with the two buttons that pick the pair
// the diff shows: A (before) and B (after). A click on a stage's name shows it against its parent. "hide
// unchanged" keeps the stages that changed the module or failed, and the pair shown. In the live panel (source
// "panel") while XLA compiles (a model not complete), a spinner row stands where XLA's stages will come, and the
// list keeps the height it had, so that nothing under it moves.
import { button, h, section } from './dom';
import { clip, firstLine, formatMs, formatNumber } from './format';
import type { IStage, IViewModel } from './model';

const EDIT_WORDS: Record<string, string> = {
  text: 'edited by hand',
  inserted: 'inserted by hand',
  'after-removed': 'after a pass left out'
};

export type Pick = (left: string, right: string) => void;

/** What the user set in a stage list, kept through a redraw with a newer model: unchanged stages hidden, where
 * the list was scrolled, and its height (kept while XLA's stages are on their way). */
export interface IStageState {
  hide: boolean;
  scroll: number;
  height: number;
}

export const stageState = (): IStageState => ({ hide: false, scroll: 0, height: 0 });

export interface IStageList {
  node: HTMLElement;
  /** Marks the pair shown. */
  mark(left: string, right: string): void;
  /** Scrolls the list, once in the page, where the list it replaces was. */
  restore(): void;
}

/** Whether "hide unchanged" keeps stage `s` when `pair` is shown. */
export function kept(s: IStage, pair: readonly string[]): boolean {
  return s.changed || !!s.error || pair.includes(s.stage);
}

/** The rows of stage `s`: its own, and one with its error under it where it failed. */
function rows(s: IStage, pick: Pick, current: () => [string, string]): HTMLTableRowElement[] {
  const tr = h('tr', 'hwbv-stage');
  tr.dataset.hwb = 'stage';
  tr.dataset.name = s.stage;
  tr.dataset.edit = s.edit;
  tr.dataset.group = s.group;
  if (s.error) tr.classList.add('hwbv-failed');
  if (s.edit) tr.classList.add('hwbv-edited');
  if (!s.changed) tr.classList.add('hwbv-unchanged');
  const pickers = h('td', 'hwbv-pickers');
  pickers.append(
    button('hwbv-pick hwbv-pick-a', 'A', () => pick(s.stage, current()[1]), `${s.stage} as A, the before side`),
    button('hwbv-pick hwbv-pick-b', 'B', () => pick(current()[0], s.stage), `${s.stage} as B, the after side`)
  );
  const name = h('td', 'hwbv-stage-name');
  if (s.parent) {
    name.append(button('hwbv-link', s.stage, () => pick(s.parent!, s.stage), `${s.parent} \u2192 ${s.stage}`));
  } else name.append(h('span', '', s.stage));
  if (s.edit) name.append(h('span', 'hwbv-badge hwbv-badge-edit', EDIT_WORDS[s.edit] ?? s.edit));
  if (s.error) name.append(h('span', 'hwbv-badge hwbv-badge-error', 'failed'));
  const by = h('td', 'hwbv-by');
  by.append(h('code', 'hwbv-wrap', clip(s.produced_by, 160)));
  if (s.produced_by.length > 160) by.title = clip(s.produced_by, 4000);
  tr.append(
    pickers,
    name,
    h('td', '', s.group),
    h('td', '', s.changed ? 'yes' : ''),
    h('td', 'hwbv-num', formatNumber(s.lines)),
    h('td', 'hwbv-num', formatMs(s.ms) + (s.cached ? ' (cached)' : '')),
    by
  );
  if (!s.error) return [tr];
  const err = h('tr', 'hwbv-stage-error');
  const td = h('td', 'hwbv-error', firstLine(s.error, 400));
  td.colSpan = 7;
  err.append(td);
  tr.dataset.error = 'true';
  return [tr, err];
}

export function stageList(
  m: IViewModel,
  pick: Pick,
  current: () => [string, string],
  state: IStageState = stageState()
): IStageList {
  const { node, body } = section('stages', 'Stages', m.stages.length);
  const edited = m.stages.filter(s => s.edit).length;
  const failed = m.stages.filter(s => s.error).length;
  const changed = m.stages.filter(s => s.changed).length;
  const hide = h('input', 'hwbv-hide');
  hide.type = 'checkbox';
  hide.checked = state.hide;
  const label = h('label', 'hwbv-hide-label');
  label.append(hide, ' hide unchanged');
  const head = h('div', 'hwbv-stage-head');
  head.append(
    label,
    h(
      'span',
      'hwbv-note',
      `${changed} changed the module` +
        (edited ? `, ${edited} made by a hand edit` : '') +
        (failed ? `, ${failed} failed` : '') +
        ': pick A and B to compare two stages, or click a stage for it against its parent'
    )
  );
  body.append(head);
  const wrap = h('div', 'hwbv-table-wrap hwbv-stage-scroll');
  const t = h('table', 'hwbv-table hwbv-stage-table');
  const thead = t.createTHead().insertRow();
  for (const c of ['A / B', 'stage', 'group', 'changed', 'lines', 'time', 'made by']) thead.append(h('th', '', c));
  const tbody = t.createTBody();
  const byName = new Map<string, [IStage, HTMLTableRowElement]>();
  for (const s of m.stages) {
    const trs = rows(s, pick, current);
    byName.set(s.stage, [s, trs[0]]);
    tbody.append(...trs);
  }
  wrap.append(t);
  if (m.source === 'panel' && !m.complete) {
    const wait = h('div', 'hwbv-pending');
    wait.dataset.hwb = 'pending';
    wait.append(h('span', 'hwbv-spin'), 'XLA is compiling: its stages come when it ends');
    wrap.append(wait);
    if (state.height) wrap.style.minHeight = `${state.height}px`;
  }
  wrap.addEventListener('scroll', () => (state.scroll = wrap.scrollTop));
  body.append(wrap);
  let pair: string[] = [];
  const filter = () => {
    for (const [s, tr] of byName.values()) tr.hidden = state.hide && !kept(s, pair);
  };
  hide.addEventListener('change', () => {
    state.hide = hide.checked;
    filter();
  });
  return {
    node,
    mark(left: string, right: string) {
      pair = [left, right];
      for (const [name, [, tr]] of byName) {
        const a = name === left;
        const b = name === right;
        tr.classList.toggle('hwbv-is-a', a);
        tr.classList.toggle('hwbv-is-b', b);
        tr.querySelector('.hwbv-pick-a')!.setAttribute('aria-pressed', String(a));
        tr.querySelector('.hwbv-pick-b')!.setAttribute('aria-pressed', String(b));
      }
      filter();
    },
    restore() {
      wrap.scrollTop = state.scroll;
    }
  };
}
