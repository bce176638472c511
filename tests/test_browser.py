"""The panel in a real browser: JupyterLab served on localhost, Debian's chromium driven by playwright.

A user runs a ``%%hlo`` cell, picks two stages, switches a pattern off, runs a stage on a device;
and a 50,000-line module scrolls in the diff view (render and frame times are printed, never
asserted). Screenshots go to the test's tmp dir and to test-output/ for a person to look at.
"""
import statistics
import time

import pytest

from tests.browser_pages import (ROOT, check_graph, open_notebook, pane_text, pick, run_cell, settle, show_panel,
                                 side_by_side, stage, switch, tab, write_notebook)

pytestmark = pytest.mark.slow

TRANSPOSES = """\
%%hlo -o ex
def f(x, y):
    return jnp.dot(x.T, y.T).T
f(jnp.ones((8, 16)), jnp.ones((4, 8)))"""

# A real 50,000-line module: the gradient of a 4000-layer MLP as JAX lowers it. Renamed from @main,
# the module gets no XLA stages (compiling it would take minutes); its MLIR stages are the subject.
BIG_MODULE = """\
import jax, jax.numpy as jnp
import workbench as wb
import workbench.views.widgets

def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w) + x
    return (x ** 2).sum()

ws = [jnp.full((8, 8), 0.01) for _ in range(4000)]
text = jax.jit(jax.grad(mlp)).lower(ws, jnp.ones((4, 8))).as_text(debug_info=False).replace("@main(", "@mlp_grad(")
big = wb.explore_text(text, pipeline="canonicalize,cse", title="mlp_grad")
print("lines:", {s.name: s.lines for s in big.stages})"""

BIG_PANEL = 'wb.panel(big, name="big", left="input", right="cse#1")'

# An MLP's gradient: cse merges repeated ops, so "cse#1" against "canonicalize#1" has changed lines.
MLP_GRAD = """\
%%hlo -o ex
def loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).sum()
jax.grad(loss)([jnp.full((16, 16), 0.01) for _ in range(3)], jnp.ones((4, 16)))"""



# -- the notebooks the tests open, in the session's JupyterLab server (tests/conftest.py) ------------------
@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    root = lab_server["root"]
    write_notebook(root / "test.ipynb", "%load_ext workbench\nimport jax.numpy as jnp", TRANSPOSES)
    write_notebook(root / "big.ipynb", BIG_MODULE, BIG_PANEL)
    write_notebook(root / "widths.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", MLP_GRAD)
    write_notebook(root / "analyze.ipynb", "%load_ext workbench\nimport jax.numpy as jnp", TRANSPOSES)
    write_notebook(root / "speculative.ipynb", "%load_ext workbench\nimport workbench.examples.attention as att",
                   ATTENTION)


# -- the tests ---------------------------------------------------------------------------------------------
def test_the_panel_in_jupyterlab(browser, lab, shots):
    page = open_notebook(browser, lab, "test.ipynb")
    try:
        run_cell(page, 0)
        page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(0).locator(".jp-InputPrompt", has_text="[1]").wait_for()
        start = time.perf_counter()  # the first %%hlo of a fresh kernel: Shift+Enter to the panel's rows
        run_cell(page, 1)
        panel = page.locator(".wb-panel")
        rows = panel.locator('.wb-stages [data-hwb="stage"]')  # the stage list: the view components'
        rows.first.wait_for(timeout=180_000)
        to_rows = time.perf_counter() - start
        stage(panel, "xla:optimized").wait_for(timeout=180_000)
        print(f"\nfirst %%hlo in a fresh kernel: Shift+Enter -> panel with its stage rows {to_rows:.2f} s, "
              f"-> XLA's stages {time.perf_counter() - start:.2f} s")
        names = rows.evaluate_all("rows => rows.map(r => r.dataset.name)")
        assert names[:2] == ["jaxpr", "stablehlo"] and "enzyme-hlo-patterns#1" in names and "xla:optimized" in names
        unchanged = panel.locator('.wb-stages [data-hwb="stage"].hwbv-unchanged').count()
        assert unchanged >= 3 and rows.count() - unchanged >= 3
        page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓')")
        side_by_side(panel)

        # pick two stages: the first pattern stage on the right, "stablehlo" on the left (shift-click)
        pick(panel, "xla:optimized")
        panel.locator(".wbd-head-r", has_text="xla:optimized").wait_for()
        pick(panel, "enzyme-hlo-patterns#1")
        pick(panel, "stablehlo", "left")
        panel.locator(".wbd-head-l", has_text="stablehlo").wait_for()
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#1").wait_for()
        deleted = panel.locator(".wbd-l .wbd-row.k-deleted").all_inner_texts()
        assert sum("stablehlo.transpose" in t for t in deleted) == 3
        assert "stablehlo.transpose" not in pane_text(panel, "r") and "stablehlo.dot_general" in pane_text(panel, "r")
        # highlighted: ops, SSA values, types
        assert "stablehlo.dot_general" in panel.locator(".wbd-r .h-op").all_inner_texts()
        assert panel.locator(".wbd-r .h-ssa").count() > 0 and panel.locator(".wbd-r .h-type").count() > 0
        assert "stablehlo.transpose 3→0 (-3)" in panel.locator('[data-hwb="ops-delta"]').inner_text()
        counts = panel.locator('[data-hwb="diff-counts"][data-state="ok"][data-left="stablehlo"]')
        assert int(counts.get_attribute("data-deleted")) + int(counts.get_attribute("data-changed")) >= 3
        assert "values renumbered in order" in counts.inner_text()  # the text is normalized, and it says how
        # the Diff tab's pickers and swap: B on the left and A on the right, and back
        assert panel.locator('[data-hwb="diff-picker"][data-side="right"]').input_value() == "enzyme-hlo-patterns#1"
        panel.locator('[data-hwb="diff-swap"]').click()
        panel.locator(".wbd-head-l", has_text="enzyme-hlo-patterns#1").wait_for()
        panel.locator('[data-hwb="diff-picker"][data-side="right"]').select_option("stablehlo")
        panel.locator(".wbd-head-r", has_text="stablehlo").wait_for()
        panel.locator('[data-hwb="diff-swap"]').click()
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#1").wait_for()
        assert 'ex.diff("stablehlo", "enzyme-hlo-patterns#1")' in panel.locator(".wb-python pre").first.inner_text()
        shots(panel, "panel_diff")

        # the final MLIR stage against stablehlo, then switch dot_transpose off
        pick(panel, "enzyme-hlo-patterns#3")
        pick(panel, "stablehlo", "left")
        panel.locator(".wbd-head-l", has_text="stablehlo").wait_for()
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#3").wait_for()
        assert "stablehlo.transpose" not in pane_text(panel, "r")
        final = stage(panel, "enzyme-hlo-patterns#3").locator("td.hwbv-num").first  # its lines
        lines_before = final.inner_text()
        # the counts of this pair, stablehlo -> #3: the click on #3's name showed #2 -> #3 first, and a pair's counts
        # come when its diff is made, after the header changes
        counts = panel.locator('[data-hwb="diff-counts"][data-state="ok"][data-left="stablehlo"]'
                               '[data-right="enzyme-hlo-patterns#3"]')
        removed = int(counts.get_attribute("data-deleted")) + int(counts.get_attribute("data-changed"))
        assert "stablehlo.transpose 3→0 (-3)" in panel.locator('[data-hwb="ops-delta"]').inner_text()
        tab(panel, "Passes")
        item = switch(panel, "dot_transpose")
        item.locator("input").click()
        page.wait_for_function("document.querySelector('.wbd-r .wbd-rows').textContent.includes('stablehlo.transpose')",
                               timeout=120_000)
        assert 'ex = ex.with_patterns(disable=["dot_transpose"])' in panel.locator(".wb-python pre").first.inner_text()
        panel.locator('[data-hwb="toggles"][data-patterns-disabled="dot_transpose"]').wait_for()
        assert "patterns off" in panel.locator(".wb-header").inner_text()
        assert int(final.inner_text()) > int(lines_before)  # the final stage kept some transposes
        # the diff's counts and op counts are the new pair's: fewer lines removed, transposes kept
        page.wait_for_function("() => !document.querySelector('[data-hwb=\"ops-delta\"]').textContent"
                               ".includes('stablehlo.transpose 3→0')", timeout=60_000)
        kept = int(counts.get_attribute("data-deleted")) + int(counts.get_attribute("data-changed"))
        assert kept < removed, (kept, removed)
        assert "stablehlo.transpose 3→" in panel.locator('[data-hwb="ops-delta"]').inner_text()
        panel.locator('[data-hwb="pattern-toggle"].hwbv-changed[data-name="dot_transpose"][data-on="false"]').wait_for()
        assert not item.locator("input").is_checked()
        panel.locator(".hwbv-tl-search").first.fill("transpose")
        shots(panel, "panel_passes")

        # run the final stage on cpu:0
        tab(panel, "Run")
        panel.locator('[data-hwb="run-device"]').select_option("cpu:0")
        panel.locator('[data-hwb="run-go"]').click()
        # the session's runs (the view components'): this one passed, leaf by leaf
        run = panel.locator('.wb-run-tab [data-hwb="run"][data-passed="true"]')
        run.wait_for(timeout=120_000)
        assert run.count() == 1 and run.locator('[data-hwb="leaf"][data-passed="true"]').count() == 1
        result = run.inner_text()
        assert "cpu:0" in result and "median" in result and "float32" in result
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python == 'ex.run("enzyme-hlo-patterns#3", device="cpu:0", repeat=20)'
        shots(panel, "panel_run")

        # the cost and graph tabs fill when opened
        tab(panel, "Cost")  # the table, and the chart the component draws from its rows
        panel.locator('[data-hwb="cost-bar"][data-measure="flops"]').first.wait_for(timeout=120_000)
        assert "flops" in panel.locator('[data-hwb="cost-table"]:visible').inner_text()
        shots(panel, "panel_cost")
        tab(panel, "Graph")
        panel.locator(".wbg svg, .wbg-msg:has-text('not available')").first.wait_for(timeout=60_000)
        shots(panel, "panel_graph")

        # which patterns apply to stablehlo: the list once the scan ends. A progress bar shows while a long scan
        # runs (tests/test_progress.py), but this one can end in a tenth of a second, before any bar is drawn:
        # wait for the state the click leads to, never for a transient one on the way
        tab(panel, "Analyze")
        panel.locator("button.hwbv-an-button:visible", has_text="Find applicable patterns").click()
        panel.locator('[data-hwb="analyze-applicable"][data-state="found"]').wait_for(timeout=180_000)
        found = panel.locator('[data-hwb="applicable"][data-name="dot_transpose"]')
        assert found.get_attribute("data-on") == "false" and not found.locator("input").is_checked()  # off, as above
        shots(panel, "panel_analyze")
    finally:
        page.close()


def test_a_50000_line_module_scrolls_in_the_diff_view(browser, lab, shots):
    page = open_notebook(browser, lab, "big.ipynb")
    try:
        run_cell(page, 0)
        page.locator(".jp-Cell-outputArea", has_text="lines:").first.wait_for(timeout=300_000)
        lines = page.locator(".jp-Cell-outputArea", has_text="lines:").first.inner_text()
        print(lines)
        start = time.perf_counter()
        run_cell(page, 1)
        view = page.locator(".wbd").first
        page.wait_for_function("Number(document.querySelector('.wbd')?.dataset.rows) > 50000", timeout=300_000)
        cell_to_rows = time.perf_counter() - start
        rows = int(view.get_attribute("data-rows"))
        browser_ms = float(view.get_attribute("data-render-ms"))
        side_by_side(page.locator(".wb-panel").first)
        assert view.locator(".wbd-l .wbd-row").count() < 200  # virtualized: only the rows in view
        assert "input" in view.locator(".wbd-head-l").inner_text()

        frames = page.evaluate("""async () => {
            const pane = document.querySelector('.wbd-l');
            const other = document.querySelector('.wbd-r');
            const scroll = async (step, n) => {  // step px per frame, n frames: the time between frames
                const deltas = [];
                let last = performance.now();
                for (let k = 0; k < n; k++) {
                    pane.scrollTop += step;
                    await new Promise(r => requestAnimationFrame(r));
                    const now = performance.now();
                    deltas.push(now - last);
                    last = now;
                }
                return deltas;
            };
            const gentle = await scroll(54, 150);  // 3 rows a frame: wheel scrolling
            const deltas = await scroll(540, 150);  // 30 rows a frame: a fast fling
            const jumps = [];
            for (let k = 0; k < 40; k++) {  // dragging the scrollbar: far jumps
                pane.scrollTop = (k * 7919 % 97) / 97 * (pane.scrollHeight - pane.clientHeight);
                const t = performance.now();
                await new Promise(r => requestAnimationFrame(r));
                jumps.push(performance.now() - t);
            }
            await new Promise(r => requestAnimationFrame(r));
            const top = Math.floor(pane.scrollTop / 18);
            const first = Number(pane.querySelector('.wbd-row .wbd-ln').textContent);
            return {gentle, deltas, jumps, synced: pane.scrollTop === other.scrollTop, top,
                    painted: pane.querySelectorAll('.wbd-row').length, first,
                    height: pane.scrollHeight};
        }""")
        j = frames["jumps"]
        print(f"\n50,000-line diff: {rows} rows; cell run -> rows painted {cell_to_rows:.2f} s "
              f"(kernel: diff + send; browser: split, index, first paint {browser_ms:.0f} ms)")
        for what, d in (("3 rows", frames["gentle"]), ("30 rows", frames["deltas"])):
            print(f"scrolling {len(d)} frames of {what}: frame time median {statistics.median(d):.1f} ms, "
                  f"p95 {sorted(d)[int(0.95 * len(d))]:.1f} ms, max {max(d):.1f} ms")
        print(f"40 far jumps: median {statistics.median(j):.1f} ms, max {max(j):.1f} ms to the next frame")
        assert frames["synced"] and 0 < frames["painted"] < 200 and frames["height"] >= rows * 18
        assert frames["top"] > 0

        # next change, changes only, and the wheel scrolls both sides together
        view.locator(".wbd-next").click()
        assert "change " in view.locator(".wbd-pos").inner_text()
        view.locator(".wbd-fold").check()
        assert view.locator(".wbd-folded").count() > 0 or view.locator(".wbd-row.k-deleted").count() > 0
        view.locator(".wbd-fold").uncheck()
        view.locator(".wbd-r").hover()
        page.mouse.wheel(0, 5000)
        page.wait_for_function("document.querySelector('.wbd-l').scrollTop > 0 && "
                               "document.querySelector('.wbd-l').scrollTop === document.querySelector('.wbd-r').scrollTop")
        shots(page.locator(".wb-panel").first, "panel_50000_lines")

        # picking another pair re-sends the module: time from click to painted rows
        start = time.perf_counter()
        pick(page.locator(".wb-panel"), "canonicalize#1")
        page.locator(".wbd-head-r", has_text="canonicalize#1").wait_for(timeout=120_000)
        page.wait_for_function("document.querySelector('.wbd').dataset.rows !== undefined && "
                               "document.querySelector('.wbd-head-r').textContent === 'canonicalize#1'")
        print(f"picking canonicalize#1: click -> rows painted {time.perf_counter() - start:.2f} s")
    finally:
        page.close()


def test_the_highlighter_and_the_change_marks_in_the_browser(browser):
    """The diff view's tokenizer, loaded from its file into a blank page: the text survives, classes fit."""
    from workbench.artifacts.assets import inlined  # with what it imports, as the panel and the report load it

    src = inlined(ROOT / "workbench" / "assets" / "diffview.js")
    page = browser.new_page()
    try:
        out = page.evaluate("""async (src) => {
            const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
            const m = await import(url);
            const lines = [
              '    %3 = stablehlo.dot_general %1, %0, contracting_dims = [0] x [1] : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>',
              'module @jit_f attributes {mhlo.num_partitions = 1 : i32} {',
              '  %dot.3 = f32[4,16]{1,0} dot(f32[4,8]{1,0} %p.1, f32[8,16]{1,0} %p.2), lhs_contracting_dims={1} // note',
              '  %6 = "stablehlo.add"(%a) {x = #stablehlo<comparison_direction GT>} : (tensor<4x!stablehlo.token>) -> tensor<i1>',
            ];
            const toks = lines.map(l => m.tokenize(l));
            const a = m.tokenize(lines[0]), b = m.tokenize(lines[0].replace('%1, %0', '%0, %1'));
            return {
              roundtrip: toks.every((t, k) => t.map(x => x[0]).join('') === lines[k]),
              classes: toks.map(t => t.filter(x => x[1]).map(x => x[1] + ':' + x[0])),
              range: m.changedRange(a, b).map(k => k),
              marked: m.toHtml(a, ...m.changedRange(a, b).slice(0, 2)),
              escaped: m.toHtml(m.tokenize('x <script> & y')),
            };
        }""", src)
    finally:
        page.close()
    assert out["roundtrip"]
    c0, c1, c2, c3 = out["classes"]
    assert c0[:3] == ["ssa:%3", "op:stablehlo.dot_general", "ssa:%1"]
    assert "type:tensor<8x4xf32>" in c0 and "attr:contracting_dims" in c0
    assert c1[:4] == ["kw:module", "sym:@jit_f", "kw:attributes", "attr:mhlo.num_partitions"]
    assert "type:f32[4,16]{1,0}" in c2 and "op:dot" in c2 and "com:// note" in c2
    assert 'str:"stablehlo.add"' in c3 and "attr:#stablehlo<comparison_direction GT>" in c3
    assert "type:tensor<4x!stablehlo.token>" in c3
    marked = out["marked"]  # "%1, %0" became "%0, %1": those tokens are marked, nothing before them
    assert '<span class="h-ssa h-mark">%1</span>' in marked and '<span class="h-ssa h-mark">%0</span>' in marked
    assert marked.index("h-mark") > marked.index("stablehlo.dot_general") and marked.count("h-ssa h-mark") == 2
    assert "h-mark" not in marked[marked.index("contracting_dims"):]
    assert "<script>" not in out["escaped"] and "&lt;script&gt; &amp; y" in out["escaped"]


def test_bisect_in_the_analyze_tab_and_the_tri_state_group_switch(browser, lab, shots):
    import re

    page = open_notebook(browser, lab, "analyze.ipynb")
    try:
        panel = show_panel(page)
        # a repeated pass on an unchanged module: its time is the first run's, and says so
        assert panel.locator('.wb-stages [data-hwb="stage"] td.hwbv-num', has_text="(cached)").count()

        # bisect with the proposed predicate: the culprits, their runs and the predicate in the tab's body
        tab(panel, "Analyze")
        note = panel.locator('[data-hwb="analyze-proposal"][data-state="proposed"]')
        assert "Proposed: op_count_at_most(op, n) with op stablehlo.transpose, n=0: the patterns remove 3 " \
            "stablehlo.transpose" in note.inner_text()
        # at 1280 px with the file browser open, the bisect's long progress line goes under the header and
        # wraps there: the header keeps its one line, and nothing but the diff's panes scrolls sideways
        page.keyboard.press("Control+b")
        page.set_viewport_size({"width": 1280, "height": 1250})
        settle(page)
        header = panel.locator(".wb-header").bounding_box()["height"]
        panel.locator("button.hwbv-an-button:visible", has_text="Bisect").click()
        running = page.wait_for_function("""() => {
            const status = document.querySelector('.wb-status.wb-running'), panel = document.querySelector('.wb-panel');
            if (!status || !status.textContent.includes('bisect')) return null;
            const box = (e) => e.getBoundingClientRect();
            return {header: box(panel.querySelector('.wb-header')).height, status: box(status).width,
                    top: box(panel.querySelector('.wb-top')).width, scrolling: (%s)(panel)};
        }""" % SIDEWAYS, polling="raf").json_value()
        assert running["header"] <= header + 1 and running["status"] <= running["top"] + 1, (header, running)
        assert not running["scrolling"], running
        result = panel.locator('[data-hwb="analyze-bisect"][data-state="found"]')
        result.wait_for(timeout=180_000)
        text = result.inner_text()
        assert "wb.op_count_at_most(\"stablehlo.transpose\", 0)" in text and "hold (" in text
        assert "pattern\tgroup\tparameters" in result.locator("table").first.inner_text()
        culprits = result.locator('[data-hwb="culprit"][data-kind="pattern"]')
        assert culprits.count() >= 1 and "base" in culprits.first.inner_text()
        assert re.search(r"\b1 pattern makes|\b\d+ patterns make ", text)
        result.locator("summary", has_text="the pipeline runs").click()
        assert result.locator('[data-hwb="search-run"][data-held="true"]:visible').count() >= 1
        assert panel.locator('[data-hwb="switch-culprits-off"]:visible').count() == 1
        shots(panel, "panel_bisect")

        # the Passes tab: the search boxes hold their placeholders, reset stays on one line
        tab(panel, "Passes")
        lists = panel.locator(".hwbv-tl")
        fits = lists.evaluate_all("""els => els.map(el => {
            const input = el.querySelector('.hwbv-tl-search'), reset = el.querySelector('.hwbv-tl-reset');
            const ctx = document.createElement('canvas').getContext('2d');
            const style = getComputedStyle(input);
            ctx.font = `${style.fontSize} ${style.fontFamily}`;
            const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            const r = document.createRange();
            r.selectNodeContents(reset);
            return {placeholder: input.placeholder, fits: ctx.measureText(input.placeholder).width <= room,
                    resetLines: r.getClientRects().length};
        })""")
        assert [f["placeholder"].split()[-1] for f in fits] == ["patterns", "passes"], fits
        assert all(f["fits"] and f["resetLines"] == 1 for f in fits), fits

        # make the base group mixed (one pattern off), then click its checkbox: it asks to clear it
        patterns = lists.first
        switch(panel, "dot_transpose").locator("input").click()
        panel.locator('[data-hwb="toggles"][data-patterns-disabled="dot_transpose"]').wait_for(timeout=120_000)
        patterns.locator(".hwbv-tl-search").fill("")
        box = patterns.locator('.hwbv-tl-group[data-group="base"] .hwbv-tl-gcheck')
        page.wait_for_function("document.querySelector('.hwbv-tl-group[data-group=\"base\"] .hwbv-tl-gcheck')"
                               "?.indeterminate")
        box.click()
        question = patterns.locator(".hwbv-tl-confirm")
        question.wait_for(state="visible")
        assert question.locator(".hwbv-tl-question").inner_text() == "switch 300 patterns off (group base)?"
        assert box.evaluate("b => b.indeterminate && !b.checked")  # nothing applied yet
        shots(patterns, "panel_group_confirm")
        question.locator(".hwbv-tl-no").click()
        question.wait_for(state="hidden")
        assert panel.locator('[data-hwb="toggles"]').get_attribute("data-patterns-disabled") == "dot_transpose"
        box.click()
        question.locator(".hwbv-tl-yes").click()
        page.wait_for_function("document.querySelector('.wb-panel [data-hwb=\"toggles\"]')"
                               ".dataset.patternsDisabled.split(',').length === 301", timeout=120_000)
        page.wait_for_function("(() => { const b = document.querySelector('.hwbv-tl-group[data-group=\"base\"] "
                               ".hwbv-tl-gcheck'); return b && !b.checked && !b.indeterminate; })()")
        assert "0/301 on" in patterns.locator('.hwbv-tl-group[data-group="base"] .hwbv-tl-gcount').inner_text()
        assert "with_patterns(disable=[" in panel.locator(".wb-python pre").first.inner_text()
    finally:
        page.close()


# -- the panel at laptop widths, and a graph to navigate ---------------------------------------------------
# What the panel's layout looks like in the page: the panel's and its output area's boxes, each tab label,
# each visible diff pane (how many code characters it shows), the diff's layout and the stage list's fold.
LAYOUT = """panel => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const view = panel.querySelector('.wbd');
    const panes = [...view.querySelectorAll('.wbd-pane')].filter(p => p.clientWidth > 0).map(p => {
        const probe = document.createElement('div');  // the code font's character width, in this pane
        probe.className = 'wbd-row';
        probe.style.cssText = 'position: absolute; visibility: hidden';
        probe.innerHTML = '<span class="wbd-code">' + 'x'.repeat(100) + '</span>';
        p.querySelector('.wbd-rows').appendChild(probe);
        const charW = probe.firstChild.getBoundingClientRect().width / 100;
        probe.remove();
        const code = p.querySelector('.wbd-row .wbd-code');  // where the code starts: after the gutter
        const gutter = code.getBoundingClientRect().left - p.getBoundingClientRect().left + p.scrollLeft;
        return {pane: p.className, width: p.clientWidth, gutter, charW, chars: (p.clientWidth - gutter) / charW};
    });
    const tabs = [...panel.querySelectorAll('.lm-TabBar-tab')].map(t => {
        const label = t.querySelector('.lm-TabBar-tabLabel');
        return {text: label.textContent, scroll: label.scrollWidth, client: label.clientWidth, box: box(t)};
    });
    const list = panel.querySelector('.wb-stages');
    return {panel: box(panel), output: box(panel.closest('.jp-OutputArea-output') || panel.parentElement),
            tabbar: box(panel.querySelector('.lm-TabBar')), tabs, panes, mode: view.dataset.mode,
            folded: list.dataset.folded === 'true', list: list.getBoundingClientRect().width,
            pos: panel.querySelector('.wbd-pos').getBoundingClientRect().height};
}"""


def check_layout(panel, width: int, chars: int = 80) -> dict:
    """Tab labels whole, the B picker and swap inside the panel, every visible diff pane ``chars`` wide."""
    m = panel.evaluate(LAYOUT)
    print(f"{width} px: panel {m['panel'][2] - m['panel'][0]:.0f} px, stage list {m['list']:.0f} px, "
          f"diff {m['mode']}, panes " + ", ".join(f"{p['width']} px = {p['chars']:.0f} chars" for p in m["panes"]))
    cut = [t for t in m["tabs"] if t["scroll"] > t["client"] or t["box"][2] > m["tabbar"][2] + 1]
    assert not cut, (width, cut)
    assert m["panel"][2] <= m["output"][2] + 1, (width, m["panel"], m["output"])  # the panel fits its output area
    outer = m["panel"]
    for what in (panel.locator('[data-hwb="diff-picker"][data-side="right"]'), panel.locator('[data-hwb="diff-swap"]')):
        b = what.first.bounding_box()
        assert outer[0] - 1 <= b["x"] and b["x"] + b["width"] <= outer[2] + 1, (width, b, outer)
        assert outer[1] - 1 <= b["y"] and b["y"] + b["height"] <= outer[3] + 1, (width, b, outer)
    assert m["pos"] <= 20, (width, m["pos"])  # "change k of n" on one line
    assert m["panes"] and all(p["chars"] >= chars for p in m["panes"]), (width, m["panes"])
    return m


def test_the_panel_at_laptop_widths(browser, lab, shots):
    page = open_notebook(browser, lab, "widths.ipynb", width=1920)
    try:
        run_cell(page, 0)
        run_cell(page, 1)
        panel = page.locator(".wb-panel")
        stage(panel, "cse#1").wait_for(timeout=180_000)
        page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓')")
        pick(panel, "cse#1")  # against its parent: lines cse changed
        panel.locator(".wbd-head-r", has_text="cse#1").wait_for()
        panel.locator(".wbd-head-l", has_text="canonicalize#1").wait_for()

        # wide: the stage list open, side by side; narrow: the list folded, unified (both chosen by width)
        for width in (1920, 1280, 1000):
            page.set_viewport_size({"width": width, "height": 1250})
            settle(page)
            if width == 1920:
                page.wait_for_function("document.querySelector('.wb-stages').dataset.folded === 'false' && "
                                       "document.querySelector('.wbd').dataset.mode === 'split'")
            if width == 1000:  # the list open but compact (names only), the diff unified
                page.wait_for_function(f"({COMPACT})() && document.querySelector('.wb-stages').dataset.folded === "
                                       "'false' && document.querySelector('.wbd').dataset.mode === 'unified'")
                assert stage(panel, "cse#1").locator("td.hwbv-num").first.is_hidden()
                assert stage(panel, "cse#1").locator(".hwbv-link").is_visible()
            check_layout(panel, width, chars=80 if width > 1000 else 60)
            assert not panel.evaluate(SIDEWAYS), width
            shots(page, f"panel_{width}")
        page.keyboard.press("Control+b")  # the file browser open, as users have it
        page.locator(".jp-FileBrowser").first.wait_for(state="visible")
        page.set_viewport_size({"width": 1280, "height": 1250})
        settle(page)  # a laptop: the stage list open (compact) beside a unified diff of 65+ characters
        page.wait_for_function(f"({COMPACT})() && document.querySelector('.wb-stages').dataset.folded === 'false'")
        check_layout(panel, 1280, chars=65)
        assert not panel.evaluate(SIDEWAYS)
        shots(page, "panel_1280_filebrowser")
        page.set_viewport_size({"width": 1100, "height": 1250})
        settle(page)
        page.wait_for_function("document.querySelector('.wb-stages').dataset.folded === 'true'")
        check_layout(panel, 1100, chars=60)  # the notebook is 850 px wide, the panel 670: one pane, 60+ characters
        page.set_viewport_size({"width": 900, "height": 1250})  # narrower still: the diff's tools wrap
        settle(page)
        assert not panel.evaluate(SIDEWAYS)
        page.set_viewport_size({"width": 1100, "height": 1250})
        settle(page)
        shots(page, "panel_1100_filebrowser")

        # unified: every row once, a changed line as a "-" row (before's number) then a "+" row (after's)
        view = panel.locator(".wbd")
        unified = view.locator(".wbd-u .wbd-row")
        changed = int(panel.locator('[data-hwb="diff-counts"]').get_attribute("data-changed"))
        assert changed == 3 and unified.count() == int(view.get_attribute("data-rows")) + changed
        minus = view.locator(".wbd-u .wbd-row.k-changed.u-minus").first
        plus = minus.locator("xpath=following-sibling::div[1]")
        assert "u-plus" in plus.get_attribute("class") and "k-changed" in plus.get_attribute("class")
        before_no, after_no = minus.locator(".wbd-n").all_inner_texts(), plus.locator(".wbd-n").all_inner_texts()
        assert before_no[0].isdigit() and before_no[1] == "" and after_no[0] == "" and after_no[1].isdigit()
        assert minus.locator(".wbd-sign").inner_text() == "-" and plus.locator(".wbd-sign").inner_text() == "+"
        marked = minus.locator(".h-mark").all_inner_texts(), plus.locator(".h-mark").all_inner_texts()
        assert marked[0] and marked[1] and marked[0] != marked[1]
        assert minus.locator(".wbd-code").inner_text() != plus.locator(".wbd-code").inner_text()

        # a line wider than the pane shows whole in its title when hovered; one that fits has none
        fits = unified.evaluate_all("""rows => rows.map(r => {
            const code = r.querySelector('.wbd-code');
            return code ? code.getBoundingClientRect().right <= r.closest('.wbd-pane').getBoundingClientRect().right
                        : null;
        })""")
        long, short = fits.index(False), fits.index(True)
        unified.nth(long).hover(position={"x": 200, "y": 9})
        assert unified.nth(long).get_attribute("title") == unified.nth(long).locator(".wbd-code").inner_text()
        unified.nth(short).hover(position={"x": 100, "y": 9})
        assert unified.nth(short).get_attribute("title") is None

        # the user's choices win over the width: side by side here, the stage list unfolded and folded again
        view.locator(".wbd-mode").select_option("split")
        panel.locator('.wbd[data-mode="split"]').wait_for()
        assert view.locator(".wbd-u").is_hidden() and view.locator(".wbd-l .wbd-row").count() > 30
        view.locator(".wbd-mode").select_option("auto")
        panel.locator('.wbd[data-mode="unified"]').wait_for()
        assert "auto (unified)" in view.locator(".wbd-mode option[value=auto]").inner_text()
        strip = panel.locator(".wb-stages").bounding_box()["width"]
        fold = panel.locator('.wb-stages details[data-hwb="stages"] > summary')  # the list's heading folds it
        fold.click()
        page.wait_for_function("document.querySelector('.wb-stages').dataset.folded === 'false'")
        assert strip < 40 < panel.locator(".wb-stages").bounding_box()["width"]
        pick(panel, "enzyme-hlo-patterns#1")
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#1").wait_for()
        fold.click()
        page.wait_for_function("document.querySelector('.wb-stages').dataset.folded === 'true'")
        shots(panel, "panel_unified_folded")

        # every tab at 1920, at 1280 with the file browser open (it is, from above) and at 1000: no button,
        # label, tab title or table cell is cut; a name in a toggle list may end in "…" only with its title whole
        stage(panel, "xla:optimized").wait_for(state="attached", timeout=180_000)  # XLA passes listed
        for width, browser_open in ((1280, True), (1000, False), (1920, False)):
            if page.locator(".jp-FileBrowser").first.is_visible() != browser_open:
                page.keyboard.press("Control+b")
            page.set_viewport_size({"width": width, "height": 1250})
            settle(page)
            for title in ("Diff", "Passes", "Run", "Cost", "Compile", "Graph", "Source", "Analyze", "Collectives"):
                tab(panel, title)
                if title == "Graph":  # drawn: the stage picked (B), its labels readable, its legend whole
                    panel.locator(".wbg-view svg").wait_for(timeout=120_000)
                    settle(page)
                    check_graph(panel, width, "enzyme-hlo-patterns#1 (B of the diff)", "enzyme-hlo-patterns#1: ")
                settle(page)
                cut = panel.evaluate(CLIPPED)
                assert not cut, (width, title, cut)
                assert not panel.evaluate(SIDEWAYS), (width, title)
    finally:
        page.close()


# What scrolls sideways around the panel or in its frame (its rows and boxes, the tabs' bodies):
# [class, scrollWidth, clientWidth]. A box made to scroll its own wide content (a diff pane, the graph, a
# wide table in its scroll box) is left out: one scrollbar of its own is its design.
SIDEWAYS = """panel => [...document.querySelectorAll('*')]
  .filter(e => (e.contains(panel) || (panel.contains(e) && (e.classList.contains('widget-box')
                 || e.classList.contains('widget-tab-contents') || e.classList.contains('jupyter-widget-tab'))))
               && e.clientHeight > 0 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
               && e.scrollWidth > e.clientWidth + 1)
  .map(e => [String(e.className).slice(0, 50), e.scrollWidth, e.clientWidth])"""


# The panel's controls and texts wider than their boxes: [tag, class, text, scrollWidth, clientWidth], those
# hidden left out; a toggle list's name cut with an ellipsis counts only when its title is not the whole name.
CLIPPED = """panel => [...panel.querySelectorAll(
    'button, label, .widget-label, .lm-TabBar-tabLabel, th, td, summary, .hwbv-tl-name, .wb-status')]
  .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1)
  .filter(e => !(e.classList.contains('hwbv-tl-name') && e.title === e.textContent))
  .map(e => [e.tagName, String(e.className).slice(0, 40), (e.textContent || '').trim().slice(0, 60),
             e.scrollWidth, e.clientWidth])"""


# The stage list compact (a panel under 1000 px): names only, narrow.
COMPACT = """() => { const list = document.querySelector('.wb-stages'), lines = list.querySelector('td.hwbv-num');
    return list.getBoundingClientRect().width <= 215 && !!lines && lines.getClientRects().length === 0; }"""


# -- XLA compiling in the background: the MLIR stages first ------------------------------------------------
# A transformer block's gradient: its XLA compile takes about a second, its toggled MLIR stages a tenth of that.
ATTENTION = """\
%%hlo -o ex
p, x = att.args(seq=48)
att.fn(p, x)"""

# Every change the panel's DOM goes through, recorded in the page: the stage rows, the "compiling XLA"
# marker, the status line and the header (which says what is toggled, so whose stages these are).
RECORD = """() => {
    const panel = document.querySelector('.wb-panel');
    window.wbSeen = [];
    const snap = () => window.wbSeen.push({
        t: performance.now(), pending: !!panel.querySelector('.wb-stages [data-hwb="pending"]'),
        status: [...panel.querySelectorAll('.wb-status')].map(e => e.textContent).join(' '),
        header: panel.querySelector('[data-hwb="toggles"]')?.dataset.patternsDisabled || '',
        rows: [...panel.querySelectorAll('.wb-stages [data-hwb="stage"]')].map(r => [r.dataset.name,
               r.querySelector('td.hwbv-num').textContent, /^(xla|backend)$/.test(r.dataset.group)])});
    new MutationObserver(snap).observe(panel, {subtree: true, childList: true, characterData: true});
    window.wbClick = performance.now();
}"""


def test_a_toggle_shows_the_mlir_stages_while_xla_compiles_then_its_xla_stages(browser, lab, shots):
    page = open_notebook(browser, lab, "speculative.ipynb")
    try:
        page.keyboard.press("Control+b")  # a laptop with the file browser open: the compact stage list
        page.set_viewport_size({"width": 1280, "height": 1250})
        panel = show_panel(page, timeout=300_000, status_timeout=300_000)
        pending = panel.locator('.wb-stages [data-hwb="pending"]')  # the row that says XLA is compiling
        assert pending.count() == 0
        tab(panel, "Passes")
        box = switch(panel, "dot_transpose").locator("input")
        page.evaluate(RECORD)
        box.click()
        page.wait_for_function("window.wbSeen.some(s => s.pending || s.header === 'dot_transpose')",
                               timeout=120_000)
        if pending.count():  # still compiling: how the panel looks meanwhile
            shots(panel, "panel_compiling_xla")
        arrived = ("(s, i, all) => !s.pending && s.rows.some(r => r[0] === 'xla:optimized') "
                   "&& all.slice(0, i).some(w => w.pending)")
        page.wait_for_function(f"window.wbSeen.some({arrived})", timeout=300_000)
        seen, click = page.evaluate("() => [window.wbSeen, window.wbClick]")
        waiting = [s for s in seen if s["pending"]]
        assert waiting, "the toggled Exploration was never shown while XLA compiled"
        first = waiting[0]
        final = next(s for s in seen if s["t"] > first["t"] and not s["pending"]
                     and any(r[0] == "xla:optimized" for r in s["rows"]))
        assert first["header"] == "dot_transpose" == final["header"]
        # the new MLIR stages, before any XLA stage: the same rows (names and lines) as once XLA's arrived
        assert first["rows"] and not any(late for _, _, late in first["rows"])
        assert [r for r in final["rows"] if not r[2]] == first["rows"]
        assert any("compiling XLA" in s["status"] for s in waiting)
        assert all(not s["pending"] for s in seen if s["t"] >= final["t"])
        assert "compiling XLA" not in panel.locator(".wb-status").first.inner_text()
        # what the toggle changed, XLA's part filled in once its stages came; a click diffs against before it
        summary = panel.locator('[data-hwb="changes"]').first
        page.wait_for_function("() => !document.querySelector('.wb-panel [data-hwb=\"changes\"]').textContent"
                               ".includes('XLA has not compiled')", timeout=60_000)
        said = summary.inner_text()
        assert said.startswith("dot_transpose off:") and "recomputed" in said and "final MLIR (" in said, said
        assert "xla:optimized changed" in said or "xla:optimized unchanged" in said, said
        tab(panel, "Run")
        panel.get_by_role("button", name="final MLIR vs before").click()
        head = panel.locator(".wbd-head-l").first
        head.wait_for(state="visible", timeout=60_000)
        page.wait_for_function("() => document.querySelector('.wb-panel .wbd-head-l').textContent"
                               ".endsWith('(before)')", timeout=60_000)
        shots(page, "panel_change_summary_1280")
        print(f"\nchange summary: {said}")
        print(f"\ntoggle dot_transpose on a transformer block's gradient: click -> its MLIR stages "
              f"{(first['t'] - click) / 1e3:.2f} s (XLA compiling), -> its XLA stages "
              f"{(final['t'] - click) / 1e3:.2f} s")
    finally:
        page.close()
