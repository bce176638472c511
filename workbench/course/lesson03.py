"""Lesson 3, rewrite patterns: the greedy driver, ``applicable``, ``step``, order effects and ``bisect``
on a small program full of waste (notebooks/03_rewrite_patterns)."""
from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp

import workbench as wb
from workbench.pipeline.catalog import patterns_pass

from .common import judge_patterns, pattern_names
from .exercises import exercise, number_exercise
from .judge import names_of, right, wrong


def wasteful(x, y):
    a = -(-jnp.sin(x.T.T))          # two transposes that cancel, two negations that cancel
    return jnp.dot(a, y.T).T * 1.0  # a product of transposes, transposed again, times one


def args():
    """The arguments of ``wasteful``: x of shape (4, 3), y of shape (5, 3)."""
    kx, ky = jax.random.split(jax.random.PRNGKey(3))
    return jax.random.normal(kx, (4, 3)), jax.random.normal(ky, (5, 3))


def twice(x, y):
    return jnp.dot(x.T, y).T + jnp.dot(y.T, x)  # the same product, written two ways


def twice_args():
    kx, ky = jax.random.split(jax.random.PRNGKey(4))
    return jax.random.normal(kx, (4, 4)), jax.random.normal(ky, (4, 4))


@cache
def exploration():
    """``wasteful`` through one greedy run of the patterns: ``pipeline="enzyme-hlo-patterns"``."""
    return wb.explore(wasteful, *args(), pipeline="enzyme-hlo-patterns")


@cache
def twice_exploration():
    return wb.explore(twice, *twice_args(), pipeline="enzyme-hlo-patterns")


@cache
def applicable(stage: str = "stablehlo") -> tuple[str, ...]:
    """The patterns that change ``stage`` of ``exploration()`` when applied alone."""
    return tuple(exploration().applicable(stage, progress=False))


@cache
def stepped():
    """``exploration()`` stepped one pattern at a time from "stablehlo"."""
    return exploration().step("stablehlo", progress=False)


@cache
def _specs() -> dict[str, str]:
    table = wb.patterns()
    return dict(zip(table.name, table.spec))


def pattern_pass(name: str) -> str:
    """The pipeline entry that applies the one pattern ``name`` greedily, as enzyme-ad spells it."""
    return patterns_pass((_specs()[name],))


def in_order(ex, names):
    """``ex`` with a pipeline that applies the patterns ``names`` one after the other, each alone."""
    return ex.with_pipeline(",".join(pattern_pass(n) for n in names))


@cache
def _ends(ex, names: tuple[str, ...]):
    return in_order(ex, names).pipeline_stages[-1]


def order_matters(ex, a: str, b: str) -> bool:
    """Whether applying ``a`` then ``b`` ends at another module than ``b`` then ``a`` (names and
    locations ignored, as ``ex.diff`` compares)."""
    return not ex.diff(_ends(ex, (a, b)), _ends(ex, (b, a))).is_empty


@number_exercise("l3.q1", rel_close=0.0)
def q1():
    return len(applicable("enzyme-hlo-patterns#1")), {
        len(stepped().applied()): "you count the steps of step(), which start from the program as lowered",
        len(applicable("stablehlo")): "you count the patterns that apply to the program as lowered, before the "
                                      "greedy run"}


@exercise("l3.q2")
def q2(answer):
    expected = set(stepped().applied()) - set(applicable("stablehlo"))
    return judge_patterns(answer, expected,
                          what="the patterns step applied that did not match the program as lowered",
                          hint="compare st.applied() with ex.applicable('stablehlo'): which names appear only in "
                               "the first, and what made them match later?")


@exercise("l3.q3")
def q3(answer):
    found = exploration().bisect(wb.op_count_at_most("stablehlo.transpose", 0), progress=False).patterns
    return judge_patterns(answer, found, what="the 1-minimal set of patterns that removes every transpose",
                          hint="ex.bisect(predicate) with a predicate that holds when the last stage has no "
                               "stablehlo.transpose; every pattern of the set it returns is needed")


@exercise("l3.q4")
def q4(answer):
    names = names_of(answer)
    if names is None or len(set(names)) != 2:
        return wrong(f"{answer!r} is not two different pattern names",
                     "write them as a tuple of two strings: ('first_pattern', 'second_pattern')")
    unknown = [n for n in names if n not in pattern_names()]
    if unknown:
        return judge_patterns(unknown, (), what="two patterns")
    ex = exploration()
    a, b = names
    if order_matters(ex, a, b):
        return right(f"{a} then {b} and {b} then {a} end at different programs: an order effect")
    idle = [n for n in names if n not in applicable("stablehlo")]
    if idle:
        return wrong(f"{idle[0]} does not change wasteful as lowered, so which goes first hardly matters",
                     "start from ex.applicable('stablehlo'): only those patterns match the program")
    return wrong(f"{a} then {b} and {b} then {a} end at the same program: they commute here",
                 "try every pair of ex.applicable('stablehlo') with lesson.in_order in both orders")
