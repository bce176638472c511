"""Tap modules: a program that also returns chosen intermediate values, for finding where numbers drift.

``tappable(text)`` reads a StableHLO module once (its private functions already inlined into ``@main``, so
that an op of ``jnp.where``'s helper is an op of ``@main`` as it is after any Enzyme pipeline): each op of ``@main``'s body listed as a ``TapPoint`` -- its name, its result types, where
each of its operands comes from (another point's result, or an argument of ``@main``), and the number
``tag_ops`` gave it in the text it came from, so that a point names its line in the stage's text.
``tapped(t, values)`` writes the module whose ``@main`` returns its own results and then ``values`` (each
a point's result or an argument), with ``@main``'s type changed to match; every tap module passes MLIR's
verifier before it is handed on. Ops inside regions (a ``while``'s body, a ``case``'s branches) are not
points of their own: the op that holds the region is, so a drift inside a loop is found at the loop.

Both are linear in the module's size: one parse and one walk over ``@main``'s body.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ModuleParseError, WorkbenchError
from .dtypes import element_dtype
from .locations import op_tag
from .mlir import attribute, parse_module

__all__ = ["TapPoint", "Tappable", "Value", "tappable", "tapped", "value_bytes", "value_shape"]

# A value of @main: ("op", point index, result number) or ("arg", argument number).
Value = tuple


@dataclass(frozen=True)
class TapPoint:
    """One op of ``@main``'s body: ``op`` (``stablehlo.add``), ``types`` its result types as MLIR prints
    them, ``operands`` a ``Value`` per operand, ``tag`` its index in ``mlir_op_locations`` of the text the
    module was read from (None where the op has none: one the inliner or a pass made without a location),
    ``regions`` whether it holds regions (a loop, a conditional: its inside is not tapped), ``value`` a
constant's value."""

    index: int
    op: str
    types: tuple[str, ...]
    operands: tuple[Value, ...]
    tag: int | None
    regions: bool
    value: str = ""  # a constant's value attribute as MLIR prints it


@dataclass(frozen=True)
class Tappable:
    """A module ready to tap: its text (tagged, inlined, parseable by JAX), ``@main``'s body as points,
    its argument types and the values it returns."""

    text: str
    points: tuple[TapPoint, ...]
    arguments: tuple[str, ...]
    results: tuple[Value, ...]

    def value_type(self, value: Value) -> str:
        if value[0] == "arg":
            return self.arguments[value[1]]
        return self.points[value[1]].types[value[2]]


def _main(module, ir):
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise WorkbenchError("the module has no @main function: there is nothing to run and tap")


def _is_tensor(type_text: str) -> bool:
    return type_text.startswith("tensor<")


def tappable(text: str) -> Tappable:
    """``text`` (a StableHLO module whose ops ``tag_ops`` numbered, its helpers inlined, as JAX can parse it:
    ``pipeline.exported.inlined_for_jax``) read for tapping; WorkbenchError where it does not parse."""
    from jaxlib.mlir import ir

    try:
        module = parse_module(text, allow_unregistered=False)
    except ModuleParseError as e:
        raise WorkbenchError(f"the module cannot be tapped: {e}") from None
    with module.context:
        main = _main(module, ir)
        block = main.regions[0].blocks[0]
        where: dict = {}  # MLIR value -> Value
        for n, arg in enumerate(block.arguments):
            where[arg] = ("arg", n)
        points, results = [], ()
        for k, op in enumerate(block.operations):
            operands = tuple(where.get(v, ("other", 0)) for v in op.operands)
            if op.name == "func.return":
                results = operands
                continue
            for r, value in enumerate(op.results):
                where[value] = ("op", k, r)
            found = attribute(op, "value") if op.name == "stablehlo.constant" else None
            value = str(found) if found is not None else ""
            points.append(TapPoint(k, op.name, tuple(str(v.type) for v in op.results), operands,
                                   op_tag(str(op.location)), len(op.regions) > 0, value))
        text_out = module.operation.get_asm(enable_debug_info=True)
        return Tappable(text_out, tuple(points), tuple(str(a.type) for a in block.arguments), results)


def tapped(t: Tappable, values: Sequence[Value]) -> str:
    """The text of ``t``'s module whose ``@main`` returns its results, then each of ``values`` (tensors
    only); verified by MLIR. WorkbenchError for a value that is not a tensor of ``@main``'s body."""
    from jaxlib.mlir import ir

    for v in values:
        if not _is_tensor(t.value_type(v)):
            raise WorkbenchError(f"value {v} is a {t.value_type(v)}, not a tensor: it cannot be returned")
    module = parse_module(t.text, allow_unregistered=False)
    with module.context:
        main = _main(module, ir)
        block = main.regions[0].blocks[0]
        ops = list(block.operations)
        ret = ops[-1]
        extra = [block.arguments[v[1]] if v[0] == "arg" else ops[v[1]].results[v[2]] for v in values]
        with ir.InsertionPoint(ret), ret.location:
            ir.Operation.create("func.return", operands=list(ret.operands) + extra)
        ret.erase()
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ftype.inputs), list(ftype.results) + [x.type for x in extra]))
        if "res_attrs" in main.attributes:
            kept = list(ir.ArrayAttr(main.attributes["res_attrs"]))
            main.attributes["res_attrs"] = ir.ArrayAttr.get(kept + [ir.DictAttr.get({})] * len(extra))
        if not module.operation.verify():
            raise WorkbenchError("the tap module does not verify")
        return module.operation.get_asm(enable_debug_info=True)


def value_shape(type_text: str):
    """(shape, numpy dtype) of a static ``tensor<AxBxf32>`` type; None for any other type."""
    inner = type_text[len("tensor<"):-1] if _is_tensor(type_text) else ""
    if not inner or "?" in inner:
        return None
    *dims, element = inner.split(",")[0].strip().split("x")
    if not all(d.isdigit() for d in dims):
        return None
    try:
        return tuple(int(d) for d in dims), element_dtype(element)
    except (TypeError, ValueError, KeyError):
        return None


def value_bytes(type_text: str) -> int:
    """Bytes of a static tensor type (0 for any other)."""
    import numpy as np

    found = value_shape(type_text)
    if found is None:
        return 0
    count = 1
    for d in found[0]:
        count *= d
    return count * int(np.dtype(found[1]).itemsize)
