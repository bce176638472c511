"""Where the numbers drift (``ex.drift``): planted miscompiles are found at their op and line in a number of
runs that grows with log(ops); real programs whose rounding differs between stages report no drift."""
import dataclasses
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

HERE = __file__


def line_of(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return f"{HERE}:{first + next(k for k, ln in enumerate(lines) if text in ln)}"


def run_bound(d) -> float:
    return 2 * math.log2(max(d.ops, 2)) + 4


def edited(stage, old: str, new: str):
    """``stage`` with one constant changed in its text and its text with locations: a hand-edited stage."""
    assert stage.text_with_locations.count(old) == 1
    return dataclasses.replace(stage, name=f"{stage.name} edited", text=stage.text.replace(old, new),
                               text_with_locations=stage.text_with_locations.replace(old, new))


# ---- planted miscompiles, found at their op ----------------------------------------------------------------


def sanitize(x, w):
    x = jnp.where(jnp.isnan(x), 0.0, x)
    h = jnp.tanh(x @ w)
    return (h * 2.0).sum(0)


def nan_fed():
    return jnp.arange(32.0).reshape(4, 8).at[1, 2].set(jnp.nan), jnp.ones((8, 3)) / 8


def test_a_nan_fed_to_a_no_nan_fold_is_found_where_the_fold_removed_the_where():
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    assert not ex.run(repeat=1).check.passed
    d = ex.drift()
    assert d.found and d.outputs_drift and d.runs <= run_bound(d), d
    assert d.op.op == "stablehlo.dot_general" and d.op.source == line_of(sanitize, "x @ w")
    assert d.line == line_of(sanitize, "jnp.where")  # the value went wrong where the where was removed
    first = d.op.inputs[0]
    assert first.differs and first.here == "argument 0 of @main" and "stablehlo.select" in first.reference
    assert first.changed_by.startswith("enzyme-hlo-patterns") and "removed by" in first.note
    assert "no_nan_compare_simplify" in d.op.patterns and d.op.cause.kind == "patterns"
    assert f"the cause: {first.changed_by}'s patterns" in repr(d)  # one cause: the stage that removed the where
    assert d.op.reference["op"] == "stablehlo.dot_general" and d.op.text.startswith(d.op.result)
    assert ex.stage(d.stage).text.splitlines()[d.op.line].strip() == d.op.text


def scaled(x):
    y = jnp.sin(x) * 3.0
    return jnp.cos(y) + 1.0


def test_a_constant_changed_by_hand_is_found_at_the_op_it_feeds():
    ex = wb.explore(scaled, jnp.linspace(0, 1, 64))
    broken = edited(ex.default_run_stage(), "dense<3.000000e+00>", "dense<3.100000e+00>")
    d = ex.drift(broken)
    assert d.found and d.runs <= run_bound(d), d
    assert d.op.op == "stablehlo.multiply" and d.line == d.op.source == line_of(scaled, "* 3.0")
    assert any("constant" in i.note and "3.1" in i.note for i in d.op.inputs), d.op.inputs
    assert not ex.drift().found  # the stage as the pipeline made it


def rows_then_total(x):
    zero = jnp.bfloat16(0)
    rows = jax.lax.reduce(x, zero, jax.lax.add, (1,))
    return jax.lax.reduce(rows, zero, jax.lax.add, (0,))


def test_a_pattern_that_merges_two_bfloat16_reductions_is_found_at_the_reduce():
    """Summing each row first and then the rows is exact here; one reduction over both dimensions adds
    the ones to 256 in bfloat16, where each is lost (Enzyme-JaX's reduce_reduce)."""
    x = np.zeros((2, 32), np.float32)
    x[0, 0], x[1, :] = 256.0, 1.0
    # on the CPU, which sums bfloat16 in bfloat16: a TPU sums them in float32 whether merged or not, so the
    # merge changes nothing there (measured on the TPU machine: max_abs 0)
    ex = wb.explore(rows_then_total, jnp.asarray(x, jnp.bfloat16), device="cpu")
    assert not ex.run(repeat=1).check.passed
    d = ex.drift()
    assert d.found and d.runs <= run_bound(d), d
    assert d.op.op == "stablehlo.reduce" and d.op.source == line_of(rows_then_total, "(rows, zero")
    assert d.op.check.max_abs == 32 and d.op.check.rule == "float64"
    assert d.op.patterns == ("reduce_reduce",) and not d.op.in_region


def chain(x):
    for _ in range(40):
        x = jnp.sin(x) * 0.999 + 0.25
    return x


def test_with_a_small_budget_the_search_bisects_in_log_runs(monkeypatch):
    from workbench.analysis.run import drift as drift_module

    ex = wb.explore(chain, jnp.linspace(0, 1, 1024), pipeline="none")
    stage = ex.default_run_stage()
    middle = stage.text_with_locations.count("9.990000e-01")
    assert middle == 1  # one constant, splatted: change it and every later value drifts
    broken = edited(stage, "9.990000e-01", "9.900000e-01")
    monkeypatch.setattr(drift_module, "TAP_BYTES", 4096)  # one value of 1024 floats a round: the least tapped
    d = ex.drift(broken)
    assert d.found and d.probes >= 3 and d.ops > 100
    assert d.runs <= run_bound(d), (d.runs, d.ops)
    # the splat of the changed scalar is the first value that differs, on its line
    assert d.op.op == "stablehlo.broadcast_in_dim" and d.op.source == line_of(chain, "* 0.999")
    assert d.op.result == next(r["result"] for r in d.rows if r["drifts"])  # the first drifting value of all


# ---- no false alarms on real programs ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param("nnx_adamw_step", marks=pytest.mark.slow), "bf16_scan", "equinox_mlp"])
def test_real_programs_whose_rounding_moves_report_no_drift(name):
    from tests.test_check import explored

    ex = explored(name)
    d = ex.drift()
    assert not d.found, d.table()[d.table().drifts].to_string()
    assert d.compared >= 5 and d.rule == "against the reference promoted to float64"
    assert "no drift" in repr(d) and "<table" in d._repr_html_()


@pytest.mark.slow  # many pipeline runs and compiles (bisect, reduce), or the NNX AdamW step
def test_a_constant_changed_in_the_adamw_step_is_found_at_the_learning_rate_multiply():
    from tests.test_check import PROGRAMS, explored

    ex = explored("nnx_adamw_step")
    _, old, new, _ = PROGRAMS["nnx_adamw_step"]
    d = ex.drift(edited(ex.default_run_stage(), old, new))
    assert d.found and d.runs <= run_bound(d) and d.op.op == "stablehlo.multiply"
    # the user's own line first (the step's optimizer.update in tests/), optax's scale_by_learning_rate beside it
    assert d.op.source.startswith(os.path.dirname(__file__)) and d.op.source.endswith("(optax/_src/transform.py:507)")
    assert f"at your line {d.op.source}" in repr(d)
    table = d.table()
    assert table.drifts.any() and list(table.columns[:3]) == ["order", "result", "op"]


def test_a_loop_that_drifts_is_named_with_its_region():
    from tests.test_check import PROGRAMS, explored

    ex = explored("bf16_scan")
    _, old, new, _ = PROGRAMS["bf16_scan"]
    d = ex.drift(edited(ex.default_run_stage(), old, new))
    assert d.found and d.op.op == "stablehlo.while" and d.op.in_region and "inside its region" in repr(d)


def with_print(w, x):
    jax.debug.print("mean {m}", m=x.mean())
    return jnp.tanh(x @ w) * 2.0


def test_a_program_with_a_host_callback_is_measured_against_its_noise(capfd):
    w, x = jax.random.normal(jax.random.PRNGKey(0), (8, 4)), jax.random.normal(jax.random.PRNGKey(1), (16, 8))
    ex = wb.explore(with_print, w, x)
    d = ex.drift()
    assert not d.found and "noise" in d.rule and "calls back into Python" in d.rule, d.rule
    broken = edited(ex.default_run_stage(), "dense<2.000000e+00>", "dense<2.100000e+00>")
    d = ex.drift(broken)
    assert d.found and d.op.op == "stablehlo.multiply" and d.op.source == line_of(with_print, "* 2.0")
    assert "mean" in capfd.readouterr().out  # the callback fired in the tapped runs


# ---- XLA stages, hand-offs, refusals -------------------------------------------------------------------------


@pytest.mark.slow  # many pipeline runs and compiles (bisect, reduce), or the NNX AdamW step
def test_xla_stages_before_layout_assignment_are_searched_as_they_run():
    from workbench.examples import mlp

    ex = wb.explore(mlp.fn, *mlp.args(), device="cpu")  # the CPU's XLA passes, before its layout assignment
    early = [s.name for s in ex.stages if s.group == "xla"][:4]
    for name in early:
        d = ex.drift(name)
        assert not d.found and d.compared > 20, (name, d)
    with pytest.raises(wb.WorkbenchError, match="layout assignment"):
        ex.drift("xla:optimized")


@pytest.mark.slow  # many pipeline runs and compiles (bisect, reduce), or the NNX AdamW step
def test_drifts_at_pins_the_op_for_bisect_reduce_and_the_reproducer(tmp_path):
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True)
    d = ex.drift()
    pinned = wb.drifts_at(d)
    assert pinned(ex) and "drifts_at" in repr(pinned)
    assert "no_nan_compare_simplify" in ex.bisect(pinned).patterns
    reduced = ex.reduce(pinned)  # its candidates take the program's inputs: the NaN too
    assert reduced.ops_after < reduced.ops_before and "stablehlo.dot_general" in reduced.text
    folder = reduced.reproducer(tmp_path / "bug")  # the smallest module where the op drifts, for a bug report
    readme = (folder / "README.md").read_text()
    assert "drifts_at('stablehlo.dot_general at" in readme and "held on this Exploration" in readme
    assert "miscompiles" in readme
    with np.load(folder / "inputs.npz") as saved:  # the program's own inputs, the NaN with them: repro.py fails
        assert any(np.isnan(saved[k]).any() for k in saved.files)
    assert not wb.drifts_at(d)(wb.explore(sanitize, *nan_fed()))  # without no_nan it holds no more
    with pytest.raises(TypeError, match="what ex.drift found"):
        wb.drifts_at(ex.drift("stablehlo"))


def test_shapes_without_values_are_refused_in_words():
    ex = wb.explore(scaled, jax.ShapeDtypeStruct((8,), jnp.float32))
    with pytest.raises(wb.WorkbenchError, match="needs arrays to run"):
        ex.drift()


def test_pairing_weighs_a_bounded_number_of_candidates_per_op(monkeypatch):
    """A line run in a Python loop makes many ops with one source position and type: pairing weighs at most
    _WINDOW candidates for each (counted), so it stays linear in the module's size."""
    from workbench.analysis.run import tapping

    calls = []
    real = tapping._agreement
    monkeypatch.setattr(tapping, "_agreement", lambda *a: calls.append(1) or real(*a))
    ex = wb.explore(chain, jnp.linspace(0, 1, 8))
    here, there = ex._tap_side(ex.default_run_stage()), ex._tap_side(ex.stage("stablehlo"))
    pairs = tapping.counterparts(here, there)
    n = len(here.tap.points)
    assert len(pairs) >= n // 2 and len(calls) <= (tapping._WINDOW * (tapping._ROUNDS + 1) + 4) * n


def test_the_module_xla_is_given_by_a_miscompiling_pipeline_runs_and_drifts_where_it_came_from():
    """The way back from HLO is checked against the module XLA was given (the last MLIR stage), not against
    the program as lowered: a pipeline that miscompiles hands XLA other numbers, faithfully."""
    # on the CPU: on a TPU the tap module of "xla:before_optimizations" (HLO turned back into StableHLO, tuple results)
    # is refused by the TPU compiler ("element_type TUPLE should not have a layout"; found on the TPU machine)
    ex = wb.explore(sanitize, *nan_fed(), no_nan=True, device="cpu")
    assert not ex.run("xla:before_optimizations", repeat=1).check.passed  # runs: the numbers are the pipeline's
    d = ex.drift("xla:before_optimizations")
    assert d.found and d.line == line_of(sanitize, "jnp.where") and d.op.op == "stablehlo.dot"


SHARDED = r"""
import json, sys
sys.path.insert(0, %(root)r)
import workbench as wb
from workbench.examples import attention

ex = wb.explore(attention.fn, *attention.sharded_args())
try:
    ex.drift()
    said = ""
except wb.WorkbenchError as e:
    said = str(e)
print("RESULT" + json.dumps({"said": said}))
"""


@pytest.mark.subprocess  # a Python that sees 8 CPU devices
def test_a_sharded_program_is_refused_in_words(tmp_path):
    from pathlib import Path

    from tests.devices import run_on_cpu_devices

    script = tmp_path / "sharded_drift.py"
    script.write_text(SHARDED % {"root": str(Path(__file__).resolve().parents[1])})
    said = run_on_cpu_devices(script)["said"]
    assert "sharded drift is not supported" in said and "mesh of 8 devices" in said, said
