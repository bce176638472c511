"""Lesson 4, algebra and floating point: a distributive rewrite that changes the rounding, the numeric check
that tells rounding from a bug, and Reactant's no_nan / all_finite promises broken on purpose
(notebooks/04_algebra_and_floating_point)."""
from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp

import workbench as wb

from .common import judge_patterns, stage_cost
from .exercises import exercise, number_exercise
from .judge import AnswerError, close, from_answer, judge_names, right, wrong


def two_matmuls(x, a, b):
    return x @ a + x @ b  # equal to x @ (a + b) in exact arithmetic


def args(m: int = 64, k: int = 128, n: int = 32):
    """Random arguments of ``two_matmuls``: x of shape (m, k), a and b of shape (k, n)."""
    kx, ka, kb = jax.random.split(jax.random.PRNGKey(0), 3)
    return (jax.random.normal(kx, (m, k)), jax.random.normal(ka, (k, n)), jax.random.normal(kb, (k, n)))


def cancelling_args(m: int = 64, k: int = 128, n: int = 32):
    """Arguments where b is almost -a: the two products nearly cancel."""
    x, a, noise = args(m, k, n)
    return x, a, -a + 1e-3 * noise


def nan_to_zero(x):
    return jnp.where(jnp.isnan(x), 0.0, x) * 2.0  # NaNs become zeros, the rest is doubled


def finite_or_zero(x):
    return jnp.where(jnp.isfinite(x), x, 0.0) + 1.0  # infinities (and NaNs) become zeros, then + 1


def with_nan():
    return jnp.array([1.0, jnp.nan, 3.0])


def with_inf():
    return jnp.array([1.0, jnp.inf, 3.0])


def finite():
    return jnp.array([1.0, 2.0, 3.0])


@cache
def exploration():
    """``two_matmuls`` on random inputs through Reactant's default pipeline."""
    return wb.explore(two_matmuls, *args())


@cache
def bigger():
    """``two_matmuls`` with x of shape (256, 512) and a, b of shape (512, 64) (Exercise 4.1)."""
    return wb.explore(two_matmuls, *args(256, 512, 64))


@cache
def cancelling():
    return wb.explore(two_matmuls, *cancelling_args())


@cache
def nan_fed():
    """The planted miscompile: ``nan_to_zero`` fed a NaN, compiled with the promise of no NaNs."""
    return wb.explore(nan_to_zero, with_nan(), no_nan=True)


@cache
def nan_honest():
    """The same program and input without the promise."""
    return wb.explore(nan_to_zero, with_nan())


@cache
def nan_kept_promise():
    """The same optimized program as ``nan_fed``, fed only finite numbers."""
    return wb.explore(nan_to_zero, finite(), no_nan=True)


@cache
def suspects() -> dict:
    """Six explorations for Exercise 4.4, by name: which of them fail the numeric check?"""
    return {
        "cancelling": cancelling(),
        "inf_into_nan_to_zero": wb.explore(nan_to_zero, with_inf(), no_nan=True),
        "inf_no_nan": wb.explore(finite_or_zero, with_inf(), no_nan=True),
        "inf_all_finite": wb.explore(finite_or_zero, with_inf(), all_finite=True),
        "nan_all_finite": wb.explore(finite_or_zero, with_nan(), all_finite=True),
        "finite_all_finite": wb.explore(finite_or_zero, finite(), all_finite=True),
    }


@cache
def _failing() -> frozenset[str]:
    return frozenset(name for name, ex in suspects().items() if not ex.run(repeat=1).check.passed)


@cache
def _flops(ex, stage: str, op: str | None = None) -> float:
    if op is None:
        return float(stage_cost(ex, stage)["flops"])
    per_op = ex.cost(stage)
    return float(per_op[per_op.op == op].flops.sum())


@number_exercise("l4.q1", rel_close=0.02)
def q1():
    ex = bigger()
    last = ex.default_run_stage().name
    return _flops(ex, last), {
        _flops(ex, "stablehlo"): "you count the program as lowered: two products and their sum",
        _flops(ex, last, "stablehlo.dot_general"): "you count the product but not the sum a + b that the rewrite put "
                                                   "in front of it"}


@cache
def _to_blame() -> tuple[str, ...]:
    """The patterns bisect blames for ``nan_fed``'s failed check: once, however many answers are checked."""
    return tuple(nan_fed().bisect(wb.miscompiles("cpu:0"), progress=False).patterns)


@exercise("l4.q2")
def q2(answer):
    found = _to_blame()
    return judge_patterns(answer, found, what="the pattern whose rewrite makes the program miscompile",
                          hint="bisect the exploration with a predicate that holds when the numeric check fails; "
                               "wb.miscompiles('cpu:0') is one", no_nan=True, all_finite=True)


def _holds(predicate, ex, which: str) -> bool:
    return bool(from_answer(f"your predicate on {which}", predicate, ex,
                            hint="a predicate takes an Exploration and returns True or False"))


@exercise("l4.q3")
def q3(answer):
    if not callable(answer):
        raise AnswerError(f"{answer!r} is not a predicate", "write a function, e.g. lambda e: ..., that takes an "
                                                            "Exploration and returns True or False")
    if not _holds(answer, nan_fed(), "nan_fed()"):
        return wrong("your predicate does not hold for nan_fed(), whose optimized program lets the NaN through",
                     "bisect needs a predicate that holds for the miscompiling exploration; what does ex.run() "
                     "tell you about it?")
    if _holds(answer, nan_honest(), "nan_honest()"):
        return wrong("your predicate also holds for nan_honest(), which computes the right numbers",
                     "it cannot tell a correct program from a miscompiled one; bisect would blame nothing useful")
    if _holds(answer, nan_kept_promise(), "nan_kept_promise()"):
        return close("your predicate tells nan_fed() from nan_honest(), but it also holds for nan_kept_promise(), "
                     "whose numbers are right",
                     "nan_kept_promise() has the same optimized program as nan_fed(), fed no NaN: the rewrite is "
                     "there, and harmless. A miscompile is about the numbers on the inputs, not the text")
    return right("your predicate holds for the miscompiled run only: it tells wrong numbers from a rewrite that "
                 "is merely present")


@exercise("l4.q4")
def q4(answer):
    return judge_names(answer, _failing(), what="the explorations whose check fails",
                       known=suspects().keys(), kind="suspect",
                       hint="rounding differences pass the check; a broken promise (a NaN or an infinity fed to a "
                            "program compiled to assume none) fails it, and only when the promise covers that value")
