"""XLA compiling in the background, measured on a transformer-block gradient.

Prints, never asserts:
  responsiveness  a 1 ms sleep loop on the main thread while XLA compiles on the background thread:
                  how late it wakes (a compile holding the GIL would hold it for the whole compile)
  overlap         a toggle's MLIR stages built while the previous toggle's compile runs, against
                  the same work with XLA idle
  toggle          click -> MLIR stages and click -> XLA stages, as the panel sees them now (the
                  MLIR stages need not wait for XLA), against MLIR + compile one after the other
Run:  .venv/bin/python bench/bench_speculative.py [--layers 2] [--repeat 3]
"""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench as wb
import workbench.examples.attention as att
from workbench.pipeline.build import clear_caches, xla_compiles

TOGGLES = ["dot_transpose", "transpose_dot_reorder", "transpose_transpose"]


def make(layers: int):
    params, x = att.args(batch=4, seq=64, d=128, hidden=256)

    def loss(ps, x):
        for p in ps:
            x = att.block(p, x)
        return jnp.mean(x ** 2)

    return jax.grad(loss), ([params] * layers, x)


def wakeups(until: threading.Event) -> list[float]:
    late = []
    while not until.is_set():
        t = time.perf_counter()
        time.sleep(0.001)
        late.append(time.perf_counter() - t - 0.001)
    return sorted(late)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    f, args = make(a.layers)
    wb.explore(f, *args).stages  # warm: the worker, the patterns, JAX's tracing

    late, compile_s = [], []
    for _ in range(a.repeat):
        clear_caches()
        ex = wb.explore(f, *args)  # its compile starts now, on the background thread
        done = threading.Event()
        ex.xla_future().add_done_callback(lambda _f: done.set())
        late += wakeups(done)
        compile_s.append(ex.xla_result.seconds)
    late.sort()
    print(f"transformer-block gradient, {a.layers} layers: XLA compile median {statistics.median(compile_s):.2f} s")
    print(f"responsiveness: {len(late)} wake-ups of a 1 ms sleep during the compiles: late by median "
          f"{late[len(late) // 2] * 1e3:.2f} ms, p99 {late[int(0.99 * len(late))] * 1e3:.1f} ms, "
          f"max {late[-1] * 1e3:.1f} ms")

    alone, during, mlir, xla, serial = [], [], [], [], []
    for _ in range(a.repeat):
        for toggle in TOGGLES:
            clear_caches()
            base = wb.explore(f, *args)
            base.stages  # XLA idle from here
            t = time.perf_counter()
            quiet = base.with_patterns(disable=[toggle])
            alone.append(time.perf_counter() - t)
            quiet.stages
            clear_caches()
            base = wb.explore(f, *args)
            base.stages
            other = base.with_xla(disable=["algsimp"])  # a compile now running in the background
            t = time.perf_counter()
            busy = base.with_patterns(disable=[toggle])
            during.append(time.perf_counter() - t)
            other.stages, busy.stages
            # the toggle as the panel sees it: its MLIR stages, then its XLA stages
            clear_caches()
            base = wb.explore(f, *args)
            base.stages
            t = time.perf_counter()
            ex = base.with_patterns(disable=[toggle])
            mlir.append(time.perf_counter() - t)
            ex.stages
            xla.append(time.perf_counter() - t)
            serial.append(mlir[-1] + ex.xla_result.seconds)
    med = statistics.median
    print(f"overlap: a toggle's MLIR stages in {med(alone):.3f} s with XLA idle, {med(during):.3f} s while "
          f"another compile runs (ratio {med(during) / med(alone):.2f})")
    print(f"toggle: click -> MLIR stages {med(mlir):.3f} s, -> XLA stages {med(xla):.3f} s; before this change "
          f"the panel showed nothing until MLIR + compile, {med(serial):.3f} s")
    print(f"compiles run: {xla_compiles()}")


if __name__ == "__main__":
    main()
