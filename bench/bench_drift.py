"""What finding a drift costs (issue 30), measured side by side in one run.

Per program, interleaved rounds, medians:
  drift / run        ``ex.drift()`` (the tap modules compiled and run, the reference promoted to float64 or run
                     on nudged inputs, the search) over ``ex.run(repeat=1)`` (a compile, a call and the
                     numeric check against the same references): a run is what a user does before asking
  runs, probes       the module executions the search made and its rounds (no time: counts)
  2 log2(ops) + 4    the bound the planted miscompiles are held to in tests/test_drift.py
Programs: a Flax NNX transformer AdamW step (tests.corpus nnx_transformer: 720 ops, no drift), the same step
with its learning rate changed in its last MLIR stage (a planted drift), and the no_nan fold fed a NaN.

Run:  .venv/bin/python bench/bench_drift.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax.numpy as jnp  # noqa: E402

import workbench as wb  # noqa: E402


def sanitize(x, w):
    x = jnp.where(jnp.isnan(x), 0.0, x)
    return jnp.tanh(x @ w).sum(0)


def programs():
    from tests.corpus import program

    inst = program("nnx_transformer").build()
    nnx_ex = wb.explore(inst.fn, *inst.args)
    last = nnx_ex.default_run_stage()
    rate = "dense<-1.000000e-03>"  # adamw's learning rate, scaled in the last MLIR stage
    edited = None
    if last.text_with_locations.count(rate) >= 1:
        edited = dataclasses.replace(last, name=f"{last.name} edited",
                                     text=last.text.replace(rate, "dense<-1.100000e-03>"),
                                     text_with_locations=last.text_with_locations.replace(rate, "dense<-1.100000e-03>"))
    xs = jnp.arange(32.0).reshape(4, 8).at[1, 2].set(jnp.nan)
    nan_ex = wb.explore(sanitize, xs, jnp.ones((8, 3)) / 8, no_nan=True)
    out = [("nnx_transformer", nnx_ex, None), ("no_nan fed a NaN", nan_ex, None)]
    if edited is not None:
        out.insert(1, ("nnx_transformer, lr edited", nnx_ex, edited))
    return out


def clock(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    print(f"{'program':30s} {'drift s':>8s} {'run s':>7s} {'drift/run':>9s} {'found':>6s} {'runs':>5s} "
          f"{'probes':>6s} {'ops':>5s} {'bound':>6s}")
    for name, ex, stage in programs():
        drift_s, run_s, last = [], [], None
        for _ in range(a.repeat):  # interleaved: the two sides see the same machine
            ex._tap_sides.clear()
            holder = {}
            drift_s.append(clock(lambda: holder.update(d=ex.drift(stage))))
            run_s.append(clock(lambda: ex.run(stage, repeat=1)))
            ex._refs.clear()
            if ex.spec.traced is not None:  # the run makes its references again, as the drift does
                ex.spec.traced.memo.clear()
            last = holder["d"]
        d, r = statistics.median(drift_s), statistics.median(run_s)
        print(f"{name:30s} {d:8.2f} {r:7.2f} {d / r:9.2f} {str(last.found):>6s} {last.runs:5d} {last.probes:6d} "
              f"{last.ops:5d} {2 * math.log2(max(2, last.ops)) + 4:6.1f}", flush=True)


if __name__ == "__main__":
    main()
