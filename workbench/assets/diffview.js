// The diff of two stages, virtualized: only the rows in view are in the DOM. Side by side (two
// panes scrolled together) or unified (one pane: deleted and inserted lines interleaved, both line
// numbers, a changed line as a -/+ pair); "auto" picks unified when a side-by-side pane would show
// fewer than MIN_CHARS characters of code. The view components draw it (src/components/diff.ts, which
// says the counts and why there is no diff): `render(el, {height, onOp, mode, onMode})` gives the view,
// whose `load` shows normalized texts and their rows (int32 triples: before line, after line, kind
// code; -1 = no line on that side). `mode` is the layout first shown; `onMode` hears the user pick
// another. With `onOp` (the panel's), a click on a code row is heard as onOp(side: "before" | "after",
// line) and `mark` marks lines of each text (.wbd-mark), scrolled to unless one is in view. A sharded
// stage's value shardings (`load`'s tips: {texts: [description], scopes: [[first line, last line,
// {name: index into texts}]]}, one scope per function: names are per function) show in a popup
// (.wbd-tip) while a value's name (%0, %arg1, %param.3) is hovered.

const ROW_H = 18; // px; must match .wbd-row in diffview.css
const OVERSCAN = 40; // rows painted above and below the viewport; scrolling within them repaints nothing
const MAX_CHARS = 4000; // longer lines are cut (dense constants can be megabytes)
const CONTEXT = 3; // unchanged lines kept around changes in "changes only"
const KINDS = ['equal', 'changed', 'deleted', 'inserted', 'moved']; // a row's kind by its code: workbench/analysis/diff/kinds.py's ROW_KINDS
const MIN_CHARS = 80; // "auto" shows side by side only when each pane shows this many characters
const TITLE_CHARS = 3000; // the hover title of a line cut by the pane's width shows this much of it
const RULER = { changed: '#c4a000', deleted: '#cc0000', inserted: '#4e9a06', moved: '#75507b' };

// ---- highlighting: MLIR / StableHLO / XLA HLO lines -> [text, class] tokens -----------------------
// The one tokenizer of the project: the panel's diff view and the offline report use it from this file,
// and the JupyterLab extension (extensions/hlo-workbench-lab) imports it from here into its CodeMirror
// language. A token's class `c` is shown as the CSS class `h-c` (diffview.css) in all three.
export const TOKEN_CLASSES = Object.freeze(['com', 'str', 'loc', 'ssa', 'sym', 'type', 'attr', 'op', 'kw', 'num']);
export const RULES = new RegExp(
  [
    String.raw`(?<com>\/\/.*$|\/\*.*?\*\/)`, // a line comment; a block comment as in HLO's /*index=5*/
    String.raw`(?<str>"(?:[^"\\]|\\.)*"?)`,
    String.raw`(?<loc>\bloc(?=\()|#loc\d*\b)`, // a location: loc(...) and its alias #loc3 (= loc(...))
    String.raw`(?<ssa>[%^][\w$.\-]+(?:#\d+)?)`,
    String.raw`(?<sym>@[\w$.\-]+)`,
    String.raw`(?<type>(?:\b(?:tensor|memref|vector|tuple|complex)|![\w.]+)<|![\w.]+|\b(?:[fiu]\d+|bf16|f8E\w+|index|pred|token|s\d+)(?:\[[^\]\s]*\](?:\{[^}\s]*\})?|\b))`,
    String.raw`(?<dattr>#[\w$.\-]+)`,
    String.raw`(?<attr>\b[A-Za-z_][\w.$\-]*(?=\s*=[^=]))`,
    String.raw`(?<op>\b[a-z_]\w*\.[a-z_][\w.]*\b|\b[a-z][a-z0-9\-]*(?=\())`,
    String.raw`(?<kw>\b(?:ROOT|ENTRY|HloModule|module|attributes|return|dense|to|x|applies)\b)`,
    String.raw`(?<num>-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\b0x[0-9A-Fa-f]+\b|\b(?:true|false)\b)`
  ].join('|'),
  'g'
);
const PLAIN = /\s+|\w+|[^\s\w]/g;

// The end of a bracketed type or attribute opened by "<" before `from` ("->" inside does not close).
function closeAngle(line, from) {
  let depth = 1;
  for (let k = from; k < line.length; k++) {
    const c = line[k];
    if (c === '"') {
      for (k++; k < line.length && line[k] !== '"'; k++) if (line[k] === '\\') k++;
    } else if (c === '<') depth++;
    else if (c === '>' && line[k - 1] !== '-' && --depth === 0) return k + 1;
  }
  return line.length;
}

export function tokenize(line) {
  const out = [];
  const plain = text => {
    for (const m of text.matchAll(PLAIN)) out.push([m[0], '']);
  };
  let pos = 0;
  let m;
  RULES.lastIndex = 0;
  while ((m = RULES.exec(line)) !== null) {
    const cls = Object.keys(m.groups).find(k => m.groups[k] !== undefined);
    let end = RULES.lastIndex;
    if (cls === 'type' && m[0].endsWith('<')) end = closeAngle(line, end);
    if (cls === 'dattr' && line[end] === '<') end = closeAngle(line, end + 1);
    if (m.index > pos) plain(line.slice(pos, m.index));
    out.push([line.slice(m.index, end), cls === 'dattr' ? 'attr' : cls]);
    pos = RULES.lastIndex = end;
  }
  if (pos < line.length) plain(line.slice(pos));
  return out;
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
export const escape = s => s.replace(/[&<>"]/g, c => ESC[c]);

// HTML of tokens; those with index in [from, to) are marked as the changed part of a changed line.
export function toHtml(tokens, from = -1, to = -1) {
  let html = '';
  for (let k = 0; k < tokens.length; k++) {
    const [text, cls] = tokens[k];
    const c = (cls ? 'h-' + cls : '') + (k >= from && k < to && text.trim() ? ' h-mark' : '');
    html += c ? `<span class="${c.trim()}">${escape(text)}</span>` : escape(text);
  }
  return html;
}

// The differing middle of two token lists, after their common prefix and suffix: [from, toA, toB].
export function changedRange(a, b) {
  let p = 0;
  while (p < a.length && p < b.length && a[p][0] === b[p][0]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s][0] === b[b.length - 1 - s][0]) s++;
  return [p, a.length - s, b.length - s];
}

// ---- the view ----------------------------------------------------------------------------------
// Row indices to show; in "changes only" a negative entry -n stands for n folded unchanged rows.
// Rows for which `marked(k)` holds are kept as changes are.
function visibleRows(rows, foldEqual, marked = () => false) {
  const n = rows.length / 3;
  if (!foldEqual) return Int32Array.from({ length: n }, (_, k) => k);
  const keep = new Uint8Array(n);
  for (let k = 0; k < n; k++) {
    if (rows[3 * k + 2] !== 0 || marked(k)) keep.fill(1, Math.max(0, k - CONTEXT), Math.min(n, k + CONTEXT + 1));
  }
  const out = [];
  for (let k = 0; k < n;) {
    if (keep[k]) out.push(k++);
    else {
      let e = k;
      while (e < n && !keep[e]) e++;
      out.push(k - e);
      k = e;
    }
  }
  return Int32Array.from(out);
}

// The rows painted, as pairs (index into `vis`, part): part 0 shows both sides (side by side, or an
// unchanged line or a fold in unified), 1 the before line only ("-"), 2 the after line only ("+").
// In unified a changed row becomes a "-" row followed by a "+" row.
export function displayRows(rows, vis, unified) {
  const out = new Int32Array(2 * (unified ? 2 * vis.length : vis.length));
  let d = 0;
  for (let v = 0; v < vis.length; v++) {
    const k = vis[v];
    if (!unified || k < 0 || rows[3 * k + 2] === 0) {
      out[d++] = v;
      out[d++] = 0;
      continue;
    }
    if (rows[3 * k] >= 0) {
      out[d++] = v;
      out[d++] = 1;
    }
    if (rows[3 * k + 1] >= 0) {
      out[d++] = v;
      out[d++] = 2;
    }
  }
  return out.slice(0, d);
}

// The layout to show: the chosen one, or for "auto" side by side when each of the two panes of a
// body `width` px wide shows at least MIN_CHARS characters after its line-number `gutter`.
export function chooseMode(mode, width, charW, gutter, ruler = 10) {
  if (mode === 'split' || mode === 'unified') return mode;
  if (!width || !charW) return null; // not laid out yet: keep what is shown
  const paneChars = ((width - ruler) / 2 - 1 - gutter) / charW;
  return paneChars >= MIN_CHARS ? 'split' : 'unified';
}

// The view in `el`, `height` px tall: {load, mark, dispose} (see the header).
export function render(el, { height = 420, onOp = null, mode = 'auto', onMode = null } = {}) {
  el.classList.add('wbd');
  el.tabIndex = 0;
  el.innerHTML = `
    <div class="wb-bar wbd-bar">
      <span class="wbd-tools">
        <select class="wbd-mode" title="side by side, or one pane with the deleted and inserted lines interleaved; auto: unified when a side-by-side pane would show fewer than ${MIN_CHARS} characters">
          <option value="auto">auto</option><option value="split">side by side</option><option value="unified">unified</option>
        </select>
        <label class="wbd-foldlabel"><input type="checkbox" class="wbd-fold"> changes only</label>
        <button class="wbd-prev" title="previous change (p)">&#9650; prev</button>
        <button class="wbd-next" title="next change (n)">&#9660; next change</button>
        <span class="wbd-pos"></span>
      </span>
    </div>
    <div class="wbd-heads"><div class="wbd-head wbd-head-l"></div><div class="wbd-head wbd-head-r"></div><div class="wbd-ruler-head"></div></div>
    <div class="wbd-body">
      <div class="wbd-pane wbd-l"><div class="wbd-sizer"></div><div class="wbd-rows"></div></div>
      <div class="wbd-pane wbd-r"><div class="wbd-sizer"></div><div class="wbd-rows"></div></div>
      <div class="wbd-pane wbd-u"><div class="wbd-sizer"></div><div class="wbd-rows"></div></div>
      <canvas class="wbd-ruler" title="where the changes are; click to jump"></canvas>
    </div>`;
  const tip = document.createElement('div'); // the popup of a value's sharding (tips_before/tips_after)
  tip.className = 'wbd-tip';
  const $ = s => el.querySelector(s);
  const body = $('.wbd-body');
  const panes = [$('.wbd-l'), $('.wbd-r'), $('.wbd-u')]; // before, after, and the unified pane
  const blocks = panes.map(p => p.querySelector('.wbd-rows'));
  const sizers = panes.map(p => p.querySelector('.wbd-sizer'));
  const ruler = $('.wbd-ruler');
  const fold = $('.wbd-fold');
  const modeSelect = $('.wbd-mode');
  modeSelect.value = mode;
  body.appendChild(tip);

  let B = [],
    A = [],
    rows = new Int32Array(0),
    vis = new Int32Array(0),
    starts = [];
  let disp = new Int32Array(0); // displayRows(): what each painted row shows
  let unified = false; // the layout shown now
  let cache = new Map(); // "side:line" -> highlighted tokens
  let painted = [-1, -1];
  let raf = 0;
  let charW = 0,
    gutter = 0,
    gutterU = 0; // px: a code character, the line-number gutters
  let maxChars = 0;
  let loadStarted = 0; // performance.now() of the last load, until its first paint
  el.dataset.mode = 'split';
  let picked = [new Set(), new Set()]; // the marked lines: before, after
  let focus = -1; // the side whose marks are scrolled to first (0 before, 1 after; -1 either)
  let wantMarks = false; // scroll to the marks when the view gets its size
  el.classList.toggle('wbd-marking', !!onOp);
  let tips = [null, null]; // the values' shardings of each side
  let tipToken = null; // the name whose sharding the popup shows

  const count = () => disp.length / 2;
  const main = () => panes[unified ? 2 : 0]; // the pane whose scrolling the others follow
  const shownPanes = () => (unified ? [2] : [0, 1]);

  const tokens = (side, line) => {
    const key = side + line;
    let t = cache.get(key);
    if (t === undefined) {
      let text = (side === 'b' ? B : A)[line] ?? '';
      if (text.length > MAX_CHARS) text = text.slice(0, MAX_CHARS) + ` … (${text.length - MAX_CHARS} more characters)`;
      t = tokenize(text);
      if (cache.size > 20000) cache = new Map();
      cache.set(key, t);
    }
    return t;
  };

  // Shows texts `before` and `after` (normalized), their `rows`, the sides' names and their values' `tips`.
  function load({ before, after, rows: r, beforeName, afterName, tips: t = [] }) {
    loadStarted = performance.now();
    B = before.split('\n');
    A = after.split('\n');
    rows = r;
    cache = new Map();
    maxChars = 0;
    for (let k = 0; k < rows.length; k += 3) {
      const i = rows[k],
        j = rows[k + 1];
      if (i >= 0) maxChars = Math.max(maxChars, Math.min(B[i].length, MAX_CHARS + 40));
      if (j >= 0) maxChars = Math.max(maxChars, Math.min(A[j].length, MAX_CHARS + 40));
    }
    // The same pair recomputed (a pattern toggled): stay where the reader is.
    const samePair = $('.wbd-head-l').textContent === beforeName && $('.wbd-head-r').textContent === afterName;
    $('.wbd-head-l').textContent = beforeName;
    $('.wbd-head-r').textContent = afterName;
    hideTip();
    tips = [t[0], t[1]].map(x => (x && x.scopes && x.scopes.length ? x : null));
    el.dataset.tips = String(tips.filter(Boolean).length);
    relayout(!samePair);
    applyMode();
    if (picked[0].size || picked[1].size) showMarks();
  }

  function relayout(toTop) {
    vis = visibleRows(rows, fold.checked, markedRow);
    index(toTop);
  }

  // The description of value `name` used on `line` of side "b" or "a", or null.
  function tipFor(side, line, name) {
    const t = tips[side === 'b' ? 0 : 1];
    if (!t) return null;
    for (const [first, last, values] of t.scopes) {
      if (line < first || line > last) continue;
      const k = values[name];
      return k === undefined ? null : t.texts[k];
    }
    return null;
  }

  function showTip(token, text) {
    const [summary, ...rest] = text.split('\n');
    tip.innerHTML =
      `<div class="wbd-tip-head"><span class="h-ssa">${escape(token.textContent)}</span> ${escape(summary)}</div>` +
      rest.map(r => `<div class="wbd-tip-code">${escape(r)}</div>`).join('');
    tip.style.display = 'block';
    tip.dataset.name = token.textContent;
    tipToken = token;
    placeTip();
  }

  // Beside its name: below it, or above it when there is no room below; within the view's width.
  function placeTip() {
    const token = tipToken;
    const box = body.getBoundingClientRect(),
      r = token.getBoundingClientRect();
    const w = tip.offsetWidth,
      h = tip.offsetHeight;
    const below = r.bottom - box.top + 2;
    tip.style.top =
      (below + h > body.clientHeight && r.top - box.top - h - 2 >= 0 ? r.top - box.top - h - 2 : below) + 'px';
    tip.style.left = Math.max(0, Math.min(r.left - box.left, body.clientWidth - w - 4)) + 'px';
  }

  function hideTip() {
    tipToken = null;
    if (tip.style.display !== 'none') tip.style.display = 'none';
  }

  // Scrolled: the popup follows its name while that is painted, and goes with it.
  const followTip = () => {
    if (tipToken && tipToken.isConnected) placeTip();
    else if (tipToken) hideTip();
  };

  const markedRow = k => picked[0].has(rows[3 * k]) || picked[1].has(rows[3 * k + 1]);

  // Whether painted row d shows a marked line of `side` (0 before, 1 after, -1 either).
  function markedAt(d, side) {
    const k = vis[disp[2 * d]],
      part = disp[2 * d + 1];
    if (k < 0) return false;
    const b = part !== 2 && picked[0].has(rows[3 * k]);
    const a = part !== 1 && picked[1].has(rows[3 * k + 1]);
    return side === 0 ? b : side === 1 ? a : a || b;
  }

  // Scroll to the first marked row (of `focus`'s side, if it has any) unless one is in view.
  function showMarks() {
    const n = count();
    let side = focus,
      first = -1;
    for (const s of focus >= 0 ? [focus, -1] : [-1]) {
      for (let d = 0; d < n && first < 0; d++) if (markedAt(d, s)) first = d;
      side = s;
      if (first >= 0) break;
    }
    el.dataset.marks = String(picked[0].size + picked[1].size);
    if (first < 0) return;
    const pane = main();
    wantMarks = !pane.clientHeight; // not laid out yet (a tab not shown): scroll once it is
    if (wantMarks) return;
    const top = Math.ceil(pane.scrollTop / ROW_H),
      bottom = Math.floor((pane.scrollTop + pane.clientHeight) / ROW_H);
    for (let d = Math.max(top, first); d < Math.min(n, bottom); d++) if (markedAt(d, side)) return;
    scrollToRow(first);
  }

  // Marks lines of each side (0-based, as shown); `first` ("before", "after", "": either) is scrolled to first.
  function mark(before, after, first = '') {
    picked = [new Set(before), new Set(after)];
    focus = { before: 0, after: 1 }[first] ?? -1;
    relayout(false);
    showMarks();
  }

  // The painted rows of the layout shown, where the changes start, the panes' heights.
  function index(toTop) {
    disp = displayRows(rows, vis, unified);
    starts = [];
    let prev = 0;
    for (let d = 0; d < count(); d++) {
      const k = vis[disp[2 * d]];
      const kind = k >= 0 ? rows[3 * k + 2] : 0;
      if (kind !== 0 && prev === 0) starts.push(d);
      prev = kind;
    }
    for (const s of sizers) s.style.height = count() * ROW_H + 'px';
    if (toTop) for (const p of panes) p.scrollTop = p.scrollLeft = 0;
    painted = [-1, -1];
    schedule();
    drawRuler();
  }

  // The first painted row that shows vis[v] (or what follows it).
  function displayIndex(v) {
    let lo = 0,
      hi = count();
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (disp[2 * mid] < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // Side by side or unified, as the mode says (auto: by the width); the row at the top stays there.
  function applyMode() {
    const shown = chooseMode(mode, body.clientWidth, charW, gutter);
    if (shown !== null && (shown === 'unified') !== unified) {
      const pane = main();
      const topV = count() ? disp[2 * Math.min(count() - 1, Math.floor(pane.scrollTop / ROW_H))] : 0;
      const left = pane.scrollLeft;
      unified = shown === 'unified';
      el.dataset.mode = shown;
      el.classList.toggle('wbd-unified', unified);
      index(false);
      for (const s of shownPanes()) {
        panes[s].scrollTop = displayIndex(topV) * ROW_H;
        panes[s].scrollLeft = left;
      }
    }
    modeSelect.options[0].textContent = `auto (${unified ? 'unified' : 'side by side'})`;
  }

  function measure() {
    if (charW || !body.clientWidth) return;
    const probe = document.createElement('div');
    probe.style.cssText = 'position: absolute; visibility: hidden; left: 0; top: 0';
    probe.innerHTML =
      `<div class="wbd-row"><span class="wbd-ln">1</span><span class="wbd-code">${'x'.repeat(100)}</span></div>` +
      `<div class="wbd-row"><span class="wbd-ln wbd-ln2"><span class="wbd-n">1</span><span class="wbd-n">1</span><span class="wbd-sign">+</span></span><span class="wbd-code">x</span></div>`;
    body.appendChild(probe);
    const [split, one] = probe.querySelectorAll('.wbd-code');
    const box = probe.getBoundingClientRect();
    charW = split.getBoundingClientRect().width / 100;
    gutter = split.getBoundingClientRect().left - box.left;
    gutterU = one.getBoundingClientRect().left - box.left;
    probe.remove();
  }

  function rowHtml(side, line, kind, marks) {
    if (line < 0) return `<div class="wbd-row wbd-none k-${KINDS[kind]}"><span class="wbd-ln"></span></div>`;
    const t = tokens(side, line);
    const code = marks ? toHtml(t, marks[0], marks[1]) : toHtml(t);
    const mark = picked[side === 'b' ? 0 : 1].has(line) ? ' wbd-mark' : '';
    return `<div class="wbd-row k-${KINDS[kind]}${mark}" data-t="${side}${line}"><span class="wbd-ln">${line + 1}</span><span class="wbd-code">${code}</span></div>`;
  }

  // One unified row: both line numbers, the sign, and the before (part 1) or after text.
  function unifiedRowHtml(i, j, kind, part, marks) {
    const side = part === 1 ? 'b' : 'a';
    const line = part === 1 ? i : j;
    const t = tokens(side, line);
    const code = marks ? toHtml(t, marks[0], marks[1]) : toHtml(t);
    const [cls, sign] = part === 1 ? [' u-minus', '-'] : part === 2 ? [' u-plus', '+'] : ['', ' '];
    const mark = (part !== 2 && picked[0].has(i)) || (part !== 1 && picked[1].has(j)) ? ' wbd-mark' : '';
    return (
      `<div class="wbd-row k-${KINDS[kind]}${cls}${mark}" data-t="${side}${line}"><span class="wbd-ln wbd-ln2">` +
      `<span class="wbd-n">${part === 2 ? '' : i + 1}</span><span class="wbd-n">${part === 1 ? '' : j + 1}</span>` +
      `<span class="wbd-sign">${sign}</span></span><span class="wbd-code">${code}</span></div>`
    );
  }

  function paint() {
    raf = 0;
    measure();
    const pane = main();
    const top = pane.scrollTop;
    const height = pane.clientHeight || 600;
    updatePos(top);
    const n = count();
    const inView = Math.max(0, Math.floor(top / ROW_H));
    const inViewEnd = Math.min(n, Math.ceil((top + height) / ROW_H));
    if (painted[0] >= 0 && inView >= painted[0] && inViewEnd <= painted[1]) return;
    const first = Math.max(0, inView - OVERSCAN);
    const last = Math.min(n, inViewEnd + OVERSCAN);
    painted = [first, last];
    const html = ['', '', ''];
    for (let d = first; d < last; d++) {
      const v = disp[2 * d],
        part = disp[2 * d + 1],
        k = vis[v];
      if (k < 0) {
        const f = `<div class="wbd-row wbd-folded" data-v="${v}">&hellip; ${-k} unchanged lines &hellip;</div>`;
        for (const s of shownPanes()) html[s] += f;
        continue;
      }
      const i = rows[3 * k],
        j = rows[3 * k + 1],
        kind = rows[3 * k + 2];
      let mb = null,
        ma = null;
      if (kind === 1) {
        const [from, toB, toA] = changedRange(tokens('b', i), tokens('a', j));
        mb = [from, toB];
        ma = [from, toA];
      }
      if (unified) html[2] += unifiedRowHtml(i, j, kind, part, part === 1 ? mb : ma);
      else {
        html[0] += rowHtml('b', i, kind, mb);
        html[1] += rowHtml('a', j, kind, ma);
      }
    }
    const width = charW ? Math.ceil(maxChars * charW) + (unified ? gutterU : gutter) + 24 : 0;
    for (const s of shownPanes()) {
      blocks[s].style.top = first * ROW_H + 'px';
      blocks[s].style.minWidth = width ? width + 'px' : '';
      blocks[s].innerHTML = html[s];
      sizers[s].style.width = width ? width + 'px' : '';
    }
    followTip();
    if (loadStarted) {
      // What a load costs in the browser (split, index, first paint), for the browser tests to read.
      el.dataset.renderMs = (performance.now() - loadStarted).toFixed(1);
      el.dataset.rows = String(rows.length / 3);
      loadStarted = 0;
    }
  }

  const schedule = () => {
    if (!raf) raf = requestAnimationFrame(paint);
  };

  function drawRuler() {
    const h = body.clientHeight;
    if (!h) return;
    const dpr = window.devicePixelRatio || 1;
    ruler.width = 10 * dpr;
    ruler.height = h * dpr;
    const ctx = ruler.getContext('2d');
    ctx.clearRect(0, 0, ruler.width, ruler.height);
    const n = count();
    if (!n) return;
    const scale = (h * dpr) / n;
    for (let d = 0; d < n; d++) {
      const k = vis[disp[2 * d]];
      if (k < 0) continue;
      const kind = rows[3 * k + 2];
      if (!kind) continue;
      ctx.fillStyle = RULER[KINDS[kind]];
      ctx.fillRect(0, Math.floor(d * scale), ruler.width, Math.max(2 * dpr, Math.ceil(scale)));
    }
  }

  function scrollToRow(d) {
    main().scrollTop = Math.max(0, (d - 3) * ROW_H);
    schedule();
  }

  // The row a change is scrolled to sits 3 rows below the top.
  function current(top = main().scrollTop) {
    return Math.floor(top / ROW_H) + 3;
  }

  let posText = '';
  function updatePos(top) {
    const cur = current(top);
    let lo = 0,
      hi = starts.length; // how many changes start at or above `cur`
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= cur) lo = mid + 1;
      else hi = mid;
    }
    const text = starts.length ? `change ${Math.max(lo, 1)} of ${starts.length}` : '';
    if (text !== posText) $('.wbd-pos').textContent = posText = text;
  }

  function next(dir) {
    if (!starts.length) return;
    const cur = current();
    let target;
    if (dir > 0) target = starts.find(s => s > cur) ?? starts[0];
    else target = [...starts].reverse().find(s => s < cur) ?? starts[starts.length - 1];
    scrollToRow(target);
  }

  // Scrolling one side scrolls the other to the same place.
  panes.forEach((p, s) => {
    const other = s < 2 ? panes[1 - s] : null;
    p.addEventListener(
      'scroll',
      () => {
        followTip();
        if (other && other.scrollTop !== p.scrollTop) other.scrollTop = p.scrollTop;
        if (other && other.scrollLeft !== p.scrollLeft) other.scrollLeft = p.scrollLeft;
        schedule();
      },
      { passive: true }
    );
  });
  $('.wbd-next').addEventListener('click', () => next(1));
  $('.wbd-prev').addEventListener('click', () => next(-1));
  fold.addEventListener('change', () => relayout(true));
  modeSelect.addEventListener('change', () => {
    mode = modeSelect.value;
    onMode?.(mode);
    applyMode();
  });
  el.addEventListener('keydown', e => {
    if (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT') return;
    if (e.key === 'n' || e.key === 'p') {
      next(e.key === 'n' ? 1 : -1);
      e.preventDefault();
      e.stopPropagation();
    }
  });
  ruler.addEventListener('click', e => {
    const r = ruler.getBoundingClientRect();
    scrollToRow(Math.floor(((e.clientY - r.top) / r.height) * count()));
  });
  body.addEventListener('click', e => {
    const f = e.target.closest('.wbd-folded');
    const row = onOp && !f && e.target.closest('.wbd-row[data-t]');
    if (row && !String(window.getSelection?.() ?? '')) {
      // a drag that selects text is no click on an op
      onOp(row.dataset.t[0] === 'b' ? 'before' : 'after', Number(row.dataset.t.slice(1)));
    }
    if (!f) return;
    const v = Number(f.dataset.v);
    const start = v > 0 ? vis[v - 1] + 1 : 0; // the first folded row
    fold.checked = false;
    relayout(false);
    scrollToRow(displayIndex(start)); // unfolded, vis[k] is row k
  });
  // A value's name shows its sharding (load's tips) while hovered.
  body.addEventListener('mouseover', e => {
    const token = (tips[0] || tips[1]) && e.target.closest('.h-ssa');
    const row = token && token.closest('.wbd-row[data-t]');
    const text = row && tipFor(row.dataset.t[0], Number(row.dataset.t.slice(1)), token.textContent);
    if (text) showTip(token, text);
  });
  body.addEventListener('mouseout', e => {
    if (e.target.closest('.h-ssa')) hideTip();
  });
  // A line wider than its pane shows whole in the row's title (set on the first hover).
  body.addEventListener('mouseover', e => {
    const row = e.target.closest('.wbd-row[data-t]');
    if (!row || row.dataset.titled) return;
    row.dataset.titled = '1';
    const text = (row.dataset.t[0] === 'b' ? B : A)[Number(row.dataset.t.slice(1))] ?? '';
    const room = charW ? (row.closest('.wbd-pane').clientWidth - (unified ? gutterU : gutter)) / charW : 0;
    if (text.length <= room) return;
    row.title =
      text.length > TITLE_CHARS
        ? text.slice(0, TITLE_CHARS) + ` … (${text.length - TITLE_CHARS} more characters)`
        : text;
  });

  body.style.height = height + 'px';
  const resize = new ResizeObserver(() => {
    measure();
    applyMode();
    painted = [-1, -1];
    schedule();
    drawRuler();
    if (wantMarks) showMarks();
  });
  resize.observe(body);

  const dispose = () => {
    resize.disconnect();
    if (raf) cancelAnimationFrame(raf);
  };
  return { load, mark, dispose };
}
