// The panel's Analyze tab (kind "analyze"): the applicable patterns (each a switch of it in the pipeline), the
// predicate, a bisection, a reduction and a comparison of pipelines, from the facts and results Python sends
// (workbench/views/widgets/analyze.py). A field sends set {field: value}, a button its action, a switch toggle
// {names, on}. Facts: [data-hwb="analyze-<result>"] (data-state), [data-hwb="applicable"] (data-name, data-on),
// [data-hwb="culprit"] (data-kind, data-name), [data-hwb="search-run"] (data-held), [data-field] per field.
import { button, h, note, table } from './dom';
import { formatNumber } from './format';
import type { IMounted, ITable } from './model';
import { register, type IWidgetHost } from './widget';

type Part = string | Node;
type Facts = Record<string, any>; // as analyze.py's AnalyzeTab sends them (a result: its "state" and facts)

/** A line of words: a tagged template whose Nodes stay nodes; every other value goes in as text. */
function say(cls = '') {
  return (strings: TemplateStringsArray, ...values: Part[]) => {
    const e = h('div', cls);
    strings.forEach((s, k) => e.append(s, ...values.slice(k, k + 1)));
    return e;
  };
}
const [code, b] = [(text: string) => h('code', '', text), (text: string) => h('b', '', text)];
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** A table of `columns` over `rows` (a cell is text or a node); row k carries the data attributes `facts(k)`. */
function grid(columns: string[], rows: Part[][], facts: (k: number) => Record<string, string>): HTMLElement {
  const wrap = h('div', 'hwbv-table-wrap');
  const t = wrap.appendChild(h('table', 'hwbv-table'));
  [columns, ...rows].forEach((cells, k) => {
    const tr = t.appendChild(h('tr'));
    for (const c of cells) tr.appendChild(h(k ? 'td' : 'th')).append(c);
    if (k) Object.assign(tr.dataset, facts(k - 1));
  });
  return wrap;
}

/** The runs of a search, folded: which candidates were on, whether the predicate held. */
function runs(log: [string, boolean][], on: string): HTMLElement {
  const rows = log.map(([what, held], k) => [String(k + 1), what, held ? 'holds' : 'does not hold']);
  const fold = h('details', 'hwbv-an-runs');
  fold.append(h('summary', '', 'the pipeline runs'));
  fold.append(grid(['run', on, 'predicate'], rows, k => ({ hwb: 'search-run', held: String(log[k][1]) })));
  return fold;
}

const ADVICE: Record<string, string> = {
  'not-with-all': 'choose a predicate that holds for this Exploration (with every candidate on)',
  'with-none':
    'the candidates are not what makes it hold: choose a predicate that fails without them, or bisect over other candidates',
  stopped: 'the bisection stopped: see the message'
};

function bisected(r: Facts): Part[] {
  if (r.state === 'failed') {
    const made = r.log.length ? [runs(r.log, r.log_on)] : [];
    return [
      say('hwbv-error')`${b('Nothing bisected')} for ${code(r.expr)}: ${r.message}`,
      `${ADVICE[r.reason]}.`,
      ...made
    ];
  }
  const [p, x] = [r.patterns, r.xla];
  const listed = p.length || r.over === 'patterns'; // the patterns' table, empty or not
  const counts = [
    listed ? plural(p.length, 'pattern', 'patterns') : '',
    x.length ? plural(x.length, 'XLA pass', 'XLA passes') : ''
  ];
  const culprits = (kind: string, rows: Facts[]) => (k: number) => ({ hwb: 'culprit', kind, name: rows[k].name });
  const who = p.length && x.length ? 'the patterns' : 'they';
  const out: HTMLElement[] = [
    say()`${b(counts.filter(Boolean).join(' and '))} make${p.length + x.length === 1 ? 's' : ''} ${code(r.expr)} hold (${r.runs} pipeline runs, ${formatNumber(r.seconds)} s); without any one of them it does not.`
  ];
  if (listed) {
    const rows = p.map((c: Facts) => [code(c.name), c.group, c.parameters ? code(c.parameters) : '', c.changes]);
    out.push(grid(['pattern', 'group', 'parameters', 'without it'], rows, culprits('pattern', p)));
  }
  const xRows = x.map((c: Facts) => [code(c.name), c.changes]);
  if (x.length) out.push(grid(['XLA pass', 'without it'], xRows, culprits('xla', x)));
  if (r.always_needed) {
    const how = r.always_needed_how ? h('span', 'hwbv-note', ` (${r.always_needed_how})`) : '';
    out.push(say()`XLA passes always on (the compile cannot do without them; never culprits): `);
    const needed = r.always_needed.flatMap((n: string, k: number) => [k ? ', ' : '', code(n)]);
    out[out.length - 1].append(...(needed.length ? needed : ['none']), how);
  }
  if (r.delta === null) out.push(say()`what ${who} change could not be computed: ${r.why_not}`);
  else if (!r.delta.length)
    out.push(say()`together ${who} change no op count of ${r.delta_on} (they rewire or re-attribute)`);
  else {
    const chip = (d: Facts) => `${d.op} ${d.before}\u2192${d.after} (${d.delta > 0 ? '+' : ''}${d.delta})`;
    out.push(say()`what ${who} do together, on ${r.delta_on}: `);
    out[out.length - 1].append(
      ...r.delta.map((d: Facts) => h('span', `hwbv-chip hwbv-${d.delta > 0 ? 'up' : 'down'}`, chip(d)))
    );
  }
  return [...out, runs(r.log, r.log_on), say()`to switch them off: ${code(r.python)}`];
}

function reduced(r: Facts): Part[] {
  if (r.state === 'failed')
    return [say('hwbv-error')`${b('Nothing reduced')} from ${code(r.stage)} for ${code(r.expr)}: ${r.message}`];
  const errors = r.errors ? `, ${r.errors} on which the predicate raised` : '';
  const head = say()`Reduced ${code(r.stage)} for ${code(r.expr)} (${code(r.predicate)}): ${b(`ops ${r.ops_before} \u2192 ${r.ops_after}`)}, ${r.runs} runs, ${r.skipped} skipped (did not verify)${errors}, ${formatNumber(r.seconds)} s.`;
  if (r.interrupted) head.append(' ', b('Interrupted'), ': the smallest module found so far.');
  return [
    head,
    h('pre', 'hwbv-an-reduced', r.text),
    say()`${code(r.python)}; then ${code('r.exploration')} explores it`
  ];
}

function compared(r: Facts): Part[] {
  if (r.state === 'failed') return [say('hwbv-error')`${b('No comparison')}: ${r.message}`];
  const t = (x: ITable) => table('hwbv-an-table', x.columns, x.rows);
  const python = say()`${code(r.python)} \u00b7 ${code('wb.plot_pipelines(df)')} draws it`;
  return [
    "Median time per call (ms) after a warm-up, and its interquartile range; the numeric check against the program in float64; the analytic cost and XLA's of the final module; its ops.",
    ...[t(r.table), 'ops by dialect', t(r.dialects), python]
  ];
}

function found(r: Facts, d: Facts, host: IWidgetHost): Part[] {
  const how = r.rows.length ? `; click one to switch it on or off in ${d.name}'s pipeline, as the Passes tab does` : '';
  const failed = r.failed ? `; ${r.failed} failed on it` : '';
  const head = say()`${r.rows.length} of ${r.total} patterns change ${code(r.stage)} when applied alone${failed}${how}`;
  const on = new Set<string>(r.on);
  const toggle = (name: string) => {
    const check = Object.assign(h('input'), { type: 'checkbox', checked: on.has(name), disabled: d.busy });
    check.addEventListener('change', () => host.act('toggle', { names: [name], on: check.checked }));
    const sw = Object.assign(h('label', 'hwbv-an-switch'), { title: `switch ${name} in ${d.name}'s pipeline` });
    sw.append(check, h('code', 'hwbv-an-name', name));
    return sw;
  };
  const columns = [`pattern (click: switch it in ${d.name}'s pipeline)`, 'group', 'ms', `in ${d.name}'s pipeline`];
  const rows = r.rows.map((p: Facts) => [
    toggle(p.name),
    p.group,
    formatNumber(p.ms),
    on.has(p.name) ? 'on' : b('off')
  ]);
  const facts = (k: number) => ({ hwb: 'applicable', name: r.rows[k].name, on: String(on.has(r.rows[k].name)) });
  return r.rows.length ? [head, grid(columns, rows, facts)] : [head];
}

// The sections, top to bottom, one a line:
// key | title | caption | fields (key:label:type, comma-separated) | button | its action | its title
const SECTIONS = `
applicable|Applicable patterns|which patterns change this stage when applied alone|applicable_stage:stage:select|Find applicable patterns|find_applicable|apply every pattern of the catalog alone to this stage
predicate|Predicate|what a bisection and a reduction look for|predicate:predicate:select,op:op:text,n:n:number,device:device:select,stage:stage:text
bisect|Bisect|a minimal set of enabled patterns, XLA passes (those XLA's compile ran) or both that makes the predicate hold. It must hold with every candidate on and not with none.|over:over:select|Bisect|bisect|find a minimal set of enabled patterns and/or XLA passes for which the predicate holds
reduce|Reduce|the smallest module, made from a stage's by deleting and cutting ops, on which the predicate holds (each candidate explored as text with this pipeline)|from_stage:from stage:select|Reduce|reduce|delete and cut ops of the stage's module while the predicate holds
pipelines|Pipelines|what the optimizer buys -- this program through each pipeline (presets or pass strings, comma-separated), on the device picked in the Run tab|pipelines:pipelines:text|Compare pipelines|compare_pipelines|run the program through each pipeline: time per call, the numeric check, cost and op counts side by side
`
  .trim()
  .split('\n')
  .map(line => line.split('|'));
const PROPOSAL: Record<string, (p: Facts) => Part> = {
  proposed: p => say()`Proposed: ${code(p.kind)} with op ${code(p.op)}, n=${p.n}: ${p.why}.`,
  'no-patterns': () =>
    say()`This pipeline applies no Enzyme-JaX patterns (no ${code('enzyme-hlo-patterns')} stage), so a bisection has nothing to find: pick a preset that applies them in the Passes tab.`,
  'no-default': () =>
    'No pattern stage of this pipeline changes an op count, so there is no default predicate to propose: choose one that holds for this Exploration.'
};
const DRAW = { applicable: found, bisect: bisected, reduce: reduced, pipelines: compared };

register('analyze', (el: HTMLElement, data: Facts, host: IWidgetHost): IMounted => {
  const root = el.appendChild(h('div', 'hwbv hwbv-analyze'));
  root.dataset.hwb = 'analyze';
  const [fields, results] = [new Map<string, HTMLInputElement | HTMLSelectElement>(), new Map<string, HTMLElement>()];
  const stages = Object.assign(h('datalist'), { id: `hwbv-an-stages-${Math.random().toString(36).slice(2)}` });
  const field = (spec: string) => {
    const [key, label, type] = spec.split(':');
    const input = type === 'select' ? h('select') : Object.assign(h('input'), { type });
    const value = () => (type === 'number' ? Number(input.value) || 0 : input.value);
    input.addEventListener(type === 'select' ? 'change' : 'input', () => host.act('set', { [key]: value() }));
    input.dataset.field = key;
    fields.set(key, input);
    return say('hwbv-an-field')`${h('span', 'hwbv-label', label)}${input}`;
  };
  const [shown, proposal] = [say('hwbv-note')``, say('hwbv-note')``]; // the predicate's repr, the one proposed
  proposal.dataset.hwb = 'analyze-proposal';
  for (const [key, title, caption, inputs, text, action, tip] of SECTIONS) {
    const row = say('hwbv-an-row')``;
    row.append(
      ...inputs.split(',').map(field),
      ...(text ? [button('hwbv-an-button', text, () => host.act(action), tip)] : [])
    );
    const result = key === 'predicate' ? say('hwbv-an-result')`${stages}${shown}${proposal}` : say('hwbv-an-result')``;
    result.dataset.hwb = `analyze-${key}`;
    if (key !== 'predicate') results.set(key, result);
    root.append(say('hwbv-an-section')`${say()`${b(title)}: ${caption}`}${row}${result}`);
  }
  fields.get('stage')!.setAttribute('list', stages.id);
  const off = button('hwbv-an-button', 'switch these off', () => host.act('switch_culprits_off'));
  off.dataset.hwb = 'switch-culprits-off';
  results.get('bisect')!.after(off);

  const drawn = new Map<string, string>(); // each result's facts as last drawn
  const draw = (d: Facts) => {
    if (!d?.form) return; // nothing shown yet
    stages.replaceChildren(...d.choices.applicable_stage.map((s: string) => Object.assign(h('option'), { value: s })));
    for (const [key, input] of fields) {
      const choices = (d.choices[key] ?? []).map((c: string | string[]) => (typeof c === 'string' ? [c, c] : c));
      const now = Array.from((input as HTMLSelectElement).options ?? [], o => [o.text, o.value]);
      if (input instanceof HTMLSelectElement && JSON.stringify(now) !== JSON.stringify(choices)) {
        input.replaceChildren(...choices.map(([t, value]: string[]) => Object.assign(h('option', '', t), { value })));
      }
      if (document.activeElement !== input) input.value = String(d.form[key] ?? '');
      if (['op', 'n', 'device', 'stage'].includes(key)) input.parentElement!.hidden = !d.params.includes(key);
    }
    (fields.get('stage') as HTMLInputElement).placeholder = d.stage_required ? 'a stage' : 'last MLIR stage';
    root.querySelectorAll('button').forEach(x => (x.disabled = d.busy));
    shown.replaceChildren(say()`predicate: ${d.expr !== undefined ? code(d.expr) : `none yet (${d.expr_error})`}`);
    proposal.dataset.state = d.proposal?.state ?? '';
    proposal.replaceChildren(d.proposal ? PROPOSAL[d.proposal.state](d.proposal) : '');
    for (const [key, out] of results) {
      const r: Facts | null = d[key] ?? null;
      const facts = JSON.stringify([r, d.busy, d.name]);
      if (drawn.get(key) === facts) continue; // as drawn: an open fold of runs stays open while the user types
      drawn.set(key, facts);
      out.dataset.state = r?.state ?? '';
      out.replaceChildren(
        ...(!r ? [] : r.state === 'running' ? [note(`${r.label}\u2026`)] : DRAW[key as keyof typeof DRAW](r, d, host))
      );
    }
    off.hidden = d.bisect?.state !== 'found' || !d.bisect.can_switch_off;
    root.classList.toggle('hwbv-busy', d.busy);
  };
  draw(data);
  return { update: draw, dispose: () => root.remove() };
});
