"""What a module costs: flops, transcendentals and bytes, per op and in total, next to XLA's count.

The input is one stage of a pipeline as MLIR text (StableHLO as JAX lowers it, or Enzyme-JaX output).

* ``op_costs(text)`` -- a DataFrame, one row per op (ops of a function once per call site), costed by
  the analytic model, while-loop bodies multiplied by their trip count where it can be read.
* ``module_cost(text)`` -- the totals as a frozen ``ModuleCost``.
* ``xla_cost(text)`` / ``memory_analysis(text)`` -- what XLA itself says: its ``HloCostAnalysis`` of
  this module's unoptimized HLO on CPU, and the buffer sizes of the compiled CPU executable.
* ``hlo_op_costs(text)`` / ``hlo_loop_costs(texts)`` -- the same for XLA's HLO stages, per instruction
  and in total, by XLA's own HloCostAnalysis (each instruction, or each computation, analysed alone, in
  the worker), under the same loop rule: every computation that runs counted as often as it runs, loop
  bodies times their trip counts (XLA's ``known_trip_count``, else read from the loop's condition), once
  and marked (``loops_unknown``) where a trip count is unknown. ``hlo_module_cost(text)`` is XLA's own
  total, which counts every loop body once. ``hlo_work(text)`` counts what that does before XLA, as
  ``model_work(text)`` does for the model.
* ``roofline(mc, device)`` -- lower-bound run times from the peak rates in ``PEAKS``.
* ``cost_table(ex)`` / ``plot_cost(ex)`` -- all of that for every stage of an Exploration.

The modules, bottom up: ``tensors`` (shapes and attributes an op's cost is read from), ``xla`` (XLA's
own numbers), ``hlo`` (XLA's numbers per HLO instruction), ``rules`` (the cost of one op: the counting conventions), ``rewrites`` (what XLA's
import folds and drops first), ``loops`` (while-loop trip counts), ``model`` (the walk over a module,
and where it still differs from XLA), ``peaks`` (peak rates and the roofline), ``table`` (per stage).
"""
from __future__ import annotations

from ...errors import ModuleParseError
from .hlo import (HLO_COLUMNS, HloLoopCost, HloWork, hlo_loop_costs, hlo_module_cost, hlo_module_costs, hlo_op_costs,
                  hlo_work)
from .model import COLUMNS, KINDS, ModuleCost, located_op_costs, model_work, module_cost, op_costs
from .peaks import PEAKS, DevicePeak, Roofline, cpu_peak, roofline
from .table import cost_rows, cost_table, plot_cost
from .xla import has_custom_calls, memory_analysis, xla_cost

__all__ = [
    "COLUMNS",
    "HLO_COLUMNS",
    "KINDS",
    "PEAKS",
    "DevicePeak",
    "HloLoopCost",
    "HloWork",
    "ModuleCost",
    "ModuleParseError",
    "Roofline",
    "cost_rows",
    "cost_table",
    "cpu_peak",
    "has_custom_calls",
    "hlo_loop_costs",
    "hlo_module_cost",
    "hlo_module_costs",
    "hlo_op_costs",
    "hlo_work",
    "located_op_costs",
    "memory_analysis",
    "model_work",
    "module_cost",
    "op_costs",
    "plot_cost",
    "roofline",
    "xla_cost",
]
