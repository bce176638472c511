"""Regression gates (issue 32): compare_explorations, hlo-workbench diff/check, wb.testing and its pytest plugin.

Real differences: the same program under two pipelines (``all`` vs ``no_enzyme``, on a module whose
``enzyme.autodiff`` only the ``enzyme`` pass expands), under an XLA pass toggle (``algsimp``) and under a
pattern toggle (``transpose_dot_reorder``). Each names its first differing stage, fails the limit it breaks
and passes with that limit relaxed.
"""
from __future__ import annotations

import textwrap

import pytest

import workbench as wb
from workbench.analysis.diff.explorations import align_names
from workbench.analysis.diff.gates import Limits, judge, parse_growth
from workbench.examples import mlp
from workbench.exploration.golden import check_golden

AUTODIFF = """\
module @autodiff {
  func.func private @square(%x: tensor<8xf32>) -> tensor<8xf32> {
    %y = stablehlo.multiply %x, %x : tensor<8xf32>
    %z = stablehlo.sine %y : tensor<8xf32>
    return %z : tensor<8xf32>
  }
  func.func @main(%x: tensor<8xf32>, %dr: tensor<8xf32>) -> tensor<8xf32> {
    %r = enzyme.autodiff @square(%x, %dr) <{activity = [#enzyme.activity<enzyme_active>],
        ret_activity = [#enzyme.activity<enzyme_activenoneed>]}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    return %r : tensor<8xf32>
  }
}
"""
OFF = dict.fromkeys(("max_ops_growth", "max_flops_growth", "max_bytes_growth", "max_memory_growth"), "none")


def test_stage_lists_align_by_name_keeping_order():
    a = ["jaxpr", "stablehlo", "inline#1", "enzyme#1", "cse#1", "xla:algsimp#1", "xla:optimized"]
    b = ["jaxpr", "stablehlo", "inline#1", "cse#1", "xla:dce#1", "xla:optimized"]
    pairs = align_names(a, b)
    named = [(a[i] if i is not None else None, b[j] if j is not None else None) for i, j in pairs]
    assert named == [("jaxpr", "jaxpr"), ("stablehlo", "stablehlo"), ("inline#1", "inline#1"), ("enzyme#1", None),
                     ("cse#1", "cse#1"), ("xla:algsimp#1", None), (None, "xla:dce#1"),
                     ("xla:optimized", "xla:optimized")]
    # a name that moved is paired once: the longest run both keep in order anchors the rest
    assert align_names(["x", "y", "z"], ["z", "x", "y"]) == [(None, 0), (0, 1), (1, 2), (2, None)]


def test_growth_limits_read_percents_and_fractions():
    assert parse_growth("5%", "x") == 0.05 and parse_growth("0.05", "x") == 0.05 and parse_growth(0.05, "x") == 0.05
    assert parse_growth("none", "x") is None and parse_growth(None, "x") is None
    with pytest.raises(wb.ArgumentError, match="ambiguous"):
        parse_growth("5", "max_ops_growth")
    with pytest.raises(wb.ArgumentError, match="not a growth"):
        parse_growth("lots", "max_ops_growth")
    with pytest.raises(wb.UnknownNameError, match="max_op_growth"):
        Limits.of(max_op_growth="5%")


@pytest.fixture(scope="module")
def mlp_ex():
    return wb.explore(mlp.fn, *mlp.args())


@pytest.fixture(scope="module")
def golden(mlp_ex, tmp_path_factory):
    return wb.testing.write_golden(mlp_ex, tmp_path_factory.mktemp("golden") / "mlp.hlox", compile_time=True)


@pytest.mark.slow
def test_all_against_no_enzyme_names_the_differentiation_pass(tmp_path):
    a = wb.explore_text(AUTODIFF, pipeline="all")
    b = wb.explore_text(AUTODIFF, pipeline="no_enzyme")
    c = wb.compare_explorations(a, b)
    assert c.first_difference.name == "enzyme#1" and c.first_difference.side == "a"
    assert "pipeline all → no_enzyme" in c.settings
    assert c.mlir.changed and any(op == "enzyme.autodiff" and d == 1 for op, _, _, d in c.mlir.ops)
    assert "first difference: enzyme#1 (only in a)" in str(c)
    path = wb.testing.write_golden(a, tmp_path / "autodiff.hlox")
    broken = check_golden(path, pipeline="no_enzyme", same_final_module=True)
    assert not broken.ok
    failed = {r.what for r in broken.failed}
    assert "final module" in failed and "xla_ops" in failed  # XLA cannot compile what the enzyme pass left
    assert "enzyme.autodiff +1" in next(r.note for r in broken.rows if r.what == "final module")
    assert check_golden(path, pipeline="no_enzyme", **OFF).ok  # relaxed: no limit on what it changed
    assert check_golden(path, same_final_module=True).ok  # the golden's own pipeline holds


@pytest.mark.slow
def test_an_xla_pass_toggle_is_named_and_judged(mlp_ex, golden, tmp_path):
    c = wb.compare_explorations(mlp_ex, mlp_ex.with_xla(disable=["algsimp"]))
    assert c.first_difference.name == "xla:algsimp#1" and c.first_difference.side == "a"
    assert c.settings == ("XLA pass algsimp off",) and c.mlir is not None and not c.mlir.changed and c.xla.changed
    flops_a, flops_b = c.final["flops"]
    assert flops_b > flops_a  # without algsimp XLA's module does one more flop
    broken = check_golden(golden, xla_disable=["algsimp"], html=tmp_path / "algsimp.html")
    assert [r.what for r in broken.failed] == ["flops"]
    assert "xla:algsimp#1 (only in mlp.hlox)" in str(broken)
    page = (tmp_path / "algsimp.html").read_text()
    assert "xla:algsimp#1" in page and "FAIL" in page and "<script" in page
    assert check_golden(golden, xla_disable=["algsimp"], max_flops_growth="0.1%").ok


@pytest.mark.slow
def test_a_pattern_toggle_is_named_and_judged(mlp_ex, golden):
    c = wb.compare_explorations(mlp_ex, mlp_ex.with_patterns(disable=["transpose_dot_reorder"]))
    assert c.first_difference.name == "enzyme-hlo-patterns#1" and c.first_difference.side == "both"
    assert c.final["ops"] == (43.0, 46.0)
    row = c.table().set_index("stage").loc["enzyme-hlo-patterns#1"]
    assert row["ops_delta"] == 3 and not row["same"]
    broken = check_golden(golden, disable=["transpose_dot_reorder"], max_ops_growth="5%")
    assert [r.what for r in broken.failed] == ["ops"] and broken.failed[0].change == "+7.0%"
    assert check_golden(golden, disable=["transpose_dot_reorder"], max_ops_growth="10%").ok


@pytest.mark.slow
def test_a_golden_checks_as_saved_and_a_hand_edited_one_fails(mlp_ex, golden, tmp_path, cli):
    v = check_golden(golden, same_final_module=True, numbers=True, max_compile_time_growth="300%")
    assert v.ok, str(v)
    assert {r.what for r in v.rows} >= {"ops", "xla_ops", "flops", "bytes", "memory", "final module", "numbers",
                                        "compile time / bare"}
    assert wb.load(golden).saved_compile_time.bare_seconds > 0
    last = mlp_ex.default_run_stage().name
    edited = mlp_ex.with_text(last, mlp_ex[last].text.replace("stablehlo.subtract", "stablehlo.add", 1))
    hand = wb.testing.write_golden(edited, tmp_path / "edited.hlox")
    v = check_golden(hand, same_final_module=True, numbers=True, **OFF)
    assert {r.what for r in v.failed} == {"final module", "numbers"}
    assert "hand edit" in str(v)  # the program was explored without the golden's edit: said so
    r = cli("check", str(hand), "--same-final-module", "--max-ops-growth", "none")
    assert r.returncode == 1 and "FAIL  final module" in r.stdout, r.stdout + r.stderr
    assert cli("check", str(hand), "--max-ops-growth", "none").returncode == 0  # relaxed: the modules may differ


def test_compile_time_is_judged_as_a_ratio():
    from workbench.analysis.diff.explorations import comparison_of
    from workbench.stages import Spec

    comparison = comparison_of([], [], Spec("a"), Spec("b"))
    limits = Limits.of(max_compile_time_growth="50%", **OFF)
    assert not judge(comparison, limits, compile_time=(1.5, 3.1, "")).ok
    assert judge(comparison, limits, compile_time=(1.5, 2.0, "")).ok
    assert not judge(comparison, limits).ok  # asked for and not measured: no pass by default


@pytest.mark.subprocess
def test_the_command_line_diffs_and_checks(golden, mlp_ex, tmp_path, cli):
    other = mlp_ex.with_patterns(disable=["transpose_dot_reorder"]).save(tmp_path / "toggled.hlox")
    r = cli("diff", str(golden), str(other), "--html", str(tmp_path / "d.html"))
    assert r.returncode == 1, r.stderr
    assert "first difference: enzyme-hlo-patterns#1" in r.stdout and "transpose_dot_reorder off" in r.stdout
    assert (tmp_path / "d.html").exists()
    assert cli("diff", str(golden), str(golden)).returncode == 0
    r = cli("diff", str(golden), str(other), "--run")
    assert r.returncode == 1 and "run time (median): " in r.stdout, r.stdout + r.stderr
    r = cli("check", str(golden), "--disable", "transpose_dot_reorder", "--max-ops-growth", "5%")
    assert r.returncode == 1 and "FAIL  ops" in r.stdout and "FAILED (1 of 5 limits)" in r.stdout, r.stdout
    r = cli("check", str(golden), "--disable", "transpose_dot_reorder", "--max-ops-growth", "10%", "--numbers")
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr
    r = cli("check", str(tmp_path / "missing.hlox"))
    assert r.returncode == 2 and "missing.hlox" in r.stderr


PLUGIN_TESTS = textwrap.dedent("""
    import workbench as wb
    from workbench.examples import mlp


    def test_same():
        wb.testing.assert_compiles_like(mlp.fn, *mlp.args(), golden="golden/same.hlox", numbers=True)


    def test_toggled():
        wb.testing.assert_compiles_like(mlp.fn, *mlp.args(), golden="golden/toggled.hlox", max_ops_growth="5%",
                                        disable=DISABLE)
""")


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_pytest_plugin_writes_goldens_and_fails_a_regression(pytester):
    pytester.makepyfile(test_compiles=PLUGIN_TESTS.replace("DISABLE", "()"))
    written = pytester.runpytest_subprocess("--hlo-update-golden", "-q")
    assert written.ret == 0, written.stdout.str()
    assert (pytester.path / "golden" / "same.hlox").exists() and (pytester.path / "golden" / "toggled.hlox").exists()
    # the toggled test now explores with a pattern off: its golden no longer holds
    pytester.makepyfile(test_compiles=PLUGIN_TESTS.replace("DISABLE", '["transpose_dot_reorder"]'))
    checked = pytester.runpytest_subprocess("-q")
    assert checked.ret == 1
    checked.assert_outcomes(passed=1, failed=1)
    out = checked.stdout.str()
    assert "does not compile like toggled.hlox" in out and "FAIL  ops" in out and "+7.0%" in out
    assert "first difference: enzyme-hlo-patterns#1" in out
    assert (pytester.path / "golden" / "toggled.diff.html").exists()
    assert not (pytester.path / "golden" / "same.diff.html").exists()


def _readme_block(language: str, starts: str) -> str:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    return next(b for b in re.findall(rf"^```{language}\n(.*?)^```", readme, re.S | re.M) if b.startswith(starts))


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_readme_pytest_block_writes_then_checks_its_golden(pytester):
    pytester.makepyfile(test_compile=_readme_block("python", "# test_compile.py"))
    assert pytester.runpytest_subprocess("--hlo-update-golden", "-q").ret == 0
    assert (pytester.path / "golden" / "mlp.hlox").exists()
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)


# the workflow's model.py: a training step of the user's (its arguments from args(), as a file target takes them)
WORKFLOW_MODEL = """\
import jax
import jax.numpy as jnp


def step(w, x, y):
    def loss(w):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    value, grad = jax.value_and_grad(loss)(w)
    return w - 0.1 * grad, value


def args():
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    return (jax.random.normal(k[0], (16, 4)), jax.random.normal(k[1], (32, 16)), jax.random.normal(k[2], (32, 4)))
"""


@pytest.mark.subprocess
def test_the_readme_workflow_runs_its_check_and_drift_steps(golden, tmp_path):
    """Each ``run:`` step of the README's workflow that calls hlo-workbench runs as the job's shell runs it (bash,
    the installed script on PATH, no terminal), on the golden and a model.py of the user's."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    import yaml

    from workbench.views.cli import validate_document

    workflow = yaml.safe_load(_readme_block("yaml", "# .github/workflows/compile.yml"))
    runs = [step["run"] for step in workflow["jobs"]["check"]["steps"] if "run" in step]
    ours = [r for r in runs if r.startswith("hlo-workbench ")]
    assert [r.split()[1] for r in ours] == ["check", "drift"]
    (tmp_path / "golden").mkdir()
    shutil.copy(golden, tmp_path / "golden" / "mlp.hlox")
    (tmp_path / "model.py").write_text(WORKFLOW_MODEL)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    done = [subprocess.run(["bash", "-e", "-c", r], cwd=tmp_path, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=900) for r in ours]
    for r, line in zip(done, ours):
        assert r.returncode == 0, (line, r.stdout[-2000:], r.stderr[-3000:])
    assert "PASSED" in done[0].stdout and (tmp_path / "compile-diff.html").exists()
    drift = json.loads((tmp_path / "drift.json").read_text())
    validate_document(drift)
    assert drift["command"] == "drift" and drift["exit"] == 0 and drift["found"] is False
    assert not done[1].stderr.strip(), done[1].stderr  # no progress bar, no note: stderr is not a terminal


@pytest.mark.slow
def test_a_golden_from_other_versions_says_which_versions_differ(golden, tmp_path):
    import json
    import zipfile

    older = tmp_path / "older.hlox"
    with zipfile.ZipFile(golden) as src, zipfile.ZipFile(older, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["saved_by"] = {**manifest["saved_by"], "jax": "0.9.9", "enzyme-ad": "0.0.1"}
                data = json.dumps(manifest).encode()
            dst.writestr(info, data)
    c = wb.compare_explorations(wb.load(older), wb.load(golden))
    assert c.identical and c.same_input
    assert ("jax", "0.9.9", wb.load(golden).spec.loaded.saved_by["jax"]) in c.versions
    assert "versions: jax 0.9.9 → " in str(c) and "enzyme-ad 0.0.1 → " in str(c)
    verdict = check_golden(older, same_final_module=True)
    assert verdict.ok and "versions: jax 0.9.9 → " in str(verdict)  # the same modules with what is installed now


@pytest.mark.slow
def test_a_comparison_normalizes_each_distinct_text_at_most_once(mlp_ex, monkeypatch):
    import workbench.analysis.diff.explorations as explorations

    calls = []
    real = explorations.module_shape
    monkeypatch.setattr(explorations, "module_shape", lambda s: calls.append(s.text) or real(s))
    other = mlp_ex.with_patterns(disable=["transpose_dot_reorder"])
    c = wb.compare_explorations(mlp_ex, other)
    c.table(), c.final, str(c)
    assert len(calls) == len(set(calls))  # work counted: no text normalized twice
    distinct = {s.text for ex in (mlp_ex, other) for s in ex.stages if s.group != "backend"}
    assert 0 < len(calls) <= len(distinct)


@pytest.mark.slow
def test_flops_of_a_program_with_a_host_callback_are_judged_by_the_analytic_counts(tmp_path):
    """XLA counts no flops for a module with a custom call (jax.debug.print's): the limit holds the final MLIR
    modules' analytic counts instead of passing over it."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x, w):
        y = jnp.tanh(x @ w)
        jax.debug.print("y {y}", y=y.sum())
        return y.T @ y

    x, w = jnp.ones((8, 16)), jnp.full((16, 4), 0.1)
    path = wb.testing.write_golden(wb.explore(f, x, w), tmp_path / "printing.hlox")
    v = check_golden(path, f, (x, w), numbers=True)
    assert v.ok, str(v)
    flops = next(r for r in v.rows if r.what == "flops")
    assert flops.golden and flops.golden == flops.now and not flops.note
