// The panel's Analyze tab (kind "analyze"): which patterns change a stage when applied alone (each a switch of it in
// the pipeline), the predicate a bisection and a reduction look for, a bisection, a reduction and a comparison of
// pipelines. Python sends the facts and each action's result (workbench/views/widgets/analyze.py); a field sends
// set {field: value}, a button its action (find_applicable, bisect, switch_culprits_off, reduce, compare_pipelines),
// a switch toggle {names, on}. Facts: each result [data-hwb="analyze-<key>"] (data-state), [data-hwb="applicable"]
// per pattern found (data-name, data-on), [data-hwb="culprit"] (data-kind, data-name), [data-hwb="search-run"]
// (data-held), [data-hwb="analyze-proposal"] (data-state); each field [data-field].
import { button, h, note, table } from './dom';
import { formatNumber } from './format';
import type { IMounted, ITable } from './model';
import { register, type IWidgetHost } from './widget';

type Result = Record<string, any> & { state: string };
type Row = { name: string; group?: string; parameters?: string; changes?: string; ms?: number };
/** What Python sends (analyze.py): the choices, the form's values, the predicate, and each action's result. */
export interface IAnalyze extends Record<string, any> {
  name: string;
  busy: boolean;
  form: Record<string, string | number | null>;
  params: string[];
  expr?: string;
  expr_error?: string;
  proposal: { state: string; kind?: string; op?: string; n?: number; why?: string } | null;
}

/** A line of words: a tagged template whose Nodes stay nodes; every other value goes in as text. */
const say =
  (cls = '') =>
  (strings: TemplateStringsArray, ...values: unknown[]) => {
    const e = h('div', cls);
    strings.forEach((s, k) =>
      e.append(s, ...(k < values.length ? [values[k] instanceof Node ? values[k] : String(values[k])] : []))
    );
    return e;
  };
const [code, b] = [(text: string) => h('code', '', text), (text: string) => h('b', '', text)];
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
const ADVICE: Record<string, string> = {
  'not-with-all': 'choose a predicate that holds for this Exploration (with every candidate on)',
  'with-none':
    'the candidates are not what makes it hold: choose a predicate that fails without them, or bisect over other candidates',
  stopped: 'the bisection stopped: see the message'
};
// the sections, top to bottom: key, title, caption, fields [key, label, type], button [text, action, title]
const SECTIONS: [string, string, string, [string, string, string][], string[]][] = [
  [
    'applicable',
    'Applicable patterns',
    'which patterns change this stage when applied alone',
    [['applicable_stage', 'stage', 'select']],
    ['Find applicable patterns', 'find_applicable', 'apply every pattern of the catalog alone to this stage']
  ],
  [
    'predicate',
    'Predicate',
    'what a bisection and a reduction look for',
    [
      ['predicate', 'predicate', 'select'],
      ['op', 'op', 'text'],
      ['n', 'n', 'number'],
      ['device', 'device', 'select'],
      ['stage', 'stage', 'text']
    ],
    []
  ],
  [
    'bisect',
    'Bisect',
    "a minimal set of enabled patterns, XLA passes (those XLA's compile ran) or both that makes the predicate hold. It must hold with every candidate on and not with none.",
    [['over', 'over', 'select']],
    ['Bisect', 'bisect', 'find a minimal set of enabled patterns and/or XLA passes for which the predicate holds']
  ],
  [
    'reduce',
    'Reduce',
    "the smallest module, made from a stage's by deleting and cutting ops, on which the predicate holds (each candidate explored as text with this pipeline)",
    [['from_stage', 'from stage', 'select']],
    ['Reduce', 'reduce', "delete and cut ops of the stage's module while the predicate holds"]
  ],
  [
    'pipelines',
    'Pipelines',
    'what the optimizer buys -- this program through each pipeline (presets or pass strings, comma-separated), on the device picked in the Run tab',
    [['pipelines', 'pipelines', 'text']],
    [
      'Compare pipelines',
      'compare_pipelines',
      'run the program through each pipeline: time per call, the numeric check, cost and op counts side by side'
    ]
  ]
];

/** `rows` as a table whose first cell is filled by `first`, each row marked with `facts`. */
function rowsTable<T>(
  columns: string[],
  rows: T[],
  cells: (r: T) => unknown[],
  first: (r: T) => Node | string,
  facts: (r: T) => Record<string, string>
) {
  const t = table(
    'hwbv-an-table',
    columns,
    rows.map(r => ['', ...cells(r)])
  );
  t.querySelectorAll('tbody tr').forEach((tr, k) => {
    Object.assign((tr as HTMLElement).dataset, facts(rows[k]));
    (tr as HTMLTableRowElement).cells[0].append(first(rows[k]));
  });
  return t;
}

/** The runs of a search, folded: which candidates were on, whether the predicate held. */
function runs(log: [string, boolean][], on: string): HTMLElement {
  const fold = h('details', 'hwbv-an-runs');
  const numbered = log.map(([what, held], k): [number, string, boolean] => [k + 1, what, held]);
  const facts = ([, , held]: [number, string, boolean]) => ({ hwb: 'search-run', held: String(held) });
  const cells = ([, what, held]: [number, string, boolean]) => [what, held ? 'holds' : 'does not hold'];
  fold.append(
    h('summary', '', 'the pipeline runs'),
    rowsTable(['run', on, 'predicate'], numbered, cells, ([k]) => String(k), facts)
  );
  return fold;
}

function bisected(r: Result): Node[] {
  if (r.state === 'failed') {
    return [
      say('hwbv-error')`${b('Nothing bisected')} for ${code(r.expr)}: ${r.message}`,
      say()`${ADVICE[r.reason]}.`,
      ...(r.log.length ? [runs(r.log, r.log_on)] : [])
    ];
  }
  const patterns = r.patterns.length > 0 || r.over === 'patterns';
  const counts = [
    patterns ? plural(r.patterns.length, 'pattern', 'patterns') : '',
    r.xla.length ? plural(r.xla.length, 'XLA pass', 'XLA passes') : ''
  ];
  const makes = r.patterns.length + r.xla.length === 1 ? 'makes' : 'make';
  const culprit = (kind: string) => (p: Row) => ({ hwb: 'culprit', kind, name: p.name });
  const out: Node[] = [
    say()`${b(counts.filter(Boolean).join(' and '))} ${makes} ${code(r.expr)} hold (${r.runs} pipeline runs, ${formatNumber(r.seconds)} s); without any one of them it does not.`
  ];
  if (patterns)
    out.push(
      rowsTable(
        ['pattern', 'group', 'parameters', 'without it'],
        r.patterns,
        (p: Row) => [p.group, p.parameters, p.changes],
        p => code(p.name),
        culprit('pattern')
      )
    );
  if (r.xla.length)
    out.push(
      rowsTable(
        ['XLA pass', 'without it'],
        r.xla,
        (p: Row) => [p.changes],
        p => code(p.name),
        culprit('xla')
      )
    );
  if (r.always_needed) {
    const needed = say()`XLA passes always on (the compile cannot do without them; never culprits): ${r.always_needed.length ? '' : 'none'}`;
    needed.append(
      ...r.always_needed.flatMap((p: string, k: number) => [k ? ', ' : '', code(p)]),
      r.always_needed_how ? h('span', 'hwbv-note', ` (${r.always_needed_how})`) : ''
    );
    out.push(needed);
  }
  const who = r.patterns.length && r.xla.length ? 'the patterns' : 'they';
  if (r.delta === null) out.push(say()`what ${who} change could not be computed: ${r.why_not}`);
  else if (!r.delta.length)
    out.push(say()`together ${who} change no op count of ${r.delta_on} (they rewire or re-attribute)`);
  else {
    const chips = r.delta.map((d: any) =>
      h(
        'span',
        `hwbv-chip ${d.delta > 0 ? 'hwbv-up' : 'hwbv-down'}`,
        `${d.op} ${d.before}\u2192${d.after} (${d.delta > 0 ? '+' : ''}${d.delta})`
      )
    );
    const together = say()`what ${who} do together, on ${r.delta_on}: `;
    together.append(...chips);
    out.push(together);
  }
  return [...out, runs(r.log, r.log_on), say()`to switch them off: ${code(r.python)}`];
}

function reduced(r: Result): Node[] {
  if (r.state === 'failed')
    return [say('hwbv-error')`${b('Nothing reduced')} from ${code(r.stage)} for ${code(r.expr)}: ${r.message}`];
  const errors = r.errors ? `, ${r.errors} on which the predicate raised` : '';
  const stopped = r.interrupted ? b('Interrupted') : '';
  return [
    say()`Reduced ${code(r.stage)} for ${code(r.expr)} (${code(r.predicate)}): ${b(`ops ${r.ops_before} \u2192 ${r.ops_after}`)}, ${r.runs} runs, ${r.skipped} skipped (did not verify)${errors}, ${formatNumber(r.seconds)} s. ${stopped}${stopped ? ': the smallest module found so far.' : ''}`,
    h('pre', 'hwbv-an-reduced', r.text),
    say()`${code(r.python)}; then ${code('r.exploration')} explores it`
  ];
}

function compared(r: Result): Node[] {
  if (r.state === 'failed') return [say('hwbv-error')`${b('No comparison')}: ${r.message}`];
  const t = (x: ITable) => table('hwbv-an-table', x.columns, x.rows);
  return [
    note(
      "Median time per call (ms) after a warm-up, and its interquartile range; the numeric check against the program in float64; the analytic cost and XLA's of the final module; its ops."
    ),
    t(r.table),
    say()`ops by dialect`,
    t(r.dialects),
    say()`${code(r.python)} \u00b7 ${code('wb.plot_pipelines(df)')} draws it`
  ];
}

function found(r: Result, d: IAnalyze, host: IWidgetHost): Node[] {
  const how = r.rows.length ? `; click one to switch it on or off in ${d.name}'s pipeline, as the Passes tab does` : '';
  const head = say()`${r.rows.length} of ${r.total} patterns change ${code(r.stage)} when applied alone${r.failed ? `; ${r.failed} failed on it` : ''}${how}`;
  if (!r.rows.length) return [head];
  const on = new Set<string>(r.on);
  const switchOf = ({ name }: Row) => {
    const check = Object.assign(h('input'), { type: 'checkbox', checked: on.has(name), disabled: d.busy });
    check.addEventListener('change', () => host.act('toggle', { names: [name], on: check.checked }));
    const sw = Object.assign(h('label', 'hwbv-an-switch'), {
      title: `switch ${name} ${on.has(name) ? 'off' : 'on'} in ${d.name}'s pipeline`
    });
    sw.append(check, h('code', 'hwbv-an-name', name));
    return sw;
  };
  const columns = [`pattern (click: switch it in ${d.name}'s pipeline)`, 'group', 'ms', `in ${d.name}'s pipeline`];
  const t = rowsTable(
    columns,
    r.rows,
    (p: Row) => [p.group, formatNumber(p.ms), on.has(p.name) ? 'on' : 'off'],
    switchOf,
    p => ({ hwb: 'applicable', name: p.name, on: String(on.has(p.name)) })
  );
  return [head, t];
}

const DRAW: Record<string, (r: Result, d: IAnalyze, host: IWidgetHost) => Node[]> = {
  applicable: found,
  bisect: bisected,
  reduce: reduced,
  pipelines: compared
};

register('analyze', (el: HTMLElement, data: IAnalyze, host: IWidgetHost): IMounted => {
  const root = h('div', 'hwbv hwbv-analyze');
  root.dataset.hwb = 'analyze';
  el.append(root);
  const fields = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const [buttons, results] = [[] as HTMLButtonElement[], new Map<string, HTMLElement>()];
  const stages = Object.assign(h('datalist'), { id: `hwbv-an-stages-${Math.random().toString(36).slice(2)}` });
  const field = ([key, label, type]: string[]) => {
    const input = type === 'select' ? h('select') : Object.assign(h('input'), { type });
    input.dataset.field = key;
    input.addEventListener(type === 'select' ? 'change' : 'input', () =>
      host.act('set', { [key]: type === 'number' ? Number(input.value) || 0 : input.value })
    );
    fields.set(key, input);
    return say('hwbv-an-field')`${h('span', 'hwbv-label', label)}${input}`;
  };
  for (const [key, title, caption, inputs, [text, action, tip]] of SECTIONS) {
    const row = say('hwbv-an-row')``;
    row.append(...inputs.map(field), ...(text ? [button('hwbv-an-button', text, () => host.act(action), tip)] : []));
    const result = Object.assign(say('hwbv-an-result')``, { hidden: key === 'predicate' });
    result.dataset.hwb = `analyze-${key}`;
    results.set(key, result);
    root.append(say('hwbv-an-section')`${say()`${b(title)}: ${caption}`}${row}${result}`);
  }
  buttons.push(...Array.from(root.querySelectorAll('button')));
  const [shown, proposal] = [say('hwbv-note')``, say('hwbv-note')``];
  proposal.dataset.hwb = 'analyze-proposal';
  results.get('predicate')!.before(stages, shown, proposal);
  results.delete('predicate');
  fields.get('stage')!.setAttribute('list', stages.id);
  const off = button('hwbv-an-button', 'switch these off', () => host.act('switch_culprits_off'));
  off.dataset.hwb = 'switch-culprits-off';
  results.get('bisect')!.after(off);
  buttons.push(off);

  const draw = (d: IAnalyze) => {
    if (!d?.form) return; // nothing shown yet
    const pairs = (xs: string[]) => xs.map(x => [x, x]);
    const lists: Record<string, string[][]> = {
      applicable_stage: pairs(d.stages),
      predicate: pairs(d.predicates),
      device: pairs(d.devices),
      over: d.over_options,
      from_stage: pairs(d.modules)
    };
    stages.replaceChildren(...d.stages.map((s: string) => Object.assign(h('option'), { value: s })));
    for (const [key, input] of fields) {
      if (
        input instanceof HTMLSelectElement &&
        Array.from(input.options, o => `${o.text}\n${o.value}`).join('\n') !== lists[key].flat().join('\n')
      ) {
        input.replaceChildren(...lists[key].map(([text, value]) => Object.assign(h('option', '', text), { value })));
      }
      if (document.activeElement !== input) input.value = String(d.form[key] ?? '');
      if (['op', 'n', 'device', 'stage'].includes(key)) input.parentElement!.hidden = !d.params.includes(key);
    }
    (fields.get('stage') as HTMLInputElement).placeholder = d.stage_required ? 'a stage' : 'last MLIR stage';
    buttons.forEach(x => (x.disabled = d.busy));
    shown.replaceChildren(say()`predicate: ${d.expr !== undefined ? code(d.expr) : `none yet (${d.expr_error})`}`);
    const p = d.proposal;
    proposal.dataset.state = p?.state ?? '';
    proposal.replaceChildren(
      p?.state === 'proposed'
        ? say()`Proposed: ${code(p.kind!)} with op ${code(p.op!)}, n=${p.n}: ${p.why}.`
        : p?.state === 'no-patterns'
          ? say()`This pipeline applies no Enzyme-JaX patterns (no ${code('enzyme-hlo-patterns')} stage), so a bisection has nothing to find: pick a preset that applies them in the Passes tab.`
          : p
            ? 'No pattern stage of this pipeline changes an op count, so there is no default predicate to propose: choose one that holds for this Exploration.'
            : ''
    );
    for (const [key, out] of results) {
      const r: Result | null = d[key] ?? null;
      out.dataset.state = r?.state ?? '';
      out.replaceChildren(...(!r ? [] : r.state === 'running' ? [note(`${r.label}\u2026`)] : DRAW[key](r, d, host)));
    }
    off.hidden = d.bisect?.state !== 'found' || !d.bisect.can_switch_off;
    root.classList.toggle('hwbv-busy', d.busy);
  };
  draw(data);
  return { update: d => draw(d as unknown as IAnalyze), dispose: () => root.remove() };
});
