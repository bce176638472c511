"""Lesson 6, loops: a recurrent cell under lax.scan, its trip count, loop-invariant code motion, and XLA's
cost analysis that counts a loop body once (notebooks/06_loops)."""
from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp

import workbench as wb
from workbench.examples.scan import args  # rnn takes the scan example's w, u and xs

from .common import last_mlir, stage_cost
from .exercises import number_exercise


def rnn(w, u, xs):
    """A tanh recurrent cell over a sequence, with its recurrent weight normalized inside the step (as a
    weight-normalized layer written in the naive way does): that normalization is the same every step."""
    def cell(h, x):
        wn = w / jnp.sqrt(jnp.sum(w * w))            # depends on w alone
        h = jnp.tanh(h @ wn + x @ u)
        return h, h.sum()

    h0 = jnp.zeros((xs.shape[1], w.shape[0]), xs.dtype)
    return jax.lax.scan(cell, h0, xs)


def counting(n):
    """A fori_loop and a while_loop with the same job, to compare their lowering with scan's."""
    a = jax.lax.fori_loop(0, 10, lambda i, x: x * 0.5 + 1.0, n)
    b = jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, n))[1]
    return a + b


@cache
def exploration(licm: bool = True):
    """``wb.explore(rnn, *args(), licm=licm)``: Reactant's default pipeline, loop-invariant code motion on or off."""
    return wb.explore(rnn, *args(), licm=licm)


def condition_runs() -> int:
    """How often the loop's condition runs, from the trip count of its compare in the stablehlo stage."""
    c = exploration().cost("stablehlo")
    return int(c[c.op == "stablehlo.compare"].trip_count.max())


def in_loop(ex) -> int:
    """How many ops of the last MLIR stage run more than once (those inside the loop)."""
    c = ex.cost(last_mlir(ex).name)
    return int((c.trip_count > 1).sum())


def last_flops(ex) -> int:
    return int(stage_cost(ex, last_mlir(ex).name)["flops"])


@number_exercise("l6.q1")
def q1():
    runs = condition_runs()
    return runs, {runs - 1: "you count the body's iterations: the condition runs once more, the time it answers "
                            "'stop'"}


@number_exercise("l6.q2")
def q2():
    row = stage_cost(exploration(), "stablehlo")
    return int(row["flops"]), {row["flops_body_once"]: "the loop body is counted once, as XLA's cost analysis does "
                                                       "(xla_flops)"}


@number_exercise("l6.q3")
def q3():
    left = in_loop(exploration(True))
    return in_loop(exploration(False)) - left, {left: "you count the ops left in the loop, not those moved out"}


@number_exercise("l6.q4")
def q4():
    saved = last_flops(exploration(False)) - last_flops(exploration(True))
    trips = condition_runs() - 1
    hoisted_per_step = saved / (trips - 1)
    return saved, {hoisted_per_step * trips: "you assume the hoisted ops no longer run at all: they still run "
                                             "once, before the loop",
                   hoisted_per_step: "you count one iteration's worth"}
