"""What a module costs: flops, transcendentals and bytes, per op and in total, next to XLA's count.

The input is one stage of a pipeline as MLIR text (StableHLO as JAX lowers it, or Enzyme-JaX output).
Three views of its cost:

* ``op_costs(text)`` -- one row per op, costed by the analytic model below, with while-loop bodies
  multiplied by the trip count where the loop's shape lets us read it.
* ``module_cost(text)`` -- the totals as a frozen ``ModuleCost`` value.
* ``xla_cost(text)`` / ``memory_analysis(text)`` -- what XLA itself says: its ``HloCostAnalysis`` on the
  unoptimized HLO of this module, and the buffer sizes of the compiled CPU executable.

``roofline(mc, device)`` turns a cost into lower-bound run times with the peak numbers in ``PEAKS``.

The analytic model
------------------
It follows XLA's ``HloCostAnalysis`` rules so that the two can be checked against each other on
unfused StableHLO; where those rules are a convention rather than physics, the convention is kept and
named here.

* dot_general: ``2 * prod(batch) * prod(lhs free) * prod(rhs free) * prod(contracting)`` -- one
  multiply and one add per term (XLA's ``kFmaFlops = 2``).
* convolution: ``2 * (in features / feature groups) * out features * (batch / batch groups) *
  prod(valid kernel-output pairs per spatial dimension)``. A pair is valid when the kernel tap lands on
  a real input element, not on padding or a hole from lhs dilation; so a SAME-padded 3x3 convolution
  costs a little less than ``2 * out elements * 9 * in features``, exactly as XLA counts it.
* reduce: ``(input elements - output elements) * cost of one application of the body``; the body is
  costed with the same rules (an ``add`` body is 1 flop per application). reduce_window,
  select_and_scatter, scatter and map apply their bodies the number of times XLA assumes.
* elementwise: one flop per output element, for arithmetic and also for compare, select, clamp,
  convert, bitcast_convert and the bitwise ops, because XLA counts all of them that way.
* transcendental (exp, expm1, log, log1p, logistic, power, sqrt, cbrt, rsqrt, tanh, sin, cos, tan,
  atan2, erf): one transcendental per output element and no flops -- XLA keeps them apart because one
  of them costs many flops, a number that depends on the backend.
* data movement (reshape, transpose, broadcast, slice, concatenate, pad, gather, iota, ...): no flops.
* sort: ``n * ceil(log2 n)`` flops for ``n`` keys; fft, cholesky, triangular_solve and all_reduce use
  XLA's formulas; rng ops count one transcendental per generated element, as XLA does.
* custom calls, chlo ops (XLA expands them into many primitive ops first) and ops of unknown dialects:
  cost unknown, reported as None and never folded into the totals as a number.

Bytes are those an op touches if nothing is fused: operand bytes plus result bytes, which is XLA's
"bytes accessed" per HLO instruction before fusion. The exceptions follow XLA: slices and gathers
read only what they return (``2 * result`` plus the index operands), dynamic_update_slice and scatter
count their updates (``2 *`` / ``3 *`` update bytes plus indices), constants and control ops (call,
while, case, return) touch nothing themselves, and a transpose that keeps the row-major order of the
non-unit dimensions is a bitcast. Element sizes: ``i1`` is one byte, sub-byte types round up to a byte.

Where the totals and XLA's still differ:

* bytes: XLA builds tuples where StableHLO has none -- the result of a function with several results
  and the state of a while loop -- and charges 8 bytes per tuple element for the pointer table. Those
  bytes are not counted here, so the analytic bytes sit a few dozen bytes under XLA's on multi-result
  functions. Exported wrappers add such a tuple too.
* while loops: XLA counts the body and the condition once. Here the body runs ``trip count`` times
  and the condition ``trip count + 1`` times when the trip count can be read (a counter that starts
  at a constant, steps by a positive constant and is compared LT/LE against a constant); the
  ``*_body_once`` totals count each once and are the numbers to compare with XLA.
* case/if: like XLA, only the costliest branch (by flops) is counted; the others are listed with no
  cost.
* chlo ops, custom calls and unknown ops: XLA either expands them (chlo) or reports -1 (custom
  calls); here their cost is None and ``ModuleCost`` counts how many there were.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

__all__ = [
    "PEAKS",
    "DevicePeak",
    "ModuleCost",
    "ModuleParseError",
    "Roofline",
    "cpu_peak",
    "memory_analysis",
    "module_cost",
    "op_costs",
    "roofline",
    "xla_cost",
]

KINDS = (
    "dot_general",
    "convolution",
    "reduce",
    "elementwise",
    "transcendental",
    "data_movement",
    "constant",
    "control",
    "custom_call",
    "other",
)

COLUMNS = (
    "func",
    "op",
    "dialect",
    "kind",
    "result_shapes",
    "flops",
    "transcendentals",
    "bytes",
    "trip_count",
    "note",
)


class ModuleParseError(ValueError):
    """The text is not an MLIR module that jaxlib's MLIR can read, even with unknown dialects allowed."""


# ---------------------------------------------------------------------------------------------------
# Reading the text


_ENZYMEXLA_ENTRY = re.compile(r"([{,])([ \t]*)enzymexla\.[\w.$-]*")
_ENZYMEXLA_NEXT_ENTRY = re.compile(r"[ \t]*enzymexla\.[\w.$-]*")
_PRIVATE_MAIN = re.compile(r"func\.func\s+private\s+@main\b")


def _value_end(text: str, pos: int) -> int:
    """Index of the ``,`` or ``}`` that ends the attribute entry whose name ends at ``pos``."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text) or text[pos] != "=":
        return pos  # a unit attribute: the name is the whole entry
    depth = 0
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in "([{<":
            depth += 1
        elif ch == ">" and text[i - 1] == "-":
            pass  # the arrow of a function type, not a closing bracket
        elif ch in ")]}>":
            if depth == 0:
                return i
            depth -= 1
        elif ch == "," and depth == 0:
            return i
        i += 1
    return i


def strip_enzymexla_attributes(text: str) -> str:
    """The text without ``enzymexla.*`` entries in attribute dictionaries.

    Enzyme-JaX annotates ops with facts (bounds, memory effects, symmetry) whose values jaxlib's MLIR
    may not parse. They carry no cost, so they are dropped before parsing; ``enzymexla`` *ops* are
    left alone.
    """
    pieces: list[str] = []
    pos = 0
    while (m := _ENZYMEXLA_ENTRY.search(text, pos)) is not None:
        end = _value_end(text, m.end())
        if m.group(1) == ",":
            pieces.append(text[pos : m.start()])
            pos = end
            continue
        # The entry opens the dictionary: keep the brace, and drop the comma after the entry
        # together with any further enzymexla entries that would now open it.
        pieces.append(text[pos : m.start() + 1])
        while end < len(text) and text[end] == ",":
            nxt = _ENZYMEXLA_NEXT_ENTRY.match(text, end + 1)
            if nxt is None:
                end += 1
                break
            end = _value_end(text, nxt.end())
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def publish_main(text: str) -> str:
    """The text with ``@main`` public again (Enzyme's pipeline makes it private)."""
    return _PRIVATE_MAIN.sub("func.func public @main", text)


def _parse(text: str) -> ir.Module:
    from jax._src.interpreters import mlir as jax_mlir

    cleaned = strip_enzymexla_attributes(text)
    try:
        return ir.Module.parse(cleaned, context=jax_mlir.make_ir_context())
    except ir.MLIRError:
        pass
    # Ops of dialects jaxlib does not register (e.g. enzymexla.rotate) parse as opaque ops; their
    # results are still typed, which is all the model needs to call them "other".
    ctx = jax_mlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    try:
        return ir.Module.parse(cleaned, context=ctx)
    except ir.MLIRError as err:
        raise ModuleParseError(
            f"cannot parse the module even with unregistered dialects allowed: {err}. "
            "Check that the text is one whole MLIR module (print it with the generic form if a "
            "dialect's custom syntax is the problem)."
        ) from err


# ---------------------------------------------------------------------------------------------------
# Types


def _element_bytes(element_type: ir.Type) -> int | None:
    if isinstance(element_type, ir.ComplexType):
        inner = _element_bytes(ir.ComplexType(element_type).element_type)
        return None if inner is None else 2 * inner
    if isinstance(element_type, ir.IntegerType):
        return max(1, math.ceil(ir.IntegerType(element_type).width / 8))
    if isinstance(element_type, ir.FloatType):
        return max(1, math.ceil(ir.FloatType(element_type).width / 8))
    if isinstance(element_type, ir.IndexType):
        return 8
    return None


@dataclasses.dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    element_bytes: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.element_bytes


def _tensor(t: ir.Type) -> _Tensor | None:
    """Static shape and element size of a ranked tensor; None for anything else."""
    if not isinstance(t, ir.RankedTensorType):
        return None
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        return None
    size = _element_bytes(rt.element_type)
    return None if size is None else _Tensor(tuple(rt.shape), size)


def _nbytes(values: Sequence[ir.Value]) -> int | None:
    total = 0
    for v in values:
        if not isinstance(v.type, ir.RankedTensorType):
            continue  # tokens and other non-array values are not stored data
        t = _tensor(v.type)
        if t is None:
            return None
        total += t.nbytes
    return total


def _elements(value: ir.Value) -> int | None:
    t = _tensor(value.type)
    return None if t is None else t.elements


def _attr(op: ir.Operation, name: str) -> ir.Attribute | None:
    return op.attributes[name] if name in op.attributes else None


def _ints(attr: ir.Attribute | None) -> list[int]:
    if attr is None:
        return []
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(ir.DenseI64ArrayAttr(attr))
    return [int(x) for x in ir.DenseIntElementsAttr(attr)]


def _int_attr(op: ir.Operation, name: str, default: int) -> int:
    attr = _attr(op, name)
    return default if attr is None else ir.IntegerAttr(attr).value


# ---------------------------------------------------------------------------------------------------
# Op kinds

_ELEMENTWISE = frozenset(
    """abs add and bitcast_convert ceil clamp count_leading_zeros compare complex convert divide floor
    imag is_finite maximum minimum multiply negate not or popcnt real reduce_precision remainder
    round_nearest_afz round_nearest_even select shift_left shift_right_arithmetic shift_right_logical
    sign stochastic_convert subtract xor""".split()
)
_TRANSCENDENTAL = frozenset(
    """atan2 cbrt cosine erf exponential exponential_minus_one log log_plus_one logistic power rsqrt
    sine sqrt tan tanh""".split()
)
_DATA_MOVEMENT = frozenset(
    """all_gather all_to_all broadcast broadcast_in_dim collective_broadcast collective_permute
    concatenate dynamic_broadcast_in_dim dynamic_gather dynamic_iota dynamic_pad dynamic_reshape
    dynamic_slice dynamic_update_slice gather get_tuple_element iota optimization_barrier pad
    real_dynamic_slice reduce_scatter reshape reverse scatter slice transpose tuple""".split()
)
_CONTROL = frozenset(
    """after_all call case composite create_token if partition_id replica_id return while""".split()
)
# Enzyme-JaX's own array ops: rotations, halo extensions and fused slices move data, nothing else.
_ENZYMEXLA_DATA_MOVEMENT = frozenset(
    "extend multi_pad multi_rotate multi_slice rotate update_without_corners wrap".split()
)
# Enzyme-JaX ops that call out to code the module does not contain.
_ENZYMEXLA_OPAQUE_CALLS = frozenset("jit_call kernel_call xla_wrapper".split())
# Ops whose regions are computations applied element by element; their cost is the parent's.
_APPLIED_REGION_OPS = frozenset(
    """all_reduce map reduce reduce_scatter reduce_window scatter select_and_scatter sort""".split()
)
_HLO_DIALECTS = frozenset({"stablehlo", "mhlo"})
_CALL_OPS = frozenset({"func.call", "stablehlo.composite"})
_KNOWN_OTHER = frozenset(
    "all_reduce cholesky fft rng rng_bit_generator sort triangular_solve".split()
)


@dataclasses.dataclass(frozen=True)
class _Cost:
    """The cost of one execution of one op; None where unknown."""

    kind: str
    flops: int | None = 0
    transcendentals: int | None = 0
    bytes: int | None = 0
    note: str = ""


def _default_bytes(op: ir.Operation) -> int | None:
    operand_bytes = _nbytes(list(op.operands))
    result_bytes = _nbytes(list(op.results))
    if operand_bytes is None or result_bytes is None:
        return None
    return operand_bytes + result_bytes


def _body_cost(region: ir.Region) -> tuple[int | None, int | None]:
    """Flops and transcendentals of one application of a reducer-like body."""
    flops: int | None = 0
    transcendentals: int | None = 0
    for block in region.blocks:
        for inner in block.operations:
            cost = _cost_of(inner.operation)
            flops = None if flops is None or cost.flops is None else flops + cost.flops
            transcendentals = (
                None
                if transcendentals is None or cost.transcendentals is None
                else transcendentals + cost.transcendentals
            )
    return flops, transcendentals


def _scaled(value: int | None, factor: int) -> int | None:
    return None if value is None else value * factor


def _dot_cost(op: ir.Operation, name: str) -> _Cost:
    lhs = _tensor(op.operands[0].type)
    out = _tensor(op.results[0].type)
    if lhs is None or out is None:
        return _Cost("dot_general", None, 0, None, "dynamic shape: cost unknown")
    if name == "dot":
        contracting = [len(lhs.shape) - 1]
    else:
        dims = stablehlo.DotDimensionNumbers(_attr(op, "dot_dimension_numbers"))
        contracting = list(dims.lhs_contracting_dimensions)
    # The result holds batch x lhs free x rhs free elements; each sums prod(contracting) products.
    width = math.prod(lhs.shape[d] for d in contracting)
    return _Cost("dot_general", 2 * out.elements * width, 0, _default_bytes(op))


def _valid_positions(
    in_size: int, kernel: int, out_size: int, stride: int, pad_low: int, lhs_dil: int, rhs_dil: int
) -> int:
    """How many (kernel tap, output position) pairs read a real input element along one dimension."""
    if stride == 1 and lhs_dil == 1:
        # Output positions o with 0 <= o - pad_low + k * rhs_dil < in_size, counted per tap.
        total = 0
        for k in range(kernel):
            first = pad_low - k * rhs_dil
            total += max(0, min(in_size + first, out_size) - max(first, 0))
        return total
    total = 0
    for k in range(kernel):
        for o in range(out_size):
            dilated = o * stride - pad_low + k * rhs_dil
            if dilated % lhs_dil == 0 and 0 <= dilated // lhs_dil < in_size:
                total += 1
    return total


def _convolution_cost(op: ir.Operation) -> _Cost:
    lhs = _tensor(op.operands[0].type)
    rhs = _tensor(op.operands[1].type)
    out = _tensor(op.results[0].type)
    if lhs is None or rhs is None or out is None:
        return _Cost("convolution", None, 0, None, "dynamic shape: cost unknown")
    dims = stablehlo.ConvDimensionNumbers(_attr(op, "dimension_numbers"))
    rank = len(dims.input_spatial_dimensions)
    strides = _ints(_attr(op, "window_strides")) or [1] * rank
    padding = _ints(_attr(op, "padding")) or [0] * (2 * rank)
    lhs_dilation = _ints(_attr(op, "lhs_dilation")) or [1] * rank
    rhs_dilation = _ints(_attr(op, "rhs_dilation")) or [1] * rank
    positions = 1
    for i in range(rank):
        positions *= _valid_positions(
            lhs.shape[dims.input_spatial_dimensions[i]],
            rhs.shape[dims.kernel_spatial_dimensions[i]],
            out.shape[dims.output_spatial_dimensions[i]],
            strides[i],
            padding[2 * i],
            lhs_dilation[i],
            rhs_dilation[i],
        )
    feature_groups = _int_attr(op, "feature_group_count", 1)
    batch_groups = _int_attr(op, "batch_group_count", 1)
    macs = (
        (lhs.shape[dims.input_feature_dimension] // feature_groups)
        * out.shape[dims.output_feature_dimension]
        * (lhs.shape[dims.input_batch_dimension] // batch_groups)
        * positions
    )
    return _Cost("convolution", 2 * macs, 0, _default_bytes(op))


def _reduce_window_count(op: ir.Operation) -> int | None:
    """How many times XLA applies a reduce_window's body."""
    out = _tensor(op.results[0].type)
    if out is None:
        return None
    window = _ints(_attr(op, "window_dimensions"))
    padding = _ints(_attr(op, "padding")) or [0] * (2 * len(window))
    count = (math.prod(window) - 1) * out.elements
    reduced = [i for i, w in enumerate(window) if w != 1]
    padded = [i for i in range(len(window)) if padding[2 * i] or padding[2 * i + 1]]
    # XLA recognises "reduce one dimension and broadcast it back" (a window of 2n-1 padded by n-1 on
    # both sides) and charges it as one reduction plus the broadcast, not n reductions per element.
    if len(reduced) == 1 and len(padded) == 1 and len(op.results) == 1:
        d = reduced[0]
        low, high = padding[2 * d], padding[2 * d + 1]
        if low == high != 0 and window[d] == 2 * low + 1 and low == out.shape[d] - 1:
            n = out.shape[d]
            count = out.elements // n + n - 1
    return count


def _applied_cost(op: ir.Operation, short: str) -> _Cost:
    """Ops that apply a body computation: reduce, reduce_window, scatter, select_and_scatter, map."""
    if short == "select_and_scatter":
        source = _tensor(op.operands[1].type)
        select_flops, select_trans = _body_cost(op.regions[0])
        scatter_flops, scatter_trans = _body_cost(op.regions[1])
        if source is None:
            return _Cost("reduce", None, None, None, "dynamic shape: cost unknown")
        selects = source.elements * (math.prod(_ints(_attr(op, "window_dimensions"))) - 1)
        flops = (
            None
            if select_flops is None or scatter_flops is None
            else select_flops * selects + scatter_flops * source.elements
        )
        trans = (
            None
            if select_trans is None or scatter_trans is None
            else select_trans * selects + scatter_trans * source.elements
        )
        return _Cost("reduce", flops, trans, _default_bytes(op))
    body_flops, body_trans = _body_cost(op.regions[0])
    if short == "reduce":
        n_in, n_out = _elements(op.operands[0]), _elements(op.results[0])
        count = None if n_in is None or n_out is None else n_in - n_out
        kind, nbytes = "reduce", _default_bytes(op)
    elif short == "reduce_window":
        count = _reduce_window_count(op)
        kind, nbytes = "reduce", _default_bytes(op)
    elif short == "map":
        count = _elements(op.results[0])
        kind, nbytes = "elementwise", _default_bytes(op)
    else:  # scatter: operands are inputs..., indices, updates...
        n = (len(op.operands) - 1) // 2
        updates = list(op.operands)[n + 1 :]
        update_bytes = _nbytes(updates)
        index_bytes = _nbytes([op.operands[n]])
        count = _elements(updates[0])
        kind = "data_movement"
        # XLA: the updated part of the input is read and written, and the updates read.
        nbytes = None if update_bytes is None or index_bytes is None else 3 * update_bytes + index_bytes
    if count is None:
        return _Cost(kind, None, None, nbytes, "dynamic shape: cost unknown")
    return _Cost(kind, _scaled(body_flops, count), _scaled(body_trans, count), nbytes)


def _expands_unit_dims(op: ir.Operation) -> bool:
    """Whether a broadcast_in_dim stretches a size-1 operand dimension (HLO's broadcast cannot)."""
    src = _tensor(op.operands[0].type)
    out = _tensor(op.results[0].type)
    if src is None or out is None:
        return False
    dims = _ints(_attr(op, "broadcast_dimensions"))
    return any(src.shape[i] == 1 and out.shape[d] != 1 for i, d in enumerate(dims))


def _data_movement_cost(op: ir.Operation, short: str) -> _Cost:
    operands = list(op.operands)
    out_bytes = _nbytes(list(op.results))
    if short in ("get_tuple_element", "tuple", "optimization_barrier"):
        return _Cost("data_movement", 0, 0, 0)
    if short == "transpose":
        # XLA's import gives every transpose the layout that makes it a bitcast.
        return _Cost("data_movement", 0, 0, 0, "a bitcast once XLA assigns its layout")
    if short == "slice":
        nbytes = None if out_bytes is None else 2 * out_bytes
    elif short in ("dynamic_slice", "gather", "dynamic_gather"):
        # Only the returned elements are read, plus the indices.
        index_bytes = _nbytes(operands[1:2] if short != "dynamic_slice" else operands[1:])
        nbytes = None if out_bytes is None or index_bytes is None else 2 * out_bytes + index_bytes
    elif short == "dynamic_update_slice":
        update_bytes = _nbytes(operands[1:2])
        index_bytes = _nbytes(operands[2:])
        nbytes = None if update_bytes is None or index_bytes is None else 2 * update_bytes + index_bytes
    elif short == "broadcast_in_dim" and _expands_unit_dims(op):
        # XLA imports it as broadcast (same shape) + reshape (drop the unit dims) + broadcast.
        in_bytes = _nbytes(operands[:1])
        nbytes = None if in_bytes is None or out_bytes is None else 5 * in_bytes + out_bytes
    else:
        nbytes = _default_bytes(op)
    return _Cost("data_movement", 0, 0, nbytes)


def _other_hlo_cost(op: ir.Operation, short: str) -> _Cost:
    """The few remaining HLO ops XLA gives a formula for."""
    nbytes = _default_bytes(op)
    first = _tensor(op.operands[0].type) if len(op.operands) else None
    if short in ("rng", "rng_bit_generator"):
        elements = sum(_elements(r) or 0 for r in op.results)
        return _Cost("transcendental", 0, elements, nbytes, "random bits: one transcendental each")
    if short == "all_reduce":
        return _Cost("reduce", sum(_elements(r) or 0 for r in op.results), 0, nbytes)
    if first is None:
        return _Cost("other", None, None, nbytes, "dynamic shape: cost unknown")
    if short == "sort":
        n = first.elements
        return _Cost("other", n * math.ceil(math.log2(n)) if n > 1 else 0, 0, nbytes)
    if short == "fft":
        log_factors = math.prod(int(math.log2(n)) for n in _ints(_attr(op, "fft_length")))
        return _Cost("other", 2 * 4 * log_factors * first.elements, 0, nbytes)
    if short == "cholesky":
        # A triangle of the input is read and a triangle of the result written.
        return _Cost("other", first.shape[-1] * first.elements // 3, 0, first.nbytes)
    # triangular_solve
    b = _tensor(op.operands[1].type)
    out_bytes = _nbytes(list(op.results))
    if b is None or out_bytes is None:
        return _Cost("other", None, None, None, "dynamic shape: cost unknown")
    return _Cost("other", 2 * first.shape[-1] * b.elements, 0, out_bytes + first.nbytes // 2 + b.nbytes)


_TUPLE_POINTER_BYTES = 8


def _inside(op: ir.Operation, ancestor: ir.Operation) -> bool:
    current = op.parent
    while current is not None:
        if current == ancestor:
            return True
        current = current.parent
    return False


def _while_state(op: ir.Operation) -> int:
    """How many values an HLO while carries: the loop state plus what its regions capture.

    HLO loops cannot read values from around them, so XLA's import threads every captured
    non-constant value through the loop state (constants it copies into the loop instead).
    """
    captured: set[ir.Value] = set()
    for inner in _nested_ops(op):
        for value in inner.operands:
            if isinstance(value, ir.BlockArgument):
                definer = value.owner.owner.operation
                if definer == op or _inside(definer, op):
                    continue
            else:
                definer = value.owner.operation
                if definer.name.endswith(".constant") or _inside(definer, op):
                    continue
            captured.add(value)
    return len(op.operands) + len(captured)


def _is_while_body_end(op: ir.Operation) -> bool:
    parent = op.parent
    return parent is not None and parent.name in ("stablehlo.while", "mhlo.while") and (
        op.block == parent.regions[1].blocks[0]
    )


def _cost_of(op: ir.Operation) -> _Cost:
    """Cost of one execution of ``op`` itself; ops in its regions are costed by the walk."""
    name = op.name
    dialect, _, short = name.partition(".")
    if name == "func.return":
        # Several results leave an HLO computation as a tuple: a table of 8-byte pointers.
        return _Cost("control", 0, 0, 8 * len(op.operands) if len(op.operands) > 1 else 0)
    if name in _CALL_OPS:
        return _Cost("control")
    if dialect == "enzymexla":
        if short in _ENZYMEXLA_DATA_MOVEMENT:
            return _Cost("data_movement", 0, 0, _default_bytes(op))
        if short in _ENZYMEXLA_OPAQUE_CALLS:
            return _Cost("custom_call", None, None, None, f"{name}: calls opaque code, cost unknown")
    if dialect == "chlo":
        return _Cost(
            "other", None, None, None, "chlo op: XLA expands it into primitive ops first; not modelled"
        )
    if dialect == "sdy":
        # Shardy ops annotate sharding; none computes or moves data on one device.
        return _Cost("data_movement" if op.results else "control")
    if dialect not in _HLO_DIALECTS:
        return _Cost("other", None, None, None, f"{dialect} op: not modelled")
    if short == "constant":
        return _Cost("constant")
    if short == "custom_call":
        target = _attr(op, "call_target_name")
        label = ir.StringAttr(target).value if target is not None else "?"
        return _Cost("custom_call", None, None, None, f"custom call {label!r}: cost unknown")
    if short == "while":
        return _Cost("control", 0, 0, _TUPLE_POINTER_BYTES * _while_state(op))
    if short == "return" and _is_while_body_end(op):
        return _Cost("control", 0, 0, _TUPLE_POINTER_BYTES * _while_state(op.parent))
    if short in _CONTROL:
        return _Cost("control")
    if short in ("dot", "dot_general"):
        return _dot_cost(op, short)
    if short == "convolution":
        return _convolution_cost(op)
    if short in ("reduce", "reduce_window", "select_and_scatter", "map", "scatter"):
        return _applied_cost(op, short)
    if short in _DATA_MOVEMENT:
        return _data_movement_cost(op, short)
    if short in _ELEMENTWISE or short in _TRANSCENDENTAL:
        elements = _elements(op.results[0])
        if elements is None:
            return _Cost("elementwise", None, None, None, "dynamic shape: cost unknown")
        if short in _TRANSCENDENTAL:
            return _Cost("transcendental", 0, elements, _default_bytes(op))
        return _Cost("elementwise", elements, 0, _default_bytes(op))
    if short in _KNOWN_OTHER:
        return _other_hlo_cost(op, short)
    return _Cost("other", None, None, None, f"{name}: not modelled")


# ---------------------------------------------------------------------------------------------------
# Constant folding on import into XLA

# Ops XLA's import evaluates when every operand is a constant (reductions and iota it leaves alone).
_FOLDABLE = _ELEMENTWISE | _TRANSCENDENTAL | {
    "broadcast",
    "broadcast_in_dim",
    "concatenate",
    "reshape",
    "slice",
    "transpose",
}


@dataclasses.dataclass(frozen=True)
class _Folds:
    """What XLA's import does to a function's constant-valued ops.

    ``folded`` ops become constants and cost nothing. A splat constant of more than one element that
    an unfolded op reads is materialized as a broadcast of a scalar, once per distinct splat: that
    broadcast's bytes are charged to the op that first produced the splat (``materialized``).
    """

    folded: frozenset[ir.Operation]
    materialized: Mapping[ir.Operation, int]


def _nested_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _nested_ops(inner.operation)


def _splat_key(op: ir.Operation) -> str | None:
    value = op.attributes["value"]
    if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
        return str(value)
    return None


def _fold_analysis(func: ir.Operation) -> _Folds:
    # Constant-valued results, keyed by how a splat was built (None: not a splat) so that equal
    # splats built the same way share one materialization, as XLA's constant uniquing makes them.
    constants: dict[ir.Value, str | None] = {}
    folded: set[ir.Operation] = set()
    materialized: dict[ir.Operation, int] = {}
    seen: set[str] = set()
    for op in _nested_ops(func):
        dialect, _, short = op.name.partition(".")
        operands = list(op.operands)
        if dialect in _HLO_DIALECTS and short == "constant":
            constants[op.results[0]] = _splat_key(op)
            continue
        if (
            dialect in _HLO_DIALECTS
            and short in _FOLDABLE
            and operands
            and all(v in constants for v in operands)
        ):
            folded.add(op)
            keys = [constants[v] for v in operands]
            splat = short != "concatenate" and all(k is not None for k in keys)
            attrs = ";".join(f"{name}={op.attributes[name]}" for name in op.attributes)
            constants[op.results[0]] = (
                f"{op.name}{{{attrs}}}({','.join(map(str, keys))}):{op.results[0].type}"
                if splat
                else None
            )
            continue
        for value in operands:
            key = constants.get(value)
            tensor = _tensor(value.type)
            if key is None or key in seen or tensor is None or tensor.elements <= 1:
                continue
            seen.add(key)
            materialized[value.owner.operation] = tensor.element_bytes + tensor.nbytes
    return _Folds(frozenset(folded), MappingProxyType(materialized))


# ---------------------------------------------------------------------------------------------------
# While-loop trip counts


def _constant_int(value: ir.Value) -> int | None:
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner.operation
    if owner.name not in ("stablehlo.constant", "mhlo.constant", "arith.constant"):
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    dense = ir.DenseElementsAttr(attr)
    if not dense.is_splat:
        return None
    return ir.IntegerAttr(dense.get_splat_value()).value


def _loop_invariant_int(while_op: ir.Operation, value: ir.Value) -> int | None:
    """A constant, or a loop-carried value that enters as a constant and the body passes through."""
    direct = _constant_int(value)
    if direct is not None or not isinstance(value, ir.BlockArgument):
        return direct
    index = value.arg_number
    body = while_op.regions[1].blocks[0]
    if body.operations[len(body.operations) - 1].operands[index] != body.arguments[index]:
        return None
    return _constant_int(while_op.operands[index])


_MIRRORED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}


def _trip_count(while_op: ir.Operation) -> int | None:
    """Iterations of a counted loop (what fori_loop and scan lower to), or None if not of that form."""
    cond = while_op.regions[0].blocks[0]
    body = while_op.regions[1].blocks[0]
    predicate = cond.operations[len(cond.operations) - 1].operands[0]
    if not isinstance(predicate, ir.OpResult):
        return None
    compare = predicate.owner.operation
    if compare.name != "stablehlo.compare":
        return None
    direction = str(compare.attributes["comparison_direction"]).split()[-1].rstrip(">")
    counter, bound = compare.operands[0], compare.operands[1]
    if not isinstance(counter, ir.BlockArgument) and direction in _MIRRORED:
        counter, bound, direction = bound, counter, _MIRRORED[direction]
    if direction not in ("LT", "LE") or not isinstance(counter, ir.BlockArgument):
        return None
    index = counter.arg_number
    limit = _loop_invariant_int(while_op, bound)
    start = _constant_int(while_op.operands[index])
    update = body.operations[len(body.operations) - 1].operands[index]
    if limit is None or start is None or not isinstance(update, ir.OpResult):
        return None
    add = update.owner.operation
    if add.name != "stablehlo.add":
        return None
    a, b = add.operands[0], add.operands[1]
    step_value = b if a == body.arguments[index] else a if b == body.arguments[index] else None
    step = None if step_value is None else _constant_int(step_value)
    if step is None or step <= 0:
        return None
    span = limit - start + (1 if direction == "LE" else 0)
    return max(0, -(-span // step))


# ---------------------------------------------------------------------------------------------------
# Walking the module


@dataclasses.dataclass(frozen=True)
class _Context:
    """Where an op sits: its function, the loops around it, and whether it is counted at all."""

    func: str
    path: tuple[str, ...]
    loops: tuple[int, ...] = ()
    counted: bool = True
    why_not: str = ""

    @property
    def trip_count(self) -> int:
        return math.prod(self.loops)

    def in_loop(self, factor: int) -> _Context:
        return dataclasses.replace(self, loops=(*self.loops, factor))

    def uncounted(self, why: str) -> _Context:
        return dataclasses.replace(self, counted=False, why_not=self.why_not or why)

    def called(self, callee: str) -> _Context:
        return dataclasses.replace(self, func=callee, path=(*self.path, callee))


@dataclasses.dataclass(frozen=True)
class _Row:
    func: str
    op: str
    result_shapes: str
    cost: _Cost
    trip_count: int
    counted: bool
    note: str

    @property
    def weight(self) -> int:
        return self.trip_count if self.counted else 0

    def total(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else value * self.weight

    def once(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else (value if self.counted else 0)


@dataclasses.dataclass(frozen=True)
class _Walk:
    rows: tuple[_Row, ...]
    loops_read: int


class _Walker:
    def __init__(self, module: ir.Module) -> None:
        self.funcs: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.reached: set[str] = set()
        self.loops_read = 0
        self.folds = {name: _fold_analysis(func) for name, func in self.funcs.items()}

    def walk(self) -> _Walk:
        if "main" in self.funcs:
            roots = ["main"]
        else:
            roots = [
                name
                for name, f in self.funcs.items()
                if "sym_visibility" not in f.attributes
                or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
            ]
        rows: list[_Row] = []
        for root in roots:
            rows += self._func(root, _Context(func=root, path=(root,)))
        for name, func in self.funcs.items():
            if name not in self.reached:
                ctx = _Context(func=name, path=(name,)).uncounted("not called from @main")
                rows += self._region(func.regions[0], ctx)
        return _Walk(tuple(rows), self.loops_read)

    def _func(self, name: str, ctx: _Context) -> list[_Row]:
        self.reached.add(name)
        return self._region(self.funcs[name].regions[0], ctx)

    def _region(self, region: ir.Region, ctx: _Context) -> list[_Row]:
        rows: list[_Row] = []
        for block in region.blocks:
            for op in block.operations:
                rows += self._op(op.operation, ctx)
        return rows

    def _op(self, op: ir.Operation, ctx: _Context) -> list[_Row]:
        cost = _cost_of(op)
        folds = self.folds[ctx.func]
        if op in folds.folded:
            cost = _Cost(cost.kind, 0, 0, 0, "constant operands: folded when XLA imports the module")
        if op in folds.materialized:
            note = "; ".join(
                n for n in (cost.note, "a splat: XLA materializes it as a broadcast") if n
            )
            cost = dataclasses.replace(cost, bytes=folds.materialized[op], note=note)
        name = op.name
        short = name.partition(".")[2]
        notes = [n for n in (cost.note, ctx.why_not) if n]
        if ctx.loops:
            notes.append(f"runs x{ctx.trip_count} (while trip counts {' x '.join(map(str, ctx.loops))})")
        if len(ctx.path) > 1:
            notes.append("via " + " -> ".join(f"@{p}" for p in ctx.path))
        nested: list[_Row] = []
        if name in ("stablehlo.while", "mhlo.while"):
            trips = _trip_count(op)
            if trips is None:
                notes.append("trip count not read: body counted once, like XLA")
                nested = self._region(op.regions[0], ctx) + self._region(op.regions[1], ctx)
            else:
                self.loops_read += 1
                notes.append(f"trip count {trips}: body x{trips}, condition x{trips + 1}")
                nested = self._region(op.regions[0], ctx.in_loop(trips + 1)) + self._region(
                    op.regions[1], ctx.in_loop(trips)
                )
        elif short in _APPLIED_REGION_OPS and name.partition(".")[0] in _HLO_DIALECTS:
            applied = ctx.uncounted(f"applied by the enclosing {name}: counted there")
            for region in op.regions:
                nested += self._region(region, applied)
        elif name in ("stablehlo.case", "stablehlo.if", "mhlo.case", "mhlo.if"):
            nested = self._branches(op, ctx)
        elif name in _CALL_OPS:
            attr = "callee" if name == "func.call" else "decomposition"
            callee = ir.FlatSymbolRefAttr(op.attributes[attr]).value
            if callee in self.funcs:
                nested = self._func(callee, ctx.called(callee))
        else:
            for region in op.regions:
                nested += self._region(region, ctx)
        shapes = ", ".join(str(r.type) for r in op.results)
        row = _Row(ctx.func, name, shapes, cost, ctx.trip_count, ctx.counted, "; ".join(notes))
        return [row, *nested]

    def _branches(self, op: ir.Operation, ctx: _Context) -> list[_Row]:
        branches = [self._region(region, ctx) for region in op.regions]
        # XLA charges a conditional with its costliest branch.
        flops = [sum(r.once("flops") or 0 for r in branch) for branch in branches]
        taken = flops.index(max(flops)) if flops else 0
        rows: list[_Row] = []
        for i, branch in enumerate(branches):
            if i == taken:
                rows += branch
                continue
            why = f"branch {i} of {op.name}: not counted (the costliest branch, {taken}, is)"
            rows += [
                dataclasses.replace(r, counted=False, note="; ".join(n for n in (r.note, why) if n))
                for r in branch
            ]
        return rows


def _walk(text: str) -> tuple[ir.Module, _Walk]:
    module = _parse(text)
    return module, _Walker(module).walk()


def _static_ops(module: ir.Module) -> Iterator[ir.Operation]:
    def visit(op: ir.Operation) -> Iterator[ir.Operation]:
        yield op
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    yield from visit(inner.operation)

    for op in module.body.operations:
        yield from visit(op.operation)


# ---------------------------------------------------------------------------------------------------
# Public: analytic costs


def op_costs(text: str) -> pd.DataFrame:
    """One row per op of the module, costed by the analytic model of this module's docstring.

    Ops of a function appear once per call site (a function called twice costs twice), ops of
    functions nobody calls appear with no cost. ``flops``, ``transcendentals`` and ``bytes`` are what
    the row adds to the module's totals, trip counts applied; ``trip_count`` is the product of the
    trip counts of the while loops around the op (1 outside loops). Unknown costs are ``<NA>``.
    """
    _, walk = _walk(text)
    frame = pd.DataFrame(
        {
            "func": [r.func for r in walk.rows],
            "op": [r.op for r in walk.rows],
            "dialect": [r.op.partition(".")[0] for r in walk.rows],
            "kind": pd.Categorical([r.cost.kind for r in walk.rows], categories=KINDS),
            "result_shapes": [r.result_shapes for r in walk.rows],
            "flops": pd.array([r.total("flops") for r in walk.rows], dtype="Int64"),
            "transcendentals": pd.array(
                [r.total("transcendentals") for r in walk.rows], dtype="Int64"
            ),
            "bytes": pd.array([r.total("bytes") for r in walk.rows], dtype="Int64"),
            "trip_count": pd.array([r.trip_count for r in walk.rows], dtype="int64"),
            "note": [r.note for r in walk.rows],
        },
        columns=list(COLUMNS),
    )
    return frame


@dataclasses.dataclass(frozen=True)
class ModuleCost:
    """Totals of the analytic model for one module.

    ``flops``, ``transcendentals`` and ``bytes`` multiply loop bodies by their trip counts where they
    could be read (``loop_multiplied``); the ``*_body_once`` totals count every loop body once, the
    way XLA's HloCostAnalysis does. Ops of unknown cost (``unknown_custom_calls`` custom calls and
    ``unmodelled_ops`` others) add nothing to any total.
    """

    ops: int
    ops_by_dialect: Mapping[str, int]
    flops: int
    transcendentals: int
    bytes: int
    loop_multiplied: bool
    unknown_custom_calls: int
    unmodelled_ops: int
    flops_body_once: int
    transcendentals_body_once: int
    bytes_body_once: int


def module_cost(text: str) -> ModuleCost:
    """The totals of ``op_costs(text)`` and the op counts of the module, as a value."""
    module, walk = _walk(text)
    counted = [r for r in walk.rows if r.counted]

    def total(field: str, once: bool) -> int:
        return sum((r.once(field) if once else r.total(field)) or 0 for r in counted)

    by_dialect = Counter(op.name.partition(".")[0] for op in _static_ops(module))
    return ModuleCost(
        ops=sum(by_dialect.values()),
        ops_by_dialect=MappingProxyType(dict(sorted(by_dialect.items()))),
        flops=total("flops", once=False),
        transcendentals=total("transcendentals", once=False),
        bytes=total("bytes", once=False),
        loop_multiplied=walk.loops_read > 0,
        unknown_custom_calls=sum(1 for r in counted if r.cost.kind == "custom_call"),
        unmodelled_ops=sum(
            1 for r in counted if r.cost.kind != "custom_call" and r.cost.flops is None
        ),
        flops_body_once=total("flops", once=True),
        transcendentals_body_once=total("transcendentals", once=True),
        bytes_body_once=total("bytes", once=True),
    )


# ---------------------------------------------------------------------------------------------------
# Public: XLA's own numbers


_DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E5M2": "float8_e5m2",
}


def _shape_dtype(t: ir.Type) -> Any:
    import jax

    if not isinstance(t, ir.RankedTensorType):
        raise ValueError(f"@main has a non-tensor argument or result of type {t}")
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        raise ValueError(f"@main has a dynamically shaped argument or result of type {t}")
    name = _DTYPES.get(str(rt.element_type))
    if name is None:
        raise ValueError(f"no JAX dtype for element type {rt.element_type}")
    return jax.ShapeDtypeStruct(tuple(rt.shape), jax.numpy.dtype(name))


def _lowered(text: str) -> Any:
    """``jax.jit(exported.call).lower(...)`` for an Exported that carries this module."""
    import jax
    from jax._src.interpreters import mlir as jax_mlir

    module = _parse(publish_main(text))
    main = next(
        (
            op.operation
            for op in module.body.operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
        ),
        None,
    )
    if main is None:
        raise ValueError("the module has no @main function")
    signature = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    in_avals = [_shape_dtype(t) for t in signature.inputs]
    out_avals = [_shape_dtype(t) for t in signature.results]

    # jax.export builds an Exported whose avals, trees and shardings fit this signature; the module
    # is then swapped in, the public route for running or costing a module JAX did not lower itself.
    def placeholder(*args: Any) -> tuple[Any, ...]:
        return tuple(jax.numpy.zeros(a.shape, a.dtype) for a in out_avals)

    shell = jax.export.export(jax.jit(placeholder), platforms=["cpu"])(*in_avals)
    exported = dataclasses.replace(
        shell,
        mlir_module_serialized=jax_mlir.module_to_bytecode(module),
        module_kept_var_idx=tuple(range(len(in_avals))),
    )
    return jax.jit(exported.call).lower(*in_avals)


_HLO_CUSTOM_CALL = re.compile(r"\bcustom-call\(")


def xla_cost(text: str) -> dict[str, float | None] | None:
    """XLA's HloCostAnalysis of the module on CPU, before any XLA optimization.

    Returns ``{"xla_flops", "xla_transcendentals", "xla_bytes"}``, or None when XLA cannot take the
    module (no ``@main``, unparseable for XLA, shapes it cannot compile). XLA charges each custom call
    -1 flops and -1 bytes and sums that in; when the module has custom calls those two totals are
    therefore meaningless and reported as None. Loop bodies count once (see ``ModuleCost``).
    """
    try:
        lowered = _lowered(text)
        analysis = lowered.cost_analysis()
        hlo = lowered.as_text(dialect="hlo")
    except Exception:  # XLA reports unsupported modules with many exception types
        return None
    if isinstance(analysis, Sequence):  # older jax returned one dict per device program
        analysis = analysis[0]
    has_custom_calls = _HLO_CUSTOM_CALL.search(hlo) is not None
    # The wrapper around the module returns several results as a tuple of its own; its pointer
    # table is the route's cost, not the module's.
    results = len(lowered.out_info) if isinstance(lowered.out_info, Sequence) else 1
    wrapper_bytes = 8 * results if results > 1 else 0
    return {
        "xla_flops": None if has_custom_calls else float(analysis.get("flops", 0.0)),
        "xla_transcendentals": float(analysis.get("transcendentals", 0.0)),
        "xla_bytes": (
            None if has_custom_calls else float(analysis.get("bytes accessed", 0.0)) - wrapper_bytes
        ),
    }


def memory_analysis(text: str) -> dict[str, int] | None:
    """Buffer sizes of the module compiled by XLA for CPU, or None when XLA cannot compile it."""
    try:
        stats = _lowered(text).compile().memory_analysis()
    except Exception:  # XLA reports unsupported modules with many exception types
        return None
    if stats is None:
        return None
    return {
        "argument_bytes": int(stats.argument_size_in_bytes),
        "output_bytes": int(stats.output_size_in_bytes),
        "temp_bytes": int(stats.temp_size_in_bytes),
        "alias_bytes": int(stats.alias_size_in_bytes),
        "generated_code_bytes": int(stats.generated_code_size_in_bytes),
    }


# ---------------------------------------------------------------------------------------------------
# Peaks and roofline


@dataclasses.dataclass(frozen=True)
class DevicePeak:
    """Peak arithmetic rates (flop/s, dense, per dtype) and memory bandwidth (bytes/s) of a device."""

    device: str
    flops_per_s: Mapping[str, float]
    bytes_per_s: float
    source: str


_VENDOR = "vendor spec sheet"
_GPU_PEAKS = {
    # Dense (no structured sparsity) tensor-core rates; fp32 is the non-tensor-core FP32 rate.
    "H100": DevicePeak(
        "H100",
        MappingProxyType({"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12}),
        3.35e12,
        f"{_VENDOR}: NVIDIA H100 SXM5 datasheet (FP32 67 TFLOPS, dense TF32 494.7 / BF16 989.4 "
        "TFLOPS, HBM3 3.35 TB/s)",
    ),
    "H200": DevicePeak(
        "H200",
        MappingProxyType({"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12}),
        4.8e12,
        f"{_VENDOR}: NVIDIA H200 SXM datasheet (FP32 67 TFLOPS, dense TF32 494.7 / BF16 989.4 "
        "TFLOPS, HBM3e 4.8 TB/s)",
    ),
    "A100": DevicePeak(
        "A100",
        MappingProxyType({"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12}),
        2.039e12,
        f"{_VENDOR}: NVIDIA A100 80GB SXM datasheet (FP32 19.5 TFLOPS, dense TF32 156 / BF16 312 "
        "TFLOPS, HBM2e 2,039 GB/s)",
    ),
}


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hlo-workbench" / "cpu_peak.json"


def _best_seconds(fn: Any, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _measure_cpu() -> DevicePeak:
    # A float32 matmul large enough to reach BLAS's steady state but quick: ~0.27 GFLOP per call.
    n = 512
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up: thread pool start and page faults
    flops = 2 * n**3 / _best_seconds(lambda: a @ b, repeats=5)
    # A copy of 64 MiB, well beyond the caches; a copy reads and writes every byte.
    src = np.ones(16 * 2**20, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    bandwidth = 2 * src.nbytes / _best_seconds(lambda: np.copyto(dst, src), repeats=5)
    host = socket.gethostname()
    day = datetime.date.today().isoformat()
    return DevicePeak(
        "cpu",
        MappingProxyType({"fp32": flops}),
        bandwidth,
        f"measured by workbench.cost micro-benchmark on {host}, {day} "
        "(numpy float32 512x512 matmul; 64 MiB array copy)",
    )


def cpu_peak(cache: Path | None = None) -> DevicePeak:
    """This machine's peaks, measured once (under a second) and then read from a JSON cache.

    The cache (``~/.cache/hlo-workbench/cpu_peak.json`` unless ``cache`` names another file) is
    keyed by host name, so a home directory shared between machines re-measures on each.
    """
    path = cache or _cache_file()
    host = socket.gethostname()
    try:
        stored = json.loads(path.read_text())
        if stored.get("host") == host:
            return DevicePeak(
                "cpu",
                MappingProxyType(dict(stored["flops_per_s"])),
                float(stored["bytes_per_s"]),
                str(stored["source"]),
            )
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no cache yet, or an unreadable one: measure again
    peak = _measure_cpu()
    record = {
        "host": host,
        "flops_per_s": dict(peak.flops_per_s),
        "bytes_per_s": peak.bytes_per_s,
        "source": peak.source,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2))
    except OSError:
        pass  # a read-only home still gets the numbers, just not cached
    return peak


class _PeakTable(Mapping[str, DevicePeak]):
    """The GPU spec-sheet peaks, plus "cpu", measured only when first looked up."""

    def __init__(self) -> None:
        self._cpu: DevicePeak | None = None

    def __getitem__(self, device: str) -> DevicePeak:
        if device == "cpu":
            if self._cpu is None:
                self._cpu = cpu_peak()
            return self._cpu
        return _GPU_PEAKS[device]

    def __iter__(self) -> Iterator[str]:
        return iter([*_GPU_PEAKS, "cpu"])

    def __len__(self) -> int:
        return len(_GPU_PEAKS) + 1


PEAKS: Mapping[str, DevicePeak] = _PeakTable()


@dataclasses.dataclass(frozen=True)
class Roofline:
    """Lower bounds on run time from the flop count and the bytes moved, and which one binds."""

    device: str
    dtype: str
    flops: int
    bytes: int
    peak_flops_per_s: float
    peak_bytes_per_s: float
    time_flops_s: float
    time_bytes_s: float
    bound: str
    arithmetic_intensity: float
    ridge_point: float
    source: str


def roofline(cost: ModuleCost, device: str = "H100", dtype: str = "fp32") -> Roofline:
    """Roofline of a module's totals on ``device`` (a key of ``PEAKS``) at ``dtype``'s peak rate.

    Transcendentals are not in the flop count (XLA keeps them apart), and unfused bytes overstate
    the traffic of a fused program: the times are bounds for comparing stages, not predictions.
    """
    if device not in PEAKS:
        raise ValueError(f"unknown device {device!r}; known: {', '.join(PEAKS)}")
    peak = PEAKS[device]
    if dtype not in peak.flops_per_s:
        raise ValueError(
            f"no {dtype} peak for {device}; known: {', '.join(peak.flops_per_s)}"
        )
    flops_rate = peak.flops_per_s[dtype]
    time_flops = cost.flops / flops_rate
    time_bytes = cost.bytes / peak.bytes_per_s
    return Roofline(
        device=device,
        dtype=dtype,
        flops=cost.flops,
        bytes=cost.bytes,
        peak_flops_per_s=flops_rate,
        peak_bytes_per_s=peak.bytes_per_s,
        time_flops_s=time_flops,
        time_bytes_s=time_bytes,
        bound="compute" if time_flops >= time_bytes else "memory",
        arithmetic_intensity=cost.flops / cost.bytes if cost.bytes else math.inf,
        ridge_point=flops_rate / peak.bytes_per_s,
        source=peak.source,
    )
