"""What a regression gate costs in CI: ``hlo-workbench check`` in a fresh process, side by side in one run with
a bare compile and a plain explore of the same program, each in a fresh process, rounds interleaved.

Sides (each a fresh interpreter; wall time of the whole command, imports included, as CI pays it):
  bare       ``jax.jit(f).lower(*args).compile()`` of the example (JAX alone)
  explore    ``wb.explore(f, *args)`` with every stage read (the workbench's own first explore)
  check      ``hlo-workbench check GOLDEN`` with the default limits (re-explore from the saved module, compare)
  check+     ``hlo-workbench check GOLDEN --numbers --same-final-module`` (a run, and the golden's outputs checked)
  check+ct   ``... --max-compile-time-growth 50%`` too (three interleaved rounds of bare and pipeline compiles)

Prints each side's median seconds and the ratios check/explore and check/bare.
Usage: python bench/bench_gates.py [EXAMPLE] [ROUNDS]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
CLI = os.path.join(os.path.dirname(PYTHON), "hlo-workbench")

BARE = ("import jax; from workbench.examples import {ex} as m; "
        "jax.jit(m.fn).lower(*m.args()).compile()")
EXPLORE = "import workbench as wb; from workbench.examples import {ex} as m; wb.explore(m.fn, *m.args()).stages"
GOLDEN = ("import workbench as wb; from workbench.examples import {ex} as m; "
          "wb.testing.write_golden(wb.explore(m.fn, *m.args()), {path!r}, compile_time=True)")


def timed(argv: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return time.perf_counter() - t


def main() -> None:
    example = sys.argv[1] if len(sys.argv) > 1 else "attention"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as d:
        golden = os.path.join(d, f"{example}.hlox")
        timed([PYTHON, "-c", GOLDEN.format(ex=example, path=golden)])
        sides = {
            "bare": [PYTHON, "-c", BARE.format(ex=example)],
            "explore": [PYTHON, "-c", EXPLORE.format(ex=example)],
            "check": [CLI, "check", golden],
            "check+": [CLI, "check", golden, "--numbers", "--same-final-module"],
            "check+ct": [CLI, "check", golden, "--numbers", "--same-final-module", "--max-compile-time-growth", "50%"],
        }
        times: dict[str, list[float]] = {k: [] for k in sides}
        for r in range(rounds):
            for name, argv in sides.items():
                times[name].append(timed(argv))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{example}, medians of {rounds} fresh processes each (wall time, imports included):")
    for k, v in med.items():
        print(f"  {k:<9} {v:6.2f} s   {v / med['explore']:.2f}x explore   {v / med['bare']:.2f}x bare")


if __name__ == "__main__":
    main()
