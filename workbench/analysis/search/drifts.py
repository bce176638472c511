"""``drifts_at(op)``: the predicate that pins a drift found by ``ex.drift`` to its op, for ``bisect`` (which
patterns make that op's value go wrong) and ``reduce`` (the smallest module in which it still does).

It holds on an exploration whose last MLIR stage (or the stage named) has an op of the same kind, source
positions and result types as the op the drift found, with a counterpart in the reference ("stablehlo", or
"input" for a module given as text), whose value drifts from it by the numeric check's rule: one probe of
the drift search (``analysis.run.drift.value_drifts``: the two tap modules and the reference's float64 or
nudged evaluation, each run once).
"""
from __future__ import annotations

import numpy as np

from ...errors import WorkbenchError
from ...pipeline.exported import main_signature
from ..run.drift import Drift, DriftOp, value_drifts
from ..run.execute import runnable_source
from ..run.tapping import side_of
from .bisect import BuiltinPredicate
from .explored import Explored

__all__ = ["drifts_at"]


class _DriftsAt(BuiltinPredicate):
    kind, params = "drifts_at", (("op", None, True), ("stage", None, False), ("device", None, False))

    def __init__(self, key: tuple, inputs: tuple = (), **args):
        super().__init__(**args)
        self.key, self.inputs = key, inputs

    @property
    def recipe(self) -> dict:
        """What a reproducer's script decides without the workbench: it cannot tap, so it checks the
        outputs of the module as ``miscompiles`` does (the op's drift shows there in a reduced module,
        whose outputs it feeds); ``drifts_at`` names the op for the reader."""
        return {"kind": "miscompiles", "device": self.args["device"], "drifts_at": self.args["op"]}

    def __call__(self, ex: Explored) -> bool:
        if ex.error and ex.error.stage != "xla:compile":
            return False
        st = ex.default_run_stage() if self.args["stage"] is None else ex.stage(self.args["stage"])
        if st.group == "xla" or st.error:
            return False
        ref = ex.reference_stage()
        here, there = side_of(st, runnable_source(ex, st)), side_of(ref, runnable_source(ex, ref))
        return bool(value_drifts(ex, here, there, self.key, self.args["device"] or ex.spec.device,
                                 self.inputs_for(ex)))

    def inputs_for(self, ex: Explored) -> tuple | None:
        """For a module given as text (reduce's candidates) whose ``@main`` takes what the program the drift was
        found in took, those same arrays (a drift often needs its inputs: a NaN, a cancellation); else None.
        A reproducer of such a module writes them to its inputs.npz."""
        if ex.spec.traced is not None or not self.inputs:
            return None
        ref = ex.reference_stage()
        try:
            wanted, _ = main_signature(ref.text_with_locations or ref.text)
        except WorkbenchError:
            return None
        have = [(tuple(np.shape(a)), str(np.asarray(a).dtype)) for a in self.inputs]
        if have != [(tuple(w.shape), str(np.dtype(w.dtype))) for w in wanted]:
            return None
        return self.inputs


def drifts_at(op, stage: str | None = None, device: str | None = None) -> BuiltinPredicate:
    """Holds when the op ``op`` (a ``Drift`` from ``ex.drift``, or its ``.op``) still drifts: the last MLIR
    stage (or ``stage``) of the exploration it is asked about holds an op of its kind, source positions and
    types whose value leaves its counterpart's in the reference (see the module's docstring). Hand it to
    ``ex.bisect`` for the patterns that make that op go wrong, to ``ex.reduce`` for the smallest module in
    which it still does, and to ``ex.reproducer`` (whose script checks the module's outputs)."""
    found = op.op if isinstance(op, Drift) else op
    if not isinstance(found, DriftOp) or not found.key:
        raise TypeError("drifts_at takes what ex.drift found (a Drift whose .op is not None, or its .op): "
                        f"got {op!r}")
    inputs = op.module_args if isinstance(op, Drift) else ()
    return _DriftsAt(found.key, inputs, op=f"{found.op} at {found.source or 'line ' + str(found.line + 1)}", stage=stage,
                     device=device)
