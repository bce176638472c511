"""ex.reproducer writes a folder for a bug report whose repro.py decides the predicate with jax and
enzyme-ad alone: it is run here in a fresh interpreter in which the workbench cannot be imported (nor
in the child process that repro.py starts for the pipeline)."""
import json
import os
import platform
import runpy
import subprocess
import sys
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.run.check import RTOL
from workbench.artifacts.reproducer import TOLERANCES
from workbench.errors import ReproducerError
from workbench.examples import load
from workbench.ir.ops import op_counts
from workbench.ir.text import strip_locations

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

BUG_STAGE = "enzyme-hlo-patterns#1"


def nan_to_zero(x):  # the program of test_check's planted no_nan miscompile
    return jnp.where(jnp.isnan(x), 0.0, x) * 2.0


def double_transpose(x):
    return (x.T).T * 2.0 + 1.0


X = jnp.array([1.0, jnp.nan, 3.0])


@pytest.fixture(scope="module")
def blocker(tmp_path_factory):
    """A sitecustomize that makes ``import workbench`` fail in every interpreter started with it on
    PYTHONPATH: the one running repro.py and the child it starts for the pipeline."""
    d = tmp_path_factory.mktemp("no-workbench")
    (d / "sitecustomize.py").write_text("import sys\nsys.modules['workbench'] = None\n")
    return d


def run_repro(folder, blocker, *args):
    code = ("import sys; sys.modules['workbench'] = None; import runpy; "
            f"sys.argv = ['repro.py', *{list(args)!r}]; runpy.run_path('repro.py', run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    r = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    lines = r.stdout.strip().splitlines()
    assert lines, r.stderr[-3000:]
    assert "import of workbench halted" not in r.stdout + r.stderr
    return r.returncode, lines[-1], r.stdout


def mlir_from(ex, name):
    mlir = [s for s in ex.pipeline_stages if s.group == "mlir"]
    return mlir[[s.name for s in mlir].index(name):]


@pytest.fixture(scope="module")
def planted():
    ex = wb.explore(nan_to_zero, X, no_nan=True)
    assert not ex.run(BUG_STAGE, repeat=1).check.passed  # the bug is really there
    return ex


@pytest.fixture(scope="module")
def bug_folder(planted, tmp_path_factory):
    return planted.reproducer(tmp_path_factory.mktemp("r") / "bug", stage=BUG_STAGE,
                              predicate=wb.miscompiles("cpu:0"))


def test_the_planted_miscompile_reproduces_without_the_workbench(planted, bug_folder, blocker):
    assert sorted(os.listdir(bug_folder)) == ["README.md", "input.mlir", "inputs.npz", "pipeline.txt", "repro.py"]
    rc, last, out = run_repro(bug_folder, blocker, "--output", "out.mlir")
    assert rc == 1 and last.startswith("FAIL: miscompiles"), out
    assert "is nan at [1] where input.mlir gives 0.0 (1 of 3 elements)" in last
    # the pass string from the stage on, replayed in one run, makes exactly the workbench's last stage
    last_stage = [s for s in planted.pipeline_stages if s.group == "mlir"][-1]
    assert strip_locations((bug_folder / "out.mlir").read_text()) == last_stage.text


def test_the_folder_holds_the_module_before_the_stage_its_passes_and_inputs(planted, bug_folder):
    later = mlir_from(planted, BUG_STAGE)
    assert (bug_folder / "pipeline.txt").read_text() == ",".join(s.produced_by for s in later) + "\n"
    parent = planted.parent_of(BUG_STAGE)
    text = (bug_folder / "input.mlir").read_text()
    assert parent.name == "canonicalize#2" and "loc(" in text and "func.func public @main(" in text
    assert strip_locations(text) == parent.text
    with np.load(bug_folder / "inputs.npz", allow_pickle=False) as saved:
        assert list(saved) == ["arg0"]
        np.testing.assert_array_equal(saved["arg0"], np.asarray(X))  # NaN included
    readme = (bug_folder / "README.md").read_text()
    assert 'enzymexlamlir-opt input.mlir --pass-pipeline="builtin.module($(cat pipeline.txt))"' in readme
    assert "miscompiles('cpu:0')" in readme and "FAIL means the predicate holds" in readme
    assert "| float32 | 0.0001 |" in readme and "named by the caller" in readme
    from importlib.metadata import version
    for v in (jax.__version__, version("jaxlib"), version("enzyme-ad"), platform.python_version(), platform.platform()):
        assert f"| {v} |" in readme
    assert "| date | 20" in readme
    assert "miscompiles('cpu:0') held" in readme  # the workbench's own verdict when written
    assert "import workbench" not in (bug_folder / "repro.py").read_text()


def test_a_short_pipeline_is_also_written_out_on_the_command_line(tmp_path):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)), pipeline="canonicalize,cse")
    folder = ex.reproducer(tmp_path / "short", stage="cse#1")
    readme = (folder / "README.md").read_text()
    assert "enzymexlamlir-opt input.mlir --pass-pipeline='builtin.module(cse)'" in readme
    assert (folder / "pipeline.txt").read_text() == "cse\n"


def test_stage_none_starts_where_the_miscompile_starts(planted, tmp_path):
    folder = planted.reproducer(tmp_path / "auto", predicate=wb.miscompiles("cpu:0"))
    readme = (folder / "README.md").read_text()
    assert f"It starts at stage `{BUG_STAGE}`" in readme and "first MLIR stage whose outputs fail" in readme
    assert (folder / "pipeline.txt").read_text() == ",".join(s.produced_by for s in mlir_from(planted, BUG_STAGE)) + "\n"
    first = wb.explore(double_transpose, jnp.ones((3, 4))).reproducer(tmp_path / "plain")
    assert "It starts at stage `inline#1`" in (first / "README.md").read_text()


def test_a_finite_wrong_number_fails_by_the_tolerance(tmp_path, blocker):
    def is_a_number(x):  # under no_nan the NaN test folds to true: 3.0 where the program gives 0.0
        return jnp.where(jnp.isnan(x), 0.0, 1.0) * 3.0

    folder = wb.explore(is_a_number, X, no_nan=True).reproducer(tmp_path / "finite", predicate=wb.miscompiles("cpu:0"))
    assert f"It starts at stage `{BUG_STAGE}`" in (folder / "README.md").read_text()
    rc, last, out = run_repro(folder, blocker)
    assert rc == 1, out
    assert last.startswith("FAIL: miscompiles: output 0 'result' float32[3] is off by 3 at [1] (input.mlir 0.0, "
                           "output 3.0), beyond the tolerance 0.0003"), out


def test_a_healthy_program_passes_and_no_predicate_prints_differences(tmp_path, blocker):
    ex = wb.explore(nan_to_zero, X)  # no no_nan: the NaN is handled as written
    rc, last, out = run_repro(ex.reproducer(tmp_path / "ok", stage=BUG_STAGE, predicate=wb.miscompiles("cpu:0")), blocker)
    assert rc == 0 and last.startswith("PASS: all 1 outputs match input.mlir"), out
    rc, last, out = run_repro(ex.reproducer(tmp_path / "none", stage=BUG_STAGE), blocker)
    assert rc == 0 and "no predicate was given" in last and "largest error 0" in out, out


def test_trees_keys_unused_arguments_and_bfloat16_inputs_run_in_the_modules_order(tmp_path, blocker):
    def f(key, a, unused, b):
        return {"s": a + jax.random.normal(key, a.shape), "t": (b.astype(jnp.float32) * 2).astype(jnp.bfloat16),
                "i": jnp.argmax(a)}

    b = jnp.array([1.5, -2.0, 3.25], jnp.bfloat16)
    ex = wb.explore(f, jax.random.key(1), jnp.arange(4.0), jnp.ones(2), b)
    folder = ex.reproducer(tmp_path / "tree", predicate=wb.miscompiles())
    with np.load(folder / "inputs.npz", allow_pickle=False) as saved:
        assert list(saved) == ["arg0", "arg1", "arg2"]  # the unused argument is not in the module
        assert saved["arg0"].dtype == np.uint32 and saved["arg2"].dtype == np.uint16
        np.testing.assert_array_equal(saved["arg2"].view(jnp.bfloat16), np.asarray(b))
    rc, last, out = run_repro(folder, blocker)
    assert rc == 0 and last.startswith("PASS: all 3 outputs match"), out
    assert "bfloat16[3]: ok" in out and "int32[]: ok" in out


def test_a_text_exploration_runs_on_its_example_arguments(tmp_path, blocker):
    text = wb.explore(double_transpose, jnp.ones((3, 4)), pipeline="none")["stablehlo"].text
    folder = wb.explore_text(text, pipeline="canonicalize").reproducer(tmp_path / "text", predicate=wb.miscompiles())
    with np.load(folder / "inputs.npz", allow_pickle=False) as saved:
        assert saved["arg0"].shape == (3, 4) and np.std(saved["arg0"]) > 0  # seeded random, not ones
    rc, last, out = run_repro(folder, blocker)
    assert rc == 0 and last.startswith("PASS"), out


def test_a_failing_pass_is_a_crash_and_a_clean_pipeline_is_not(tmp_path, blocker):
    broken = wb.explore(double_transpose, jnp.ones((3, 4)), pipeline="canonicalize,transform-interpreter")
    assert broken.pipeline_error is not None
    folder = broken.reproducer(tmp_path / "crash", predicate=wb.crashes())
    assert (folder / "pipeline.txt").read_text() == "transform-interpreter\n"  # stage=None: the failed stage
    assert "It starts at stage `transform-interpreter#1`" in (folder / "README.md").read_text()
    rc, last, out = run_repro(folder, blocker)
    assert rc == 1 and last.startswith("FAIL: crashes: the pipeline raised") and "__transform_main" in last, out
    fine = wb.explore(double_transpose, jnp.ones((3, 4)))
    rc, last, out = run_repro(fine.reproducer(tmp_path / "fine", predicate=wb.crashes(include_xla=True)), blocker)
    assert rc == 0 and last == "PASS: the pipeline ran and its output verified and compiled with XLA", out


def test_without_enzyme_ad_the_verdict_is_error_not_a_crash(tmp_path, blocker):
    """A child that cannot import enzyme-ad has not run the pipeline: ERROR (exit 2), never FAIL."""
    broken = wb.explore(double_transpose, jnp.ones((3, 4)), pipeline="canonicalize,transform-interpreter")
    folder = broken.reproducer(tmp_path / "crash", predicate=wb.crashes())
    (blocker / "no_enzyme").mkdir(exist_ok=True)
    (blocker / "no_enzyme" / "sitecustomize.py").write_text(
        "import sys\nsys.modules['workbench'] = None\nsys.modules['enzyme_ad'] = None\n")
    rc, last, out = run_repro(folder, blocker / "no_enzyme")
    assert rc == 2 and last.startswith("ERROR: the child process could not run the pipeline"), out
    assert "enzyme_ad" in last


def test_op_counts_are_decided_on_the_pipelines_output(tmp_path, blocker):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    assert op_counts(ex["stablehlo"].text)["stablehlo.transpose"] == 2
    removed = ex.reproducer(tmp_path / "removed", predicate=wb.op_count_at_most("stablehlo.transpose", 0))
    assert f"It starts at stage `{BUG_STAGE}`" in (removed / "README.md").read_text()
    rc, last, out = run_repro(removed, blocker)
    assert rc == 1 and last.startswith("FAIL: op_count_at_most: the output has 0 stablehlo.transpose"), out
    kept = ex.reproducer(tmp_path / "kept", stage="inline#1", predicate=wb.op_count_above("stablehlo.transpose", 0))
    rc, last, out = run_repro(kept, blocker)
    assert rc == 0 and last.startswith("PASS: op_count_above: the output has 0"), out


def test_slower_than_times_the_pipeline(tmp_path, blocker):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    rc, last, out = run_repro(ex.reproducer(tmp_path / "slow", predicate=wb.slower_than(0.0)), blocker)
    assert rc == 1 and last.startswith("FAIL: slower_than: the pipeline took") and "best of 3" in last, out
    rc, last, out = run_repro(ex.reproducer(tmp_path / "fast", predicate=wb.slower_than(1e6)), blocker)
    assert rc == 0 and last.startswith("PASS: slower_than"), out



@pytest.mark.parametrize("name", ["__RTOL__", "x'''__CONFIG__'''y", 'a"""b\\n__CONFIG____RTOL__'])
def test_a_name_that_holds_the_templates_placeholders_or_quotes_reaches_repro_py_as_given(tmp_path, blocker, name):
    """repro.py's settings go into its template once, as a literal: a predicate's op name is data, never
    a placeholder that a later replacement rewrites, nor quotes that end the literal early."""
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    predicate = wb.has_op(name)
    folder = ex.reproducer(tmp_path / "odd", predicate=predicate)
    rc, last, out = run_repro(folder, blocker)
    assert rc == 0 and last == f"PASS: has_op: the output has 0 {name} op(s): the predicate does not hold", out
    assert f"predicate: {predicate.__name__};" in out.splitlines()[0], out
    assert f"Predicate: `{predicate.__name__}`" in (folder / "README.md").read_text()


_TRICKY = '''#loc1 = loc("x")
module @m attributes {mhlo.note = "stablehlo.multiply"} {
  func.func public @main(%arg0: tensor<2x5xf32>) -> tensor<5xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] {note = "stablehlo.transpose %0 = stablehlo.add"} : (tensor<2x5xf32>) -> tensor<5x2xf32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.multiply across dimensions = [1] : (tensor<5x2xf32>, tensor<f32>) -> tensor<5xf32>
    %2 = "stablehlo.abs"(%1) : (tensor<5xf32>) -> tensor<5xf32>
    %3:2 = call @two(%2) : (tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)
    %4 = stablehlo.while(%iterArg = %3#0) : tensor<5xf32>
    cond {
      %c = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      stablehlo.return %iterArg : tensor<5xf32>
    }
    return %4 : tensor<5xf32> loc(#loc1)
  }
  func.func private @two(%arg0: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
    return %arg0, %arg0 : tensor<5xf32>, tensor<5xf32>
  }
}
'''


def test_the_scripts_op_counter_agrees_with_the_workbenchs(bug_folder):
    op_names = runpy.run_path(str(bug_folder / "repro.py"))["op_names"]
    counts = Counter(op_names(_TRICKY))
    assert counts == op_counts(_TRICKY)
    assert counts["stablehlo.transpose"] == 1 and counts["stablehlo.add"] == 0 and counts["stablehlo.multiply"] == 1
    assert counts["stablehlo.abs"] == 1 and counts["func.call"] == 1 and "builtin.module" not in counts
    for name in ("mlp", "scan", "attention"):
        ex = wb.explore(*((lambda fn, args: (fn, *args))(*load(name))))
        for s in (ex["stablehlo"], [s for s in ex.pipeline_stages if s.group == "mlir"][-1]):
            for text in (s.text, s.text_with_locations):
                assert Counter(op_names(text)) == op_counts(text), (name, s.name)


def test_a_custom_predicate_is_refused_with_the_ones_that_have_a_standalone_form(planted, tmp_path):
    with pytest.raises(ReproducerError) as info:
        planted.reproducer(tmp_path / "custom", predicate=lambda ex: True)
    message = str(info.value)
    assert isinstance(info.value, wb.WorkbenchError) and isinstance(info.value, ValueError)
    for name in ("miscompiles", "crashes", "op_count_above", "op_count_at_most", "slower_than", "<lambda>"):
        assert name in message
    assert not (tmp_path / "custom").exists()  # nothing half-written
    with pytest.raises(ReproducerError, match="MLIR pipeline stage"):
        planted.reproducer(tmp_path / "trace", stage="stablehlo", predicate=wb.miscompiles())
    with pytest.raises(wb.UnknownNameError):
        planted.reproducer(tmp_path / "typo", stage="enzyme-hlo-patterns#9")


def test_the_built_in_predicates_describe_themselves_and_still_work(planted):
    assert wb.miscompiles("cpu:0").recipe == {"kind": "miscompiles", "device": "cpu:0", "repeat": 1}
    assert wb.crashes(include_xla=True).recipe == {"kind": "crashes", "include_xla": True}
    assert wb.slower_than(2).recipe == {"kind": "slower_than", "seconds": 2.0}
    assert wb.op_count_above("stablehlo.add", 3).recipe == {"kind": "op_count_above", "name": "stablehlo.add", "n": 3}
    assert wb.op_count_at_most("stablehlo.add", 3).recipe["kind"] == "op_count_at_most"
    for p in (wb.miscompiles(), wb.crashes(), wb.slower_than(1), wb.op_count_above("a.b", 1)):
        json.dumps(p.recipe)
    assert wb.miscompiles("cpu:0")(planted) and not wb.crashes()(planted)
    assert wb.op_count_at_most("stablehlo.compare", 0)(planted)  # no_nan removed the NaN test
    assert TOLERANCES is RTOL  # repro.py's table is the workbench's per-dtype rule, the one table


def test_inputs_over_the_limit_are_not_written_and_repro_py_says_so(planted, tmp_path, blocker, monkeypatch):
    """Arguments over the workbench's array limit are neither made nor written: the folder is complete
    without inputs.npz, its README and repro.py say why, and repro.py runs once the file is put there."""
    from workbench.pipeline import array_limit

    monkeypatch.setattr(array_limit, "ARRAY_BYTES_CAP", 8)  # X is 12 bytes
    folder = planted.reproducer(tmp_path / "capped", stage=BUG_STAGE, predicate=wb.miscompiles("cpu:0"))
    assert sorted(os.listdir(folder)) == ["README.md", "input.mlir", "pipeline.txt", "repro.py"]
    readme = (folder / "README.md").read_text()
    assert ("**not written**: the reproducer would write the arguments of @main to inputs.npz: argument 0 (%arg0 of "
            "@main), float32[3], would take 12 bytes, more than the workbench's limit of 8 bytes") in readme
    assert "prints ERROR (exit 2) until it is there" in readme
    rc, last, out = run_repro(folder, blocker)
    assert rc == 2 and last.startswith("ERROR: inputs.npz was not written (why: above)"), out
    assert "arg0 float32[3] stored as float32" in last
    np.savez(folder / "inputs.npz", arg0=np.asarray(X))
    rc, last, out = run_repro(folder, blocker)
    assert rc == 1 and last.startswith("FAIL: miscompiles"), out
