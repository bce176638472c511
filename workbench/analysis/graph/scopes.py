"""A big stage read as a hierarchy of groups, the model's own structure: JAX's name stack.

JAX records around every op the name stack of the scopes it was traced in (``jax.named_scope``, Flax's
modules, transformations: ``jit(f)/jvp(M)/block_0/attn/dot_general``): an MLIR op in its ``loc(...)``,
an XLA instruction in its metadata's ``op_name``. ``scoped(model)`` reads a stage's ``Dataflow`` into
*units* -- what a picture draws as one op -- each with its path of groups (the name stack without the
outer ``jit(f)``, XLA's ``call_exported`` wrapper and the op's own name: ``("jvp(M)", "block_0",
"attn")``), the values that flow between units, and the tree of groups. ``levels.py`` draws it one
level at a time.

* A unit is an op together with what it holds and is not drawn apart: a fusion's (or single-site
  call's) computation, the body of a reduce, sort, scatter or map. The regions of ``while``, ``if``
  and ``case`` (XLA's while and conditional) hold units of their own, grouped by their own name
  stacks (or, without one, by their loop's). A function's arguments are units that count no op.
* A flow is one value defined in a unit and used in another. The arguments of a region (a loop's
  carried values, a fused computation's parameters) come from the op that holds the region.
* Ops without a name stack (the constants JAX makes at a function's boundary, ops passes add) are
  placed in the deepest group all their users share. A module with no name stack at all (text given
  without ``loc(...)``) is grouped by function (``@name``) and control-flow region (``while#1 body``).
* Groups are ordered by where their own first op appears. Reading is one walk over the dataflow.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Literal, Union

from ...ir.origins import jax_name_stack
from .model import Cluster, Dataflow, Node

__all__ = ["ARGUMENT", "Flow", "Group", "GroupBy", "Scoped", "Unit", "scope_path", "scoped", "split_path"]

# ops whose regions are control flow: what they hold is drawn apart, by its own name stack
_CONTROL = frozenset(("while", "if", "case", "conditional"))
ARGUMENT = "argument"  # the name of a unit that is a function's argument

GroupBy = Literal["scope", "structure"]

# XLA's wrapper of an exported module, then the traced function's own jit
_JIT = re.compile(r"p?jit\(.*\)\Z")


def split_path(text: str) -> tuple[str, ...]:
    """A name stack or group path cut at the ``/`` outside parentheses: ``transpose(jvp(a/b))/c`` is
    two parts."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "/" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return tuple(p for p in parts if p)


def scope_path(name: str) -> tuple[str, ...]:
    """The groups of an op's name stack: without XLA's ``jit(call)/call_exported/``, the traced
    function's ``jit(f)`` and the op's own name (the last part)."""
    parts = split_path(jax_name_stack(name))
    if parts and _JIT.match(parts[0]):
        parts = parts[1:]
    return parts[:-1]


# -- reading a dataflow into units -------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """What a level draws as one op: ``item`` (a node, or the cluster of an HLO fusion) with the ops it
    holds (``weight`` in all; 0 for a function's argument, which is no op)."""

    item: Union[Node, Cluster]
    name: str  # the op's short name or HLO opcode, "argument" for an argument
    path: tuple[str, ...]
    weight: int


@dataclass(frozen=True)
class Flow:
    tail: int
    head: int
    value: tuple[str, str]  # the defining node and its result label: one value however often it is used
    call: bool = False


@dataclass
class Group:
    """A node of the scope tree: its direct units and child groups, in order of first appearance."""

    name: str
    path: tuple[str, ...]
    children: dict[str, "Group"] = field(default_factory=dict)
    units: list[int] = field(default_factory=list)
    ops: int = 0
    first: int = 0  # the index of its first unit: groups are ordered by where they begin

    def walk_units(self):
        stack = [self]
        while stack:
            g = stack.pop()
            yield from g.units
            stack.extend(g.children.values())


@dataclass(frozen=True)
class Scoped:
    """A stage's units, the values between them and their scope tree (``scoped(model)``)."""

    kind: str  # "mlir" | "hlo"
    units: tuple[Unit, ...]
    flows: tuple[Flow, ...]
    unit_of: dict  # every node / cluster id -> the index of the unit it counts in
    root: Group
    by: GroupBy
    adopted: int  # ops without a name stack placed with their users

    @property
    def ops(self) -> int:
        return self.root.ops


def _name(item) -> str:
    return str(item.signature[0]) if item.signature is not None else ARGUMENT


def _entry_function(model: Dataflow) -> str:
    if model.kind == "hlo":
        return next((f.name for f in model.functions if f.label.startswith("ENTRY ")), "")
    names = [f.name for f in model.functions]
    return "main" if "main" in names else (names[0] if names else "")


class _Reader:
    def __init__(self, model: Dataflow) -> None:
        self.model = model
        self.entry = _entry_function(model)
        self.items: list = []
        self.names: list[str] = []
        self.weights: list[int] = []
        self.own: list[tuple[str, ...]] = []  # the path of the op's own name stack
        self.inherited: list[tuple[str, ...]] = []  # what a control-flow region's owner passes on
        self.regions: list[tuple[str, ...]] = []  # function and control-flow regions, for text without locations
        self.unit_of: dict[str, int] = {}
        self.control = Counter()
        self.paths: dict[str, tuple[str, ...]] = {}

    def _function(self, name: str) -> tuple[str, ...]:
        if not name or name == self.entry:
            return ()
        return (f"@{name}",) if self.model.kind == "mlir" else (name,)

    def _add(self, item, inherited, regions) -> int:
        k = len(self.items)
        self.items.append(item)
        self.names.append(_name(item))
        self.weights.append(0 if item.signature is None else 1)
        if item.scope not in self.paths:  # ops of one scope and primitive share their name stack
            self.paths[item.scope] = scope_path(item.scope) if item.scope else ()
        self.own.append(self.paths[item.scope])
        self.inherited.append(inherited)
        self.regions.append(regions)
        self.unit_of[item.id] = k
        return k

    def walk(self, items, absorb: int | None, owner: int | None, inherited, regions) -> None:
        """``absorb``: the unit that counts these items as its own; ``owner``: the control-flow op whose
        region holds them (its arguments come from it)."""
        for item in items:
            if isinstance(item, Node):
                if absorb is not None:
                    self.unit_of[item.id] = absorb
                    self.weights[absorb] += item.signature is not None
                elif item.signature is None and owner is not None:
                    self.unit_of[item.id] = owner  # a region's argument: the op holding it defines it
                else:
                    fn = self._function(item.function) if owner is None else ()
                    self._add(item, inherited or fn, regions or fn)
                continue
            if item.signature is not None:  # an HLO fusion or call drawn in place: one unit
                if absorb is not None:
                    self.unit_of[item.id] = absorb
                    self.weights[absorb] += 1
                    self.walk(item.items, absorb, None, inherited, regions)
                else:
                    fn = self._function(item.function) if owner is None else ()
                    k = self._add(item, inherited or fn, regions or fn)
                    self.walk(item.items, k, None, inherited, regions)
                continue
            held_by = self.unit_of.get(item.owner) if item.owner else None
            if held_by is None:  # a function, or a computation nobody calls
                fn = self._function(item.function)
                self.walk(item.items, absorb, None, fn, fn)
            elif absorb is not None or self.names[held_by] not in _CONTROL:
                self.walk(item.items, absorb if absorb is not None else held_by, None, inherited, regions)
            else:
                name = self.names[held_by]
                self.control[held_by] = self.control[held_by] or len(self.control) + 1
                region = item.label.split(":")[0].removeprefix(name).strip() or item.label
                path = self.own[held_by] or self.inherited[held_by]
                self.walk(item.items, None, held_by, path,
                          self.regions[held_by] + (f"{name}#{self.control[held_by]} {region}",))


def scoped(model: Dataflow) -> Scoped:
    """The units of ``model``, their flows and the tree of their name stacks (see the module's docstring)."""
    r = _Reader(model)
    # functions first, then what one of their ops owns: an HLO computation that several instructions
    # call comes before its first caller in the text
    owned = [item for item in model.items if isinstance(item, Cluster) and item.owner]
    r.walk([item for item in model.items if not (isinstance(item, Cluster) and item.owner)], None, None, (), ())
    while owned:
        ready = [item for item in owned if item.owner in r.unit_of] or owned[:1]
        r.walk(ready, None, None, (), ())
        done = {id(item) for item in ready}
        owned = [item for item in owned if id(item) not in done]
    flows: list[Flow] = []
    for e in model.edges:
        if e.lhead and e.style != "dashed":
            continue  # from an op to its own region
        if e.lhead and model.kind == "hlo":
            continue  # a call of a shared computation: grouped with its first caller, no dataflow of its own
        tail, head = r.unit_of.get(e.tail), r.unit_of.get(e.head)
        if tail is None or head is None or tail == head:
            continue
        flows.append(Flow(tail, head, (e.tail, e.label), bool(e.lhead)))
    located = any(item.scope for item in r.items)  # a name stack at all, if only the function's own
    if located:
        paths = [own or inherited for own, inherited in zip(r.own, r.inherited)]
        placed = [bool(p) for p in paths]
        adopted = _adopt(paths, r, flows)
    else:
        paths, adopted = list(r.regions), 0
        placed = [True] * len(paths)
    units = tuple(Unit(item, name, path, weight)
                  for item, name, path, weight in zip(r.items, r.names, paths, r.weights))
    root = Group("", ())
    for k, u in enumerate(units):
        g = root
        g.ops += u.weight
        for part in u.path:
            child = g.children.get(part)
            if child is None:
                child = g.children[part] = Group(part, g.path + (part,), first=_LATE + k)
            g = child
            g.ops += u.weight
            if placed[k] and g.first >= _LATE:
                g.first = k
        g.units.append(k)
    _order(root)
    return Scoped(model.kind, units, tuple(flows), r.unit_of, root, "scope" if located else "structure", adopted)


_LATE = 1 << 62  # a group's start before an op of its own places it: its adopted ops come earlier


def _order(g: Group) -> None:
    """Children in the order their own first ops appear (constants hoisted to the top of a function and
    adopted by a group would otherwise put it first)."""
    g.children = dict(sorted(g.children.items(), key=lambda kv: kv[1].first))
    for child in g.children.values():
        _order(child)


def _adopt(paths: list[tuple[str, ...]], r: _Reader, flows: list[Flow]) -> int:
    """Ops with no group of their own join the deepest group all their users share; users come later
    in the text, so one backward pass settles chains of them (a constant broadcast, then used)."""
    users = defaultdict(list)
    for f in flows:
        if not f.call:
            users[f.tail].append(f.head)
    adopted = 0
    for k in range(len(paths) - 1, -1, -1):
        if paths[k] or r.weights[k] == 0 or not users[k]:
            continue
        common = paths[users[k][0]]
        for u in users[k][1:]:
            p = paths[u]
            n = 0
            while n < len(common) and n < len(p) and common[n] == p[n]:
                n += 1
            common = common[:n]
            if not common:
                break
        if common:
            paths[k] = common
            adopted += 1
    return adopted
