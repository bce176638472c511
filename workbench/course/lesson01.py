"""Lesson 1, from Python to StableHLO: what ``jax.jit`` sees of a small recurrent net (notebooks/01).

The program takes a pytree (a dict of weights), a static loop count and mixed dtypes (bfloat16
weights, float32 inputs and bias), so that tracing has something to do: flatten the dict into
``@main``'s arguments, unroll the Python loop, and insert the conversions that type promotion asks for.
"""
from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

import workbench as wb
from workbench.ir.dtypes import mlir_spelling
from workbench.ir.mlir import parse_module

from .common import stage_cost
from .exercises import exercise, number_exercise
from .judge import right, wrong

STEPS = 3        # the loop count the lesson explores (l1.q4's hint in exercises.toml names it)
ASKED_STEPS = 10  # the loop count exercise l1.q4 asks about (its texts in exercises.toml say 10)
STATIC = (2,)  # steps


def predict(params, x, steps):
    """``steps`` applications of one tanh layer (bfloat16 weights, float32 bias), then a learned gain."""
    h = x.astype(jnp.bfloat16)
    for _ in range(steps):
        h = jnp.tanh(h @ params["w"] + params["b"])
    return params["gain"] * h * 0.5


def args(steps: int = STEPS):
    """``(params, x, steps)``; the dict is written w, b, gain -- not the order JAX flattens it in."""
    k1, k2 = jax.random.split(jax.random.PRNGKey(1))
    params = {"w": (jax.random.normal(k1, (8, 8)) / np.sqrt(8)).astype(jnp.bfloat16),
              "b": jnp.zeros((8,), jnp.float32),
              "gain": jnp.float32(2.0)}
    x = jax.random.normal(k2, (4, 8), jnp.float32)
    return params, x, steps


@cache
def exploration(steps: int = STEPS):
    """The program as traced and lowered, no passes: ``wb.explore(predict, *args(steps), static_argnums=(2,),
    pipeline="none")``."""
    return wb.explore(predict, *args(steps), static_argnums=STATIC, pipeline="none")


def main_signature(text: str) -> tuple[list[str], list[str]]:
    """The argument types and result types of ``@main`` in a module's text, as MLIR prints them."""
    from jaxlib.mlir import ir

    module = parse_module(text)
    for op in module.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            return [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
    raise ValueError("the module has no @main")


def element_type(tensor_type: str) -> str:
    """``"tensor<4x8xf32>"`` -> ``"f32"``; ``"tensor<f32>"`` -> ``"f32"``."""
    inner = tensor_type.removeprefix("tensor<").removesuffix(">")
    return inner.rsplit("x", 1)[-1]


def stablehlo_ops(ex) -> int:
    """The ops of the stablehlo dialect in the lowered module: the ``ops_stablehlo`` column of ``ex.cost()``."""
    return int(stage_cost(ex, "stablehlo")["ops_stablehlo"])


@number_exercise("l1.q1", rel_close=0.0)
def q1():
    inputs, _ = main_signature(exploration()["stablehlo"].text)
    dynamic = [a for i, a in enumerate(args()) if i not in STATIC]
    leaves = len(jax.tree_util.tree_leaves(dynamic))
    whole = len(dynamic)  # params and x, each taken as one argument
    return len(inputs), {whole: "you count the dict of params as one argument: JAX flattens a pytree into its "
                                "leaves, one argument each",
                         whole + 1: "you count params as one argument and steps as another: the dict is "
                                    "flattened, and a static argument is no argument of @main at all",
                         leaves + 1: "you count steps: a static argument is baked into the program when JAX "
                                     "traces, so @main never receives it"}


def _argument_index(answer) -> int | None:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, np.integer)):
        return int(answer)
    text = str(answer).strip().lstrip("%")
    text = text.removeprefix("arg")
    return int(text) if text.isdigit() else None


@exercise("l1.q2")
def q2(answer):
    inputs, _ = main_signature(exploration()["stablehlo"].text)
    w = args()[0]["w"]
    want = f"tensor<{'x'.join(map(str, w.shape))}x{_mlir_dtype(w.dtype)}>"
    matches = [i for i, t in enumerate(inputs) if t == want]
    if len(matches) != 1:  # the program gives w a shape and dtype of its own; if JAX ever changes that, say so
        raise RuntimeError(f"expected one @main argument of type {want}, found {matches} in {inputs}")
    expected = matches[0]
    k = _argument_index(answer)
    if k is None:
        return wrong(f"{answer!r} is not an argument number", "the answer is k of %argk, e.g. 0 or '%arg0'")
    if k == expected:
        return right(f"%arg{k} holds params['w'] ({want}): JAX flattens a dict in the sorted order of its keys, "
                     "whatever order it was written in")
    written = list(args()[0]).index("w")
    if k == written:
        return wrong(f"%arg{k} is where 'w' would be if JAX kept the order the dict was written in",
                     "JAX flattens a dict's values in the sorted order of its keys; look for the argument whose "
                     "type is w's shape and dtype")
    if not 0 <= k < len(inputs):
        return wrong(f"@main has no %arg{k}: it takes {len(inputs)} arguments", "count from %arg0")
    return wrong(f"%arg{k} is not params['w']: its type is {inputs[k]}",
                 "find the argument whose type is w's shape and dtype (8x8, bf16)")


def _mlir_dtype(dtype) -> str:
    name = np.dtype(dtype).name
    try:
        return mlir_spelling(name)
    except TypeError:  # a type MLIR has no spelling for here: numpy's name says what it is
        return name


def _element_type_of(answer) -> str | None:
    """The answer as an MLIR element type name ("f32", "bf16", ...), or None."""
    if isinstance(answer, str):
        text = answer.strip().lower().removeprefix("jnp.").removeprefix("np.").removeprefix("jax.numpy.")
        if text.startswith("tensor<"):
            return element_type(text)
        text = text.split("[", 1)[0]  # the jaxpr's spelling: f32[4,8]
        try:
            return mlir_spelling(text)
        except TypeError:
            return None
    if not isinstance(answer, (type, np.dtype)):
        return None
    try:
        return _mlir_dtype(answer)
    except (TypeError, ValueError, KeyError):  # not something numpy reads as a dtype
        return None


@exercise("l1.q3")
def q3(answer):
    _, results = main_signature(exploration()["stablehlo"].text)
    expected = element_type(results[0])
    got = _element_type_of(answer)
    if got is None:
        return wrong(f"{answer!r} is not an element type",
                     "write it as MLIR does ('f32', 'bf16') or as numpy does ('float32', jnp.bfloat16)")
    if got == expected:
        return right(f"{expected}: the float32 bias promotes h in the first step, and bfloat16 weights times a "
                     "float32 h stay float32")
    return wrong(f"{got} is not the result's element type",
                 "follow h through the jaxpr: which dtype does h @ w + b have, where b is float32? The result type "
                 "is at the end of the @main line")


@number_exercise("l1.q4", rel_close=0.05)
def q4():
    lesson, one = stablehlo_ops(exploration(STEPS)), stablehlo_ops(exploration(1))
    return stablehlo_ops(exploration(ASKED_STEPS)), {
        lesson: f"you count the program of steps={STEPS}: the Python loop is unrolled when JAX traces, so each "
                "step adds its ops again",
        one * ASKED_STEPS: "you multiply the whole steps=1 program: the ops before and after the loop (the input's "
                           "convert, the gain) occur once"}
