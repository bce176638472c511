"""Executing stages on a device, checking their numbers, and finding the patterns to blame."""
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workbench import examples
import workbench as wb
from tests.devices import run_on_cpu_devices

enzyme = pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_devices_table():
    df = wb.devices()
    assert list(df.columns) == ["id", "platform", "kind", "memory", "process"]
    assert "cpu:0" in set(df.id)


@pytest.mark.parametrize("name", examples.NAMES)
def test_every_example_runs_on_cpu_and_matches_the_unoptimized_program(name):
    fn, args = examples.load(name)
    ex = wb.explore(fn, *args, device="cpu")
    r = ex.run(device="cpu:0", repeat=3)
    assert r.stage == [s.name for s in ex.stages if s.group == "mlir"][-1]
    assert r.check.passed, r.check
    assert len(r.seconds) == 3 and r.timing.median > 0
    # outputs keep the user's pytree structure and equal what JAX computes directly on the CPU
    with jax.default_device(jax.devices("cpu")[0]):
        want = jax.jit(fn)(*args)
    assert jax.tree_util.tree_structure(r.outputs) == jax.tree_util.tree_structure(want)
    for got, exp in zip(jax.tree_util.tree_leaves(r.outputs), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(exp), rtol=2e-4, atol=1e-5)


def test_compare_tabulates_stages():
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args)
    df = ex.compare(stages=["stablehlo", "cse#1", ex.default_run_stage().name, "xla:optimized"], repeat=3)
    assert list(df.stage) == ["stablehlo", "cse#1", ex.default_run_stage().name, "xla:optimized"]
    assert df.check_passed[:3].all() and df.speedup[0] == 1.0
    assert "layout assignment" in df.error[3] and "the last XLA stage that runs is" in df.error[3]


def test_a_broken_module_fails_the_check_by_the_right_amount():
    def f(x):
        return x * 2.0 + 1.0

    x = jnp.linspace(-3.0, 3.0, 64, dtype=jnp.float32)
    ex = wb.explore(f, x, pipeline="none")
    text = ex["stablehlo"].text
    assert "2.000000e+00" in text
    broken = wb.explore_text(text.replace("2.000000e+00", "2.500000e+00"), pipeline="canonicalize")
    r = broken.run("canonicalize#1", args=(x,), reference=ex, repeat=1)
    assert not r.check.passed
    assert r.check.max_abs == pytest.approx(0.5 * 3.0, rel=1e-6)  # (2.5 - 2.0) * max |x|
    assert r.check.kind == "float64" and r.check.lowered_abs < 1e-6
    ok = wb.explore_text(text, pipeline="canonicalize").run(args=(x,), reference=ex, repeat=1)
    # the same program as lowered: exactly the as-lowered error against the float64 evaluation
    assert ok.check.passed and ok.check.max_abs == ok.check.lowered_abs


def test_stages_that_cannot_run_say_why():
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, device="cpu")  # the CPU's pass names and its LLVM IR
    with pytest.raises(wb.WorkbenchError, match="the last XLA stage that runs is 'xla:flatten-call-graph#1'"):
        ex.run("xla:optimized")  # after layout assignment: its module cannot be turned back and compiled
    with pytest.raises(wb.WorkbenchError, match="backend output, not a module"):
        ex.run("backend:llvm-ir")
    with pytest.raises(wb.WorkbenchError, match="not a module"):
        ex.run("jaxpr")
    bad = wb.explore(fn, *args, pipeline="cse,one-shot-bufferize")
    with pytest.raises(wb.WorkbenchError, match="failed"):
        bad.run("one-shot-bufferize#1")
    assert bad.run().stage == "cse#1" and bad.run(repeat=1).check.passed  # the last good stage runs


SHARDED = r"""
import json, os, sys
sys.path.insert(0, %(root)r)
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import workbench as wb
from workbench import examples
mesh = Mesh(np.array(jax.devices()), ("data",))
def place(x):
    spec = P("data") if getattr(x, "ndim", 0) >= 1 and x.shape[0] %% 8 == 0 else P()
    return jax.device_put(x, NamedSharding(mesh, spec))
out = {}
for name in examples.NAMES:
    fn, args = examples.load(name)
    args = jax.tree_util.tree_map(place, args)
    ex = wb.explore(fn, *args)
    r = ex.run(repeat=2)
    leaves = jax.tree_util.tree_leaves(r.outputs)
    out[name] = {"passed": r.check.passed, "ndev": ex.spec.traced.exported.nr_devices,
                 "sdy": "sdy.sharding" in ex["stablehlo"].text, "xla": "xla:optimized" in ex.names,
                 "error": str(ex.error) if ex.error else "",
                 "devices": len(leaves[0].sharding.device_set)}
print("RESULT" + json.dumps(out))
"""


@pytest.mark.slow
def test_every_example_runs_sharded_on_an_8_device_mesh(tmp_path):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED % {"root": ROOT})
    res = run_on_cpu_devices(script)
    for name, r in res.items():
        assert r["passed"] and r["ndev"] == 8 and r["sdy"] and r["xla"] and not r["error"], (name, r)


def test_applicable_lists_exactly_the_patterns_that_change_the_stage():
    def f(x):
        return -(-jnp.sin(x)) * 1.0

    ex = wb.explore(f, jnp.ones((4, 3)), pipeline="enzyme-hlo-patterns")
    names = ex.applicable("stablehlo", progress=False)
    assert "involution_neg_simplify" in names and "transpose_transpose" not in names
    df = ex.applicable("stablehlo", details=True, progress=False)
    assert len(df) == len(wb.patterns()) and set(df[df.changed].name) == set(names)
    # each listed pattern really changes the module when enzyme-ad applies it alone
    src = ex["stablehlo"].text
    from workbench.pipeline.catalog import patterns_pass
    from workbench.ir.text import publish_functions, strip_locations

    spec = wb.patterns().set_index("name").loc["involution_neg_simplify", "spec"]
    _, out = enzyme.enzyme_call.run_pass_pipeline([], src, patterns_pass((spec,)))
    assert strip_locations(publish_functions(out, {"main"})) != src


def test_step_applies_one_pattern_at_a_time():
    def f(x):
        return -(-jnp.sin(x.T.T))

    ex = wb.explore(f, jnp.ones((4, 3)), pipeline="enzyme-hlo-patterns")
    st = ex.step("stablehlo")
    applied = st.applied()
    assert "involution_neg_simplify" in applied and "transpose_transpose" in applied
    assert all(s.name.startswith("pattern:") for s in st.stages[1:])
    for prev, cur in zip(st.stages, st.stages[1:]):
        assert cur.parent == prev.name and cur.text != prev.text
    assert st.matches_reference and st.difference.is_empty
    assert st.stages[-1].text == [s for s in ex.stages if s.group == "mlir"][-1].text


def test_bisect_finds_the_one_pattern_among_hundreds():
    def f(x):
        return -(-jnp.sin(x))

    ex = wb.explore(f, jnp.ones((4, 3)), pipeline="enzyme-hlo-patterns")
    no_neg = lambda e: "stablehlo.negate" not in e.default_run_stage().text
    # first, with enzyme-ad directly: every other pattern together leaves the double negation
    src = ex["stablehlo"].text_with_locations
    from workbench.pipeline.catalog import pattern_list, patterns_pass

    everything_else = [s for s in pattern_list(ex.spec.selection) if not s.startswith("involution_neg_simplify")]
    _, out = enzyme.enzyme_call.run_pass_pipeline([], src, patterns_pass(tuple(everything_else)))
    assert "stablehlo.negate" in out
    n = len(pattern_list(ex.spec.selection))
    assert n > 450
    b = ex.bisect(no_neg, progress=False)
    assert b.patterns == ["involution_neg_simplify"]
    assert b.runs <= 2 * math.ceil(math.log2(n)) + 4  # O(log n), not one run per pattern
    d = b.diff
    assert d.ops_delta().set_index("op").loc["stablehlo.negate", "delta"] == -2  # the culprit removes both negations


def test_bisect_result_is_one_minimal():
    def f(x, y):
        return jnp.dot(x.T, y.T).T

    ex = wb.explore(f, jnp.ones((3, 4)), jnp.ones((5, 3)), pipeline="enzyme-hlo-patterns")
    pred = lambda e: "stablehlo.transpose" not in e.default_run_stage().text
    b = ex.bisect(pred, progress=False)
    assert pred(ex.with_only_patterns(b.patterns))
    for p in b.patterns:
        assert not pred(ex.with_only_patterns(set(b.patterns) - {p}))


def test_builtin_predicates():
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    assert not wb.miscompiles("cpu:0")(ex)
    assert not wb.crashes()(ex)
    assert wb.crashes()(wb.explore(fn, *args, pipeline="cse,one-shot-bufferize"))
    assert wb.slower_than(0.0)(ex) and not wb.slower_than(3600.0)(ex)
    n = ex.default_run_stage().text.count("stablehlo.dot_general")
    assert wb.op_count_above("stablehlo.dot_general", n - 1)(ex)
    assert not wb.op_count_above("stablehlo.dot_general", n)(ex)
    assert wb.op_count_at_most("stablehlo.dot_general", n)(ex) and not wb.op_count_at_most("stablehlo.dot_general", n - 1)(ex)


def test_a_pattern_set_whose_pipeline_fails_is_reported_and_the_process_survives():
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, pipeline="enzyme-hlo-patterns,one-shot-bufferize")
    assert wb.crashes()(ex)
    with pytest.raises(wb.WorkbenchError, match="no pattern enabled"):
        ex.bisect(wb.crashes(), progress=False)  # the failure is not a pattern's fault, and it says so
    assert wb.explore(fn, *args, pipeline="cse").error is None


def test_pattern_timing_by_group_and_by_pattern():
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    groups = ex.pattern_timing("stablehlo", progress=False)
    assert {"group", "patterns", "seconds", "changed"} <= set(groups.columns)
    assert "base" in set(groups.group) and (groups.seconds > 0).all()
    assert list(groups.seconds) == sorted(groups.seconds, reverse=True)
    per = ex.pattern_timing("stablehlo", per_pattern=True, progress=False)
    assert len(per) == len(wb.patterns())


def test_a_scan_isolates_a_crashing_request_and_keeps_going():
    from workbench.pipeline.worker import WorkerPool

    pool = WorkerPool(2)
    # chunks whose request kills the worker are split until each crasher stands alone
    out = pool.map("crash", [["abort"], ["abort", "abort"]], lambda chunk: ("abort",))
    assert out.results == () and [f.kind for f in out.failures] == ["crash", "crash", "crash"]
    assert all(f.item == "abort" for f in out.failures)
    ok = pool.map("run_each", [["canonicalize"], ["cse"]], lambda chunk: ("module {\n}\n", chunk, False))
    assert ok.failures == () and sorted(o.pipeline for o in ok.results) == ["canonicalize", "cse"]
    assert not any(o.changed or o.error for o in ok.results)
    assert sum(w.restarts for w in pool.workers) >= 1


def test_running_an_exploration_of_shapes_asks_for_arrays():
    """Exploring with jax.ShapeDtypeStruct arguments works (a shape is enough to trace, compile and cost);
    running needs values, and says so by argument instead of XLA's "not a valid JAX type"."""
    spec = jax.ShapeDtypeStruct((3,), jnp.float32)
    ex = wb.explore(lambda x, y: jnp.sin(x) + y["a"], spec, {"a": spec}, pipeline="canonicalize")
    assert ex.error is None and ex.cost("stablehlo") is not None
    with pytest.raises(wb.WorkbenchError, match=r"args\[0\]: float32\[3\], args\[1\]\['a'\]: float32\[3\] are shapes"):
        ex.run()
    got = ex.run(args=(jnp.ones(3), {"a": jnp.ones(3)}), repeat=1)
    assert np.allclose(got.outputs, np.sin(1.0) + 1) and got.check.passed


def test_an_xla_stage_before_layout_assignment_runs_and_checks_as_the_module_after_that_pass():
    """Issue 30's first step: an XLA stage's HLO turned back into StableHLO (pipeline.hlo_stage) runs and is
    checked as the MLIR stages are; every one before layout assignment, on the mlp example."""
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, device="cpu")  # the CPU's pass names
    xla = [s.name for s in ex.stages if s.group == "xla"]
    runnable = xla[:xla.index("xla:flatten-call-graph#1") + 1]
    assert len(runnable) >= 5 and runnable[0] == "xla:before_optimizations"
    for name in runnable:
        r = ex.run(name, repeat=1)
        assert r.stage == name and r.check.passed, (name, r.check)
    assert [r.stage for r in ex.runs][-len(runnable):] == runnable  # the faithfulness run is not one of them


@pytest.mark.slow  # every built-in example's XLA stages, each compiled and run
@pytest.mark.parametrize("name", ["attention", "scan", "convnet"])
def test_every_xla_stage_before_layout_assignment_runs_and_checks_on_the_examples(name):
    fn, args = examples.load(name)
    # on the CPU: on a TPU the way back of 'xla:space-to-batch-converter#1' (convnet) ran to inf where the module
    # XLA was given checks (found on the TPU machine, not yet isolated): the TPU's stages are not claimed here
    ex = wb.explore(fn, *args, device="cpu")
    ran = 0
    for s in [s for s in ex.stages if s.group == "xla"]:
        try:
            r = ex.run(s.name, repeat=1)
        except wb.WorkbenchError as e:
            assert "layout assignment" in str(e) and "the last XLA stage that runs is" in str(e), str(e)
            continue
        assert r.check.passed, (s.name, r.check)
        ran += 1
    assert ran >= 2


def test_xla_stages_whose_way_back_to_stablehlo_loses_meaning_are_refused_not_failed():
    """The corpus's jnp.linalg program (QR, SVD, Cholesky, eigh, triangular solves through LAPACK's custom calls):
    turned back from HLO, the module XLA was given computes other numbers (inf where the program has finite
    ones), so no XLA stage runs, in words, and no failed check blames XLA for the converter's loss."""
    from tests.corpus import program

    inst = program("linalg").build()
    ex = wb.explore(inst.fn, *inst.args)  # through Enzyme-JaX's pipeline: XLA is given its last stage
    later = next(s.name for s in ex.stages if s.name.startswith("xla:") and "#" in s.name)
    for name in ("xla:before_optimizations", later):
        with pytest.raises(wb.WorkbenchError, match="cannot run faithfully.*xla:before_optimizations"):
            ex.run(name, repeat=1)
    with pytest.raises(wb.WorkbenchError, match="cannot run faithfully"):
        ex.profile(later, repeat=1)  # nor is it profiled
    assert ex.runs == [] and ex.run(repeat=1).check.passed  # the MLIR stage still runs and checks
