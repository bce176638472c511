"""ex.reduce(predicate, stage): the smallest module on which a predicate still holds, by delta debugging
over the module's operations (workbench.analysis.search.reduce). Every candidate is a real module that parses
and verifies in jaxlib's MLIR and runs through the real pipeline; the result is 1-minimal: no single
move applied to it keeps the predicate true."""
import math
import os
import subprocess
import sys

import pytest
from jaxlib.mlir import ir

import workbench as wb
from workbench.analysis.search.reduce import (
    Move,
    ReduceResult,
    apply_moves,
    count_ops,
    module_size,
    moves,
)
from workbench.errors import WorkbenchError
from workbench.examples import load
from workbench.ir.mlir import parse_module
from workbench.ir.ops import op_counts


def first_module(ex):
    """The module given to the pipeline: "stablehlo" of a traced exploration, "input" of text."""
    return next(s for s in ex.pipeline_stages if s.is_module)


def transpose_feeds_dot(ex) -> bool:
    """A stablehlo.transpose result is an operand of a stablehlo.dot_general in the module given to the
    pipeline (read with jaxlib's parser, not off the text)."""
    module = parse_module(first_module(ex).text)
    found = []

    def visit(op):
        if op.name == "stablehlo.dot_general":
            owners = [getattr(v.owner, "operation", None) for v in op.operands]  # a block argument has none
            found.extend(o for o in owners if o is not None and o.name == "stablehlo.transpose")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return bool(found)


class Counted:
    """A predicate that counts its calls (and can raise KeyboardInterrupt on the n-th, as Ctrl-C does)."""

    def __init__(self, predicate, interrupt_at=None):
        self.predicate, self.calls, self.interrupt_at = predicate, 0, interrupt_at
        self.__name__ = getattr(predicate, "__name__", "counted")

    def __call__(self, ex):
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        return self.predicate(ex)


def verifies(text: str) -> bool:
    module = parse_module(text)
    with module.context:
        return module.operation.verify()


@pytest.fixture(scope="module")
def attention():
    fn, args = load("attention")
    return wb.explore(fn, *args)


@pytest.fixture(scope="module")
def reduced(attention):
    pred = Counted(transpose_feeds_dot)
    heard = []
    r = attention.reduce(pred, stage="stablehlo", progress=False, on_progress=lambda done, total: heard.append((done, total)))
    return r, pred, heard


def test_the_transformer_gradient_reduces_to_a_transpose_feeding_a_dot(attention, reduced):
    r, pred, heard = reduced
    assert isinstance(r, ReduceResult) and not r.interrupted
    assert r.ops_before == count_ops(attention["stablehlo"].text) > 250  # the whole gradient: ~290 ops
    assert r.ops_after == count_ops(r.text) <= 10
    assert transpose_feeds_dot(r.exploration) and verifies(r.source)
    counts = op_counts(r.text)
    assert counts["stablehlo.transpose"] >= 1 and counts["stablehlo.dot_general"] >= 1
    # the reduced exploration has the original's spec, and the pipeline ran on the reduced module
    spec = r.exploration.spec
    assert (spec.pipeline, spec.selection, spec.xla_options, spec.device) == (
        attention.spec.pipeline, attention.spec.selection, attention.spec.xla_options, attention.spec.device)
    assert first_module(r.exploration).name == "input" and len(r.exploration.pipeline_stages) > 2
    # runs: every predicate call, the first (on the start module) included; heard as a count without a total
    assert r.runs == pred.calls
    assert heard[0] == (0, None) and heard[-1] == (r.runs, None) and len(heard) == r.runs + 1
    # The bound: ddmin finds k needed pieces among n in about k*log2(n) tests, and the last pass tries
    # each move of the result once. n: the moves of the start module (~750), k: those of the result;
    # twice that leaves room. Trying moves one at a time would cost at least n runs.
    start_moves = len(moves(r_start(attention)))
    bound = 2 * len(r.moves()) * math.ceil(math.log2(start_moves)) + len(r.moves())
    assert r.runs <= bound < start_moves, (r.runs, bound, start_moves)
    assert "ReduceResult(transpose_feeds_dot on 'stablehlo'" in repr(r) and f"-> {r.ops_after} ops" in repr(r)


def r_start(ex):
    """The module the reduction starts from, as the moves see it (printed by jaxlib, with locations)."""
    module = parse_module(ex["stablehlo"].text_with_locations)
    with module.context:
        return module.operation.get_asm(enable_debug_info=True)


def test_the_result_is_1_minimal(reduced):
    """Every single move the reduced module offers, applied alone, gives a module (it verifies) on which
    the predicate no longer holds."""
    r, _, _ = reduced
    offered = moves(r.text)
    assert offered == r.moves() and {m.kind for m in offered} >= {"to_arg", "to_zero"}
    tried = 0
    for move in offered:
        candidate = apply_moves(r.text, [move])
        if candidate is None:
            continue  # does not verify: never shown to a predicate
        assert module_size(candidate) < module_size(r.text)
        assert not transpose_feeds_dot(wb.explore_text(candidate, pipeline=r.exploration.spec.pipeline)), move
        tried += 1
    assert tried >= 3


def test_the_reduced_module_runs_on_seeded_inputs_of_its_new_arguments(reduced):
    r, _, _ = reduced
    run = r.exploration.run(repeat=1)  # no traced arguments: seeded random ones of @main's types
    module = parse_module(r.text)
    block = module.body.operations[0].regions[0].blocks[0]
    assert len(block.arguments) >= 1 and run.check.passed
    out = run.outputs[0] if isinstance(run.outputs, (tuple, list)) else run.outputs
    assert out.shape == tuple(ir.RankedTensorType(block.operations[len(block.operations) - 1].operands[0].type).shape)


def run_repro(folder, blocker, *args):
    """repro.py in a fresh interpreter that cannot import the workbench (as tests/test_reproducer.py runs it)."""
    code = ("import sys; sys.modules['workbench'] = None; import runpy; "
            f"sys.argv = ['repro.py', *{list(args)!r}]; runpy.run_path('repro.py', run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    r = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    lines = r.stdout.strip().splitlines()
    assert lines, r.stderr[-3000:]
    return r.returncode, lines[-1]


def test_the_reproducer_of_a_reduced_module_gives_the_same_verdict(attention, tmp_path):
    pytest.importorskip("enzyme_ad.jax", reason="repro.py runs the pipeline with enzyme-ad")
    pred = wb.op_count_above("stablehlo.dot_general", 1)  # the pipeline leaves more than one dot_general
    r = attention.reduce(pred, progress=False)
    assert pred(r.exploration) and r.ops_after <= 10 < r.ops_before
    folder = r.reproducer(tmp_path / "bug")
    assert count_ops((folder / "input.mlir").read_text()) == r.ops_after
    blocker = tmp_path / "no-workbench"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['workbench'] = None\n")
    code, last = run_repro(folder, blocker)
    assert code == 1 and last.startswith("FAIL"), last  # FAIL: the predicate holds, as in the workbench


def test_ctrl_c_returns_the_smallest_module_found_so_far(attention):
    pred = Counted(transpose_feeds_dot, interrupt_at=6)
    r = attention.reduce(pred, progress=False)
    assert r.interrupted and "INTERRUPTED" in repr(r)
    assert r.runs == 5  # the sixth call raised: no verdict
    assert r.ops_after < r.ops_before and verifies(r.source)  # five runs: the first halvings held, and are kept
    assert transpose_feeds_dot(r.exploration)  # every module kept so far held the predicate


def test_ctrl_c_on_the_first_run_returns_the_start_module(attention):
    r = attention.reduce(Counted(transpose_feeds_dot, interrupt_at=1), progress=False)
    assert r.interrupted and r.runs == 0 and r.ops_after == r.ops_before
    assert r.source == r_start(attention)
    assert first_module(r.exploration).name == "input"


def test_a_predicate_that_does_not_hold_on_the_start_module_is_refused(attention):
    with pytest.raises(WorkbenchError, match="does not hold on stage 'stablehlo'.*nothing to reduce"):
        attention.reduce(lambda ex: False, progress=False)


def test_a_predicate_that_names_the_stablehlo_stage_is_told_what_a_candidate_calls_it():
    import jax.numpy as jnp

    def t(x, y):
        return jnp.dot(x.T, y.T).T

    et = wb.explore(t, jnp.ones((8, 16)), jnp.ones((4, 8)))
    with pytest.raises(WorkbenchError, match=r"asks for stage 'stablehlo'.*first stage is 'input'.*reference_stage"):
        et.reduce(wb.has_op("stablehlo.dot_general", stage="stablehlo"))
    assert et.reduce(lambda e: "stablehlo.dot_general" in e.reference_stage().text).ops_after >= 1


@pytest.mark.parametrize("stage", ["jaxpr", "xla:optimized"])
def test_a_stage_that_is_not_an_mlir_module_is_refused(attention, stage):
    with pytest.raises(WorkbenchError, match=f"stage '{stage}' is .*not an MLIR module"):
        attention.reduce(transpose_feeds_dot, stage=stage, progress=False)


SMALL = """module {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<2xi32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = call @helper(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<4xf32>
    %2 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    %3 = stablehlo.custom_call @effect(%arg0) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<1.0> : tensor<f32>
    %4 = stablehlo.reduce(%1 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<4xf32>
    return %1, %5 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @helper(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.sine %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @unused(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    return %arg0 : tensor<4xf32>
  }
}
"""


def test_every_kind_of_move_gives_a_smaller_module_that_verifies():
    offered = moves(SMALL)
    kinds = {m.kind for m in offered}
    assert kinds == {"output", "root", "func", "erase", "inline", "to_arg", "to_zero", "argument"}
    assert Move("argument", 2) in offered and Move("argument", 0) not in offered  # only unused arguments go
    for move in offered:
        candidate = apply_moves(SMALL, [move])
        assert candidate is not None and verifies(candidate), move
        assert module_size(candidate) < module_size(SMALL), move
        counts = op_counts(candidate)
        assert counts["stablehlo.custom_call"] == (0 if move.kind == "erase" and "custom_call" in _op_at(move) else 1)
        # dead and pure: cleaned up with any move but the one that makes it @main's result
        assert counts["stablehlo.multiply"] == (move.kind == "root" and _op_at(move) == "stablehlo.multiply")
        assert "@unused" not in candidate  # an unreferenced private function goes too (symbol-dce)
    inlined = apply_moves(SMALL, [m for m in offered if m.kind == "inline"])
    assert "@helper" not in inlined and op_counts(inlined)["stablehlo.sine"] == 1
    zeroed = apply_moves(SMALL, [m for m in offered if m.kind == "to_zero" and "reduce" in _op_at(m)])
    assert op_counts(zeroed)["stablehlo.reduce"] == 0 and "dense<0.000000e+00> : tensor<f32>" in zeroed


# an FFT program's module as jax.jit lowers one: complex values, a complex constant (jaxlib's bindings parse a
# complex dense attribute but cannot hand it to Python)
COMPLEX = """module {
  func.func public @main(%arg0: tensor<16xf32>) -> (tensor<16xcomplex<f32>>, tensor<f32>) {
    %cst = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>
    %0 = stablehlo.convert %arg0 : (tensor<16xf32>) -> tensor<16xcomplex<f32>>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<16xcomplex<f32>>
    %2 = stablehlo.multiply %0, %1 : tensor<16xcomplex<f32>>
    %3 = stablehlo.fft %2, type = FFT, length = [16] : (tensor<16xcomplex<f32>>) -> tensor<16xcomplex<f32>>
    %4 = stablehlo.abs %3 : (tensor<16xcomplex<f32>>) -> tensor<16xf32>
    %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    return %3, %5 : tensor<16xcomplex<f32>>, tensor<f32>
  }
}
"""


def test_complex_values_are_zeroed_by_a_complex_constant_and_a_complex_zero_is_known_as_one():
    offered = moves(COMPLEX)
    ops = pre_order(COMPLEX)
    zeroable = {ops[m.index][0] for m in offered if m.kind == "to_zero"}
    assert {"stablehlo.multiply", "stablehlo.fft", "stablehlo.constant"} <= zeroable  # the complex ones too
    fft = next(m for m in offered if m.kind == "to_zero" and ops[m.index][0] == "stablehlo.fft")
    zeroed = apply_moves(COMPLEX, [fft])
    assert zeroed is not None and verifies(zeroed)
    assert op_counts(zeroed)["stablehlo.fft"] == 0
    assert "dense<(0.000000e+00,0.000000e+00)> : tensor<16xcomplex<f32>>" in zeroed
    # what is left has two constants, both zeros (the complex one made here, the reduction's init): no move offers
    # to zero either again
    left = pre_order(zeroed)
    assert [name for name, _ in left].count("stablehlo.constant") == 2
    assert not [m for m in moves(zeroed) if m.kind == "to_zero" and left[m.index][0] == "stablehlo.constant"]


def pre_order(text: str) -> list[tuple[str, str]]:
    """(name, symbol) of each op in a pre-order walk, the module left out: position i is op i of a Move."""
    ops = []

    def visit(op):
        sym = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else ""
        ops.append((op.name, sym))
        return ir.WalkResult.ADVANCE

    parse_module(text).operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops[1:]


def _op_at(move: Move) -> str:
    return pre_order(SMALL)[move.index][0]


def test_a_candidate_that_does_not_verify_is_skipped():
    helper = pre_order(SMALL).index(("func.func", "helper"))
    assert Move("func", helper) not in moves(SMALL)  # not offered: @main calls it
    # removing it anyway leaves a call to nothing: the verifier refuses the module, no predicate sees it
    assert apply_moves(SMALL, [Move("func", helper)]) is None


def test_a_text_exploration_reduces_with_a_user_predicate_that_raises_on_some_candidates():
    ex = wb.explore_text(SMALL, pipeline="canonicalize")

    def sine_and_add(e):
        counts = op_counts(first_module(e).text)
        if not counts["stablehlo.add"]:
            raise ValueError("no add")  # a predicate that fails on some candidates: those count as not holding
        return counts["stablehlo.sine"] > 0

    r = ex.reduce(sine_and_add, progress=False)  # "stablehlo" of a text exploration is its "input"
    assert r.stage == "input" and r.errors >= 1 and not r.interrupted
    counts = op_counts(r.text)
    assert counts["stablehlo.sine"] == 1 and counts["stablehlo.add"] == 1 and r.ops_after == 2
    assert r.exploration.spec.pipeline == "canonicalize"
