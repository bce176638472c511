"""The panel's Cost tab: what the component "cost" (extensions/hlo-workbench-lab/src/components/cost.ts, which draws
the report's and the saved view's cost too) shows of an Exploration: every stage's cost (``ex.cost()``), the stages
served from a cache (their seconds are their first run's) and those that changed the module (marked in the chart the
component draws from the rows); the per-op cost of stage B, or why it has none."""
from __future__ import annotations

from ...analysis.cost.table import summary_columns
from ...artifacts.jsonout import table_json
from ...errors import WorkbenchError
from . import actions

__all__ = ["cost_data"]

_INSTRUCTION_COLUMNS = ("name", "op", "shape", "runs", "flops", "transcendentals", "bytes", "note")
_COSTLIEST = 100  # an HLO stage's instructions shown


def cost_data(name: str, ex, stage: str, pending: bool = False) -> dict:
    """What the tab shows of ``ex`` (an Exploration, or its stages so far while XLA compiles: ``pending``) and of
    ``stage``, stage B; ``name`` is the variable the Python lines act on."""
    every = actions.cost(name)
    df = every.call(ex)
    return {"python": every.python, "table": table_json(df[summary_columns(df)], "cost"),
            "cached": [s.name for s in ex.stages if s.cached], "changed": [s.name for s in ex.stages if s.changed],
            "note": "XLA is compiling: its stages' rows come with them" if pending else "",
            "ops": _per_op(actions.cost(name, stage), ex, stage)}


def _per_op(act: actions.Action, ex, stage: str) -> dict:
    """``ex.cost(stage)``: an HLO stage's instructions costliest first (XLA's own analysis of each), an MLIR
    stage's ops summed by op kind; or why there are none."""
    try:
        ops = act.call(ex)
    except WorkbenchError as e:
        return {"stage": stage, "title": f"Per op of {stage}", "words": f": {e}", "error": True}
    if "computation" in ops:  # an XLA HLO stage: one row per instruction, as XLA costs it
        top = ops.sort_values(["flops", "bytes"], ascending=False, na_position="first").head(_COSTLIEST)
        more = f" (the costliest {_COSTLIEST} of {len(ops)})" if len(ops) > _COSTLIEST else ""
        return {"stage": stage, "title": f"Per instruction of {stage}", "python": act.python,
                "words": ": XLA's HloCostAnalysis of each instruction alone, for all its runs (a fusion is one kernel; a "
                         f"loop body's instructions run trip-count times, runs){more}",
                "table": table_json(top[[c for c in _INSTRUCTION_COLUMNS if c in top]], "cost")}
    agg = (ops.groupby("op", as_index=False)
           .agg(count=("op", "size"), flops=("flops", "sum"), transcendentals=("transcendentals", "sum"),
                bytes=("bytes", "sum"))
           .sort_values(["flops", "bytes"], ascending=False))
    return {"stage": stage, "title": f"Per op of {stage}", "python": act.python, "words": ", summed by op",
            "table": table_json(agg, "cost")}
