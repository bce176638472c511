"""A pipeline's steps sent to the pass worker ahead (``StepRunner.run_steps``, ``Worker.call_ahead``): the worker
keeps each step's output as the next step's input and has the next request before it answers, so it never waits
for the notebook's process between steps (issue 46). The stages must be those one request per step gives, the
cache must serve what it held, and a failing step must say what it said before, with nothing left unread."""
from __future__ import annotations

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.pipeline.build import clear_caches
from workbench.pipeline.runner import StepRunner, default_runner

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

STEPS = ["inline", "canonicalize", "cse", "canonicalize", "cse", "canonicalize", "enzyme-hlo-opt", "cse"]


def _series(names):
    return [(f"{n}#{i}", n, f"{names[i - 1]}#{i - 1}" if i else "stablehlo") for i, n in enumerate(names)]


def test_steps_sent_ahead_give_what_one_request_per_step_gives():
    fn, args = examples.load("attention")
    text = wb.explore(fn, *args, pipeline="none")["stablehlo"].text_with_locations
    one_by_one, ahead = StepRunner(), StepRunner()
    expected, t = [], text
    for stage, pipeline, source in _series(STEPS):
        r = one_by_one.run(stage, t, pipeline, source=source)
        expected.append((r.text, r.cached))
        t = r.text
    sent = ahead.worker.executions
    got = [(r.text, r.cached) for r in ahead.run_steps(text, _series(STEPS))]
    assert got == expected
    assert any(cached for _, cached in got)  # a step that changed nothing before the same pass again
    assert any(not cached for _, cached in got)
    assert ahead.worker.executions - sent == len(STEPS)  # one request per step, none repeated
    assert ahead.hits == sum(c for _, c in got) and ahead.misses == len(STEPS) - ahead.hits
    # asked again, every step comes from the cache and the worker gets no request
    sent = ahead.worker.executions
    assert [r.text for r in ahead.run_steps(text, _series(STEPS))] == [t for t, _ in expected]
    assert ahead.worker.executions == sent


def test_a_step_failing_in_the_middle_says_what_it_says_alone_and_leaves_no_answer_unread():
    fn, args = examples.load("attention")
    runner = default_runner()
    worker = runner.worker
    clear_caches()
    ex = wb.explore(fn, *args, pipeline="canonicalize,cse,one-shot-bufferize,canonicalize,cse")
    assert ex.error.stage == "one-shot-bufferize#1"
    assert "not bufferized" in ex.error.diagnostics
    assert [s.name for s in ex.stages] == ["jaxpr", "stablehlo", "canonicalize#1", "cse#1", "one-shot-bufferize#1"]
    stale, restarts = worker.stale, worker.restarts
    alone = wb.explore(fn, *args, pipeline="canonicalize,cse,one-shot-bufferize")
    assert (alone.error.stage, alone.error.reason) == (ex.error.stage, ex.error.reason)
    assert "not bufferized" in alone.error.diagnostics
    assert (worker.stale, worker.restarts) == (stale, restarts)
    # the worker serves the next series from a fresh text, not from the failed one's
    again = wb.explore(fn, *args, pipeline="canonicalize,cse,canonicalize")
    assert again.error is None and again["cse#1"].text == ex["cse#1"].text


def test_a_toggle_that_changes_nothing_finds_the_later_steps_cached():
    runner = default_runner()
    clear_caches()
    ex = wb.explore(lambda x: jnp.tanh(x @ x.T).sum(axis=0) * 2.0, jnp.ones((8, 8)))
    first = [s for s in ex.stages if s.group == "mlir"]
    hits = runner.hits
    off = ex.with_patterns(disable=["add_simplify"])  # a pattern this program never matches
    later = [s for s in off.stages if s.group == "mlir"]
    assert [s.text for s in later] == [s.text for s in first]
    patterns = [i for i, s in enumerate(later) if s.name.startswith("enzyme-hlo-patterns")]
    # every stage that is not a pattern stage (whose pass string the toggle changed) is the cache's
    assert all(s.cached for i, s in enumerate(later) if i not in patterns)
    assert runner.hits - hits >= len(later) - len(patterns)


def test_xla_inputs_context_is_made_ahead_and_serves_one_module_only():
    import time

    from workbench.ir import mlir as ir_mlir

    ir_mlir._SPARE.clear()
    ir_mlir.context_ahead()
    for _ in range(400):  # the thread makes it in milliseconds
        if ir_mlir._SPARE:
            break
        time.sleep(0.01)
    ahead = ir_mlir._SPARE[0]
    a = ir_mlir.parse_module(ir_mlir._WARM, allow_unregistered=False)
    b = ir_mlir.parse_module(ir_mlir._WARM, allow_unregistered=False)
    assert a.context is ahead and b.context is not ahead  # taken once, then a fresh one
    assert "stablehlo.add" in str(a) and str(a) == str(b)


def test_xla_input_is_scrubbed_here_to_the_module_enzymes_pass_gives_and_falls_back_to_the_pass(monkeypatch):
    """XLA's input drops Enzyme's attributes with the text scrubber, not a round trip to the worker: parsed,
    the same module enzyme-ad's drop-unsupported-attributes gives. Where the scrubber leaves what jaxlib cannot
    parse, the pass is run and the compile goes on with the same stages."""
    from tests.corpus import program
    from workbench.ir.locations import xla_locations
    from workbench.ir.mlir import parse_module
    from workbench.pipeline import exported

    inst = program("pure_callback").build()  # its patterns leave enzymexla.* attributes that jaxlib cannot parse
    runner = default_runner()
    made, requests = [], []
    for scrubber in (None, lambda text: text):  # then a scrubber that leaves the attributes
        if scrubber is not None:
            monkeypatch.setattr(exported, "strip_enzymexla_attributes", scrubber)
        clear_caches()
        sent = runner.worker._child.sent["run_pipeline"]  # the steps go as run_step, a pass alone as run_pipeline
        ex = wb.explore(inst.fn, *inst.args)  # one line: XLA's metadata holds the caller's frames
        # XLA's stages too (the compile ran); the backend's files are numbered by the process's compiles
        made.append([(s.name, s.text if s.group != "backend" else "") for s in ex.stages])
        requests.append(runner.worker._child.sent["run_pipeline"] - sent)
        assert not ex.error
    assert requests == [0, 1]  # the worker ran the pass only where the scrubber fell short
    assert made[0] == made[1]
    monkeypatch.undo()
    last = xla_locations([s for s in ex.stages if s.group == "mlir"][-1].text_with_locations)
    assert "enzymexla" in last

    def printed(text):
        return parse_module(text, allow_unregistered=False).operation.get_asm(enable_debug_info=True)

    assert printed(exported.prepare_for_jax(last, scrub=True)) == printed(exported.prepare_for_jax(last))
