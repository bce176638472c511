"""A sharded program's panel in a real browser (JupyterLab, Debian's chromium, playwright): the transformer
block of workbench/examples/attention.py on a 2 x 4 mesh (the kernel gets 8 CPU devices), a value hovered
in the diff view showing its sharding, an HLO instruction hovered after XLA's partitioner, and the
Collectives tab at 1000 px (a collective clicked is marked in the diff, a stage clicked becomes B). Screenshots
go to test-output/panel_sharding_hover.png and panel_collectives_tab.png.
"""
import pytest

from tests.browser_pages import open_notebook, pick, settle, show_panel, side_by_side, tab, write_notebook

pytestmark = pytest.mark.slow

# JAX reads XLA_FLAGS when it starts: set before anything imports it
SETUP = """\
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import workbench as wb
from workbench.examples import attention"""

PANEL = """\
ex = wb.explore(attention.fn, *attention.sharded_args())
wb.panel(ex, name="ex")"""


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "sharded.ipynb", SETUP, PANEL)


def hover_until_tip(panel, rows, pick):
    """Scroll the right pane a screen at a time until ``pick(row texts)`` finds a row (its index), then
    hover that row's first value name, as a user does; the name's and the popup's locators."""
    pane = panel.locator(".wbd-r").first
    for _ in range(200):
        k = pick(rows.all_inner_texts())
        if k is not None:
            row = rows.nth(k).get_attribute("data-t")  # the line it shows: stable while rows repaint
            token = panel.locator(f'.wbd-r .wbd-row[data-t="{row}"] .h-ssa').first
            token.scroll_into_view_if_needed()
            panel.page.wait_for_timeout(300)  # the repaint a scroll asks for
            token.hover()
            tip = panel.locator(".wbd-tip")
            tip.wait_for(state="visible", timeout=10_000)
            return token, tip
        if pane.evaluate("p => p.scrollTop + p.clientHeight >= p.scrollHeight - 1"):
            break
        pane.evaluate("p => { p.scrollTop += p.clientHeight; }")
        panel.page.wait_for_timeout(150)
    raise AssertionError("no such row in the right pane")


def test_hovering_a_value_shows_its_sharding_and_the_collectives_tab_lists_them(browser, lab, shots):
    page = open_notebook(browser, lab, "sharded.ipynb")
    try:
        panel = show_panel(page)
        side_by_side(panel)
        assert panel.locator(".lm-TabBar-tab", has_text="Collectives").count() == 1

        # an MLIR stage after Shardy's propagation: an op's result, by its name on the line that defines it
        pick(panel, "sdy-propagation-pipeline#1")
        panel.locator(".wbd-head-r", has_text="sdy-propagation-pipeline#1").wait_for()
        panel.locator('.wbd[data-tips="2"]').wait_for()
        rows = panel.locator(".wbd-r .wbd-row[data-t]")
        dot = lambda texts: next((k for k, t in enumerate(texts)  # noqa: E731
                                  if "stablehlo.dot_general" in t and '{"model"}' in t), None)
        token, tip = hover_until_tip(panel, rows, dot)
        name = token.inner_text()
        text = tip.inner_text()
        assert text.startswith(name) and "sharded: dim 0 over data (2)" in text and "over model (4)" in text
        assert "per device 1x" in text and "<@mesh, [{\"data\"}" in text and "tensor<2x" in text
        assert tip.get_attribute("data-name") == name
        box, where = tip.bounding_box(), token.bounding_box()
        assert box["y"] >= where["y"] + where["height"] - 1 or box["y"] + box["height"] <= where["y"] + 1  # beside it
        shots(panel, "panel_sharding_hover")
        page.mouse.move(5, 5)
        tip.wait_for(state="hidden")

        # an XLA stage after the SPMD partitioner: a parameter's sharding={...} and each device's shape
        pick(panel, "xla:optimized")
        panel.locator(".wbd-head-r", has_text="xla:optimized").wait_for()
        param = lambda texts: next((k for k, t in enumerate(texts)  # noqa: E731
                                    if "parameter(10)" in t and "sharding={devices=" in t), None)
        token, tip = hover_until_tip(panel, rows, param)
        text = tip.inner_text()
        assert "sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}" in text and "f32[1,32,64]" in text
        assert "this stage is partitioned" in text
        shots(panel, "panel_sharding_hover_hlo")

        # the Collectives tab (the view component "collectives"): stage B's collectives and the count per stage
        tab(panel, "Collectives")
        rows = panel.locator('[data-hwb="collective"]')
        rows.first.wait_for(timeout=60_000)
        caption = panel.locator('[data-hwb="collectives"] .hwbv-caption', has_text="xla:optimized")
        assert f"xla:optimized: {rows.count()} collective" in caption.first.inner_text()
        assert {rows.nth(k).get_attribute("data-kind") for k in range(rows.count())} == {"all-reduce"}
        assert {rows.nth(k).get_attribute("data-stage") for k in range(rows.count())} == {"xla:optimized"}
        marked = panel.locator('[data-hwb="collective-stage"][data-b="true"]')
        assert marked.count() == 1 and marked.get_attribute("data-first") == "xla:optimized"
        assert panel.locator(".wb-python pre").first.inner_text() == 'ex.collectives("xla:optimized")'
        # at 1000 px no name or button of the tab is cut, and its tables scroll in their own boxes
        page.set_viewport_size({"width": 1000, "height": 1250})
        settle(page)
        cut = panel.evaluate("""p => Array.from(p.querySelectorAll('[data-hwb="collectives"] :is(button, th, .hwbv-caption)'))
            .filter((e) => e.checkVisibility() && e.scrollWidth > e.clientWidth).map((e) => e.textContent)""")
        assert cut == []
        shots(panel, "panel_collectives_tab")
        # a click on a collective: the Diff tab, its op marked in B's pane
        op = rows.first.get_attribute("data-op")
        rows.first.locator("button").click()
        marks = panel.locator(".wbd-r .wbd-row.wbd-mark")
        marks.first.wait_for(timeout=60_000)
        assert op and marks.count() == 1 and " all-reduce(" in marks.inner_text()  # its name as the diff normalizes it
        assert panel.locator(".wbd-l .wbd-row.wbd-mark").count() == 0
        # a click on a stage of the per-stage table makes it B
        tab(panel, "Collectives")
        first = panel.locator('[data-hwb="collective-stage"]').first
        name = first.get_attribute("data-first")
        first.locator("button").first.click()
        panel.locator(f'[data-hwb="collective-stage"][data-b="true"][data-first="{name}"]').wait_for(timeout=60_000)
        panel.locator(".wbd-head-r", has_text=name).wait_for(state="attached")  # B in the diff (its tab hidden)
    finally:
        page.close()
