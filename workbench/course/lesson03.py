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
from .judge import close, names_of, right, wrong


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


@cache
def _first_changes(ex, names: tuple[str, ...]) -> bool:
    """Whether the first pattern of ``in_order(ex, names)`` changes the program it starts from."""
    return not ex.diff(in_order(ex, names).pipeline_stages[-len(names)]).is_empty


def enables(ex, a: str, b: str) -> bool:
    """Whether ``a`` creates ``b``'s match: applied first, ``b`` changes nothing, yet after ``a`` the two
    orders end apart (``b`` applied after ``a`` rewrote the program)."""
    return _first_changes(ex, (a, b)) and not _first_changes(ex, (b, a)) and order_matters(ex, a, b)


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


NO_TRANSPOSE = wb.op_count_at_most("stablehlo.transpose", 0)


@cache
def bisected() -> tuple[str, ...]:
    """The 1-minimal set of patterns that ``bisect`` finds removing every transpose of ``wasteful``."""
    return tuple(exploration().bisect(NO_TRANSPOSE, progress=False).patterns)


@cache
def removes_transposes(names: frozenset[str]) -> bool:
    """Whether ``wasteful`` through the greedy run with exactly ``names`` enabled ends without a transpose
    (as bisect tries a subset: ``ex.with_only_patterns``)."""
    return NO_TRANSPOSE(exploration().with_only_patterns(sorted(names)))


def not_needed(names) -> list[str]:
    """The patterns of ``names`` without which the others still remove every transpose (none: the set is
    1-minimal, provided it removes them)."""
    return [n for n in sorted(names) if removes_transposes(frozenset(names) - {n})]


_Q3_HINT = ("ex.bisect(predicate) with a predicate that holds when the last stage has no stablehlo.transpose; "
            "every pattern of the set it returns is needed")


@exercise("l3.q3")
def q3(answer):
    found = bisected()
    what = "a 1-minimal set of patterns that removes every transpose"
    names = names_of(answer)
    if not names or set(names) - pattern_names() or len(set(names)) > 16:
        return judge_patterns(answer, found, what=what, hint=_Q3_HINT)
    given = frozenset(names)
    if not removes_transposes(given):
        return judge_patterns(answer, found, what=what, hint=_Q3_HINT)  # close where it holds part of bisect's set
    extra = not_needed(given)
    if extra:
        return close(f"these patterns remove every transpose, but {', '.join(extra)} is not needed: the others "
                     "remove them without it", "a 1-minimal set holds only patterns each of which is needed; "
                                               "switch each off in turn (ex.with_only_patterns) or ask ex.bisect")
    if given == frozenset(found):
        return right(f"{', '.join(sorted(given))}: {what}, the one bisect finds")
    return right(f"{', '.join(sorted(given))}: {what} (each one needed, checked with ex.with_only_patterns); bisect "
                 f"finds another, {', '.join(found)}: a 1-minimal set need not be the only one")


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
    for first, second in ((a, b), (b, a)):
        if enables(ex, first, second):
            return wrong(f"{second} matches nothing in wasteful as lowered (applied first it changes nothing); it "
                         f"applies only after {first} rewrote the program: {first} enables {second}, they do not "
                         "compete",
                         "competing rewrites both match the program as lowered, and the first one changes what the "
                         "second finds: take both from ex.applicable('stablehlo')")
    if order_matters(ex, a, b):
        return right(f"{a} and {b} both match wasteful as lowered, and {a} then {b} and {b} then {a} end at "
                     "different programs: the first rewrite changes what the second finds")
    idle = [n for n in names if n not in applicable("stablehlo")]
    if idle:
        return wrong(f"{idle[0]} does not change wasteful as lowered, so which goes first hardly matters",
                     "start from ex.applicable('stablehlo'): only those patterns match the program")
    return wrong(f"{a} then {b} and {b} then {a} end at the same program: they commute here",
                 "try every pair of ex.applicable('stablehlo') with lesson.in_order in both orders")
