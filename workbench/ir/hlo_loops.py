"""Trip counts of XLA HLO while loops, read from the HLO text: the rule of ``analysis/cost/loops.py`` (which
re-exports it) for XLA's stages.

A counted loop -- a counter (an element of the loop's tuple) starting at a constant, stepped by a positive
constant (or a loop-invariant element that enters as one), compared LT/LE with a constant or a loop-invariant
element -- is what ``fori_loop`` and ``scan`` lower to. Copies of a value (copy insertion's) are read through.
``hlo_trip_count`` takes XLA's own ``known_trip_count`` (its while-loop analysis writes it into the
``backend_config`` of the optimized module's loops) where there is one, else reads that form from the loop's
condition (its root compare), its body's root tuple and its init tuple; any other loop gets None.
A constant number of instructions is read per loop, from maps built once per computation (``HloIndex``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from .hlo import Computation, Instruction, attribute_value

__all__ = ["HloIndex", "hlo_trip_count"]

_MIRRORED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}
_KNOWN_TRIP_COUNT = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')
_INT_CONSTANT = re.compile(r"\s*(-?\d+)\s*")
_INT_SCALAR = re.compile(r"[su]\d+\[\]")


class HloIndex:
    """The instructions of an HLO computation by name, and its root and parameter: built once per computation."""

    def __init__(self, comp: Computation):
        self.by_name: Mapping[str, Instruction] = {i.name: i for i in comp.instructions}
        self.root = next((i for i in reversed(comp.instructions) if i.root), None)
        self.param = next((i.name for i in comp.instructions if i.opcode == "parameter"), None)


# what a scheduler puts between a constant and the loop's tuple without changing its value (the TPU's optimized
# module starts a counter at copy(constant(0)), placing it in its own memory)
_SAME_VALUE = ("copy", "bitcast", "copy-start", "copy-done")
_HOPS = 4


def _source(index: HloIndex, name: str) -> Instruction | None:
    """The instruction ``name`` holds the value of: itself, or what its copies (``_SAME_VALUE``) copy. Copy insertion
    puts copies around a loop's counter and between the body's add and its root tuple (the TPU's)."""
    ins = index.by_name.get(name)
    for _ in range(_HOPS):
        if ins is None or ins.opcode not in _SAME_VALUE or len(ins.operand_names) != 1:
            break
        ins = index.by_name.get(ins.operand_names[0])
    return ins


def _hlo_int(index: HloIndex, name: str) -> int | None:
    ins = _source(index, name)
    if ins is None or ins.opcode != "constant" or not _INT_SCALAR.match(ins.shape):
        return None
    m = _INT_CONSTANT.fullmatch(ins.operands)
    return int(m.group(1)) if m else None


def _tuple_index(index: HloIndex, name: str) -> int | None:
    """``i`` where ``name`` is ``get-tuple-element(<the computation's parameter>), index=i`` (or a copy of one)."""
    ins = _source(index, name)
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


def _invariant_int(index: HloIndex, name: str, caller: HloIndex, init: str | None, body: HloIndex) -> int | None:
    """The integer ``name`` (an instruction of ``index``: the loop's condition or body) holds on every iteration: a
    constant, or an element of the loop's tuple that enters as a constant (``init``: the loop's operand, in
    ``caller``) and that the body passes through unchanged. XLA's loop-invariant code motion moves a counter's
    constant step there (the TPU's, of a fori_loop: ``add(counter, get-tuple-element(param), index=4)``)."""
    value = _hlo_int(index, name)
    if value is not None:
        return value
    j = _tuple_index(index, name)
    root = body.root.name if body.root is not None else None
    passed = j is not None and root is not None and _tuple_index(body, _element(body, root, j) or "") == j
    return _hlo_int(caller, _element(caller, init, j) or "") if passed else None


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
    limit = _invariant_int(condition, b, caller, init, body)
    start = _hlo_int(caller, _element(caller, init, counter) or "")
    update = _source(body, _element(body, body.root.name if body.root else None, counter) or "")
    if limit is None or start is None or update is None or update.opcode != "add" or len(update.operand_names) != 2:
        return None, "its counter's start, bound or step is not a constant"
    x, y = update.operand_names
    step = _invariant_int(body, y, caller, init, body) if _tuple_index(body, x) == counter else (
        _invariant_int(body, x, caller, init, body) if _tuple_index(body, y) == counter else None)
    if step is None or step <= 0:
        return None, "its counter's step is not a positive constant"
    span = limit - start + (1 if direction == "LE" else 0)
    return max(0, -(-span // step)), "its condition"
