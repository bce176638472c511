"""Cost of every stage of an Exploration, as one table and one chart.

The per-module numbers come from ``model.py`` and ``xla.py`` (the analytic model and XLA's
HloCostAnalysis of each MLIR stage) and ``hlo.py`` (XLA's HloCostAnalysis of each HLO pass's
module); XLA's own analysis of the optimized module and the compiled
memory analysis come from the compile that produced the XLA stages. Results are cached by stage text, since most stages of a
pipeline leave the module unchanged.

One loop rule in every stage: ``flops``, ``transcendentals`` and ``bytes`` count every loop body times its trip
count where it is known -- read from the loop's counter in the MLIR stages (the analytic model), XLA's
``known_trip_count`` or the loop's counter in the HLO stages (XLA's analysis of each computation, times how
often it runs) -- and once where it is not, counted in ``loops_unknown``. ``xla_*`` are XLA's own totals
for the whole module, which count every loop body once (``flops_body_once`` is ours counted that way).
"""
from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ...ir.text import text_hash
from .hlo import HloLoopCost, hlo_loop_costs, hlo_module_costs
from .model import ModuleCost, module_cost
from .peaks import collective_seconds, roofline
from .xla import has_custom_calls, xla_cost

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["SUMMARY_COLUMNS", "cost_rows", "cost_table", "plot_cost", "summary_columns"]


@functools.lru_cache(maxsize=512)
def _model_cost(key: str, text: str) -> tuple[ModuleCost | None, str]:
    try:
        return module_cost(text), ""
    except Exception as e:  # a module the model cannot read: say so in the row, keep the others
        return None, f"{type(e).__name__}: {e}"


@functools.lru_cache(maxsize=512)
def _xla_cost(key: str, text: str) -> dict | None:
    """XLA's analysis of one MLIR stage (a conversion to HLO each): only for a table that shows it."""
    return xla_cost(text)


# The columns a summary of ``cost_table`` shows (the panel's Cost tab, the offline report), in this order;
# ``summary_columns`` drops collective_bytes where no stage sends any (only a sharded program's do) and
# loops_unknown where every loop's trip count is known.
SUMMARY_COLUMNS = ("stage", "group", "ops", "flops", "transcendentals", "bytes", "loops_unknown", "xla_flops",
                   "xla_bytes", "collective_bytes", "temp_bytes", "seconds", "note")
_SHOWN_WHERE_NONZERO = ("collective_bytes", "loops_unknown")

_BASE_COLUMNS = ["stage", "group", "ops", "flops", "transcendentals", "bytes", "loop_multiplied", "flops_body_once",
                 "loops_unknown", "xla_flops", "xla_transcendentals", "xla_bytes", "collective_bytes", "unknown_custom_calls",
                 "xla_estimate_s", "seconds", "argument_bytes", "output_bytes", "temp_bytes", "alias_bytes", "generated_code_bytes"]
_ROOFLINE_COLUMNS = ["roofline_flops_s", "roofline_bytes_s", "roofline_collective_s", "bound"]
_INT_COLUMNS = ["ops", "flops", "transcendentals", "bytes", "flops_body_once", "loops_unknown", "collective_bytes",
                "unknown_custom_calls"]


def summary_columns(df) -> list[str]:
    """The ``SUMMARY_COLUMNS`` that ``df`` (a ``cost_table``) has, collective_bytes only if a stage sends any,
    loops_unknown only if a stage has a loop of unknown trip count."""
    return [c for c in SUMMARY_COLUMNS if c in df and (c not in _SHOWN_WHERE_NONZERO or df[c].fillna(0).gt(0).any())]


def cost_table(ex, device: str | None = None, dtype: str = "fp32", xla: bool = True, stages=None):
    """One row per stage, as a DataFrame: see ``cost_rows``, whose rows and columns it holds (counts as nullable
    ints)."""
    columns, rows = cost_rows(ex, device=device, dtype=dtype, xla=xla, stages=stages)
    return _frame(rows, columns)


def cost_rows(ex, device: str | None = None, dtype: str = "fp32", xla: bool = True,
              stages=None) -> tuple[list[str], list[dict]]:
    """One row per stage: op counts (total and per dialect) and flops/transcendentals/bytes -- the analytic
    model's for an MLIR stage, XLA's analysis of each computation for an HLO stage --, both with loop bodies
    multiplied by their trip counts where known (``loop_multiplied``) and once where not (``loops_unknown``
    such loops; ``flops_body_once`` the flops with every body once), XLA's own totals for the same module
    (``xla_*``, every loop body once, as XLA counts), ``collective_bytes`` (the bytes each device sends in
    the stage's collectives: the sum of ``bytes_per_device`` of ``ex.collectives(stage)``, 0 for a stage
    without any, <NA> for one with no IR that is read), seconds; memory analysis on ``xla:optimized``;
    with ``device`` (a key of ``PEAKS``) roofline times too: ``roofline_collective_s`` (collective bytes
    at the device's interconnect bandwidth, NaN where that is unknown) on every stage with collective
    bytes, flops and bytes times and ``bound`` on the MLIR stages. ``stages``: only these (default: all).
    Returns the columns, in order, and a dict per stage holding those it has (no pandas: a view model's rows
    are made without importing it, 0.4 s of a fresh kernel's first cell)."""
    stages = ex.stages if stages is None else list(stages)
    hlo_stages = [s for s in stages if s.group == "xla" and not s.error] if xla else []
    # XLA's analysis of the HLO stages runs in the workers meanwhile: this process reads the MLIR stages
    hlo = _BESIDE.submit(_hlo_costs, hlo_stages) if hlo_stages else None
    rows = []
    for s in stages:
        row = {"stage": s.name, "group": s.group, "seconds": s.seconds}
        collective = _collective_bytes(s, row, device)
        if s.is_module:
            _module_row(s, row, device, dtype, xla, collective)
        rows.append(row)
    analysed = hlo.result() if hlo is not None else {}
    for s, row in zip(stages, rows):
        if not s.is_module and s.name in analysed:
            _hlo_row(s, row, analysed[s.name][0])
        xla_result = ex.xla_result if s.name == "xla:optimized" else None  # (reading it waits for XLA)
        if xla_result is not None:
            _optimized_row(s, row, xla_result)
        if not s.is_module and s.name in analysed:
            _loop_row(row, analysed[s.name][1])
    _mark_changed_work(stages, rows)
    dialects = sorted({c for row in rows for c in row if c.startswith("ops_")})
    return _BASE_COLUMNS + (_ROOFLINE_COLUMNS if device else []) + dialects + ["note"], rows


def _mark_changed_work(stages, rows: list[dict]) -> None:
    """An XLA stage whose flops differ from its parent's by more than 5% says so in its note: the pass changed the
    work counted (the loop rule is the same on both sides, so this is the pass's doing)."""
    by_name = {row["stage"]: row for row in rows}
    for s, row in zip(stages, rows):
        parent = by_name.get(s.parent) if s.group == "xla" and s.parent else None
        before, after = (parent or {}).get("flops"), row.get("flops")
        if not before or after is None or abs(after / before - 1) <= 0.05:
            continue
        words = f"flops {after / before - 1:+.0%} against {s.parent}: this pass changed the work counted"
        if s.name.partition(":")[2].partition("#")[0].endswith("fusion"):
            words += " (a producer fused into several consumers is computed in each of them)"
        row["note"] = "; ".join(n for n in (row.get("note"), words) if n)


_BESIDE = ThreadPoolExecutor(1, thread_name_prefix="wb-cost-hlo")  # waits for the workers' HLO analyses


def _collective_bytes(s, row: dict, device: str | None) -> int | None:
    """The bytes each device sends in the stage's collectives, into ``row`` (with their roofline time)."""
    # imported here: analysis/sharding/collectives.py reads tensor sizes with cost.tensors, so importing it while
    # this package loads would load the two halfway into each other
    from ..sharding.collectives import stage_collective_bytes

    try:
        collective = stage_collective_bytes(s)
    except Exception as e:  # noqa: BLE001 -- a module the reader cannot take: say so, keep the row
        collective = None
        row["note"] = f"collectives not read: {type(e).__name__}: {e}"
    row["collective_bytes"] = collective
    if device and collective is not None:
        row["roofline_collective_s"] = collective_seconds(collective, device)
    return collective


def _module_row(s, row: dict, device: str | None, dtype: str, xla: bool, collective: int | None) -> None:
    """An MLIR module stage's analytic costs (per dialect too), roofline and XLA's numbers, into ``row``."""
    key = text_hash(s.text)
    mc, err = _model_cost(key, s.text)
    x = _xla_cost(key, s.text) if xla and mc is not None else None
    if mc is not None:
        row.update(ops=mc.ops, flops=mc.flops, transcendentals=mc.transcendentals, bytes=mc.bytes,
                   loop_multiplied=mc.loop_multiplied, flops_body_once=mc.flops_body_once,
                   loops_unknown=mc.loops_unknown, unknown_custom_calls=mc.unknown_custom_calls)
        if mc.loops_unknown:
            row["note"] = "; ".join(n for n in (row.get("note"), f"{mc.loops_unknown} loop(s) of unknown trip count: "
                                                "body counted once in flops") if n)
        for d, n in mc.ops_by_dialect.items():
            row[f"ops_{d}"] = n
        if device:
            r = roofline(mc, device=device, dtype=dtype, collective_bytes=collective or 0)
            row.update(roofline_flops_s=r.time_flops_s, roofline_bytes_s=r.time_bytes_s, bound=r.bound)
    if x is not None:
        row.update(x)
    if err:
        row["note"] = "; ".join(n for n in (row.get("note"), err) if n)


def _xla_numbers(text: str, cost: dict, note: str) -> dict:
    """XLA's flops, transcendentals and bytes of one module; flops and bytes unknown where it has custom
    calls (XLA sums -1 for each custom call into them)."""
    unknown = has_custom_calls(text)
    return dict(xla_flops=None if unknown else cost.get("flops"), xla_transcendentals=cost.get("transcendentals"),
                xla_bytes=None if unknown else cost.get("bytes accessed"),
                note=note + ("; flops and bytes unknown: custom calls" if unknown else ""))


def _hlo_row(s, row: dict, analysis) -> None:
    """An HLO stage's numbers from XLA's analysis of its module (a string: why there are none)."""
    if isinstance(analysis, str):
        row["note"] = analysis
        return
    cost = {"flops": 0.0, "transcendentals": 0.0, "bytes accessed": 0.0, **analysis}
    row.update(_xla_numbers(s.text, cost, "XLA's analysis of this HLO"))


def _loop_row(row: dict, totals) -> None:
    """An HLO stage's flops, transcendentals and bytes under the loop rule (``HloLoopCost``; a string: why none)."""
    if isinstance(totals, str):
        row["note"] = "; ".join(n for n in (row.get("note"), f"flops by the loop rule unknown: {totals}") if n)
        return
    row.update(flops=totals.flops, transcendentals=totals.transcendentals, bytes=totals.bytes,
               loop_multiplied=totals.loops > totals.loops_unknown, flops_body_once=totals.flops_body_once,
               loops_unknown=totals.loops_unknown, unknown_custom_calls=totals.unknown_custom_calls)
    words = "flops, bytes: XLA's analysis of each computation, loop bodies x trip count"
    if totals.loops_unknown:
        words += f" ({totals.loops_unknown} loop(s) of unknown trip count counted once)"
    row["note"] = "; ".join(n for n in (row.get("note"), words + "; xla_*: XLA's own total, loop bodies once",
                                        totals.note) if n)


def _optimized_row(s, row: dict, xla_result) -> None:
    """xla:optimized: XLA's own analysis after fusion, the compiled memory analysis and the compile's time;
    ``xla_estimate_s`` the compiler's own estimate of the run time where it gives one (the TPU's
    ``optimal_seconds``: a model, not a measurement)."""
    row.update(_xla_numbers(s.text, xla_result.cost, "XLA's analysis after fusion"))
    if xla_result.cost.get("optimal_seconds") is not None:
        row["xla_estimate_s"] = xla_result.cost["optimal_seconds"]
    row.update(xla_result.memory)
    row["seconds"] = xla_result.seconds


def _frame(rows: list[dict], cols: list[str]):
    """The rows as a DataFrame with the columns ``cols`` (blank where no row has it), counts as nullable ints."""
    import pandas as pd

    dialects = [c for c in cols if c.startswith("ops_")]
    df = pd.DataFrame(rows)
    for c in cols:
        if c not in df:
            df[c] = None
    for c in _INT_COLUMNS + dialects:
        df[c] = df[c].astype("Int64")
    return df[cols]


def _hlo_costs(stages) -> dict:
    """XLA's analysis of each HLO stage and its totals under the loop rule, by name; stages with the same text are
    analysed once."""
    texts = list(dict.fromkeys(s.text for s in stages))
    if not texts:
        return {}
    by_text = dict(zip(texts, zip(_hlo_cached(tuple(texts)), _loops_cached(tuple(texts)))))
    return {s.name: by_text[s.text] for s in stages}


@functools.lru_cache(maxsize=32)
def _hlo_cached(texts: tuple[str, ...]) -> tuple:
    return tuple(hlo_module_costs(list(texts)))


@functools.lru_cache(maxsize=32)
def _loops_cached(texts: tuple[str, ...]) -> tuple[HloLoopCost | str, ...]:
    """The loop rule's totals; a loop-free module's from XLA's analysis of it whole (``_hlo_cached``'s)."""
    return tuple(hlo_loop_costs(texts, _hlo_cached(texts)))


def plot_cost(ex, stages=None):
    """A small chart of ops, flops and bytes across the module stages (changed stages marked);
    ``stages``: only these (default: all)."""
    import matplotlib.pyplot as plt

    df = cost_table(ex, xla=False, stages=stages)
    df = df[df["ops"].notna()].reset_index(drop=True)
    changed = {s.name for s in ex.stages if s.changed}
    fig, axes = plt.subplots(3, 1, figsize=(max(6, 0.28 * len(df) + 2), 6), sharex=True)
    for axis, col, label in zip(axes, ("ops", "flops", "bytes"), ("ops", "flops", "bytes (unfused)")):
        values = df[col].astype(float)
        axis.plot(range(len(df)), values, marker="o", color="#3465a4", lw=1.5)
        for i, name in enumerate(df["stage"]):
            if name in changed:
                axis.plot(i, values[i], marker="o", color="#cc0000")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    axes[-1].set_xticks(range(len(df)))
    axes[-1].set_xticklabels(df["stage"], rotation=70, ha="right", fontsize=8)
    axes[0].set_title(f"cost across stages ({ex.spec.title}); red: the stage changed the module")
    fig.tight_layout()
    plt.close(fig)
    return fig
