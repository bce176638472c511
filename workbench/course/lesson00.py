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


@number_exercise("l0.q1", rel_close=0.15)
def q1():
    return len(exploration().changed()), {len(exploration().stages): "you count every stage"}


def transposes(stage) -> int:
    return stage.text.count("stablehlo.transpose")


@number_exercise("l0.q2")
def q2():
    ex = exploration()
    return transposes(ex["stablehlo"]), {
        transposes(last_mlir(ex)): "you count the last MLIR stage",
        transposes(last_mlir(ex.with_patterns(disable=["dot_transpose"]))): "you count the last MLIR stage without "
                                                                            "dot_transpose"}
