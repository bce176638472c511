"""The work a drift search does, counted (not timed): a program whose values fit is tapped whole, so a search
compiles three modules and runs each once, whatever it finds; a second search of the same trace compiles its
stage's module only; a search warmed in the background compiles nothing more; what it finds is the same; a panel
compiles the reference's modules once its stages show, so that its first search compiles its stage's only."""
import time

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.run import drift_values

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

from tests.test_drift import edited, line_of, nan_fed, sanitize, scaled  # noqa: E402


@pytest.fixture
def compiles(monkeypatch):
    """The tap modules compiled, by label, in order."""
    made = []
    real = drift_values.tap_program

    def counted(ex, label, *args, **kwargs):
        made.append(label)
        return real(ex, label, *args, **kwargs)

    monkeypatch.setattr(drift_values, "tap_program", counted)
    return made


def test_a_search_whose_values_fit_compiles_and_runs_three_modules_once(compiles):
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    d = ex.drift()
    assert d.found and d.op.op == "stablehlo.dot_general" and d.line == line_of(sanitize, "jnp.where")
    # the stage's, the reference's and its float64 promotion: the inputs of the op found come from the same runs
    assert len(compiles) == 3 and d.runs == 3, (compiles, d.runs)
    assert [c for c in compiles if "float64" in c] == ["the reference promoted to float64"]


def test_a_second_search_of_the_trace_measures_the_reference_no_more(compiles):
    ex = wb.explore(scaled, jnp.linspace(0, 1, 64))
    assert not ex.drift().found
    first = len(compiles)
    broken = edited(ex.default_run_stage(), "dense<3.000000e+00>", "dense<3.100000e+00>")
    toggled = ex.with_patterns(disable=["cse_add"])  # another Exploration of the same trace
    d = toggled.drift(broken)
    assert d.found and d.op.op == "stablehlo.multiply" and d.line == line_of(scaled, "* 3.0")
    assert compiles[first:] == [f"the tap module of {broken.name!r}"] and d.runs == 1, (compiles, d.runs)


def test_a_warmed_search_compiles_nothing_and_finds_the_same(compiles):
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    ex.warm_drift().result(timeout=300)  # ends once its modules are compiled and in the cache
    warmed = len(compiles)
    assert warmed == 3, compiles
    d = ex.drift()
    assert len(compiles) == warmed and d.runs == 3  # compiled before, run now: the user's callbacks fire only now
    assert d.found and d.op.op == "stablehlo.dot_general" and d.line == line_of(sanitize, "jnp.where")


def test_a_side_too_large_to_tap_whole_is_bisected_as_before(monkeypatch, compiles):
    monkeypatch.setattr(drift_values, "TAP_ALL", 2)  # no side is tapped whole
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    d = ex.drift()
    assert d.found and d.op.op == "stablehlo.dot_general" and d.line == line_of(sanitize, "jnp.where")
    assert d.runs == 3 * d.probes and len(compiles) == d.runs  # each round: three modules compiled and run


def test_the_cache_keeps_a_bounded_number_of_modules():
    cache = drift_values.TapCache()
    for k in range(drift_values.KEPT + 5):
        assert cache.program(("text", k), lambda k=k: k) == k
    assert cache.compiles == drift_values.KEPT + 5
    assert cache.program(("text", 0), lambda: "again") == "again"  # dropped long ago: made anew
    assert cache.program(("text", drift_values.KEPT + 4), lambda: "again") == drift_values.KEPT + 4  # kept


def test_the_reference_warmed_alone_leaves_the_search_its_stage_to_compile(compiles):
    """What the panel compiles once its stages show, for every later search of the trace: the reference's two."""
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    ex.warm_drift(reference_only=True).result(timeout=300)
    assert len(compiles) == 2 and not any(ex.default_run_stage().name in c for c in compiles), compiles
    d = ex.drift()
    assert compiles[2:] == [f"the tap module of {ex.default_run_stage().name!r}"] and d.runs == 3


def test_a_panel_compiles_the_references_modules_ahead_for_its_first_search(compiles):
    from workbench.views.widgets.panel import Panel

    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    p = Panel(ex)  # its work ahead starts once its stages show (views/widgets/ahead.py)
    try:
        p.wait()
        deadline = time.monotonic() + 300
        while len(compiles) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        reference = [f"the tap module of {ex.reference_stage().name!r}", "the reference promoted to float64"]
        assert sorted(compiles) == sorted(reference), compiles
        d = ex.drift(device=p.run_settings.device)  # as the Run tab's search of a run on the device picked there
        assert compiles[2:] == [f"the tap module of {ex.default_run_stage().name!r}"] and d.found, compiles
    finally:
        p.close()
