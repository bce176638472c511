"""Lesson 2, the classic cleanups: upstream MLIR's canonicalize, CSE, inlining and symbol DCE, one pass
at a time, on a layer norm written out by hand (notebooks/02).

The program repeats itself the way real code does: ``x - mu`` is written twice, and ``jax.nn.relu(h)``
three times, which JAX lowers as three calls of one private function. Which cleanup removes which
repetition, and in which order they must run to remove them all, is the lesson.
"""
from __future__ import annotations

import itertools
from functools import cache

import jax
import jax.numpy as jnp

import workbench as wb
from workbench.ir.ops import op_counts
from workbench.ir.text import pass_names

from .common import op_count
from .exercises import exercise, number_exercise
from .judge import close, from_answer, judge_names, right, wrong

CLEANUPS = ("canonicalize", "cse", "inline", "symbol-dce")  # the passes this lesson is about
LONGEST = 3  # exercise l2.q4: a pipeline of at most this many passes (its prompt in exercises.toml says 3)


def norm_act(x, gamma, beta):
    """A layer norm written out by hand, a ReLU, and two statistics of the ReLU for a training log."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    h = (x - mu) / jnp.sqrt(var + 1e-5) * gamma + beta
    y = jax.nn.relu(h)
    log = {"active": (jax.nn.relu(h) > 0).mean(), "mean": jax.nn.relu(h).mean()}
    return y, log


def args():
    k1, k2 = jax.random.split(jax.random.PRNGKey(2))
    return (jax.random.normal(k1, (8, 32), jnp.float32), 1.0 + 0.1 * jax.random.normal(k2, (32,), jnp.float32),
            jnp.zeros((32,), jnp.float32))


@cache
def exploration():
    """The program as lowered, no pass run: ``wb.explore(norm_act, *args(), pipeline="none")``."""
    return wb.explore(norm_act, *args(), pipeline="none")


def lowered() -> str:
    return exploration()["stablehlo"].text


@cache
def after(pipeline: str) -> str:
    """The lowered module after ``pipeline``, run in one go (``wb.opt``)."""
    return wb.opt(lowered(), pipeline)


def ops(text: str) -> int:
    """Every op of the module, as ``ex.cost()``'s ``ops`` column counts them."""
    return sum(op_counts(text).values())


@cache
def best(longest: int = LONGEST) -> tuple[int, tuple[str, ...]]:
    """The fewest ops any pipeline of at most ``longest`` of the CLEANUPS reaches, and the shortest such
    pipelines, found by trying them all."""
    results = {seq: ops(after(",".join(seq))) for k in range(1, longest + 1)
               for seq in itertools.product(CLEANUPS, repeat=k)}
    fewest = min(results.values())
    shortest = min(len(seq) for seq, n in results.items() if n == fewest)
    return fewest, tuple(",".join(seq) for seq, n in results.items() if n == fewest and len(seq) == shortest)


def _pass_list(answer) -> list[str] | None:
    if isinstance(answer, str):
        return [answer.strip().lower()]
    if isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(a, str) for a in answer):
        return [a.strip().lower() for a in answer]
    return None


@exercise("l2.q1")
def q1(answer):
    before = op_count(lowered(), "stablehlo.subtract")
    expected = [p for p in CLEANUPS if op_count(after(p), "stablehlo.subtract") < before]
    names = _pass_list(answer)
    if names is None:
        return wrong(f"{answer!r} is not a pass name", "the answer is one of " + ", ".join(CLEANUPS))
    return judge_names(names, expected, what="the pass that removes the duplicated subtraction",
                       known=CLEANUPS, kind="pass",
                       hint="run each pass alone with ex.with_pipeline(name) and diff it against 'stablehlo' "
                            "(.ops_delta()): which one takes a stablehlo.subtract away?")


@number_exercise("l2.q2", rel_close=0.0)
def q2():
    return op_count(after("inline"), "func.func"), {
        op_count(lowered(), "func.func"): "you expect the private @relu to stay behind for symbol-dce; the inliner "
                                          "erases a private function itself once it has inlined every call of it"}


@number_exercise("l2.q3", rel_close=0.0)
def q3():
    merged = op_count(after("inline,cse"), "stablehlo.maximum")
    return op_count(after("cse,inline"), "stablehlo.maximum"), {
        merged: "cse could merge the calls: it cannot, a func.call is opaque to it, and when the calls are inlined "
                "cse has already run"}


@exercise("l2.q4")
def q4(answer):
    if not isinstance(answer, str):
        return wrong(f"{answer!r} is not a pipeline string", "write the passes as one string, separated by "
                                                              "commas: 'a,b'")
    try:
        names = pass_names(answer)
    except ValueError as e:
        return wrong(f"the pipeline does not parse: {e}", "passes separated by commas, e.g. 'cse,inline'")
    outside = [n for n in names if n not in CLEANUPS]
    if outside:
        return wrong(f"{outside[0]!r} is not one of the cleanups of this lesson",
                     "use only " + ", ".join(CLEANUPS))
    if not names:
        return wrong("the pipeline is empty", "write at least one pass")
    if len(names) > LONGEST:
        return wrong(f"{len(names)} passes: the exercise allows at most {LONGEST}",
                     "which passes change nothing here? Leave them out")
    got = ops(from_answer("your pipeline", wb.opt, lowered(), answer))
    fewest, _ = best()
    start = ops(lowered())
    if got == fewest:
        return right(f"'{answer}' leaves {got} ops, the fewest any pipeline of at most {LONGEST} cleanups "
                     f"reaches (from {start})")
    if got < start:
        return close(f"'{answer}' leaves {got} ops; the best pipeline of at most {LONGEST} leaves {fewest}",
                     "which repetitions are left? A pass only sees what the passes before it have exposed")
    return wrong(f"'{answer}' leaves {got} ops, as many as the lowered module ({start})",
                 "which passes changed the module when run alone?")
