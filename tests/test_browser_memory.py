"""The panel's Memory tab in a real browser (Debian's chromium, playwright), on a program whose peak holds a
temporary of a size the test chose (a 512 x 1024 f32 tanh, 2 MiB):

* in JupyterLab at 1280 px, as a user meets it: the %%hlo cell's panel, its Memory tab opened, the peak drawn is the
  kernel's ``ex.memory().peak_bytes``, the first line at the peak is the user's line of the temporary, and a click
  on the temporary's row makes xla:optimized B and follows its instruction (the Source tab with the line selected,
  the instruction marked in the diff, its lineage);
* the component (kind "memory" of assets/views.js) alone in a page, drawn from the facts a panel made, its clicks
  going back to that panel: every line and buffer drawn as ``Memory`` has them, names as text, what it sends.

Screenshots in each test's folder and test-output/; the panel's at 1280 px also in /tmp/memory_tab_1280.png."""
import json
import shutil

import jax.numpy as jnp
import pytest

import workbench as wb
from tests.browser_pages import (open_notebook, run_cell, saved_model_after, saved_view_page, show_panel, side_by_side, tab,
                                 write_notebook)
from workbench.views.widgets import Panel
from workbench.views.widgets.component import views_module
from workbench.views.widgets.memorytab import TITLE

pytestmark = pytest.mark.slow
pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

ROWS, COLS, INNER = 512, 1024, 256
TEMP = ROWS * COLS * 4  # the tanh's f32 temporary: 2 MiB, the largest buffer at the peak


def wide(x, w):
    t = jnp.tanh(x @ w)  # the peak's temporary
    u = jnp.exp(t) @ w.T
    return (u * t.sum()).sum(0)


TEMP_LINE = wide.__code__.co_firstlineno + 1

CELL = f"""\
%%hlo -o ex
def wide(x, w):
    t = jnp.tanh(x @ w)  # the peak's temporary
    u = jnp.exp(t) @ w.T
    return (u * t.sum()).sum(0)
wide(jnp.ones(({ROWS}, {INNER})), jnp.ones(({INNER}, {COLS})))"""
ASK = "m = ex.memory()\nprint(m.peak_bytes, m.by_line().line.iloc[0])"


@pytest.fixture(scope="module")
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "memory.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL, ASK)


def test_the_memory_tab_in_jupyterlab_shows_the_peak_and_a_buffer_clicked_is_followed(browser, notebook_files, lab,
                                                                                       shots):
    page = open_notebook(browser, lab, "memory.ipynb", width=1280)
    try:
        panel = show_panel(page)
        side_by_side(panel)
        tab(panel, "Memory")
        root = panel.locator('[data-hwb="memory"][data-state="shown"]')
        root.wait_for(timeout=120_000)
        assert panel.locator(".wb-python pre").first.inner_text() == "ex.memory()"
        run_cell(page, 2)  # the kernel's own answer
        out = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(2).locator(".jp-OutputArea-output")
        out.first.wait_for(timeout=120_000)
        peak, line = out.first.inner_text().strip().split(" ", 1)
        drawn = int(root.get_attribute("data-peak-bytes"))
        assert drawn == int(peak) > TEMP
        assert panel.locator('[data-hwb="memory-peak"]').get_attribute("data-peak-bytes") == peak
        first = panel.locator('[data-hwb="memory-line"]').first
        # the kernel's line is the cell's file; the tab names it as IPython's tracebacks do
        shown = f"line {line.rsplit(':', 1)[1]}"
        assert first.get_attribute("data-line").startswith("Cell In[") and first.get_attribute("data-line").endswith(
            f", {shown}")
        assert first.get_attribute("data-selectable") == "true"
        assert int(first.get_attribute("data-bytes")) == TEMP
        temp = panel.locator('[data-hwb="memory-buffer"]').first
        assert (temp.get_attribute("data-kind"), int(temp.get_attribute("data-bytes"))) == ("temporary", TEMP)
        assert temp.get_attribute("data-line") == first.get_attribute("data-line")
        # the timeline's words readable: 9 px or more on screen, as the chart is scaled to the tab's width
        font = panel.locator(".hwbv-mem-chart").evaluate("""svg => Math.min(...[...svg.querySelectorAll('text')]
            .map(t => parseFloat(getComputedStyle(t).fontSize) * svg.getBoundingClientRect().width
                      / svg.viewBox.baseVal.width))""")
        assert font >= 9, font
        tab(panel, "Memory")  # its label back in view over the output it just printed
        panel.scroll_into_view_if_needed()
        shutil.copy(shots(panel, "panel_memory_tab_1280"), "/tmp/memory_tab_1280.png")

        # a click on the temporary's row: B is xla:optimized, the Source tab selects the line of the temporary and
        # the diff marks its instruction
        instruction = temp.get_attribute("data-instruction")
        temp.click()
        panel.locator(".lm-TabBar-tab.lm-mod-current", has_text="Source").wait_for(timeout=60_000)
        panel.locator(".wbd-head-r", has_text="xla:optimized").wait_for(timeout=60_000)
        panel.locator(".wbsrc-line.wbsrc-sel", has_text="jnp.tanh(x @ w)").wait_for(timeout=60_000)
        marked = panel.locator(".wbd-r .wbd-row.wbd-mark")
        marked.first.wait_for(timeout=60_000)
        assert all("tanh" in t for t in marked.all_inner_texts())
        panel.locator('[data-hwb="lineage"]').wait_for(timeout=60_000)
        assert panel.locator(".wb-python pre").first.inner_text() == f'ex.lineage("xla:optimized", "{instruction}")'
        shots(panel, "panel_memory_followed_1280")
    finally:
        page.close()
HOSTILE = '<img src=x onerror="window.pwned = 1">'

# anywidget's model as the panel's widget has it; what the component sends goes to Python (window.wbSend, the
# panel's own handler), whose answer is the component's data anew
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body style="margin:0;padding:8px"><div id="memory"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
window.sent = [];
window.heard = 0;
const on = {{}};
const model = {{ get: (k) => (k === "kind" ? "memory" : model.data), data: {data}, on: (e, f) => (on[e] = f),
                off() {{}},
                async send(m) {{ window.sent.push(m); model.set(await window.wbSend(m)); window.heard += 1; }},
                set(d) {{ model.data = d; on["change:data"](); }} }};
window.model = model;
views.render({{ model, el: document.getElementById("memory") }});
document.documentElement.dataset.ready = "1";
</script></body></html>"""

# what the tab draws, by its data attributes
DRAWN = """root => ({
    state: root.dataset.state, peak: +root.dataset.peakBytes,
    marker: Object.assign({}, root.querySelector('[data-hwb="memory-peak"]').dataset),
    label: root.querySelector('[data-hwb="memory-peak"] text').textContent,
    lines: [...root.querySelectorAll('[data-hwb="memory-line"]')].map(e => [e.dataset.line, +e.dataset.bytes,
                                                                           e.dataset.selectable === 'true']),
    buffers: [...root.querySelectorAll('[data-hwb="memory-buffer"]')].map(e => [e.dataset.buffer, +e.dataset.bytes,
                                                                               e.dataset.kind, e.dataset.instruction]),
    steps: root.querySelector('[data-hwb="memory-timeline"]').getAttribute('points').trim().split(/\\s+/).length,
    summary: root.querySelector('[data-hwb="memory-summary"]').textContent})"""


def page_of(browser, data: dict, width: int = 1280):
    js, css = views_module()
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(60_000)
    page.set_content(PAGE.format(css=css, js=json.dumps(js).replace("</", "<\\/"), data=json.dumps(data)))
    page.wait_for_selector("html[data-ready='1']", timeout=30_000)
    return page


def test_the_memory_tab_draws_the_peak_and_a_click_on_a_buffer_follows_it(browser, shots, tmp_path):
    ex = wb.explore(wide, jnp.ones((ROWS, INNER)), jnp.ones((INNER, COLS)))
    m = ex.memory()
    p = Panel(ex, background=False)
    errors: list[str] = []
    page = None
    try:
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)  # the tab opened: its facts made
        p.wait()
        assert p.last_error is None and p.memory.view.data["memory"]["peak_bytes"] == m.peak_bytes
        page = page_of(browser, p.memory.view.data)
        page.on("pageerror", lambda e: errors.append(str(e)))
        heard: list[dict] = []

        def send(message):
            heard.append(message)
            p.memory.widget._heard(None, message, [])  # as the widget's comm delivers it
            p.wait()
            return p.memory.view.data

        page.expose_function("wbSend", send)
        root = page.locator('[data-hwb="memory"]')
        drawn = root.evaluate(DRAWN)
        # the peak drawn is XLA's peak, at its place in the schedule, with its instruction
        assert drawn["state"] == "shown" and drawn["peak"] == m.peak_bytes
        assert drawn["marker"] == {"hwb": "memory-peak", "peakBytes": str(m.peak_bytes), "peakAt": str(m.peak_at),
                                   "instruction": m.peak_instruction}
        assert f"({m.peak_bytes:,} B) at {m.peak_instruction}" in drawn["label"]
        assert drawn["summary"] == f"{m.summary()} ex.memory()"
        assert drawn["steps"] == 2 * len(m.to_json()["timeline"])
        # at the peak, by line: first the user's line of the temporary, 2 MiB, the lines summing to the peak
        by_line = m.by_line()
        assert drawn["lines"][0] == [f"{__file__}:{TEMP_LINE}", TEMP, True]
        assert [ln for ln, _, _ in drawn["lines"]] == list(by_line["line"])
        assert sum(b for _, b, _ in drawn["lines"]) == m.peak_bytes
        assert all(not sel for ln, _, sel in drawn["lines"] if ln.startswith("("))  # arguments: nothing to select
        # the largest buffers: the temporary first
        at_peak = m.at_peak()
        assert drawn["buffers"] == [list(r) for r in at_peak[["buffer", "bytes", "kind", "instruction"]].head(50)
                                    .itertuples(index=False)]
        temp = drawn["buffers"][0]
        assert temp[1:3] == [TEMP, "temporary"]
        # nothing cut, nothing scrolls the page sideways at 1280 px
        cut = page.evaluate("""() => [...document.querySelectorAll('th, .hwbv-caption, .hwbv-mem-summary b')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""")
        assert cut == [] and page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        chart = page.locator(".hwbv-mem-chart").bounding_box()
        assert chart["width"] >= 800, chart  # the timeline takes the width there is
        shots(page, "memory_component_1280")

        # a click on the temporary's row: xla:optimized is B, the Source tab follows its instruction
        page.locator(f'[data-hwb="memory-buffer"][data-buffer="{temp[0]}"]').click()
        page.wait_for_function("window.heard === 1")
        assert heard == [{"action": "select_op", "payload": {"instruction": temp[3], "buffer": temp[0]}}]
        assert p.last_error is None and p.right == "xla:optimized"
        assert p.tabs.titles[p.tabs.selected_index] == "Source"
        assert p.source.selection == ("op", "xla:optimized", temp[3])
        assert f"{__file__}:{TEMP_LINE}" in p.source.view.data["selected"]  # its line, selected in the listing
        assert p.diff_view.data["marks"]["after"]  # its line in the diff, marked
        assert p.python == f'ex.lineage("xla:optimized", "{temp[3]}")'
        row = page.locator('[data-hwb="memory-buffer"][data-selected="true"]')
        assert row.get_attribute("data-buffer") == temp[0] and "hwbv-mem-sel" in row.get_attribute("class")
        shots(page, "memory_component_followed")

        # a click on the user's line: selected in the Source tab, its ops marked
        page.locator('[data-hwb="memory-line"]').first.click()
        page.wait_for_function("window.heard === 2")
        assert heard[1] == {"action": "select_line", "payload": {"file": __file__, "line": TEMP_LINE}}
        assert p.last_error is None and p.source.selection == ("line", __file__, TEMP_LINE)
        # a click on an argument's line sends nothing: there is no line of the user's to select
        page.locator('[data-hwb="memory-line"][data-selectable="false"]').first.click()
        page.wait_for_timeout(200)
        assert len(heard) == 2
        assert errors == []
    finally:
        if page is not None:
            page.close()
        p.close()




def test_a_saved_notebook_draws_the_memory_the_panel_read(browser, shots):
    ex = wb.explore(wide, jnp.ones((ROWS, INNER)), jnp.ones((INNER, COLS)))
    m = ex.memory()
    page = saved_view_page(browser, saved_model_after(ex, TITLE))
    try:
        section = page.locator('details[data-hwb="memory-section"]')
        drawn = section.locator('[data-hwb="memory"]').evaluate(DRAWN)
        assert drawn["peak"] == m.peak_bytes and drawn["marker"]["peakBytes"] == str(m.peak_bytes)
        assert drawn["lines"][0] == [f"{__file__}:{TEMP_LINE}", TEMP, True]
        assert drawn["buffers"][0][1:3] == [TEMP, "temporary"]
        assert section.locator(".hwbv-mem-click").count() == 0  # no panel to follow a click
        section.scroll_into_view_if_needed()
        shots(section, "memory_saved_view")
    finally:
        page.close()


def test_the_tab_says_why_there_is_no_memory_and_writes_names_as_text(browser, shots):
    ex = wb.explore(wide, jnp.ones((ROWS, INNER)), jnp.ones((INNER, COLS)))
    facts = ex.memory().to_json()
    facts["summary"] = facts["by_line"][0]["line"] = facts["buffers"][0]["instruction"] = HOSTILE
    page = page_of(browser, {"memory": facts, "python": "ex.memory()"}, width=1000)
    try:
        assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
        assert page.locator('[data-hwb="memory-summary"] b').inner_text() == HOSTILE
        assert page.locator('[data-hwb="memory-line"]').first.get_attribute("data-line") == HOSTILE
        why = "XLA wrote no backend:live-range for this compile, so its memory cannot be read"
        page.evaluate("(d) => window.model.set(d)", {"error": why, "python": "ex.memory()"})
        root = page.locator('[data-hwb="memory"]')
        assert root.get_attribute("data-state") == "error" and root.get_attribute("data-peak-bytes") is None
        assert page.locator(".hwbv-memory .hwbv-error").inner_text() == why
        assert page.locator('[data-hwb="memory-peak"]').count() == 0
        shots(page, "memory_tab_error")
    finally:
        page.close()
