"""The exercises of the course, registered by the lesson modules, and ``check`` that judges an answer.

Each lesson ``N`` is a module ``workbench/course/lessonNN.py``: its programs, and one checker per
exercise, registered with ``@exercise("lN.qK", prompt=..., answer=...)`` (or, for an answer that is a
number, ``@number_exercise``). A checker computes the right answer from the workbench on the lesson's
program every time it is asked (cached per process), so a JAX version that changes the IR changes the
expected answer with it. The id is written once, in the decorator: the verdict a checker returns has
none, and the exercise stamps its own on it.
"""
from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

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
)

_QID = re.compile(r"l(\d+)\.q(\d+)$")


@dataclass(frozen=True)
class Exercise:
    """One question of a lesson; called with an answer, the verdict on it, with this exercise's id.

    ``checker(answer) -> Verdict`` judges an answer that is not blank; an ``AnswerError`` it raises is
    a "wrong" verdict (the student's pipeline or predicate failed), a blank answer never reaches it."""

    qid: str
    prompt: str
    answer: str  # what kind of answer: "a pattern name", "an op count", ...
    checker: Callable[[object], Verdict]

    @property
    def lesson(self) -> int:
        return int(_QID.match(self.qid).group(1))

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


def exercise(qid: str, *, prompt: str, answer: str):
    """Register the decorated ``checker(answer) -> Verdict`` as exercise ``qid`` ("l5.q2"). It returns
    the ``Exercise``: ``lessonNN.qK(answer)`` is the verdict ``check("lN.qK", answer)`` gives."""
    if not _QID.match(qid):
        raise ValueError(f"an exercise id looks like 'l5.q2', not {qid!r}")

    def register(checker) -> Exercise:
        _REGISTRY[qid] = Exercise(qid, prompt, answer, checker)
        return _REGISTRY[qid]

    return register


def number_exercise(qid: str, *, prompt: str, answer: str, **judging):
    """Register the decorated ``expected() -> (number, near)`` as exercise ``qid``, whose answer is a
    number: ``judge_number`` with ``judging`` (``what``, ``hint``, tolerances) compares it with
    ``number``; ``near`` maps the value each known misunderstanding gives to what it is."""
    def register(expected) -> Exercise:
        def checker(given) -> Verdict:
            number, near = expected()
            return judge_number(given, number, near=near, **judging)

        return exercise(qid, prompt=prompt, answer=answer)(checker)

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
    for number, _, _ in LESSONS:
        _load(number)
    raise UnknownNameError("exercise", str(qid), sorted(_REGISTRY), "exercise ids look like 'l5.q2'")


def check(qid: str, answer=None) -> Verdict:
    """Judge ``answer`` to exercise ``qid`` ("l5.q2"): right, close or wrong, with a hint. A blank
    answer (None, ``...``, "") is "not answered yet" and raises nothing; so does a wrong one."""
    return _find(qid)(answer)


def exercises(lesson: int | None = None):
    """Every exercise (or one lesson's): id, lesson, what the answer is, and the question."""
    import pandas as pd

    for number, _, _ in LESSONS:
        if lesson is None or number == lesson:
            _load(number)
    rows = [dict(id=e.qid, lesson=e.lesson, answer=e.answer, prompt=e.prompt) for e in
            sorted(_REGISTRY.values(), key=lambda e: (e.lesson, int(e.qid.rsplit("q", 1)[1])))
            if lesson is None or e.lesson == lesson]
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
