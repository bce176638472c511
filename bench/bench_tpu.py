"""The workbench on a TPU, measured side by side in one process (issue 43's figures). Run it on the TPU machine
(``../shared/device/README.md``): ``bash .device/p2/tpu-run.sh python3 bench/bench_tpu.py``.

Per program (the four examples and the corpus's Flax NNX transformer step), on JAX's default device:
  explore/bare  the median of ``wb.explore(fn, *args)`` with every stage made (``ex.stages``) over the median of
                a bare ``jax.jit(fn).lower(*args).compile()`` (``fn.lower`` for a library's jit), rounds
                interleaved, JAX's caches and the workbench's step caches cleared before each side, the
                persistent cache off, the program built afresh. Measured after a first explore of the
                program (as in a notebook session: the pass worker and the XLA child warm). Target <= 1.5.
  toggle/bare   ``ex.with_xla(disable=["algsimp"]).stages`` (compiled in the child through a compile-only
                topology) over a bare compile with the same option.
  run1 dev, cpu seconds of the first checked ``ex.run()`` of a fresh exploration on the default device (the TPU), and of one on the
                CPU (``device="cpu"``): the float64 reference, the compiles and the transfers included.
and for the NNX step, the measured profile's coverage of a call (target >= 0.85) and its calls seen.

Run:  python3 bench/bench_tpu.py [--repeat 3] [--only mlp nnx_transformer]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402

import workbench as wb  # noqa: E402
from tests.corpus import program  # noqa: E402
from workbench import examples  # noqa: E402
from workbench.pipeline.build import clear_caches  # noqa: E402

PROGRAMS = [*examples.NAMES, "nnx_transformer"]


def build(name: str):
    """(function as the user passes it, arguments, what a bare compile lowers) afresh."""
    if name in examples.NAMES:
        fn, args = examples.load(name)
        return fn, args, jax.jit(fn)
    p = program(name)
    inst = p.build()
    return inst.fn, inst.args, (jax.jit(inst.fn) if p.wrapper == "plain" else inst.fn)


def bare(name: str, options: dict | None = None) -> float:
    jax.clear_caches()
    _, args, target = build(name)
    t = time.perf_counter()
    target.lower(*args).compile(compiler_options=options)
    return time.perf_counter() - t


def explore(name: str) -> tuple[float, "wb.Exploration"]:
    jax.clear_caches()
    clear_caches()
    fn, args, _ = build(name)
    t = time.perf_counter()
    ex = wb.explore(fn, *args)
    ex.stages
    return time.perf_counter() - t, ex


def toggle(ex) -> float:
    t = time.perf_counter()
    ex.with_xla(disable=["algsimp"]).stages
    return time.perf_counter() - t


def first_run(name: str, device: str | None) -> float:
    fn, args, _ = build(name)
    ex = wb.explore(fn, *args, device=device)
    ex.stages
    t = time.perf_counter()
    r = ex.run()
    seconds = time.perf_counter() - t
    assert r.check.passed, r.check
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=PROGRAMS)
    a = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    print(f"device {jax.devices()[0].device_kind} ({wb.explore.__module__}); {a.repeat} rounds, medians", flush=True)
    print(f"{'program':<18}{'bare s':>8}{'explore s':>10}{'expl/bare':>10}{'toggle/bare':>12}{'run1 dev':>10}"
          f"{'run1 cpu':>10}", flush=True)
    for name in a.only:
        try:
            explore(name)  # the first explore of the program: workers and children warm, as in a session
            bares, explores, toggles, toggle_bares = [], [], [], []
            for _ in range(a.repeat):
                bares.append(bare(name))
                seconds, ex = explore(name)
                explores.append(seconds)
                toggle_bares.append(bare(name, {"xla_disable_hlo_passes": "algsimp"}))
                toggles.append(toggle(ex))
            b, e = statistics.median(bares), statistics.median(explores)
            tb, tt = statistics.median(toggle_bares), statistics.median(toggles)
            run_tpu, run_cpu = first_run(name, None), first_run(name, "cpu")
            print(f"{name:<18}{b:>8.2f}{e:>10.2f}{e / b:>10.2f}{tt / tb:>12.2f}{run_tpu:>10.2f}{run_cpu:>10.2f}",
                  flush=True)
            if name == "nnx_transformer":
                p = ex.profile()
                print(f"  profile of the NNX step: {p.calls} calls seen, coverage {100 * p.coverage:.1f}%, "
                      f"median call {p.call_us:.0f} us, {len(p.table)} instructions", flush=True)
        except Exception as err:  # noqa: BLE001 -- one program's failure is printed, the others go on
            print(f"{name:<18}FAILED: {type(err).__name__}: {str(err).splitlines()[0][:200]}", flush=True)


if __name__ == "__main__":
    main()
