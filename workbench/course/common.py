"""What several lessons ask of an Exploration, written once."""
from __future__ import annotations

from functools import cache

import workbench as wb
from workbench.ir.ops import op_counts

__all__ = ["last_mlir", "stage_cost", "op_count", "pattern_names"]


def last_mlir(ex):
    """The last MLIR stage: where the MLIR pipeline ends, the module XLA compiles (for a pipeline that
    succeeded, ``ex.default_run_stage()``)."""
    return [s for s in ex.stages if s.group == "mlir"][-1]


def stage_cost(ex, stage: str) -> dict:
    """One stage's row of ``ex.cost()``, as a dict."""
    table = ex.cost()
    return table[table.stage == stage].iloc[0].to_dict()


def op_count(text: str, op: str) -> int:
    """How many ``op`` ops a module's text holds, counted as ``ex.cost()`` counts ops."""
    return op_counts(text)[op]


@cache
def pattern_names(**options) -> frozenset[str]:
    """The names in enzyme-ad's pattern catalog (under ``options`` such as ``no_nan=True``)."""
    return frozenset(wb.patterns(**options).name)
