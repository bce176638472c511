"""Core speed, measured side by side in one run on a transformer-block gradient.

Prints the ratios of the core issues, each side measured in turn (interleaved rounds, medians, a
fresh function object each time, the step and XLA caches cleared, the worker warm):
  fresh / bare     a fresh explore of all stages vs bare jax.jit(f).lower(*a).compile() (target <= 1.3)
  toggle / fresh   re-explore after one pattern toggle vs a fresh explore: all stages (target: at most
                   the bare compile of the changed module / fresh, + 0.05) and MLIR stages alone (<= 0.1)
and, next to each, its floor: the parts the workbench cannot skip, measured alone in the same rounds --
the trace and export, enzyme-ad's own time for each pass that ran (no cache hits), and XLA compiling
the final module while it writes the per-pass dumps the XLA stages are made of (without reading them).
Run:  .venv/bin/python bench/bench_core.py [--layers 3] [--repeat 5]
``measure`` and ``report`` serve bench_gpt2.py too.
"""
import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench.examples.attention as att
import workbench as wb
from workbench.pipeline.build import clear_caches
from workbench.pipeline.exported import swap_module
from workbench.pipeline.xla import dump_options


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


def final_mlir(ex):
    return [s for s in ex.stages if s.group == "mlir"][-1]


def pass_seconds(ex) -> float:
    """enzyme-ad's own time for the MLIR passes this Exploration ran (cache hits excluded)."""
    return sum(s.seconds for s in ex.stages if s.group == "mlir" and not s.cached and s.seconds)


@dataclasses.dataclass
class Measured:
    base: "wb.Exploration"  # the warm-up explore, all stages computed
    toggled: "wb.Exploration"
    times: dict  # side -> seconds of each round

    @property
    def medians(self) -> dict:
        return {k: statistics.median(v) for k, v in self.times.items()}


def measure(f, args, toggle: str, repeat: int) -> Measured:
    """Each side once per round, rounds interleaved: bare compile of f, a fresh explore of all stages,
    the toggle after it (MLIR stages alone, then all stages), bare compile of the toggled final module."""
    jax.config.update("jax_enable_compilation_cache", False)

    def new_f():
        # a fresh function object each time, so neither side reuses JAX's in-memory trace/compile caches
        return lambda *xs: f(*xs)

    base = wb.explore(new_f(), *args)  # starts and warms the worker, as a notebook session would be
    len(base.stages)
    toggled = base.with_patterns(disable=[toggle])
    len(toggled.stages)
    changed = swap_module(base.spec.traced.exported, final_mlir(toggled).text_with_locations)

    def bare():
        t = time.perf_counter()
        jax.jit(new_f()).lower(*args).compile()
        return time.perf_counter() - t

    def bare_changed():
        exp = dataclasses.replace(changed)  # a fresh Exported (same module) each time
        t = time.perf_counter()
        jax.jit(lambda *xs: exp.call(*xs)).lower(*args).compile()
        return time.perf_counter() - t

    final = swap_module(base.spec.traced.exported, final_mlir(base).text_with_locations)

    def xla_dumping(exported):
        """XLA alone compiling ``exported`` while writing the per-pass dumps (not read back)."""
        exp, d = dataclasses.replace(exported), tempfile.mkdtemp(prefix="bench-dumps-")
        try:
            t = time.perf_counter()
            jax.jit(lambda *xs: exp.call(*xs)).lower(*args).compile(compiler_options=dump_options(d))
            return time.perf_counter() - t
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def fresh_then_toggle():
        clear_caches()
        t0 = time.perf_counter()
        ex = wb.explore(new_f(), *args)
        len(ex.stages)
        t1 = time.perf_counter()
        ex2 = ex.with_patterns(disable=[toggle])  # the MLIR stages; reading the XLA ones waits for XLA
        t2 = time.perf_counter()
        len(ex2.stages)
        t3 = time.perf_counter()
        tr = ex.spec.traced
        return (t1 - t0, t2 - t1, t3 - t1), (tr.seconds_jaxpr + tr.seconds_lower, pass_seconds(ex), pass_seconds(ex2))

    times = {k: [] for k in ("bare", "fresh", "toggle_mlir", "toggle", "bare_changed",
                             "trace", "passes", "xla_dumps", "toggle_passes", "xla_dumps_changed")}
    for _ in range(repeat):  # interleaved, so every side sees the same machine conditions
        times["bare"].append(bare())
        sides, parts = fresh_then_toggle()
        for k, v in zip(("fresh", "toggle_mlir", "toggle"), sides):
            times[k].append(v)
        for k, v in zip(("trace", "passes", "toggle_passes"), parts):
            times[k].append(v)
        times["bare_changed"].append(bare_changed())
        times["xla_dumps"].append(xla_dumping(final))
        times["xla_dumps_changed"].append(xla_dumping(changed))
    return Measured(base, toggled, times)


def report(m: Measured, toggle: str) -> None:
    med = m.medians
    changed_final = final_mlir(m.toggled).text != final_mlir(m.base).text
    print(f"toggled pattern: {toggle} (changes the final MLIR module: {changed_final})")
    print(f"medians of {len(m.times['bare'])} interleaved rounds (each round's in brackets, ms):")
    for k, v in med.items():
        print(f"  {k:13s} {v * 1e3:9.1f} ms   (" + ", ".join(f"{x * 1e3:.0f}" for x in m.times[k]) + ")")
    bound = med["bare_changed"] / med["fresh"] + 0.05
    print(f"ratio fresh/bare                      = {med['fresh'] / med['bare']:.2f}   target <= 1.3")
    print(f"ratio toggle/fresh (all stages)       = {med['toggle'] / med['fresh']:.2f}   "
          f"target <= {bound:.2f} = bare compile of the changed module / fresh + 0.05")
    print(f"ratio toggle/fresh (MLIR stages only) = {med['toggle_mlir'] / med['fresh']:.2f}   target <= 0.10")
    fresh_floor = med["trace"] + med["passes"] + med["xla_dumps"]
    toggle_floor = med["toggle_passes"] + med["xla_dumps_changed"]
    print("floors (what no explore can skip: trace and export, enzyme-ad's pass time, XLA compiling with its dumps):")
    print(f"  fresh  {fresh_floor * 1e3:7.1f} ms = {med['trace'] * 1e3:.0f} trace + {med['passes'] * 1e3:.0f} passes"
          f" + {med['xla_dumps'] * 1e3:.0f} XLA with dumps;  floor/bare = {fresh_floor / med['bare']:.2f};"
          f"  the workbench's own time on top: {(med['fresh'] - fresh_floor) * 1e3:.0f} ms")
    print(f"  toggle {toggle_floor * 1e3:7.1f} ms = {med['toggle_passes'] * 1e3:.0f} passes + "
          f"{med['xla_dumps_changed'] * 1e3:.0f} XLA with dumps;  floor/fresh = {toggle_floor / med['fresh']:.2f};"
          f"  the workbench's own time on top: {(med['toggle'] - toggle_floor) * 1e3:.0f} ms")
    print(f"  XLA's dumps alone: compiling with them / bare compile of the changed module = "
          f"{med['xla_dumps_changed'] / med['bare_changed']:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--toggle", default="dot_transpose")
    a = ap.parse_args()
    f, args = make(a.layers)
    m = measure(f, args, a.toggle, a.repeat)
    print(f"transformer-block gradient: {a.layers} layers, {m.base['stablehlo'].lines} StableHLO lines, "
          f"{len(m.base.stages)} stages")
    report(m, a.toggle)


if __name__ == "__main__":
    main()
