"""Issue 44, item 4: lines are not lost after the Enzyme-JaX passes and in XLA.

An op counts (``provenance.counts``) unless it is no computation of the program: a function, its return or a
region's yield, Shardy's mesh declaration, an HLO parameter (a computation's input, as a function argument
in MLIR is no op). Of the ops that count, at most 5 % in every MLIR stage and 10 % of XLA's instructions (every
computation's, fused ones too) may be left without a line of the user's code, on every corpus program. Most
that have no location of their own get one through the dataflow (MLIR's folder hoists the constants it makes
with ``loc(unknown)``, JAX writes the constants it hoists at the jit's own call, XLA's passes add copies,
converts, broadcasts and tuples without metadata): those are marked, never shown as their own.
"""
from __future__ import annotations

import pytest

from tests.corpus import names
from tests.test_corpus import explored
from workbench.analysis.provenance import coverage, located_ops, op_locations
from workbench.ir.attribution import FROM_INSIDE, FROM_OPERAND, FROM_OUTSIDE, FROM_USER, NOT_FOUND, OWN, attribute
from workbench.ir.origins import Dataflow

MLIR_BAR, XLA_BAR = 0.05, 0.10


def _stages(ex):
    return [s for s in ex.stages if not s.error and s.name != "jaxpr" and s.group in ("trace", "mlir", "xla")]


@pytest.mark.parametrize("name", names())
def test_every_stage_names_a_line_for_all_but_a_few_ops(name):
    ex = explored(name)
    over = []
    for s in _stages(ex):
        c = coverage(s)
        bar = XLA_BAR if s.group == "xla" else MLIR_BAR
        assert c["ops"] > 0, s.name
        if c["unattributed"] > bar:
            over.append((s.name, f"{100 * c['unattributed']:.1f}%", c["by_how"]))
    assert not over, over


@pytest.mark.parametrize("name", names())
def test_an_inferred_line_is_marked_and_comes_from_an_op_with_one_of_its_own(name):
    ex = explored(name)
    for stage in ("stablehlo", [s.name for s in ex.stages if s.group == "mlir"][-1], "xla:optimized"):
        s = ex[stage]
        located = located_ops(s)
        df = op_locations(s)
        assert list(df.how) == [x.how for x in located]
        inferred = df[~df.how.isin([OWN, NOT_FOUND])]
        assert set(inferred.how) <= {FROM_INSIDE, FROM_USER, FROM_OPERAND, FROM_OUTSIDE}
        assert (inferred.via != "").all() and (inferred.file != "").all()
        results = set(df.result) | {f"{o} (line {t + 1})" for o, t in zip(df.op, df.text_line)}
        assert set(inferred.via) <= results
        own = df[df.how == OWN]
        assert (own.via == "").all()
        # an inferred op has no line of its own: its origins name none of the user's
        for x in located:
            if x.how not in (OWN, NOT_FOUND):
                assert not any(g.frames and g.frames[0] == x.frame and g == x.origin for g in x.op.origins)
    sm = ex.source_map()
    assert sm["stablehlo_inferred"].sum() > 0 and (sm["stablehlo_inferred"] <= sm["stablehlo_ops"]).all()


def test_a_debug_print_in_a_loop_keeps_its_lines():
    """jax.debug.print in a fori_loop (a host callback in a while body): its ops and the loop's count at lines."""
    ex = explored("debug_print_loop")
    for s in _stages(ex):
        assert coverage(s)["unattributed"] <= (XLA_BAR if s.group == "xla" else MLIR_BAR), s.name
    calls = op_locations(ex["stablehlo"])
    callbacks = calls[calls.op == "stablehlo.custom_call"]
    assert len(callbacks) and (callbacks.file != "").all()


def _chain(n: int) -> Dataflow:
    """A program of n ops: op 0 has a line, each next uses the one before, every third sits in op 1's region."""
    return Dataflow(tuple(() if i == 0 else (i - 1,) for i in range(n)),
                    tuple(1 if i % 3 == 0 and i > 1 else -1 for i in range(n)))


def test_inference_is_linear_in_the_module():
    work = {}
    for n in (2_000, 4_000, 8_000):
        counter: list = []
        found = attribute(_chain(n), [i == 0 for i in range(n)], counter=counter)
        assert all(a.source == 0 for a in found)
        work[n] = len(counter)
    assert work[8_000] <= 2.2 * work[4_000] and work[4_000] <= 2.2 * work[2_000], work


def test_the_nearest_line_wins_and_what_takes_no_part_passes_none_on():
    # 0: a constant with no line, used by 1 (a line); 2 uses 1 and has none; 3 is a parameter used by 4 and 5
    flow = Dataflow(((), (0,), (1,), (), (3,), (3, 4)), (-1,) * 6)
    known = [False, True, False, False, True, False]
    part = [True, True, True, False, True, True]
    a = attribute(flow, known, part)
    assert (a[0].how, a[0].source) == (FROM_USER, 1) and (a[2].how, a[2].source) == (FROM_OPERAND, 1)
    assert a[3].how == NOT_FOUND  # a parameter takes no line ...
    assert (a[5].how, a[5].via) == (FROM_OPERAND, 4)  # ... and passes none on: 5 takes 4's, not 3's
