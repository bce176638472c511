"""The panel's layout as a new user meets it (issue 45's trial), in a real browser (JupyterLab, Debian's chromium,
playwright), on the tour's attention example: at 1000 px, at 1280 px with the file browser open and at 1920 px,
every tab opened (a run shown, the applicable patterns found, the cost, compile profile, graph and source
filled): no button, label, tab title or option shown in a picker is cut (``scrollWidth > clientWidth``, or for
a picker the option's text wider than its box), no row (nor the Run tab's check table) scrolls sideways, and a
broken edit's message and the line it names are on screen. A pattern toggled in the Passes tab and one toggled
by a click on a result of "Find applicable patterns" leave the panel where it was: its top, its height and its
lists move less than 20 px while it rebuilds, and the first toggle of a panel changes its height by a few px at most,
at 1000 and 1280 px (what a toggle changed and the toggles as code have their room before it); the click toggles
that pattern as any toggle does (its line of Python shown, ``p.ex.spec`` has it off).
"Find where it drifts"'s sentence wraps at 1000 px. Screenshots: test-output/layout_*.png."""
import pytest

from tests.browser_pages import (DRIFT_CELL, open_notebook, run_cell, run_in_panel, settle, show_panel, switch, tab,
                                 write_notebook)

pytestmark = pytest.mark.slow

SETUP = """\
import jax, jax.numpy as jnp
import workbench as wb
import workbench.examples.attention as attention

params, x = attention.args()
ex = wb.explore(attention.fn, params, x)"""
PANEL = "p = wb.panel(ex)\np"
SPEC = "print('off:', ','.join(sorted(p.ex.spec.selection.disabled)))"

# a program whose check fails under no_nan, so that the Run tab offers "Find where it drifts" (test_browser_drift)
TABS = ("Diff", "Passes", "Run", "Cost", "Memory", "Compile", "Graph", "Source", "Analyze", "Collectives")
# what each tab shows once filled (the tab is measured with it)
FILLED = {"Diff": ".wbd-row", "Passes": "[data-hwb=xla-toggle]", "Run": '[data-hwb="run"]',
          "Cost": '[data-hwb="cost-table"]', "Memory": '[data-hwb="memory-peak"]', "Compile": '[data-hwb="compile-step"]',
          "Graph": ".wbg-view svg",
          "Source": ".wbsrc-line", "Analyze": '[data-hwb="applicable"]'}
WIDTHS = ((1000, False), (1280, True), (1920, False))  # (viewport, the file browser open)
FIRST = ((1000, False), (1280, True))  # where the first toggle is measured
# the patterns switched off, comma-joined, as the header's toggles say them
DISABLED = "document.querySelector('.wb-panel [data-hwb=toggles]')?.dataset.patternsDisabled"

# The panel's controls and labels cut: [what, class, text, needed px, shown px]. A label, button, tab title or
# toggle's name whose text is wider than its box; a picker (select) whose option shown (every option of a list
# box) is wider than the room its box gives the text.
CUT = """panel => {
    const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const said = e => (e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
    const out = [];
    const labels = 'button, label, .widget-label, .lm-TabBar-tabLabel, summary, th, .hwbv-tl-name, .hwbv-tl-gname, ' +
                   '.hwbv-stage-name, .wbs-name, .hwbv-cp-kind, .hwbv-cp-name, .hwbv-cp-stage, .hwbv-cp-ms, .hwbv-an-name';
    const code = '.wbd, .wbsrc-code';  // a line of code is cut at the pane's edge by design, and whole in its title
    const cut = e => shown(e) && e.scrollWidth > e.clientWidth + 1;
    const ellipsis = [...panel.querySelectorAll('*')].filter(e => getComputedStyle(e).textOverflow === 'ellipsis'
                                                                && !e.closest(code));
    for (const e of new Set([...panel.querySelectorAll(labels), ...ellipsis]))
        if (cut(e))
            out.push([e.tagName.toLowerCase(), String(e.className).slice(0, 40), said(e), e.scrollWidth,
                      e.clientWidth]);
    const ctx = document.createElement('canvas').getContext('2d');
    for (const s of panel.querySelectorAll('select')) {
        if (!shown(s)) continue;
        const st = getComputedStyle(s);
        ctx.font = `${st.fontStyle} ${st.fontWeight} ${st.fontSize} ${st.fontFamily}`;
        const list = s.multiple || s.size > 1;
        const room = s.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight) - (list ? 8 : 0);
        const options = list ? [...s.options] : [s.options[s.selectedIndex]].filter(Boolean);
        for (const o of options) {
            const w = ctx.measureText(o.text).width;
            if (w > room + 1) out.push(['option', String(s.parentElement.className).slice(0, 40), o.text.slice(0, 60),
                                        Math.round(w), Math.round(room)]);
        }
    }
    return out;
}"""

# What scrolls sideways in or around the panel: [class, scrollWidth, clientWidth]. A box made to scroll its own
# wide content is left out: a diff pane, the graph, a listing of code, a module's text, a table in the box of its
# own that holds it (the Cost tab's, the components' .hwbv-table-wrap), but not the stage list, which is a list.
SIDEWAYS = """panel => [...document.querySelectorAll('*')]
  .filter(e => (e.contains(panel) || panel.contains(e)) && e.clientHeight > 0
               && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1
               && !e.closest('.wbd-pane, .wbd-rows, .wbg, .wbsrc-list, pre, .cm-editor, textarea')
               && !(e.matches('.widget-html, .hwbv-table-wrap:not(.hwbv-stage-scroll)') && e.querySelector('table')))
  .map(e => [String(e.className).slice(0, 60), e.scrollWidth, e.clientWidth])"""

# The Run tab's check tables wider than their box (each may scroll, but a run's leaves should read whole from 1000 px):
# [scrollWidth, clientWidth]
LEAVES_WIDE = """panel => [...panel.querySelectorAll('.wb-run-tab .hwbv-leaf-table-wrap')]
  .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth).map(e => [e.scrollWidth, e.clientWidth])"""

# Every frame while the panel rebuilds: its top on the screen, its height, and the top of its tabs (beside the stage
# list: what the user clicks in).
RECORD = """() => {
    const panel = document.querySelector('.wb-panel'), lists = panel.querySelector('.lm-TabBar');
    window.wbBoxes = [];
    window.wbStop = false;
    const each = () => {
        const r = panel.getBoundingClientRect();
        window.wbBoxes.push([performance.now(), r.top, r.height, lists.getBoundingClientRect().top]);
        if (window.wbBoxes.length < 100000 && !window.wbStop) requestAnimationFrame(each);
    };
    requestAnimationFrame(each);
}"""


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    root = lab_server["root"]
    write_notebook(root / "layout.ipynb", SETUP, PANEL, SPEC)
    write_notebook(root / "layout_toggle.ipynb", SETUP, PANEL, SPEC)
    for width, _ in FIRST:
        write_notebook(root / f"layout_first_{width}.ipynb", SETUP, PANEL)
    write_notebook(root / "layout_drift.ipynb", "import jax, jax.numpy as jnp\nimport workbench as wb", DRIFT_CELL)


def _width(page, width: int, browser_open: bool) -> None:
    if page.locator(".jp-FileBrowser").first.is_visible() != browser_open:
        page.keyboard.press("Control+b")
    page.set_viewport_size({"width": width, "height": 1000})
    settle(page)


def _idle(page) -> None:
    """The panel's last job ended and XLA's stages are shown (in the stage list of the components or the widgets)."""
    page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓') && "
                           "!document.querySelector('.wb-panel [data-hwb=pending], .wb-panel .wbs-pending') && "
                           "document.querySelector('.wb-panel [data-name=\"xla:optimized\"]')", timeout=180_000)


def _find_applicable(panel, page) -> None:
    tab(panel, "Analyze")
    panel.locator("button.hwbv-an-button:visible", has_text="Find applicable patterns").click()
    panel.locator('[data-hwb="applicable"]').first.wait_for(timeout=120_000)
    _idle(page)


def _measure(page, panel) -> list:
    """Every tab opened and filled: what is cut and what scrolls sideways, by tab."""
    found = []
    for title in TABS:
        tab(panel, title)
        if title in FILLED:
            panel.locator(f"{FILLED[title]}:visible").first.wait_for(timeout=120_000)
        settle(page)
        cut, sideways = panel.evaluate(CUT), panel.evaluate(SIDEWAYS)
        found += [(title, "cut", *c) for c in cut] + [(title, "scrolls", *s) for s in sideways]
    return found


def test_every_tab_at_1000_1280_and_1920_px_cuts_no_label_and_scrolls_no_row(browser, lab, shots):
    page = open_notebook(browser, lab, "layout.ipynb", width=1000)
    try:
        panel = show_panel(page)
        run_in_panel(panel, passed=True)
        _idle(page)
        _find_applicable(panel, page)
        found = []
        for width, browser_open in WIDTHS:
            _width(page, width, browser_open)
            for f in _measure(page, panel):
                found.append((width, *f))
                print(width, *f)
            tab(panel, "Run")
            found += [(width, "Run", "the check's table scrolls", *w) for w in panel.evaluate(LEAVES_WIDE)]
            shots(panel, f"layout_run_{width}")

        # a broken edit at 1000 px: a line near the top of a long module broken by hand, the editor scrolled to its
        # end, Apply at the bottom of the screen: MLIR's message and the line it names are on screen
        _width(page, 1000, False)
        tab(panel, "Diff")
        panel.locator(".wb-edit-toggle").click()
        editor = panel.locator('[data-hwb="editor"] .cm-content')
        editor.wait_for(timeout=30_000)
        editor.click()
        page.keyboard.press("Control+Home")
        for _ in range(3):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("End")
        page.keyboard.insert_text(" garbage")
        broken = panel.locator('[data-hwb="editor"] .cm-activeLine').inner_text().strip()
        page.keyboard.press("Control+End")
        apply = panel.locator('[data-hwb="editor"] button', has_text="Apply")
        apply.evaluate("b => b.scrollIntoView({block: 'end'})")
        settle(page)
        apply.click()
        panel.locator('[data-hwb="edit-error"]').wait_for(timeout=60_000)
        settle(page)
        shots(page, "layout_edit_error_1000")
        error = panel.locator('[data-hwb="edit-error"], [data-hwb="edit-line"]')  # the line quoted unless MLIR does
        said = " ".join(" ".join(error.all_inner_texts()).split())
        for box in (error.nth(k).bounding_box() for k in range(error.count())):
            if box is None or box["y"] < 0 or box["y"] + box["height"] > page.viewport_size["height"] + 1:
                found.append((1000, "Diff", "the edit's error is off screen", box, said))
        if " ".join(broken.split()) not in said:
            found.append((1000, "Diff", "the line the error names is not shown with it", broken, said))
        assert not found, "\n".join(map(str, found))
    finally:
        page.close()


def _toggle_steady(page, panel, box, done: str) -> dict:
    """A click on ``box`` (a switch's locator), the page scrolled to show it; how far the panel moved from before
    the click until ``done`` (a JS condition) held and the rebuild ended: the most its top, its height and the top
    of its stage list and tabs moved either way (``top``, ``height``, ``lists``), the most its height fell below
    where it started (``shrank``) and what it grew by in the end (``grew``)."""
    box.evaluate("e => e.scrollIntoView({block: 'center'})")
    settle(page)
    page.evaluate(RECORD)
    settle(page)
    box.click()
    page.wait_for_function(done, timeout=180_000)
    _idle(page)
    settle(page)
    boxes = page.evaluate("() => { window.wbStop = true; return window.wbBoxes; }")
    top0, height0, lists0 = boxes[0][1:]
    moved = {"top": max(abs(b[1] - top0) for b in boxes), "height": max(abs(b[2] - height0) for b in boxes),
             "lists": max(abs(b[3] - lists0) for b in boxes), "shrank": max(height0 - b[2] for b in boxes),
             "grew": boxes[-1][2] - height0, "frames": len(boxes)}
    print(f"moved {moved}")
    return moved


@pytest.mark.parametrize("width, browser_open", FIRST)
def test_the_first_toggle_keeps_the_panel_as_high_as_it_was(browser, lab, shots, width, browser_open):
    """What a toggle adds under the lists (what it changed, the toggles so far as code) has its room before the
    first one: the panel's height stays within a few px from the click until XLA's stages are shown."""
    page = open_notebook(browser, lab, f"layout_first_{width}.ipynb", width=width)
    try:
        _width(page, width, browser_open)
        panel = show_panel(page)
        _idle(page)
        tab(panel, "Passes")
        shots(panel, f"layout_first_before_{width}")
        moved = _toggle_steady(page, panel, switch(panel, "dot_transpose").locator("input"),
                               f"/^[^,]+$/.test({DISABLED})")
        shots(panel, f"layout_first_after_{width}")
        assert moved["height"] <= 4 and moved["top"] < 20 and moved["lists"] < 20, moved
    finally:
        page.close()


def test_a_toggle_leaves_the_panel_in_place_and_an_applicable_pattern_is_a_toggle(browser, lab, shots):
    page = open_notebook(browser, lab, "layout_toggle.ipynb", width=1280)
    try:
        _width(page, 1280, True)
        panel = show_panel(page)
        tab(panel, "Passes")
        box = switch(panel, "dot_transpose").locator("input")
        header = DISABLED
        moved = _toggle_steady(page, panel, box, f"/^[^,]+$/.test({header})")
        assert moved["top"] < 20 and moved["lists"] < 20 and moved["height"] < 20, ("the first toggle", moved)
        # every toggle after it: the panel stays where it is, as high as it was (within 20 px)
        moved = _toggle_steady(page, panel, box, f"{header} === ''")
        assert moved["top"] < 20 and moved["lists"] < 20 and moved["height"] < 20, ("a toggle in the Passes tab", moved)

        # a result of "Find applicable patterns" is a switch of that pattern: its click is a toggle
        _find_applicable(panel, page)
        rows = panel.locator('[data-hwb="applicable"]')
        names = rows.evaluate_all("rs => rs.map(r => [r.dataset.name, r.querySelector('input').checked])")
        assert ["dot_transpose", True] in names, names
        name = next(n for n, on in names if on and n != "dot_transpose")
        row = panel.locator(f'[data-hwb="applicable"][data-name="{name}"]')
        moved = _toggle_steady(page, panel, row.locator("input"), f"/^[^,]+$/.test({header})")
        assert moved["top"] < 20 and moved["lists"] < 20 and moved["height"] < 20, ("an applicable pattern", moved)
        shots(panel, "layout_applicable_toggled")
        assert not row.locator("input").is_checked() and row.get_attribute("data-on") == "false"
        assert "off" in row.inner_text()
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python == f'ex = ex.with_patterns(disable=["{name}"])', python
        passes = panel.locator('[data-hwb="pattern-toggle"][data-name="dot_transpose"]')  # the Passes tab's, hidden
        assert passes.get_attribute("data-on") == "true"
        run_cell(page, 2)
        out = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(2).locator(".jp-OutputArea-output")
        out.first.wait_for(timeout=60_000)
        assert out.first.inner_text().strip() == f"off: {name}"
        # and clicked again, it is switched back on
        moved = _toggle_steady(page, panel, row.locator("input"), f"{header} === ''")
        assert moved["top"] < 20 and moved["lists"] < 20 and moved["height"] < 20, ("an applicable pattern", moved)
        assert row.locator("input").is_checked() and row.get_attribute("data-on") == "true"
        assert panel.locator(".wb-python pre").first.inner_text() == f'ex = ex.with_patterns(enable=["{name}"])'
    finally:
        page.close()


def test_where_it_drifts_wraps_at_1000_px(browser, lab, shots):
    page = open_notebook(browser, lab, "layout_drift.ipynb", width=1000)
    try:
        panel = show_panel(page)
        run_in_panel(panel, passed=False)
        panel.locator('[data-hwb="drift-find"]').click()
        panel.locator('.wb-run-tab [data-hwb="drift"]').wait_for(state="attached", timeout=120_000)
        _idle(page)
        tab(panel, "Run")
        settle(page)
        shots(panel, "layout_drift_1000")
        cut, sideways = panel.evaluate(CUT), panel.evaluate(SIDEWAYS)
        assert not cut and not sideways, (cut, sideways)
        sentence = panel.locator('[data-hwb="drift"] .hwbv-drift-summary').first
        right = panel.bounding_box()
        box = sentence.bounding_box()
        assert box["x"] + box["width"] <= right["x"] + right["width"] + 1, (box, right)
    finally:
        page.close()
