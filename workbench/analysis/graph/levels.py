"""One picture of a stage's hierarchy (``scopes.py``): ``level(scoped, group)``.

A level shows the groups one below ``group`` (the top level: ``""``) as boxes with their op counts,
the ops directly in it, and the values between them. What it promises:

* Every op of the stage counts in exactly one box of the top level: the boxes' ``ops`` add up to the
  stage's op count, and those of a group's level to the group's count.
* A link between two boxes stands for the values defined in one and used in the other; ``values``
  counts distinct values, not uses. In a group's level, ports stand for what lies outside it: the
  group beside one of its ancestors that a value comes from or goes to (``from block_2``), or the op
  when it sits directly in such an ancestor -- at most ``PORT_LIMIT`` each way, the rest summed up.
* A level is bounded: a group holding only one group is opened in place (drawn as a cluster; so a
  model under one Flax module shows that module's blocks), a group of at most ``SMALL_GROUP`` units
  is drawn as its ops, more than ``ARGS_LIMIT`` arguments or ``SMALL_GROUP`` constants are one box
  each (``[arguments]``, ``[constant]``), more than ``LEVEL_LIMIT`` entries fold the group's own ops
  by kind (``[add]``) and then are cut into at most ``LEVEL_LIMIT`` runs (``[1-40]``: the positions
  of the run's entries). Folds and runs are groups too: their paths open them, and so does a real
  group's own path wherever it is drawn.
* A level is one pass over the units of its group and one over the flows (``Level.work`` counts them).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Literal, Union

from ...errors import UnknownNameError
from .model import Cluster, Node
from .scopes import ARGUMENT, Group, GroupBy, Scoped, split_path

__all__ = ["Box", "Level", "LevelWork", "Link", "level", "ARGS_LIMIT", "LEVEL_LIMIT", "PORT_LIMIT", "SMALL_GROUP"]

LEVEL_LIMIT = 60  # entries of one level before its own ops fold by kind and entries are cut into runs
SMALL_GROUP = 2  # a group of this many units or fewer is drawn as its ops
ARGS_LIMIT = 8  # more arguments than this are drawn as one box
PORT_LIMIT = 10  # outside neighbours drawn each way before the rest are summed up in one port
OPEN_LIMIT = LEVEL_LIMIT // 4  # ops drawn beside the groups a level opens in place

_CONSTANT = "constant"
BoxKind = Literal["group", "fold", "run", "op", "port"]


@dataclass(frozen=True)
class Box:
    """One node of a drawn level. ``path`` is what ``group=`` opens (groups, folds and runs; "" for ops
    and ports); ``cluster`` the group opened in place that holds it ("" for the level's own)."""

    key: str
    kind: BoxKind
    label: str
    path: str = ""
    ops: int = 0
    changed: int = 0
    cluster: str = ""
    item: Union[Node, Cluster, None] = None  # the op a kind "op" box draws
    kinds: tuple[tuple[str, int], ...] = ()  # the commonest ops inside, for the tooltip
    members: int = 0  # the units inside a group, fold or run (arguments included)
    direction: Literal["", "in", "out"] = ""  # a port's: "in" (values come from there) or "out"


@dataclass(frozen=True)
class Link:
    """The values defined in ``tail`` and used in ``head`` (a ``call``: ``tail`` calls a function in ``head``)."""

    tail: str
    head: str
    values: int
    call: bool = False


@dataclass(frozen=True)
class LevelWork:
    """What drawing a level cost, counted.

    ``units``: the units placed in the level's boxes, each once (at the top level, all of the stage's);
    ``flows``: the stage's flows gone over for the links and ports, in one pass. The boxes made are the
    level's ``boxes``.
    """

    units: int
    flows: int


@dataclass(frozen=True)
class Level:
    """What one picture of a hierarchy shows (``level(scoped, group)``)."""

    group: str  # "" for the top level
    by: GroupBy
    opened: tuple[str, ...]  # groups opened in place, outermost first (drawn as clusters)
    boxes: tuple[Box, ...]
    links: tuple[Link, ...]
    ops: int  # the ops inside the level's group: the boxes' ops add up to it
    total: int  # the stage's
    folded: bool  # ops folded by kind somewhere in this level
    runs: bool  # entries cut into runs
    adopted: int  # ops of the stage without a name stack, counted in the group of their users
    work: LevelWork

    def box(self, path_or_label: str) -> Box:
        """The box whose path (or, for an op or a port, label) is this; KeyError if none."""
        for b in self.boxes:
            if (b.path or b.label) == path_or_label:
                return b
        raise KeyError(path_or_label)


# An entry of a level before it is drawn: a child group, ops of one kind folded, a run of entries, an op.
@dataclass(frozen=True)
class _Fold:
    base: Group
    name: str
    units: tuple[int, ...]

    @property
    def part(self) -> str:
        return f"[{'arguments' if self.name == ARGUMENT else self.name}]"


@dataclass(frozen=True)
class _Run:
    entries: tuple
    first: int  # 1-based positions in the entries it was cut from
    last: int

    @property
    def part(self) -> str:
        return f"[{self.first}-{self.last}]"


_Entry = Union[Group, _Fold, _Run, int]


@dataclass(frozen=True)
class _View:
    """What a path opens: a real group, or the entries of a fold or run inside ``base``."""

    base: Group
    path: str
    entries: tuple | None = None  # None: the real group's own


def _own(g: Group, s: Scoped) -> tuple[list[_Entry], list[int]]:
    """A group's own units: the folds of its arguments and of its constants when there are many (shared
    by many groups, each would draw an edge to every one), and the other units."""
    folds: list[_Entry] = []
    own = list(g.units)
    for name, limit in ((ARGUMENT, ARGS_LIMIT), (_CONSTANT, SMALL_GROUP)):
        these = [k for k in own if s.units[k].name == name]
        if len(these) > limit:
            own = [k for k in own if s.units[k].name != name]
            folds.append(_Fold(g, name, tuple(these)))
    return folds, own


def _entries(g: Group, s: Scoped) -> list[_Entry]:
    """A real group's entries, small groups opened and, past the limit, its own ops folded by kind."""
    children = list(g.children.values())
    out, own = _own(g, s)
    small = [c for c in children if not c.children and len(c.units) <= SMALL_GROUP]
    if small and len(out) + len(children) + len(own) + sum(len(c.units) - 1 for c in small) <= LEVEL_LIMIT:
        opened = {id(c) for c in small}
        mixed = [(c.first, c) for c in children if id(c) not in opened]
        mixed += [(k, k) for c in small for k in c.units]
        out += [e for _, e in sorted(mixed, key=lambda p: p[0])]
    else:
        out += children
    if len(out) + len(own) > LEVEL_LIMIT and len(own) > 1:
        kinds: dict[str, list[int]] = {}
        for k in own:
            kinds.setdefault(s.units[k].name, []).append(k)
        for name, ks in kinds.items():
            out.append(_Fold(g, name, tuple(ks)) if len(ks) > 1 else ks[0])
    else:
        out += own
    return out


def _cuttable(entries: list[_Entry]) -> tuple[list[_Entry], list[_Entry]]:
    """The entries that stay whole (the folds of arguments and constants: few, and read by everything),
    and those that runs are cut from."""
    whole = [e for e in entries if isinstance(e, _Fold) and e.name in (ARGUMENT, _CONSTANT)]
    return whole, [e for e in entries if not (isinstance(e, _Fold) and e.name in (ARGUMENT, _CONSTANT))]


def _cut(entries: list[_Entry]) -> list[_Entry]:
    """At most ``LEVEL_LIMIT`` entries (and the folds of arguments and constants): runs of consecutive
    ones past it."""
    if len(entries) <= LEVEL_LIMIT:
        return entries
    whole, rest = _cuttable(entries)
    size = -(-len(rest) // LEVEL_LIMIT)
    return whole + [_Run(tuple(rest[i:i + size]), i + 1, min(i + size, len(rest))) if len(rest[i:i + size]) > 1
                    else rest[i] for i in range(0, len(rest), size)]


def _view_entries(view: _View, s: Scoped) -> list[_Entry]:
    return list(view.entries) if view.entries is not None else _entries(view.base, s)


def _part(entry) -> str:
    return entry.name if isinstance(entry, Group) else entry.part


def _resolve(s: Scoped, group: str) -> _View:
    view = _View(s.root, "")
    for part in split_path(group):
        entries = _view_entries(view, s)
        drawn = _cut(entries)
        nxt = None
        for e in drawn + entries:
            if not isinstance(e, int) and _part(e) == part:
                nxt = e
                break
        if nxt is None and view.entries is None:
            nxt = view.base.children.get(part)
        m = re.fullmatch(r"\[(\d+)-(\d+)\]", part) if nxt is None else None
        if m:
            rest = _cuttable(entries)[1]
            first, last = int(m.group(1)), int(m.group(2))
            if 1 <= first <= last <= len(rest):
                nxt = _Run(tuple(rest[first - 1:last]), first, last)
        if nxt is None:
            known = [_join(view.path, _part(e)) for e in drawn if not isinstance(e, int)]
            raise UnknownNameError(
                "group", group, known,
                f"the groups {'at the top level' if not view.path else 'inside ' + repr(view.path)} are "
                + (", ".join(map(repr, known[:8])) + (", ..." if len(known) > 8 else "") if known else "none"))
        path = _join(view.path, part)
        if isinstance(nxt, Group):
            view = _View(nxt, path)
        elif isinstance(nxt, _Fold):
            view = _View(nxt.base, path, tuple(nxt.units))
        else:
            view = _View(view.base, path, nxt.entries)
    return view


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a else b


def _tally(units, s: Scoped, limit: int = 6) -> tuple[tuple[str, int], ...]:
    c = Counter()
    for k in units:
        u = s.units[k]
        if u.weight:
            c[u.name] += u.weight
    return tuple(c.most_common(limit))


def level(s: Scoped, group: str | None = None, changed: dict[int, int] | None = None) -> Level:
    """The boxes and links of one level of ``s``: the top level, or the group at path ``group``
    (``"block_0/attn"``; folds and runs by their bracketed parts). ``changed`` maps unit indices to
    how many of their ops are new or changed. UnknownNameError for a path that is no group."""
    view, opened, beside = _open_in_place(_resolve(s, group or ""), s)
    inner = opened[-1][1] if opened else ""  # the cluster the level's entries are drawn in
    placed = beside + [(e, inner) for e in _cut(_view_entries(view, s))]
    drawn = _draw(placed, s, changed or {}, view.path)
    pairs, ports = _gather_flows(s, drawn.key_of, view.base.path)
    boxes = list(drawn.boxes)
    links = [Link(t, h, len(v), call) for (t, h, call), v in pairs.items()]
    for direction in ("in", "out"):
        port_boxes, port_links = _ports(ports, direction)
        boxes += port_boxes
        links += port_links
    work = LevelWork(drawn.units, len(s.flows))
    return Level(group or "", s.by, tuple(p for _, p in opened), tuple(boxes), tuple(links),
                 sum(b.ops for b in boxes), s.ops, drawn.folded, drawn.runs, s.adopted, work)


def _open_in_place(view: _View, s: Scoped) -> tuple[_View, list[tuple[Group, str]], list[tuple[_Entry, str]]]:
    """Open groups that hold a single group in place while the ops beside them stay few
    (``OPEN_LIMIT``): the view then drawn, the groups opened (with their paths, outermost first), and
    what is drawn beside them with the cluster each sits in."""
    opened: list[tuple[Group, str]] = []
    beside: list[tuple[_Entry, str]] = []
    while view.entries is None:
        g = view.base
        folds, units = _own(g, s)
        own = folds + units
        if len(g.children) != 1 or len(beside) + len(own) > OPEN_LIMIT:
            break
        cluster = opened[-1][1] if opened else ""
        beside += [(e, cluster) for e in own]
        child = next(iter(g.children.values()))
        path = "/".join(child.path)
        opened.append((child, path))
        view = _View(child, path)
    return view, opened, beside


@dataclass
class _Drawn:
    """The boxes of a level's entries as they are made: which box each unit is drawn in, the units
    placed, and whether any fold of ops or any run was drawn."""

    boxes: list[Box]
    key_of: dict[int, str]  # unit -> the box it is drawn in
    units: int = 0
    folded: bool = False
    runs: bool = False


def _draw(placed: list[tuple[_Entry, str]], s: Scoped, changed: dict[int, int], view_path: str) -> _Drawn:
    """One box per placed entry: an op box for a unit, a group, fold or run box holding its members."""
    drawn = _Drawn([], {})
    for n, (entry, cluster) in enumerate(placed):
        if isinstance(entry, int):
            u = s.units[entry]
            drawn.key_of[entry] = u.item.id
            drawn.units += 1
            drawn.boxes.append(Box(u.item.id, "op", u.name, "", u.weight, changed.get(entry, 0), cluster, u.item))
            continue
        members = _members(entry)
        if isinstance(entry, Group):
            kind, label, path = "group", entry.name, "/".join(entry.path)
        elif isinstance(entry, _Fold):
            drawn.folded = drawn.folded or entry.name != ARGUMENT
            kind, label, path = "fold", entry.part, _join("/".join(entry.base.path), entry.part)
        else:
            drawn.runs = True
            kind, label, path = "run", _run_label(entry, s), _join(view_path, entry.part)
        key = f"g{n}"
        for k in members:
            drawn.key_of[k] = key
        drawn.units += len(members)
        drawn.boxes.append(Box(key, kind, label, path, sum(s.units[k].weight for k in members),
                               sum(changed.get(k, 0) for k in members), cluster, kinds=_tally(members, s),
                               members=len(members)))
    return drawn


def _gather_flows(s: Scoped, key_of: dict[int, str], base: tuple[str, ...]
                  ) -> tuple[dict[tuple[str, str, bool], set], dict[tuple[str, str], set]]:
    """One pass over the flows: the values between two boxes (by tail, head and whether a call), and
    those to and from the outside of group ``base`` (by direction and outside label, with the box
    inside each comes from or goes to)."""
    pairs: dict[tuple[str, str, bool], set] = defaultdict(set)
    ports: dict[tuple[str, str], set] = defaultdict(set)
    for f in s.flows:
        tail, head = key_of.get(f.tail), key_of.get(f.head)
        if tail is not None and head is not None:
            if tail != head:
                pairs[(tail, head, f.call)].add(f.value)
        elif tail is not None:
            ports[("out", _outside(s, f.head, base))].add((tail, f.value))
        elif head is not None:
            ports[("in", _outside(s, f.tail, base))].add((head, f.value))
    return pairs, ports


def _ports(ports: dict[tuple[str, str], set], direction: str) -> tuple[list[Box], list[Link]]:
    """The port boxes one way and their links: the ``PORT_LIMIT`` outside neighbours with the most
    values, the rest summed up in one port."""
    found = sorted(((label, v) for (d, label), v in ports.items() if d == direction),
                   key=lambda p: (-len({x[1] for x in p[1]}), p[0]))
    shown, rest = found[:PORT_LIMIT], found[PORT_LIMIT:]
    if rest:
        shown.append((f"{len(rest)} more", set().union(*(v for _, v in rest))))
    boxes: list[Box] = []
    links: list[Link] = []
    for i, (label, values) in enumerate(shown):
        key = f"{direction}{i}"
        boxes.append(Box(key, "port", label, direction=direction))
        per_box: dict[str, set] = defaultdict(set)
        for inside, value in values:
            per_box[inside].add(value)
        for inside, vs in per_box.items():
            links.append(Link(key, inside, len(vs)) if direction == "in" else Link(inside, key, len(vs)))
    return boxes, links


def _members(entry) -> list[int]:
    if isinstance(entry, int):
        return [entry]
    if isinstance(entry, Group):
        return list(entry.walk_units())
    if isinstance(entry, _Fold):
        return list(entry.units)
    return [k for e in entry.entries for k in _members(e)]


def _entry_label(entry, s: Scoped) -> str:
    if isinstance(entry, int):
        return s.units[entry].name
    return _part(entry)


def _run_label(run: _Run, s: Scoped) -> str:
    first, last = _entry_label(run.entries[0], s), _entry_label(run.entries[-1], s)
    return f"{first} \u2026 {last}"


def _outside(s: Scoped, k: int, base: tuple[str, ...]) -> str:
    """How a level inside group ``base`` names a unit outside it: the group beside one of ``base``'s
    ancestors that holds it, or the op itself when it sits directly in such an ancestor."""
    u = s.units[k]
    n = 0
    while n < len(base) and n < len(u.path) and base[n] == u.path[n]:
        n += 1
    if len(u.path) > n:
        return "/".join(u.path[:n + 1])
    where = "/".join(u.path)
    label = u.item.label[0] if u.name == ARGUMENT and isinstance(u.item, Node) else u.name
    return f"{label} in {where}" if where else label
