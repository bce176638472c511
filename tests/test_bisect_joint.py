"""ex.bisect over XLA's passes and over patterns and XLA passes together, the built-in predicates as
objects (repr, recipe), and the reproducers of the new predicates, on real small programs."""
import json
import math
import os
import runpy
import subprocess
import sys
from collections import Counter

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.search.bisect import BuiltinPredicate
from workbench.errors import ReproducerError
from workbench.examples import load
from workbench.ir.ops import op_counts

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@jax.jit
def _scaled_sine(x):
    return jnp.sin(x) * 2.0


def elementwise(x):  # the nested jit is a call, which XLA inlines (call-inliner) and fuses (fusion)
    return _scaled_sine(x) + jnp.exp(x)


def transposed_dot(x, y):  # the patterns remove all three transposes; XLA has nothing to do with it
    return jnp.dot(x.T, y.T).T


def double_transpose(x):
    return (x.T).T * 2.0 + 1.0


def nan_to_zero(x):  # test_check's planted no_nan miscompile
    return jnp.where(jnp.isnan(x), 0.0, x) * 2.0


X = jnp.array([1.0, jnp.nan, 3.0])
NO_CALL = wb.lacks_op("call", stage="xla:optimized")


def bound(n: int) -> int:
    """ddmin's tries for one culprit among n, with room for the two up-front checks and a few splits."""
    return 2 * math.ceil(math.log2(n)) + 6


@pytest.fixture(scope="module")
def elementwise_ex():
    # only the patterns: without MLIR's inline pass the call reaches XLA
    return wb.explore(elementwise, jnp.ones((8, 4)), pipeline="enzyme-hlo-patterns")


def test_a_joint_bisect_blames_the_one_xla_pass_and_no_pattern(elementwise_ex):
    ex = elementwise_ex
    assert not NO_CALL(ex.with_xla(disable=["call-inliner"]))  # only the call-inliner removes XLA's call
    n = len(wb.patterns()) + len(ex.xla_passes)
    b = ex.bisect(NO_CALL, over="all", progress=False)
    assert b.xla_passes == ["call-inliner"] and b.patterns == [] and b.over == "all"
    assert b.runs <= bound(n) and len(b.log) == b.runs
    assert b.compiles <= b.runs  # one XLA compile per subset at most (cached ones are none)
    assert b.always_needed == [] and b.probe_compiles == 1
    assert "disabled (1 compile in a child process), so none has to stay enabled" in b.always_needed_how
    table = b.table()
    assert list(table.columns) == ["kind", "name", "changes"]
    assert table.to_dict("records") == [{"kind": "xla", "name": "call-inliner", "changes": table.changes[0]}]
    assert "call -1" in table.changes[0]
    assert b.diff.ops_delta().set_index("op").loc["call", "delta"] == -1  # xla:optimized without it vs with it
    alone = ex.bisect(NO_CALL, over="xla", progress=False)  # the same over XLA's passes alone, in fewer tries
    assert alone.xla_passes == ["call-inliner"] and alone.patterns == [] and alone.runs <= bound(len(ex.xla_passes))


def test_a_joint_bisect_blames_the_patterns_and_no_xla_pass():
    ex = wb.explore(transposed_dot, jnp.ones((3, 4)), jnp.ones((5, 3)))
    pred = wb.op_count_at_most("stablehlo.transpose", 0)
    b = ex.bisect(pred, over="all", progress=False)
    assert b.patterns == ["dot_transpose", "transpose_dot_reorder"] and b.xla_passes == []
    assert b.runs <= 4 * bound(len(wb.patterns()) + len(ex.xla_passes))  # two culprits
    assert ex.bisect(pred, progress=False).patterns == b.patterns  # over="patterns", the default, agrees
    assert pred(ex.with_only_patterns(b.patterns))
    for p in b.patterns:  # 1-minimal
        assert not pred(ex.with_only_patterns(set(b.patterns) - {p}))
    table = b.table()
    assert list(table.kind) == ["pattern", "pattern"] and list(table.name) == b.patterns
    assert all("stablehlo.transpose -" in c for c in table.changes)
    assert b.diff.ops_delta().set_index("op").loc["stablehlo.transpose", "delta"] == -3


def test_a_joint_bisect_blames_the_one_pattern_and_no_xla_pass():
    """At most one transpose left: one pattern alone (dot_transpose) gets there."""
    ex = wb.explore(transposed_dot, jnp.ones((3, 4)), jnp.ones((5, 3)))
    pred = wb.op_count_at_most("stablehlo.transpose", 1)
    b = ex.bisect(pred, over="all", progress=False)
    assert b.patterns == ["dot_transpose"] and b.xla_passes == [] and b.always_needed == []
    assert b.runs <= bound(len(wb.patterns()) + len(ex.xla_passes))
    assert pred(ex.with_only_patterns(b.patterns)) and not pred(ex.with_only_patterns([]))
    assert list(b.table().kind) == ["pattern"]


def test_passes_xla_cannot_do_without_are_found_in_a_child_and_never_blamed():
    """On CPU, an RNG program compiled with copy-insertion (and more) disabled makes XLA abort the
    process (a CHECK failure in buffer assignment): the probe finds them in a child process."""
    ex = wb.explore(lambda k: jax.random.normal(k, (4,)), jax.random.key(0), pipeline="none")
    candidates = ["sharding-remover", "dce", "call-inliner", "algsimp", "cse", "fusion", "fusion-wrapper",
                  "copy-insertion"]
    assert set(candidates) <= set(ex.xla_passes)
    fused = wb.has_op("fusion", stage="xla:optimized")
    b = ex.bisect(fused, over="xla", candidates=candidates, progress=False)
    assert b.always_needed and set(b.always_needed) <= set(candidates)
    assert "XLA killed the compiling process" in b.always_needed_how and "must stay enabled" in b.always_needed_how
    assert 2 <= b.probe_compiles <= len(b.always_needed) * (math.ceil(math.log2(len(candidates))) + 1) + 1
    assert len(b.xla_passes) == 1 and set(b.xla_passes) <= {"fusion", "fusion-wrapper"}  # either makes fusions
    assert not set(b.xla_passes) & set(b.always_needed)
    kept = ex.with_xla(disable=[c for c in candidates if c not in b.always_needed])
    assert kept.error is None and not fused(kept)  # with only those enabled, it compiles (in this process)


def test_over_must_be_a_known_domain(elementwise_ex):
    with pytest.raises(wb.UnknownNameError, match="over"):
        elementwise_ex.bisect(NO_CALL, over="xla_passes", progress=False)
    with pytest.raises(wb.WorkbenchError, match="does not hold with all candidate XLA passes"):
        elementwise_ex.bisect(wb.has_op("call", stage="xla:optimized"), over="xla", progress=False)


# ---- the built-in predicates as objects ------------------------------------------------------------


def test_every_built_in_predicate_has_a_readable_repr_its_name_and_a_recipe():
    cases = {
        "miscompiles()": wb.miscompiles(),
        "miscompiles('cpu:0')": wb.miscompiles("cpu:0"),
        "miscompiles('cpu:0', repeat=3)": wb.miscompiles("cpu:0", 3),
        "crashes()": wb.crashes(),
        "crashes(include_xla=True)": wb.crashes(include_xla=True),
        "slower_than(2)": wb.slower_than(2),
        "op_count_above('stablehlo.transpose', 0)": wb.op_count_above("stablehlo.transpose", 0),
        "op_count_at_most('stablehlo.add', 3)": wb.op_count_at_most("stablehlo.add", 3),
        "has_op('stablehlo.dot_general')": wb.has_op("stablehlo.dot_general"),
        "has_op('fusion', stage='xla:optimized')": wb.has_op("fusion", stage="xla:optimized"),
        "lacks_op('multiply', stage='xla:optimized')": wb.lacks_op("multiply", "xla:optimized"),
        "differs_from('stablehlo')": wb.differs_from("stablehlo"),
        "differs_from('stablehlo', numbers=True)": wb.differs_from("stablehlo", numbers=True),
        "differs_from('cse#1', numbers=True, device='cpu:0')": wb.differs_from("cse#1", True, "cpu:0"),
    }
    for text, p in cases.items():
        assert repr(p) == text and p.__name__ == text and str(p) == text
        assert isinstance(p, BuiltinPredicate) and callable(p)
        assert json.loads(json.dumps(p.recipe)) == p.recipe
        assert p.recipe["kind"] == text.split("(")[0]
    assert wb.has_op("fusion", "xla:optimized") == wb.has_op("fusion", stage="xla:optimized") != wb.lacks_op("fusion")
    assert wb.has_op("a").recipe == {"kind": "has_op", "name": "a", "stage": None}
    assert wb.differs_from("stablehlo").recipe == {"kind": "differs_from", "stage": "stablehlo", "numbers": False,
                                                   "device": None}
    assert wb.slower_than(2).recipe == {"kind": "slower_than", "seconds": 2.0}


def test_has_op_and_lacks_op_read_mlir_stages_and_xla_opcodes():
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    assert wb.has_op("stablehlo.transpose", stage="stablehlo")(ex) and not wb.has_op("stablehlo.transpose")(ex)
    assert wb.lacks_op("stablehlo.transpose")(ex) and not wb.lacks_op("stablehlo.transpose", "stablehlo")(ex)
    assert op_counts(ex["xla:optimized"].text)["fusion"] >= 1  # op_counts reads HLO: opcodes
    assert wb.has_op("fusion", stage="xla:optimized")(ex) and not wb.lacks_op("fusion", stage="xla:optimized")(ex)
    unfused = ex.with_xla(disable=["fusion", "fusion-wrapper"])
    assert wb.lacks_op("fusion", stage="xla:optimized")(unfused)
    with pytest.raises(wb.UnknownNameError):
        wb.has_op("fusion", stage="xla:optimised")(ex)


def test_differs_from_by_text_and_by_numbers():
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    last = ex.default_run_stage().name
    assert wb.differs_from("stablehlo")(ex) and not wb.differs_from(last)(ex)
    assert not wb.differs_from("stablehlo", numbers=True)(ex)  # the same numbers
    assert not wb.differs_from("stablehlo")(wb.explore(lambda x: x * 2.0, jnp.ones(3), pipeline="cse"))
    planted = wb.explore(nan_to_zero, X, no_nan=True)
    pred = wb.differs_from("stablehlo", numbers=True)
    assert pred(planted)
    b = planted.bisect(pred, progress=False)  # the no_nan patterns change the numbers
    assert b.patterns and all(p.startswith("no_nan") for p in b.patterns)


# ---- reproducers of the new predicates -------------------------------------------------------------


@pytest.fixture(scope="module")
def blocker(tmp_path_factory):
    d = tmp_path_factory.mktemp("no-workbench")
    (d / "sitecustomize.py").write_text("import sys\nsys.modules['workbench'] = None\n")
    return d


def run_repro(folder, blocker):
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    r = subprocess.run([sys.executable, "repro.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    lines = r.stdout.strip().splitlines()
    assert lines, r.stderr[-3000:]
    return r.returncode, lines[-1], r.stdout


def test_reproducers_of_has_op_and_lacks_op(tmp_path, blocker):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    folder = ex.reproducer(tmp_path / "lacks", predicate=wb.lacks_op("stablehlo.transpose"))
    config = runpy.run_path(str(folder / "repro.py"))["CONFIG"]
    assert config["predicate"] == {"kind": "lacks_op", "name": "stablehlo.transpose", "stage": None}
    assert "It starts at stage `enzyme-hlo-patterns#1`" in (folder / "README.md").read_text()  # where it starts to hold
    rc, last, out = run_repro(folder, blocker)
    assert rc == 1 and last.startswith("FAIL: lacks_op: the output has 0 stablehlo.transpose"), out
    rc, last, out = run_repro(ex.reproducer(tmp_path / "has", predicate=wb.has_op("stablehlo.transpose")), blocker)
    assert rc == 0 and last.startswith("PASS: has_op"), out
    fused = ex.reproducer(tmp_path / "fused", predicate=wb.has_op("fusion", stage="xla:optimized"))
    assert "compiles the pipeline's output with XLA" in (fused / "README.md").read_text()
    rc, last, out = run_repro(fused, blocker)
    assert rc == 1 and last.startswith("FAIL: has_op: XLA's optimized module has"), out
    unfused = ex.with_xla(disable=["fusion", "fusion-wrapper"])  # the XLA options travel with the folder
    rc, last, out = run_repro(unfused.reproducer(tmp_path / "unfused", predicate=wb.has_op("fusion", "xla:optimized")),
                              blocker)
    assert rc == 0 and last.startswith("PASS: has_op: XLA's optimized module has 0 fusion"), out
    with pytest.raises(ReproducerError, match="xla:optimized"):
        ex.reproducer(tmp_path / "other", predicate=wb.has_op("fusion", stage="xla:fusion#1"))


def test_reproducers_of_differs_from(tmp_path, blocker):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    folder = ex.reproducer(tmp_path / "text", predicate=wb.differs_from("stablehlo"))
    assert "It starts at stage `inline#1`" in (folder / "README.md").read_text()  # input.mlir is "stablehlo"
    rc, last, out = run_repro(folder, blocker)
    assert rc == 1 and last.startswith("FAIL: differs_from: the pipeline's output differs"), out
    same = wb.explore(lambda x: x * 2.0, jnp.ones(3), pipeline="cse")
    rc, last, out = run_repro(same.reproducer(tmp_path / "same", predicate=wb.differs_from("stablehlo")), blocker)
    assert rc == 0 and last.startswith("PASS: differs_from: the pipeline's output prints as input.mlir does"), out
    planted = wb.explore(nan_to_zero, X, no_nan=True)
    numbers = planted.reproducer(tmp_path / "numbers", predicate=wb.differs_from("canonicalize#2", numbers=True))
    assert "It starts at stage `enzyme-hlo-patterns#1`" in (numbers / "README.md").read_text()
    rc, last, out = run_repro(numbers, blocker)
    assert rc == 1 and last.startswith("FAIL: differs_from: output 0") and "is nan at [1]" in last, out
    rc, last, out = run_repro(ex.reproducer(tmp_path / "ok", predicate=wb.differs_from("stablehlo", numbers=True)),
                              blocker)
    assert rc == 0 and last.startswith("PASS: all 1 outputs match input.mlir"), out
    with pytest.raises(ReproducerError, match="compares with stage 'stablehlo'"):
        ex.reproducer(tmp_path / "elsewhere", stage="cse#1", predicate=wb.differs_from("stablehlo"))
    with pytest.raises(ReproducerError, match="before the last MLIR stage"):
        ex.reproducer(tmp_path / "last", predicate=wb.differs_from(ex.default_run_stage().name))


def test_the_scripts_hlo_opcode_counter_agrees_with_the_workbenchs(tmp_path):
    ex = wb.explore(double_transpose, jnp.ones((3, 4)))
    hlo_opcodes = runpy.run_path(str(ex.reproducer(tmp_path / "r", predicate=wb.has_op("fusion", "xla:optimized"))
                                     / "repro.py"))["hlo_opcodes"]
    for name in ("mlp", "scan", "attention"):
        fn, args = load(name)
        e = wb.explore(fn, *args)
        for text in (e["xla:optimized"].text, jax.jit(fn).lower(*args).compile().as_text()):
            assert Counter(hlo_opcodes(text)) == op_counts(text), name
