// The panel's Graph tab (kind "graph"; Python: workbench/views/widgets/graphview.py): a stage picker over
// graphviz's SVG of one stage, to navigate. Fit to the width, zoom (buttons, ctrl/cmd + wheel), pan (drag); a
// click on a node shows only the nodes within `hops` edges of it (edges followed either way) and the edges among
// them, laid out anew in compact rows that keep graphviz's order (a neighbourhood in a big graph is spread over all
// of it), clusters hidden; "whole graph" goes back. A box of class wbg-group and id "wbg-group:<path>" stands for a
// group of a big stage's hierarchy: a click opens its level, which Python draws unless this view has shown it since
// the last new drawing; a breadcrumb leads back up. A graph opens at a size its labels can be read at (size()); the
// caption Python put in the SVG's <desc class="wbg-legend"> is shown above it, wrapped, as its legend.
// Actions: pick {stage}, open {group}, focus {node, hops}. Facts on the root .wbg: data-nodes, -shown (nodes drawn),
// -scale, -opened (whole | fit | readable | focus), -start (the node it opened at), -group, -opening (asked of Python).
import { button, h } from './dom';
import type { IMounted } from './model';
import { register, type IWidgetHost } from './widget';

/** Python's facts. `level`: the group whose level `svg` is ("": the top level); `openable`: Python draws the other
 * levels; `drawing`: one more with each new graph (the levels kept here are dropped); `stages`: the picker's entries,
 * [label, stage], where Python sends them. */
interface IGraph {
  svg: string;
  message: string;
  level: string;
  openable: boolean;
  drawing: number;
  focus: string;
  hops: number;
  max_hops: number;
  changed_fill: string;
  stages?: [string, string][];
  picked?: string;
}
type Box = [cx: number, cy: number, w: number, h: number];
type Rect = { x: number; y: number; width: number; height: number };

const ZOOM = 1.25; // per button press
const READABLE_PX = 9; // the smallest text a graph opens with, on screen: below it, 100 % rather than fitted
const FOCUS_MAX_SCALE = 1.5; // a neighbourhood is fitted into the view, but not blown up beyond this
const [PAD, DRAG] = [14, 4]; // user units around a neighbourhood; px a press moves to be a drag (pan), not a click
const HINT = 'click a node: its neighbourhood only \u00b7 drag: pan \u00b7 ctrl/cmd + wheel: zoom';
const GROUP_ID = 'wbg-group:'; // workbench/analysis/graph/render.py's
const TOOLS: [string, string, string, (scale: number, fit: number) => number][] = [
  ['fit', 'fit width', 'fit the graph to the width of the view', (_, fit) => fit],
  ['out', '\u2212', 'zoom out (or ctrl/cmd + wheel)', s => s / ZOOM],
  ['in', '+', 'zoom in (or ctrl/cmd + wheel)', s => s * ZOOM],
  ['one', '1:1', "graphviz's own size: 100%", () => 1]
];

/** A group path's parts: cut at each "/" outside parentheses, as Python's analysis.graph.scopes.split_path. */
export function splitPath(path: string): string[] {
  const parts = [''];
  let depth = 0;
  for (const c of path) {
    if (c === '/' && !depth) parts.push('');
    else {
      depth = Math.max(0, depth + (c === '(' ? 1 : c === ')' ? -1 : 0));
      parts[parts.length - 1] += c;
    }
  }
  return parts.filter(p => p);
}

/** The names within `k` edges of `start` (itself included), edges followed either way. */
export function neighbourhood(edges: readonly (readonly [string, string, ...unknown[]])[], start: string, k: number) {
  const seen = new Set([start]);
  for (let d = 0; d < k; d++) {
    const next = edges.flatMap(([a, b]) => (seen.has(a) !== seen.has(b) ? [seen.has(a) ? b : a] : []));
    if (!next.length) break;
    next.forEach(n => seen.add(n));
  }
  return seen;
}

/** Where a few boxes go, keeping graphviz's order: boxes whose centres share a y share a row, rows keep their order
 * top to bottom and boxes theirs left to right, the space between them left out; rows centred on x = 0. */
export function compactLayout(boxes: Map<string, Rect>, rowGap = 40, nodeGap = 20): Map<string, Box> {
  const mid = ([, b]: [string, Rect]) => b.y + b.height / 2;
  const rows: [string, Rect][][] = [];
  for (const b of [...boxes].sort((p, q) => mid(p) - mid(q))) {
    const row = rows[rows.length - 1];
    if (row && Math.abs(mid(row[0]) - mid(b)) < 2) row.push(b);
    else rows.push([b]);
  }
  const out = new Map<string, Box>();
  let top = 0;
  for (const row of rows) {
    const h = Math.max(...row.map(([, b]) => b.height));
    let left = -row.reduce((sum, [, b]) => sum + b.width + nodeGap, -nodeGap) / 2;
    for (const [name, b] of row.sort(([, p], [, q]) => p.x - q.x)) {
      out.set(name, [left + b.width / 2, top + h / 2, b.width, b.height]);
      left += b.width + nodeGap;
    }
    top += h + rowGap;
  }
  return out;
}

/** An edge from box a to box b: from a's bottom to b's top when b lies lower (top to bottom when higher, side to
 * side in one row), as a path that stops `arrow` short of b, the arrowhead's points and the middle. */
export function route([ax, ay, aw, ah]: Box, [bx, by, bw, bh]: Box, arrow = 7) {
  const across = !(by - bh / 2 > ay + ah / 2 || by + bh / 2 < ay - ah / 2);
  const [sx, sy] = [bx >= ax ? 1 : -1, by >= ay ? 1 : -1];
  const [x1, y1, x2, y2] = across
    ? [ax + (sx * aw) / 2, ay, bx - (sx * bw) / 2, by]
    : [ax, ay + (sy * ah) / 2, bx, by - (sy * bh) / 2];
  const [ux, uy] = across ? [sx, 0] : [0, sy];
  const [ex, ey] = [x2 - ux * arrow, y2 - uy * arrow];
  const [mx, my] = [(x1 + ex) / 2, (y1 + ey) / 2];
  const d = across
    ? `M${x1},${y1} C${mx},${y1} ${mx},${ey} ${ex},${ey}`
    : `M${x1},${y1} C${x1},${my} ${ex},${my} ${ex},${ey}`;
  const [px, py] = [(-uy * arrow) / 2.5, (ux * arrow) / 2.5];
  return { d, points: `${x2},${y2} ${ex + px},${ey + py} ${ex - px},${ey - py} ${x2},${y2}`, mid: [mx, my] };
}

/** graphviz's nodes (<g class="node"><title>name</title>), edges (<g class="edge"><title>a->b</title>) and clusters. */
function readGraph(svg: SVGSVGElement) {
  const title = (g: Element) => g.querySelector(':scope > title')?.textContent ?? '';
  const nodes = new Map<string, SVGGElement>();
  svg.querySelectorAll<SVGGElement>('g.node').forEach(g => title(g) && nodes.set(title(g), g));
  const end = (s: string) => (nodes.has(s) ? s : s.replace(/:[^:]*$/, '')); // "n3:port" -> "n3"
  const edges: [string, string, SVGGElement][] = [];
  svg.querySelectorAll<SVGGElement>('g.edge').forEach(g => {
    const [a, b] = title(g).split(/->|--/); // "--": an undirected graph's
    if (a && b !== undefined) edges.push([end(a), end(b), g]);
  });
  return { nodes, edges, clusters: Array.from(svg.querySelectorAll('g.cluster')) };
}

register('graph', (el: HTMLElement, first: IGraph, host: IWidgetHost): IMounted => {
  const root = h('div', 'wbg');
  const [crumbs, bar, legend, view, msg] = ['crumbs', 'bar', 'legend', 'view', 'msg'].map(c => h('div', `wbg-${c}`));
  const [pick, hopsLabel] = [h('label', 'wbg-pick', 'stage '), h('label', 'wbg-hopslabel', 'hops ')];
  const [picker, zoom, info] = [h('select'), h('span', 'wbg-scale'), h('span', 'wbg-info')];
  const hopsInput = Object.assign(h('input', 'wbg-hops'), { type: 'number', min: '1' });
  const all = button('wbg-all', 'whole graph', () => setFocus(''), 'show every node again');
  const tools = TOOLS.map(([c, t, tip, f]) => button(`wbg-${c}`, t, () => setScale(f(scale, fitScale()), true), tip));
  hopsLabel.title = 'a clicked node is shown with the nodes this many edges away';
  pick.append(picker);
  hopsLabel.append(hopsInput);
  bar.append(...tools.slice(0, 2), zoom, ...tools.slice(2), hopsLabel, all, info);
  root.append(pick, crumbs, bar, legend, view, msg);
  el.append(root);

  let d = first;
  let [shown, group, focus, hops] = ['', '', '', 2]; // the SVG text on display, the group whose level it is
  let asked: string | null = null; // the group of the last click Python has not answered yet
  const levels = new Map<string, string>(); // group -> its level's SVG text, shown here since the last drawing
  let svg: SVGSVGElement | null = null;
  let graph: ReturnType<typeof readGraph> | null = null;
  let full = [0, 0, 1, 1]; // the whole graph's viewBox
  let box = full; // the one shown
  let [unit, scale, sizedWidth] = [4 / 3, 1, 0]; // px per user unit at 100 % (graphviz's pt); the zoom; the width sized
  let [pending, auto] = [false, false]; // drawn while hidden, not placed yet; sized here, not zoomed or panned since
  let note = ''; // what the info line says of the graph shown

  function setScale(s: number, user = false, cx = view.clientWidth / 2, cy = view.clientHeight / 2): void {
    if (!svg) return;
    if (user) auto = false;
    const [px, py] = [(view.scrollLeft + cx) / scale, (view.scrollTop + cy) / scale]; // this point stays in place
    scale = Math.min(8, Math.max(0.02, s));
    [svg.style.width, svg.style.height] = [`${box[2] * unit * scale}px`, `${box[3] * unit * scale}px`];
    [view.scrollLeft, view.scrollTop] = [px * scale - cx, py * scale - cy];
    root.dataset.scale = scale.toFixed(4);
    zoom.textContent = `${Math.round(scale * 100)} %`;
  }
  const fitScale = () => (view.clientWidth - 2) / (box[2] * unit);
  // The scale below which the graph's smallest text is under READABLE_PX on screen (1 at most).
  const readableScale = () => {
    const sizes = Array.from(svg!.querySelectorAll('text'), t => parseFloat(t.getAttribute('font-size') ?? ''));
    return Math.min(1, READABLE_PX / (Math.min(...sizes.filter(f => f > 0)) * unit)); // no text: any scale
  };

  // Where a graph too big to fit readably opens: its topmost changed op, else its topmost node, near the view's top
  // and centred across it. Whether it is a changed op.
  function scrollToStart(): boolean {
    const fill = (s: Element) => s.getAttribute('fill')?.toLowerCase() === d.changed_fill.toLowerCase();
    const changed = (g: Element) => Array.from(g.querySelectorAll('polygon, ellipse, path')).some(fill);
    const starts = Array.from(graph!.nodes, ([name, g]) => ({ name, r: g.getBoundingClientRect(), c: changed(g) }));
    const best = starts.sort((p, q) => +q.c - +p.c || p.r.top - q.r.top)[0];
    if (!best) return false;
    const v = view.getBoundingClientRect();
    view.scrollLeft += best.r.left + best.r.width / 2 - (v.left + view.clientWidth / 2);
    view.scrollTop += best.r.top - v.top - (best.c ? 40 : 0);
    root.dataset.start = best.name;
    return best.c;
  }

  // A neighbourhood fits the view; a graph fits the width while its text stays READABLE_PX or more on screen, else
  // opens at 100 % at its start; and so anew when the view's width changes, until the user zooms or pans.
  function size(): void {
    const [fit, focused] = [fitScale(), graph!.nodes.has(focus)];
    const opened = focused ? 'focus' : fit >= 1 ? 'whole' : fit >= readableScale() ? 'fit' : 'readable';
    const hood = Math.min(fit, (view.clientHeight - 2) / (box[3] * unit), FOCUS_MAX_SCALE);
    setScale(focused ? hood : opened === 'fit' ? fit : 1);
    view.scrollLeft = view.scrollTop = 0;
    delete root.dataset.start;
    const at = opened === 'readable' && (scrollToStart() ? 'at the first changed op' : 'at the top');
    const pct = Math.round(fit * 100);
    const small = `fitted to the width, the graph would be ${pct} %, too small to read ("fit width")`;
    zoom.title = at ? `the zoom: ${small}` : 'the zoom';
    info.textContent = info.title = at ? `100 % ${at} (fit width: ${pct} %) \u00b7 ${note}` : note;
    [root.dataset.opened, auto, sizedWidth] = [opened, true, view.clientWidth];
  }

  // The level shown, parsed anew (a focus moves its nodes: drawing it again is how it goes back), then placed.
  function draw(): void {
    view.replaceChildren();
    [svg, graph] = [null, null];
    delete root.dataset.opening;
    root.classList.toggle('wbg-empty', !shown);
    const doc = shown ? new DOMParser().parseFromString(shown, 'image/svg+xml') : null;
    if (doc?.documentElement.nodeName === 'svg' && !doc.querySelector('parsererror')) {
      svg = view.appendChild(document.importNode(doc.documentElement, true) as unknown as SVGSVGElement);
      const [vb, width] = [svg.viewBox.baseVal, svg.getAttribute('width') ?? ''];
      full = [vb.x, vb.y, vb.width, vb.height];
      unit = (parseFloat(width) * (width.endsWith('pt') ? 4 / 3 : 1)) / vb.width || 1;
      svg.removeAttribute('width');
      svg.removeAttribute('height');
      graph = readGraph(svg);
    } else if (doc) {
      msg.textContent = "the graph's SVG does not parse";
      root.classList.add('wbg-has-msg');
    }
    root.dataset.nodes = String(graph?.nodes.size ?? 0);
    const caption = svg?.querySelector(':scope > desc.wbg-legend')?.textContent ?? '';
    const lines = caption.split('\n').filter(l => l.trim());
    legend.replaceChildren(...lines.map(line => h('div', '', line)));
    legend.hidden = !lines.length;
    showCrumbs();
    place();
  }

  // The whole graph, or the focused node's neighbourhood only, then sized; once the view has a width (boxes cannot be
  // read while it is hidden).
  function place(): void {
    hopsInput.value = String(hops);
    pending = !!svg && !view.clientWidth;
    if (!svg || !graph || pending) return;
    const node = graph.nodes.get(focus);
    all.disabled = !node;
    box = full;
    root.dataset.shown = String(graph.nodes.size);
    const groups = d.openable && svg.querySelector('.wbg-group') ? 'click a group to open it \u00b7 ' : '';
    note = focus && !node ? `no node ${focus} in this graph: the whole graph` : groups + HINT;
    if (node) {
      const keep = neighbourhood(graph.edges, focus, hops);
      const rects = new Map<string, DOMRect>(); // in the graph group's space, the nodes not moved yet
      graph.nodes.forEach((g, n) => (keep.has(n) ? rects.set(n, g.getBBox()) : g.classList.add('wbg-hidden')));
      const at = compactLayout(rects); // name -> where it is drawn now
      rects.forEach(({ x, y, width, height }, name) => {
        const [cx, cy] = at.get(name)!;
        graph!.nodes.get(name)!.setAttribute('transform', `translate(${cx - x - width / 2},${cy - y - height / 2})`);
      });
      graph.clusters.forEach(g => g.classList.add('wbg-hidden'));
      for (const [a, b, g] of graph.edges) {
        const [pa, pb] = [at.get(a), at.get(b)];
        if (!pa || !pb || a === b) {
          g.classList.add('wbg-hidden');
          continue;
        }
        const r = route(pa, pb);
        const [[path, ...paths], [head, ...heads]] = ['path', 'polygon'].map(s => Array.from(g.querySelectorAll(s)));
        [...paths, ...heads].forEach(e => e.classList.add('wbg-hidden'));
        path?.setAttribute('d', r.d);
        head?.setAttribute('points', r.points);
        g.querySelectorAll('text').forEach(t => {
          t.setAttribute('x', `${r.mid[0] + 4}`);
          t.setAttribute('y', `${r.mid[1]}`);
          t.setAttribute('text-anchor', 'start');
        });
      }
      node.classList.add('wbg-focus');
      const ext = Array.from(at.values(), ([x, y, w, hh]) => [x - w / 2, y - hh / 2, x + w / 2, y + hh / 2]);
      const [x0, y0, x1, y1] = [0, 1, 2, 3].map(i => (i < 2 ? Math.min : Math.max)(...ext.map(e => e[i])));
      const m = svg.querySelector<SVGGElement>('g.graph')?.transform.baseVal.consolidate()?.matrix; // only translated
      box = [x0 + (m?.e ?? 0) - PAD, y0 + (m?.f ?? 0) - PAD, x1 - x0 + 2 * PAD, y1 - y0 + 2 * PAD];
      root.dataset.shown = String(at.size);
      const label = Array.from(node.querySelectorAll('text'), t => t.textContent).join(' ');
      const left = graph.clusters.length ? '; clusters left out' : '';
      note = `${label}: ${at.size} of ${graph.nodes.size} nodes within ${hops} hop${hops === 1 ? '' : 's'}${left}`;
    }
    svg.setAttribute('viewBox', box.join(' '));
    size();
  }

  // The path to the level shown, each part a button opening its group; shown for a hierarchy's levels only.
  function showCrumbs(): void {
    root.dataset.group = group;
    crumbs.hidden = !(d.openable && (group || svg?.querySelector('.wbg-group')));
    const parts = ['top level', ...splitPath(group)];
    crumbs.replaceChildren(h('span', 'wbg-here', parts[parts.length - 1]));
    for (let i = parts.length - 1; i > 0; i--) {
      const path = parts.slice(1, i).join('/');
      const title = path ? `open ${path}` : 'the top level';
      crumbs.prepend(
        button('wbg-crumb', parts[i - 1], () => openGroup(path), title),
        ' \u203a '
      );
    }
  }

  // A group opens at once from the levels kept here, else when Python sends its SVG.
  function openGroup(path: string): void {
    if (!d.openable) return;
    asked = path;
    host.act('open', { group: path });
    const kept = levels.get(path);
    if (kept === undefined) {
      info.textContent = `opening ${path || 'the top level'}\u2026`;
      root.dataset.opening = path;
    } else {
      [shown, group, focus] = [kept, path, ''];
      draw();
    }
  }

  function setFocus(name: string, k = hops): void {
    const again = name || focus; // hops changed with no node focused: nothing to draw anew
    [focus, hops] = [name, k];
    host.act('focus', { node: focus, hops });
    if (again) draw();
  }
  const readHops = (final: boolean) => {
    const k = Number(hopsInput.value);
    if (Number.isInteger(k) && k >= 1 && k <= d.max_hops) {
      if (k !== hops) setFocus(focus, k);
    } else if (final) hopsInput.value = String(hops); // out of range: back to the hops in use
  };
  hopsInput.addEventListener('input', () => readHops(false)); // as the user types
  hopsInput.addEventListener('change', () => readHops(true));
  picker.addEventListener('change', () => host.act('pick', { stage: picker.value }));
  const wheel = (e: WheelEvent) => {
    if (!(e.ctrlKey || e.metaKey) || !svg) return; // a plain wheel scrolls
    e.preventDefault();
    const r = view.getBoundingClientRect();
    setScale(scale * Math.exp(-e.deltaY / 300), true, e.clientX - r.left, e.clientY - r.top);
  };
  view.addEventListener('wheel', wheel, { passive: false });
  // Drag to pan; a press that does not move is a click: on a group's box it opens the group, on a node it focuses.
  let press: { x: number; y: number; left: number; top: number; id: number } | null = null;
  let dragged = false;
  view.addEventListener('pointerdown', e => {
    const at = { x: e.clientX, y: e.clientY, left: view.scrollLeft, top: view.scrollTop, id: e.pointerId };
    [press, dragged] = [e.button ? null : at, false];
  });
  view.addEventListener('pointermove', e => {
    if (!press) return;
    const [dx, dy] = [e.clientX - press.x, e.clientY - press.y];
    if (!dragged && Math.hypot(dx, dy) > DRAG) {
      [dragged, auto] = [true, false];
      view.setPointerCapture(press.id);
      view.classList.add('wbg-dragging');
    }
    if (dragged) [view.scrollLeft, view.scrollTop] = [press.left - dx, press.top - dy];
  });
  const release = () => {
    press = null;
    view.classList.remove('wbg-dragging');
  };
  view.addEventListener('pointerup', release);
  view.addEventListener('pointercancel', release);
  view.addEventListener('click', e => {
    const target = e.target as Element;
    const opens = target.closest('g.wbg-group'); // a group's box, or the cluster of one opened in place
    if (dragged || !graph) return;
    if (opens?.id.startsWith(GROUP_ID) && d.openable) return openGroup(opens.id.slice(GROUP_ID.length));
    const title = target.closest('g.node')?.querySelector(':scope > title')?.textContent;
    if (title) setFocus(title);
  });
  // A new width (the page resized, the file browser opened) sizes a graph anew while the user has not zoomed or
  // panned it; one opened at 100 % for its text stays until fitting would keep the text readable.
  const resize = new ResizeObserver(() => {
    if (pending && view.clientWidth) place();
    else if (auto && graph && view.clientWidth && Math.abs(view.clientWidth - sizedWidth) > 1) {
      if (root.dataset.opened !== 'readable' || fitScale() >= readableScale()) size();
    }
  });
  resize.observe(view);

  function update(next: IGraph, prev: IGraph | null): void {
    d = next;
    pick.hidden = !next.stages?.length;
    const options = (next.stages ?? []).map(([label, value]) => Object.assign(h('option', '', label), { value }));
    if (JSON.stringify(next.stages) !== JSON.stringify(prev?.stages)) picker.replaceChildren(...options);
    picker.value = next.picked ?? '';
    hopsInput.max = String(next.max_hops);
    if (next.drawing !== prev?.drawing) {
      asked = null;
      levels.clear();
    }
    const refocus = next.focus !== focus || next.hops !== hops; // Python's, not what the user chose here
    [focus, hops] = [next.focus, next.hops];
    // Python answers each click in turn: a level drawn for an earlier click, arriving after the user went on to
    // another, is not shown over it (the answer to the last click follows)
    if (asked !== null && next.level !== asked && !next.message) return;
    if (asked === next.level) asked = null;
    msg.textContent = next.message;
    root.classList.toggle('wbg-has-msg', !!next.message);
    if (next.svg && !next.message) levels.set(next.level, next.svg);
    const again = !!prev && !refocus && next.svg === shown && next.level === group; // shown before Python sent it
    [shown, group] = [next.svg, next.level];
    if (again) showCrumbs();
    else draw();
  }
  update(first, null);
  return {
    update: next => update(next as unknown as IGraph, d),
    dispose: () => {
      resize.disconnect();
      root.remove();
    }
  };
});
