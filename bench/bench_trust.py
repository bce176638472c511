"""The measurements behind issue 44 (trust, round 2), printed on the corpus of real programs.

    .venv/bin/python bench/bench_trust.py lines        # per program: the share of counted ops without a line,
                                                      # own locations only / with the inferred ones
    .venv/bin/python bench/bench_trust.py loops        # per program: flops of the last MLIR stage, the last XLA
                                                      # stage before fusion and xla:optimized, by the one rule
    .venv/bin/python bench/bench_trust.py profile 400  # the fori_loop sampler of N steps: profile()'s events and
                                                      # peak memory, traced and untraced call

Nothing here is timed against a threshold; the tests count the same things (tests/test_locations_coverage.py,
tests/test_loop_costs.py, tests/test_profile_loops.py).
"""
from __future__ import annotations

import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pandas as pd  # noqa: E402

import workbench as wb  # noqa: E402
from tests.corpus import PROGRAMS  # noqa: E402


def _explored(p):
    inst = p.build()
    return wb.explore(inst.fn, *inst.args)


def lines() -> None:
    from workbench.analysis.provenance import coverage

    print(f"{'program':24s} {'stablehlo':>12s} {'worst MLIR':>12s} {'worst XLA':>12s}   (% without a line: own / inferred)")
    for p in PROGRAMS:
        ex = _explored(p)
        shares = {}
        for s in ex.stages:
            if s.error or s.group not in ("trace", "mlir", "xla") or s.name == "jaxpr":
                continue
            c = coverage(s)
            shares[s.name] = (s.group, (c["ops"] - c["own"]) / c["ops"], c["unattributed"])
        worst = lambda group: max((v for v in shares.values() if v[0] in group), key=lambda v: v[1])  # noqa: E731
        said = lambda v: f"{100 * v[1]:5.1f}/{100 * v[2]:4.1f}"  # noqa: E731
        print(f"{p.name:24s} {said(shares['stablehlo']):>12s} {said(worst(('trace', 'mlir'))):>12s} "
              f"{said(worst(('xla',))):>12s}", flush=True)


def loops() -> None:
    print(f"{'program':24s} {'last MLIR':>12s} {'before fusion':>14s} {'xla:optimized':>14s} {'change':>8s}  "
          f"{'XLA own (bodies once)':>22s}")
    for p in PROGRAMS:
        ex = _explored(p)
        table = ex.cost().set_index("stage")
        mlir = [s.name for s in ex.stages if s.group == "mlir" and not s.error][-1]
        xla = [s.name for s in ex.stages if s.group == "xla"]
        fusion = next((i for i, n in enumerate(xla) if n.startswith("xla:fusion#")), None)
        before = xla[fusion - 1] if fusion else None
        a, b = table.loc[mlir, "flops"], table.loc["xla:optimized", "flops"]
        change = f"{100 * (b / a - 1):+.1f}%" if a and not pd.isna(b) else "-"
        pre = table.loc[before, "flops"] if before else "-"
        print(f"{p.name:24s} {a!s:>12s} {pre!s:>14s} {b!s:>14s} {change:>8s}  "
              f"{table.loc['xla:optimized', 'xla_flops']!s:>22s}", flush=True)


def profile(steps: int) -> None:
    from tests.corpus.loop_programs import sampler, sampler_args

    ex = wb.explore(sampler(steps), *sampler_args())
    r = ex.run()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    prof = ex.profile()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{steps} steps: profile() {time.perf_counter() - start:.1f} s; peak RSS {before:.0f} MB before, "
          f"{after:.0f} MB after; events read {prof.events_read}, held at once {prof.events_kept}, largest trace "
          f"{prof.largest_trace}; run()'s median {r.timing.median * 1e3:.3f} ms")
    print(" ", prof)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "lines"
    if what == "lines":
        lines()
    elif what == "loops":
        loops()
    elif what == "profile":
        profile(int(sys.argv[2]) if len(sys.argv) > 2 else 400)
    else:
        raise SystemExit(__doc__)
