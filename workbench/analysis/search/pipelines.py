"""One program through several MLIR pipelines, side by side: time, cost, op counts and the numeric check.

``compare_pipelines(explore, fn, *args, pipelines=...)`` traces ``fn`` once (``explore`` is the
facade's, handed down: analysis never imports the facade) and derives the other pipelines from it
(``ex.with_pipeline``), so every row runs on the same arguments against the same reference. Each row
is the last MLIR stage of one pipeline -- the module that pipeline hands to XLA -- run with
``ex.run`` and costed with ``ex.cost()``. ``plot_pipelines(df)`` draws the table.

The presets (``wb.pipelines()``) include "all" (Reactant's default: patterns, batching,
differentiation, clean-up, patterns again), "no_enzyme" (the same without the enzyme
differentiation pass), "none" (no MLIR pass: XLA gets the module as lowered), "upstream"
(canonicalize, cse, symbol-dce: no enzyme-ad needed) and the others Reactant names; any pass pipeline
string works too.

With ``executor`` (``workbench.pipeline.remote``), the work items are the pipelines: each one's MLIR
pipeline runs (its worker requests) go there, every pipeline's at once; then, once XLA has compiled
each one here, the rows are costed and timed here, one after the other (the device, and the times
per call, are this machine's; a pipeline's pass seconds in its stages are the remote worker's).
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Callable, Sequence

from ...ir.ops import op_counts
from ...pipeline.remote import Prefetch, resolve

__all__ = ["DEFAULT_PIPELINES", "compare_pipelines", "plot_pipelines"]

DEFAULT_PIPELINES = ("all", "no_enzyme", "none")
_COST_COLUMNS = ("flops", "transcendentals", "bytes", "xla_flops", "xla_bytes")


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _quartiles(times) -> tuple[float, float]:
    """The first and third quartiles of ``times``, as ``Timing.iqr`` takes them (min and max under 4)."""
    if len(times) < 4:
        return min(times), max(times)
    q = statistics.quantiles(times, n=4)
    return q[0], q[2]


def _row(ex, pipeline: str, device: str, repeat: int) -> dict:
    """One pipeline's row: what its last MLIR stage is, costs, holds and does when run."""
    row: dict = {"pipeline": pipeline}
    if ex.pipeline_error is not None:
        row["error"] = f"the pipeline failed at {ex.pipeline_error.stage}: {_first_line(ex.pipeline_error)}"
    stage = ex.default_run_stage()
    row["stage"] = stage.name
    counts = op_counts(stage.text)
    row["ops"] = sum(counts.values())
    by_dialect = Counter()
    for name, n in counts.items():
        by_dialect[name.partition(".")[0] if "." in name else name] += n
    row.update({f"ops_{d}": n for d, n in sorted(by_dialect.items())})
    import pandas as pd

    try:
        cost = ex.cost()
        found = cost[cost["stage"] == stage.name]
        for col in _COST_COLUMNS:
            if col in found and len(found):
                value = found[col].iloc[0]
                row[col] = None if pd.isna(value) else float(value)  # NA and NaN: unknown
    except Exception as e:  # a cost that cannot be computed must not hide the timing
        row["error"] = row.get("error") or f"cost: {_first_line(e)}"
    if ex.pipeline_error is None:
        try:
            r = ex.run(stage, device=device, repeat=repeat)
            q1, q3 = _quartiles(r.timing.times)
            row.update({"median_ms": r.timing.median * 1e3, "iqr_ms": r.timing.iqr * 1e3, "q1_ms": q1 * 1e3,
                        "q3_ms": q3 * 1e3, "repeat": len(r.timing.times),
                        "check_passed": r.check.passed, "max_abs_err": r.check.max_abs, "max_rel_err": r.check.max_rel})
        except Exception as e:  # one pipeline that cannot run must not hide the others
            row["error"] = f"run: {_first_line(e)}"
    return row


def compare_pipelines(explore: Callable, fn: Callable, *args, pipelines: Sequence[str] = DEFAULT_PIPELINES,
                      device: str | None = None, repeat: int = 20, executor=None, **explore_kwargs):
    """A DataFrame with one row per pipeline (in the order given): ``pipeline``; ``stage``, its last MLIR
    stage (for "none", "stablehlo"); ``median_ms`` and ``iqr_ms``, the median time per call of ``repeat``
    calls after a warm-up and their interquartile range (``ex.run``'s Timing; ``q1_ms``, ``q3_ms`` its ends); ``check_passed``,
    ``max_abs_err``, ``max_rel_err`` (``ex.run``'s numeric check against the float64 evaluation, or
    "stablehlo"); ``flops``, ``transcendentals``, ``bytes`` (the analytic model) and ``xla_flops``,
    ``xla_bytes`` (XLA's cost analysis of that module), from ``ex.cost()``; ``ops`` and ``ops_<dialect>``,
    its op counts (``workbench.ir.ops.op_counts``) by dialect (0 where a dialect has none); ``error``,
    why a pipeline failed or could not run or be costed ("" when none). ``explore_kwargs`` go to
    ``explore`` (pattern toggles, XLA options, ``static_argnums``). ``fn`` may be an Exploration instead
    (no ``args``): its trace and toggles, each pipeline through ``with_pipeline``. ``executor``: see the
    module's docstring."""
    import pandas as pd

    names = list(pipelines)
    if not names:
        raise ValueError("compare_pipelines needs at least one pipeline")
    with Prefetch(resolve(executor)) as ahead:
        if hasattr(fn, "with_pipeline") and not args and not explore_kwargs:  # an Exploration: its trace, its toggles
            first = fn if fn.spec.pipeline == names[0] else fn.with_pipeline(names[0])
        else:
            first = explore(fn, *args, pipeline=names[0], device=device, **explore_kwargs)
        made = {0: first}
        if ahead.remote:  # every pipeline's passes at once there, XLA's compiles done here before any timing
            makes = {i: (lambda name=name: first.with_pipeline(name)) for i, name in enumerate(names[1:], 1)}
            for i, make in makes.items():
                ahead.want(i, make)
            made.update({i: ahead.take(i, make) for i, make in makes.items()})
            for ex in made.values():
                ex.xla_ready(wait=ex.spec.timeout)
    rows = [_row(made[i] if i in made else first.with_pipeline(name), name, device, repeat)
            for i, name in enumerate(names)]
    df = pd.DataFrame(rows)
    dialects = sorted(c for c in df.columns if c.startswith("ops_"))
    df[dialects] = df[dialects].fillna(0).astype(int)
    if "error" not in df:
        df["error"] = ""
    df["error"] = df["error"].fillna("")
    first_cols = ["pipeline", "stage", "median_ms", "iqr_ms", "q1_ms", "q3_ms", "repeat", "check_passed", "max_abs_err", "max_rel_err",
                  *_COST_COLUMNS, "ops"]
    order = [c for c in first_cols if c in df] + dialects + ["error"]
    return df[order + [c for c in df.columns if c not in order]]


def plot_pipelines(df):
    """A matplotlib figure of a ``compare_pipelines`` table, three panels side by side: the median time
    per call with error bars from the first to the third quartile (the IQR), the flops, and the ops
    of the last MLIR stage stacked by dialect."""
    import matplotlib.pyplot as plt

    labels = list(df["pipeline"])
    x = list(range(len(labels)))
    fig, (t_ax, f_ax, o_ax) = plt.subplots(1, 3, figsize=(max(9.0, 1.3 * len(labels) * 3), 3.6))
    median = df["median_ms"].astype(float) if "median_ms" in df else [float("nan")] * len(x)
    if {"q1_ms", "q3_ms"} <= set(df.columns):
        spread = [[m - q for m, q in zip(median, df["q1_ms"].astype(float))],
                  [q - m for m, q in zip(median, df["q3_ms"].astype(float))]]
    else:
        spread = None
    t_ax.bar(x, median, yerr=spread, capsize=4, color="#3465a4")
    t_ax.set_ylabel("ms per call (median; bars: IQR)")
    flops = df["flops"].astype(float) if "flops" in df else [float("nan")] * len(x)
    f_ax.bar(x, flops, color="#73d216")
    f_ax.set_ylabel("flops")
    bottom = [0.0] * len(x)
    for col in sorted(c for c in df.columns if c.startswith("ops_")):
        values = [float(v) for v in df[col]]
        o_ax.bar(x, values, bottom=bottom, label=col[len("ops_"):])
        bottom = [b + v for b, v in zip(bottom, values)]
    o_ax.set_ylabel("ops (last MLIR stage)")
    if o_ax.get_legend_handles_labels()[0]:
        o_ax.legend(fontsize=8)
    for axis, title in ((t_ax, "time"), (f_ax, "flops"), (o_ax, "ops by dialect")):
        axis.set_xticks(x)
        axis.set_xticklabels(labels, rotation=30, ha="right")
        axis.set_title(title)
        axis.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    plt.close(fig)
    return fig
