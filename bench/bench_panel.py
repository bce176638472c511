"""What the panel's clicks cost a user (issue 45: "every click answers within 1 s or shows its progress";
"Find where it drifts" <= 5 s on the tour's attention example), driven through a real ``Panel`` with its
worker thread, each click timed from the call to ``p.wait()``, side by side with a bare run of the program.

Each round starts fresh interpreters, in turn:
  bare     ``import jax`` and the example, then ``jax.jit(f)(*args)`` (timed: its compile and one call): the floor
           a click that compiles and runs the program once cannot go under
  at once  ``wb.explore`` of the tour's attention example and ``Panel(ex)`` (background jobs), then, each timed
           from the click to ``p.wait()`` (XLA's stages included), as a user of the tour makes them:
             open        the panel made until every stage is shown
             first Run   the Run button (the last MLIR stage, repeat 20): its first compile and references
             first Cost  the Cost tab opened: every stage's cost, the chart, the right stage's ops
             toggle      the pattern dot_transpose switched off (a rebuild, XLA's compile in the background)
             edit        the hand edit of cse#1 (the GELU's constant 0.044715 -> 0.045), applied
             Run edited  the Run button again: its check fails
             drift       "Find where it drifts" under that failed run
           then every other button and tab of the panel: the drift's "Op in the Diff" and "Line in Source", a
           stage picked, swap, each tab opened, the change summary's "final MLIR vs before", "Compare stages", an
           XLA pass off, the Source tab's bars by measured time, "Find applicable patterns", the patterns reset;
           each click right after the one before
  reading  the same clicks by a user who reads for THINK seconds after the panel shows and after the failed
           check, before clicking on (the panel works ahead meanwhile: the first Run's reference, the search's
           modules)
  --against DIR: the "at once" and "reading" sides again with the workbench of DIR (another checkout, e.g.
           ``git worktree add /tmp/before <commit>``), interleaved: before and after in one run.

Prints each click's median wall seconds, over the bare run (a ratio that travels between machines), the CPU
seconds the process spent during it (XLA's threads included: what a loaded machine's wall time hides), when
the user first saw an answer (the status line's first word, else the result), marked where that took over 1 s,
and what the drift found (op, line, runs, probes) so that a change in speed is seen beside its answer. No time
is asserted anywhere (tests count work: tests/test_drift_work.py).
Usage: python bench/bench_panel.py [--rounds N] [--against DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THINK = 5.0  # seconds the reading side reads the panel, and the failed check, before clicking on

BARE = """
import json, time
import jax
import workbench.examples.attention as attention
args = attention.args()
jax.block_until_ready(args)
t = time.perf_counter()
jax.block_until_ready(jax.jit(attention.fn)(*args))
print("RESULT" + json.dumps({"bare": time.perf_counter() - t}))
"""

PANEL = """
import json, sys, time
THINK = __THINK__
import workbench as wb
import workbench.examples.attention as attention
from workbench.views.widgets.panel import Panel, _TABS

ex = wb.explore(attention.fn, *attention.args())
got, cpu, said = {}, {}, {}


def click(name, do, tour=True):
    # do() timed until the panel is idle; a click of the tour that fails ends the bench, another is left out
    first = []  # when the status line first changed after the click
    watch = lambda ch: first or first.append(time.perf_counter())
    p.status.observe(watch, "value")
    t, c = time.perf_counter(), time.process_time()
    try:
        do()
        p.wait()
    except Exception as e:
        if tour:
            raise
        print(f"{name}: {e}", file=sys.stderr)
        return
    finally:
        p.status.unobserve(watch, "value")
    got[name], cpu[name] = time.perf_counter() - t, time.process_time() - c
    said[name] = min(first[0] - t, got[name]) if first else got[name]  # what the user sees first: word or result
    if p.last_error and tour:
        raise SystemExit(f"{name}: {p.last_error}")


def tab(title):
    return lambda: setattr(p.tabs, "selected_index", _TABS.index(title))


def edit():
    p.editor.open("cse#1")
    if hasattr(p.editor, "area"):  # a checkout before the editor component (--against): a Textarea
        p.editor.area.value = p.editor.area.value.replace("dense<4.471500e-02>", "dense<4.500000e-02>")
        p.editor.apply()
    else:
        p.editor.apply(p.editor.text.replace("dense<4.471500e-02>", "dense<4.500000e-02>"))


t, c = time.perf_counter(), time.process_time()
p = Panel(ex)
p.wait()
got["open"], cpu["open"] = time.perf_counter() - t, time.process_time() - c
time.sleep(THINK)
click("first Run", lambda: p.run(ex.default_run_stage().name, repeat=20))
click("first Cost", tab("Cost"))
click("toggle", lambda: p.toggle_patterns(["dot_transpose"], False))
click("edit", edit)
click("Run edited", lambda: p.run(p.ex.default_run_stage().name, repeat=20))
offered = getattr(p.drift, "offered", None)  # before the Run tab's component (--against): the button shows
assert offered if offered is not None else p.drift.button.layout.display == "", "the edited run should fail its check"
time.sleep(THINK)
click("drift", p.drift.find)
d = p.drift.found
op = {"op": d.op.op, "result": d.op.result, "line": d.op.line, "source": d.line, "runs": d.runs,
      "probes": d.probes} if d is not None and d.op is not None else None
click("Op in the Diff", lambda: p.drift.show_in("diff"), False)
click("Line in Source", lambda: p.drift.show_in("source"), False)
click("pick a stage", lambda: p.pick(p.ex.stages[len(p.ex.stages) // 2].name), False)
click("swap", p._swap, False)
for title in _TABS:
    if title != "Cost":
        click(f"tab {title}", tab(title), False)
click("MLIR vs before", lambda: p.summary.diff("mlir"), False)
click("Compare stages", lambda: p.compare(), False)
click("XLA pass off", lambda: p.toggle_xla(["algsimp"], False), False)
click("Source: measured", lambda: p.source.set_metric("measured"), False)
click("applicable", lambda: p.find_applicable(), False)
click("reset patterns", p.reset_patterns, False)
print("RESULT" + json.dumps({"clicks": got, "cpu": cpu, "said": said, "drift": op}))
p.close()
"""

# the clicks of the tour, in its order (the first seven are the tour's; the rest every other button and tab)
CLICKS = ("open", "first Run", "first Cost", "toggle", "edit", "Run edited", "drift", "Op in the Diff",
          "Line in Source", "pick a stage", "swap", "tab Diff", "tab Passes", "tab Run", "tab Compile", "tab Graph",
          "tab Source", "tab Analyze", "tab Collectives", "MLIR vs before", "Compare stages", "XLA pass off",
          "Source: measured", "applicable", "reset patterns")


def one(code: str, root: str = ROOT) -> dict:
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root,
                         timeout=900)
    line = next((ln[6:] for ln in out.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(f"the bench's child failed ({root}):\n{out.stderr[-3000:]}")
    return json.loads(line)


def report(title: str, runs: list[dict], bare: float) -> None:
    print(f"\n{title}")
    print(f"  {'click':16s} {'seconds':>8s} {'/ bare':>7s} {'CPU s':>6s} {'first said':>10s}")
    for c in CLICKS:
        done = [p for p in runs if c in p["clicks"]]
        if not done:
            print(f"  {c:16s} {'(failed: see the child)':>34s}")
            continue
        s = statistics.median(p["clicks"][c] for p in done)
        used = statistics.median(p["cpu"][c] for p in done)
        said = [p["said"][c] for p in done if c in p.get("said", {})]
        when = statistics.median(said) if said else None
        late = "  <- nothing said within 1 s" if when is not None and when > 1.0 else ""
        print(f"  {c:16s} {s:8.2f} {s / bare:7.2f} {used:6.2f} {'-' if when is None else f'{when:.2f} s':>10s}{late}")
    print(f"  drift found: {runs[-1]['drift']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", help="another checkout of the workbench, measured beside this one")
    a = parser.parse_args()
    trees = [("this tree", ROOT)] + ([(f"against {a.against}", os.path.abspath(a.against))] if a.against else [])
    sides = [(f"{name}, {how}", root, think) for name, root in trees
             for how, think in (("clicks at once", 0.0), (f"reading {THINK:.0f} s first", THINK))]
    bare: list[float] = []
    got: dict[str, list[dict]] = {label: [] for label, _, _ in sides}
    for r in range(a.rounds):  # interleaved: every side sees the same machine
        bare.append(one(BARE)["bare"])
        for label, root, think in sides:
            got[label].append(one(PANEL.replace("__THINK__", repr(think)), root))
        print(f"round {r + 1}: bare {bare[-1]:.2f} s; " + "; ".join(
            f"{label}: first Run {got[label][-1]['clicks']['first Run']:.2f}, "
            f"drift {got[label][-1]['clicks']['drift']:.2f}" for label, _, _ in sides), flush=True)
    b = statistics.median(bare)
    print(f"\nthe panel on the tour's attention example, medians of {a.rounds} fresh processes; "
          f"bare run (jit, compile and one call) {b:.2f} s; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    for label, _, _ in sides:
        report(label, got[label], b)


if __name__ == "__main__":
    main()
