// Side-by-side diff of two stages, virtualized: only the rows in view are in the DOM.
// Model: before/after (normalized texts), rows (int32 triples: before line, after line, kind code;
// -1 = no line on that side), before_name/after_name, message, height.

const ROW_H = 18; // px; must match .wbd-row in diffview.css
const OVERSCAN = 40; // rows painted above and below the viewport; scrolling within them repaints nothing
const MAX_CHARS = 4000; // longer lines are cut (dense constants can be megabytes)
const CONTEXT = 3; // unchanged lines kept around changes in "changes only"
const KINDS = ["equal", "changed", "deleted", "inserted", "moved"];
const RULER = { 1: "#c4a000", 2: "#cc0000", 3: "#4e9a06", 4: "#75507b" };

// ---- highlighting: MLIR / StableHLO / XLA HLO lines -> [text, class] tokens -----------------------
const RULES = new RegExp(
  [
    String.raw`(?<com>\/\/.*$)`,
    String.raw`(?<str>"(?:[^"\\]|\\.)*"?)`,
    String.raw`(?<ssa>[%^][\w$.\-]+(?:#\d+)?)`,
    String.raw`(?<sym>@[\w$.\-]+)`,
    String.raw`(?<type>(?:\b(?:tensor|memref|vector|tuple|complex)|![\w.]+)<|![\w.]+|\b(?:[fiu]\d+|bf16|f8E\w+|index|pred|token|s\d+)(?:\[[^\]\s]*\](?:\{[^}\s]*\})?|\b))`,
    String.raw`(?<dattr>#[\w$.\-]+)`,
    String.raw`(?<attr>\b[A-Za-z_][\w.$\-]*(?=\s*=[^=]))`,
    String.raw`(?<op>\b[a-z_]\w*\.[a-z_][\w.]*\b|\b[a-z][a-z0-9\-]*(?=\())`,
    String.raw`(?<kw>\b(?:ROOT|ENTRY|HloModule|module|attributes|return|dense|to|x|applies)\b)`,
    String.raw`(?<num>-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\b0x[0-9A-Fa-f]+\b|\b(?:true|false)\b)`,
  ].join("|"),
  "g",
);
const PLAIN = /\s+|\w+|[^\s\w]/g;

// The end of a bracketed type or attribute opened by "<" before `from` ("->" inside does not close).
function closeAngle(line, from) {
  let depth = 1;
  for (let k = from; k < line.length; k++) {
    const c = line[k];
    if (c === '"') {
      for (k++; k < line.length && line[k] !== '"'; k++) if (line[k] === "\\") k++;
    } else if (c === "<") depth++;
    else if (c === ">" && line[k - 1] !== "-" && --depth === 0) return k + 1;
  }
  return line.length;
}

export function tokenize(line) {
  const out = [];
  const plain = (text) => {
    for (const m of text.matchAll(PLAIN)) out.push([m[0], ""]);
  };
  let pos = 0;
  let m;
  RULES.lastIndex = 0;
  while ((m = RULES.exec(line)) !== null) {
    const cls = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
    let end = RULES.lastIndex;
    if (cls === "type" && m[0].endsWith("<")) end = closeAngle(line, end);
    if (cls === "dattr" && line[end] === "<") end = closeAngle(line, end + 1);
    if (m.index > pos) plain(line.slice(pos, m.index));
    out.push([line.slice(m.index, end), cls === "dattr" ? "attr" : cls]);
    pos = RULES.lastIndex = end;
  }
  if (pos < line.length) plain(line.slice(pos));
  return out;
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
export const escape = (s) => s.replace(/[&<>"]/g, (c) => ESC[c]);

// HTML of tokens; those with index in [from, to) are marked as the changed part of a changed line.
export function toHtml(tokens, from = -1, to = -1) {
  let html = "";
  for (let k = 0; k < tokens.length; k++) {
    const [text, cls] = tokens[k];
    const c = (cls ? "h-" + cls : "") + (k >= from && k < to && text.trim() ? " h-mark" : "");
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
function readRows(view) {
  if (!view || view.byteLength === 0) return new Int32Array(0);
  const bytes = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
  return new Int32Array(bytes);
}

// Row indices to show; in "changes only" a negative entry -n stands for n folded unchanged rows.
function visibleRows(rows, foldEqual) {
  const n = rows.length / 3;
  if (!foldEqual) return Int32Array.from({ length: n }, (_, k) => k);
  const keep = new Uint8Array(n);
  for (let k = 0; k < n; k++) {
    if (rows[3 * k + 2] !== 0) keep.fill(1, Math.max(0, k - CONTEXT), Math.min(n, k + CONTEXT + 1));
  }
  const out = [];
  for (let k = 0; k < n; ) {
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

function render({ model, el }) {
  el.classList.add("wbd");
  el.tabIndex = 0;
  el.innerHTML = `
    <div class="wbd-bar">
      <span class="wbd-stats"></span>
      <span class="wbd-spacer"></span>
      <label class="wbd-foldlabel"><input type="checkbox" class="wbd-fold"> changes only</label>
      <button class="wbd-prev" title="previous change (p)">&#9650; prev</button>
      <button class="wbd-next" title="next change (n)">&#9660; next change</button>
      <span class="wbd-pos"></span>
    </div>
    <div class="wbd-heads"><div class="wbd-head wbd-head-l"></div><div class="wbd-head wbd-head-r"></div><div class="wbd-ruler-head"></div></div>
    <div class="wbd-body">
      <div class="wbd-pane wbd-l"><div class="wbd-sizer"></div><div class="wbd-rows"></div></div>
      <div class="wbd-pane wbd-r"><div class="wbd-sizer"></div><div class="wbd-rows"></div></div>
      <canvas class="wbd-ruler" title="where the changes are; click to jump"></canvas>
    </div>
    <div class="wbd-msg"></div>`;
  const $ = (s) => el.querySelector(s);
  const body = $(".wbd-body");
  const panes = [$(".wbd-l"), $(".wbd-r")];
  const blocks = panes.map((p) => p.querySelector(".wbd-rows"));
  const sizers = panes.map((p) => p.querySelector(".wbd-sizer"));
  const ruler = $(".wbd-ruler");
  const fold = $(".wbd-fold");

  let B = [], A = [], rows = new Int32Array(0), vis = new Int32Array(0), starts = [];
  let cache = new Map(); // "side:line" -> highlighted tokens
  let painted = [-1, -1];
  let raf = 0;
  let charW = 0;
  let maxChars = 0;
  let loadStarted = 0; // performance.now() of the last load, until its first paint

  const tokens = (side, line) => {
    const key = side + line;
    let t = cache.get(key);
    if (t === undefined) {
      let text = (side === "b" ? B : A)[line] ?? "";
      if (text.length > MAX_CHARS) text = text.slice(0, MAX_CHARS) + ` … (${text.length - MAX_CHARS} more characters)`;
      t = tokenize(text);
      if (cache.size > 20000) cache = new Map();
      cache.set(key, t);
    }
    return t;
  };

  function load() {
    loadStarted = performance.now();
    B = model.get("before").split("\n");
    A = model.get("after").split("\n");
    rows = readRows(model.get("rows"));
    cache = new Map();
    maxChars = 0;
    const count = [0, 0, 0, 0, 0];
    for (let k = 0; k < rows.length; k += 3) {
      count[rows[k + 2]]++;
      const i = rows[k], j = rows[k + 1];
      if (i >= 0) maxChars = Math.max(maxChars, Math.min(B[i].length, MAX_CHARS + 40));
      if (j >= 0) maxChars = Math.max(maxChars, Math.min(A[j].length, MAX_CHARS + 40));
    }
    const msg = model.get("message");
    $(".wbd-msg").textContent = msg;
    el.classList.toggle("wbd-has-msg", !!msg);
    // The same pair recomputed (a pattern toggled): stay where the reader is.
    const samePair = $(".wbd-head-l").textContent === model.get("before_name") &&
      $(".wbd-head-r").textContent === model.get("after_name");
    $(".wbd-head-l").textContent = model.get("before_name");
    $(".wbd-head-r").textContent = model.get("after_name");
    const n = rows.length / 3;
    const parts = [];
    if (count[1]) parts.push(`<span class="k-changed">~${count[1]} changed</span>`);
    if (count[2]) parts.push(`<span class="k-deleted">&minus;${count[2]} deleted</span>`);
    if (count[3]) parts.push(`<span class="k-inserted">+${count[3]} inserted</span>`);
    if (count[4]) parts.push(`<span class="k-moved">${count[4]} moved</span>`);
    const summary = parts.length ? ": " + parts.join(" ") : ": no changes";
    $(".wbd-stats").innerHTML = msg ? "" : `${n.toLocaleString("en-US")} rows` + summary;
    relayout(!samePair);
  }

  function relayout(toTop) {
    vis = visibleRows(rows, fold.checked);
    starts = [];
    let prev = 0;
    for (let v = 0; v < vis.length; v++) {
      const kind = vis[v] >= 0 ? rows[3 * vis[v] + 2] : 0;
      if (kind !== 0 && prev === 0) starts.push(v);
      prev = kind;
    }
    for (const s of sizers) s.style.height = vis.length * ROW_H + "px";
    if (toTop) for (const p of panes) p.scrollTop = p.scrollLeft = 0;
    painted = [-1, -1];
    schedule();
    drawRuler();
  }

  function measure() {
    if (charW || !body.clientHeight) return;
    const probe = document.createElement("span");
    probe.className = "wbd-code";
    probe.style.position = "absolute";
    probe.style.visibility = "hidden";
    probe.textContent = "x".repeat(100);
    blocks[0].appendChild(probe);
    charW = probe.getBoundingClientRect().width / 100;
    probe.remove();
  }

  function rowHtml(side, line, kind, marks) {
    if (line < 0) return `<div class="wbd-row wbd-none k-${KINDS[kind]}"><span class="wbd-ln"></span></div>`;
    const t = tokens(side, line);
    const code = marks ? toHtml(t, marks[0], marks[1]) : toHtml(t);
    return `<div class="wbd-row k-${KINDS[kind]}"><span class="wbd-ln">${line + 1}</span><span class="wbd-code">${code}</span></div>`;
  }

  function paint() {
    raf = 0;
    measure();
    const top = panes[0].scrollTop;
    const height = panes[0].clientHeight || 600;
    updatePos(top);
    const inView = Math.max(0, Math.floor(top / ROW_H));
    const inViewEnd = Math.min(vis.length, Math.ceil((top + height) / ROW_H));
    if (painted[0] >= 0 && inView >= painted[0] && inViewEnd <= painted[1]) return;
    const first = Math.max(0, inView - OVERSCAN);
    const last = Math.min(vis.length, inViewEnd + OVERSCAN);
    painted = [first, last];
    let left = "", right = "";
    for (let v = first; v < last; v++) {
      const k = vis[v];
      if (k < 0) {
        const f = `<div class="wbd-row wbd-folded" data-v="${v}">&hellip; ${-k} unchanged lines &hellip;</div>`;
        left += f;
        right += f;
        continue;
      }
      const i = rows[3 * k], j = rows[3 * k + 1], kind = rows[3 * k + 2];
      let mb = null, ma = null;
      if (kind === 1) {
        const [from, toB, toA] = changedRange(tokens("b", i), tokens("a", j));
        mb = [from, toB];
        ma = [from, toA];
      }
      left += rowHtml("b", i, kind, mb);
      right += rowHtml("a", j, kind, ma);
    }
    const width = charW ? Math.ceil(maxChars * charW) + 80 : 0;
    blocks.forEach((b, s) => {
      b.style.top = first * ROW_H + "px";
      b.style.minWidth = width ? width + "px" : "";
      b.innerHTML = s ? right : left;
    });
    for (const s of sizers) s.style.width = width ? width + "px" : "";
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
    const ctx = ruler.getContext("2d");
    ctx.clearRect(0, 0, ruler.width, ruler.height);
    if (!vis.length) return;
    const scale = (h * dpr) / vis.length;
    for (let v = 0; v < vis.length; v++) {
      if (vis[v] < 0) continue;
      const kind = rows[3 * vis[v] + 2];
      if (!kind) continue;
      ctx.fillStyle = RULER[kind];
      ctx.fillRect(0, Math.floor(v * scale), ruler.width, Math.max(2 * dpr, Math.ceil(scale)));
    }
  }

  function scrollToRow(v) {
    panes[0].scrollTop = Math.max(0, (v - 3) * ROW_H);
    schedule();
  }

  // The row a change is scrolled to sits 3 rows below the top.
  function current(top = panes[0].scrollTop) {
    return Math.floor(top / ROW_H) + 3;
  }

  let posText = "";
  function updatePos(top) {
    const cur = current(top);
    let lo = 0, hi = starts.length; // how many changes start at or above `cur`
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= cur) lo = mid + 1;
      else hi = mid;
    }
    const text = starts.length ? `change ${Math.max(lo, 1)} of ${starts.length}` : "";
    if (text !== posText) $(".wbd-pos").textContent = posText = text;
  }

  function next(dir) {
    if (!starts.length) return;
    const cur = current();
    let target;
    if (dir > 0) target = starts.find((s) => s > cur) ?? starts[0];
    else target = [...starts].reverse().find((s) => s < cur) ?? starts[starts.length - 1];
    scrollToRow(target);
  }

  // Scrolling one pane scrolls the other to the same place.
  panes.forEach((p, s) => {
    const other = panes[1 - s];
    p.addEventListener("scroll", () => {
      if (other.scrollTop !== p.scrollTop) other.scrollTop = p.scrollTop;
      if (other.scrollLeft !== p.scrollLeft) other.scrollLeft = p.scrollLeft;
      schedule();
    }, { passive: true });
  });
  $(".wbd-next").addEventListener("click", () => next(1));
  $(".wbd-prev").addEventListener("click", () => next(-1));
  fold.addEventListener("change", () => relayout(true));
  el.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT") return;
    if (e.key === "n" || e.key === "p") {
      next(e.key === "n" ? 1 : -1);
      e.preventDefault();
      e.stopPropagation();
    }
  });
  ruler.addEventListener("click", (e) => {
    const r = ruler.getBoundingClientRect();
    scrollToRow(Math.floor(((e.clientY - r.top) / r.height) * vis.length));
  });
  body.addEventListener("click", (e) => {
    const f = e.target.closest(".wbd-folded");
    if (!f) return;
    const v = Number(f.dataset.v);
    const start = v > 0 ? vis[v - 1] + 1 : 0; // the first folded row
    fold.checked = false;
    relayout(false);
    scrollToRow(start);
  });

  const applyHeight = () => {
    body.style.height = model.get("height") + "px";
  };
  applyHeight();
  const resize = new ResizeObserver(() => {
    painted = [-1, -1];
    schedule();
    drawRuler();
  });
  resize.observe(body);

  // One update sets several traits; load once for all of them.
  let pending = false;
  const reload = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      load();
    });
  };
  for (const name of ["rows", "before", "after", "message", "before_name", "after_name"]) model.on("change:" + name, reload);
  model.on("change:height", applyHeight);
  load();
  return () => {
    resize.disconnect();
    if (raf) cancelAnimationFrame(raf);
  };
}

export default { render };
