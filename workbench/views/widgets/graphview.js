// A graphviz SVG to navigate: fit to the width, zoom (buttons, ctrl/cmd + wheel), pan (drag), and
// focus on a node's neighbourhood (click it; "whole graph" goes back). It opens at a size its labels can be
// read at: fitted to the width while its smallest text stays READABLE_PX or more on screen, else at 100%
// scrolled to the first changed op (filled changed_fill) or the top. A <desc class="wbg-legend"> in the SVG
// (Python's graph_svg puts the graph's caption there) is shown above the graph, wrapped, as its legend.
// Model: svg (graphviz's SVG text), message, focus (a node's title; "" = the whole graph), hops, height,
// changed_fill,
// and for a level of a big stage's hierarchy: level (the path of the group whose level svg is; "" = the
// top level), group (the group asked for), openable (Python draws other levels), drawing (changes with
// each new graph). A box with class wbg-group and id "wbg-group:<path>" opens that group on a click: the
// view sets group and Python sends the level's SVG, unless this view has shown that level before and
// keeps it. A breadcrumb leads back up.
// Focus works on the SVG itself: graphviz writes <g class="node"><title>name</title> for each node and
// <g class="edge"><title>tail->head</title> for each edge. A neighbourhood in a big graph is spread
// over all of it (a gradient uses a value of the forward pass hundreds of ranks later), so focus
// draws it anew: graphviz's nodes moved into compact rows that keep graphviz's order, the edges
// among them redrawn between their new places, everything else (clusters included) hidden.

import { coalesced } from "../../assets/widgetkit.js";

const ZOOM = 1.25; // per button press
const MIN_SCALE = 0.02;
const MAX_SCALE = 8;
const READABLE_PX = 9; // the smallest text a graph opens with, on screen: below it, 100% rather than fitted
const FOCUS_MAX_SCALE = 1.5; // a focused neighbourhood is fitted into the view, but not blown up beyond this
const PAD = 14; // user units kept around a focused neighbourhood
const DRAG = 4; // px a press must move to be a drag (pan) rather than a click
const HINT = "click a node: its neighbourhood only \u00b7 drag: pan \u00b7 ctrl/cmd + wheel: zoom";
const GROUP_HINT = "click a group to open it \u00b7 " + HINT;
const GROUP_ID = "wbg-group:";

// A group path's parts: cut at the "/" outside parentheses ("transpose(jvp(a/b))/c" has two), as Python's
// workbench.analysis.graph.scopes.split_path cuts it.
export function splitPath(path) {
  const parts = [];
  let depth = 0, start = 0;
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (c === "/" && depth === 0) {
      parts.push(path.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(path.slice(start));
  return parts.filter((p) => p);
}

// The nodes (title -> <g>), edges ([tail, head, <g>]) and clusters of a graphviz SVG element.
export function readGraph(svg) {
  const nodes = new Map();
  for (const g of svg.querySelectorAll("g.node")) {
    const title = g.querySelector(":scope > title");
    if (title) nodes.set(title.textContent, g);
  }
  const end = (s) => (nodes.has(s) ? s : s.replace(/:[^:]*$/, "")); // "n3:port" -> "n3"
  const edges = [];
  for (const g of svg.querySelectorAll("g.edge")) {
    const title = g.querySelector(":scope > title")?.textContent ?? "";
    let at = title.indexOf("->");
    if (at < 0) at = title.indexOf("--"); // an undirected graph
    if (at > 0) edges.push([end(title.slice(0, at)), end(title.slice(at + 2)), g]);
  }
  return { nodes, edges, clusters: [...svg.querySelectorAll("g.cluster")] };
}

// The names within k edges of `start`, following edges either way; `start` itself included.
export function neighbourhood(edges, start, k) {
  const adj = new Map();
  const link = (a, b) => {
    if (!adj.has(a)) adj.set(a, []);
    adj.get(a).push(b);
  };
  for (const [a, b] of edges) {
    link(a, b);
    link(b, a);
  }
  const seen = new Set([start]);
  let frontier = [start];
  for (let d = 0; d < k && frontier.length; d++) {
    const next = [];
    for (const n of frontier) {
      for (const m of adj.get(n) ?? []) {
        if (!seen.has(m)) {
          seen.add(m);
          next.push(m);
        }
      }
    }
    frontier = next;
  }
  return seen;
}

// A compact layout of a few nodes that keeps graphviz's order: nodes whose centres share a y share a
// row, rows keep their order top to bottom and nodes theirs left to right, the empty space between
// them left out. boxes: [{name, x, y, w, h}] -> Map name -> [cx, cy], rows centred on x = 0.
export function compactLayout(boxes, rowGap = 40, nodeGap = 20) {
  const rows = [];
  for (const b of [...boxes].sort((p, q) => p.y + p.h / 2 - (q.y + q.h / 2))) {
    const cy = b.y + b.h / 2;
    const row = rows[rows.length - 1];
    if (row && Math.abs(row.cy - cy) < 2) row.items.push(b);
    else rows.push({ cy, items: [b] });
  }
  const out = new Map();
  let top = 0;
  for (const row of rows) {
    row.items.sort((p, q) => p.x - q.x);
    const h = Math.max(...row.items.map((b) => b.h));
    let left = -(row.items.reduce((sum, b) => sum + b.w, 0) + nodeGap * (row.items.length - 1)) / 2;
    for (const b of row.items) {
      out.set(b.name, [left + b.w / 2, top + h / 2]);
      left += b.w + nodeGap;
    }
    top += h + rowGap;
  }
  return out;
}

// An edge from box a to box b ([cx, cy, w, h]): from a's bottom to b's top when b lies lower (top to
// bottom when higher, side to side in one row), as a path that stops `arrow` short of b and the
// arrowhead's points.
export function route(a, b, arrow = 7) {
  const [ax, ay, aw, ah] = a, [bx, by, bw, bh] = b;
  const across = !(by - bh / 2 > ay + ah / 2 || by + bh / 2 < ay - ah / 2);
  const sx = bx >= ax ? 1 : -1, sy = by >= ay ? 1 : -1;
  const [x1, y1, x2, y2] = across ? [ax + (sx * aw) / 2, ay, bx - (sx * bw) / 2, by]
    : [ax, ay + (sy * ah) / 2, bx, by - (sy * bh) / 2];
  const [ux, uy] = across ? [sx, 0] : [0, sy];
  const ex = x2 - ux * arrow, ey = y2 - uy * arrow;
  const mx = (x1 + ex) / 2, my = (y1 + ey) / 2;
  const d = across ? `M${x1},${y1} C${mx},${y1} ${mx},${ey} ${ex},${ey}` : `M${x1},${y1} C${x1},${my} ${ex},${my} ${ex},${ey}`;
  const px = (-uy * arrow) / 2.5, py = (ux * arrow) / 2.5;
  return { d, points: `${x2},${y2} ${ex + px},${ey + py} ${ex - px},${ey - py} ${x2},${y2}`, mid: [mx, my] };
}

function render({ model, el }) {
  el.classList.add("wbg");
  el.innerHTML = `
    <div class="wbg-crumbs"></div>
    <div class="wb-bar wbg-bar">
      <button class="wbg-fit" title="fit the graph to the width of the view">fit width</button>
      <button class="wbg-out" title="zoom out (or ctrl/cmd + wheel)">&minus;</button>
      <span class="wbg-scale" title="the zoom"></span>
      <button class="wbg-in" title="zoom in (or ctrl/cmd + wheel)">+</button>
      <button class="wbg-one" title="graphviz's own size: 100%">1:1</button>
      <label class="wbg-hopslabel" title="a clicked node is shown with the nodes this many edges away">hops
        <input type="number" class="wbg-hops" min="1" max="20" step="1"></label>
      <button class="wbg-all" title="show every node again">whole graph</button>
      <span class="wbg-info"></span>
    </div>
    <div class="wbg-legend"></div>
    <div class="wbg-view"></div>
    <div class="wbg-msg"></div>`;
  const $ = (s) => el.querySelector(s);
  const view = $(".wbg-view");
  const hopsInput = $(".wbg-hops");
  const allButton = $(".wbg-all");
  const info = $(".wbg-info");
  const legend = $(".wbg-legend");

  let svg = null, graph = null;
  let full = [0, 0, 1, 1]; // the whole graph's viewBox
  let box = full; // the viewBox shown
  let unit = 4 / 3; // px per user unit at 100% (graphviz sizes its SVG in pt)
  let scale = 1;
  let pending = false; // laid out while hidden: size (and focus) once the view has a width
  let auto = false; // sized by size(), not zoomed, panned or fitted by the user since: a new width sizes it anew
  let sizedWidth = 0; // the view's width when size() last ran
  let note = ""; // what the info line says of the graph shown (size() may put the zoom's reason before it)
  let moved = new Map(); // element -> Map(attribute -> its value before a focus changed it)
  const levels = new Map(); // group path -> the SVG text of its level, as shown here (until a new drawing)
  let shownText = null; // the SVG text on display
  let shownGroup = "";
  let asked = null; // the group of the last click Python has not answered yet
  const crumbs = $(".wbg-crumbs");

  function moveAttr(elm, key, value) {
    if (!moved.has(elm)) moved.set(elm, new Map());
    const was = moved.get(elm);
    if (!was.has(key)) was.set(key, elm.getAttribute(key));
    elm.setAttribute(key, value);
  }

  // The whole graph as graphviz drew it.
  function restore() {
    for (const [elm, was] of moved) {
      for (const [key, value] of was) value === null ? elm.removeAttribute(key) : elm.setAttribute(key, value);
    }
    moved = new Map();
    for (const g of svg.querySelectorAll(".wbg-hidden, .wbg-focus")) g.classList.remove("wbg-hidden", "wbg-focus");
  }

  function setScale(s, cx = view.clientWidth / 2, cy = view.clientHeight / 2) {
    if (!svg) return;
    s = Math.min(MAX_SCALE, Math.max(MIN_SCALE, s));
    const px = (view.scrollLeft + cx) / scale, py = (view.scrollTop + cy) / scale; // keep this point in place
    scale = s;
    svg.style.width = box[2] * unit * scale + "px";
    svg.style.height = box[3] * unit * scale + "px";
    view.scrollLeft = px * scale - cx;
    view.scrollTop = py * scale - cy;
    el.dataset.scale = scale.toFixed(4);
    $(".wbg-scale").textContent = Math.round(scale * 100) + " %";
  }

  const fitScale = () => (view.clientWidth - 2) / (box[2] * unit);

  function fitWidth() {
    setScale(fitScale());
    view.scrollLeft = view.scrollTop = 0;
  }

  // The scale below which the graph's smallest text is under READABLE_PX on screen (1 at most).
  function readableScale() {
    const sizes = [...svg.querySelectorAll("text")].map((t) => parseFloat(t.getAttribute("font-size")))
      .filter((f) => f > 0);
    return sizes.length ? Math.min(1, READABLE_PX / (Math.min(...sizes) * unit)) : 1;
  }

  // Where a graph too big to fit readably opens: its first changed op (the topmost filled changed_fill), else
  // its topmost node, near the top of the view and centred across it.
  function scrollToStart() {
    const fill = (model.get("changed_fill") || "").toLowerCase();
    const filled = (shape) => (shape.getAttribute("fill") || "").toLowerCase() === fill;
    const changed = (g) => !!fill && [...g.querySelectorAll("polygon, ellipse, path")].some(filled);
    let best = null, bestChanged = false;
    for (const [name, g] of graph.nodes) {
      const r = g.getBoundingClientRect(), c = changed(g);
      if (!best || (c && !bestChanged) || (c === bestChanged && r.top < best.r.top)) {
        [best, bestChanged] = [{ name, r }, c];
      }
    }
    if (!best) return false;
    const v = view.getBoundingClientRect();
    view.scrollLeft += best.r.left + best.r.width / 2 - (v.left + view.clientWidth / 2);
    view.scrollTop += best.r.top - v.top - (bestChanged ? 40 : 0);
    el.dataset.start = best.name;
    return bestChanged;
  }

  // A graph opens fitted to the width while its text stays readable, else at 100% at its start (small ones:
  // at graphviz's size); a neighbourhood fits the view.
  function size() {
    if (!svg) return;
    delete el.dataset.start;
    const scaleLabel = $(".wbg-scale");
    scaleLabel.title = "the zoom";
    info.textContent = note;
    if (model.get("focus") && graph.nodes.has(model.get("focus"))) {
      setScale(Math.min(fitScale(), (view.clientHeight - 2) / (box[3] * unit), FOCUS_MAX_SCALE));
      view.scrollLeft = view.scrollTop = 0;
      el.dataset.opened = "focus";
    } else if (fitScale() >= 1) {
      setScale(1);
      el.dataset.opened = "whole";
    } else if (fitScale() >= readableScale()) {
      fitWidth();
      el.dataset.opened = "fit";
    } else {
      const fit = Math.round(fitScale() * 100);
      setScale(1);
      view.scrollLeft = view.scrollTop = 0;
      const at = scrollToStart() ? "at the first changed op" : "at the top";
      el.dataset.opened = "readable";
      scaleLabel.title = `the zoom: fitted to the width, the graph would be ${fit} %, too small to read ("fit width")`;
      info.textContent = `100 % ${at} (fit width: ${fit} %) \u00b7 ${note}`;
    }
    info.title = info.textContent;
    auto = true;
    sizedWidth = view.clientWidth;
  }

  // The graph's caption (graph_svg's <desc class="wbg-legend">), one line a row, wrapped to the view.
  function showLegend() {
    const desc = svg?.querySelector(":scope > desc.wbg-legend");
    const lines = desc ? desc.textContent.split("\n").filter((l) => l.trim()) : [];
    legend.replaceChildren(...lines.map((line) => Object.assign(document.createElement("div"), { textContent: line })));
    legend.classList.toggle("wbg-hidden", !lines.length);
  }

  // The path to the level shown, each part opening its group; shown for a hierarchy's levels only.
  function showCrumbs() {
    const group = shownGroup;
    el.dataset.group = group;
    const hierarchy = model.get("openable") && (group || (svg && svg.querySelector(".wbg-group")));
    crumbs.replaceChildren();
    crumbs.classList.toggle("wbg-hidden", !hierarchy);
    if (!hierarchy) return;
    const parts = splitPath(group);
    const steps = [["top level", ""], ...parts.map((p, i) => [p, parts.slice(0, i + 1).join("/")])];
    steps.forEach(([label, path], i) => {
      if (i) crumbs.append(" \u203a ");
      const last = i === steps.length - 1;
      const item = document.createElement(last ? "span" : "button");
      item.textContent = label;
      item.className = last ? "wbg-here" : "wbg-crumb";
      if (!last) {
        item.title = path ? `open ${path}` : "the top level";
        item.addEventListener("click", () => openGroup(path));
      }
      crumbs.append(item);
    });
  }

  // Open a group: at once from the levels kept here, else when Python sends its SVG.
  function openGroup(path) {
    if (!model.get("openable")) return;
    asked = path;
    const kept = levels.get(path);
    if (kept !== undefined) show(kept, path, "");
    else {
      info.textContent = `opening ${path || "the top level"}\u2026`;
      el.dataset.opening = path;
    }
    setModel("group", path);
  }

  function load() {
    const message = model.get("message");
    const text = model.get("svg");
    // Python answers each click in turn: a level drawn for an earlier click, arriving after the user went on
    // to another, is not shown over it (the answer to the last click follows)
    if (asked !== null) {
      if (model.get("level") === asked) asked = null;
      else if (!message) return;
    }
    if (!message && text && text === shownText) {
      shownGroup = model.get("level");
      levels.set(shownGroup, text);
      showCrumbs();
      return; // the level already on display: kept here, shown before Python sent it
    }
    show(text, model.get("level"), message);
  }

  function show(text, group, message) {
    view.replaceChildren();
    svg = graph = null;
    moved = new Map();
    shownText = text;
    shownGroup = group;
    delete el.dataset.opening;
    if (text && !message) levels.set(group, text);
    el.classList.toggle("wbg-has-msg", !!message);
    el.classList.toggle("wbg-empty", !text);
    $(".wbg-msg").textContent = message;
    delete el.dataset.nodes;
    if (!text) {
      showCrumbs();
      showLegend();
      return;
    }
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    if (doc.documentElement.nodeName !== "svg" || doc.querySelector("parsererror")) {
      el.classList.add("wbg-has-msg");
      $(".wbg-msg").textContent = "the graph's SVG does not parse: " + (doc.querySelector("parsererror")?.textContent ?? "");
      return;
    }
    svg = document.importNode(doc.documentElement, true);
    const vb = svg.viewBox.baseVal;
    const width = svg.getAttribute("width") || "";
    full = vb && vb.width ? [vb.x, vb.y, vb.width, vb.height] : [0, 0, parseFloat(width) || 1, parseFloat(svg.getAttribute("height")) || 1];
    unit = width.endsWith("pt") ? (parseFloat(width) * 4) / 3 / full[2] : parseFloat(width) / full[2] || 1;
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    view.appendChild(svg);
    graph = readGraph(svg);
    el.dataset.nodes = String(graph.nodes.size);
    scale = 1;
    showCrumbs();
    showLegend();
    if (model.get("focus")) setModel("focus", ""); // a new level shows all of itself
    applyFocus();
  }

  // The whole graph, or only the focused node's neighbourhood: the rest hidden, the viewBox around it.
  function applyFocus() {
    hopsInput.value = model.get("hops");
    if (!svg) return;
    if (!view.clientWidth) {
      pending = true; // boxes cannot be read while hidden
      return;
    }
    pending = false;
    restore();
    const name = model.get("focus");
    const node = name ? graph.nodes.get(name) : null;
    allButton.disabled = !node;
    if (!node) {
      box = full;
      svg.setAttribute("viewBox", full.join(" "));
      el.dataset.shown = String(graph.nodes.size);
      const hint = model.get("openable") && svg.querySelector(".wbg-group") ? GROUP_HINT : HINT;
      note = name ? `no node ${name} in this graph: the whole graph` : hint;
      size();
      return;
    }
    const k = model.get("hops");
    const keep = neighbourhood(graph.edges, name, k);
    const boxes = [];
    for (const [n, g] of graph.nodes) {
      if (!keep.has(n)) g.classList.add("wbg-hidden");
      else {
        const b = g.getBBox(); // in the graph group's space, the node not moved yet
        boxes.push({ name: n, x: b.x, y: b.y, w: b.width, h: b.height });
      }
    }
    const place = compactLayout(boxes);
    const at = new Map(); // name -> [cx, cy, w, h] where it is drawn now
    for (const b of boxes) {
      const [cx, cy] = place.get(b.name);
      at.set(b.name, [cx, cy, b.w, b.h]);
      moveAttr(graph.nodes.get(b.name), "transform", `translate(${cx - b.x - b.w / 2},${cy - b.y - b.h / 2})`);
    }
    for (const [a, b, g] of graph.edges) {
      if (!keep.has(a) || !keep.has(b) || a === b) {
        g.classList.add("wbg-hidden");
        continue;
      }
      const r = route(at.get(a), at.get(b));
      const [path, ...more] = g.querySelectorAll("path");
      if (path) moveAttr(path, "d", r.d);
      for (const extra of more) extra.classList.add("wbg-hidden");
      g.querySelectorAll("polygon").forEach((arrowhead, i) => (i ? arrowhead.classList.add("wbg-hidden") : moveAttr(arrowhead, "points", r.points)));
      for (const t of g.querySelectorAll("text")) {
        moveAttr(t, "x", r.mid[0] + 4);
        moveAttr(t, "y", r.mid[1]);
        moveAttr(t, "text-anchor", "start");
      }
    }
    for (const g of graph.clusters) g.classList.add("wbg-hidden");
    node.classList.add("wbg-focus");
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const [cx, cy, w, h] of at.values()) {
      [x0, y0, x1, y1] = [Math.min(x0, cx - w / 2), Math.min(y0, cy - h / 2), Math.max(x1, cx + w / 2), Math.max(y1, cy + h / 2)];
    }
    const m = svg.querySelector("g.graph")?.transform.baseVal.consolidate()?.matrix; // graph group -> viewBox
    const [ox, oy] = m ? [m.e, m.f] : [0, 0]; // graphviz's group is only translated
    box = [x0 + ox - PAD, y0 + oy - PAD, x1 - x0 + 2 * PAD, y1 - y0 + 2 * PAD];
    svg.setAttribute("viewBox", box.join(" "));
    el.dataset.shown = String(at.size);
    const label = [...node.querySelectorAll("text")].map((t) => t.textContent).join(" ");
    const left = graph.clusters.length ? "; clusters left out" : "";
    note = `${label}: ${at.size} of ${graph.nodes.size} nodes within ${k} hop${k === 1 ? "" : "s"}${left}`;
    size();
  }

  const setModel = (key, value) => {
    model.set(key, value);
    model.save_changes();
  };

  const byUser = (f) => (...args) => {
    auto = false;
    f(...args);
  };
  $(".wbg-fit").addEventListener("click", byUser(fitWidth));
  $(".wbg-in").addEventListener("click", byUser(() => setScale(scale * ZOOM)));
  $(".wbg-out").addEventListener("click", byUser(() => setScale(scale / ZOOM)));
  $(".wbg-one").addEventListener("click", byUser(() => setScale(1)));
  allButton.addEventListener("click", () => setModel("focus", ""));
  const readHops = (final) => {
    const k = Number(hopsInput.value);
    if (Number.isInteger(k) && k >= 1 && k <= 20) {
      if (k !== model.get("hops")) setModel("hops", k);
    } else if (final) hopsInput.value = model.get("hops"); // out of range: back to the hops in use
  };
  hopsInput.addEventListener("input", () => readHops(false));
  hopsInput.addEventListener("change", () => readHops(true));
  view.addEventListener("wheel", (e) => {
    if (!(e.ctrlKey || e.metaKey) || !svg) return; // a plain wheel scrolls
    e.preventDefault();
    const r = view.getBoundingClientRect();
    auto = false;
    setScale(scale * Math.exp(-e.deltaY / 300), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  // Drag to pan; a press that does not move is a click, and a click on a node focuses on it.
  let press = null, dragged = false;
  view.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    press = { x: e.clientX, y: e.clientY, left: view.scrollLeft, top: view.scrollTop, id: e.pointerId };
    dragged = false;
  });
  view.addEventListener("pointermove", (e) => {
    if (!press) return;
    const dx = e.clientX - press.x, dy = e.clientY - press.y;
    if (!dragged && Math.hypot(dx, dy) > DRAG) {
      dragged = true;
      auto = false;
      view.setPointerCapture(press.id);
      view.classList.add("wbg-dragging");
    }
    if (dragged) {
      view.scrollLeft = press.left - dx;
      view.scrollTop = press.top - dy;
    }
  });
  const release = () => {
    press = null;
    view.classList.remove("wbg-dragging");
  };
  view.addEventListener("pointerup", release);
  view.addEventListener("pointercancel", release);
  view.addEventListener("click", (e) => {
    if (dragged || !graph) return;
    const g = e.target.closest("g.node");
    const group = e.target.closest("g.wbg-group"); // a group's box, or the cluster of one opened in place
    if (group && model.get("openable") && group.id.startsWith(GROUP_ID)) {
      openGroup(group.id.slice(GROUP_ID.length));
      return;
    }
    const title = g?.querySelector(":scope > title")?.textContent;
    if (title) setModel("focus", title);
  });

  const applyHeight = () => {
    view.style.height = model.get("height") + "px";
  };
  applyHeight();
  // A new width (the page resized, the file browser opened) sizes a graph anew while the user has not zoomed or
  // panned it; one opened at 100 % for its text stays where it is until fitting would keep the text readable.
  const resize = new ResizeObserver(() => {
    if (pending && view.clientWidth) applyFocus();
    else if (auto && svg && view.clientWidth && Math.abs(view.clientWidth - sizedWidth) > 1 &&
             (el.dataset.opened !== "readable" || fitScale() >= readableScale())) size();
  });
  resize.observe(view);

  const reload = coalesced(load); // one update sets several traits: load once for all of them
  model.on("change:svg", reload);
  model.on("change:message", reload);
  model.on("change:level", reload);
  model.on("change:openable", () => (reload.queued ? null : showCrumbs()));
  model.on("change:drawing", () => {
    levels.clear();
    asked = null;
  });
  model.on("change:focus", () => (reload.queued ? null : applyFocus()));
  model.on("change:hops", () => {
    hopsInput.value = model.get("hops");
    if (!reload.queued && model.get("focus")) applyFocus();
  });
  model.on("change:height", applyHeight);
  load();
  return () => resize.disconnect();
}

export default { render };
