"""Lesson 5, layout: the head split and merge of a self-attention layer, transposes pushed up or down, and
where XLA makes them move bytes (notebooks/05_layout)."""
from __future__ import annotations

import re
from functools import cache

import jax
import jax.numpy as jnp

import workbench as wb

from .common import judge_patterns, last_mlir, op_count
from .exercises import exercise, number_exercise
from .judge import judge_choice

HEADS = 4
DIRECTIONS = ("up", "down", "none")


def heads(x, wqkv, wo):
    """Self-attention on one sequence: project to queries, keys and values, split the features into heads,
    attend within each head, merge the heads back and project out."""
    s, e = x.shape
    d = e // HEADS
    qkv = (x @ wqkv).reshape(s, 3, HEADS, d).transpose(1, 2, 0, 3)   # (3, heads, seq, d)
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = jnp.einsum("hsd,htd->hst", q, k) / jnp.sqrt(d)
    p = jax.nn.softmax(scores, axis=-1)
    o = jnp.einsum("hst,htd->hsd", p, v)                              # (heads, seq, d)
    return o.transpose(1, 0, 2).reshape(s, e) @ wo                     # merge the heads: (seq, heads * d)


def args(seq: int = 32, features: int = 64):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(5), 3)
    x = jax.random.normal(k1, (seq, features), jnp.float32)
    wqkv = jax.random.normal(k2, (features, 3 * features), jnp.float32) / jnp.sqrt(features)
    wo = jax.random.normal(k3, (features, features), jnp.float32) / jnp.sqrt(features)
    return (x, wqkv, wo)


@cache
def exploration(transpose: str = "up", reshape: str = "up"):
    """``wb.explore(heads, *args(), transpose_propagate=transpose, reshape_propagate=reshape)``."""
    return wb.explore(heads, *args(), transpose_propagate=transpose, reshape_propagate=reshape)


def count(stage, op: str = "stablehlo.transpose") -> int:
    return op_count(stage.text, op)


def transposes_left(transpose: str) -> int:
    """The transposes in the last MLIR stage under ``transpose_propagate=transpose``."""
    return count(last_mlir(exploration(transpose)))


def movement_bytes(ex) -> int:
    """What XLA's cost analysis charges the instructions of xla:optimized that do no arithmetic."""
    c = ex.cost("xla:optimized")
    return int(c[c.flops == 0].bytes.sum())


@cache
def down_culprits() -> tuple[str, ...]:
    """The 1-minimal set of patterns that give 'down' more transposes than 'up' leaves."""
    b = exploration("down").bisect(wb.op_count_above("stablehlo.transpose", transposes_left("up")), progress=False)
    return tuple(b.patterns)


@exercise("l5.q1")
def q1(answer):
    counts = {d: transposes_left(d) for d in DIRECTIONS}
    most = [d for d in DIRECTIONS if counts[d] == max(counts.values())]
    given = answer.strip().lower() if isinstance(answer, str) else None
    expected = given if given in most else most[0]
    said = ", ".join(f"{d}: {n}" for d, n in counts.items())
    return judge_choice(answer, expected, DIRECTIONS, why=f"transposes left: {said}",
                        what="the direction that leaves the most transposes",
                        hint="explore the layer with each direction and count 'stablehlo.transpose' in the last "
                             "MLIR stage of each")


@exercise("l5.q2")
def q2(answer):
    return judge_patterns(answer, down_culprits(), what="the pattern(s) that split the head transpose",
                          hint="diff 'stablehlo' with the last MLIR stage of the 'down' exploration: what "
                               "happened to the transpose that fed three slices? Then read the names of the "
                               "'transpose down' group (or bisect with wb.op_count_above)")


@number_exercise("l5.q3")
def q3():
    ex = exploration()
    c = ex.cost("xla:optimized")
    written = sum(_shape_bytes(s) for s in c[c.flops == 0]["shape"])
    return movement_bytes(ex), {0: "you read the transposes' rows of an MLIR stage, where the model charges a "
                                   "transpose nothing: XLA's copies are where the bytes appear",
                                written: "you counted what they write and not what they read"}


@exercise("l5.q4")
def q4(answer):
    up, down = movement_bytes(exploration("up")), movement_bytes(exploration("down"))
    expected = "more" if down > up else "fewer" if down < up else "the same"
    choices = ("more", "fewer", "the same")
    given = answer.strip().lower() if isinstance(answer, str) else None
    if given == "same":
        answer = "the same"
    return judge_choice(answer, expected, choices, what="how 'down' changes XLA's data movement",
                        why=f"up: {up:,} bytes, down: {down:,} bytes",
                        hint="count the bytes of the zero-flop instructions of xla:optimized in both "
                             "explorations; the transposes you counted in MLIR are not what XLA moves")


def _shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape such as ``f32[4,32,16]{2,1,0}`` (0 for one this cannot read)."""
    m = re.match(r"\s*([a-z]+)(\d+)\[([\d,]*)\]", str(shape))
    if not m:
        return 0
    n = 1
    for d in filter(None, m.group(3).split(",")):
        n *= int(d)
    return n * max(int(m.group(2)) // 8, 1)
