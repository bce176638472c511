// The panel's Passes tab (kind "passes"): the pipeline chooser (a preset, or a pass pipeline string) and two
// searchable lists of switches in groups: the Enzyme-JaX patterns and XLA's HLO passes. Python sends the facts
// (workbench/views/widgets/passes.py); a click goes to the panel as an action: set_pipeline {pipeline},
// toggle_patterns / toggle_xla {names, on}, reset_patterns / reset_xla. The search text, the "changed only"
// filter and the groups' folds stay through Python's updates. Each switch is [data-hwb="pattern-toggle"] or
// [data-hwb="xla-toggle"] (data-name, data-on).
import { button, h, note } from './dom';
import type { IMounted } from './model';
import { register, type IWidgetHost } from './widget';

export const CONFIRM_OVER = 50; // a click that would switch more names than this asks first
export type Toggle = [name: string, group: string, onByDefault: boolean];
export interface IToggles {
  items: Toggle[];
  on: string[];
  message: string;
}
export interface IPasses {
  pipeline: string;
  presets: string[];
  with_patterns: string[];
  patterns_used: boolean;
  busy: boolean;
  patterns: IToggles;
  xla: IToggles;
}

/** What a click on `group`'s box switches: a group with every switch off goes on, a mixed or full one off. */
export function groupClick(items: readonly Toggle[], on: ReadonlySet<string>, group: string) {
  const names = items.filter(([, g]) => g === group).map(([n]) => n);
  const turnOn = !names.some(n => on.has(n));
  return { names: names.filter(n => on.has(n) !== turnOn), on: turnOn };
}

const CUSTOM = '(custom string)';
const LISTS = [
  ['patterns', 'pattern', 'Enzyme-JaX rewrite patterns', 'applied greedily in every enzyme-hlo-patterns stage'],
  ['xla', 'XLA pass', 'XLA HLO passes', 'those the last compile ran']
] as const;

const input = (cls: string, type: string) => Object.assign(h('input', cls), { type });

/** One list of switches; `draw` shows Python's facts, keeping what the user typed, filtered and folded. */
function toggleList([key, noun, title, caption]: (typeof LISTS)[number], act: IWidgetHost['act']) {
  const [node, head, bar, count, ask, list] = ['tl', 'caption', 'tl-bar', 'tl-count', 'tl-confirm', 'tl-list'].map(c =>
    h('div', `hwbv-${c}`)
  );
  const search = input('hwbv-tl-search', 'search');
  const only = input('', 'checkbox');
  const onlyLabel = h('label', 'hwbv-tl-only');
  const open = new Set<string>();
  const hwb = key === 'xla' ? 'xla-toggle' : 'pattern-toggle';
  const words = (n: number) => `${n} ${noun}${n === 1 ? '' : noun.endsWith('s') ? 'es' : 's'}`;
  let t: IToggles = { items: [], on: [], message: '' };
  let busy = false;
  let asked = '';
  let pending: (() => void) | null = null;
  const confirm = (question: string, n: number, go: () => void) => {
    if (n <= CONFIRM_OVER) return go();
    pending = go;
    ask.replaceChildren(
      h('span', 'hwbv-tl-question', `${question}?`),
      button('hwbv-tl-yes', 'yes', () => answer(true)),
      button('hwbv-tl-no', 'no', () => answer(false))
    );
    redraw();
  };
  const answer = (yes: boolean) => {
    const go = pending;
    pending = null;
    if (yes) go?.();
    redraw();
  };
  const reset = button(
    'hwbv-tl-reset',
    'reset',
    () => {
      const n = t.items.filter(([name, , d]) => t.on.includes(name) !== d).length;
      confirm(`reset ${words(n)} to their defaults`, n, () => act(`reset_${key}`));
    },
    'every switch back to its default'
  );
  head.append(h('b', '', title), `: ${caption}`);
  onlyLabel.append(only, ' changed only');
  bar.append(search, onlyLabel, reset);
  node.append(head, bar, count, ask, list);

  function redraw(): void {
    const on = new Set(t.on);
    const q = search.value.trim().toLowerCase();
    const filtering = q !== '' || only.checked;
    const groups = new Map<string, Toggle[]>();
    for (const item of t.items) groups.set(item[1], [...(groups.get(item[1]) ?? []), item]);
    const rows: HTMLElement[] = [];
    const n = { on: 0, changed: 0, shown: 0 };
    for (const [group, items] of groups) {
      const inGroup = items.filter(([name]) => on.has(name)).length;
      const changed = items.filter(([name, , d]) => on.has(name) !== d).length;
      n.on += inGroup;
      n.changed += changed;
      const shown = items.filter(
        ([name, , d]) => name.toLowerCase().includes(q) && (!only.checked || on.has(name) !== d)
      );
      if (filtering && !shown.length) continue;
      const isOpen = filtering || open.has(group) || groups.size === 1;
      const g = h('div', `hwbv-tl-group${changed ? ' hwbv-changed' : ''}`);
      g.dataset.group = group;
      const box = Object.assign(input('hwbv-tl-gcheck', 'checkbox'), { title: 'switch the whole group' });
      box.dataset.state = inGroup === 0 ? 'none' : inGroup === items.length ? 'all' : 'some';
      const state = () => {
        box.checked = inGroup === items.length;
        box.indeterminate = box.dataset.state === 'some';
      };
      state();
      box.addEventListener('change', () => {
        state(); // the model's state until Python answers
        const c = groupClick(t.items, on, group);
        confirm(`switch ${words(c.names.length)} ${c.on ? 'on' : 'off'} (group ${group})`, c.names.length, () =>
          act(`toggle_${key}`, c)
        );
      });
      g.append(
        h('span', 'hwbv-tl-caret', isOpen ? '\u25be' : '\u25b8'),
        box,
        h('span', 'hwbv-tl-gname', group),
        h('span', 'hwbv-tl-gcount', `${inGroup}/${items.length} on` + (changed ? ` \u00b7 ${changed} changed` : ''))
      );
      g.addEventListener('click', e => {
        if (e.target === box || filtering) return;
        if (!open.delete(group)) open.add(group);
        redraw();
      });
      rows.push(g);
      if (!isOpen) continue;
      const body = h('div', 'hwbv-tl-items');
      for (const [name, , d] of shown) {
        const isOn = on.has(name);
        const item = h('label', `hwbv-tl-item${isOn !== d ? ' hwbv-changed' : ''}`);
        Object.assign(item.dataset, { hwb, name, on: String(isOn) });
        const check = Object.assign(input('', 'checkbox'), { checked: isOn });
        check.addEventListener('change', () => act(`toggle_${key}`, { names: [name], on: check.checked }));
        item.append(
          check,
          Object.assign(h('span', 'hwbv-tl-name', name), { title: name }),
          h(
            'span',
            'hwbv-tl-note',
            isOn !== d ? (isOn ? 'on (default off)' : 'off (default on)') : d ? '' : 'off by default'
          )
        );
        body.append(item);
      }
      n.shown += shown.length;
      rows.push(body);
    }
    count.replaceChildren(
      t.message
        ? h('span', 'hwbv-error', t.message)
        : `${n.on}/${t.items.length} on \u00b7 ` +
            `${n.changed} changed from default` +
            (filtering ? ` \u00b7 ${n.shown} shown` : '')
    );
    const scroll = list.scrollTop;
    list.replaceChildren(...rows);
    list.scrollTop = scroll;
    node.classList.toggle('hwbv-busy', busy);
    ask.hidden = pending === null;
    reset.disabled = busy;
  }

  search.addEventListener('input', redraw);
  only.addEventListener('change', redraw);
  return {
    node,
    draw(next: IToggles, nextBusy: boolean) {
      const names = next.items.map(([name, g]) => `${g}/${name}`).join('\n');
      if (names !== asked) pending = null; // other switches: a question about the old ones is moot
      [asked, t, busy] = [names, next, nextBusy];
      search.placeholder = `search ${words(t.items.length)}`;
      redraw();
    }
  };
}

/** The pipeline chooser: the preset menu, the pipeline string and its apply button, and the presets that apply
 * patterns where the pipeline applies none. */
function pipelineChooser(act: IWidgetHost['act']) {
  const [node, row, unused] = ['pl', 'pl-row', 'pl-unused'].map(c => h('div', `hwbv-${c}`));
  const menu = h('select', 'hwbv-pl-preset');
  const text = Object.assign(input('hwbv-pl-text', 'text'), {
    placeholder: 'a preset or a pass pipeline: canonicalize,cse,enzyme-hlo-patterns'
  });
  const set = (pipeline: string) => act('set_pipeline', { pipeline });
  const apply = button('hwbv-pl-apply', 'apply', () => set(text.value), 'rebuild with this pipeline');
  const label = h('label', 'hwbv-label', 'pipeline');
  label.append(menu);
  row.append(label, text, apply);
  node.append(row, unused);
  let shown: string | null = null;
  menu.addEventListener('change', () => menu.value !== CUSTOM && set((text.value = menu.value)));
  text.addEventListener('keydown', e => e.key === 'Enter' && set(text.value));
  return [
    node,
    (d: IPasses) => {
      const options = [...d.presets, CUSTOM];
      if (Array.from(menu.options, o => o.value).join('\n') !== options.join('\n')) {
        menu.replaceChildren(...options.map(p => Object.assign(h('option', '', p), { value: p })));
      }
      menu.value = d.presets.includes(d.pipeline) ? d.pipeline : CUSTOM;
      if (d.pipeline !== shown) text.value = shown = d.pipeline; // what the user types stays through other updates
      apply.disabled = menu.disabled = d.busy;
      unused.hidden = d.patterns_used;
      unused.replaceChildren(
        note(
          `No effect here: the pipeline ${d.pipeline} has no enzyme-hlo-patterns step, so ` +
            'switching the patterns below changes none of its stages. These presets apply them:'
        ),
        h('div', 'hwbv-pl-presets')
      );
      (unused.lastChild as HTMLElement).append(
        ...d.with_patterns.map(p =>
          Object.assign(
            button('hwbv-pl-use', p, () => set(p), `rebuild with the preset ${p}`),
            { disabled: d.busy }
          )
        )
      );
    }
  ] as const;
}

register('passes', (el: HTMLElement, data: IPasses, host: IWidgetHost): IMounted => {
  const root = h('div', 'hwbv hwbv-passes');
  const [chooserNode, chooser] = pipelineChooser(host.act);
  const lists = LISTS.map(spec => [spec[0], toggleList(spec, host.act)] as const);
  const both = h('div', 'hwbv-tl-both');
  both.append(...lists.map(([, l]) => l.node));
  root.append(chooserNode, both);
  el.append(root);
  const draw = (d: IPasses) => {
    if (!d?.patterns) return; // nothing shown yet
    chooser(d);
    for (const [key, l] of lists) l.draw(d[key], d.busy);
  };
  draw(data);
  return { update: d => draw(d as unknown as IPasses), dispose: () => root.remove() };
});
