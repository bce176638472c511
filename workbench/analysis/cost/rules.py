"""The analytic cost of one execution of one op: its kind, flops, transcendentals and bytes.

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

A few of XLA's import rewrites change what one op costs by itself (a transpose becomes a bitcast, a
select on a scalar predicate gets it broadcast, a multi-dimensional iota becomes a 1-D iota and a
broadcast, tuples around while loops and results); those are costed here. The rewrites that depend on
the ops around an op (constant folding, identities, splats) are ``rewrites.py``'s.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from ...ir.mlir import attribute_items
from .tensors import (TUPLE_POINTER_BYTES, attribute, element_count, int_attribute, int_list, static_tensor,
                      total_bytes)
from .work import WorkCounter
from .xla import xla_cost

__all__ = ["APPLIED_REGION_OPS", "CALL_OPS", "ELEMENTWISE", "TRANSCENDENTAL", "Cost", "cost_of", "loop_states"]

ELEMENTWISE = frozenset(
    """abs add and bitcast_convert ceil clamp count_leading_zeros compare complex convert divide floor
    imag is_finite maximum minimum multiply negate not or popcnt real reduce_precision remainder
    round_nearest_afz round_nearest_even select shift_left shift_right_arithmetic shift_right_logical
    sign subtract xor""".split()
)
TRANSCENDENTAL = frozenset(
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
APPLIED_REGION_OPS = frozenset(
    f"stablehlo.{name}"
    for name in """all_reduce map reduce reduce_scatter reduce_window scatter select_and_scatter
    sort""".split()
)
CALL_OPS = frozenset({"func.call", "stablehlo.composite"})
_KNOWN_OTHER = frozenset(
    "all_reduce cholesky fft rng rng_bit_generator sort triangular_solve".split()
)


@dataclasses.dataclass(frozen=True)
class Cost:
    """The cost of one execution of one op; None where unknown."""

    kind: str
    flops: int | None = 0
    transcendentals: int | None = 0
    bytes: int | None = 0
    note: str = ""


def _default_bytes(op: ir.Operation) -> int | None:
    operand_bytes = total_bytes(list(op.operands))
    result_bytes = total_bytes(list(op.results))
    if operand_bytes is None or result_bytes is None:
        return None
    return operand_bytes + result_bytes


def _body_cost(region: ir.Region) -> tuple[int | None, int | None]:
    """Flops and transcendentals of one application of a reducer-like body."""
    flops: int | None = 0
    transcendentals: int | None = 0
    for block in region.blocks:
        for inner in block.operations:
            cost = cost_of(inner.operation)
            flops = None if flops is None or cost.flops is None else flops + cost.flops
            transcendentals = (
                None
                if transcendentals is None or cost.transcendentals is None
                else transcendentals + cost.transcendentals
            )
    return flops, transcendentals


def _scaled(value: int | None, factor: int) -> int | None:
    return None if value is None else value * factor


def _dot_cost(op: ir.Operation, name: str) -> Cost:
    lhs = static_tensor(op.operands[0].type)
    out = static_tensor(op.results[0].type)
    if lhs is None or out is None:
        return Cost("dot_general", None, 0, None, "dynamic shape: cost unknown")
    if name == "dot":
        contracting = [len(lhs.shape) - 1]
    else:
        dims = stablehlo.DotDimensionNumbers(attribute(op, "dot_dimension_numbers"))
        contracting = list(dims.lhs_contracting_dimensions)
    # The result holds batch x lhs free x rhs free elements; each sums prod(contracting) products.
    width = math.prod(lhs.shape[d] for d in contracting)
    return Cost("dot_general", 2 * out.elements * width, 0, _default_bytes(op))


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


def _convolution_cost(op: ir.Operation) -> Cost:
    lhs = static_tensor(op.operands[0].type)
    rhs = static_tensor(op.operands[1].type)
    out = static_tensor(op.results[0].type)
    if lhs is None or rhs is None or out is None:
        return Cost("convolution", None, 0, None, "dynamic shape: cost unknown")
    dims = stablehlo.ConvDimensionNumbers(attribute(op, "dimension_numbers"))
    rank = len(dims.input_spatial_dimensions)
    strides = int_list(attribute(op, "window_strides")) or [1] * rank
    padding = int_list(attribute(op, "padding")) or [0] * (2 * rank)
    lhs_dilation = int_list(attribute(op, "lhs_dilation")) or [1] * rank
    rhs_dilation = int_list(attribute(op, "rhs_dilation")) or [1] * rank
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
    feature_groups = int_attribute(op, "feature_group_count", 1)
    batch_groups = int_attribute(op, "batch_group_count", 1)
    macs = (
        (lhs.shape[dims.input_feature_dimension] // feature_groups)
        * out.shape[dims.output_feature_dimension]
        * (lhs.shape[dims.input_batch_dimension] // batch_groups)
        * positions
    )
    return Cost("convolution", 2 * macs, 0, _default_bytes(op))


def _reduce_window_count(op: ir.Operation) -> int | None:
    """How many times XLA applies a reduce_window's body."""
    out = static_tensor(op.results[0].type)
    if out is None:
        return None
    window = int_list(attribute(op, "window_dimensions"))
    padding = int_list(attribute(op, "padding")) or [0] * (2 * len(window))
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


def _applied_cost(op: ir.Operation, short: str) -> Cost:
    """Ops that apply a body computation: reduce, reduce_window, scatter, select_and_scatter, map."""
    if short == "select_and_scatter":
        source = static_tensor(op.operands[1].type)
        select_flops, select_trans = _body_cost(op.regions[0])
        scatter_flops, scatter_trans = _body_cost(op.regions[1])
        if source is None:
            return Cost("reduce", None, None, None, "dynamic shape: cost unknown")
        selects = source.elements * (math.prod(int_list(attribute(op, "window_dimensions"))) - 1)
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
        return Cost("reduce", flops, trans, _default_bytes(op))
    body_flops, body_trans = _body_cost(op.regions[0])
    if short == "reduce":
        n_in, n_out = element_count(op.operands[0]), element_count(op.results[0])
        count = None if n_in is None or n_out is None else n_in - n_out
        kind, nbytes = "reduce", _default_bytes(op)
    elif short == "reduce_window":
        count = _reduce_window_count(op)
        kind, nbytes = "reduce", _default_bytes(op)
    elif short == "map":
        count = element_count(op.results[0])
        kind, nbytes = "elementwise", _default_bytes(op)
    else:  # scatter: operands are inputs..., indices, updates...
        n = (len(op.operands) - 1) // 2
        updates = list(op.operands)[n + 1 :]
        update_bytes = total_bytes(updates)
        index_bytes = total_bytes([op.operands[n]])
        count = element_count(updates[0])
        kind = "data_movement"
        # XLA: the updated part of the input is read and written, and the updates read.
        nbytes = None if update_bytes is None or index_bytes is None else 3 * update_bytes + index_bytes
    if count is None:
        return Cost(kind, None, None, nbytes, "dynamic shape: cost unknown")
    return Cost(kind, _scaled(body_flops, count), _scaled(body_trans, count), nbytes)


def _expands_unit_dims(op: ir.Operation) -> bool:
    """Whether a broadcast_in_dim stretches a size-1 operand dimension (HLO's broadcast cannot)."""
    src = static_tensor(op.operands[0].type)
    out = static_tensor(op.results[0].type)
    if src is None or out is None:
        return False
    dims = int_list(attribute(op, "broadcast_dimensions"))
    return any(src.shape[i] == 1 and out.shape[d] != 1 for i, d in enumerate(dims))


def _data_movement_cost(op: ir.Operation, short: str) -> Cost:
    operands = list(op.operands)
    out_bytes = total_bytes(list(op.results))
    if short in ("get_tuple_element", "tuple", "optimization_barrier"):
        return Cost("data_movement", 0, 0, 0)
    if short == "iota" and out_bytes is not None and len(op.results[0].type.shape) > 1:
        # XLA imports a multi-dimensional iota as a 1-D iota broadcast to the full shape.
        t = static_tensor(op.results[0].type)
        line = 0 if t is None else t.shape[int_attribute(op, "iota_dimension", 0)] * t.element_bytes
        return Cost("data_movement", 0, 0, 2 * line + out_bytes)
    if short == "transpose":
        # XLA's import gives every transpose the layout that makes it a bitcast.
        return Cost("data_movement", 0, 0, 0, "a bitcast once XLA assigns its layout")
    if short == "slice":
        nbytes = None if out_bytes is None else 2 * out_bytes
    elif short in ("dynamic_slice", "gather", "dynamic_gather"):
        # Only the returned elements are read, plus the indices -- of which XLA charges the first
        # operand only, also when a dynamic_slice takes one scalar per dimension.
        index_bytes = total_bytes(operands[1:2])
        nbytes = None if out_bytes is None or index_bytes is None else 2 * out_bytes + index_bytes
    elif short == "dynamic_update_slice":
        update_bytes = total_bytes(operands[1:2])
        index_bytes = total_bytes(operands[2:3])
        nbytes = None if update_bytes is None or index_bytes is None else 2 * update_bytes + index_bytes
    elif short == "broadcast_in_dim" and _expands_unit_dims(op):
        # XLA imports it as broadcast (same shape) + reshape (drop the unit dims) + broadcast.
        in_bytes = total_bytes(operands[:1])
        nbytes = None if in_bytes is None or out_bytes is None else 5 * in_bytes + out_bytes
    else:
        nbytes = _default_bytes(op)
    return Cost("data_movement", 0, 0, nbytes)


def _other_hlo_cost(op: ir.Operation, short: str) -> Cost:
    """The few remaining HLO ops XLA gives a formula for."""
    nbytes = _default_bytes(op)
    first = static_tensor(op.operands[0].type) if len(op.operands) else None
    if short in ("rng", "rng_bit_generator"):
        elements = sum(element_count(r) or 0 for r in op.results)
        return Cost("transcendental", 0, elements, nbytes, "random bits: one transcendental each")
    if short == "all_reduce":
        return Cost("reduce", sum(element_count(r) or 0 for r in op.results), 0, nbytes)
    if first is None:
        return Cost("other", None, None, nbytes, "dynamic shape: cost unknown")
    if short == "sort":
        n = first.elements
        return Cost("other", n * math.ceil(math.log2(n)) if n > 1 else 0, 0, nbytes)
    if short == "fft":
        log_factors = math.prod(int(math.log2(n)) for n in int_list(attribute(op, "fft_length")))
        return Cost("other", 2 * 4 * log_factors * first.elements, 0, nbytes)
    if short == "cholesky":
        # A triangle of the input is read and a triangle of the result written.
        return Cost("other", first.shape[-1] * first.elements // 3, 0, first.nbytes)
    # triangular_solve
    b = static_tensor(op.operands[1].type)
    out_bytes = total_bytes(list(op.results))
    if b is None or out_bytes is None:
        return Cost("other", None, None, None, "dynamic shape: cost unknown")
    return Cost("other", 2 * first.shape[-1] * b.elements, 0, out_bytes + first.nbytes // 2 + b.nbytes)


def _chlo_cost(op: ir.Operation) -> Cost:
    """A chlo op costed by XLA itself, on a module holding just that op.

    XLA replaces chlo ops by sequences of primitive ops (erf_inv by a polynomial, top_k by a sort)
    whose cost depends on XLA's version; asking XLA for that expansion keeps the numbers exact.
    """
    if op.regions:
        return Cost("other", None, None, None, f"{op.name}: op with regions, not modelled")
    args = ", ".join(f"%a{i}: {v.type}" for i, v in enumerate(op.operands))
    names = ", ".join(f"%a{i}" for i in range(len(op.operands)))
    in_types = ", ".join(str(v.type) for v in op.operands)
    out_types = ", ".join(str(r.type) for r in op.results)
    results = ", ".join(f"%r#{i}" for i in range(len(op.results)))
    attrs = ", ".join(f"{name} = {attr}" for name, attr in attribute_items(op))
    text = (
        f"func.func public @main({args}) -> ({out_types}) {{\n"
        f'  %r:{len(op.results)} = "{op.name}"({names}) {{{attrs}}} : ({in_types}) -> ({out_types})\n'
        f"  func.return {results} : {out_types}\n}}\n"
    )
    return _expansion_cost(text, len(op.results))


@functools.lru_cache(maxsize=512)
def _expansion_cost(text: str, results: int) -> Cost:
    found = xla_cost(text)
    if found is None or found["xla_flops"] is None or found["xla_bytes"] is None:
        return Cost("other", None, None, None, "chlo op XLA cannot expand alone: cost unknown")
    # Several results come back as a tuple of the little module; in place they would not.
    tuple_bytes = TUPLE_POINTER_BYTES * results if results > 1 else 0
    transcendentals = int(found["xla_transcendentals"] or 0)
    return Cost(
        "transcendental" if transcendentals else "elementwise" if results == 1 else "other",
        int(found["xla_flops"]),
        transcendentals,
        int(found["xla_bytes"]) - tuple_bytes,
        "chlo op: costed by XLA on its expansion into primitive ops",
    )


def _is_constant(value: ir.Value) -> bool:
    return isinstance(value, ir.OpResult) and value.owner.operation.name == "stablehlo.constant"


def loop_states(root: ir.Operation, work: WorkCounter | None = None) -> dict[ir.Operation, int]:
    """How many values each HLO while loop in ``root`` (``root`` included) carries: its loop state
    plus the values its regions capture.

    HLO loops cannot read values from around them, so XLA's import threads every captured
    non-constant value through the loop state (constants it copies into the loop instead). One walk
    finds the values each op's regions read from outside; an op's set is its nested ops' sets merged,
    the smaller into the larger, less what its own regions define -- n log n in the ops of ``root``,
    however deep its loops nest. The ops it visits are counted in ``work``.
    """
    states: dict[ir.Operation, int] = {}

    def captured(op: ir.Operation) -> set[ir.Value]:
        sets: list[set[ir.Value]] = []
        used: set[ir.Value] = set()
        defined: list[ir.Value] = []
        for region in op.regions:
            for block in region.blocks:
                defined += block.arguments
                for inner in block.operations:
                    inner = inner.operation
                    if work is not None:
                        work.ops_visited += 1
                    used.update(v for v in inner.operands if not _is_constant(v))
                    defined += inner.results
                    if len(inner.regions):
                        sets.append(captured(inner))
        sets.append(used)
        merged = max(sets, key=len)
        for other in sets:
            if other is not merged:
                merged |= other
        merged.difference_update(defined)
        if op.name == "stablehlo.while":
            states[op] = len(op.operands) + len(merged)
        return merged

    captured(root)
    return states


def _is_while_body_end(op: ir.Operation) -> bool:
    parent = op.parent
    return parent is not None and parent.name == "stablehlo.while" and (
        op.block == parent.regions[1].blocks[0]
    )


def _loop_state(loop: ir.Operation, states: Mapping[ir.Operation, int] | None) -> int:
    return states[loop] if states is not None and loop in states else loop_states(loop)[loop]


def cost_of(op: ir.Operation, loops: Mapping[ir.Operation, int] | None = None) -> Cost:
    """Cost of one execution of ``op`` itself; ops in its regions are costed by the walk.

    ``loops``: ``loop_states`` of the op's function, which a walk over its ops computes once;
    without it a while loop's state is read from the loop alone."""
    name = op.name
    dialect, _, short = name.partition(".")
    if name == "func.return":
        # Several results leave an HLO computation as a tuple: a table of 8-byte pointers.
        results = len(op.operands)
        return Cost("control", 0, 0, TUPLE_POINTER_BYTES * results if results > 1 else 0)
    if name in CALL_OPS:
        return Cost("control")
    if dialect == "enzymexla":
        if short in _ENZYMEXLA_DATA_MOVEMENT:
            return Cost("data_movement", 0, 0, _default_bytes(op))
        if short in _ENZYMEXLA_OPAQUE_CALLS:
            return Cost("custom_call", None, None, None, f"{name}: calls opaque code, cost unknown")
    if dialect == "chlo":
        return _chlo_cost(op)
    if dialect == "sdy":
        # Shardy ops annotate sharding; none computes or moves data on one device.
        return Cost("data_movement" if op.results else "control")
    if dialect != "stablehlo":
        return Cost("other", None, None, None, f"{dialect} op: not modelled")
    if short == "constant":
        return Cost("constant")
    if short == "custom_call":
        target = attribute(op, "call_target_name")
        label = ir.StringAttr(target).value if target is not None else "?"
        return Cost("custom_call", None, None, None, f"custom call {label!r}: cost unknown")
    if short == "while":
        return Cost("control", 0, 0, TUPLE_POINTER_BYTES * _loop_state(op, loops))
    if short == "return" and _is_while_body_end(op):
        return Cost("control", 0, 0, TUPLE_POINTER_BYTES * _loop_state(op.parent.operation, loops))
    if short in _CONTROL:
        return Cost("control")
    if short in ("dot", "dot_general"):
        return _dot_cost(op, short)
    if short == "convolution":
        return _convolution_cost(op)
    if short in ("reduce", "reduce_window", "select_and_scatter", "map", "scatter"):
        return _applied_cost(op, short)
    if short in _DATA_MOVEMENT:
        return _data_movement_cost(op, short)
    if short in ELEMENTWISE or short in TRANSCENDENTAL:
        elements = element_count(op.results[0])
        if elements is None:
            return Cost("elementwise", None, None, None, "dynamic shape: cost unknown")
        if short in TRANSCENDENTAL:
            return Cost("transcendental", 0, elements, _default_bytes(op))
        nbytes = _default_bytes(op)
        if short == "select" and nbytes is not None and element_count(op.operands[0]) == 1 < elements:
            # HLO's select wants a full-shape predicate: the import broadcasts the scalar (1 + n
            # bytes) and the select then reads n predicate bytes instead of 1.
            nbytes += 2 * elements
        return Cost("elementwise", elements, 0, nbytes)
    if short in _KNOWN_OTHER:
        return _other_hlo_cost(op, short)
    return Cost("other", None, None, None, f"{name}: not modelled")
