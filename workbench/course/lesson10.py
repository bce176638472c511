"""Lesson 10, debugging a compiler: a planted miscompile (Reactant's ``no_nan`` option on a program that
replaces its NaNs by zeros), found by bisecting patterns and XLA passes, shrunk by ``reduce``, saved,
and written down as a reproducer (notebooks/10_debugging_a_compiler)."""
from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import jax.numpy as jnp

import workbench as wb

from .common import pattern_names
from .exercises import exercise, number_exercise
from .judge import AnswerError, from_answer, judge_names, names_of, right, wrong


def sanitize(x, w):
    """Sensor readings with gaps (NaN) through a dense layer: the gaps become zeros first."""
    x = jnp.where(jnp.isnan(x), 0.0, x)
    h = jnp.tanh(x @ w)
    return (h * 2.0).sum(0)


def readings():
    """``sanitize``'s arguments: 4 x 8 readings, one of them missing (NaN), and the layer's weights."""
    x = jnp.arange(32.0).reshape(4, 8).at[1, 2].set(jnp.nan)
    return x, jnp.ones((8, 3)) / 8


@cache
def buggy():
    """``sanitize`` compiled with ``no_nan=True``: the patterns may assume no value is NaN, and one is."""
    return wb.explore(sanitize, *readings(), no_nan=True)


@cache
def honest():
    """The same program without ``no_nan``: the compile that keeps the NaN test."""
    return wb.explore(sanitize, *readings())


def _pins_the_fold(ex) -> bool:
    """The lesson's own reduce predicate: the program as given tests for NaN (x != x), and after the
    pipeline no comparison is left."""
    return wb.has_op("stablehlo.compare", stage=ex.reference_stage().name)(ex) and wb.lacks_op("stablehlo.compare")(ex)


@cache
def culprits():
    """The joint bisection (patterns and XLA passes) of the miscompile, and of its symptom (the select gone)."""
    found = buggy().bisect(wb.miscompiles("cpu:0"), over="all", progress=False)
    symptom = buggy().bisect(wb.lacks_op("stablehlo.select"), over="all", progress=False)
    return found, symptom


@cache
def reduced():
    """``reduce`` with the lesson's predicate, and with the one that only names the symptom."""
    return (buggy().reduce(_pins_the_fold, progress=False),
            buggy().reduce(wb.lacks_op("stablehlo.compare"), progress=False))


@cache
def honest_reduced():
    """The shrunk module of ``reduced()`` explored as text without ``no_nan``: what reduce's candidates
    would be under the honest compile. A predicate that pins the bug holds on the shrunk module with
    ``no_nan`` and not here."""
    return wb.explore_text(reduced()[0].source, title="sanitize:reduced, without no_nan")


@exercise("l10.q1")
def q1(answer):
    found, symptom = culprits()
    blamed = [*found.patterns, *found.xla_passes]
    known = pattern_names() | set(buggy().xla_passes)
    given = set(names_of(answer) or [])
    hint = "b.patterns and b.xla_passes of the bisection"
    if set(symptom.patterns) != set(blamed) and given >= set(symptom.patterns):
        hint = ("removing the select takes more patterns than making the numbers wrong does: bisect with the "
                "miscompile itself, wb.miscompiles('cpu:0'), not with a symptom")
    return judge_names(answer, blamed, what="the 1-minimal set that makes the numbers wrong", known=known,
                       kind="pattern or pass", hint=hint)


def _verdict_of(predicate, ex, where: str) -> bool:
    hint = ("reduce explores every candidate as MLIR text: its first stage is 'input', not 'stablehlo'; "
            "ex.reference_stage() is the program as given in both kinds of exploration")
    return bool(from_answer(f"your predicate on {where}", predicate, ex, hint=hint))


@exercise("l10.q2")
def q2(answer):
    if not callable(answer):
        return wrong(f"{answer!r} is not a predicate", "a predicate is a function: lambda e: ... -> bool")
    small, empty = reduced()
    try:
        if not _verdict_of(answer, buggy(), "the no_nan exploration"):
            return wrong("it does not hold on the no_nan exploration, the one with the bug",
                         "what is in the program as given, and missing after the pipeline?")
        if _verdict_of(answer, honest(), "the honest exploration"):
            return wrong("it holds on the exploration without no_nan too: it does not tell the bug from a correct "
                         "compile", "the honest compile keeps the NaN test; compare the two")
        if _verdict_of(answer, empty.exploration, "an empty module"):
            return wrong("it holds on an empty module: reduce would shrink the program to nothing and call that "
                         "the bug", "ask also for what the bug needs in the input program")
        if not _verdict_of(answer, small.exploration, "the shrunk module (explored as text)"):
            return wrong("it does not hold on the shrunk module, which still shows the fold: reduce could not "
                         "use it",
                         "reduce runs candidates on random inputs, with no NaN among them, so the numbers cannot "
                         "show the bug there; ask about the ops instead")
        if _verdict_of(answer, honest_reduced(), "the shrunk module compiled without no_nan"):
            return wrong("it holds on the shrunk module compiled without no_nan too: reduce's candidates could "
                         "shrink to a module where the honest compile also satisfies it, so it does not pin the fold",
                         "explore r.source with wb.explore_text (no no_nan) and see what the honest compile keeps "
                         "there that the no_nan compile removes")
    except AnswerError as e:
        hint = e.hint if "unknown stage" in e.message else "a predicate returns True or False, and raises nothing"
        return wrong(e.message, hint)
    return right("it holds on the bug and on its shrunk form, and neither on the honest compile (of the program "
                 "or of the shrunk module) nor on an empty module")


@number_exercise("l10.q3", rel_close=0.0)
def q3():
    small, empty = reduced()
    return small.ops_after, {empty.ops_after: "the predicate only asks for the compare to be missing: the empty "
                                              "module satisfies it",
                             small.ops_before: "you count the module before reducing"}


# the last line of a repro.py whose predicate compared the numbers (miscompiles, or differs_from with
# numbers) and found outputs that differ from input.mlir's; a predicate on ops ends "the predicate holds"
_NUMBERS_DIFFER = re.compile(r"FAIL: (miscompiles|differs_from): .* differ from input\.mlir")


@exercise("l10.q4")
def q4(answer):
    if not isinstance(answer, (str, Path)):
        return wrong(f"{answer!r} is not a path", "give the folder as a string: what ex.reproducer returned")
    folder = Path(answer).expanduser()
    if not (folder / "repro.py").is_file():
        return wrong(f"{str(folder)!r} holds no repro.py", "ex.reproducer(folder, ...) writes it")
    try:
        proc = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True, timeout=300,
                              check=False)
    except subprocess.TimeoutExpired:
        return wrong("repro.py ran for 5 minutes without an answer", "write the folder again")
    said = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode == 1 and said.startswith("FAIL"):
        if not _NUMBERS_DIFFER.match(said):
            return wrong(f"repro.py says {said[:200]}: its predicate is not about the numbers, so the folder "
                         "does not show that the compiled program computes the wrong values",
                         "a vanished select or compare is not the bug, the numbers are: write it with "
                         "predicate=wb.miscompiles('cpu:0'), so that repro.py runs input.mlir and the "
                         "pipeline's output on the saved inputs (with their NaN) and compares them")
        if "stablehlo.compare" not in (folder / "input.mlir").read_text():
            return wrong("repro.py fails, but its input.mlir holds no NaN test: it is not this bug",
                         "write it from the no_nan exploration of lesson.sanitize")
        return right(f"repro.py says {said[:160]}")
    if proc.returncode == 0:
        return wrong(f"repro.py says {said[:160] or 'PASS'}: the folder does not show the bug",
                     "write it from the no_nan exploration, with predicate=wb.miscompiles('cpu:0'), so that "
                     "repro.py runs the saved inputs (with their NaN) and compares the numbers")
    return wrong(f"repro.py could not decide (exit code {proc.returncode}): "
                           f"{(said or proc.stderr.strip()[-300:])[:300]}",
                 "give it a predicate it can check: predicate=wb.miscompiles('cpu:0')")
