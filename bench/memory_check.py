"""The memory view against XLA's own totals, on whatever device JAX computes on (CPU here, the TPU through
../shared/device/): for each program, ``ex.memory()`` per memory space, the peak reconciled with
``compiled.memory_analysis()`` (``reported()``: exact means peak == allocated - idle + constants), the seconds the
view took, and its top line. With ``--record DIR`` it writes each program's memory dumps (the optimized module, the
buffer assignment, the live ranges and memory_analysis) as ``DIR/<program>.json.xz``: a TPU's, read on any machine
by tests/test_memory.py.

Run:  .venv/bin/python bench/memory_check.py [--only mlp nnx_transformer] [--record DIR]
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import examples  # noqa: E402
from tests.corpus import PROGRAMS, program  # noqa: E402


def programs(only):
    names = list(examples.NAMES) + [p.name for p in PROGRAMS]
    for name in names:
        if only and name not in only:
            continue
        if name in examples.NAMES:
            fn, args = examples.load(name)
        else:
            inst = program(name).build()
            fn, args = inst.fn, inst.args
        yield name, fn, args


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--record", default="")
    a = ap.parse_args()
    print(f"device: {jax.devices()[0]}  ({jax.devices()[0].device_kind})")
    bad = 0
    for name, fn, args in programs(a.only):
        try:
            ex = wb.explore(fn, *args)
            t = time.perf_counter()
            m = ex.memory()
            r = m.reported()
            top = m.by_line()
            seconds = time.perf_counter() - t
            table = m.spaces()
            spaces = ", ".join(f"{row.space} {row.peak_bytes:,}" for row in table.itertuples())
            reported_peak = ex.xla_result.memory.get("peak_memory_bytes")
            same = r["memory_analysis"] == r["allocated"]
            bad += not r["exact"]
            print(f"{name:22s} peak {m.peak_bytes:>12,}  allocated {r['allocated']:>12,}  memory_analysis "
                  f"{r['memory_analysis']!s:>12}  exact {r['exact']}  analysis==allocated {same}  "
                  f"[{spaces}; together {int(table['peak_bytes'].sum()):,}; XLA's peak_memory_in_bytes "
                  f"{reported_peak if reported_peak is None else format(reported_peak, ',')}]  {seconds:.2f} s  "
                  f"top: {top['line'].iloc[0] if len(top) else ''}", flush=True)
            if not same:
                print(f"    {r['explained']}")
            if a.record:
                os.makedirs(a.record, exist_ok=True)
                doc = {"platform": m.platform, "device_kind": jax.devices()[0].device_kind,
                       "memory_analysis": ex.xla_result.memory,
                       "stages": {s: ex[s].text for s in ("xla:optimized", "backend:buffer-assignment",
                                                          "backend:live-range", "backend:memory-usage")},
                       # the last MLIR stage with its locations: the whole call chains XLA's metadata shortens
                       "mlir": ex._last_module().text_with_locations}
                with lzma.open(os.path.join(a.record, f"{name}.json.xz"), "wt") as f:
                    json.dump(doc, f)
        except Exception as e:  # noqa: BLE001 -- one program's failure is printed, the others go on
            bad += 1
            print(f"{name:22s} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
