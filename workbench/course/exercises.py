"""The exercises of the course, registered by the lesson modules, and ``check`` that judges an answer.

Each lesson ``N`` is a module ``workbench/course/lessonNN.py``: its programs, and one checker per
exercise, registered with ``@exercise("lN.qK")`` (or, for an answer that is a number,
``@number_exercise``). A checker computes the right answer from the workbench on the lesson's program
every time it is asked (cached per process), so a JAX version that changes the IR changes the expected
answer with it. The id is written once, in the decorator: the verdict a checker returns has none, and
the exercise stamps its own on it. The fixed texts of an exercise -- its question, the kind of answer
it takes, and a number exercise's ``what`` and ``hint`` -- are data, the exercise's table in
``exercises.toml``; ``exercises()`` lists them from there, without importing a lesson.
"""
from __future__ import annotations

import importlib
import importlib.resources
import inspect
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

from ..errors import UnknownNameError
from .judge import AnswerError, Verdict, blank, is_blank, judge_number, wrong

__all__ = ["LESSONS", "Exercise", "exercise", "number_exercise", "check", "exercises", "lessons", "show"]

# number, title, notebook (in notebooks/, without .ipynb)
LESSONS = (
    (0, "Tour", "00_tour"),
    (1, "From Python to StableHLO", "01_python_to_stablehlo"),
    (2, "The classic cleanups", "02_classic_cleanups"),
    (3, "Rewrite patterns", "03_rewrite_patterns"),
    (4, "Algebra and floating point", "04_algebra_and_floating_point"),
    (5, "Layout", "05_layout"),
    (6, "Loops", "06_loops"),
    (7, "Autodiff", "07_autodiff"),
    (8, "XLA's pipeline", "08_xla_pipeline"),
    (9, "Sharding", "09_sharding"),
    (10, "Debugging a compiler", "10_debugging_a_compiler"),
    (11, "Accelerators and memory", "11_accelerators_and_memory"),
    (12, "A real model", "12_a_real_model"),
)

_QID = re.compile(r"l(\d+)\.q(\d+)$")
_TEXTS = "exercises.toml"  # next to this module
# the keys a table of exercises.toml must have, and those it may have, for each kind of exercise
_NEEDS = {"exercise": ("prompt", "answer"), "number": ("prompt", "answer", "what")}
_MAY = {"exercise": (), "number": ("hint",)}
_DECORATOR = {"exercise": "an @exercise", "number": "a @number_exercise"}


def _order(qid: str) -> tuple[int, int]:
    """``"l5.q2"`` -> ``(5, 2)``: lesson, then question, as numbers."""
    return tuple(map(int, _QID.match(qid).groups()))


def read_texts(text: str) -> dict[str, dict[str, str]]:
    """The exercises' tables of a TOML text (``[l5.q2]``, the form of exercises.toml) by id, in the order
    of lesson and question; a table that is not an exercise id's, or a value that is not a string, is
    refused with a ValueError that names it."""
    tables = {}
    for lesson, questions in tomllib.loads(text).items():
        if not isinstance(questions, dict):
            raise ValueError(f"{_TEXTS}: {lesson!r} is not an exercise's table; ids look like [l5.q2]")
        for question, table in questions.items():
            qid = f"{lesson}.{question}"
            if not _QID.match(qid) or not isinstance(table, dict):
                raise ValueError(f"{_TEXTS}: {qid!r} is not an exercise's table; ids look like [l5.q2]")
            odd = [k for k, v in table.items() if not isinstance(v, str)]
            if odd:
                raise ValueError(f"{_TEXTS}: [{qid}] {odd[0]} is not a string")
            tables[qid] = table
    return dict(sorted(tables.items(), key=lambda item: _order(item[0])))


@cache
def texts() -> dict[str, dict[str, str]]:
    """Every exercise's table of ``exercises.toml``, by id."""
    return read_texts(importlib.resources.files(__package__).joinpath(_TEXTS).read_text(encoding="utf-8"))


def texts_of(qid: str, kind: str, tables: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """Exercise ``qid``'s table (of ``tables``, by default ``exercises.toml``'s), checked to hold the keys
    an exercise of ``kind`` ("exercise" or "number") needs and no other: a ValueError that says what is
    missing or extra otherwise."""
    table = (texts() if tables is None else tables).get(qid)
    if table is None:
        raise ValueError(f"exercise {qid} has no table [{qid}] in workbench/course/{_TEXTS}: write its prompt "
                         f"and answer there")
    missing = [k for k in _NEEDS[kind] if k not in table]
    if missing:
        raise ValueError(f"[{qid}] of workbench/course/{_TEXTS} lacks {', '.join(missing)}, which "
                         f"{_DECORATOR[kind]} needs")
    extra = [k for k in table if k not in _NEEDS[kind] + _MAY[kind]]
    if extra:
        raise ValueError(f"[{qid}] of workbench/course/{_TEXTS} has {', '.join(extra)}, which "
                         f"{_DECORATOR[kind]} does not use")
    return table


@dataclass(frozen=True)
class Exercise:
    """One question of a lesson; called with an answer, the verdict on it, with this exercise's id.

    ``checker(answer) -> Verdict`` judges an answer that is not blank; an ``AnswerError`` it raises is
    a "wrong" verdict (the student's pipeline or predicate failed), a blank answer never reaches it."""

    qid: str
    prompt: str
    answer: str  # what kind of answer: "a pattern name", "an op count", ...
    checker: Callable[[object], Verdict]
    kind: str = "exercise"  # or "number" (@number_exercise): which keys its table in exercises.toml has

    @property
    def lesson(self) -> int:
        return _order(self.qid)[0]

    def __call__(self, answer=None) -> Verdict:
        if is_blank(answer):
            verdict = blank(self.answer)
        else:
            try:
                verdict = self.checker(answer)
            except AnswerError as e:
                verdict = wrong(e.message, e.hint)
        return replace(verdict, qid=self.qid)


_REGISTRY: dict[str, Exercise] = {}


def _table(qid: str, kind: str) -> dict[str, str]:
    if not _QID.match(qid):
        raise ValueError(f"an exercise id looks like 'l5.q2', not {qid!r}")
    return texts_of(qid, kind)


def _register(e: Exercise) -> Exercise:
    _REGISTRY[e.qid] = e
    return e


def exercise(qid: str):
    """Register the decorated ``checker(answer) -> Verdict`` as exercise ``qid`` ("l5.q2"), whose prompt
    and answer are its table in ``exercises.toml`` (a ValueError here when it has none). It returns the
    ``Exercise``: ``lessonNN.qK(answer)`` is the verdict ``check("lN.qK", answer)`` gives."""
    table = _table(qid, "exercise")
    return lambda checker: _register(Exercise(qid, table["prompt"], table["answer"], checker))


_TOLERANCES = ("rel_close", "rel_right", "near_within")


def number_exercise(qid: str, **tolerances):
    """Register the decorated ``expected() -> (number, near)`` as exercise ``qid``, whose answer is a
    number: ``judge_number`` compares it with ``number``, saying the ``what`` and ``hint`` of the
    exercise's table in ``exercises.toml``, within ``tolerances`` (``rel_close``, ``rel_right``,
    ``near_within``); ``near`` maps the value each known misunderstanding gives to what it is."""
    table = _table(qid, "number")
    odd = [k for k in tolerances if k not in _TOLERANCES]
    if odd:
        raise TypeError(f"number_exercise takes the tolerances {', '.join(_TOLERANCES)}, not {odd[0]}; "
                        f"its texts are its table in {_TEXTS}")
    judging = {"what": table["what"], "hint": table.get("hint", ""), **tolerances}

    def register(expected) -> Exercise:
        def checker(given) -> Verdict:
            number, near = expected()
            return judge_number(given, number, near=near, **judging)

        return _register(Exercise(qid, table["prompt"], table["answer"], checker, "number"))

    return register


def _load(lesson: int) -> None:
    if any(n == lesson for n, _, _ in LESSONS):
        importlib.import_module(f"{__package__}.lesson{lesson:02d}")


def _find(qid: str) -> Exercise:
    key = str(qid).strip().lower()
    m = _QID.match(key)
    if m:
        _load(int(m.group(1)))
    if key in _REGISTRY:
        return _REGISTRY[key]
    raise UnknownNameError("exercise", str(qid), list(texts()), "exercise ids look like 'l5.q2'")


def check(qid: str, answer=None) -> Verdict:
    """Judge ``answer`` to exercise ``qid`` ("l5.q2"): right, close or wrong, with a hint. A blank
    answer (None, ``...``, "") is "not answered yet" and raises nothing; so does a wrong one."""
    return _find(qid)(answer)


def exercises(lesson: int | None = None):
    """Every exercise (or one lesson's): id, lesson, what the answer is, and the question, as
    ``exercises.toml`` writes them (no lesson module is imported)."""
    import pandas as pd

    rows = [dict(id=qid, lesson=_order(qid)[0], answer=t["answer"], prompt=t["prompt"])
            for qid, t in texts().items() if lesson is None or _order(qid)[0] == lesson]
    return pd.DataFrame(rows, columns=["id", "lesson", "answer", "prompt"])


def lessons():
    """The lessons in order: number, title, notebook and how many exercises."""
    import pandas as pd

    counts = exercises().groupby("lesson").size()
    return pd.DataFrame([dict(lesson=n, title=t, notebook=f"{nb}.ipynb", exercises=int(counts.get(n, 0)))
                         for n, t, nb in LESSONS])


def show(obj):
    """The source of a lesson's program, highlighted in a notebook (plain text elsewhere)."""
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")
