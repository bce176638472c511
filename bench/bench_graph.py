"""Drawing big stages: the top level of their name-stack hierarchy, and one group opened, timed.

Lowers a stack of named blocks (``block_i/attn``, ``block_i/mlp``, as a model's modules name them) with
JAX -- forward, and its gradient for about 10,000 ops -- and, for each stage, clears the graph caches
and times what ``ex.graph(stage)`` does on a cold cache: read the module (parse, dataflow, name stacks),
build the level, lay it out with dot and write the SVG; then one group opened (caches warm, as in the
panel after the first picture). The canonicalize stage is compared with stablehlo, as ``ex.graph``
compares a pass's stage with its parent: both are read. ``--hlo`` adds XLA's optimized HLO of each
program (compiled once, not timed). Target: a 10,000-op stage's top level in under 2 s.

Run:  .venv/bin/python bench/bench_graph.py [--repeat 3] [--hlo]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench as wb
from workbench.analysis.graph import render, stage_graph, stage_level
from workbench.ir.text import strip_locations
from workbench.stages import Stage

from tests.corpus.scoped import scoped_model, scoped_params


def stages(fn, args, hlo: bool) -> list[tuple[Stage, Stage | None]]:
    """(stage, the parent it is compared with): stablehlo as lowered, canonicalize of it (run by the
    workbench's worker, compared with stablehlo: both read), and XLA's optimized HLO."""
    lowered = jax.jit(fn).lower(*args)
    located = lowered.as_text(debug_info=True)
    first = Stage("stablehlo", "trace", lowered.as_text(), "lower", True, None, None, text_with_locations=located)
    located = wb.opt(located, "canonicalize")
    second = Stage("canonicalize#1", "mlir", strip_locations(located), "canonicalize", True, None, "stablehlo",
                   text_with_locations=located)
    out = [(first, None), (second, first)]
    if hlo:
        out.append((Stage("xla:optimized", "xla", lowered.compile().as_text(), "compile", True, None, None), None))
    return out


def cold() -> None:
    render._dataflow.cache_clear()
    render._scoped_texts.cache_clear()


def timed(fn, repeat: int, before=lambda: None) -> float:
    seconds = []
    for _ in range(repeat):
        before()
        t = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t)
    return statistics.median(seconds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hlo", action="store_true", help="also XLA's optimized HLO of each program")
    a = ap.parse_args()
    x = jnp.ones((8, 16))
    programs = [("forward, 24 blocks", scoped_model, 24), ("gradient, 80 blocks", jax.grad(scoped_model), 80)]
    print(f"{'program':22} {'stage':14} {'ops':>6} {'boxes':>5} {'read':>7} {'top level':>10} {'group':>7}  opened")
    for title, fn, blocks in programs:
        for stage, parent in stages(fn, (scoped_params(blocks), x), a.hlo):
            read = timed(lambda: render._scoped(stage), a.repeat, cold)
            top = timed(lambda: stage_graph(stage, parent).pipe(format="svg"), a.repeat, cold)
            level = stage_level(stage, parent)
            group = next(b.path for b in level.boxes if b.path and b.kind != "fold")
            opened = timed(lambda: stage_graph(stage, parent, group=group).pipe(format="svg"), a.repeat)
            print(f"{title:22} {stage.name:14} {level.total:6d} {len(level.boxes):5d} {read:6.2f}s {top:9.2f}s "
                  f"{opened:6.2f}s  {group}")


if __name__ == "__main__":
    main()
