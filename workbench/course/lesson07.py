"""Lesson 7, autodiff: the gradient of a three-layer MLP's loss as IR, what the pipeline removes from it,
and what the backward pass costs next to the forward one (notebooks/07_autodiff)."""
from __future__ import annotations

from functools import cache

import jax

import workbench as wb
from workbench.examples import mlp

from .common import judge_patterns, last_mlir, op_count, stage_cost
from .exercises import exercise, number_exercise

loss = mlp.loss


def args():
    """The MLP's parameters (three (weight, bias) pairs), a batch of inputs and of targets."""
    return mlp.args()


@cache
def forward():
    """``wb.explore(loss, *args())``: the loss alone."""
    return wb.explore(loss, *args())


@cache
def gradient(argnums=0):
    """``wb.explore(jax.grad(loss, argnums), *args())``: by default the gradient with respect to the
    parameters only, as a training step asks for it."""
    return wb.explore(jax.grad(loss, argnums=argnums), *args())


def dots(ex, stage=None) -> int:
    st = last_mlir(ex) if stage is None else ex.stage(stage)
    return op_count(st.text, "stablehlo.dot_general")


def flops_ratio(grad) -> float:
    """The last MLIR stage's flops of ``grad`` over those of the loss alone."""
    g, f = grad, forward()
    return stage_cost(g, last_mlir(g).name)["flops"] / stage_cost(f, last_mlir(f).name)["flops"]


def removed(ex) -> int:
    """Ops in 'stablehlo' minus ops in the last MLIR stage."""
    return int(stage_cost(ex, "stablehlo")["ops"]) - int(stage_cost(ex, last_mlir(ex).name)["ops"])


@cache
def transpose_culprits() -> tuple[str, ...]:
    """The 1-minimal set of patterns that leave the gradient without a transpose."""
    b = gradient().bisect(wb.op_count_at_most("stablehlo.transpose", 0), progress=False)
    return tuple(b.patterns)


@number_exercise("l7.q1")
def q1():
    forward_dots = dots(forward(), "stablehlo")
    return dots(gradient()), {
        dots(gradient((0, 1))): "you differentiate with respect to the input x too: nobody asked for the first "
                                "layer's input gradient",
        forward_dots: "you count the forward pass's products alone",
        2 * forward_dots: "you count two products per layer for the backward pass and forget the forward pass it "
                          "runs first"}


@number_exercise("l7.q2")
def q2():
    g = gradient()
    left = int(stage_cost(g, last_mlir(g).name)["ops"])
    return removed(g), {removed(forward()): "you look at the forward pass's exploration",
                        left: "you give the ops left, not those removed"}


@exercise("l7.q3")
def q3(answer):
    return judge_patterns(answer, transpose_culprits(), what="the pattern(s) that remove the transposes",
                          hint="gradient.bisect(wb.op_count_at_most('stablehlo.transpose', 0)) finds them, as in "
                               "lesson 3; or read the diff of the first enzyme-hlo-patterns stage")


@number_exercise("l7.q4", rel_right=0.02)
def q4():
    return flops_ratio(gradient()), {round(flops_ratio(gradient((0, 1))), 2): "the input's gradient is computed too"}
