"""Diff speed on a large real module pair, against difflib, measured side by side in one run.

Explores jax.grad of a deep MLP (about 19 lines per layer; the default 1300 layers give ~21,000
lines) with the pipeline ``canonicalize,cse`` and diffs two of its stages, "stablehlo" and "cse#1",
exactly as ``ex.diff`` does; times, median of --repeat runs each:

  workbench  diff_texts(before, after).unified()
  difflib    "".join(difflib.unified_diff(...)) on the same two texts

and prints the line counts, both times and the ratio workbench/difflib (target: <= 1, and the
workbench time under 1 s).

A second pair is printed for reference: the raw text enzyme-ad's runner returns, with a loc() on
every line. No raw line of it equals a line of the input, so difflib has nothing to align and
prints both texts whole as removed and added (fast, and useless); the workbench still aligns it.

Run:  .venv/bin/python bench/bench_diff.py [--layers 1300] [--repeat 5]
"""

import argparse
import difflib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_call

import workbench as wb
from workbench.analysis.diff import diff_texts

PIPELINE = "canonicalize,cse"


def mlp_loss(params, x):
    h = x
    for w, b in params:
        h = jnp.tanh(h @ w + b)
    return jnp.mean(h**2)


def build_pair(layers: int) -> tuple[str, str, str, str]:
    """(stage "stablehlo", stage "cse#1", and the raw input/output of enzyme-ad's runner)."""
    params = [(jnp.ones((16, 16)), jnp.ones((16,))) for _ in range(layers)]
    ex = wb.explore(jax.grad(mlp_loss), params, jnp.ones((8, 16)), pipeline=PIPELINE)
    raw_before = ex["stablehlo"].text_with_locations
    _, raw_after = enzyme_call.run_pass_pipeline([], raw_before, PIPELINE)
    return ex["stablehlo"].text, ex["cse#1"].text, raw_before, raw_after


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(label: str, before: str, after: str, repeat: int) -> None:
    before_lines, after_lines = before.splitlines(True), after.splitlines(True)

    def ours() -> str:
        return diff_texts(before, after, "stablehlo", PIPELINE).unified()

    def theirs() -> str:
        return "".join(difflib.unified_diff(before_lines, after_lines, "stablehlo", PIPELINE))

    d = diff_texts(before, after, "stablehlo", PIPELINE)
    ours_s, theirs_s = median_time(ours, repeat), median_time(theirs, repeat)
    print(f"{label}")
    print(f"  raw lines         before {len(before_lines):>6}   after {len(after_lines):>6}")
    print(f"  normalized lines  before {len(d.before):>6}   after {len(d.after):>6}")
    moves = sum(c.kind == "move" for c in d.changes)
    print(f"  changes           {len(d.changes)}  ({moves} moves)")
    print(f"  workbench  {ours_s:.3f} s   diff_texts(...).unified(), median of {repeat}")
    print(f"  difflib    {theirs_s:.3f} s   difflib.unified_diff on the same two texts")
    print(f"  ratio workbench/difflib  {ours_s / theirs_s:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=1300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    before, after, raw_before, raw_after = build_pair(args.layers)
    measure(f"stages 'stablehlo' -> 'cse#1' of wb.explore(..., pipeline={PIPELINE!r})", before, after, args.repeat)
    measure("for reference: the raw texts with locations, as enzyme-ad's runner prints them",
            raw_before, raw_after, args.repeat)


if __name__ == "__main__":
    main()
