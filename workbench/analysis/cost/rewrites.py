"""A simulation of what XLA's import of StableHLO does to a function before it counts anything.

XLA's import rewrites a module before ``HloCostAnalysis`` sees it, and the cost model follows the
rewrites measured on this jax/XLA version, each reported in the row's note:

* ops whose operands are all constants are folded (elementwise ops, broadcasts of splats, reshape,
  transpose, slice, concatenate; not reductions or iota); identities disappear (``x * 1``, ``x + 0``,
  ``x - 0``, ``x | 0``, ``x & -1``, and convert, reshape, slice, pad or transpose to the same type);
* a splat constant of more than one element that a remaining op reads becomes a broadcast of a scalar,
  once per distinct splat per function;
* every transpose gets the layout that makes it a bitcast (0 bytes);
* a broadcast_in_dim that stretches a size-1 dimension becomes broadcast + reshape + broadcast, a
  multi-dimensional iota becomes a 1-D iota and a broadcast, and a select on a scalar predicate
  gets the predicate broadcast to full shape;
* several results leave a function as a tuple, and a while loop carries its state -- its operands plus
  the non-constant values its regions capture -- as a tuple, built before the loop and at the end of
  every iteration; each tuple costs 8 bytes of pointers per element.

This module decides the first two, which depend on where an op's operands come from; the others
change the cost of one op by itself and are in ``rules.py``. Rewrites beyond these (other algebraic
simplifications; equal splats built in different ways, such as ``2 * 3`` and ``6``, which XLA
unifies) are not modelled.

Which splats are equal is decided by their structure: the op that made one, its attributes and type,
and its inputs. Each distinct structure is interned to a small integer, and a structure names its
inputs by their integers, so a key's size is that of one op however long the chain of folded ops
behind it (``c = c * c`` forty times would otherwise spell out 2**40 leaves).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from jaxlib.mlir import ir

from .rules import ELEMENTWISE, TRANSCENDENTAL
from ...ir.mlir import attribute_items
from .tensors import attribute, int_list, nested_ops, static_tensor
from .work import WorkCounter

__all__ = ["Imported", "import_rewrites"]

# Ops XLA's import evaluates when every operand is a constant (reductions and iota it leaves alone).
_FOLDABLE = ELEMENTWISE | TRANSCENDENTAL | {
    "broadcast",
    "broadcast_in_dim",
    "concatenate",
    "reshape",
    "slice",
    "transpose",
}
# Ops whose result holds the same element values as their only operand.
_VALUE_PRESERVING = frozenset({"broadcast", "broadcast_in_dim", "reshape", "slice", "transpose"})
_SAME_TYPE_NOOPS = frozenset({"broadcast_in_dim", "convert", "pad", "reshape", "slice", "transpose"})


@dataclasses.dataclass(frozen=True)
class _Splat:
    """A constant with one value everywhere: ``key`` the id of how it was built (``_Keys``),
    ``value`` its element where known. Equal keys are one constant to XLA, which uniques constants."""

    key: int
    value: int | float | None


class _Keys:
    """Small integer ids for the structures constants are built from, equal ids for equal ones.

    A structure holds text of one op (its name, attributes, type) and the ids of its inputs, never
    their structures: a key's size does not grow with the history behind it.
    """

    def __init__(self, work: WorkCounter) -> None:
        self._ids: dict[tuple[str | int, ...], int] = {}
        self._work = work

    def of(self, *parts: str | int) -> int:
        self._work.constant_keys += 1
        self._work.constant_key_size += sum(len(p) if isinstance(p, str) else 1 for p in parts)
        return self._ids.setdefault(parts, len(self._ids))


@dataclasses.dataclass(frozen=True)
class Imported:
    """How XLA's import rewrites a function's ops before HloCostAnalysis sees them.

    ``folded`` ops have constant operands and become constants. ``dropped`` ops are identities
    (``x * 1``, a convert to the same type, a zero pad), replaced by their operand; the value says
    why. A splat constant of more than one element that a remaining op reads is materialized as a
    broadcast of a scalar, once per distinct splat; its bytes are charged to the op that first
    produced that splat (``materialized``).
    """

    folded: frozenset[ir.Operation]
    dropped: Mapping[ir.Operation, str]
    materialized: Mapping[ir.Operation, int]


def _constant_splat(op: ir.Operation, keys: _Keys) -> _Splat | None:
    attr = attribute(op, "value")  # a complex constant is opaque to the bindings: not a splat known here
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    element = attr.get_splat_value()
    value = element.value if isinstance(element, (ir.IntegerAttr, ir.FloatAttr)) else None
    return _Splat(keys.of(op.name, str(attr)), value)


def _all_ones(value: int | float, element_type: ir.Type) -> bool:
    if not isinstance(element_type, ir.IntegerType) or not isinstance(value, int):
        return False
    width = element_type.width
    return value % (1 << width) == (1 << width) - 1


def _identity_operand(
    op: ir.Operation, short: str, splats: Mapping[ir.Value, _Splat | None]
) -> tuple[int, str] | None:
    """The operand an identity op equals, and why XLA's import removes the op; None otherwise."""
    operands = list(op.operands)
    if len(op.results) != 1 or not operands:
        return None
    result_type = op.results[0].type
    if short in _SAME_TYPE_NOOPS and operands[0].type == result_type:
        dims = {"transpose": "permutation", "broadcast_in_dim": "broadcast_dimensions"}.get(short)
        if dims is not None and int_list(attribute(op, dims)) != list(range(len(result_type.shape))):
            return None
        pads = ("edge_padding_low", "edge_padding_high", "interior_padding")
        if short == "pad" and any(any(int_list(attribute(op, name))) for name in pads):
            return None
        return 0, f"{short} to the same type: removed when XLA imports the module"
    identities = {"add": 0, "subtract": 0, "multiply": 1, "or": 0}
    if short not in (*identities, "and") or len(operands) != 2:
        return None
    if not isinstance(result_type, ir.RankedTensorType):
        return None
    element_type = result_type.element_type
    for i in (1, 0) if short != "subtract" else (1,):
        splat = splats.get(operands[i])
        if splat is None or splat.value is None:
            continue
        if (short == "and" and _all_ones(splat.value, element_type)) or (
            short != "and" and splat.value == identities[short]
        ):
            return 1 - i, f"{short} by {splat.value}: removed when XLA imports the module"
    return None


def import_rewrites(func: ir.Operation, work: WorkCounter) -> Imported:
    """What XLA's import folds, drops and materializes among the ops of one function, in text order;
    the keys it builds for constants are counted in ``work``."""
    keys = _Keys(work)
    # Constant-valued results: a _Splat, or None for constants with different elements.
    splats: dict[ir.Value, _Splat | None] = {}
    folded: set[ir.Operation] = set()
    dropped: dict[ir.Operation, str] = {}
    materialized: dict[ir.Operation, int] = {}
    seen: set[int] = set()
    for op in nested_ops(func):
        work.ops_visited += 1
        dialect, _, short = op.name.partition(".")
        operands = list(op.operands)
        if dialect != "stablehlo":
            identity = None
        elif short == "constant":
            splats[op.results[0]] = _constant_splat(op, keys)
            continue
        elif (
            short in _FOLDABLE
            and operands
            and all(v in splats for v in operands)
            # A broadcast of a non-splat constant stays: folding it would grow the constant.
            and not (short.startswith("broadcast") and splats[operands[0]] is None)
        ):
            folded.add(op)
            inputs = [splats[v] for v in operands]
            if short == "concatenate" or any(s is None for s in inputs):
                splats[op.results[0]] = None
                continue
            attrs = ";".join(f"{name}={attr}" for name, attr in attribute_items(op))
            key = keys.of(op.name, attrs, str(op.results[0].type), *(s.key for s in inputs if s is not None))
            value = inputs[0].value if short in _VALUE_PRESERVING and inputs[0] else None
            splats[op.results[0]] = _Splat(key, value)
            continue
        else:
            identity = _identity_operand(op, short, splats)
        if identity is not None:
            kept, why = identity
            dropped[op] = why
            if operands[kept] in splats:
                splats[op.results[0]] = splats[operands[kept]]
            operands = [operands[kept]]
        for value in operands:
            splat = splats.get(value)
            tensor = static_tensor(value.type)
            if splat is None or splat.key in seen or tensor is None or tensor.elements <= 1:
                continue
            seen.add(splat.key)
            materialized[value.owner.operation] = tensor.element_bytes + tensor.nbytes
    return Imported(frozenset(folded), MappingProxyType(dropped), MappingProxyType(materialized))
