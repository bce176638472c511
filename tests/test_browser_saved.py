"""What a notebook keeps of the panel, in a real browser (JupyterLab on localhost, Debian's chromium, playwright,
the extension installed): a user runs a %%hlo cell, switches a pattern and an XLA pass off, edits stage B by
hand and runs a stage; the notebook saved then holds the panel as it ended (its stages, toggles, edit and run),
not as the cell first showed it, and the updates that carried it left the live panel as it was (the pattern
search box keeps its text). Then the kernel restarts: the live panel, whose widgets died with it, gives way to
the saved view of the last model, with no broken widget, at 1000, 1280 (file browser open) and 1920 px.
Screenshots: test-output/saved_after_restart_<width>.png."""
import nbformat
import pytest

from tests.browser_pages import (edit_b, idle, open_notebook, saved_notebook, settle, show_panel, tab, toggle_off,
                                 write_notebook)

pytestmark = pytest.mark.slow

MIME = "application/vnd.hlo-workbench.exploration+json"
PATTERN, XLA_PASS = "dot_transpose", "algsimp"
CELL = """\
%%hlo -o ex
def f(x, y):
    return jnp.dot(x.T, y.T).T
f(jnp.ones((8, 16)), jnp.ones((4, 8)))"""
NAME = "saved_follows.ipynb"


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / NAME, "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL)


def _model(lab, page, done, seconds: float = 60) -> dict:
    """The panel's view model as the notebook file holds it, once ``done(model)`` (saving again until it does:
    the output follows the panel within about a second of a change)."""
    path = lab["root"] / NAME
    last = {}

    def holds(nb) -> bool:
        outs = [o for o in nb.cells[1].get("outputs", []) if MIME in o.get("data", {})]
        if len(outs) == 1:
            last["model"] = outs[0]["data"][MIME]
        return "model" in last and done(last["model"])

    for _ in range(int(seconds // 3)):
        page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+s")
        try:
            saved_notebook(path, holds, seconds=3)
            return last["model"]
        except AssertionError:
            continue
    raise AssertionError(f"the saved output never held what the panel shows; it held: "
                         f"{ {k: last.get('model', {}).get(k) for k in ('toggles', 'edits', 'runs', 'shown')} }")


def test_the_saved_output_follows_the_panel_and_shows_after_a_kernel_restart(browser, lab, shots):
    page = open_notebook(browser, lab, NAME, width=1500)
    try:
        panel = show_panel(page)
        first = _model(lab, page, lambda m: m["complete"])
        assert first["toggles"]["patterns_disabled"] == [] and first["edits"] == [] and first["runs"] == []

        # a pattern off, found by the search box: the update that carries it leaves the live panel as it was
        tab(panel, "Passes")
        page.evaluate("() => { document.querySelector('.wb-panel').dataset.hwbMark = 'before'; }")
        toggle_off(panel, 0, PATTERN, page)
        _model(lab, page, lambda m: m["toggles"]["patterns_disabled"] == [PATTERN])
        assert panel.locator(".hwbv-tl-search").first.input_value() == PATTERN  # the search box keeps its text
        assert page.evaluate("() => document.querySelector('.wb-panel').dataset.hwbMark") == "before"
        assert page.locator(".hwb-bundle[data-shown='live'] .wb-panel").count() == 1

        # an XLA pass off, a hand edit of stage B, a run
        toggle_off(panel, 1, XLA_PASS, page)
        edit_b(panel, page)
        tab(panel, "Run")
        panel.locator('[data-hwb="run-go"]').click()
        panel.locator('[data-hwb="run"]').first.wait_for(timeout=180_000)
        idle(page)
        names = panel.locator('.wb-stages [data-hwb="stage"]').evaluate_all("rows => rows.map(r => r.dataset.name)")
        final = _model(lab, page, lambda m: len(m["runs"]) == 1 and len(m["edits"]) == 1 and m["complete"]
                       and [r["stage"] for r in m["stages"]] == names)
        assert final["toggles"]["patterns_disabled"] == [PATTERN] and final["toggles"]["xla_disabled"] == [XLA_PASS]
        assert final["edits"][0]["kind"] == "text" and final["variable"] == "ex" and final["source"] == "saved"
        assert final["runs"][0]["check"] is not None and final["runs"][0]["stale"] == ""
        assert len(first["stages"]) != len(final["stages"]) or first["stages"] != final["stages"]
        print(f"\nfirst output: {len(first['stages'])} stages; saved at the end: {len(final['stages'])} stages, "
              f"{final['toggles']}, {len(final['edits'])} edit, {len(final['runs'])} run")

        # the kernel restarts: the saved view of the last model replaces the dead panel
        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
        page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
        page.locator(".jp-Dialog-button.jp-mod-accept").click()
        view = page.locator(".hwb-bundle[data-shown='saved'][data-kernel='gone'] [data-hwb-view]")
        view.wait_for(timeout=60_000)
        page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
        for width in (1000, 1280, 1920):
            page.set_viewport_size({"width": width, "height": 1100})
            if width == 1280:
                page.keyboard.press("Control+b")  # the file browser open beside the notebook
            settle(page)
            assert page.locator(".wb-panel").count() == 0
            assert page.locator(".jupyter-widgets-disconnected").count() == 0, "broken widget icons after the restart"
            assert "Error displaying widget" not in page.locator(".jp-NotebookPanel:visible").inner_text()
            facts = view.evaluate("""v => ({
                stages: [...v.querySelectorAll('[data-hwb="stage"]')].map(e => e.dataset.name),
                edited: [...v.querySelectorAll('[data-hwb="stage"]')].filter(e => e.dataset.edit).map(e => e.dataset.name),
                patterns: v.querySelector('[data-hwb="toggles"]').dataset.patternsDisabled,
                xla: v.querySelector('[data-hwb="toggles"]').dataset.xlaDisabled,
                edits: v.querySelectorAll('[data-hwb="edit"]').length,
                runs: v.querySelectorAll('[data-hwb="run"]').length,
                source: v.dataset.source})""")
            assert facts["stages"] == [r["stage"] for r in final["stages"]] == names, (width, facts["stages"])
            assert (facts["patterns"], facts["xla"]) == (PATTERN, XLA_PASS)
            assert facts["edits"] == 1 and facts["runs"] == 1 and facts["edited"]
            view.scroll_into_view_if_needed()
            shots(page, f"saved_after_restart_{width}")
            if width == 1280:
                page.keyboard.press("Control+b")
    finally:
        page.close()
    nb = nbformat.read(lab["root"] / NAME, as_version=4)  # the file holds no more than one output of the panel
    assert sum(MIME in o.get("data", {}) for o in nb.cells[1].outputs) == 1


def _live_panel(page) -> None:
    """Run the set-up cell and the %%hlo cell (scrolled to first: the notebook may be scrolled down); wait for
    the live panel and its XLA stages."""
    for k in (0, 1):
        cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(k)
        cell.scroll_into_view_if_needed()
        cell.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
    live = page.locator(".hwb-bundle[data-shown='live'] .wb-panel")
    live.locator('.wb-stages [data-hwb="stage"][data-name="xla:optimized"]').wait_for(timeout=180_000)


def test_a_kernel_that_dies_or_is_shut_down_leaves_the_saved_view_not_a_dead_panel(browser, lab, lab_server):
    write_notebook(lab_server["root"] / "saved_dies.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL,
                   "import os\nos._exit(1)")
    page = open_notebook(browser, lab, "saved_dies.ipynb", width=1280)
    try:
        for how in ("dies", "shut down"):
            _live_panel(page)
            assert page.locator("[data-kernel='gone']").count() == 0
            if how == "dies":
                page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(2).locator(".cm-content").click()
                page.keyboard.press("Shift+Enter")  # the kernel's process ends; the server starts another
            else:
                page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
                page.locator(".lm-Menu-itemLabel", has_text="Shut Down Kernel").first.click()
                accept = page.locator(".jp-Dialog-button.jp-mod-accept")
                if accept.count():
                    accept.click()
            view = page.locator(".hwb-bundle[data-shown='saved'][data-kernel='gone'] [data-hwb-view]")
            view.wait_for(timeout=60_000)
            assert page.locator(".wb-panel").count() == 0, how
            assert page.locator(".jupyter-widgets-disconnected").count() == 0, how
            assert view.locator('[data-hwb="stage"]').count() > 10, how
            print(f"\nthe kernel {how}: the saved view replaces the panel")
            if how == "dies":  # JupyterLab says so in a dialog, and the server starts another kernel
                page.locator(".jp-Dialog", has_text="appears to have died").locator(".jp-mod-accept").click()
                page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
    finally:
        page.close()
