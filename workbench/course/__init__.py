"""The course: thirteen lessons on array compilers (notebooks/00-12), and the checker of their exercises.

    from workbench import course
    course.check("l5.q2", answer)     # right, close or wrong, with a hint; blank: "not answered yet"
    course.exercises(5)               # lesson 5's questions
    course.lessons()                  # the lessons in order

The right answers are computed by the workbench on each lesson's program (``lessonNN.py``), never
written down; the questions and their fixed hints are written down, in ``exercises.toml``.
"""
from .exercises import LESSONS, check, exercises, lessons, show
from .judge import Verdict

__all__ = ["check", "exercises", "lessons", "show", "Verdict", "LESSONS"]
