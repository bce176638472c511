"""The first explore in a fresh process, against a bare compile in a fresh process, side by side in one run.

Each round starts three fresh interpreters, in turn:
  bare     ``import jax`` and the example, then ``jax.jit(f).lower(*args).compile()`` (timed)
  script   ``import workbench as wb`` and the example, then ``wb.explore(f, *args)`` with every stage
           read (XLA's included; timed) -- a script or the command line
  kernel   IPython's shell, ``%load_ext workbench`` and the example, then the same explore (timed) -- a
           notebook: loading the extension starts the Enzyme worker in the background

Imports are left out of every timed part (each side's are printed beside). The ratios are medians over the
rounds; the target (issue 28) is kernel / bare <= 1.5. Usage: python bench/bench_cold.py [EXAMPLE] [ROUNDS]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import json, time
t0 = time.perf_counter()
{imports}
from workbench import examples
fn, args = examples.load({example!r})
import jax
jax.block_until_ready(args)
t1 = time.perf_counter()
"""

BARE = """
jax.jit(fn).lower(*args).compile()
t2 = time.perf_counter()
print("RESULT" + json.dumps({{"imports": t1 - t0, "first": t2 - t1, "all": t2 - t1}}))
"""

EXPLORE = """
ex = wb.explore(fn, *args)
t2 = time.perf_counter()
n = len(ex.stages)  # every stage, XLA's included
t3 = time.perf_counter()
assert not [s.name for s in ex.stages if s.error], ex.names
print("RESULT" + json.dumps({{"imports": t1 - t0, "first": t2 - t1, "all": t3 - t1, "stages": n}}))
"""

SIDES = {
    "bare": ("import jax", BARE),
    "script": ("import workbench as wb\nwb.explore", EXPLORE),
    "kernel": ("from IPython.core.interactiveshell import InteractiveShell\n"
               "InteractiveShell.instance().run_line_magic('load_ext', 'workbench')\n"
               "import workbench as wb\nwb.explore", EXPLORE),
}


def one(side: str, example: str) -> dict:
    imports, body = SIDES[side]
    code = PRELUDE.format(imports=imports, example=example) + body.format()
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(f"{side} failed:\n{out.stderr[-3000:]}")
    return json.loads(line[len("RESULT"):])


def main() -> None:
    example = sys.argv[1] if len(sys.argv) > 1 else "attention"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    got: dict[str, list[dict]] = {side: [] for side in SIDES}
    for r in range(rounds):
        for side in SIDES:
            got[side].append(one(side, example))
        print(f"round {r + 1}: " + "  ".join(f"{s} {got[s][-1]['all']:.2f} s" for s in SIDES), flush=True)
    med = {side: {k: statistics.median(x[k] for x in got[side]) for k in ("imports", "first", "all")}
           for side in SIDES}
    bare = med["bare"]["all"]
    print(f"\nfirst explore in a fresh process ({example}, medians of {rounds} rounds, imports left out):")
    print(f"  bare compile                 {bare:6.2f} s   (imports {med['bare']['imports']:.2f} s)")
    for side in ("script", "kernel"):
        m = med[side]
        print(f"  {side:6s} explore, all stages  {m['all']:6.2f} s   explore() returned after {m['first']:.2f} s"
              f"   (imports {m['imports']:.2f} s)")
    print(f"ratio script / bare = {med['script']['all'] / bare:.2f}")
    print(f"ratio kernel / bare = {med['kernel']['all'] / bare:.2f}   target <= 1.5")


if __name__ == "__main__":
    main()
