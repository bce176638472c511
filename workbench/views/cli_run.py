"""``hlo-workbench run`` and ``cost``: a stage on the device with its numbers checked, and what each stage costs.

    hlo-workbench run train.py:step                      # the last MLIR stage, timed and checked (exit 1: failed)
    hlo-workbench run train.py:step --stage stablehlo --stage enzyme-hlo-patterns#3 --repeat 50
    hlo-workbench run train.py:step --no-nan --json      # for a CI job: a miscompile is exit 1
    hlo-workbench cost mlp                               # one row per stage: ops, flops, bytes, XLA's numbers
    hlo-workbench cost mlp --roofline "TPU v5e" --json   # with roofline times; every column

``run`` is ``ex.run(stage, repeat=N)`` on the Exploration of TARGET (``cli_common.explore_target``), or with
several ``--stage`` ``ex.compare(stages, repeat=N)`` and each of those runs: the timing, and the check of its
outputs against the program as lowered (promoted to float64 where it can be), leaf by leaf. ``cost`` is
``ex.cost()``: the analytic model's ops, flops, transcendentals and bytes of every stage, XLA's own numbers
and the compiled module's memory analysis.
"""
from __future__ import annotations

import math
import sys

from ..errors import WorkbenchError
from .cli_common import EXIT_FOUND, EXIT_OK, command_parser, emit, explore_target, records
from .cli_schema import STAGE_FAILURE, array, boolean, integer, maybe, number, record, rows, string

__all__ = ["COST_SCHEMA", "RUN_ROW", "RUN_SCHEMA", "add_commands", "cmd_cost", "cmd_run", "run_document"]


# -- what the documents hold ------------------------------------------------------------------------------------

_LEAF = {"path": string(), "shape": array(integer()), "dtype": string(), "max_abs": number(), "max_rel": number(),
         "tolerance": number(), "passed": boolean(), "lowered_abs": number(), "rule": string(), "computed": string()}
_CHECK = record({
    "passed": boolean(), "reference": string(description="what the outputs were checked against"),
    "kind": {"enum": ["float64", "stage"]}, "source": string(description="promoted, traced or as-lowered"),
    "note": string(description="why there was no float64 evaluation ('' where there was)"),
    "tolerance_from": string(), "max_abs": maybe(number()), "max_rel": maybe(number()),
    "lowered_abs": maybe(number(description="the as-lowered program's own error against float64")),
    "failed": array(string(), description="the paths of the leaves that failed"),
    "leaves": rows(_LEAF, description="Check.table(): one row per output leaf, in the output's order "
                   "(null: not finite)")})
RUN_ROW = record({  # one stage run: run_document(r); report --json holds one too
    "stage": string(), "device": maybe(string()),
    "timing": maybe(record({"median_ms": number(), "min_ms": number(),
                            "times_ms": array(number(), description="each call after the warm-up, in milliseconds")})),
    "speedup": maybe(number(description="over the reference stage (else the first that ran); with several --stage")),
    "check": maybe(_CHECK),
    "error": maybe(string(description="why the stage could not run (with several --stage; null: it ran)"))})
RUN_SCHEMA = record({
    "passed": boolean(description="every stage ran and its check passed (exit 0)"),
    "runs": array(RUN_ROW, description="one per stage, in the order given"),
    "failed": STAGE_FAILURE, "summary": string()})

_COST_ROW = record({"stage": string(), "group": string()}, closed=False)
COST_SCHEMA = record({
    "columns": array(string(), description="every column of ex.cost(), in order"),
    "roofline": maybe(string(description="the device whose peaks gave the roofline times (--roofline)")),
    "dtype": string(), "failed": STAGE_FAILURE,
    "rows": array(_COST_ROW, description="ex.cost(): one row per stage, every column (null: none)"),
    "ops": maybe(record({"stage": string(), "columns": array(string()),
                         "rows": array(record({}, closed=False), description="one row per op, in the stage's order")},
                        description="ex.cost(STAGE) of --ops STAGE: an MLIR stage's ops by the analytic model, an "
                        "XLA stage's instructions by XLA's HloCostAnalysis (null: not asked)"))})


# -- run ----------------------------------------------------------------------------------------------------


def _finite(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def run_document(r, speedup: float | None = None) -> dict:
    """The --json fields of one RunResult: its timing and its check, leaf by leaf."""
    c = r.check
    check = None if c is None else {
        "passed": c.passed, "reference": c.reference, "kind": c.kind, "source": c.source, "note": c.note,
        "tolerance_from": c.tolerance_from, "max_abs": _finite(c.max_abs), "max_rel": _finite(c.max_rel),
        "lowered_abs": _finite(c.lowered_abs), "failed": [leaf.path for leaf in c.leaves if not leaf.passed],
        "leaves": records(c.table(), list(_LEAF)) if c.leaves else []}
    t = r.timing
    return {"stage": r.stage, "device": r.device, "speedup": _finite(speedup), "check": check, "error": None,
            "timing": {"median_ms": t.median * 1e3, "min_ms": t.min * 1e3, "times_ms": [s * 1e3 for s in t.times]}}


def _leaf_table(c) -> str:
    """Check.table() for a terminal: the failing leaves first, errors in three digits."""
    import pandas as pd

    df = c.table()
    df = pd.concat([df[~df.passed], df[df.passed]])
    for col in ("max_abs", "max_rel", "tolerance", "lowered_abs"):
        df[col] = df[col].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}")
    df["shape"] = df["shape"].map(lambda s: "[" + ",".join(map(str, s)) + "]")
    df["passed"] = df["passed"].map({True: "yes", False: "NO"})
    with pd.option_context("display.width", 250, "display.max_colwidth", 60, "display.max_rows", None):
        return df.to_string(index=False)


def _verdict(c) -> str:
    if c is None:
        return "not checked"
    bad = [leaf.path for leaf in c.leaves if not leaf.passed]
    n = len(c.leaves)
    state = (f"passed ({n} output{'s' * (n != 1)})" if not bad
             else f"FAILED at {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} ({len(bad)} of {n} outputs)")
    low = "" if c.lowered_abs is None else f" (as lowered: {c.lowered_abs:.3g})"
    return f"{state}: max_abs {c.max_abs:.3g}{low}, max_rel {c.max_rel:.3g} vs {c.reference}"


def print_run(r) -> None:
    """The human form of one run: timing, the times, the check's verdict and its table."""
    t = r.timing
    print(f"# {r.stage} on {r.device}: median {t.median * 1e3:.3f} ms, min {t.min * 1e3:.3f} ms "
          f"({len(t.times)} calls after a warm-up)")
    print("  times (ms): " + " ".join(f"{s * 1e3:.3f}" for s in t.times))
    print(f"# check {_verdict(r.check)}")
    if r.check is not None:
        if r.check.note:
            print(f"  (no float64 reference: {r.check.note})")
        if r.check.leaves:
            print()
            print(_leaf_table(r.check))


def _runs(ex, ns) -> tuple[list[dict], list]:
    """Run the stages asked for: one with ex.run (what it raises is status 2), several with ex.compare (a stage
    that cannot run is a row with its error, the others still run). Returns the --json runs and the RunResults."""
    if len(ns.stage or ()) < 2:
        r = ex.run(ns.stage[0] if ns.stage else None, repeat=ns.repeat)
        return [run_document(r)], [r]
    before = len(ex.runs)
    table = ex.compare(ns.stage, repeat=ns.repeat)
    made = ex.runs[before:]
    docs, results = [], []
    for row in table.itertuples(index=False):
        if row.error:
            docs.append({"stage": row.stage, "device": None, "timing": None, "speedup": None, "check": None,
                         "error": row.error})
            continue
        r = next(m for m in made if m.stage == row.stage)
        made.remove(r)
        docs.append(run_document(r, row.speedup))
        results.append(r)
    return docs, results


def _compare_table(docs: list[dict], results: list) -> str:
    """The stages side by side (ex.compare's table with the min too); a stage that could not run says so."""
    import pandas as pd

    ran = {r.stage: r for r in results}
    out = []
    for d in docs:
        r = ran.get(d["stage"])
        row = {"stage": d["stage"], "median_ms": "", "min_ms": "", "speedup": "", "check": "could not run",
               "max_abs": "", "max_rel": ""}
        if r is not None:
            row.update(median_ms=f"{r.timing.median * 1e3:.3f}", min_ms=f"{r.timing.min * 1e3:.3f}",
                       speedup="" if d["speedup"] is None else f"{d['speedup']:.2f}x")
            if r.check is not None:
                row.update(check="passed" if r.check.passed else "FAILED", max_abs=f"{r.check.max_abs:.3g}",
                           max_rel=f"{r.check.max_rel:.3g}")
        out.append(row)
    with pd.option_context("display.width", 250):
        return pd.DataFrame(out).to_string(index=False)


def cmd_run(ns) -> int:
    if ns.repeat < 1:
        raise WorkbenchError(f"--repeat {ns.repeat}: give a number of calls of at least 1")
    ex = explore_target(ns)
    docs, results = _runs(ex, ns)
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration, with its runs, to {path}", file=sys.stderr)
    failed = [d["stage"] for d in docs if d["check"] is not None and not d["check"]["passed"]]
    unrun = [d for d in docs if d["error"]]
    if failed:
        summary = f"the check failed on {', '.join(failed)}"
        if unrun:
            summary += f"; {', '.join(d['stage'] for d in unrun)} could not run"
    elif unrun:
        summary = f"{unrun[0]['stage']} could not run: {unrun[0]['error']}"
    else:
        summary = f"the check passed on {', '.join(d['stage'] for d in docs)}"
    if ex.error is not None:
        summary += f"; the pipeline failed at {ex.error.stage}"
    if not ns.json:
        if len(docs) > 1:
            print(f"# {len(docs)} stages on {results[0].device if results else ex.spec.device}\n")
            print(_compare_table(docs, results))
            for d in unrun:
                print(f"\n{d['stage']} could not run: {d['error']}")
        for r in results:
            print()
            print_run(r)
        if failed or not unrun:  # else the reason is the one line on stderr
            print(f"\n# {summary}")
        if ex.error is not None:
            print(f"\n{ex.error.full if ns.full_errors else ex.error}")
    if unrun and not failed:  # nothing found, and something could not be done: status 2, its reason
        raise WorkbenchError(summary)
    status = EXIT_FOUND if failed or ex.error is not None else EXIT_OK
    if ns.json:
        fail = None if ex.error is None else {"stage": ex.error.stage, "message": str(ex.error)}
        return emit(ns, {"passed": not failed and not unrun, "runs": docs, "failed": fail, "summary": summary},
                    status)
    return status


# -- cost ---------------------------------------------------------------------------------------------------

_HUMAN_COST = ("stage", "ops", "flops", "transcendentals", "bytes", "loops_unknown", "xla_flops", "xla_bytes",
               "collective_bytes", "temp_bytes", "argument_bytes", "output_bytes", "roofline_flops_s",
               "roofline_bytes_s", "roofline_collective_s", "bound", "seconds")


def _count(v) -> str:
    import pandas as pd

    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, str):
        return v
    return f"{int(v):,}" if float(v).is_integer() else f"{v:.3g}"


def _cost_text(df) -> str:
    import pandas as pd

    # a column with no value in any row says nothing; collectives and unknown loops only where there are some
    cols = [c for c in _HUMAN_COST if c in df and (c == "stage" or df[c].notna().any())
            and (c not in ("collective_bytes", "loops_unknown") or df[c].fillna(0).gt(0).any())]
    shown = df[cols].copy()
    for col in shown.columns[1:]:
        shown[col] = shown[col].map(lambda v: f"{v:.3g}" if col.endswith("_s") and isinstance(v, float)
                                    and not math.isnan(v) else _count(v))
    with pd.option_context("display.width", 250, "display.max_rows", None):
        return shown.to_string(index=False)


def _ops_text(df, rows: int) -> str:
    """ex.cost(STAGE) for a terminal: its first ``rows`` ops in the stage's order, the counts with thousands."""
    import pandas as pd

    shown = df.head(rows).copy()
    for col in ("flops", "transcendentals", "bytes"):
        shown[col] = shown[col].map(_count)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60, "display.max_rows", None):
        text = shown.to_string(index=False)
    if len(df) > rows:
        text += f"\n... {len(df) - rows} more ops (--rows N shows more; --json has all)"
    return text


def cmd_cost(ns) -> int:
    if ns.rows < 1:
        raise WorkbenchError(f"--rows {ns.rows}: give a number of rows of at least 1")
    if ns.ops and ns.stage:
        raise WorkbenchError("--ops STAGE shows that stage's row and its ops: give it without --stage")
    ex = explore_target(ns)
    names = [ex.stage(s).name for s in ns.stage or ()]  # an unknown name: UnknownNameError, before any cost
    per_op = None
    if ns.ops:
        per_op = ex.cost(ns.ops)  # a stage with no ops to cost (a jaxpr, backend output): status 2, in words
        names = [ex.stage(ns.ops).name]
    df = ex.cost(device=ns.roofline, dtype=ns.dtype)
    if names:
        df = df.set_index("stage").loc[names].reset_index()
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path}", file=sys.stderr)
    status = EXIT_FOUND if ex.error is not None else EXIT_OK
    if ns.json:
        fail = None if ex.error is None else {"stage": ex.error.stage, "message": str(ex.error)}
        ops = None if per_op is None else {"stage": names[0], "columns": [str(c) for c in per_op.columns],
                                           "rows": records(per_op)}
        return emit(ns, {"columns": [str(c) for c in df.columns], "roofline": ns.roofline, "dtype": ns.dtype,
                         "failed": fail, "rows": records(df), "ops": ops}, status)
    where = f", roofline on {ns.roofline} at {ns.dtype}" if ns.roofline else ""
    counted = df[["flops", "xla_flops"]].notna().any(axis=1)
    shown = df if names else df[counted]  # stages named are shown whatever they hold
    print(f"# Cost of {len(shown)} stage{'s' * (len(shown) != 1)}: the analytic model's counts (loop bodies times "
          f"their trip count), XLA's own (xla_*){where}; --json has every column\n")
    print(_cost_text(shown))
    if len(shown) < len(df):
        print(f"({len(df) - len(shown)} stages hold no module to cost: {', '.join(df.stage[~counted])})")
    if per_op is not None:
        print(f"\n# {names[0]}: {len(per_op)} ops\n")
        print(_ops_text(per_op, ns.rows))
    if ex.error is not None:
        print(f"\n{ex.error.full if ns.full_errors else ex.error}")
    return status


# -- the parsers ----------------------------------------------------------------------------------------------

_RUN_HELP = """\
Run a stage of TARGET on the device and check its numbers (ex.run in Python): the outputs are compared, leaf
by leaf, with the program as lowered evaluated in float64 (the as-lowered module promoted, else the function
traced in float64, else the program's own noise sets the tolerance), next to the as-lowered program's own
error. Prints the timing (median, min, each call's time) and the check's verdict with its table, the failing
leaves first. With several --stage, each runs and is checked side by side (ex.compare).

Exit 0: every check passed; 1: a check failed (a miscompile: the failing leaves are named), or the pipeline
failed before the stage run (the last stage that succeeded ran); 2: a stage could not run (its reason)."""

_COST_HELP = """\
What each stage of TARGET costs (ex.cost() in Python): the analytic model's op count, flops,
transcendentals and bytes (loop bodies times their trip count where it is known), XLA's own numbers for the
same module (xla_flops, xla_bytes: loop bodies once), the bytes sent in collectives, and the compiled
module's memory analysis (temp, argument and output bytes on xla:optimized). --roofline DEVICE adds
lower-bound times from that device's peak rates and which one bounds the stage. --ops STAGE adds the stage's
cost op by op (ex.cost(STAGE)): an MLIR stage's ops by the analytic model, an XLA stage's instructions by
XLA's own HloCostAnalysis.

Exit 0: the table printed; 1: the pipeline failed at a stage (the table has the stages before it)."""


def add_commands(sub) -> None:
    """Add ``run`` and ``cost`` to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "run", "run a stage on the device and check its numbers; exit 1 when a check fails",
                        cmd_run, description=_RUN_HELP, result=RUN_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--stage", action="append", metavar="STAGE", help="the stage to run (default: the last MLIR "
                    "stage, which XLA compiles); repeat it to run several side by side")
    sp.add_argument("--repeat", type=int, default=20, metavar="N", help="calls timed after a warm-up (default 20)")
    sp = command_parser(sub, "cost", "what each stage costs: ops, flops, bytes, XLA's numbers, memory",
                        cmd_cost, description=_COST_HELP, result=COST_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--stage", action="append", metavar="STAGE", help="only this stage's row (repeatable; "
                    "default: every stage)")
    sp.add_argument("--roofline", metavar="DEVICE", help="add roofline times on DEVICE's peaks (H100, H200, "
                    "A100, 'TPU v4', 'TPU v5e', 'TPU v5p', 'TPU v6e', cpu)")
    sp.add_argument("--ops", metavar="STAGE", help="that stage's row and its cost op by op (ex.cost(STAGE))")
    sp.add_argument("--rows", type=int, default=40, metavar="N", help="with --ops: the ops to print (default 40)")
    sp.add_argument("--dtype", default="fp32", help="the peak rate the roofline uses (default fp32; bf16, ...)")
