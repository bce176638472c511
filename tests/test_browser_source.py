"""The panel's Source tab in a real browser (JupyterLab, Debian's chromium, playwright): a transformer
block written in a %%hlo cell, its lines with heat bars, a click on the line of a matmul marking its ops
in the diff, and a click on an op there showing its lineage. A screenshot of the tab goes to
test-output/panel_source_tab.png. And the tab's component (kind "source" of assets/views.js) alone in a page,
drawn from the facts Python makes: what it sends when clicked, names drawn as text, nothing cut at 1000 px.
"""
import json

import jax.numpy as jnp
import pytest

import workbench as wb
from tests.browser_pages import open_notebook, pick, show_panel, side_by_side, tab, write_notebook
from workbench.views.widgets.component import views_module
from workbench.views.widgets.source import cost_note, lineage_rows, listing_rows

pytestmark = pytest.mark.slow

# A small pre-norm attention block's gradient, written in the cell: its lines are the user's.
BLOCK = """\
%%hlo -o ex
def block(p, x):
    x = (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    scores = jax.nn.softmax(q @ k.T / 4.0, axis=-1)
    h = jax.nn.gelu((scores @ v) @ p["wo"])
    return x + h

def loss(p, x):
    return (block(p, x) ** 2).mean()
jax.grad(loss)({n: jnp.full((16, 16), 0.01) for n in ("wq", "wk", "wv", "wo")}, jnp.ones((8, 16)))"""


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "source.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", BLOCK)


def test_the_source_tab_marks_a_lines_ops_and_an_ops_lineage(browser, lab, shots):
    page = open_notebook(browser, lab, "source.ipynb")
    try:
        panel = show_panel(page)
        side_by_side(panel)
        pick(panel, "enzyme-hlo-patterns#1")
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#1").wait_for()
        tab(panel, "Source")
        matmul = panel.locator(".wbsrc-line.wbsrc-ops", has_text='x @ p["wq"]')
        matmul.wait_for(timeout=60_000)
        python = panel.locator(".wb-python pre").first
        assert python.inner_text() == 'ex.source_map(stage="enzyme-hlo-patterns#1")'
        # the block's lines as written, with a heat bar on those that became ops
        codes = panel.locator(".wbsrc-line .wbsrc-code").all_inner_texts()
        assert codes[0] == "def block(p, x):" and any("return (block(p, x) ** 2).mean()" in c for c in codes)
        assert panel.locator(".wbsrc-line .wbsrc-bar").count() >= 4
        assert panel.locator(".wbsrc-none").count() == 1
        assert "analytic cost model" in panel.locator(".wbsrc-tab .hwbv-note", has_text="the bars").inner_text()
        assert panel.locator('[data-hwb="source-metric"][aria-pressed="true"]').inner_text() == "flops"

        # a click on the line of the q/k/v projections marks its ops on both sides of the diff
        matmul.click()
        marked = panel.locator(".wbd-r .wbd-row.wbd-mark")
        marked.first.wait_for(timeout=60_000)
        assert panel.locator(".wbsrc-line.wbsrc-sel", has_text='x @ p["wq"]').count() == 1
        texts = marked.all_inner_texts()
        assert sum("stablehlo.dot_general" in t for t in texts) >= 3
        assert panel.locator(".wbd-l .wbd-row.wbd-mark").count() >= 3
        assert python.inner_text().startswith('ex.locations("enzyme-hlo-patterns#1").query(')
        assert "ops in B" in panel.locator('[data-hwb="source-status"]').inner_text()
        shots(panel, "panel_source_tab")

        # a click on one of those ops: its lineage, a line per stage with its counterparts
        op = panel.locator(".wbd-r .wbd-row.wbd-mark", has_text="stablehlo.dot_general").first
        op.click(position={"x": 90, "y": 9})  # on its code, near the start (a long row runs out of its pane)
        lineage = panel.locator('[data-hwb="lineage"]')
        lineage.locator(".wbsrc-lineage-head", has_text="Lineage").wait_for(timeout=60_000)
        assert python.inner_text().startswith('ex.lineage("enzyme-hlo-patterns#1", "%')
        assert lineage.get_attribute("data-stage") == "enzyme-hlo-patterns#1"
        rows = lineage.locator('[data-hwb="lineage-row"]')
        stages = rows.all_inner_texts()
        assert len(stages) >= 5 and any("xla:optimized" in s for s in stages)
        assert any("dot_general" in s for s in stages)
        assert rows.and_(panel.locator('[data-side="B"]')).get_attribute("data-stage") == "enzyme-hlo-patterns#1"
        panel.locator('[data-hwb="source-status"]', has_text="counterpart").wait_for(timeout=60_000)
        assert panel.locator(".wbd-l .wbd-row.wbd-mark").count() >= 1
        assert panel.locator(".wbsrc-line.wbsrc-sel", has_text='x @ p["wq"]').count() == 1
        shots(panel, "panel_source_lineage")

        # back in the Diff tab, the diff (and its marks) is there
        tab(panel, "Diff")
        panel.locator(".wbd-r .wbd-row.wbd-mark").first.wait_for()
        assert panel.locator(".wbd").count() == 1
        # unified, the marked lines are marked too, and "changes only" does not fold them away
        panel.locator(".wbd-mode").first.select_option("unified")
        panel.locator(".wbd-u .wbd-row.wbd-mark").first.wait_for()
        panel.locator(".wbd-fold").first.check()
        panel.locator(".wbd-u .wbd-row.wbd-mark").first.wait_for()
    finally:
        page.close()


def test_measured_heat_in_the_source_tab_and_the_compile_tab(browser, lab, shots):
    """Where the time goes, in the browser: the Source tab's bars switched to measured run time (JAX's
    profiler), and the Compile tab's steps of both pipelines, a click on a step that made a stage diffing it.
    Screenshots: test-output/panel_source_measured.png and test-output/panel_compile_tab.png."""
    page = open_notebook(browser, lab, "source.ipynb")
    try:
        panel = show_panel(page)
        side_by_side(panel)
        tab(panel, "Source")
        panel.locator(".wbsrc-line.wbsrc-ops", has_text='x @ p["wq"]').wait_for(timeout=60_000)
        panel.locator('[data-hwb="source-metric"][data-metric="measured"]').click()
        panel.locator(".wbsrc-val", has_text="µs").first.wait_for(timeout=120_000)
        python = panel.locator(".wb-python pre").first
        assert python.inner_text().endswith("measured=True)")
        assert panel.locator(".wbsrc-head .wbsrc-heat").inner_text() == "µs"
        note = panel.locator(".wbsrc-tab .hwbv-note", has_text="measured run time").inner_text()
        assert "JAX's profiler" in note and "times on cpu:0" in note
        assert panel.locator(".wbsrc-line .wbsrc-bar").count() >= 3
        shots(panel, "panel_source_measured")

        tab(panel, "Compile")
        rows = panel.locator('[data-hwb="compile-step"]')
        rows.first.wait_for(timeout=120_000)
        assert python.inner_text() == "ex.compile_profile()"
        kinds = {rows.nth(k).get_attribute("data-kind") for k in range(rows.count())}
        assert {"trace", "mlir pass", "xla pass", "xla backend"} <= kinds
        assert "in all" in panel.locator(".hwbv-note", has_text="compile time per step").inner_text()
        shots(panel, "panel_compile_tab")
        link = panel.locator('[data-hwb="compile-step"][data-kind="xla pass"][data-link="true"]').first
        stage = link.get_attribute("data-stage")
        link.click()
        panel.locator(".wbd-head-r", has_text=stage).wait_for(timeout=60_000)  # the Diff tab shows that stage
    finally:
        page.close()


HOSTILE = "<img src=x onerror=\"window.pwned = 1\">"


def tb(x, y):
    return jnp.dot(x.T, y.T).T


# anywidget's model as the panel's widget has it: the component's kind and data, and what it sends
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body style="margin:0;padding:8px"><div id="listing"></div><div id="trail"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
window.sent = [];
window.models = {{}};
for (const [id, data] of [["listing", {listing}], ["trail", {trail}]]) {{
  const on = {{}};
  const model = {{ get: (k) => (k === "kind" ? "source" : model.data), data, on: (e, f) => (on[e] = f), off() {{}},
                  send: (m) => window.sent.push(m), set(d) {{ model.data = d; on["change:data"](); }} }};
  window.models[id] = model;
  views.render({{ model, el: document.getElementById(id) }});
}}
document.documentElement.dataset.ready = "1";
</script></body></html>"""


def test_the_source_component_draws_pythons_facts_and_sends_the_clicks(browser, shots):
    ex = wb.explore(tb, jnp.ones((8, 16)), jnp.ones((4, 8)))
    stage = ex.stage("canonicalize#2")
    rows = listing_rows(ex.source_map(stage=stage.name))
    rows[0]["code"] = HOSTILE  # a file's label, as if a cell were named so
    listing = {"part": "listing", "metric": "flops", "unit": "flops", "note": cost_note(stage, "flops"), "message": "",
               "rows": rows, "selected": []}
    lin = lineage_rows(ex.lineage("canonicalize#2", "%0"), "canonicalize#2", "%0", HOSTILE, ("canonicalize#2", "cse#1"))
    trail = {"part": "trail", "status": [{"text": HOSTILE, "error": False}, {"text": "no ops", "error": True}],
             "lineage": lin}
    js, css = views_module()
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(PAGE.format(css=css, js=json.dumps(js).replace("</", "<\\/"), listing=json.dumps(listing),
                                     trail=json.dumps(trail)))
        page.wait_for_selector("html[data-ready='1']", timeout=30_000)
        lines = page.locator('[data-hwb="source-line"]')
        facts = lines.evaluate_all("(es) => es.map((e) => [e.dataset.file, Number(e.dataset.line), Number(e.dataset.ops)])")
        assert facts == [[r["file"], r["line"], r.get("ops", 0)] for r in rows if r["k"] in ("line", "none")]
        assert page.locator(".wbsrc-file").inner_text() == HOSTILE and page.locator("img").count() == 0
        assert page.locator(".wbsrc-bar").count() == sum(1 for r in rows if r.get("frac"))
        assert page.locator(".wbsrc-tab .hwbv-note").inner_text() == listing["note"]
        # a click on a line with ops, on a metric: sent to Python, which answers with new facts
        line = next(r for r in rows if r["k"] == "line" and r["ops"])
        page.locator(f'[data-hwb="source-line"][data-line="{line["line"]}"]').click()
        page.locator('[data-hwb="source-metric"][data-metric="bytes"]').click()
        assert page.evaluate("window.sent") == [{"action": "line", "payload": {"file": line["file"], "line": line["line"]}},
                                                {"action": "metric", "payload": {"metric": "bytes"}}]
        key = f"{line['file']}:{line['line']}"
        page.evaluate("(d) => window.models.listing.set(d)", {**listing, "metric": "bytes", "selected": [key]})
        assert page.locator('[data-hwb="source-line"][data-selected="true"]').evaluate_all(
            "(es) => es.map((e) => Number(e.dataset.line))") == [line["line"]]
        assert page.locator('[data-hwb="source-metric"][aria-pressed="true"]').inner_text() == "bytes"
        # what is marked and the lineage: rows per stage, A and B marked, names as text
        assert page.locator('[data-hwb="source-status"]').all_inner_texts() == [HOSTILE, "no ops"]
        assert page.locator('[data-hwb="source-status"][data-error="true"]').count() == 1
        got = page.locator('[data-hwb="lineage-row"]').evaluate_all(
            "(es) => es.map((e) => [e.dataset.stage, e.dataset.side, Number(e.dataset.count), e.dataset.state])")
        assert got == [[r["stage"], r["side"], r["count"], r["state"]] for r in lin["rows"]]
        assert f"({HOSTILE})" in page.locator(".wbsrc-lineage-head").inner_text()
        assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
        # at 1000 px: no button or heading cut, nothing scrolls the page sideways
        cut = page.evaluate("""() => Array.from(document.querySelectorAll('button, th, .wbsrc-title, .wbsrc-lineage-head'))
            .filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.textContent)""")
        assert cut == [] and page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        shots(page, "source_component")
        page.evaluate("(d) => window.models.trail.set(d)", {"part": "trail", "status": [], "lineage": None})
        assert page.locator(".wbsrc-trail").is_hidden()
        assert errors == []
    finally:
        page.close()
