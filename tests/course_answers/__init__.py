"""Answers to the course's exercises, for tests/test_course.py: kept here, never in the notebooks.

Each ``lNN.py`` holds ``RIGHT`` (exercise id -> an answer the checker must accept) and ``WRONG``
(exercise id -> answers it must not accept), and may hold ``CLOSE`` (id -> answers it must call
close). An answer that needs the test's scratch folder is ``Make(fn)``: the test passes ``fn`` a
fresh directory and feeds the checker what it returns.
"""
import importlib
import pathlib


class Make:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, tmp_path):
        return self.fn(tmp_path)


def lessons() -> dict[int, object]:
    out = {}
    for path in sorted(pathlib.Path(__file__).parent.glob("l[0-9][0-9].py")):
        out[int(path.stem[1:])] = importlib.import_module(f"course_answers.{path.stem}")
    return out
