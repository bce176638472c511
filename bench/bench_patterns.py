"""Time of "which patterns apply here" on the attention-gradient example, all patterns of the catalog.

Prints the wall time of ``ex.applicable("stablehlo")`` with the worker pool (target: under 5 s on this
machine) beside the same scan on one worker, measured in one run.
Run:  .venv/bin/python bench/bench_patterns.py [--repeat 3]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench import examples
import workbench as wb
import workbench.pipeline.worker as worker


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    n = len(wb.patterns())
    pools = {"pool": worker.WorkerPool(), "one worker": worker.WorkerPool(1)}
    for p in pools.values():  # start every worker before timing, as a warm session has them
        p.map("run_each", [[ "canonicalize"] for _ in p.workers], lambda c: ("module {\n}\n", c, False))
    times = {k: [] for k in pools}
    for _ in range(a.repeat):
        for name, pool in pools.items():
            worker._POOL = pool
            t = time.perf_counter()
            found = ex.applicable("stablehlo", progress=False)
            times[name].append(time.perf_counter() - t)
    print(f"attention gradient, {ex['stablehlo'].lines} StableHLO lines, {n} patterns, {len(found)} apply")
    for name, ts in times.items():
        print(f"  {name:10s} ({len(pools[name].workers)} workers): median {statistics.median(ts):.2f} s")
    print(f"ratio pool / one worker = {statistics.median(times['pool']) / statistics.median(times['one worker']):.2f}")
    print(f"applicable() with the pool: {statistics.median(times['pool']):.2f} s   target < 5 s")


if __name__ == "__main__":
    main()
