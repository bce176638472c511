"""What a module costs: flops, transcendentals and bytes, per op and in total, next to XLA's count.

The input is one stage of a pipeline as MLIR text (StableHLO as JAX lowers it, or Enzyme-JaX output).

* ``op_costs(text)`` -- a DataFrame, one row per op (ops of a function once per call site), costed by
  the analytic model below, while-loop bodies multiplied by their trip count where it can be read.
* ``module_cost(text)`` -- the totals as a frozen ``ModuleCost``.
* ``xla_cost(text)`` / ``memory_analysis(text)`` -- what XLA itself says: its ``HloCostAnalysis`` of
  this module's unoptimized HLO on CPU, and the buffer sizes of the compiled CPU executable.
* ``roofline(mc, device)`` -- lower-bound run times from the peak rates in ``PEAKS``.

The analytic model
------------------
Counting conventions follow XLA's ``HloCostAnalysis`` so that the two can check each other:

* dot_general: ``2 * prod(batch) * prod(lhs free) * prod(rhs free) * prod(contracting)``, a multiply
  and an add per term.
* convolution: ``2 * (in features / feature groups) * out features * (batch / batch groups) *
  prod over spatial dims of the valid (kernel tap, output position) pairs``. A pair is valid when the
  tap reads a real input element, not padding or a hole of lhs dilation, so a SAME-padded 3x3
  convolution costs a little less than ``2 * out elements * 9 * in features`` -- as XLA counts it.
* reduce: ``(input elements - output elements) * flops of one application of the body`` (an ``add``
  body is 1). reduce_window, select_and_scatter, scatter and map apply their bodies as often as XLA
  assumes; sort costs ``n * ceil(log2 n)``; fft, cholesky, triangular_solve, all_reduce and the rng
  ops use XLA's formulas.
* elementwise: one flop per result element, also for compare, select, clamp, convert,
  bitcast_convert and the bitwise ops, since XLA counts them all so.
* transcendental (exp, expm1, log, log1p, logistic, power, sqrt, cbrt, rsqrt, tanh, sin, cos, tan,
  atan2): one transcendental per element and no flops; XLA keeps them apart because what one costs
  in flops depends on the backend.
* data movement (reshape, transpose, broadcast, slice, concatenate, pad, gather, iota, ...): no flops.
* chlo ops (erf_inv, square, top_k, ...): XLA replaces each by primitive ops before costing; here
  XLA is asked for the cost of a module holding just that op, so the numbers are XLA's own.
* custom calls, and ops of dialects other than stablehlo/chlo/func (apart from Enzyme-JaX's data
  movement ops and Shardy's annotations): cost unknown -- None in the table, left out of the totals,
  counted in ``ModuleCost.unknown_custom_calls`` / ``unmodelled_ops``.

Bytes are what each op reads and writes if nothing is fused: operand plus result bytes, XLA's
"bytes accessed" per HLO instruction. As in XLA, slices and gathers read only what they return
(``2 * result`` plus the first index operand), dynamic_update_slice and scatter count their updates
(``2 *`` and ``3 *`` the update bytes, plus indices), constants and control ops touch nothing, and an
element of type ``i1`` is one byte (sub-byte types round up to one).

XLA's import of StableHLO rewrites a module before it counts anything, and the model follows the
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

Where the model and XLA still differ:

* while loops: XLA counts the body and the condition once. Here, when the loop is a counted loop (a
  counter starting at a constant, stepped by a positive constant, compared LT/LE with a constant or a
  loop-invariant value -- what fori_loop and scan lower to), the body counts ``trip count`` times and
  the condition ``trip count + 1`` times. ``ModuleCost``'s ``*_body_once`` totals count them once;
  those are the numbers to compare with XLA.
* custom calls: XLA charges -1 flops and -1 bytes each and adds that into its totals, so ``xla_cost``
  reports its flops and bytes as None for a module with custom calls; the model leaves them out.
* case/if: XLA takes each property's maximum over the branches; the model counts the branch with
  the most flops, whole. They differ only when another branch moves more bytes.
* import rewrites beyond those listed (other algebraic simplifications; equal splats built in
  different ways, such as ``2 * 3`` and ``6``, which XLA unifies) are not modelled.
* Shardy ops are free here, while XLA sees custom calls for some of them; ops of unknown dialects
  (e.g. ``enzymexla.rotate``) get a cost here, while XLA cannot take such a module at all.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
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

import jax
import numpy as np
import pandas as pd
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from ..errors import ModuleParseError
from ..pipeline.exported import exported_for_text, readable_module

__all__ = [
    "COLUMNS",
    "KINDS",
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


# ---------------------------------------------------------------------------------------------------
# Reading the text


# ---------------------------------------------------------------------------------------------------
# Types


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
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    size = _element_bytes(t.element_type)
    return None if size is None else _Tensor(tuple(t.shape), size)


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
        return list(attr)
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
    sign subtract xor""".split()
)
_TRANSCENDENTAL = frozenset(
    """atan2 cbrt cosine exponential exponential_minus_one log log_plus_one logistic power rsqrt
    sine sqrt tan tanh""".split()
)
_DATA_MOVEMENT = frozenset(
    """all_gather all_to_all broadcast broadcast_in_dim collective_broadcast collective_permute
    concatenate dynamic_broadcast_in_dim dynamic_gather dynamic_iota dynamic_pad dynamic_reshape
    dynamic_slice dynamic_update_slice gather get_tuple_element iota optimization_barrier pad
    real_dynamic_slice reduce_scatter reshape reverse slice transpose tuple""".split()
)
_CONTROL = frozenset(
    """after_all case create_token if partition_id replica_id return while""".split()
)
# Enzyme-JaX's own array ops: rotations, halo extensions and fused slices move data, nothing else.
_ENZYMEXLA_DATA_MOVEMENT = frozenset(
    "extend multi_pad multi_rotate multi_slice rotate update_without_corners wrap".split()
)
# Enzyme-JaX ops that call out to code the module does not contain.
_ENZYMEXLA_OPAQUE_CALLS = frozenset("jit_call kernel_call xla_wrapper".split())
# Ops whose regions are computations applied element by element; their cost is the parent's.
_APPLIED_REGION_OPS = frozenset(
    f"stablehlo.{name}"
    for name in """all_reduce map reduce reduce_scatter reduce_window scatter select_and_scatter
    sort""".split()
)
_TUPLE_POINTER_BYTES = 8
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
    if short == "iota" and out_bytes is not None and len(op.results[0].type.shape) > 1:
        # XLA imports a multi-dimensional iota as a 1-D iota broadcast to the full shape.
        t = _tensor(op.results[0].type)
        line = 0 if t is None else t.shape[_int_attr(op, "iota_dimension", 0)] * t.element_bytes
        return _Cost("data_movement", 0, 0, 2 * line + out_bytes)
    if short == "transpose":
        # XLA's import gives every transpose the layout that makes it a bitcast.
        return _Cost("data_movement", 0, 0, 0, "a bitcast once XLA assigns its layout")
    if short == "slice":
        nbytes = None if out_bytes is None else 2 * out_bytes
    elif short in ("dynamic_slice", "gather", "dynamic_gather"):
        # Only the returned elements are read, plus the indices -- of which XLA charges the first
        # operand only, also when a dynamic_slice takes one scalar per dimension.
        index_bytes = _nbytes(operands[1:2])
        nbytes = None if out_bytes is None or index_bytes is None else 2 * out_bytes + index_bytes
    elif short == "dynamic_update_slice":
        update_bytes = _nbytes(operands[1:2])
        index_bytes = _nbytes(operands[2:3])
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


def _chlo_cost(op: ir.Operation) -> _Cost:
    """A chlo op costed by XLA itself, on a module holding just that op.

    XLA replaces chlo ops by sequences of primitive ops (erf_inv by a polynomial, top_k by a sort)
    whose cost depends on XLA's version; asking XLA for that expansion keeps the numbers exact.
    """
    if op.regions:
        return _Cost("other", None, None, None, f"{op.name}: op with regions, not modelled")
    args = ", ".join(f"%a{i}: {v.type}" for i, v in enumerate(op.operands))
    names = ", ".join(f"%a{i}" for i in range(len(op.operands)))
    in_types = ", ".join(str(v.type) for v in op.operands)
    out_types = ", ".join(str(r.type) for r in op.results)
    results = ", ".join(f"%r#{i}" for i in range(len(op.results)))
    attrs = ", ".join(f"{name} = {op.attributes[name]}" for name in op.attributes)
    text = (
        f"func.func public @main({args}) -> ({out_types}) {{\n"
        f'  %r:{len(op.results)} = "{op.name}"({names}) {{{attrs}}} : ({in_types}) -> ({out_types})\n'
        f"  func.return {results} : {out_types}\n}}\n"
    )
    return _expansion_cost(text, len(op.results))


@functools.lru_cache(maxsize=512)
def _expansion_cost(text: str, results: int) -> _Cost:
    found = xla_cost(text)
    if found is None or found["xla_flops"] is None or found["xla_bytes"] is None:
        return _Cost("other", None, None, None, "chlo op XLA cannot expand alone: cost unknown")
    # Several results come back as a tuple of the little module; in place they would not.
    tuple_bytes = _TUPLE_POINTER_BYTES * results if results > 1 else 0
    transcendentals = int(found["xla_transcendentals"] or 0)
    return _Cost(
        "transcendental" if transcendentals else "elementwise" if results == 1 else "other",
        int(found["xla_flops"]),
        transcendentals,
        int(found["xla_bytes"]) - tuple_bytes,
        "chlo op: costed by XLA on its expansion into primitive ops",
    )


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
                if definer.name == "stablehlo.constant" or _inside(definer, op):
                    continue
            captured.add(value)
    return len(op.operands) + len(captured)


def _is_while_body_end(op: ir.Operation) -> bool:
    parent = op.parent
    return parent is not None and parent.name == "stablehlo.while" and (
        op.block == parent.regions[1].blocks[0]
    )


def _cost_of(op: ir.Operation) -> _Cost:
    """Cost of one execution of ``op`` itself; ops in its regions are costed by the walk."""
    name = op.name
    dialect, _, short = name.partition(".")
    if name == "func.return":
        # Several results leave an HLO computation as a tuple: a table of 8-byte pointers.
        results = len(op.operands)
        return _Cost("control", 0, 0, _TUPLE_POINTER_BYTES * results if results > 1 else 0)
    if name in _CALL_OPS:
        return _Cost("control")
    if dialect == "enzymexla":
        if short in _ENZYMEXLA_DATA_MOVEMENT:
            return _Cost("data_movement", 0, 0, _default_bytes(op))
        if short in _ENZYMEXLA_OPAQUE_CALLS:
            return _Cost("custom_call", None, None, None, f"{name}: calls opaque code, cost unknown")
    if dialect == "chlo":
        return _chlo_cost(op)
    if dialect == "sdy":
        # Shardy ops annotate sharding; none computes or moves data on one device.
        return _Cost("data_movement" if op.results else "control")
    if dialect != "stablehlo":
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
        nbytes = _default_bytes(op)
        if short == "select" and nbytes is not None and _elements(op.operands[0]) == 1 < elements:
            # HLO's select wants a full-shape predicate: the import broadcasts the scalar (1 + n
            # bytes) and the select then reads n predicate bytes instead of 1.
            nbytes += 2 * elements
        return _Cost("elementwise", elements, 0, nbytes)
    if short in _KNOWN_OTHER:
        return _other_hlo_cost(op, short)
    return _Cost("other", None, None, None, f"{name}: not modelled")


# ---------------------------------------------------------------------------------------------------
# What XLA's import does before it costs anything

# Ops XLA's import evaluates when every operand is a constant (reductions and iota it leaves alone).
_FOLDABLE = _ELEMENTWISE | _TRANSCENDENTAL | {
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
    """A constant with one value everywhere: ``key`` says how it was built, ``value`` its element
    where known. Equal keys are one constant to XLA, which uniques constants."""

    key: str
    value: int | float | None


@dataclasses.dataclass(frozen=True)
class _Imported:
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


def _nested_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _nested_ops(inner.operation)


def _constant_splat(op: ir.Operation) -> _Splat | None:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    element = attr.get_splat_value()
    value = element.value if isinstance(element, (ir.IntegerAttr, ir.FloatAttr)) else None
    return _Splat(str(attr), value)


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
        if dims is not None and _ints(_attr(op, dims)) != list(range(len(result_type.shape))):
            return None
        pads = ("edge_padding_low", "edge_padding_high", "interior_padding")
        if short == "pad" and any(any(_ints(_attr(op, name))) for name in pads):
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


def _import_rewrites(func: ir.Operation) -> _Imported:
    # Constant-valued results: a _Splat, or None for constants with different elements.
    splats: dict[ir.Value, _Splat | None] = {}
    folded: set[ir.Operation] = set()
    dropped: dict[ir.Operation, str] = {}
    materialized: dict[ir.Operation, int] = {}
    seen: set[str] = set()
    for op in _nested_ops(func):
        dialect, _, short = op.name.partition(".")
        operands = list(op.operands)
        if dialect != "stablehlo":
            identity = None
        elif short == "constant":
            splats[op.results[0]] = _constant_splat(op)
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
            attrs = ";".join(f"{name}={op.attributes[name]}" for name in op.attributes)
            splats[op.results[0]] = (
                None
                if short == "concatenate" or any(s is None for s in inputs)
                else _Splat(
                    f"{op.name}{{{attrs}}}({','.join(s.key for s in inputs if s)})"
                    f":{op.results[0].type}",
                    inputs[0].value if short in _VALUE_PRESERVING and inputs[0] else None,
                )
            )
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
            tensor = _tensor(value.type)
            if splat is None or splat.key in seen or tensor is None or tensor.elements <= 1:
                continue
            seen.add(splat.key)
            materialized[value.owner.operation] = tensor.element_bytes + tensor.nbytes
    return _Imported(frozenset(folded), MappingProxyType(dropped), MappingProxyType(materialized))


# ---------------------------------------------------------------------------------------------------
# While-loop trip counts


def _constant_int(value: ir.Value) -> int | None:
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner.operation
    if owner.name != "stablehlo.constant":
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
    ops_by_dialect: Mapping[str, int]


class _Walker:
    def __init__(self, module: ir.Module) -> None:
        self.funcs: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.reached: set[str] = set()
        self.loops_read = 0
        self.imported = {name: _import_rewrites(func) for name, func in self.funcs.items()}

    def walk(self) -> tuple[_Row, ...]:
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
        return tuple(rows)

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
        imported = self.imported[ctx.func]
        if op in imported.folded:
            cost = _Cost(cost.kind, 0, 0, 0, "constant operands: folded when XLA imports the module")
        elif op in imported.dropped:
            cost = _Cost(cost.kind, 0, 0, 0, imported.dropped[op])
        if op in imported.materialized:
            note = "; ".join(
                n for n in (cost.note, "a splat: XLA materializes it as a broadcast") if n
            )
            cost = dataclasses.replace(cost, bytes=imported.materialized[op], note=note)
        name = op.name
        notes = [n for n in (cost.note, ctx.why_not) if n]
        if ctx.loops:
            notes.append(f"runs x{ctx.trip_count} (while trip counts {' x '.join(map(str, ctx.loops))})")
        if len(ctx.path) > 1:
            notes.append("via " + " -> ".join(f"@{p}" for p in ctx.path))
        nested: list[_Row] = []
        if name == "stablehlo.while":
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
        elif name in _APPLIED_REGION_OPS:
            applied = ctx.uncounted(f"applied by the enclosing {name}: counted there")
            for region in op.regions:
                nested += self._region(region, applied)
        elif name in ("stablehlo.case", "stablehlo.if"):
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


@functools.lru_cache(maxsize=16)
def _walk(text: str) -> _Walk:
    """The costed rows of a module; cached because views ask for rows and totals of one stage."""
    module = readable_module(text)
    walker = _Walker(module)
    rows = walker.walk()
    ops = Counter(
        op.name.partition(".")[0]
        for top in module.body.operations
        for op in (top.operation, *_nested_ops(top.operation))
    )
    return _Walk(rows, walker.loops_read, MappingProxyType(dict(sorted(ops.items()))))


# ---------------------------------------------------------------------------------------------------
# Public: analytic costs


def op_costs(text: str) -> pd.DataFrame:
    """One row per op of the module, costed by the analytic model of this module's docstring.

    Ops of a function appear once per call site (a function called twice costs twice), ops of
    functions nobody calls appear with no cost. ``flops``, ``transcendentals`` and ``bytes`` are what
    the row adds to the module's totals, trip counts applied; ``trip_count`` is the product of the
    trip counts of the while loops around the op (1 outside loops). Unknown costs are ``<NA>``.
    """
    walk = _walk(text)
    return pd.DataFrame(
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


@dataclasses.dataclass(frozen=True)
class ModuleCost:
    """Totals of the analytic model for one module.

    ``flops``, ``transcendentals`` and ``bytes`` multiply loop bodies by their trip counts where they
    could be read (``loop_multiplied``); the ``*_body_once`` totals count every loop body once, the
    way XLA's HloCostAnalysis does. Ops of unknown cost (``unknown_custom_calls`` custom calls and
    ``unmodelled_ops`` others, each counted once per call site) add nothing to any total. ``ops``
    and ``ops_by_dialect`` count the ops written in the text, including ``func.func`` itself.
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
    walk = _walk(text)
    counted = [r for r in walk.rows if r.counted]

    def total(field: str, once: bool) -> int:
        return sum((r.once(field) if once else r.total(field)) or 0 for r in counted)

    return ModuleCost(
        ops=sum(walk.ops_by_dialect.values()),
        ops_by_dialect=walk.ops_by_dialect,
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


def _lowered(text: str) -> Any:
    """``jax.jit(exported.call).lower(...)`` for an Exported that carries this module."""
    exported = exported_for_text(text, "cpu")
    flat = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in exported.in_avals]
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, flat)
    return jax.jit(exported.call).lower(*args, **kwargs)


_HLO_CUSTOM_CALL = re.compile(r"\bcustom-call\(")


def has_custom_calls(hlo_text: str) -> bool:
    """Whether XLA HLO text holds a custom call, whose flops and bytes XLA's cost analysis counts as -1."""
    return _HLO_CUSTOM_CALL.search(hlo_text) is not None


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
    custom = has_custom_calls(hlo)
    # The wrapper around the module returns several results as a tuple of its own; its pointer
    # table is the route's cost, not the module's.
    results = len(jax.tree.leaves(lowered.out_info))
    wrapper_bytes = _TUPLE_POINTER_BYTES * results if results > 1 else 0
    return {
        "xla_flops": None if custom else float(analysis.get("flops", 0.0)),
        "xla_transcendentals": float(analysis.get("transcendentals", 0.0)),
        "xla_bytes": (
            None if custom else float(analysis.get("bytes accessed", 0.0)) - wrapper_bytes
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
        raise ValueError(f"no {dtype} peak for {device}; known: {', '.join(peak.flops_per_s)}")
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
