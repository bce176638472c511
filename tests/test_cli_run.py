"""``hlo-workbench run`` and ``cost`` as a user types them: a fresh process, no terminal, on a real program. ``run``
exits 0 when every check passed, 1 when one failed (a miscompile), 2 when a stage could not run; its --json and
``cost --json`` follow the shipped schema and hold the facts of ``ex.run(...)``'s check and ``ex.cost()`` for the
same program (never its times, which no two runs share).

The programs: the corpus's SGD step (``donated_step``), whose check passes, and test_drift's planted miscompile (a
NaN fed to a program that replaces its NaNs by zeros, explored with Reactant's no_nan, so a pattern folds the
replacement away and the NaN comes out)."""
import math

import pandas as pd
import pytest

import workbench as wb

from tests.cli_runs import NAN_FED, command, corpus_target, could_not, document, user_module

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def _finite(x):
    return x if math.isfinite(x) else None


def _same_check(doc_check: dict, check) -> None:
    """The facts of a --json check are those of ``check`` (a Check from ex.run in Python): leaves and verdicts."""
    assert doc_check["passed"] is check.passed
    for field in ("reference", "kind", "source", "note", "tolerance_from"):
        assert doc_check[field] == getattr(check, field), field
    assert doc_check["failed"] == [leaf.path for leaf in check.leaves if not leaf.passed]
    rows = doc_check["leaves"]
    assert [(r["path"], tuple(r["shape"]), r["dtype"], r["passed"], r["rule"], r["computed"]) for r in rows] == \
        [(leaf.path, tuple(leaf.shape), leaf.dtype, leaf.passed, leaf.rule, leaf.computed) for leaf in check.leaves]


# -- run ------------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_run_checks_a_corpus_step_as_ex_run_does_and_exits_0(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "donated_step", "step.py")
    r = command("run", "step.py:fn", "--repeat", 3, "--json", cwd=tmp_path, installed=True)
    doc = document(r, 0)
    inst = program("donated_step").build()
    ex = wb.explore(inst.fn, *inst.args)
    want = ex.run(repeat=3)
    assert doc["passed"] is True and doc["failed"] is None and doc["command"] == "run"
    (run,) = doc["runs"]
    assert run["stage"] == want.stage == ex.default_run_stage().name and run["device"] == want.device
    assert run["error"] is None and len(run["timing"]["times_ms"]) == 3
    assert run["timing"]["min_ms"] <= run["timing"]["median_ms"] == sorted(run["timing"]["times_ms"])[1]
    _same_check(run["check"], want.check)
    assert {leaf["path"] for leaf in run["check"]["leaves"]} == {"['b']", "['w']"}  # the step's new parameters
    assert doc["summary"] == f"the check passed on {want.stage}"

    # the human form: the timing, the verdict and its table, two stages side by side
    r = command("run", "step.py:fn", "--repeat", 2, "--stage", "stablehlo", "--stage", want.stage, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("# 2 stages on cpu:0\n")
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["stage", "median_ms", "min_ms", "speedup", "check", "max_abs", "max_rel"]
    assert [line.split()[0] for line in table[1:]] == ["stablehlo", want.stage]
    assert all(line.split()[4] == "passed" for line in table[1:]) and table[1].split()[3] == "1.00x"
    assert f"# {want.stage} on cpu:0: median " in out and "(2 calls after a warm-up)" in out
    assert out.count("# check passed (2 outputs)") == 2 and out.rstrip().endswith(
        f"# the check passed on stablehlo, {want.stage}")


@pytest.mark.subprocess
def test_run_on_the_no_nan_miscompile_names_the_failing_leaf_and_exits_1(tmp_path):
    user = user_module(tmp_path, "nanfed", NAN_FED)
    r = command("run", "nanfed.py:fn", "--no-nan", "--repeat", 2, "--json", cwd=tmp_path, installed=True)
    doc = document(r, 1)
    ex = wb.explore(user.fn, *user.args(), no_nan=True)
    want = ex.run(repeat=2)
    assert not want.check.passed  # the planted miscompile, in Python too
    (run,) = doc["runs"]
    assert doc["passed"] is False and run["stage"] == want.stage
    _same_check(run["check"], want.check)
    assert run["check"]["failed"] == ["output"] and doc["summary"] == f"the check failed on {want.stage}"
    leaf = run["check"]["leaves"][0]
    assert leaf["max_abs"] is None and not math.isfinite(want.check.leaves[0].max_abs)  # the NaN's inf: null
    assert leaf["tolerance"] == _finite(want.check.leaves[0].tolerance)
    assert leaf["lowered_abs"] == want.check.leaves[0].lowered_abs == 0  # as lowered, the NaN was replaced

    # the human form: the program as lowered passes, the last MLIR stage fails at its one output
    r = command("run", "nanfed.py:fn", "--no-nan", "--repeat", 2, "--stage", "stablehlo", "--stage", want.stage,
                 cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.split("\n\n")[1].splitlines()[1:]}
    assert rows["stablehlo"][4] == "passed" and rows[want.stage][4:7] == ["FAILED", "inf", "inf"]
    assert "# check FAILED at output (1 of 1 outputs): max_abs inf (as lowered: 0)" in r.stdout
    assert r.stdout.rstrip().endswith(f"# the check failed on {want.stage}")


@pytest.mark.subprocess
def test_run_of_a_stage_that_cannot_run_or_does_not_exist_exits_2_with_one_line(tmp_path):
    user_module(tmp_path, "nanfed", NAN_FED)
    r = command("run", "nanfed.py:fn", "--stage", "no-such-stage", "--json", cwd=tmp_path)
    assert "unknown stage 'no-such-stage'" in could_not(r, "run")
    # two stages, one of which cannot run (an XLA stage after layout assignment) and no check failed: status 2
    r = command("run", "nanfed.py:fn", "--repeat", 1, "--stage", "stablehlo", "--stage", "xla:optimized",
                 "--json", cwd=tmp_path)
    assert could_not(r, "run").startswith("xla:optimized could not run: stage 'xla:optimized' is made by XLA's "
                                           "layout assignment")


# -- cost ------------------------------------------------------------------------------------------------------

_COUNTS = ("ops", "flops", "transcendentals", "bytes", "flops_body_once", "loops_unknown", "collective_bytes")


@pytest.mark.subprocess
def test_cost_rows_are_ex_cost_of_a_corpus_step(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "donated_step", "step.py")
    r = command("cost", "step.py:fn", "--roofline", "TPU v5e", "--json", cwd=tmp_path, installed=True)
    doc = document(r, 0)
    inst = program("donated_step").build()
    ex = wb.explore(inst.fn, *inst.args)
    want = ex.cost(device="TPU v5e")
    assert doc["columns"] == list(want.columns) and doc["roofline"] == "TPU v5e" and doc["dtype"] == "fp32"
    assert [row["stage"] for row in doc["rows"]] == list(want.stage)
    for row, (_, w) in zip(doc["rows"], want.iterrows()):
        assert set(row) == set(want.columns)
        for col in _COUNTS:
            assert row[col] == (None if pd.isna(w[col]) else int(w[col])), (row["stage"], col)
        assert row["bound"] == (w["bound"] if isinstance(w["bound"], str) else None)
    optimized = next(row for row in doc["rows"] if row["stage"] == "xla:optimized")
    assert optimized["temp_bytes"] == want.set_index("stage").loc["xla:optimized", "temp_bytes"] > 0

    # the human form: one aligned row per stage named, the columns a user reads
    r = command("cost", "step.py:fn", "--stage", "stablehlo", "--stage", "xla:optimized", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    header, *rows = r.stdout.split("\n\n")[1].splitlines()
    assert header.split()[:5] == ["stage", "ops", "flops", "transcendentals", "bytes"] and "temp_bytes" in header
    assert [line.split()[0] for line in rows] == ["stablehlo", "xla:optimized"]
    stablehlo = want.set_index("stage").loc["stablehlo"]
    assert rows[0].split()[1:3] == [f"{stablehlo.ops:,}", f"{stablehlo.flops:,}"]
    assert len({len(line) for line in [header, *rows]}) == 1  # aligned

    # --ops: the stage's row, and its cost op by op, XLA's own analysis of each instruction for an XLA stage
    r = command("cost", "step.py:fn", "--ops", "xla:optimized", "--json", cwd=tmp_path)
    doc = document(r, 0)
    ops = ex.cost("xla:optimized")
    assert [row["stage"] for row in doc["rows"]] == ["xla:optimized"] and doc["ops"]["stage"] == "xla:optimized"
    assert doc["ops"]["columns"] == list(ops.columns)
    assert [(o["name"], o["op"], o["flops"], o["bytes"]) for o in doc["ops"]["rows"]] == \
        [(o.name, o.op, int(o.flops), int(o.bytes)) for o in ops.itertuples()]


@pytest.mark.subprocess
def test_cost_of_a_missing_file_an_unknown_roofline_device_or_ops_of_a_jaxpr_exits_2(tmp_path):
    r = command("cost", "missing.py:fn", "--json", cwd=tmp_path)
    assert could_not(r, "cost").startswith("no such file: missing.py")
    user_module(tmp_path, "nanfed", NAN_FED)
    r = command("cost", "nanfed.py:fn", "--roofline", "H1000", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and "H100" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = command("cost", "nanfed.py:fn", "--ops", "jaxpr", "--json", cwd=tmp_path)
    assert "per-op costs exist for MLIR stages" in could_not(r, "cost")
