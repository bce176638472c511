"""Group testing of patterns (``applicable``, ``step``) against the one-by-one definition, on real programs.

A pattern applies when it alone changes the module; ``exact=True`` asks that of every pattern, one
run each. The default asks batches first and splits only those that are not unchanged. These tests
hold the two answers side by side, pattern by pattern, with real enzyme-ad runs throughout.
"""
import math

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.search.scan import family, first_change, scan, step_patterns
from workbench.pipeline.catalog import Pattern, catalog, patterns_pass
from workbench.pipeline.worker import Worker, WorkerPool, WorkerTimeout

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

TEXT = """
module @m {
  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x4xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.negate %arg0 : tensor<4x3xf32>
    %1 = stablehlo.negate %0 : tensor<4x3xf32>
    %2 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %4 = stablehlo.transpose %3, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %5 = stablehlo.add %1, %4 : tensor<4x3xf32>
    return %5 : tensor<4x3xf32>
  }
}
"""


def _mlp_grad():
    def loss(ws, x):
        for w in ws[:-1]:
            x = jnp.tanh(x @ w)
        return jnp.mean((x @ ws[-1]) ** 2)

    ws = [jnp.ones((16, 16)) * 0.1 for _ in range(3)]
    return jax.grad(loss), (ws, jnp.ones((8, 16)))


def _transposes(x, y):
    return (x.T @ y.T).T + 1.0


def _up_down(x, y):  # a transpose-up and a transpose-down pattern undo each other here
    return jnp.sin(x.T + y.T)


def _program(name):
    if name in ("attention", "scan"):
        return wb.explore(*[examples.load(name)[0]], *examples.load(name)[1], pipeline="none")
    if name == "mlp":
        fn, args = _mlp_grad()
        return wb.explore(fn, *args, pipeline="none")
    if name == "transposes":
        return wb.explore(_transposes, jnp.ones((8, 4)), jnp.ones((6, 8)), pipeline="none")
    if name == "up_down":
        return wb.explore(_up_down, jnp.ones((4, 3)), jnp.ones((4, 3)), pipeline="none")
    if name == "nothing":
        return wb.explore(lambda x, y: x @ y, jnp.ones((4, 3)), jnp.ones((3, 5)), pipeline="none")
    assert name == "text"
    return wb.explore_text(TEXT, pipeline="none")


def _start(ex):
    """The module as the passes first see it: "stablehlo" from a function, "input" from text."""
    return "stablehlo" if "stablehlo" in ex.names else "input"


def _answers(s):
    return [(r.name, r.group, r.changed, r.error) for r in s.rows]


def _check_honest(s):
    """A pattern that ran alone has its own seconds; one an unchanged batch decided has none."""
    for r in s.rows:
        if r.batch == 1:
            assert r.seconds > 0, r
        else:
            assert math.isnan(r.seconds) and not r.changed and r.error is None, r
    assert all(r.batch == 1 for r in s.rows if r.changed or r.error)


@pytest.mark.parametrize("name", ["attention", "mlp", "transposes", "up_down", "scan", "nothing", "text"])
def test_group_testing_finds_exactly_what_one_by_one_finds(name):
    ex = _program(name)
    seen = []
    fast = scan(ex, _start(ex), progress=False, on_progress=lambda d, t: seen.append((d, t)))
    exact = scan(ex, _start(ex), exact=True, progress=False)
    assert not fast.exact and exact.exact and exact.runs >= len(catalog())
    assert _answers(fast) == _answers(exact)
    _check_honest(fast)
    assert fast.runs < exact.runs / 3
    # the names a user gets are those, and progress counts the patterns decided
    assert ex.applicable(_start(ex), progress=False) == [r.name for r in exact.rows if r.changed]
    total = len(fast.rows)
    assert seen[0] == (0, total) and seen[-1] == (total, total) and [d for d, _ in seen] == sorted({d for d, _ in seen})
    found = sum(r.changed for r in fast.rows)
    # text laid out by hand is compared as enzyme-ad prints it: not every pattern "changes" it
    assert found == 0 if name == "nothing" else 0 < found < 30


@pytest.mark.parametrize("name", ["transposes", "scan", "text"])
def test_stepping_by_group_testing_takes_the_steps_one_by_one_takes(name):
    ex = _program(name)
    fast = step_patterns(ex, _start(ex), progress=False)
    exact = step_patterns(ex, _start(ex), progress=False, exact=True)
    assert [s.name for s in fast.stages] == [s.name for s in exact.stages] and len(fast.stages) > 1
    assert [s.text for s in fast.stages] == [s.text for s in exact.stages]
    assert fast.skipped == exact.skipped and fast.reference.text == exact.reference.text
    assert fast.runs < exact.runs
    names = [s.name.split(":")[1].split("#")[0] for s in exact.stages[1:]]
    assert ex.step(_start(ex), progress=False).applied() == names


def test_the_first_change_and_the_failures_before_it_are_the_serial_scans():
    ex = _program("transposes")
    text = ex["stablehlo"].text
    rows = scan(ex, "stablehlo", exact=True, progress=False).rows
    spec = {p.name: p.spec for p in catalog()}
    idle = [spec[r.name] for r in rows if not r.changed and not r.error]
    applies = [spec[r.name] for r in rows if r.changed]
    assert len(applies) >= 2 and len(idle) > 400
    # a serial scan of this list meets 300 idle patterns, one enzyme-ad refuses, 100 idle ones, then
    # the first that applies; the second refused one and the other that applies come after it
    bad = "no_such_pattern_at_all"
    listed = idle[:300] + [bad] + idle[300:400] + [applies[1], bad + "_either", applies[0]] + idle[400:]
    fast, slow = first_change(text, listed), first_change(text, listed, exact=True)
    assert (fast.index, fast.raised) == (slow.index, slow.raised) == (401, (300,))
    assert fast.runs < slow.runs / 4
    assert first_change(text, idle).index is None and first_change(text, []).index is None
    last = idle + [bad]
    assert first_change(text, last).raised == first_change(text, last, exact=True).raised == (len(idle),)


def test_a_pattern_that_fails_alone_shows_its_error_as_one_by_one_does():
    ex = _program("transposes")
    bogus = Pattern("no_such_pattern", "base", True, None, "", "no_such_pattern")
    pats = list(catalog())
    pats.insert(40, bogus)
    fast = scan(ex, _start(ex), patterns=pats, progress=False)
    exact = scan(ex, _start(ex), patterns=pats, exact=True, progress=False)
    assert _answers(fast) == _answers(exact)
    row = next(r for r in fast.rows if r.name == "no_such_pattern")
    assert row.error and "no_such_pattern" in row.error and row.batch == 1 and not row.changed
    _check_honest(fast)
    df = ex.applicable(_start(ex), details=True, progress=False)
    assert {"name", "group", "changed", "seconds", "error", "batch"} <= set(df.columns)
    assert df[df.changed].batch.eq(1).all() and df[df.batch > 1].seconds.isna().all()


def test_patterns_that_undo_each_other_never_return_and_never_share_a_batch():
    ex = _program("up_down")
    text = ex[_start(ex)].text
    by_name = {p.name: p for p in catalog()}
    up, down = by_name["transpose_elementwise"], by_name["elementwise_all_transpose_operands_simplify"]
    # alone: the down pattern applies (add(transpose, transpose) -> transpose(add)), the up one does not
    w = Worker()
    try:
        alone = w.call("run_each", text, [patterns_pass((up.spec,)), patterns_pass((down.spec,))], False).value
        assert [o.changed for o in alone] == [False, True]
        # together they rewrite back and forth: the run never returns (it does not come back unchanged)
        with pytest.raises(WorkerTimeout):
            w.call("run_each", text, [patterns_pass((up.spec, down.spec))], False, timeout=3)
    finally:
        w.close()
    assert family(up) != family(down)  # the default scan keeps them apart
    others = [by_name[n] for n in ("transpose_transpose", "add_simplify", "sine_simplify") if n in by_name]
    pats = [up, down] + others
    exact = scan(ex, _start(ex), patterns=pats, exact=True, progress=False)
    apart = scan(ex, _start(ex), patterns=pats, progress=False)
    assert _answers(apart) == _answers(exact) and apart.limited == 0
    # forced into one batch, the batch runs past its time limit and is split: the answer stays exact
    together = scan(ex, _start(ex), patterns=pats, families=lambda p: 0, batch_limit=1.0, progress=False)
    assert _answers(together) == _answers(exact) and together.limited >= 1
    assert [r.batch for r in together.rows[:2]] == [1, 1]
    _check_honest(together)


def test_the_pool_hands_crashes_to_the_caller_and_keeps_serving():
    pool = WorkerPool(2)
    before = sum(w.restarts for w in pool.workers)
    try:
        heard = []
        pool.work("crash", ["abort", "segv"], lambda t: (t,), lambda t, v, e: heard.append((t, type(e).__name__)))
        assert sorted(heard) == [("abort", "WorkerCrash"), ("segv", "WorkerCrash")]
        heard.clear()

        def on_result(task, value, error):
            heard.append((task, error, value[0].changed))
            return ["cse", "symbol-dce"] if task == "canonicalize" else []  # asked for, run next

        pool.work("run_each", ["canonicalize", "inline"], lambda t: ("module {\n}\n", [t], False), on_result)
        assert sorted(t for t, _, _ in heard) == ["canonicalize", "cse", "inline", "symbol-dce"]
        assert all(e is None and not changed for _, e, changed in heard)
        assert sum(w.restarts for w in pool.workers) - before == 2  # each crashed worker came back for the next request
    finally:
        for w in pool.workers[1:]:
            w.close()
