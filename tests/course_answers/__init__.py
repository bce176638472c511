"""Answers to the course's exercises, for tests/test_course.py: kept here, never in the notebooks.

Each ``lNN.py`` holds ``RIGHT`` (exercise id -> an answer the checker must accept) and ``WRONG``
(exercise id -> answers it must not accept), and may hold ``CLOSE`` (id -> answers it must call
close). An answer that needs the test's scratch folder is ``Make(fn)``: the test passes ``fn`` a
fresh directory and feeds the checker what it returns. ``IN_NOTEBOOK`` (id -> source text) is a right
answer that is code (a predicate, a call) as a student writes it in the notebook's answer cell; the
other right answers go there as their repr.
"""
import importlib
import pathlib


class Make:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, tmp_path):
        return self.fn(tmp_path)


def notebook_answer(lesson, qid: str) -> str:
    """The right answer to ``qid`` as source text for the notebook's ``answer = ...`` line."""
    import ast

    code = getattr(lesson, "IN_NOTEBOOK", {}).get(qid)
    if code is not None:
        return code
    text = repr(lesson.RIGHT[qid])
    ast.literal_eval(text)  # a literal, or the answer needs an IN_NOTEBOOK entry
    return text


def lessons() -> dict[int, object]:
    out = {}
    for path in sorted(pathlib.Path(__file__).parent.glob("l[0-9][0-9].py")):
        out[int(path.stem[1:])] = importlib.import_module(f"course_answers.{path.stem}")
    return out
