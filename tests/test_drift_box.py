"""The panel's drift box (``Panel(ex, background=False)``): a failed run offers "Find where it drifts", whose
whole answer shows in the box under the run, naming one cause; the panel stays where the user asked; the box's
buttons take the user to the op in the Diff tab and to its line in the Source tab."""
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.views.widgets.panel import Panel

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

from tests.test_drift import line_of, nan_fed, sanitize, scaled  # noqa: E402


def test_the_drift_box_says_it_all_in_one_place_and_links_to_the_diff_and_the_source():
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    p = Panel(ex, background=False)
    run_tab = p.tabs.selected_index = 2
    p.run_tab._heard("run", {"repeat": 1})  # its Run button, as the component sends it
    box = lambda: p.run_tab.data["drift"]  # noqa: E731 -- what the Run tab's drift box draws
    assert p.drift.offered and box() == {"stage": p.run_settings.stage, "finding": False, "found": None}
    p.run_tab._heard("drift", {})
    d = p.drift.found
    assert d is not None and d.found and d.op.cause.kind == "patterns", p.last_error
    said = box()["found"]  # the view model's drift: one sentence, the op and its one cause
    assert said["summary"].count("the cause:") == 1 and "removed by" not in str(said)
    assert said["op"]["cause"]["kind"] == "patterns" and "no_nan_compare_simplify" in said["op"]["cause"]["patterns"]
    assert p.tabs.selected_index == run_tab and said["op"]["result"]  # the answer is where it was asked, with links
    # the op beside its counterpart, its inputs beside theirs and the values compared: the tables drift.ts draws
    assert said["op"]["counterpart"]["op"] == said["op"]["op"] and len(said["op"]["inputs"]["rows"]) == len(d.op.inputs)
    assert len(said["values"]["rows"]) == len(d.rows) and said["values"]["drifts"] >= 1

    p.run_tab._heard("show", {"where": "diff"})
    assert p.tabs.titles[p.tabs.selected_index] == "Diff" and (p.left, p.right) == (d.reference, d.stage)
    p.run_tab._heard("show", {"where": "source"})
    assert p.tabs.titles[p.tabs.selected_index] == "Source"
    assert p.source.selection == ("op", d.stage, d.op.result)  # the op followed: its line selected there
    p.run(repeat=1)  # a new run clears the answer
    assert box()["found"] is None and p.drift.found is None
    p.close()


def test_a_hand_edit_is_the_one_cause_of_the_drift_it_makes():
    """The last stage's constant edited by hand: the search names the edit alone (no pattern pass is run again to
    blame one); the same edit made before a pattern pass that folds the constant on is named too."""
    x = jnp.linspace(0, 1, 64)
    ex = wb.explore(scaled, x)
    last = ex.default_run_stage()
    e = ex.with_text(last, last.text.replace("dense<3.000000e+00>", "dense<3.100000e+00>"))
    d = e.drift()
    assert d.found and d.op.op == "stablehlo.multiply" and d.line == line_of(scaled, "* 3.0")
    assert d.op.cause.kind == "edit" and d.op.cause.stage == last.name and not d.op.patterns
    assert d.summary().count("the cause:") == 1 and f"the cause: your hand edit of {last.name}" in d.summary()

    early = ex.stage("stablehlo")  # the module the pipeline starts from: the patterns carry the edit on
    e = ex.with_text(early, early.text.replace("dense<3.000000e+00>", "dense<3.100000e+00>"))
    d = e.drift()
    assert d.found and d.op.cause.kind == "edit" and d.op.cause.stage == "stablehlo", d.summary()
