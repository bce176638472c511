"""Trip counts of while loops, read from the loop's own ops: one rule for MLIR and XLA's HLO alike.

A counted loop -- a counter starting at a constant, stepped by a positive constant (or a loop-invariant
value that enters as one), compared LT/LE with a constant or a loop-invariant value -- is what ``fori_loop``
and ``scan`` lower to; its trip count can be read exactly. Any other loop gets None, and its body counts once, as XLA's
``HloCostAnalysis`` counts every loop -- a loop the cost tables mark (``loops_unknown``).

* ``trip_count(while_op)`` -- a ``stablehlo.while`` of an MLIR module (jaxlib's bindings).
* ``hlo_trip_count(while, caller, condition, body)`` -- an XLA HLO ``while`` instruction: the
  ``known_trip_count`` XLA's while-loop analysis wrote into its ``backend_config`` where it did (the
  optimized module), else the same counted-loop form read from its condition, its body's root tuple and
  its init tuple. A constant number of instructions is read per loop, from per-computation maps the
  caller builds once (``HloIndex``): linear in the module. The HLO text is read in ``ir/hlo_loops.py``
  (all reading of program text lives in ir/); it is this module's rule, re-exported here.
"""
from __future__ import annotations

from jaxlib.mlir import ir

from ...ir.hlo_loops import HloIndex, hlo_trip_count
from ...ir.mlir import attribute

__all__ = ["HloIndex", "hlo_trip_count", "trip_count"]

def _constant_int(value: ir.Value) -> int | None:
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner.operation
    if owner.name != "stablehlo.constant":
        return None
    attr = attribute(owner, "value")  # a complex constant is opaque to the bindings: not a trip count
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


def trip_count(while_op: ir.Operation) -> int | None:
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
    step = None if step_value is None else _loop_invariant_int(while_op, step_value)
    if step is None or step <= 0:
        return None
    span = limit - start + (1 if direction == "LE" else 0)
    return max(0, -(-span // step))
