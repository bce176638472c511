"""What the facade's ``run`` and ``compare`` need besides running a stage (``analysis.run.execute``):
the refusal of arguments that are shapes only, the reference a run is checked against, made once and
remembered, and the table of several runs.

The reference and the table are written against the ``Explored`` Protocol, as the searches are, so
that they read only what an exploration declares it has.
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

from ..analysis.run.check import Reference, compare_outputs
from ..analysis.run.execute import REFERENCE, args_key, run_stage
from ..analysis.run.printed import captured_if_printing
from ..analysis.run.reference import reference_evaluations
from ..analysis.search.explored import Explored
from ..errors import WorkbenchError
from ..ir.text import host_callback_count, text_hash
from ..stages import Stage, Traced

__all__ = ["refuse_shapes", "remembered_reference", "runs_table", "refuse_unfaithful_hlo", "warm_reference"]


def refuse_shapes(traced: Traced | None, stage: Stage, args: Any) -> None:
    """WorkbenchError when the arguments a run of ``stage`` would take (``args``, else the traced ones)
    hold shapes with no values (``jax.ShapeDtypeStruct``): enough to explore, not to run."""
    abstract = traced.abstract_args(None if args is None else tuple(args)) if traced is not None else []
    if abstract:
        raise WorkbenchError(
            f"stage {stage.name!r} needs arrays to run, and {', '.join(abstract[:4])}"
            f"{f' and {len(abstract) - 4} more' if len(abstract) > 4 else ''} "
            f"{'is a shape' if len(abstract) == 1 else 'are shapes'} (jax.ShapeDtypeStruct) with no values: "
            "a shape is enough to explore, compile and cost; pass arrays of it, ex.run(args=(...))")


def remembered_reference(ex: Explored, memo: dict, device: str, args: Any, known: tuple | None = None,
                         foreign: bool = False) -> Reference:
    """The Reference for runs of ``ex`` on ``device`` with ``args`` (None: the traced ones): the
    as-lowered stage's outputs and the float64 evaluation, each computed once per trace, device and
    argument values, in the trace's own memo (shared by every exploration derived from the same
    trace), else in ``memo``. ``known``: (stage, outputs) of a run just made, reused when that stage's text is
    the reference's (a hand-edited "stablehlo" has the reference's name, not its program: its outputs would
    stand for the program as lowered, in a memo every exploration of the trace shares, and the check's noise
    floor would hold the edit's own error); ``foreign``: the reference is another exploration's, named with
    its title."""
    ref = ex.reference_stage()
    traced = ex.spec.traced
    memo = traced.memo if traced is not None else memo
    key = (device, "traced" if args is None else args_key(args))
    low_key = ("lowered", text_hash(ref.text_with_locations or ref.text)) + key
    if low_key not in memo:
        if known is not None and text_hash(known[0].text_with_locations or known[0].text) == low_key[1]:
            memo[low_key] = known[1]
        else:
            _once(memo, low_key, lambda: run_stage(ex, ref, device, 1, args, xla_options=())[0])
    wide_key = ("wider",) + low_key[1:]

    def wide():
        with captured_if_printing(ref.text):  # its float64 evaluations call the user's callbacks, unasked
            return reference_evaluations(ex, ref, device, args)

    _once(memo, wide_key, wide)
    label = f"{ex.spec.title}:{ref.name}" if foreign else ref.name
    return memo[wide_key].reference(label, memo[low_key], ex.spec.title)


_MAKING_LOCK = threading.Lock()
_making: dict = {}  # (id(memo), key) -> the lock held while that entry is made


def _once(memo: dict, key: tuple, make) -> None:
    """``memo[key] = make()`` unless it is there, once: a caller that finds it being made (the panel's work
    ahead, ``warm_reference``, then a Run) waits for it instead of making it again."""
    if key in memo:
        return
    with _MAKING_LOCK:
        lock = _making.setdefault((id(memo), key), threading.Lock())
    with lock:
        if key not in memo:
            memo[key] = make()
    with _MAKING_LOCK:
        _making.pop((id(memo), key), None)


def warm_reference(ex: Explored, device: str) -> None:
    """Make the reference that runs of ``ex`` on ``device`` are checked against (``remembered_reference``) before
    the first run asks for it: the panel calls it on a thread of its own once it shows. Nothing where the
    program calls back into Python (making its reference would call the user's callbacks unasked)."""
    ref = ex.reference_stage()
    if host_callback_count(ref.text):
        return
    remembered_reference(ex, getattr(ex, "_refs", {}), device, None)


def runs_table(ex: Explored, names: Sequence[str], device: str | None, repeat: int):
    """Each stage of ``names`` run on ``device``, a row each: stage, median ms, speed-up over the
    reference (else over the first stage that ran), whether the check passed, the largest relative
    error, and the first line of the error of a stage that could not run (the others still run)."""
    import pandas as pd

    rows, base = [], None
    for name in names:
        try:
            r = ex.run(name, device=device, repeat=repeat)
        except Exception as e:  # one stage that cannot run must not hide the others
            rows.append({"stage": name, "median_ms": None, "speedup": None, "check_passed": None,
                         "max_rel_err": None, "error": str(e).splitlines()[0]})
            continue
        base = base or (r.timing.median if name == REFERENCE or not rows else None)
        rows.append({"stage": name, "median_ms": r.timing.median * 1e3,
                     "speedup": (base / r.timing.median) if base else None,
                     "check_passed": r.check.passed, "max_rel_err": r.check.max_rel, "error": ""})
    return pd.DataFrame(rows)


_XLA_INPUT = "xla:before_optimizations"


def refuse_unfaithful_hlo(ex: Explored, stage: Stage, device: str, args: Any, memo: dict) -> None:
    """Before an XLA stage runs: WorkbenchError when the way back from HLO to StableHLO (``pipeline.hlo_stage``)
    does not keep this program's meaning. ``xla:before_optimizations`` is the module XLA was given -- the last
    MLIR stage --, so turned back it must compute what that stage computes (the per-dtype comparison of
    ``compare_outputs``: the same module, compiled twice): both are run once per trace, device and arguments
    (the verdict kept in the trace's memo, else in ``memo``). Where they differ, the conversion lost something
    the program needs (a custom call's operand layouts, say) and no XLA stage of it is run: a failed check
    would accuse XLA of the converter's loss. (Not against the as-lowered program: an MLIR pipeline that
    miscompiles hands XLA a module that computes other numbers, faithfully.)"""
    if stage.group != "xla":
        return
    first = next((s for s in ex.stages if s.name == _XLA_INPUT and not s.error), None)
    if first is None:
        return
    given = ex.default_run_stage()
    traced = ex.spec.traced
    memo = traced.memo if traced is not None else memo
    key = ("hlo-faithful", text_hash(given.text), device, "traced" if args is None else args_key(args))
    if key not in memo:
        outputs = run_stage(ex, first, device, 1, args, xla_options=())[0]
        memo[key] = compare_outputs(outputs, run_stage(ex, given, device, 1, args, xla_options=())[0], given.name)
    verdict = memo[key]
    if not verdict.passed:
        raise WorkbenchError(
            f"stage {stage.name!r} cannot run faithfully: turned back from HLO into StableHLO, {_XLA_INPUT} (the "
            f"module XLA was given) does not compute what {given.name} computes ({verdict!r}), so the way back "
            "loses something this program needs (a custom call's operand layouts, a callback's settings). Its XLA "
            "stages are not run; the last MLIR stage runs as XLA compiles it.")
