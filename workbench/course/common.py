"""What several lessons ask of an Exploration, written once."""
from __future__ import annotations

from functools import cache

import workbench as wb
from workbench.ir.ops import op_counts

from .judge import Verdict, judge_names

__all__ = ["last_mlir", "stage_cost", "op_count", "pattern_names", "judge_patterns"]


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


def judge_patterns(answer, expected, *, what: str, hint: str = "", **options) -> Verdict:
    """A pattern name or a set of them, judged by ``judge_names`` against enzyme-ad's catalog (under
    ``options`` such as ``no_nan=True``): a name the catalog lacks gets its nearest names there."""
    return judge_names(answer, expected, what=what, known=pattern_names(**options), kind="pattern", hint=hint)
