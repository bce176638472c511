"""Lesson 0, the tour: the transformer block's gradient through the whole pipeline (notebooks/00_tour)."""
from __future__ import annotations

from functools import cache

import workbench as wb
from workbench.examples import attention

from .common import last_mlir
from .exercises import exercise
from .judge import judge_number


@cache
def exploration():
    """The tour's Exploration: ``wb.explore(attention.fn, *attention.args())``, Reactant's default pipeline."""
    return wb.explore(attention.fn, *attention.args())


@exercise("l0.q1", prompt="How many stages of the attention gradient's exploration changed the program "
                          "(MLIR, XLA and backend stages alike)?", answer="a number of stages")
def q1(answer):
    expected = len(exploration().changed())
    return judge_number("l0.q1", answer, expected, what="the number of stages that changed the program",
                        rel_close=0.15, near={float(len(exploration().stages)): "you count every stage"},
                        hint="ex.changed() lists them; len() counts them")


@exercise("l0.q2", prompt="How many stablehlo.transpose ops does the program hold as JAX lowered it (the "
                          "'stablehlo' stage), before any pass ran?", answer="a number of ops")
def q2(answer):
    ex = exploration()
    expected = ex["stablehlo"].text.count("stablehlo.transpose")
    return judge_number("l0.q2", answer, expected, what="the transposes in the stablehlo stage",
                        near={float(last_mlir(ex).text.count("stablehlo.transpose")): "you count the last MLIR stage",
                              float(last_mlir(ex.with_patterns(disable=["dot_transpose"])).text.count(
                                  "stablehlo.transpose")): "you count the last MLIR stage without dot_transpose"},
                        hint="ex['stablehlo'].text is the program as lowered; str.count counts")
