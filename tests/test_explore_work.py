"""The work an explore does beyond the compilers', counted (issue 46): on fixed programs written with Flax NNX,
Equinox and jax.jit (one with a jax.debug.print), a fresh ``wb.explore`` with every stage made traces the
user's Python once, lowers it once, copies its arguments at most once, round-trips the module's text through
StableHLO's portable format once, parses a stage's text into JAX once (XLA's input), compiles with XLA once
and has the pass worker run one pipeline per MLIR step it runs, plus at most one call that readies XLA's input.

A feature that adds an explore-time trace, lowering, copy, round trip or compile fails here, not in a user's
kernel. Counted by wrapping the functions that do each piece of work, never by timing."""
from __future__ import annotations

import collections
import difflib
import functools
import re
import threading
import time

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.pipeline import program as program_mod
from workbench.pipeline import trace as trace_mod
from workbench.pipeline import worker as worker_mod
from workbench.pipeline.build import clear_caches, xla_compiles

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


class Counts(collections.Counter):
    """What one explore did, by kind of work."""


@pytest.fixture
def counted(monkeypatch):
    """A Counts filled by wrappers around each counted piece of work while the test runs."""
    from jax._src.interpreters import mlir as jax_mlir

    counts = Counts()

    def count(owner, name, key):
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    count(jax_mlir, "lower_jaxpr_to_module", "lowerings")
    count(trace_mod, "fresh_copy", "argument copies")
    count(trace_mod, "portable_text", "portable round trips")
    count(program_mod, "parse_module", "parses into JAX")
    original = worker_mod.Worker.call

    def call(self, method, *args, **kwargs):  # the pipelines the worker runs (not its one-off catalog queries)
        counts["worker pipelines"] += method == "run_pipeline"
        return original(self, method, *args, **kwargs)

    monkeypatch.setattr(worker_mod.Worker, "call", call)
    ahead = worker_mod.Worker.call_ahead

    def call_ahead(self, method, args, on_reply, timeout=None):  # steps sent ahead: each one the worker ran
        def counted(reply):
            counts["worker pipelines"] += method == "run_step" and not reply.value[3]
            on_reply(reply)
        return ahead(self, method, args, counted, timeout)

    monkeypatch.setattr(worker_mod.Worker, "call_ahead", call_ahead)
    return counts


def explore_counted(counts: Counts, fn, *args) -> tuple[wb.Exploration, Counts]:
    """A fresh explore (no cached step, compile or trace) with every stage made, and what it did."""
    clear_caches()
    jax.clear_caches()
    counts.clear()
    compiles = xla_compiles()
    ex = wb.explore(fn, *args)
    ex.stages  # noqa: B018 -- XLA's stages too: the whole exploration
    assert not ex.error and not [s.name for s in ex.stages if s.error]
    counts["xla compiles"] = xla_compiles() - compiles
    return ex, Counts(counts)


def assert_once(ex: wb.Exploration, counts: Counts, traces: int) -> None:
    steps_run = sum(1 for s in ex.stages if s.group == "mlir" and not s.cached)
    assert traces == 1, f"the user's Python ran {traces} times"
    assert counts["lowerings"] == 1, counts
    assert counts["argument copies"] <= 1, counts
    assert counts["portable round trips"] == 1, counts
    assert counts["parses into JAX"] == 1, counts
    assert counts["xla compiles"] == 1, counts
    # each step the worker ran, once, and nothing else: XLA's input is made here (Enzyme's attributes scrubbed)
    assert counts["worker pipelines"] == steps_run, (steps_run, counts)


def test_nnx_train_step_is_traced_lowered_and_copied_once(counted):
    from flax import nnx
    import optax

    traced = []

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.a, self.b = nnx.Linear(8, 16, rngs=rngs), nnx.Linear(16, 2, rngs=rngs)

        def __call__(self, x):
            traced.append(1)
            return self.b(nnx.relu(self.a(x)))

    @nnx.jit
    def step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    before = jax.tree_util.tree_leaves(nnx.state(model))
    ex, counts = explore_counted(counted, step, model, optimizer, jnp.ones((4, 8)), jnp.zeros((4, 2)))
    assert_once(ex, counts, len(traced))
    # the one copy is the one the program was traced from: the user's model is untouched
    assert all(a is b for a, b in zip(before, jax.tree_util.tree_leaves(nnx.state(model))))
    assert "dot_general" in ex["jaxpr"].text


def test_equinox_filter_jit_is_traced_lowered_and_copied_once(counted):
    import equinox as eqx

    traced = []

    @eqx.filter_jit
    def predict(model, x):
        traced.append(1)
        return jax.vmap(model)(x)

    model = eqx.nn.MLP(6, 3, 16, 2, key=jax.random.PRNGKey(0))
    ex, counts = explore_counted(counted, predict, model, jnp.ones((5, 6)))
    assert_once(ex, counts, len(traced))


def test_jax_jit_with_a_debug_print_is_traced_and_lowered_once(counted):
    traced = []

    @jax.jit
    def power(a, v):
        traced.append(1)

        def body(i, v):
            v = a @ v
            jax.debug.print("step {i}: {n}", i=i, n=jnp.linalg.norm(v))
            return v / jnp.linalg.norm(v)

        return jax.lax.fori_loop(0, 3, body, v)

    ex, counts = explore_counted(counted, power, jnp.eye(4) * 2.0, jnp.ones(4))
    assert_once(ex, counts, len(traced))
    assert counts["argument copies"] == 0, counts  # jax.jit needs none: it changes no argument


def test_a_second_explore_of_the_same_program_runs_no_pass_and_no_compile(counted):
    """Caches hold across explores: the same program explored again from the same line (its locations name
    the line that called explore, as a notebook cell run again does) traces and lowers (the function may have
    changed), and serves every MLIR step and XLA's compile from the caches."""

    @jax.jit
    def f(x):
        return jnp.sin(x) @ x.T

    x = jnp.ones((8, 8))
    clear_caches()
    made = []
    for _ in range(2):
        counted.clear()
        compiles = xla_compiles()
        made.append(wb.explore(f, x))
        made[-1].stages  # noqa: B018
    assert counted["worker pipelines"] == 0, counted
    assert xla_compiles() == compiles
    assert counted["lowerings"] == 1 and counted["portable round trips"] == 1
    assert [s.text for s in made[0].stages] == [s.text for s in made[1].stages]


def test_the_trace_collects_young_garbage_and_defers_a_full_collection_until_it_ends():
    """Inside the user's function (the trace) the collector runs, but a full collection, which walks the whole
    heap, waits; after the explore the collector's settings are the user's again, also after a trace that fails."""
    import gc

    before = gc.get_threshold()
    inside = []

    def f(x):
        inside.append((gc.isenabled(), gc.get_threshold()))
        return jnp.cos(x) * 2

    wb.explore(f, jnp.ones(4), pipeline="none").stages  # noqa: B018
    (enabled, thresholds), = inside
    assert enabled and thresholds[:2] == before[:2] and thresholds[2] > 10**6
    assert gc.get_threshold() == before and gc.isenabled()

    def broken(x):
        inside.append(gc.get_threshold())
        raise ValueError("no")

    with pytest.raises(Exception, match="no"):
        wb.explore(broken, jnp.ones(4))
    assert inside[-1][2] > 10**6 and gc.get_threshold() == before and gc.isenabled()


def test_the_jaxpr_is_printed_once_the_module_text_is_made_and_every_pipeline_shows_it(monkeypatch):
    """The jaxpr's printing holds the GIL as the module's round trip does: it begins when the steps go to the worker
    (or XLA compiles, or the text is asked for), never beside the trace's own work; each stage has its text."""
    order = []
    portable, text = trace_mod.portable_text, trace_mod._Printing._text
    monkeypatch.setattr(trace_mod, "portable_text", lambda low: order.append("round trip") or portable(low))
    monkeypatch.setattr(trace_mod._Printing, "_text", lambda self: order.append("print") or text(self))

    def f(x):
        return jnp.sin(x).sum()

    for pipeline in ("all", "none"):  # without steps the printing waits for XLA's compile instead (below)
        order.clear()
        ex = wb.explore(f, jnp.ones(3), pipeline=pipeline)
        assert sorted(order) == ["print", "round trip"] and (pipeline == "none" or order[0] == "round trip"), order
        assert "sin" in ex["jaxpr"].text and "reduce_sum" in ex["jaxpr"].text


def test_without_steps_the_jaxpr_is_printed_once_xla_compiles_not_while_its_input_is_made(monkeypatch):
    """A pipeline without steps: XLA's compile is next, and its input (locations, the parse) holds the GIL as the
    printing does, so the printing begins once the compile has begun."""
    from workbench.pipeline import xla as xla_mod
    from workbench.pipeline.compile_queue import XLA_QUEUE

    idle = threading.Event()
    XLA_QUEUE.when_idle(idle.set)  # the compiles earlier tests began are over: this one is next
    assert idle.wait(300)
    order = []
    text, begins = trace_mod._Printing._text, xla_mod.compile_begins
    monkeypatch.setattr(trace_mod._Printing, "_text", lambda self: order.append("print") or text(self))
    monkeypatch.setattr(xla_mod, "compile_begins", lambda: order.append("compile") or begins())
    k = float(time.time() % 1000)  # a module no compile of this process has seen

    ex = wb.explore(lambda x: jnp.cos(x).sum() * k, jnp.ones(5), pipeline="none")
    assert order == ["compile", "print"], order
    assert "cos" in ex["jaxpr"].text and ex["xla:optimized"].text


def test_without_steps_xla_begins_on_the_module_as_jax_printed_it_and_makes_the_stage_texts_hlo(monkeypatch):
    """A pipeline without steps: XLA's compile is queued before StableHLO's portable round trip makes the text the
    stage shows (from the module as JAX printed it); XLA makes the same HLO, pass by pass, of the stage's text."""
    from workbench.pipeline import build as build_mod
    from workbench.pipeline.compile_queue import XLA_QUEUE

    order = []
    portable, start = trace_mod.portable_text, XLA_QUEUE.start
    monkeypatch.setattr(trace_mod, "portable_text", lambda low: order.append("round trip") or portable(low))
    monkeypatch.setattr(XLA_QUEUE, "start", lambda *a, **k: order.append("xla") or start(*a, **k))
    k = float(time.time() % 1000)

    @jax.jit
    def inner(x):  # a private function of the module, called from @main
        return jax.nn.relu(x) * jnp.arange(6.0) + k

    def f(x):
        return inner(jnp.sin(x)).sum() + inner(x).max()

    ex = wb.explore(f, jnp.ones(6), pipeline="none")
    assert order[:2] == ["xla", "round trip"], order
    assert ex.spec.traced.stablehlo == ex["stablehlo"].text_with_locations and "func.func private" in ex["stablehlo"].text
    mine = {s.name: s.text for s in ex.stages if s.group == "xla"}
    again = build_mod._xla_stages(ex.spec, ex["stablehlo"])  # the stage's own text, compiled (not cached: another key)
    assert again.result is not ex.xla_result and len(mine) > 3
    theirs = {s.name: s.text for s in again.stages if s.group == "xla"}
    assert list(theirs) == list(mine)
    for name, text in mine.items():
        a, b = _without_frame_ends(text), _without_frame_ends(theirs[name])
        assert a == b, (name, [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)][:8])


def _without_frame_ends(hlo: str) -> str:
    """XLA's module text without the ends of its source locations (``end_line``, ``end_column``): XLA keeps one
    frame per file, function, line and column, with the end of the first location it meets, and the two texts
    define their location aliases in different orders: two locations of one line and column with different ends
    keep either end (a module written both ways shows it). Which instruction has which frame is the same."""
    return re.sub(r" end_line=\d+| end_column=\d+", "", hlo)


def test_the_module_parsed_for_xla_outlives_its_compile_until_the_next_compile_begins_and_no_longer():
    """Freeing the module parsed for XLA (and its MLIR context) holds the GIL: it is kept past its compile, so that
    the freeing does not come between XLA's result and the thread waiting for it, and freed on the analysis thread
    once the next compile runs. One such module is held at most."""
    import weakref

    from workbench.pipeline import xla as xla_mod

    k = float(time.time() % 1000)  # modules no compile of this process has seen
    wb.explore(lambda x: jnp.sin(x) * k, jnp.ones(3), pipeline="none").stages  # noqa: B018
    (first,) = xla_mod._INPUT_HELD
    gone = weakref.ref(first)
    del first
    assert gone() is not None  # kept past its compile
    wb.explore(lambda x: jnp.cos(x) * k, jnp.ones(3), pipeline="none").stages  # noqa: B018
    xla_mod._AFTER.submit(lambda: None).result(60)  # the analysis thread did what the second compile gave it
    assert gone() is None and len(xla_mod._INPUT_HELD) == 1 and xla_mod._INPUT_HELD[0] is not None
