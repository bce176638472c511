"""A sharded program, measured side by side in one run: the tensor-parallel transformer block of
workbench/examples/attention.py on a 2 x 4 CPU mesh (8 host devices, set before JAX starts).

Prints, never asserts (medians over --repeat rounds, caches cleared each round):
  bare            jax.jit(fn).lower(*args).compile(): what JAX alone pays
  explore         wb.explore(...) to its XLA stages, Shardy's stages and the guard included
  shardy stages   the Shardy stages alone (propagation, closing, comm passes, reshards)
  xla in child    XLA's compile with per-pass dumps, which a sharded module gets in a child process
                  (xla_probe.compile_sharded: XLA's SPMD pipeline can abort), within explore
  run probes      child compiles during ex.run after the explore: the stage run has the explore's verdict;
                  the check's float64 reference is another module, tried once
  run x2 procs    ex.run(processes=2): two jax.distributed processes of 4 devices, start to check
  collectives     ex.collectives() over every stage, its first call
and the ratios explore/bare and (xla in child)/bare.
Run:  .venv/bin/python bench/bench_sharded.py [--repeat 3] [--processes]
"""
import argparse
import os
import statistics
import sys
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.examples import attention  # noqa: E402
from workbench.pipeline import xla_probe# noqa: E402
from workbench.pipeline.build import clear_caches  # noqa: E402


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--processes", action="store_true", help="also time ex.run(processes=2)")
    a = ap.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    args = attention.sharded_args()
    wb.explore(attention.fn, *args).xla_ready(wait=600)  # warm: the worker, the probe child, JAX's tracing
    rows = {k: [] for k in ("bare", "explore", "shardy stages", "xla in child", "run probes", "run x2 procs",
                            "collectives")}
    for _ in range(a.repeat):
        clear_caches()
        jax.clear_caches()  # else the bare compile of the rounds after the first is JAX's in-memory cache
        xla_probe._VERDICTS.clear()
        rows["bare"].append(timed(lambda: jax.jit(attention.fn).lower(*args).compile())[0])
        probes = []
        real = xla_probe.probe_compile

        def counted(payload, timeout=600.0, spare=True):
            s, out = timed(lambda: real(payload, timeout, spare))
            probes.append(s)
            return out

        xla_probe.probe_compile = counted
        try:
            s, ex = timed(lambda: (lambda e: (e.xla_ready(wait=600), e)[1])(wb.explore(attention.fn, *args)))
        finally:
            xla_probe.probe_compile = real
        rows["explore"].append(s)
        rows["xla in child"].append(sum(probes))
        rows["shardy stages"].append(sum(st.seconds or 0.0 for st in ex.stages
                                         if st.name.startswith(("sdy-", "comm-", "optimize-communication"))))
        rows["collectives"].append(timed(ex.collectives)[0])
        before = len(probes)
        xla_probe.probe_compile = counted
        try:
            ex.run(repeat=2)
        finally:
            xla_probe.probe_compile = real
        rows["run probes"].append(len(probes) - before)
        if a.processes:
            rows["run x2 procs"].append(timed(lambda: ex.run(processes=2, repeat=5))[0])
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    med["collectives"] = rows["collectives"][0]  # the first call: the texts' readers keep what they read
    print(f"sharded attention block, 2 x 4 CPU mesh, {len(ex.stages)} stages, {a.repeat} rounds (medians)")
    for k, v in med.items():
        print(f"  {k:14s} {v:9.0f}" if k == "run probes" else f"  {k:14s} {v * 1e3:9.0f} ms")
    print(f"  explore / bare = {med['explore'] / med['bare']:.2f}   "
          f"(xla in child) / bare = {med['xla in child'] / med['bare']:.2f}")


if __name__ == "__main__":
    main()
