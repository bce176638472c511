"""The panel's Source tab in a real browser (JupyterLab, Debian's chromium, playwright): a transformer
block written in a %%hlo cell, its lines with heat bars, a click on the line of a matmul marking its ops
in the diff, and a click on an op there showing its lineage. A screenshot of the tab goes to
test-output/panel_source_tab.png.
"""
import pytest

from tests.browser_pages import open_notebook, show_panel, side_by_side, tab, write_notebook

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
        panel.locator('.wbs-row[data-name="enzyme-hlo-patterns#1"]').click()
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
        assert "analytic cost model" in panel.locator(".wb-note", has_text="the bars").first.inner_text()

        # a click on the line of the q/k/v projections marks its ops on both sides of the diff
        matmul.click()
        marked = panel.locator(".wbd-r .wbd-row.wbd-mark")
        marked.first.wait_for(timeout=60_000)
        assert panel.locator(".wbsrc-line.wbsrc-sel", has_text='x @ p["wq"]').count() == 1
        texts = marked.all_inner_texts()
        assert sum("stablehlo.dot_general" in t for t in texts) >= 3
        assert panel.locator(".wbd-l .wbd-row.wbd-mark").count() >= 3
        assert python.inner_text().startswith('ex.locations("enzyme-hlo-patterns#1").query(')
        assert "ops in B" in panel.locator(".wb-source-status").inner_text()
        shots(panel, "panel_source_tab")

        # a click on one of those ops: its lineage, a line per stage with its counterparts
        op = panel.locator(".wbd-r .wbd-row.wbd-mark", has_text="stablehlo.dot_general").first
        op.click(position={"x": 90, "y": 9})  # on its code, near the start (a long row runs out of its pane)
        lineage = panel.locator(".wb-lineage")
        lineage.locator(".wb-lineage-head", has_text="Lineage").wait_for(timeout=60_000)
        assert python.inner_text().startswith('ex.lineage("enzyme-hlo-patterns#1", "%')
        stages = lineage.locator("tbody tr").all_inner_texts()
        assert len(stages) >= 5 and any("xla:optimized" in s for s in stages)
        assert any("dot_general" in s for s in stages)
        # the status line is its own widget message: it may arrive after the lineage table
        panel.locator(".wb-source-status", has_text="counterpart").wait_for(timeout=60_000)
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
        panel.locator(".widget-toggle-button", has_text="measured").click()
        panel.locator(".wbsrc-val", has_text="µs").first.wait_for(timeout=120_000)
        python = panel.locator(".wb-python pre").first
        assert python.inner_text().endswith("measured=True)")
        assert panel.locator(".wbsrc-head .wbsrc-heat").inner_text() == "µs"
        note = panel.locator(".wb-note", has_text="measured run time").first.inner_text()
        assert "JAX's profiler" in note and "times on cpu:0" in note
        assert panel.locator(".wbsrc-line .wbsrc-bar").count() >= 3
        shots(panel, "panel_source_measured")

        tab(panel, "Compile")
        rows = panel.locator(".wbc-row")
        rows.first.wait_for(timeout=120_000)
        assert python.inner_text() == "ex.compile_profile()"
        kinds = set(panel.locator(".wbc-row .wbc-kind").all_inner_texts())
        assert {"trace", "mlir pass", "xla pass", "xla backend"} <= kinds
        assert "in all" in panel.locator(".wb-note", has_text="compile time per step").inner_text()
        shots(panel, "panel_compile_tab")
        link = panel.locator(".wbc-row.wbc-link.k-xla-pass").first
        stage = link.get_attribute("data-stage")
        link.click()
        panel.locator(".wbd-head-r", has_text=stage).wait_for(timeout=60_000)  # the Diff tab shows that stage
    finally:
        page.close()
