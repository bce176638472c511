"""The memory view of a big module: ``ex.memory()`` and its tables on an XLA module of ~50,000 instructions
(issue 47: under 5 s on this machine), beside one of ~6,000, so the growth shows (it should be linear).

The program is a chain of small matmuls and sines (``chain(n)``: about 6 HLO instructions per link after XLA's
fusion); XLA compiles it once with its dumps (minutes for the big one: XLA's own time), and the three texts the
memory view reads (the optimized module, the buffer assignment, the live ranges) are kept in
``~/.cache/hlo-workbench/bench_memory_<n>.json.xz`` for the next run. Each timing is a fresh ``Memory`` made from
those texts and the program's StableHLO (whose locations give each instruction its whole call chain, as an
exploration's last MLIR stage does): parsing, the schedule's live bytes, the live set at the peak with every buffer's line, bytes by line,
the timeline, donation and the reconciliation with memory_analysis().

Run:  .venv/bin/python bench/bench_memory.py [--links 8400] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax.numpy as jnp  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.analysis.memory import Memory  # noqa: E402
from workbench.stages import Stage  # noqa: E402

NAMES = ("xla:optimized", "backend:buffer-assignment", "backend:live-range")


def chain(n: int):
    def f(x, w):
        kept = []
        for i in range(n):
            x = jnp.sin(x @ w) if i % 2 else jnp.cos(x) @ w
            if i % 50 == 0:
                kept.append(x)
        return x, kept
    return f


def texts(n: int) -> dict:
    cache = Path.home() / ".cache" / "hlo-workbench" / f"bench_memory_{n}.json.xz"
    if cache.exists():
        with lzma.open(cache, "rt") as f:
            return json.load(f)
    print(f"compiling a chain of {n} links with XLA's dumps (once; cached in {cache}) ...", flush=True)
    t = time.perf_counter()
    ex = wb.explore(chain(n), jnp.ones((8, 8)), jnp.ones((8, 8)), pipeline="none")
    doc = {"texts": {s: ex[s].text for s in NAMES}, "memory_analysis": ex.xla_result.memory,
           "mlir": ex._last_module().text_with_locations,
           "compile_seconds": time.perf_counter() - t}
    cache.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(cache, "wt") as f:
        json.dump(doc, f)
    return doc


def view(doc: dict) -> tuple[float, Memory]:
    t = time.perf_counter()
    s = doc["texts"]
    mlir = Stage("stablehlo", "trace", doc["mlir"], "JAX", True, None, None, text_with_locations=doc["mlir"])
    m = Memory(Stage("xla:optimized", "xla", s["xla:optimized"], "XLA", True, None, None),
               s["backend:buffer-assignment"], s["backend:live-range"], "cpu", doc["memory_analysis"], mlir)
    m.peak_bytes, m.at_peak(), m.by_line(), m.timeline(), m.donation(), m.reported(), m.to_json()
    return time.perf_counter() - t, m


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=8400)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import pandas  # noqa: F401 -- imported once before timing, as a notebook has it
    rows = []
    for n in (1000, a.links):
        doc = texts(n)
        instructions = sum(1 for ln in doc["texts"]["xla:optimized"].splitlines() if " = " in ln)
        seconds = statistics.median(view(doc)[0] for _ in range(a.repeat))
        _, m = view(doc)
        rows.append((n, instructions, seconds, m))
        print(f"links {n:6d}: {instructions:6,} HLO instructions, {len(m.live.sequence):6,} positions, "
              f"{len(m.allocations):6,} allocations: memory view {seconds:.2f} s (median of {a.repeat}; target < 5 s "
              f"at 50,000 instructions)", flush=True)
    (n0, i0, s0, _), (n1, i1, s1, _) = rows
    print(f"growth: {i1 / i0:.1f}x the instructions, {s1 / s0:.1f}x the seconds (linear: about the same)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
