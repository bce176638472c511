"""XLA's compile in the background: explore and every toggle start it as soon as the final MLIR
module is known; reading the XLA stages waits for that compile (never a second one); a newer toggle
supersedes compiles still queued; a failure is the failed stage, as ever; the panel shows the MLIR
stages at once and the XLA stages when they arrive, and never those of an Exploration it has left.

Compiles are counted with ``build.xla_compiles()``. To make compiles queue up deterministically, a
test holds XLA's one compile thread: a callback of a finished compile runs on that thread and
waits on an Event (callbacks of ``ex.xla_future()`` run there, as its docstring says).
"""
import itertools
import re
from html import unescape
import threading
import time
from contextlib import contextmanager

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.pipeline import xla_probe
from workbench.pipeline.build import xla_compiles
from workbench.views.widgets import Panel

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

_FRESH = itertools.count(1)


def fresh_scale():
    """A function whose module no compile of this process has seen (its constant is new)."""
    k = float(next(_FRESH)) + 0.5

    def scaled(x, y):
        return jnp.dot(x.T, y.T).T * k

    return scaled


ARGS = (jnp.ones((8, 16)), jnp.ones((4, 8)))


def until(condition, timeout=300.0):
    """Poll ``condition`` (never starts anything) until it holds; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


@contextmanager
def compile_thread_held():
    """Hold XLA's compile thread: compiles started meanwhile stay queued until the block ends."""
    gate, held = threading.Event(), threading.Event()
    holder = wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize")

    def hold(_f):
        if threading.current_thread().name == "wb-xla":
            held.set()
            gate.wait(300)

    holder.xla_future().add_done_callback(hold)
    try:
        assert held.wait(300), "the holder's compile never ran on the compile thread"
        yield
    finally:
        gate.set()


pytestmark = pytest.mark.usefixtures("xla_idle")  # compiles are counted: those of earlier tests end first


def xla_names(ex):
    return [s.name for s in ex.stages if s.group in ("xla", "backend")]


# -- the Exploration -------------------------------------------------------------------------------------
def test_explore_starts_the_compile_and_the_stages_come_from_it():
    before = xla_compiles()
    ex = wb.explore(fresh_scale(), *ARGS)
    until(ex.xla_ready)  # nothing here asks for the stages: the compile explore started ends
    assert xla_compiles() == before + 1
    stages = ex.stages  # served by that compile: no second one
    assert xla_compiles() == before + 1
    assert "xla:optimized" in [s.name for s in stages] and not ex["xla:optimized"].cached
    assert ex.error is None and ex.xla_future().done()
    # a toggle that leaves the final module as it is: the same compile serves it, marked cached
    same = ex.with_patterns(disable=["pad_simplify"])
    assert same.pipeline_stages[-1].text == ex.pipeline_stages[-1].text
    assert same.xla_ready() and same["xla:optimized"].cached and xla_compiles() == before + 1
    # one that changes it: its own compile, started by the toggle, then read
    other = ex.with_patterns(disable=["dot_transpose"])
    assert other.pipeline_stages[-1].text != ex.pipeline_stages[-1].text
    other.xla_future().result(300)
    assert xla_compiles() == before + 2 and len(xla_names(other)) > 3 and xla_compiles() == before + 2
    assert ex.xla_result is not None and other.xla_result is not ex.xla_result


def started_at_step(monkeypatch) -> tuple[list[int], list[int]]:
    """(steps, starts): a list that grows by one as each MLIR step's stage is made (as the worker's answers
    come), and the number of steps made when each XLA compile was started (queued) -- during the steps or after."""
    from workbench.pipeline import steps
    from workbench.pipeline.compile_queue import XLA_QUEUE

    made, starts = [], []
    stage_from_run, start = steps.stage_from_run, XLA_QUEUE.start
    monkeypatch.setattr(steps, "stage_from_run", lambda *a, **k: made.append(1) or stage_from_run(*a, **k))
    monkeypatch.setattr(XLA_QUEUE, "start", lambda *a, **k: starts.append(len(made)) or start(*a, **k))
    return made, starts


def test_xla_compiles_the_stage_the_last_steps_leave_as_it_is_while_they_run(monkeypatch):
    """The default pipeline's last change is early (patterns#1, step 5 of 21); once every pass that ran up to it
    has run again and left the stage as it is (step 11), XLA compiles it beside the steps still running, and that
    compile gives the stages."""
    made, starts = started_at_step(monkeypatch)
    before = xla_compiles()
    ex = wb.explore(fresh_scale(), *ARGS)
    mlir = ex.pipeline_stages[2:]
    last_change = max(i for i, s in enumerate(mlir) if s.changed)
    before_it = {s.produced_by for s in mlir[:last_change + 1]}
    settled = next(j for j in range(last_change + 1, len(mlir))  # each of those passes has run again since
                   if before_it <= {s.produced_by for s in mlir[last_change + 1:j + 1]})
    assert settled + 5 < len(mlir) == len(made), (settled, len(mlir), len(made))
    assert starts[0] == settled + 1, (starts, settled)  # queued as the stage that settled it was made
    assert "xla:optimized" in xla_names(ex) and not ex["xla:optimized"].cached  # the exploration's own compile
    assert xla_compiles() == before + 1
    assert ex.run().check.passed


def twice_sin(x):
    return (jnp.sin(x) + jnp.sin(x)).T.T * 3.5


def fresh_twice_sin():
    """``twice_sin`` with a constant no compile of this process has seen."""
    k = float(next(_FRESH)) + 0.25
    return lambda x: (jnp.sin(x) + jnp.sin(x)).T.T * k


def test_a_stage_changed_after_it_settled_is_compiled_again_and_the_stages_are_the_last_ones(monkeypatch):
    """cse changes the program, canonicalize and cse again leave it (XLA begins on it), then enzyme-hlo-opt
    removes the transposes: that compile was for nothing (here it is let run before the steps go on), the last
    stage is compiled too, and its stages are shown. In a pipeline whose changing pass does not come again
    nothing is compiled ahead."""
    made, starts = started_at_step(monkeypatch)
    ex = wb.explore(twice_sin, jnp.ones((4, 8)), pipeline="cse,canonicalize,canonicalize,enzyme-hlo-opt")
    assert [s.changed for s in ex.pipeline_stages[2:]] == [True, False, False, True]
    assert starts and all(n == 4 for n in starts), starts
    made.clear(), starts.clear()
    from workbench.pipeline.compile_queue import XLA_QUEUE

    start = XLA_QUEUE.start  # the compile begun ahead is taken by the compile thread before the steps go on,
    before = xla_compiles()  # so that the last stage's compile cannot cancel it (whatever the machine's load)

    def start_and_let_it_run(*a, **k):
        start(*a, **k)
        until(lambda: xla_compiles() > before)

    monkeypatch.setattr(XLA_QUEUE, "start", start_and_let_it_run)
    ex = wb.explore(twice_sin, jnp.ones((4, 8)), pipeline="cse,canonicalize,cse,canonicalize,enzyme-hlo-opt")
    assert [s.changed for s in ex.pipeline_stages[2:]] == [True, False, False, False, True]
    assert starts[0] == 3 and all(n == 5 for n in starts[1:]), starts  # cse's stage, then the last one's
    assert "stablehlo.transpose" in ex["cse#1"].text and "stablehlo.transpose" not in ex["enzyme-hlo-opt#1"].text
    assert "transpose" not in ex["xla:before_optimizations"].text  # XLA's input: the last stage, not cse's
    assert not ex["xla:optimized"].cached and xla_compiles() == before + 2
    assert ex.run().check.passed


def test_a_compile_begun_ahead_and_still_queued_is_cancelled_by_the_last_stages(monkeypatch):
    """The same, with XLA's compile thread busy: the compile begun on cse's stage is still queued when the
    last stage's compile is queued, which supersedes it: one compile, of the last stage."""
    made, starts = started_at_step(monkeypatch)
    with compile_thread_held():
        before, _ = xla_compiles(), (made.clear(), starts.clear())  # the holder's own explore is not counted
        ex = wb.explore(fresh_twice_sin(), jnp.ones((4, 8)), pipeline="cse,canonicalize,cse,canonicalize,enzyme-hlo-opt")
        assert starts[0] == 3 and not ex.xla_ready(), starts
    assert "transpose" not in ex["xla:before_optimizations"].text and not ex["xla:optimized"].cached
    assert xla_compiles() == before + 1
    assert ex.run().check.passed


def test_a_program_no_pass_changes_is_not_compiled_ahead(monkeypatch):
    made, starts = started_at_step(monkeypatch)
    before = xla_compiles()
    ex = wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize,canonicalize,canonicalize,canonicalize")
    assert not any(s.changed for s in ex.pipeline_stages[2:])
    assert starts and all(n == 4 for n in starts), starts  # no compile was started while the steps ran
    ex.stages
    assert xla_compiles() == before + 1


def test_a_newer_toggle_cancels_the_queued_compile_and_reading_the_old_one_compiles_it():
    ex = wb.explore(fresh_scale(), *ARGS)
    ex.stages
    a, b = [p for p in ex.xla_passes if p in ("algsimp", "batch-dot-simplification", "reshape-decomposer")][:2]
    with compile_thread_held():
        before = xla_compiles()
        first = ex.with_xla(disable=[a])  # queued behind the held thread (a pass already reported: no wait)
        second = ex.with_xla(disable=[b])  # the same program's newer compile: the first one is dropped
        watched = second.xla_future()  # someone watches the second: no newer compile cancels it
        others = [wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize") for _ in range(3)]
    watched.result(300)
    assert watched.done() and not watched.cancelled()
    until(lambda: others[-1].xla_ready())
    # at most two queued compiles that nobody waits for: the oldest of the three others was dropped
    assert not others[0].xla_ready() and not first.xla_ready()
    assert xla_compiles() == before + 3  # second, others[1], others[2]
    assert a in first.spec.xla_disabled and not any(n.startswith(f"xla:{a}#") for n in xla_names(first))
    assert xla_compiles() == before + 4  # reading the first compiled it then, on demand
    assert xla_names(second) and xla_compiles() == before + 4


def test_a_watched_compile_goes_ahead_of_queued_ones_nobody_waits_for():
    hold_again, held_again = threading.Event(), threading.Event()

    def hold(_f):
        if threading.current_thread().name == "wb-xla":
            held_again.set()
            hold_again.wait(300)

    with compile_thread_held():
        early = wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize")
        late = wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize")
        late.xla_future().add_done_callback(hold)  # watched (as the panel watches): it goes first
    try:
        assert held_again.wait(300)
        assert late.xla_ready() and not early.xla_ready()  # queued before `late`, compiled after it
        assert "xla:optimized" in late.names
    finally:
        hold_again.set()
    until(early.xla_ready)
    assert "xla:optimized" in early.names


def test_a_failed_background_compile_is_the_failed_stage():
    with compile_thread_held():
        before = xla_compiles()
        bad = wb.explore(fresh_scale(), *ARGS, pipeline="canonicalize", xla_options={"xla_no_such_flag": "1"})
        p = Panel(bad)
        p.wait(xla=False)
        assert not p.core.model["complete"] and p.core.model["error"] is None and p.right == "canonicalize#1"
    try:
        p.wait()  # the compile fails in the background: the panel shows the failed stage, picked
        rows = {r["stage"]: r["error"] for r in p.core.model["stages"]}
        assert rows["xla:compile"] and p.core.model["complete"] and p.last_error is None
        assert p.core.model["error"]["stage"] == "xla:compile" and p.right == "xla:compile"
        assert "has no text to compare" in p.diff_view.data["diff"]["note"]
    finally:
        p.close()
    assert xla_compiles() == before + 1
    assert bad.error.stage == "xla:compile" and "xla_no_such_flag" in str(bad.error)
    assert bad["xla:compile"].error and bad["canonicalize#1"].text and xla_compiles() == before + 1
    # options that make XLA abort are refused before any compile, as ever
    with pytest.raises(wb.XlaOptionError, match="cannot be given together"):
        bad.with_xla(disable=["algsimp"], xla_enable_hlo_passes_only="cse")
    assert xla_compiles() == before + 1


def test_the_background_compile_has_64_bit_types_when_the_explore_had_them():
    import jax

    with jax.enable_x64(True):  # thread-local: the compile thread does not have it by itself
        ex = wb.explore(lambda x: jnp.sin(x) * 2.0, jnp.ones(3, jnp.float64), pipeline="canonicalize")
    ex.xla_future().result(300)
    assert "f64" in ex["stablehlo"].text and ex.error is None and "f64" in ex["xla:optimized"].text


# -- the panel ---------------------------------------------------------------------------------------------
def test_the_panel_shows_the_mlir_stages_while_xla_compiles_then_the_xla_stages():
    with compile_thread_held():
        ex = wb.explore(fresh_scale(), *ARGS)
        p = Panel(ex)
        try:
            p.wait(xla=False)  # the queue is done; XLA's stages are still on their way
            rows = [r["stage"] for r in p.core.model["stages"]]
            assert rows == [s.name for s in ex.pipeline_stages]
            assert not p.core.model["complete"]  # the stage list's spinner row: XLA is compiling
            # what it waits for, in words (the held thread has no compile running: this one is next)
            assert ex.xla_phase() == "starting" and p.jobs.awaiting == "compiling XLA: starting"
            assert "compiling XLA: starting" in p.status.value
            assert p.last_error is None
            # Diff, Run and Cost on MLIR stages meanwhile
            p.pick("enzyme-hlo-patterns#1")
            pair = (p.left, p.right)
            p.run(stage="stablehlo", repeat=2)
            p.tabs.selected_index = 3  # Cost
            p.wait(xla=False)
            assert p.last_error is None, p.last_error
            assert p.diff_view.data["diff"]["runs"] and "stablehlo.transpose" in [r["op"] for r in p.diff_view.data["ops_delta"]]
            assert pair == (ex["enzyme-hlo-patterns#1"].parent, "enzyme-hlo-patterns#1")
            assert p.core.model["runs"][-1]["check"]["passed"]
            cost = p.cost.data
            assert "XLA is compiling" in cost["note"] and "xla:optimized" not in [r[0] for r in cost["table"]["rows"]]
            assert not ex.xla_ready()
        except BaseException:
            p.close()
            raise
    try:
        p.wait()
        assert [r["stage"] for r in p.core.model["stages"]] == ex.names and p.core.model["complete"]
        assert "compiling XLA" not in p.status.value
        assert "xla:optimized" in [r[0] for r in p.cost.data["table"]["rows"]]  # the Cost tab filled anew: XLA's rows
        assert "algsimp" in [n for n, _, _ in p.passes.data["xla"]["items"]]
        assert (p.left, p.right) == pair  # the pick stays
    finally:
        p.close()


def test_a_superseded_toggle_never_shows_the_old_modules_xla_stages():
    ex = wb.explore(fresh_scale(), *ARGS)
    p = Panel(ex)
    shown = []  # every stage list the panel showed, with the Exploration it showed then
    try:
        p.wait()
        p.core.stages.observe(lambda ch: shown.append((p.ex, ch["new"]["model"]["stages"])), "data")
        with compile_thread_held():
            p.toggle_patterns(["dot_transpose"], False)  # A: its compile queues behind the held thread
            p.wait(xla=False)
            a = p.ex
            assert a is not ex and not p.core.model["complete"]
            gate = threading.Event()
            p._submit("holding", None, gate.wait, busy=True)  # the panel's queue waits...
            p.toggle_patterns(["transpose_dot_reorder"], False)  # ...with B's rebuild queued behind it
        try:
            a.xla_future().result(300)  # A's compile ends: its stages' job is queued after B's rebuild
        finally:
            gate.set()
        p.wait()
        b = p.ex
        assert b is not a and b.spec.selection.disabled == {"dot_transpose", "transpose_dot_reorder"}
        assert b.pipeline_stages[-1].text != a.pipeline_stages[-1].text
        assert [r["stage"] for r in p.core.model["stages"]] == b.names and p.last_error is None
        with_xla = [(who, rows) for who, rows in shown if any(r["group"] == "xla" for r in rows)]
        assert with_xla and all(who is b for who, _ in with_xla)
        assert all([r["stage"] for r in rows] == b.names for _, rows in with_xla)
        assert any(who is a for who, _ in shown)  # A's MLIR stages were shown, its XLA stages never
    finally:
        p.close()


def test_an_xla_toggle_says_what_it_waits_for_and_the_steps_the_compile_took(monkeypatch):
    """Issue 27 item 5: while XLA's stages are on their way the status line says what XLA's compile does
    (queued, trying the compile in a child process, compiling with dumps, reading them), and once they are
    shown, how long each step took; ex.xla_phase() and ex.xla_steps() say the same from Python."""
    ex = wb.explore(fresh_scale(), *ARGS)
    ex.xla_future().result(300)
    assert ex.xla_phase() == ""  # nothing to wait for
    assert [t.split(",")[0] for t, _ in ex.xla_steps()][:1] == ["XLA compiling"]
    p = Panel(ex)
    try:
        p.wait()
        seen = []  # the status lines while the toggle's compile runs, read as the page would (no waiting)
        # the child's try is held until the status line has said it (a warm child answers in 0.1 s, faster
        # than the line is redrawn), then goes on as it would
        real, said = xla_probe._PROBER.compile, threading.Event()
        monkeypatch.setattr(xla_probe._PROBER, "compile", lambda *a, **k: said.wait(120) and real(*a, **k))
        p.toggle_xla(["algsimp"], False)
        until(lambda: seen.append(unescape(p.status.value)) or "in a child process" in seen[-1])
        said.set()
        until(lambda: seen.append(unescape(p.status.value)) or "XLA's stages shown" in seen[-1])
        words = " ".join(seen)
        assert "compiling XLA: XLA compiling in a child process (it can abort on disabled passes)" in words, words
        done = unescape(p.status.value)
        off = p.ex
        steps = [text for text, _ in off.xla_steps()]
        # disabled passes can make XLA abort, so the compile runs in a child process, once: its dumps are the stages
        assert steps[0] == ("XLA compiling in a child process (it can abort on disabled passes), writing a dump "
                            "after each HLO pass")
        assert re.fullmatch(r"reading XLA's \d+ dump files", steps[1]) and len(steps) == 2, steps
        assert all(s >= 0 for _, s in off.xla_steps())
        assert re.search(r"XLA's stages shown: ready after \d+\.\d s \(XLA compiling in a child process \d+\.\d s; "
                         r"reading XLA's \d+ dump files \d+\.\d s\), drawn in", done), done
        assert "marking the selection" not in done and p.last_error is None
    finally:
        p.close()


def test_an_index_into_the_trace_and_mlir_stages_does_not_wait_for_xla():
    with compile_thread_held():  # XLA's compile cannot run: anything that waited for it would hang here
        ex = wb.explore(fresh_scale(), *ARGS)
        early = ex.pipeline_stages
        assert [ex[k].name for k in range(len(early))] == [s.name for s in early]
        assert ex[1] is ex["stablehlo"] is early[1] and not ex.xla_ready()
        assert ex.xla_phase() == "starting"  # next in line behind the held thread
    assert ex[len(early)].group == "xla" and ex[-1].group in ("xla", "backend")  # past them: XLA's, waited for
