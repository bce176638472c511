"""The first explore in a fresh process, against a bare compile in a fresh process, side by side in one run.

Each round starts three fresh interpreters, in turn:
  bare     ``import jax`` and the example, then ``jax.jit(f).lower(*args).compile()`` (timed)
  script   ``import workbench as wb`` and the example, then ``wb.explore(f, *args)`` with every stage
           read (XLA's included; timed) -- a script or the command line
  kernel   ipykernel's shell (an in-process kernel), ``%load_ext workbench`` and the example, then the same
           explore (timed) -- a notebook: loading the extension starts the Enzyme worker in the background
  cell     the same kernel, and a ``%%hlo`` cell instead of the call: the explore, the panel and the saved
           view the notebook keeps (the cell returns once they are made), then every stage read (timed)

Then the session's first XLA pass toggle, as a user makes it after reading the result for THINK seconds:
  bare     the compile of the program with that pass disabled (the toggle's floor: XLA's own time for it)
  script   ``ex.with_xla(disable=[PASS])`` with every stage read (timed): its compile runs in the child
           process that guards against XLA's aborts, started by this first toggle
  kernel   the same; in a kernel the child was started once the explore's compile was done

Imports are left out of every timed part (each side's are printed beside). The ratios are medians over the
rounds; the targets (issue 28) are kernel / bare <= 1.5 for the explore and <= 1.3 for the toggle. Each
explore's floor is printed beside it: the bare side's lowering plus the seconds the exploration's own clocks
give its MLIR passes and XLA's compile with its per-pass dumps (what the compilers take; the rest is ours).
Usage: python bench/bench_cold.py [EXAMPLE] [ROUNDS] [PASS]
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
lowered = jax.jit(fn).lower(*args)
t_lower = time.perf_counter() - t1
lowered.compile()
t2 = time.perf_counter()
print("RESULT" + json.dumps({{"imports": t1 - t0, "first": t2 - t1, "all": t2 - t1, "lower": t_lower}}))
"""

# after an explore or a %%hlo cell made ``ex``: every stage read, and the compilers' own seconds (the floor)
READ = """
t2 = time.perf_counter()
n = len(ex.stages)  # every stage, XLA's included
t3 = time.perf_counter()
assert not [s.name for s in ex.stages if s.error], ex.names
compilers = sum(s.seconds or 0 for s in ex.stages if s.group == "mlir" and not s.cached) + ex["xla:optimized"].seconds
print("RESULT" + json.dumps({{"imports": t1 - t0, "first": t2 - t1, "all": t3 - t1, "stages": n,
                             "compilers": compilers}}))
"""

EXPLORE = """
ex = wb.explore(fn, *args)
""" + READ

CELL = """
shell = km.kernel.shell
shell.user_ns.update(fn=fn, args=args)
cell = shell.run_cell("%%hlo -o ex\\nfn(*args)")  # the panel and its saved view (the bundle) as a notebook shows them
assert cell.success
ex = shell.user_ns["ex"]
""" + READ

THINK = 5.0  # seconds between the explore's result and the toggle: a user reading the panel

BARE_TOGGLE = """
time.sleep({think})
t4 = time.perf_counter()
jax.jit(fn).lower(*args).compile(compiler_options={{"xla_disable_hlo_passes": {xla_pass!r}}})
print("TOGGLE" + json.dumps({{"toggle": time.perf_counter() - t4}}))
"""

TOGGLE = """
time.sleep({think})
t4 = time.perf_counter()
off = ex.with_xla(disable=[{xla_pass!r}])
n = len(off.stages)
assert off.error is None and not [s.name for s in off.stages if s.error], off.error
print("TOGGLE" + json.dumps({{"toggle": time.perf_counter() - t4}}))
"""

SIDES = {
    "bare": ("import jax", BARE),
    "script": ("import workbench as wb\nwb.explore", EXPLORE),
    "kernel": ("from ipykernel.inprocess.manager import InProcessKernelManager  # ipykernel's shell, in process\n"
               "km = InProcessKernelManager()\n"
               "km.start_kernel()\n"
               "km.kernel.shell.run_line_magic('load_ext', 'workbench')\n"
               "import workbench as wb\nwb.explore", EXPLORE),
}
SIDES["cell"] = (SIDES["kernel"][0], CELL)
EXPLORERS = ("script", "kernel", "cell")  # the sides that explore, against "bare"


def one(side: str, example: str, xla_pass: str) -> dict:
    imports, body = SIDES[side]
    toggle = (BARE_TOGGLE if side == "bare" else TOGGLE).format(think=THINK, xla_pass=xla_pass)
    code = PRELUDE.format(imports=imports, example=example) + body.format() + toggle
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    lines = {ln[:6]: ln[6:] for ln in out.stdout.splitlines() if ln.startswith(("RESULT", "TOGGLE"))}
    if len(lines) < 2:
        raise RuntimeError(f"{side} failed:\n{out.stderr[-3000:]}")
    return {**json.loads(lines["RESULT"]), **json.loads(lines["TOGGLE"])}


def main() -> None:
    example = sys.argv[1] if len(sys.argv) > 1 else "attention"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    xla_pass = sys.argv[3] if len(sys.argv) > 3 else "cse"
    got: dict[str, list[dict]] = {side: [] for side in SIDES}
    for r in range(rounds):
        for side in SIDES:
            got[side].append(one(side, example, xla_pass))
        print(f"round {r + 1}: " + "  ".join(f"{s} {got[s][-1]['all']:.2f} s, toggle {got[s][-1]['toggle']:.2f} s"
                                             for s in SIDES), flush=True)
    med = {side: {k: statistics.median(x[k] for x in got[side])
                  for k in ("imports", "first", "all", "toggle", "lower" if side == "bare" else "compilers")}
           for side in SIDES}
    bare = med["bare"]["all"]
    print(f"\nfirst explore in a fresh process ({example}, medians of {rounds} rounds, imports left out):")
    print(f"  bare compile                 {bare:6.2f} s   (imports {med['bare']['imports']:.2f} s)")
    for side in EXPLORERS:
        m = med[side]
        returned = "the cell returned" if side == "cell" else "explore() returned"
        print(f"  {side:6s} explore, all stages  {m['all']:6.2f} s   {returned} after {m['first']:.2f} s"
              f"   (imports {m['imports']:.2f} s)")
    print(f"ratio script / bare = {med['script']['all'] / bare:.2f}")
    print(f"ratio kernel / bare = {med['kernel']['all'] / bare:.2f}   target <= 1.5")
    print(f"ratio cell / bare = {med['cell']['all'] / bare:.2f}   (the %%hlo cell: explore, panel, saved view; every "
          "stage read)")
    print(f"ratio cell returned / bare = {med['cell']['first'] / bare:.2f}   target <= 1.5 (the panel drawn and the "
          "cell done while XLA compiles)")
    for side in EXPLORERS:  # the compilers' own seconds, as bench_real's floor column
        floor = (med["bare"]["lower"] + med[side]["compilers"]) / bare
        print(f"  {side} floor = (bare lowering {med['bare']['lower']:.2f} s + the exploration's MLIR passes and XLA "
              f"compile with its dumps {med[side]['compilers']:.2f} s) / bare = {floor:.2f}")
    floor = med["bare"]["toggle"]
    print(f"\nthe first XLA pass toggle (disable {xla_pass}, {THINK:g} s after the explore), every stage back:")
    print(f"  compile of the toggled program {floor:6.2f} s   (the floor)")
    for side in EXPLORERS:
        print(f"  {side:6s} toggle                {med[side]['toggle']:6.2f} s")
    for side in EXPLORERS:
        print(f"ratio {side} toggle / bare compile = {med[side]['toggle'] / bare:.2f}   "
              f"/ the toggled program's compile = {med[side]['toggle'] / floor:.2f}"
              + ("   target <= 1.3" if side == "kernel" else ""))


if __name__ == "__main__":
    main()
