"""Diff speed on a large real module pair, against difflib, measured side by side in one run.

Explores (in a process of its own) jax.grad of a deep MLP (about 16 lines per layer; the default
1300 layers give ~21,000 lines) with the pipeline ``canonicalize,cse`` and diffs two of its stages,
"stablehlo" and "cse#1", exactly as ``ex.diff`` does. Each round times, in turn, each after a full
garbage collection outside the timing:

  workbench (first)  diff_texts(before, after).unified() on texts it has not read before (the
                     cache of read modules emptied, outside the timing)
  workbench (again)  the same with both modules read already (diffing a stage with the one before
                     and then with the one after reads each text once)
  SequenceMatcher    difflib.SequenceMatcher(None, before_lines, after_lines).get_opcodes()
  unified_diff       "".join(difflib.unified_diff(...)) on the same two texts

and prints the medians over --repeat rounds, the ratios to difflib, where the first diff's time goes
(reading each module, aligning and the rest, the unified text), and whether the target is met: the
first diff within 0.2 s and below both difflib timings.

A second pair is printed for reference: the raw text enzyme-ad's runner returns, with a loc() on
every line. No raw line of it equals a line of the input, so difflib has nothing to align and
prints both texts whole as removed and added (fast, and useless); the workbench still aligns it.

Run:  .venv/bin/python bench/bench_diff.py [--layers 1300] [--repeat 7]
"""

import argparse
import difflib
import gc
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_call

import workbench as wb
from workbench.analysis.diff import diff_texts
from workbench.analysis.diff.normalize import collector_paused, read_module

PIPELINE = "canonicalize,cse"
TARGET_S = 0.2


def mlp_loss(params, x):
    h = x
    for w, b in params:
        h = jnp.tanh(h @ w + b)
    return jnp.mean(h**2)


def build_pair(layers: int) -> tuple[str, str, str, str]:
    """(stage "stablehlo", stage "cse#1", and the raw input/output of enzyme-ad's runner).

    Run in a process of its own (``main``): an Exploration starts XLA's compile in the background,
    which would share this process's CPU with the timings.
    """
    params = [(jnp.ones((16, 16)), jnp.ones((16,))) for _ in range(layers)]
    ex = wb.explore(jax.grad(mlp_loss), params, jnp.ones((8, 16)), pipeline=PIPELINE)
    raw_before = ex["stablehlo"].text_with_locations
    _, raw_after = enzyme_call.run_pass_pipeline([], raw_before, PIPELINE)
    return ex["stablehlo"].text, ex["cse#1"].text, raw_before, raw_after


def timed(fn, setup=None) -> float:
    """Seconds ``fn()`` takes, after ``setup()`` and a full collection (so that no contender pays
    for the garbage collection that the one before it made due)."""
    if setup is not None:
        setup()
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(label: str, before: str, after: str, repeat: int) -> dict[str, float]:
    before_lines, after_lines = before.splitlines(True), after.splitlines(True)

    def ours() -> str:
        return diff_texts(before, after, "stablehlo", PIPELINE).unified()

    def matcher() -> list:
        return difflib.SequenceMatcher(None, before_lines, after_lines).get_opcodes()

    def unified_diff() -> str:
        return "".join(difflib.unified_diff(before_lines, after_lines, "stablehlo", PIPELINE))

    runs = {
        "workbench (first)": (ours, read_module.cache_clear),
        "workbench (again)": (ours, None),
        "SequenceMatcher": (matcher, None),
        "unified_diff": (unified_diff, None),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    phases: dict[str, list[float]] = {}
    for _ in range(repeat):  # interleaved: each round times every contender once
        for name, (fn, setup) in runs.items():
            times[name].append(timed(fn, setup))
        for phase, seconds in first_diff_phases(before, after).items():
            phases.setdefault(phase, []).append(seconds)
    med = {name: statistics.median(ts) for name, ts in times.items()}

    d = diff_texts(before, after, "stablehlo", PIPELINE)
    print(label)
    print(f"  raw lines         before {len(before_lines):>6}   after {len(after_lines):>6}")
    print(f"  normalized lines  before {len(d.before):>6}   after {len(d.after):>6}")
    moves = sum(c.kind == "move" for c in d.changes)
    print(f"  changes           {len(d.changes)}  ({moves} moves)")
    print(f"  medians of {repeat} interleaved rounds:")
    for name, seconds in med.items():
        print(f"    {name:18s} {seconds:.3f} s")
    best_difflib = min(med["SequenceMatcher"], med["unified_diff"])
    print(f"  ratio workbench (first) / SequenceMatcher  {med['workbench (first)'] / med['SequenceMatcher']:.2f}")
    print(f"  ratio workbench (first) / unified_diff     {med['workbench (first)'] / med['unified_diff']:.2f}")
    print(f"  ratio workbench (again) / unified_diff     {med['workbench (again)'] / med['unified_diff']:.2f}")
    print("  the first diff, by phase (medians):")
    for phase, ts in phases.items():
        print(f"    {phase:18s} {statistics.median(ts):.3f} s")
    first = med["workbench (first)"]
    met = first <= TARGET_S and first < best_difflib
    print(f"  target <= {TARGET_S} s and below difflib: {'met' if met else 'not met'}"
          f" ({first:.3f} s; difflib {best_difflib:.3f} s)")
    return med


def first_diff_phases(before: str, after: str) -> dict[str, float]:
    """Where the first diff's time goes: reading each module (normalize), then the rest of
    ``diff_texts`` (aligning, naming, moves, the edit script) with both read, then ``unified``."""
    read_module.cache_clear()
    out = {}
    with collector_paused():
        out["read before"] = timed(lambda: read_module(before))
        out["read after"] = timed(lambda: read_module(after))
    diffs = []
    out["align and rest"] = timed(lambda: diffs.append(diff_texts(before, after)))
    out["unified"] = timed(diffs[0].unified)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=1300)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        before, after, raw_before, raw_after = pool.submit(build_pair, args.layers).result()
    gc.collect()
    measure(f"stages 'stablehlo' -> 'cse#1' of wb.explore(..., pipeline={PIPELINE!r})", before, after, args.repeat)
    measure("for reference: the raw texts with locations, as enzyme-ad's runner prints them",
            raw_before, raw_after, args.repeat)


if __name__ == "__main__":
    main()
