"""Lesson 0, the tour: the transformer block's gradient through the whole pipeline (notebooks/00_tour)."""
from __future__ import annotations

from functools import cache

import workbench as wb
from workbench.examples import attention

from .common import last_mlir
from .exercises import number_exercise


@cache
def exploration():
    """The tour's Exploration: ``wb.explore(attention.fn, *attention.args())``, Reactant's default pipeline."""
    return wb.explore(attention.fn, *attention.args())


@number_exercise("l0.q1", prompt="How many stages of the attention gradient's exploration changed the program "
                                 "(MLIR, XLA and backend stages alike)?", answer="a number of stages",
                 what="the number of stages that changed the program", rel_close=0.15,
                 hint="ex.changed() lists them; len() counts them")
def q1():
    return len(exploration().changed()), {len(exploration().stages): "you count every stage"}


def transposes(stage) -> int:
    return stage.text.count("stablehlo.transpose")


@number_exercise("l0.q2", prompt="How many stablehlo.transpose ops does the program hold as JAX lowered it (the "
                                 "'stablehlo' stage), before any pass ran?", answer="a number of ops",
                 what="the transposes in the stablehlo stage",
                 hint="ex['stablehlo'].text is the program as lowered; str.count counts")
def q2():
    ex = exploration()
    return transposes(ex["stablehlo"]), {
        transposes(last_mlir(ex)): "you count the last MLIR stage",
        transposes(last_mlir(ex.with_patterns(disable=["dot_transpose"]))): "you count the last MLIR stage without "
                                                                            "dot_transpose"}
