"""What the cost rules read off an op: static tensor shapes, element sizes and integer attributes.

An element of type ``i1`` is one byte (sub-byte types round up to one), as in XLA. Dynamic shapes and
element types of unknown size give None, which the rules turn into an unknown cost.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections.abc import Iterator, Sequence

from jaxlib.mlir import ir

from ...ir.mlir import attribute  # every read of an attribute by name: safe for complex constants

__all__ = [
    "TUPLE_POINTER_BYTES",
    "Tensor",
    "attribute",
    "element_count",
    "int_attribute",
    "int_list",
    "nested_ops",
    "static_tensor",
    "tensors_remembered",
    "total_bytes",
]

# An HLO tuple is a table of pointers to its elements.
TUPLE_POINTER_BYTES = 8


def _element_bytes(element_type: ir.Type) -> int | None:
    if isinstance(element_type, ir.ComplexType):
        inner = _element_bytes(element_type.element_type)
        return None if inner is None else 2 * inner
    if isinstance(element_type, (ir.IntegerType, ir.FloatType)):
        return max(1, math.ceil(element_type.width / 8))
    if isinstance(element_type, ir.IndexType):
        return 8
    return None


@dataclasses.dataclass(frozen=True)
class Tensor:
    """The static shape of a ranked tensor and the size of one element in bytes."""

    shape: tuple[int, ...]
    element_bytes: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.element_bytes


_SEEN = threading.local()  # .types: within ``tensors_remembered``, each type read -> its Tensor or None


@contextlib.contextmanager
def tensors_remembered() -> Iterator[None]:
    """Within this block (one module's walk, on this thread), each distinct type is read once: a module names
    few types many times (the 12-layer GPT-2 training step's five MLIR stages: 107,076 reads), and reading one
    goes through MLIR's bindings each time. MLIR types are unique per context, so a type's key is only valid while its
    module lives: the memory is this block's, and nested blocks share the outermost one's."""
    if getattr(_SEEN, "types", None) is not None:
        yield
        return
    _SEEN.types = {}
    try:
        yield
    finally:
        _SEEN.types = None


def static_tensor(t: ir.Type) -> Tensor | None:
    """Static shape and element size of a ranked tensor; None for anything else."""
    seen = getattr(_SEEN, "types", None)
    if seen is None:
        return _read_tensor(t)
    try:
        return seen[t]
    except KeyError:
        found = seen[t] = _read_tensor(t)
        return found


def _read_tensor(t: ir.Type) -> Tensor | None:
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    size = _element_bytes(t.element_type)
    return None if size is None else Tensor(tuple(t.shape), size)


def total_bytes(values: Sequence[ir.Value]) -> int | None:
    """Bytes of the arrays among ``values``; None if one of them has no static size."""
    total = 0
    for v in values:
        if not isinstance(v.type, ir.RankedTensorType):
            continue  # tokens and other non-array values are not stored data
        t = static_tensor(v.type)
        if t is None:
            return None
        total += t.nbytes
    return total


def element_count(value: ir.Value) -> int | None:
    t = static_tensor(value.type)
    return None if t is None else t.elements


def int_list(attr: ir.Attribute | None) -> list[int]:
    """The integers of a dense array or dense elements attribute; [] when it is absent."""
    if attr is None:
        return []
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    return [int(x) for x in ir.DenseIntElementsAttr(attr)]


def int_attribute(op: ir.Operation, name: str, default: int) -> int:
    attr = attribute(op, name)
    return default if attr is None else ir.IntegerAttr(attr).value


def nested_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    """Every op inside ``op``'s regions, at any depth, in text order."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from nested_ops(inner.operation)
