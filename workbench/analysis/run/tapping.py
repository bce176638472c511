"""The two sides of a drift search: a stage read for tapping, its ops' counterparts in the reference, and
the stages that made or removed an op.

A ``Side`` is one stage as a tap module (``ir.taps``) with, for each point, what the stage's text says of
it: its result name, its line, the op as printed and its source positions. An XLA stage is read as it is
run, turned back into StableHLO (``pipeline.hlo_stage``): its lines are those of that module.

Counterparts (``counterparts``) are found as lineage finds them: an op of the stage and an op of the
reference with the same source positions (``Origin.key``: the name stack and the user's file, line and
column) and the same result types. Within one such group (one line can make several ops of one type, and
a passes can reorder them), the stage's ops are taken in order, each with the candidate whose operands
agree best with the pairs already made (the same argument, or operands that are counterparts), then
of the same kind, then earliest. An op of another kind pairs only where its operands agree, or where it is
the one candidate (a ``dot_general`` that XLA writes back as ``dot``, a rewrite that keeps a value and
computes it otherwise). Ops with no source position pair only where their group holds one op on each
side. One pass over each side's ops, each weighing at most ``_WINDOW`` candidates.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ...ir.hlo_locations import hlo_instruction_locations
from ...ir.locations import OpLocation, mlir_op_locations, tag_ops
from ...ir.taps import Tappable, TapPoint, tappable
from ...ir.text import strip_locations
from ...pipeline.exported import inlined_for_jax
from ...stages import Stage
from ..provenance import source_words, users_frame, your_frame

__all__ = ["Side", "side_of", "counterparts", "made_by", "removed_by", "op_key", "result_pairs", "op_present"]


@dataclass(frozen=True)
class Side:
    """A stage ready to tap: ``tap`` (its ``@main`` as points), ``located`` the stage's ops as
    ``mlir_op_locations`` reads the text that was tagged (a point's ``tag`` indexes it), ``lines`` the text
    their ``line`` counts in, ``converted`` whether that text is an XLA stage turned back into StableHLO."""

    stage: Stage
    tap: Tappable
    located: tuple[OpLocation, ...]
    lines: tuple[str, ...]
    converted: bool = False

    def location(self, point: TapPoint) -> OpLocation | None:
        return self.located[point.tag] if point.tag is not None and point.tag < len(self.located) else None

    def keys(self, point: TapPoint) -> frozenset:
        loc = self.location(point)
        return frozenset(o.key for o in loc.origins) if loc is not None else frozenset()

    def describe(self, point: TapPoint | None) -> dict:
        """What a reader needs of ``point``: result name, op, line (0-based, -1 unknown), the line's text
        and the user's source line (file:line, "" where none)."""
        if point is None:
            return {"result": "", "op": "", "line": -1, "text": "", "source": ""}
        loc = self.location(point)
        line = loc.line if loc is not None else -1
        text = self.lines[line].strip() if 0 <= line < len(self.lines) else ""
        return {"result": loc.result if loc is not None else "", "op": point.op, "line": line, "text": text,
                "source": source_of(loc)}


def source_of(loc: OpLocation | None) -> str:
    """The user's line an op came from ("" where none), of the first origin with a user's frame: the user's
    own ``file:line`` first and the innermost frame's beside it where that is a library's
    (``train.py:42 (optax/_src/transform.py:507)``; ``provenance.source_words``)."""
    for origin in (loc.origins if loc is not None else ()):
        frame = users_frame(origin)
        if frame is not None:
            return source_words(frame, your_frame(origin))
    return ""


def side_of(stage: Stage, source: str, converted: bool = False) -> Side:
    """``stage`` read for tapping from ``source``: the module text that runs (its text with locations; an
    XLA stage's turned back into StableHLO)."""
    tagged = tag_ops(source)
    tap = tappable(inlined_for_jax(tagged))
    lines = strip_locations(source).splitlines() if converted else stage.text.splitlines()
    return Side(stage, tap, mlir_op_locations(source), tuple(lines), converted)


def op_key(side: Side, point: TapPoint) -> tuple:
    """What a point is known by across stages: its source positions and result types (an op with regions:
    its source positions alone, as a pass may drop a loop's invariant results or turn a ``case`` into an
    ``if``; ``result_pairs`` pairs its results)."""
    return (side.keys(point), ("regions",) if point.regions else point.types)


def result_pairs(p: TapPoint, q: TapPoint) -> list[tuple[int, int]]:
    """Which results of ``p`` are which of its counterpart ``q``: all in order where the types agree;
    for ops with regions, each result of ``p`` with the next result of ``q`` of its type."""
    if p.types == q.types:
        return [(r, r) for r in range(len(p.types))]
    if not (p.regions and q.regions):
        return []
    out, k = [], 0
    for r, t in enumerate(p.types):
        while k < len(q.types) and q.types[k] != t:
            k += 1
        if k == len(q.types):
            return out
        out.append((r, k))
        k += 1
    return out


_WINDOW = 64  # candidates weighed per op: a group of identical ops (an unrolled loop) stays linear
_ROUNDS = 3  # rounds of pairing by structure: each round's pairs are evidence for the next


# kinds that compute one value: XLA's dot written back, a two-way case that a pass made an if
_SAME_VALUE_KINDS = {frozenset({"stablehlo.dot", "stablehlo.dot_general"}),
                     frozenset({"stablehlo.case", "stablehlo.if"})}


def _same_kind(p: TapPoint, q: TapPoint) -> bool:
    """Whether ``q`` may be ``p``'s counterpart by kind: the same op (a constant: the same value too -- a
    constant folded from others, or edited, is another value, and its users show what it changes)."""
    if p.op == "stablehlo.constant" or q.op == "stablehlo.constant":
        return p.op == q.op and p.value == q.value
    return p.op == q.op or frozenset({p.op, q.op}) in _SAME_VALUE_KINDS


def counterparts(stage: Side, reference: Side) -> dict[int, int]:
    """For each point of ``stage`` (by index), the index of its counterpart among ``reference``'s points
    (see the module's docstring); points with none are left out."""
    groups: dict[tuple, list[TapPoint]] = defaultdict(list)
    for q in reference.tap.points:
        groups[op_key(reference, q)].append(q)
    mine: dict[tuple, list[TapPoint]] = defaultdict(list)
    for p in stage.tap.points:
        mine[op_key(stage, p)].append(p)
    pairs: dict[int, int] = {}
    for _ in range(_ROUNDS):  # each round's pairs are the next round's evidence
        before = len(pairs)
        _by_structure(stage, reference, groups, mine, pairs)
        _vouched(stage, reference, pairs)
        if len(pairs) == before:
            break
    _in_order(stage, groups, pairs)
    _vouched(stage, reference, pairs)
    return pairs


def _vouched(stage: Side, reference: Side, pairs: dict[int, int]) -> None:
    """An op paired vouches for its operands: an operand of each with the same source positions and type
    pair, whatever their kinds (a rewrite that computes the value otherwise), constants of another value
    apart."""
    taken = set(pairs.values())
    for p in reversed(stage.tap.points):
        q = reference.tap.points[pairs[p.index]] if p.index in pairs else None
        if q is None or len(p.operands) != len(q.operands) or _agreement(p, q, pairs, taken)[1]:
            continue  # only a pair whose operands say nothing against it vouches
        for a, b in zip(p.operands, q.operands):
            if a[0] == "op" == b[0] and a[1] not in pairs and b[1] not in taken and a[2] == b[2]:
                pa, qb = stage.tap.points[a[1]], reference.tap.points[b[1]]
                constant = "stablehlo.constant" in (pa.op, qb.op)
                if op_key(stage, pa) == op_key(reference, qb) and (not constant or _same_kind(pa, qb)):
                    pairs[a[1]] = b[1]
                    taken.add(b[1])


def _in_order(stage: Side, groups: dict, pairs: dict[int, int]) -> None:
    """The last resort: in a group still holding as many unpaired ops of one kind on each side (the same
    line run once per layer of a Python loop), they pair in order where no operand says otherwise."""
    taken = set(pairs.values())
    left: dict[tuple, list[TapPoint]] = defaultdict(list)
    for p in stage.tap.points:
        key = op_key(stage, p)
        if p.index not in pairs and key[0]:
            left[(key, p.op, p.value)].append(p)
    for (key, kind, value), ours in left.items():
        theirs = [q for q in groups.get(key, ()) if q.index not in taken and q.op == kind and q.value == value]
        if len(theirs) == len(ours) and all(_agreement(p, q, pairs, taken)[1] == 0 for p, q in zip(ours, theirs)):
            for p, q in zip(ours, theirs):
                pairs[p.index] = q.index
                taken.add(q.index)


def _by_structure(stage: Side, reference: Side, groups: dict, mine: dict, pairs: dict[int, int]) -> None:
    """Each op of the stage, in order (its operands are paired before it), with the op of its kind in its
    group whose operands agree with the pairs made so far (none known to differ, most known to agree);
    where its group holds one op of its kind on each side, with that one unless an operand says otherwise
    (an operand the reference computes with an op the stage lacks says nothing: a value that came in
    otherwise is what a drift search is for)."""
    theirs_types, mine_types = _operand_types(reference), _operand_types(stage)
    taken = set(pairs.values())
    for p in stage.tap.points:
        key = op_key(stage, p)
        queue = groups.get(key)
        if not queue or not key[0] or p.index in pairs:
            continue
        kin = [q for q in queue if _same_kind(p, q) and q.index not in taken]
        if not kin:
            continue
        if len(kin) == 1 and sum(1 for o in mine[key] if _same_kind(o, kin[0]) and o.index not in pairs) == 1:
            if _agreement(p, kin[0], pairs, taken)[1] == 0:
                pairs[p.index] = kin[0].index
                taken.add(kin[0].index)
            continue
        best, best_score = None, None
        for q in kin[:_WINDOW]:
            agree, disagree = _agreement(p, q, pairs, taken)
            score = (agree, mine_types(p) == theirs_types(q))
            if disagree == 0 and agree > 0 and (best_score is None or score > best_score):
                best, best_score = q, score
        if best is not None:
            pairs[p.index] = best.index
            taken.add(best.index)


def _agreement(p: TapPoint, q: TapPoint, pairs: dict[int, int], taken: set[int] | None = None) -> tuple[int, int]:
    """(how many operands of ``p`` and ``q`` are known counterparts -- the same argument, or paired ops --,
    how many are known not to be: another argument, or an op paired with another). An operand of the
    reference's op that is paired with nothing says nothing against: the stage may compute that value
    otherwise (a rewrite removed the op), which is what a drift search is for."""
    taken = set(pairs.values()) if taken is None else taken
    if len(p.operands) != len(q.operands) and p.regions and q.regions:
        return 0, 0  # a loop whose invariant operands a pass dropped: its operands do not line up
    agree = conflict = 0
    for a, b in zip(p.operands, q.operands):
        if a[0] == "arg" and b[0] == "arg":
            agree, conflict = (agree + 1, conflict) if a == b else (agree, conflict + 1)
        elif a[0] == "op" and a[1] in pairs:  # this operand's counterpart is known: b must be it
            agree, conflict = (agree + 1, conflict) if b[0] == "op" and pairs[a[1]] == b[1] and a[2] == b[2] \
                else (agree, conflict + 1)
        elif b[0] == "op" and b[1] in taken:  # the reference's operand is another op's counterpart
            conflict += 1
    if len(p.operands) != len(q.operands):
        conflict += 1
    return agree, conflict


def _operand_types(side: Side):
    return lambda p: tuple(side.tap.value_type(v) if v[0] != "other" else "" for v in p.operands)


# -- which stage made an op, which removed one --------------------------------------------------------------
_HLO_NAMES = {"dot_general": "dot", "broadcast_in_dim": "broadcast", "dynamic_slice": "dynamic-slice",
              "dynamic_update_slice": "dynamic-update-slice", "reduce_window": "reduce-window",
              "get_tuple_element": "get-tuple-element"}


def _present(stage: Stage, kind: str, keys: frozenset) -> bool | None:
    """Whether ``stage`` holds an op of ``kind`` with source positions ``keys`` (None: it cannot say)."""
    if stage.error or not keys or stage.name == "jaxpr" or stage.group == "backend":
        return None
    if stage.group == "xla":
        short = kind.split(".", 1)[-1]
        want = _HLO_NAMES.get(short, short)
        ops = hlo_instruction_locations(stage.text)
        return any(o.op == want and keys <= {g.key for g in o.origins} for o in ops)
    return op_present(stage.text_with_locations or stage.text, kind, keys)


def op_present(text: str, kind: str, keys: frozenset) -> bool:
    """Whether the MLIR module ``text`` holds an op of ``kind`` whose source positions include ``keys`` (XLA's
    ``dot`` turned back into StableHLO is a ``dot_general`` in the MLIR stages)."""
    want = "stablehlo.dot_general" if kind == "stablehlo.dot" else kind
    return any(o.op == want and keys <= {g.key for g in o.origins} for o in mlir_op_locations(text))


def made_by(stages: list[Stage], upto: str, kind: str, keys: frozenset) -> Stage | None:
    """The stage, going back from ``upto`` through its parents, after which an op of ``kind`` with these
    source positions has been there without a break: the one that made it (None: it was there from the
    first stage that can say, or no stage can say)."""
    by_name = {s.name: s for s in stages}
    current = by_name.get(upto)
    made = None
    while current is not None:
        here = _present(current, kind, keys)
        if here is None:  # the first stage that can say had it: there from the start
            return None
        if not here:
            return made
        made = current
        current = by_name.get(current.parent) if current.parent else None
    return None  # there from the start


def removed_by(stages: list[Stage], start: str, upto: str, kind: str, keys: frozenset) -> Stage | None:
    """The first stage after ``start`` on the way to ``upto`` whose text no longer holds an op of ``kind``
    with these source positions while its parent did (None: none such)."""
    names = [s.name for s in stages]
    if start not in names or upto not in names:
        return None
    before = True
    for s in stages[names.index(start) + 1:names.index(upto) + 1]:
        here = _present(s, kind, keys)
        if here is None:
            continue
        if before and not here:
            return s
        before = here
    return None
