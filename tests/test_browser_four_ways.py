"""One exploration, four ways, one truth (issue 45): a user runs a %%hlo cell in JupyterLab, switches a pattern
and an XLA pass off, edits stage B by hand and runs it, then saves the exploration (.hlox) and writes its report.
The live panel, the notebook's saved view after a kernel restart, the .hlox viewer and the offline report are
each read through the view components' data attributes (tests/browser_pages.py's VIEW_FACTS), and each shows the
same stages (the edited one marked), toggles, edits, check verdicts leaf by leaf, and a diff of the pair it
shows counted as Python's ``ex.diff`` counts it; all of it equal to what Python reads of the saved file."""
import pytest

import workbench as wb
from tests.browser_pages import (diff_counts, edit_b, exploration_facts, idle, open_notebook, run_cell, saved_notebook,
                                 show_panel, tab, toggle_off, view_facts, write_notebook)

pytestmark = pytest.mark.slow

MIME = "application/vnd.hlo-workbench.exploration+json"
NAME = "four_ways.ipynb"
CELL = """\
%%hlo -o ex
def f(x, y):
    jax.debug.print("sum {s}", s=x.sum())
    return {"z": jnp.dot(x.T, y.T).T, "n": (x * 2).sum()}
f(jnp.ones((8, 16)), jnp.ones((4, 8)))"""
SAVE = "ex.save('four_ways.hlox'); ex.report('four_ways.html'); print('saved', len(ex.stages))"


def _facts(root) -> dict:
    facts = view_facts(root)
    facts.pop("source", None)
    return facts


def _same(name: str, facts: dict, want: dict, ex) -> None:
    """``facts`` read from one view agree with Python's ``want``; its diff counts with ``ex.diff`` of its pair."""
    for key in ("stages", "patterns_disabled", "xla_disabled", "edits", "leaves"):
        assert facts[key] == want[key], (name, key, facts[key], want[key])
    assert facts["runs"] == want["runs"], (name, facts["runs"])
    assert facts["diff_state"] == "ok" and facts["pair"], (name, facts["diff_state"])
    assert facts["counts"] == diff_counts(ex.diff(*facts["pair"])), (name, facts["pair"])


def test_the_panel_its_saved_view_the_hlox_viewer_and_the_report_tell_the_same_truth(browser, lab, lab_server, shots):
    root = lab_server["root"]
    write_notebook(root / NAME, "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL, SAVE)
    page = open_notebook(browser, lab, NAME, width=1500)
    seen: dict[str, dict] = {}
    try:
        panel = show_panel(page)
        tab(panel, "Passes")
        toggle_off(panel, 0, "dot_transpose", page)
        toggle_off(panel, 1, "algsimp", page)
        edit_b(panel, page)
        tab(panel, "Run")
        panel.locator("button:visible", has_text="Run").first.click()
        panel.locator('[data-hwb="run"]').first.wait_for(timeout=180_000)
        idle(page)
        tab(panel, "Diff")
        seen["live panel"] = _facts(panel)
        shots(page, "four_ways_live")

        run_cell(page, 2)  # ex (bound by -o, following the panel) saved and reported
        page.locator(".jp-OutputArea-output", has_text="saved ").wait_for(timeout=180_000)

        # the notebook saved, the kernel restarted: the saved view of the panel as it ended
        page.keyboard.press("Control+s")
        saved_notebook(root / NAME, lambda nb: any(len(o.get("data", {}).get(MIME, {}).get("runs", [])) == 1
                                                  for o in nb.cells[1].get("outputs", [])))
        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
        page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
        page.locator(".jp-Dialog-button.jp-mod-accept").click()
        view = page.locator(".hwb-bundle[data-shown='saved'][data-kernel='gone'] [data-hwb-view]")
        view.wait_for(timeout=60_000)
        seen["saved view"] = _facts(view)
        shots(page, "four_ways_saved")
    finally:
        page.close()

    # the .hlox viewer, opened from the file browser without a kernel
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{lab['base']}/lab/tree/four_ways.hlox?reset&token={lab['token']}")
        view = page.locator(".jp-MainAreaWidget:visible [data-hwb-view]").first
        view.locator('[data-hwb="diff-counts"][data-state="ok"]').wait_for(timeout=60_000)
        seen[".hlox viewer"] = _facts(view)
        shots(page, "four_ways_hlox")

        # the offline report, as a file
        page.goto((root / "four_ways.html").as_uri())
        view = page.locator("[data-hwb-view]").first
        view.locator('[data-hwb="diff-counts"][data-state="ok"]').wait_for(timeout=60_000)
        seen["report"] = _facts(view)
        shots(page, "four_ways_report")
    finally:
        page.close()

    ex = wb.load(root / "four_ways.hlox")
    want = exploration_facts(ex)
    assert want["patterns_disabled"] == "dot_transpose" and want["xla_disabled"] == "algsimp"
    assert [k for k, _ in want["edits"]] == ["text"] and want["runs"] == 1 and len(want["leaves"]) == 2
    assert any(edit == "text" for _, edit in want["stages"])
    for name, facts in seen.items():
        _same(name, facts, want, ex)
    print("\n" + "\n".join(f"{n}: {len(f['stages'])} stages, pair {f['pair']} {f['counts']}, "
                           f"leaves {f['leaves']}" for n, f in seen.items()))
