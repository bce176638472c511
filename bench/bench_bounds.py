"""Bounded work on big programs (issue 25, defect 6): per-op cost, graph layout and report, at growing sizes.

The program is the gradient of a stack of ``L`` matmul + tanh layers, unrolled by JAX; 25 / 100 / 400
layers give an ``xla:optimized`` of about 1,200 / 5,000 / 20,000 lines. Each section prints, for each
size, what was done (counted) and how long it took, and the ratio to the size before side by side with
the ratio of the text: work that grows like the text has ratios alike; quadratic work has the square of
the text's ratio (column ``lines^2``).

* cost: ``ex.cost("xla:optimized")`` (``hlo_op_costs``: ``hlo_work``'s counts, then XLA's analyses in
  the worker) and ``ex.cost("stablehlo")`` (the analytic model: ``model_work``). Before this issue the
  XLA one was quadratic: a tester measured 0.10 / 0.92 / 49 s at 1k / 5k / 20k lines.
* graph: ``dot`` on gradients of growing named-scope stacks, drawn whole (``max_ops`` and ``draw_limit``
  above their size), with ``--layout-seconds``: SVG, or GraphTooLargeError once the limit passes, and
  the ``dot`` processes left (none). Before, ``dot`` had no limit: 118 s at 984 ops, over 600 s at 3,008.
  Then the same stage with the default ``draw_limit``: its hierarchy's top level, whatever ``max_ops``.
* report: ``render_report`` with no limits (what a report did before: every text normalized, every
  pair diffed; 105 s and 3.1 GB at 20k lines for the tester) and with ``--limits`` (default: the
  report's own; ``small``: an eighth of them, so that the caps bite at these sizes), side by side.

Times are printed, never asserted; tests/test_bounds.py asserts the counts.

Run:  .venv/bin/python bench/bench_bounds.py [--layers 25 100 400] [--blocks 2 3 4 6] [--layout-seconds 10]
                                            [--limits default|small] [--skip cost,graph,report]
"""
import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench as wb
from workbench.artifacts import report_texts
from workbench.analysis.cost import hlo_op_costs, hlo_work, model_work, op_costs
from workbench.analysis.graph import DRAW_LIMIT, GraphTooLargeError, stage_graph, stage_level
from workbench.artifacts.report import render_report
from workbench.artifacts.report_texts import LIMITS, ReportLimits
from workbench.stages import Stage

from tests.corpus.scoped import scoped_model, scoped_params
from tests.test_bounds import dot_children, stack

UNLIMITED = ReportLimits(text_chars=10**12, total_chars=10**12, diff_lines=10**12, diff_budget=10**12,
                         graph_seconds=LIMITS.graph_seconds)
SMALL = ReportLimits(text_chars=LIMITS.text_chars // 8, total_chars=LIMITS.total_chars // 8,
                     diff_lines=LIMITS.diff_lines // 8, diff_budget=LIMITS.diff_budget // 8,
                     graph_seconds=LIMITS.graph_seconds)


def cold() -> None:
    """Forget every result the workbench keeps (its functools caches), so that each timing starts cold."""
    for name, module in list(sys.modules.items()):
        if name.startswith("workbench"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def ratio(now, before) -> str:
    return f"{now / before:7.2f}" if before else f"{'':>7}"


def cost_section(layers: list[int]) -> None:
    print("\n# ex.cost(stage): work counted, seconds; ratios to the size before")
    print(f"{'layers':>6} {'stage':14} {'lines':>7} {'work':>9} {'seconds':>8} | {'lines':>7} {'lines^2':>7} "
          f"{'work':>7} {'seconds':>7}   work counted")
    hlo_op_costs(jax.jit(jnp.sin).lower(1.0).compile().as_text())  # the worker started, outside the timings
    before: dict[str, tuple] = {}
    for n in layers:
        fn, args = stack(n)
        lo = jax.jit(fn).lower(*args)
        texts = {"xla:optimized": lo.compile().as_text(), "stablehlo": lo.as_text()}
        for name, text in texts.items():
            lines = text.count("\n")
            if name == "stablehlo":
                w = model_work(text)
                work, what = w.ops_visited, f"ops visited by the model ({w.ops_costed} costed)"
                cold()
                _, seconds = timed(lambda: op_costs(text))
            else:
                w = hlo_work(text)
                work = w.visited + w.shapes_mapped + w.fused_counted
                what = (f"instruction visits {w.visited} + shapes mapped {w.shapes_mapped} + fused counted "
                        f"{w.fused_counted}; {w.modules} modules, {w.module_chars:,} chars to XLA")
                cold()
                _, seconds = timed(lambda: hlo_op_costs(text))
            b = before.get(name)
            r = (ratio(lines, b[0]), ratio(lines**2, b[0] ** 2), ratio(work, b[1]), ratio(seconds, b[2])) if b \
                else ("",) * 4
            print(f"{n:6d} {name:14} {lines:7d} {work:9d} {seconds:8.2f} | {r[0]:>7} {r[1]:>7} {r[2]:>7} {r[3]:>7}"
                  f"   {what}", flush=True)
            before[name] = (lines, work, seconds)


def graph_section(blocks: list[int], seconds: float) -> None:
    print(f"\n# ex.graph: dot on whole gradients, laid out within {seconds:g} s")
    print(f"{'blocks':>6} {'ops':>5} {'nodes':>6} {'edges':>6} {'seconds':>8}  {'outcome':30} dot left")
    x = jnp.ones((8, 16))
    stage = None
    for b in blocks:
        lo = jax.jit(jax.grad(scoped_model)).lower(scoped_params(b), x)
        stage = Stage("stablehlo", "trace", lo.as_text(), "lower", True, None, None,
                      text_with_locations=lo.as_text(debug_info=True))
        g = stage_graph(stage, max_ops=10**6, draw_limit=10**6, layout_seconds=seconds)
        try:
            _, took = timed(lambda: g.pipe(format="svg"))
            outcome = "SVG"
        except GraphTooLargeError as e:
            took, outcome = e.seconds, "GraphTooLargeError (dot stopped)"
        ops = stage_level(stage).total
        print(f"{b:6d} {ops:5d} {g.nodes:6d} {g.edges:6d} {took:8.2f}  {outcome:30} {len(dot_children())}",
              flush=True)
    b = DRAW_LIMIT // 120 + 1  # about 127 ops a block
    lo = jax.jit(jax.grad(scoped_model)).lower(scoped_params(b), x)
    stage = Stage("stablehlo", "trace", lo.as_text(), "lower", True, None, None,
                  text_with_locations=lo.as_text(debug_info=True))
    g, took = timed(lambda: stage_graph(stage, max_ops=10**6))
    _, laid = timed(lambda: g.pipe(format="svg"))
    print(f"{b} blocks, {stage_level(stage).total} ops, max_ops=10**6 and the default draw_limit ({DRAW_LIMIT}): "
          f"{g.nodes} nodes (the hierarchy's top level), read and drawn in {took:.2f} s, laid out in {laid:.2f} s")


def counted_report(ex, limits: ReportLimits) -> dict:
    seen = {"normalized": 0, "diff lines": 0}
    normalize, diff_texts = report_texts.normalize, report_texts.diff_texts

    def counted_normalize(text):
        seen["normalized"] += len(text)
        return normalize(text)

    def counted_diff(a, b, *names):
        d = diff_texts(a, b, *names)
        seen["diff lines"] += len(d.before) + len(d.after)
        return d

    report_texts.normalize, report_texts.diff_texts = counted_normalize, counted_diff
    cold()
    try:
        page, seen["seconds"] = timed(lambda: render_report(ex, limits=limits))
    finally:
        report_texts.normalize, report_texts.diff_texts = normalize, diff_texts
    seen["page"] = len(page)
    return seen


def report_section(layers: list[int], limits: ReportLimits) -> None:
    print(f"\n# ex.report: no limits (as before) | {dataclasses.asdict(limits)}")
    cols = ("seconds", "normalized", "diff lines", "page")
    print(f"{'layers':>6} {'texts':>10} | " + " ".join(f"{c:>11}" for c in cols) + " | "
          + " ".join(f"{c:>11}" for c in cols) + " | page ratio")
    counted_report(wb.explore(jnp.sin, 1.0), limits)  # imports (matplotlib) outside the timings
    for n in layers:
        fn, args = stack(n)
        ex = wb.explore(fn, *args)
        distinct = sum(len(t) for t in {s.text for s in ex.stages if not s.error})
        off, on = counted_report(ex, UNLIMITED), counted_report(ex, limits)
        fmt = lambda d: " ".join(f"{d[c]:11.2f}" if c == "seconds" else f"{d[c]:11,d}" for c in cols)  # noqa: E731
        print(f"{n:6d} {distinct:10,d} | {fmt(off)} | {fmt(on)} | {on['page'] / off['page']:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, nargs="+", default=[25, 100, 400])
    ap.add_argument("--blocks", type=int, nargs="+", default=[2, 3, 4, 6])
    ap.add_argument("--layout-seconds", type=float, default=10.0)
    ap.add_argument("--limits", choices=["default", "small"], default="default")
    ap.add_argument("--skip", default="", help="sections to leave out: cost,graph,report")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    if "cost" not in skip:
        cost_section(a.layers)
    if "graph" not in skip:
        graph_section(a.blocks, a.layout_seconds)
    if "report" not in skip:
        report_section(a.layers, LIMITS if a.limits == "default" else SMALL)


if __name__ == "__main__":
    main()
