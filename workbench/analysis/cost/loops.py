"""Trip counts of while loops, read from the loop's own ops: one rule for MLIR and XLA's HLO alike.

A counted loop -- a counter starting at a constant, stepped by a positive constant, compared LT/LE
with a constant or a loop-invariant value -- is what ``fori_loop`` and ``scan`` lower to; its trip
count can be read exactly. Any other loop gets None, and its body counts once, as XLA's
``HloCostAnalysis`` counts every loop -- a loop the cost tables mark (``loops_unknown``).

* ``trip_count(while_op)`` -- a ``stablehlo.while`` of an MLIR module (jaxlib's bindings).
* ``hlo_trip_count(while, caller, condition, body)`` -- an XLA HLO ``while`` instruction: the
  ``known_trip_count`` XLA's while-loop analysis wrote into its ``backend_config`` where it did (the
  optimized module), else the same counted-loop form read from its condition, its body's root tuple and
  its init tuple. A constant number of instructions is read per loop, from per-computation maps the
  caller builds once (``HloIndex``): linear in the module.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from jaxlib.mlir import ir

from ...ir.hlo import Computation, Instruction, attribute_value
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
    step = None if step_value is None else _constant_int(step_value)
    if step is None or step <= 0:
        return None
    span = limit - start + (1 if direction == "LE" else 0)
    return max(0, -(-span // step))


# -- XLA HLO -------------------------------------------------------------------------------------------------------
_KNOWN_TRIP_COUNT = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')
_INT_CONSTANT = re.compile(r"\s*(-?\d+)\s*")
_INT_SCALAR = re.compile(r"[su]\d+\[\]")


class HloIndex:
    """The instructions of an HLO computation by name, and its root and parameter: built once per computation."""

    def __init__(self, comp: Computation):
        self.by_name: Mapping[str, Instruction] = {i.name: i for i in comp.instructions}
        self.root = next((i for i in reversed(comp.instructions) if i.root), None)
        self.param = next((i.name for i in comp.instructions if i.opcode == "parameter"), None)


def _hlo_int(index: HloIndex, name: str) -> int | None:
    ins = index.by_name.get(name)
    if ins is None or ins.opcode != "constant" or not _INT_SCALAR.match(ins.shape):
        return None
    m = _INT_CONSTANT.fullmatch(ins.operands)
    return int(m.group(1)) if m else None


def _tuple_index(index: HloIndex, name: str) -> int | None:
    """``i`` where ``name`` is ``get-tuple-element(<the computation's parameter>), index=i``."""
    ins = index.by_name.get(name)
    if ins is None or ins.opcode != "get-tuple-element" or ins.operand_names != (index.param,):
        return None
    value = attribute_value(ins.attributes, "index")
    return int(value) if value is not None and value.isdigit() else None


def _element(index: HloIndex, tuple_name: str | None, i: int) -> str | None:
    """The name of element ``i`` of the ``tuple(...)`` instruction ``tuple_name`` (None if it is none)."""
    ins = index.by_name.get(tuple_name) if tuple_name else None
    if ins is None or ins.opcode != "tuple":
        return None
    names = ins.operand_names
    return names[i] if i < len(names) else None


def hlo_trip_count(loop: Instruction, caller: HloIndex, condition: HloIndex,
                   body: HloIndex) -> tuple[int | None, str]:
    """The trip count of HLO ``while`` instruction ``loop`` and where it was read from, or ``(None, why not)``."""
    m = _KNOWN_TRIP_COUNT.search(loop.attributes)
    if m:
        return int(m.group(1)), "XLA's known_trip_count"
    root = condition.root
    if root is None or root.opcode != "compare" or len(root.operand_names) != 2:
        return None, "its condition is not a comparison of a counter"
    direction = attribute_value(root.attributes, "direction") or ""
    a, b = root.operand_names
    if _tuple_index(condition, a) is None and direction in _MIRRORED:
        a, b, direction = b, a, _MIRRORED[direction]
    counter = _tuple_index(condition, a)
    if direction not in ("LT", "LE") or counter is None:
        return None, "its condition is not a counter compared LT/LE with a bound"
    init = loop.operand_names[0] if len(loop.operand_names) == 1 else None
    limit = _hlo_int(condition, b)
    if limit is None:  # a loop-invariant element of the loop's tuple: the body passes it through unchanged
        j = _tuple_index(condition, b)
        passed = j is not None and body.root is not None and _tuple_index(body, _element(body, body.root.name, j) or "") == j
        limit = _hlo_int(caller, _element(caller, init, j) or "") if passed else None
    start = _hlo_int(caller, _element(caller, init, counter) or "")
    update = body.by_name.get(_element(body, body.root.name if body.root else None, counter) or "")
    if limit is None or start is None or update is None or update.opcode != "add" or len(update.operand_names) != 2:
        return None, "its counter's start, bound or step is not a constant"
    x, y = update.operand_names
    step = _hlo_int(body, y) if _tuple_index(body, x) == counter else (
        _hlo_int(body, x) if _tuple_index(body, y) == counter else None)
    if step is None or step <= 0:
        return None, "its counter's step is not a positive constant"
    span = limit - start + (1 if direction == "LE" else 0)
    return max(0, -(-span // step)), "its condition"
