"""The Graph tab in a real browser (JupyterLab and Debian's chromium, as in tests/test_browser.py): a graph of a
few hundred ops opens readable at its first changed op, zooms, pans and focuses; a stage too big to draw op by
op opens as its named scopes and goes back without the kernel; and the same views in a blank page. Its own
file, so that the suite's two processes share the browser tests' minutes."""
import pytest

from tests.browser_pages import ROOT, check_graph, open_notebook, run_cell, settle, tab, write_notebook

pytestmark = pytest.mark.slow

# A graph of a few hundred ops: a 30-layer MLP's gradient as lowered (306 StableHLO ops).
GRAPH_PANEL = """\
import jax, jax.numpy as jnp
import workbench as wb

def loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).sum()

deep = wb.explore(jax.grad(loss), [jnp.full((16, 16), 0.01) for _ in range(30)], jnp.ones((4, 16)),
                  pipeline="canonicalize")
wb.panel(deep, name="deep", right="stablehlo")"""


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    root = lab_server["root"]
    write_notebook(root / "graph.ipynb", GRAPH_PANEL)
    write_notebook(root / "groups.ipynb", GROUPS_PANEL)


def graph_tab(page):
    """Run the notebook's cell, wait for its panel (stablehlo picked, every stage done: the status line's ✓),
    open the Graph tab and wait for its drawing: the panel and the tab's view."""
    run_cell(page, 0)
    panel = page.locator(".wb-panel")
    panel.locator('.wb-stages [data-hwb="stage"].hwbv-is-b[data-name="stablehlo"]').wait_for(timeout=300_000)
    page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓')", timeout=300_000)
    tab(panel, "Graph")
    view = panel.locator(".wbg")
    view.locator(".wbg-view svg").wait_for(timeout=180_000)
    return panel, view


def _within(edges: list[tuple[str, str]], start: str, k: int) -> set[str]:
    """The nodes within k edges of start, edges followed either way."""
    seen, frontier = {start}, {start}
    for _ in range(k):
        frontier = {b for a, b in edges if a in frontier} | {a for a, b in edges if b in frontier}
        frontier -= seen
        seen |= frontier
    return seen


def test_the_graph_tab_fits_zooms_pans_and_focuses_a_big_graph(browser, lab, shots):
    import os
    import xml.etree.ElementTree as ET

    page = open_notebook(browser, lab, "graph.ipynb", width=1280)
    try:
        page.keyboard.press("Control+b")  # the file browser open, as users have it: the panel about 740 px wide
        page.locator(".jp-FileBrowser").first.wait_for(state="visible")
        panel, view = graph_tab(page)
        state = """el => { const v = el.querySelector('.wbg-view'), s = v.querySelector('svg'), r = s.getBoundingClientRect();
            return {scale: +el.dataset.scale, nodes: +el.dataset.nodes, shown: +el.dataset.shown, svgW: r.width,
                    svgH: r.height, viewW: v.clientWidth, viewH: v.clientHeight, left: v.scrollLeft, top: v.scrollTop,
                    drawn: [...s.querySelectorAll('g.node')].filter(g => g.getBoundingClientRect().width > 0)
                           .map(g => g.querySelector('title').textContent),
                    edges: [...s.querySelectorAll('g.edge')].map(g => g.getBoundingClientRect())
                           .filter(r => r.width + r.height > 0).map(r => [r.left, r.top, r.right, r.bottom]),
                    view: (b => [b.left, b.top, b.right, b.bottom])(v.getBoundingClientRect())}; }"""
        settle(page)
        # fitted to the width its labels would be 1 px high: it opens at 100 %, at its top, the zoom said, B
        # named in the picker, the caption above it as the legend
        opened = check_graph(panel, 1280, "stablehlo (B of the diff)", "stablehlo: 306 ops")
        first = view.evaluate(state)
        assert opened["opened"] == "readable" and opened["zoom"] == "100 %" and opened["start"]
        assert first["top"] < 20 and first["svgW"] > 5 * first["viewW"]
        assert "100 % at the top (fit width: " in view.locator(".wbg-info").inner_text()
        start = view.evaluate("""el => [...el.querySelectorAll('g.node')].filter(g => g.querySelector('title')
            .textContent === el.dataset.start).map(g => (r => [r.left, r.top, r.right, r.bottom])(g.getBoundingClientRect()))""")
        x0, y0, x1, y1 = first["view"]
        assert len(start) == 1 and x0 <= start[0][0] and start[0][2] <= x1 and y0 <= start[0][1] <= y1
        shots(page, "panel_graph_1280")
        if os.environ.get("HLO_WORKBENCH_SCREENSHOTS"):  # for an issue's note
            page.screenshot(path=os.path.join(os.environ["HLO_WORKBENCH_SCREENSHOTS"], "graph_1280.png"))

        view.locator(".wbg-fit").click()  # "fit width" still fits it
        fit = view.evaluate(state)
        assert fit["nodes"] > 300 and len(fit["drawn"]) == fit["nodes"] == fit["shown"]
        assert fit["scale"] < 0.5 and abs(fit["svgW"] - fit["viewW"]) <= 3  # fitted to the width
        shots(panel, "panel_graph_fit")

        # zoom: the button, then ctrl + wheel over the graph; then drag to pan
        view.locator(".wbg-in").click()
        zoomed = view.evaluate(state)
        assert zoomed["scale"] == pytest.approx(fit["scale"] * 1.25, rel=1e-3)
        assert zoomed["svgW"] == pytest.approx(fit["svgW"] * 1.25, rel=1e-2)
        box = view.locator(".wbg-view").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(cx, cy)
        page.keyboard.down("Control")
        page.mouse.wheel(0, -400)
        page.keyboard.up("Control")
        page.wait_for_function(f"+document.querySelector('.wbg').dataset.scale > {zoomed['scale'] * 1.5}")
        wheeled = view.evaluate(state)
        page.mouse.move(cx, cy)
        page.mouse.down()
        page.mouse.move(cx - 150, cy - 120, steps=6)
        page.mouse.up()
        panned = view.evaluate(state)
        assert panned["left"] - wheeled["left"] == pytest.approx(150, abs=3)
        assert panned["top"] - wheeled["top"] == pytest.approx(120, abs=3)
        assert panned["shown"] == fit["nodes"]  # a drag is not a click: nothing focused

        view.locator(".wbg-fit").click()
        assert view.evaluate(state)["scale"] == pytest.approx(fit["scale"], rel=1e-3)

        # click a node in view: only its 2-hop neighbourhood is drawn, laid out anew and fitted into the view
        svg = ET.fromstring(view.locator(".wbg-view svg").evaluate("s => new XMLSerializer().serializeToString(s)"))
        ns = "{http://www.w3.org/2000/svg}"
        edges = [tuple(g.find(ns + "title").text.split("->")) for g in svg.iter(ns + "g") if g.get("class") == "edge"]
        target = view.evaluate("""el => {
            const v = el.querySelector('.wbg-view').getBoundingClientRect();
            for (const g of el.querySelectorAll('g.node')) {
                const r = g.getBoundingClientRect(), label = g.textContent;
                if (label.includes('dot_general') && r.left > v.left && r.right < v.right && r.top > v.top && r.bottom < v.bottom)
                    return {name: g.querySelector('title').textContent, x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2};
            }
        }""")
        page.mouse.click(target["x"], target["y"])
        page.wait_for_function(f"+document.querySelector('.wbg').dataset.shown < {fit['nodes']}")
        focused = view.evaluate(state)
        hood = _within(edges, target["name"], 2)
        assert set(focused["drawn"]) == hood and 2 < len(hood) < 40 and focused["shown"] == len(hood)
        # the edges among them, each between the nodes' new places: inside the view
        assert len(focused["edges"]) == sum(a in hood and b in hood for a, b in edges)
        x0, y0, x1, y1 = focused["view"]
        assert all(x0 - 1 <= e[0] and e[2] <= x1 + 1 and y0 - 1 <= e[1] and e[3] <= y1 + 1 for e in focused["edges"])
        assert focused["scale"] >= 0.5  # readable: the neighbourhood is compact, not spread over the graph
        assert view.locator(".wbg-focus title").text_content() == target["name"]
        assert focused["svgW"] <= focused["viewW"] + 1 and focused["svgH"] <= focused["viewH"] + 1
        assert f"of {fit['nodes']} nodes within 2 hops" in view.locator(".wbg-info").inner_text()
        shots(panel, "panel_graph_focus")
        view.locator(".wbg-hops").fill("1")
        view.locator(".wbg-hops").press("Enter")
        page.wait_for_function(f"+document.querySelector('.wbg').dataset.shown < {focused['shown']}")
        assert set(view.evaluate(state)["drawn"]) == _within(edges, target["name"], 1)

        # back to the whole graph, at 100 % at its top again
        view.locator(".wbg-all").click()
        page.wait_for_function(f"+document.querySelector('.wbg').dataset.shown === {fit['nodes']}")
        back = view.evaluate(state)
        assert len(back["drawn"]) == fit["nodes"] and back["scale"] == 1 and back["top"] == first["top"]
        assert view.locator(".wbg-all").is_disabled()

        # another stage picked: Python draws it, the picker and the legend say which
        panel.locator(".wb-graph select").select_option(label="canonicalize#1")
        page.wait_for_function("document.querySelector('.wbg-legend').textContent.startsWith('canonicalize#1: ')",
                               timeout=120_000)
        check_graph(panel, 1280, "canonicalize#1", "canonicalize#1: 306 ops")
        assert panel.locator(".wb-python pre").first.inner_text() == 'deep.graph("canonicalize#1")'
    finally:
        page.close()


# A stage too big to draw op by op (535 StableHLO ops), whose ops JAX put in named scopes: block_i/attn, block_i/mlp.
GROUPS_PANEL = """\
import jax, jax.numpy as jnp
import workbench as wb

def model(ws, x):
    for i, w in enumerate(ws):
        with jax.named_scope(f"block_{i}"):
            with jax.named_scope("attn"):
                x = x + jax.nn.softmax(x @ w) @ w.T
            with jax.named_scope("mlp"):
                x = x + jnp.tanh(x @ w)
    return (x ** 2).sum()

deep = wb.explore(model, [jnp.full((16, 16), 0.01) for _ in range(24)], jnp.ones((4, 16)), pipeline="canonicalize")
wb.panel(deep, name="deep", right="stablehlo")"""


def test_the_graph_tab_opens_a_big_stages_groups_and_goes_back_without_the_kernel(browser, lab, shots):
    page = open_notebook(browser, lab, "groups.ipynb")
    try:
        panel, view = graph_tab(page)
        boxes = "el => [...el.querySelectorAll('.wbg-view g.node.wbg-group')].map(g => g.id)"
        # the top level: one box per block, each opening its group
        assert [g for g in view.evaluate(boxes) if "[" not in g] == [f"wbg-group:block_{i}" for i in range(24)]
        assert view.locator(".wbg-crumbs").inner_text() == "top level"
        drawn = lambda: view.locator(".wbg-view svg").text_content()  # noqa: E731 -- the labels, as text
        assert "535 ops > max_ops=400: the top level of a hierarchy" in drawn()
        shots(panel, "panel_graph_groups")

        # a click on block_3 opens it: Python draws its level
        view.locator('g[id="wbg-group:block_3"]').click()
        page.wait_for_function("document.querySelector('.wbg').dataset.group === 'block_3'", timeout=60_000)
        assert view.evaluate(boxes) == ["wbg-group:block_3/attn", "wbg-group:block_3/mlp"]
        assert view.locator(".wbg-crumbs").inner_text() == "top level \u203a block_3"
        assert "from block_2" in drawn() and "to block_4" in drawn()
        view.locator('g[id="wbg-group:block_3/attn"]').click()
        page.wait_for_function("document.querySelector('.wbg').dataset.group === 'block_3/attn'", timeout=60_000)
        assert view.locator(".wbg-crumbs").inner_text() == "top level \u203a block_3 \u203a attn"
        assert "dot_general" in drawn() and not view.evaluate(boxes)
        shots(panel, "panel_graph_group_open")

        # back up by the breadcrumb: levels shown before come from the browser, at once (no wait)
        view.locator(".wbg-crumb", has_text="block_3").click()
        assert view.evaluate("el => [el.dataset.group, 'opening' in el.dataset]") == ["block_3", False]
        view.locator(".wbg-crumb", has_text="top level").click()
        assert view.evaluate("el => el.dataset.group") == ""
        assert len(view.evaluate(boxes)) > 24
        # opening them again comes from the browser as well; an op's box, not a group's, focuses its neighbourhood
        # (each click redraws: wait for the level it opens before clicking inside it, and check that the kernel
        # was not asked -- no 'opening' mark -- rather than reading the group in the same instant as the click)
        for group in ("block_3", "block_3/attn"):
            view.locator(f'g[id="wbg-group:{group}"]').click()
            page.wait_for_function(f"document.querySelector('.wbg').dataset.group === '{group}'", timeout=10_000)
            assert "opening" not in view.evaluate("el => Object.keys(el.dataset)")
        view.locator(".wbg-view g.node:not(.wbg-group):not(.wbg-port)", has_text="dot_general").first.click()
        page.wait_for_function("(d => +d.shown < +d.nodes)(document.querySelector('.wbg').dataset)")
    finally:
        page.close()


def test_the_unified_rows_and_the_layout_choice_in_a_blank_page(browser):
    """The pure parts of the diff view, loaded from its file: unified rows from an alignment, the auto layout by
    width. (The graph view's are vitest's: extensions/hlo-workbench-lab/test/graph.test.ts.)"""
    from workbench.artifacts.assets import inlined  # with what it imports, as the panel loads it

    page = browser.new_page()
    try:
        out = page.evaluate("""async (diffSrc) => {
            const diff = await import(URL.createObjectURL(new Blob([diffSrc], {type: 'text/javascript'})));
            // rows: equal, changed, deleted, inserted, moved out, equal; "changes only" folds nothing here
            const rows = Int32Array.from([0, 0, 0, 1, 1, 1, 2, -1, 2, -1, 2, 3, 3, -1, 4, 4, 3, 0]);
            const vis = Int32Array.from([0, 1, 2, 3, 4, 5]);
            const folded = Int32Array.from([0, 1, -3, 5]);  // a fold standing for three rows
            const rowsOf = (d) => Array.from(d);
            return {
                split: rowsOf(diff.displayRows(rows, vis, false)), unified: rowsOf(diff.displayRows(rows, vis, true)),
                foldedU: rowsOf(diff.displayRows(rows, folded, true)),
                modes: [1920, 1400, 1200, 900].map(w => diff.chooseMode('auto', w, 7.2, 72)),
                fixed: [diff.chooseMode('split', 500, 7.2, 72), diff.chooseMode('unified', 3000, 7.2, 72),
                        diff.chooseMode('auto', 0, 0, 0)],
            };
        }""", inlined(ROOT / "workbench" / "assets" / "diffview.js"))
    finally:
        page.close()
    assert out["split"] == [0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0]
    # the changed row as a "-" then a "+" row, deleted / moved-out "-" only, inserted "+" only
    assert out["unified"] == [0, 0, 1, 1, 1, 2, 2, 1, 3, 2, 4, 1, 5, 0]
    assert out["foldedU"] == [0, 0, 1, 1, 1, 2, 2, 0, 3, 0]
    # (width - ruler) / 2 - border - gutter >= 80 characters of 7.2 px: side by side from 1317 px
    assert out["modes"] == ["split", "split", "unified", "unified"]
    assert out["fixed"] == ["split", "unified", None]


# anywidget's model as the panel's widget has it: the component's kind and data, and what it sends
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
window.sent = [];
window.mount = (el, data) => {{
  const on = {{}};
  const model = {{ get: (k) => (k === "kind" ? "graph" : model.data), data, on: (e, f) => (on[e] = f), off() {{}},
                  send: (m) => window.sent.push(m), set(d) {{ model.data = d; on["change:data"](); }} }};
  views.render({{ model, el }});
  return model;
}};
document.documentElement.dataset.ready = "1";
</script></body></html>"""


def test_a_graph_opens_readable_at_its_first_changed_op_with_its_caption_as_a_wrapped_legend_in_a_blank_page(browser):
    """The Graph tab's component alone (kind "graph" of assets/views.js) with the facts GraphView sends: a graph 30
    boxes wide opens in a 400 px view at 100 % (fitted, its labels would be a few px high) scrolled to its topmost
    changed op, and in a view 90 % of its width fitted to the width, and anew when the view narrows; its caption is
    the legend above it, each line wrapped to the view's width. A small graph's nodes and edges are read from
    graphviz's SVG: a click on a node draws its neighbourhood and is sent to Python, and so do hops Python sends."""
    import json

    import graphviz

    from workbench.analysis.graph import CHANGED_FILL
    from workbench.views.widgets.component import views_module
    from workbench.views.widgets.graphview import GraphView, graph_svg

    caption = ["wide: 62 ops", "filled orange: 2 ops new or changed since 'before'; " + "a long note, " * 20]
    g = graphviz.Digraph(graph_attr={"label": "".join(line + "\\l" for line in caption), "labelloc": "t"},
                         node_attr={"shape": "box", "style": "filled", "fillcolor": "#ffffff", "fontsize": "10"})
    for i in range(30):
        g.edge("top", f"n{i}")
        g.edge(f"n{i}", "bottom")
    for changed in ("n27", "bottom"):  # n27 in the second row, far right: the first changed op from the top
        g.node(changed, fillcolor=CHANGED_FILL)
    small = graphviz.Digraph()
    for a, b in (("a", "b"), ("b", "c"), ("c", "d"), ("e", "c"), ("d", "f")):
        small.edge(a, b)
    js, css = views_module()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_content(PAGE.format(css=css, js=json.dumps(js).replace("</", "<\\/")))
        page.wait_for_selector("html[data-ready='1']", timeout=30_000)
        out = page.evaluate("""async ([wide, small]) => {
            const open = (width, data) => {
                const el = document.createElement('div');
                el.style.width = width + 'px';
                document.body.appendChild(el);
                const model = window.mount(el, data), root = el.querySelector('.wbg');
                const view = el.querySelector('.wbg-view'), v = view.getBoundingClientRect();
                const start = [...el.querySelectorAll('g.node')].find(n => n.querySelector('title').textContent === root.dataset.start);
                const r = start?.getBoundingClientRect();
                const legend = el.querySelector('.wbg-legend');
                return {opened: root.dataset.opened, scale: +root.dataset.scale, zoom: el.querySelector('.wbg-scale').textContent,
                        start: root.dataset.start, inView: !!r && r.left >= v.left && r.right <= v.right && r.top >= v.top
                                                           && r.bottom <= v.bottom,
                        svgW: view.querySelector('svg').getBoundingClientRect().width, viewW: view.clientWidth,
                        legend: [...legend.children].map(d => d.textContent), legendH: legend.clientHeight,
                        cut: [legend, ...legend.children].some(e => e.scrollWidth > e.clientWidth + 1),
                        info: el.querySelector('.wbg-info').textContent, el, root, model};
            };
            const narrow = open(400, wide), fitted = open(Math.round(narrow.svgW * 0.9), wide);
            fitted.el.style.width = Math.round(narrow.svgW * 0.8) + 'px';  // narrower: fitted anew
            await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            const refitted = +fitted.root.dataset.scale;
            const s = open(600, small), shown = (sel) => [...s.el.querySelectorAll(sel)]
                .filter(g => g.getBoundingClientRect().width + g.getBoundingClientRect().height > 0);
            const drawn = () => [shown('g.node').map(g => g.querySelector('title').textContent).sort(), shown('g.edge').length,
                                 +s.root.dataset.shown];
            const whole = drawn(), nodes = +s.root.dataset.nodes;
            shown('g.node').find(g => g.querySelector('title').textContent === 'c').dispatchEvent(new MouseEvent('click', {bubbles: true}));
            const c2 = drawn();
            s.model.set({...s.model.data, focus: 'c', hops: 1});  // from Python (GraphView.focus_on)
            const c1 = drawn(), said = s.el.querySelector('.wbg-info').textContent;
            s.el.querySelector('.wbg-all').click();
            const back = drawn();
            [narrow, fitted].forEach(o => ['el', 'root', 'model'].forEach(k => delete o[k]));
            return {narrow, fitted, refitted, whole, nodes, c2, c1, said, back, sent: window.sent};
        }""", [GraphView(svg=graph_svg(g)).data, GraphView(svg=small.pipe(format="svg").decode()).data])
    finally:
        page.close()
    narrow, fitted = out["narrow"], out["fitted"]
    assert narrow["opened"] == "readable" and narrow["scale"] == 1 and narrow["zoom"] == "100 %", narrow
    assert narrow["start"] == "n27" and narrow["inView"], narrow
    assert narrow["info"].startswith("100 % at the first changed op (fit width: ")
    assert narrow["legend"] == caption and not narrow["cut"] and narrow["legendH"] > 40  # the long line wraps
    assert fitted["opened"] == "fit" and fitted["scale"] == pytest.approx(0.9, abs=0.01), fitted
    assert abs(fitted["svgW"] - fitted["viewW"]) <= 3
    assert out["refitted"] == pytest.approx(0.8, abs=0.01)  # not zoomed by the user: a new width fits it anew
    # graphviz's nodes and edges read back; c's neighbourhood within 2 hops is all of it, within 1 its neighbours
    assert out["nodes"] == 6 and out["whole"] == [list("abcdef"), 5, 6]
    assert out["c2"] == [list("abcdef"), 5, 6] and out["c1"] == [list("bcde"), 3, 4]
    assert out["said"] == "c: 4 of 6 nodes within 1 hop" and out["back"] == out["whole"]
    assert out["sent"] == [{"action": "focus", "payload": {"node": "c", "hops": 2}},
                           {"action": "focus", "payload": {"node": "", "hops": 1}}]
