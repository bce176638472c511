"""The corpus of real programs (tests/corpus: Flax, Equinox, Diffrax, Optax, ...) through wb.explore with
its defaults, measured side by side with a bare compile of the same program (issue 28's real-program
figures).

Per program:
  explore/bare  the median time of ``wb.explore(fn, *args)`` with every stage made (``ex.stages``: the
                MLIR pipeline and XLA's per-pass stages), over the median time of a bare compile --
                ``fn.lower(*args).compile()`` when fn is a jit wrapper (jax.jit, nnx.jit, eqx.filter_jit:
                what the library itself compiles), ``jax.jit(fn).lower(*args).compile()`` for a plain
                function. Rounds interleave the two sides; before each side JAX's caches and the
                workbench's step caches are cleared, the persistent compilation cache is off, and the
                program is built afresh (new arguments; functions and modules built again where the
                builder makes them). The pass worker stays warm, as in a notebook session. Target <= 1.3.
  none/bare     the same with ``pipeline="none"``: the trace, XLA with its dumps, and the workbench's own
                work, no MLIR pass. Target <= 1.15.
  floor         what the compilers themselves take to make those stages, over the bare compile: the bare
                side's own lowering, plus the seconds the exploration's clocks give its MLIR passes (the
                Enzyme-JaX worker) and XLA's compile of the last MLIR stage with its per-pass dumps
                (``xla:optimized``); for ``none``, the lowering and that XLA compile. explore - floor is
                the workbench's own work (its trace for the jaxpr stage, reading dumps, locations, ...).
  own           that own work measured round by round (explore - floor of the same round; median) over
                the bare compile; the same for ``none``. Less noisy than ratio - floor, whose two medians
                come from different rounds.
  rounds        how many rounds the medians are of: ``--repeat``, or more for a program whose bare compile is short
                (enough rounds for ~1 s of bare compiles, at most ``5 * --repeat``). On a small program the own
                work is a few milliseconds beside timer and scheduler noise of the same size: a 60 ms compile's
                0.1 is 6 ms, and one descheduled round moves a median of three by more than that.
  met           issue 46's test of each side: ratio <= 1.3, or own <= 0.1 (the floor printed beside it);
                none <= 1.15, or its own <= 0.1.
  dumps/bare    the bare compile with XLA's per-pass text dumps on, over the bare compile: the price of
                seeing every XLA pass, which no exploration can go under.
  applicable    seconds of ``ex.applicable("stablehlo")`` (which patterns change the StableHLO), once,
                with the pass-step caches cleared. Target <= 2 s.
  peak RSS      of a fresh subprocess that explores once (its VmHWM, and that of each pass worker it
                started, read before it exits), next to a fresh subprocess
                that compiles bare once; "imp." is the bare child's peak after its imports (jax, the
                libraries, the workbench), before it builds or compiles anything.
A program that fails prints its error and the others go on.

Run:  .venv/bin/python bench/bench_real.py [--repeat 3] [--only nnx_transformer linalg] [--no-memory]
      [--no-applicable]
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402

from memory import peak_rss_mib  # bench/memory.py
import workbench as wb  # noqa: E402
from tests.corpus import PROGRAMS, Program, program  # noqa: E402
from workbench.pipeline.build import clear_caches  # noqa: E402
from workbench.pipeline.worker import default_pool, default_worker  # noqa: E402
from workbench.pipeline.xla import dump_options  # noqa: E402


def bare_compile(p: Program, dumps: bool = False) -> tuple[float, float]:
    """Seconds of the bare lower + compile, and of the lowering alone; with ``dumps``, XLA writes its
    per-pass text dumps as an exploration has it do (into a temporary folder)."""
    inst = p.build()
    with tempfile.TemporaryDirectory() as folder:
        options = dump_options(folder) if dumps else None
        t = time.perf_counter()
        target = jax.jit(inst.fn) if p.wrapper == "plain" else inst.fn
        lowered = target.lower(*inst.args)
        lowering = time.perf_counter() - t
        lowered.compile(compiler_options=options)
        return time.perf_counter() - t, lowering


def compilers(ex: "wb.Exploration") -> tuple[float, float]:
    """The seconds the exploration's own clocks give its MLIR passes (run, not cached) and XLA's compile
    of the last MLIR stage with dumps."""
    mlir = sum(s.seconds for s in ex.stages if s.group == "mlir" and s.seconds and not s.cached)
    return mlir, ex["xla:optimized"].seconds or 0.0


def explore_all(p: Program, pipeline: str = "all") -> tuple[float, "wb.Exploration"]:
    inst = p.build()
    t = time.perf_counter()
    ex = wb.explore(inst.fn, *inst.args, pipeline=pipeline)
    ex.stages  # noqa: B018 -- waits for XLA's stages: the whole exploration is made
    return time.perf_counter() - t, ex


def cold() -> None:
    """Nothing compiled or passed before counts: JAX's in-memory caches and the workbench's step caches; and
    each side starts from a collected heap, so that no side pays for a full garbage collection that the
    garbage of the side before it made due."""
    clear_caches()
    jax.clear_caches()
    gc.collect()


def child(side: str, name: str) -> None:
    """One side once in this fresh process; prints its peak memory as JSON on the last line."""
    p = program(name)
    imported = peak_rss_mib(os.getpid())  # jax, the libraries, the workbench
    seconds = bare_compile(p)[0] if side == "bare" else explore_all(p)[0]
    workers = [w for w in dict.fromkeys([default_worker(), *default_pool().workers]) if w.pid is not None]
    print(json.dumps({"seconds": seconds, "imported_mib": imported,
                      "rss_mib": peak_rss_mib(os.getpid()),
                      "workers_mib": [peak_rss_mib(w.pid) for w in workers]}))


def peak_memory(side: str, name: str) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side, name],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"the {side} child exited {done.returncode}: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


ROUNDS_FOR = 1.0  # seconds of bare compiles a short program's rounds add up to at least (see ``rounds``)
ROUNDS_AT_MOST = 5  # times --repeat: a 60 ms program's own work, medians of 11-21 rounds taken minutes apart in one
# process on the 2-core VM, read 0.067-0.125 of its bare compile: the machine's minutes differ, and more rounds
# spread a median over more of them


def rounds(repeat: int, bare: float) -> int:
    """How many interleaved rounds to take of a program whose bare compile takes ``bare`` seconds: ``repeat``, or
    enough for ``ROUNDS_FOR`` seconds of bare compiles, at most ``ROUNDS_AT_MOST * repeat``."""
    return max(repeat, min(ROUNDS_AT_MOST * repeat, math.ceil(ROUNDS_FOR / max(bare, 1e-3))))


def measure(p: Program, repeat: int, applicable: bool = True) -> dict:
    explore_all(p)  # warm-up: the pass worker starts, the libraries' first-use costs are paid
    times = {k: [] for k in ("bare", "dumps", "explore", "floor", "none", "none_floor", "own", "none_own")}
    stages = None
    cold()
    taken = rounds(repeat, bare_compile(p)[0])  # also the bare side's warm-up
    for _ in range(taken):
        cold()
        bare, lowering = bare_compile(p)
        times["bare"].append(bare)
        cold()
        times["dumps"].append(bare_compile(p, dumps=True)[0])
        cold()
        seconds, ex = explore_all(p)
        times["explore"].append(seconds)
        mlir, xla = compilers(ex)
        times["floor"].append(lowering + mlir + xla)
        times["own"].append(seconds - (lowering + mlir + xla))
        stages = ex
        cold()
        seconds, ex = explore_all(p, pipeline="none")
        times["none"].append(seconds)
        times["none_floor"].append(lowering + compilers(ex)[1])
        times["none_own"].append(seconds - times["none_floor"][-1])
    med = {k: statistics.median(v) for k, v in times.items()}
    scan = None
    if applicable:
        cold()
        t = time.perf_counter()
        stages.applicable("stablehlo", progress=False)
        scan = time.perf_counter() - t
    return {"rounds": taken, "bare_s": med["bare"], "explore_s": med["explore"],
            "ratio": med["explore"] / med["bare"],
            "floor": med["floor"] / med["bare"], "dumps": med["dumps"] / med["bare"],
            "none_ratio": med["none"] / med["bare"], "none_floor": med["none_floor"] / med["bare"],
            "own": med["own"] / med["bare"], "none_own": med["none_own"] / med["bare"],
            "met": (med["explore"] / med["bare"] <= 1.3 or med["own"] / med["bare"] <= 0.1)
            and (med["none"] / med["bare"] <= 1.15 or med["none_own"] / med["bare"] <= 0.1),
            "applicable_s": scan,
            "stages": len(stages.stages), "stablehlo_lines": stages["stablehlo"].lines,
            "failed": [s.name for s in stages.stages if s.error]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help="program names (default: the whole corpus)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-RSS subprocesses")
    ap.add_argument("--no-applicable", action="store_true", help="skip the applicable() scans")
    ap.add_argument("--child", nargs=2, metavar=("SIDE", "NAME"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    jax.config.update("jax_enable_compilation_cache", False)
    chosen = [program(n) for n in a.only] if a.only else list(PROGRAMS)
    print(f"explore (all stages, defaults) / bare compile, and pipeline='none' / bare: medians of {a.repeat} "
          "interleaved rounds, more for a short program (rounds), (targets <= 1.3 and <= 1.15), each beside its "
          "floor (the compilers' own seconds over bare) and the price of XLA's dumps alone (dumps/bare); "
          "applicable('stablehlo') seconds (target <= 2); peak RSS of one fresh process each (explore: + its pass "
          "workers' peaks)")
    head = (f"{'program':24s} {'rounds':>6s} {'bare ms':>9s} {'explore ms':>11s} {'ratio':>6s} {'floor':>6s}"
            f" {'own':>5s}"
            f" {'none':>5s} {'floor':>6s} {'own':>5s} {'met':>4s} {'dumps':>6s} {'appl. s':>7s}"
            f" {'stages':>6s} {'shlo lines':>10s}"
            f" {'imp. MiB':>8s} {'bare MiB':>9s} {'explore MiB':>12s} {'workers MiB':>12s}")
    print(head)
    print("-" * len(head))
    for p in chosen:
        try:
            m = measure(p, a.repeat, not a.no_applicable)
        except Exception as e:  # noqa: BLE001 -- one failing program must not hide the others' numbers
            print(f"{p.name:24s} FAILED: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:160]}")
            continue
        mem = "" if a.no_memory else memory_columns(p.name)
        failed = f"   failed stages: {', '.join(m['failed'])}" if m["failed"] else ""
        scan = "-" if m["applicable_s"] is None else f"{m['applicable_s']:.1f}"
        print(f"{p.name:24s} {m['rounds']:6d} {m['bare_s'] * 1e3:9.0f} {m['explore_s'] * 1e3:11.0f} {m['ratio']:6.2f} "
              f"{m['floor']:6.2f} {m['own']:5.2f} {m['none_ratio']:5.2f} {m['none_floor']:6.2f} {m['none_own']:5.2f} "
              f"{'yes' if m['met'] else 'no':>4s} {m['dumps']:6.2f} {scan:>7s} "
              f"{m['stages']:6d} {m['stablehlo_lines']:10d}{mem}{failed}")


def memory_columns(name: str) -> str:
    try:
        bare, explored = peak_memory("bare", name), peak_memory("explore", name)
    except Exception as e:  # noqa: BLE001
        return f"  memory: {type(e).__name__}: {str(e)[:120]}"
    workers = "+".join(f"{w:.0f}" for w in explored["workers_mib"] if w is not None) or "-"
    return (f" {bare['imported_mib']:8.0f} {bare['rss_mib']:9.0f} {explored['rss_mib']:12.0f} {workers:>12s}")


if __name__ == "__main__":
    main()
