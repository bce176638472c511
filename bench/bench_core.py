"""Core speed, measured side by side in one run on a transformer-block gradient.

Prints two ratios (targets from the core issue):
  toggle / fresh   re-explore after one pattern toggle vs a fresh explore, all stages (target <= 0.5)
  fresh / bare     a fresh explore of all stages vs bare jax.jit(f).lower(*a).compile() (target <= 2.0)
Run:  .venv/bin/python bench/bench_core.py [--layers 3] [--repeat 5]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench.examples.attention as att
import workbench as wb
from workbench.pipeline.build import clear_caches


def make(layers: int):
    params, x = att.args(batch=4, seq=64, d=128, hidden=256)
    stack = [params] * layers

    def loss(ps, x):
        for p in ps:
            x = att.block(p, x)
        return jnp.mean(x ** 2)

    def grad_step(ps, x):
        return jax.grad(loss)(ps, x)

    return grad_step, (stack, x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--toggle", default="dot_transpose")
    a = ap.parse_args()
    f, args = make(a.layers)
    jax.config.update("jax_enable_compilation_cache", False)

    warm = wb.explore(f, *args)  # starts and warms the worker, as a notebook session would be
    lines = warm["stablehlo"].lines

    def new_f():
        # a fresh function object each time, so neither side reuses JAX's in-memory trace/compile caches
        return lambda *xs: f(*xs)

    def bare():
        t = time.perf_counter()
        jax.jit(new_f()).lower(*args).compile()
        return time.perf_counter() - t

    def fresh():
        clear_caches()
        t = time.perf_counter()
        len(wb.explore(new_f(), *args).stages)
        return time.perf_counter() - t

    def toggle():
        clear_caches()
        ex = wb.explore(new_f(), *args)
        len(ex.stages)
        t = time.perf_counter()
        len(ex.with_patterns(disable=[a.toggle]).stages)
        return time.perf_counter() - t

    def toggle_mlir():
        clear_caches()
        ex = wb.explore(new_f(), *args)
        len(ex.stages)
        t = time.perf_counter()
        ex.with_patterns(disable=[a.toggle])  # the MLIR stages; XLA runs when its stages are asked for
        return time.perf_counter() - t

    results = {k: [] for k in ("bare", "fresh", "toggle", "toggle_mlir")}
    for _ in range(a.repeat):  # interleaved, so every measurement sees the same machine conditions
        for name, fn in (("bare", bare), ("fresh", fresh), ("toggle", toggle), ("toggle_mlir", toggle_mlir)):
            results[name].append(fn())
    results = {k: statistics.median(v) for k, v in results.items()}
    base = wb.explore(f, *args)
    ex = base.with_patterns(disable=[a.toggle])
    changed_final = [s for s in ex.stages if s.group == "mlir"][-1].text != [s for s in base.stages if s.group == "mlir"][-1].text
    print(f"transformer-block gradient: {a.layers} layers, {lines} StableHLO lines, {len(base.stages)} stages")
    print(f"toggled pattern: {a.toggle} (changes the final MLIR module: {changed_final})")
    for k, v in results.items():
        print(f"  {k:12s} median {v * 1e3:8.1f} ms")
    print(f"ratio toggle/fresh (all stages)      = {results['toggle'] / results['fresh']:.2f}   target <= 0.5")
    print(f"ratio toggle/fresh (MLIR stages only)= {results['toggle_mlir'] / results['fresh']:.2f}")
    print(f"ratio fresh/bare                     = {results['fresh'] / results['bare']:.2f}   target <= 2.0")


if __name__ == "__main__":
    main()
