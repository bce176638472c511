"""Saved explorations: the .hlox file's size against the stage texts it holds, and save/load times.

For the 3-layer transformer-block gradient of bench_core and the GPT-2-small training step of
bench_gpt2 (--layers 12 by default; fewer for a quick run), in one run: every stage is computed,
then ``ex.save`` (without arrays: the first, which computes the cost table, then again, and with
``cost=False``) and ``wb.load`` are timed (medians of --repeat) and the file's
size is printed next to the sum of the stage texts (target: at most 0.3 of it; 0.1 hoped for).
Run:  .venv/bin/python bench/bench_saved.py [--layers 12] [--repeat 3]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_core
import bench_gpt2
import workbench as wb


def measure(title: str, fn, args, repeat: int) -> None:
    ex = wb.explore(fn, *args)
    stages = ex.stages
    total = sum(len(s.text.encode()) for s in stages)
    distinct = sum(len(t.encode()) for t in {id(s.text): s.text for s in stages}.values())
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.hlox")
        saves, bare, loads = [], [], []
        t = time.perf_counter()
        ex.save(path)  # the first save computes the cost table (ex.cost()), once per session
        first = time.perf_counter() - t
        for _ in range(repeat):
            t = time.perf_counter()
            ex.save(path)
            saves.append(time.perf_counter() - t)
            t = time.perf_counter()
            ex.save(path + ".nocost", cost=False)
            bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            back = wb.load(path)
            len(back.stages)
            loads.append(time.perf_counter() - t)
        size = os.path.getsize(path)
    print(f"{title}: {len(stages)} stages, {total / 1e6:.2f} MB of stage texts ({distinct / 1e6:.2f} MB distinct)")
    print(f"  .hlox {size / 1e3:.0f} kB   size / stage texts = {size / total:.3f}   (target <= 0.3, hoped 0.1)")
    print(f"  first save {first * 1e3:.0f} ms (computes the cost table)   save again {statistics.median(saves) * 1e3:.0f} ms"
          f"   save with cost=False {statistics.median(bare) * 1e3:.0f} ms   load {statistics.median(loads) * 1e3:.0f} ms"
          f"   (medians of {repeat})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 layers (12 is GPT-2 small)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    measure("3-layer transformer-block gradient", *bench_core.make(3), a.repeat)
    fn, args = bench_gpt2.make(a.layers)
    measure(f"GPT-2-small training step, {a.layers} layers", fn, args, a.repeat)


if __name__ == "__main__":
    main()
