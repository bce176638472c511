"""Comparing a stage's dataflow with its parent's, and drawing it with graphviz: ``stage_graph``.

Laying a graph out is the one step here whose time is not linear in what is drawn: graphviz's ``dot``
took 118 s on a 984-op gradient and more than 10 minutes on 3,008 ops. So the graph is a
``StageGraph``, whose ``pipe`` (what notebooks, the panel and the report call) runs ``dot`` with a
time limit, kills it when the limit passes and raises ``GraphTooLargeError`` (shown as a note by a
notebook's display); and ``stage_graph`` never draws more than ``draw_limit`` ops one by one.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache

import graphviz

from ...ir.collector import collector_paused
from ...errors import GraphTooLargeError, GraphUnavailableError, ModuleParseError
from ...ir.hlo import read_hlo
from ...ir.ops import op_counts_by_function
from ...ir.text import input_kind
from .hlo import HloReader
from .mlir import MlirReader
from .model import Cluster, Dataflow, Node
from .levels import LEVEL_LIMIT, Box, Level, level
from .scopes import Scoped, scoped

__all__ = ["stage_graph", "stage_level", "CHANGED_FILL", "GROUP_CLASS", "GROUP_ID", "DRAW_LIMIT", "LAYOUT_SECONDS",
           "GraphTooLargeError", "StageGraph"]

CHANGED_FILL = "#ffb454"
_OP_FILL = "#ffffff"
_CONST_FILL = "#eeeeee"
_ARG_FILL = "#dbe8f5"
_RETURN_FILL = "#e3f1dc"
_GROUP_FILL = "#e4ecf7"
_FOLD_FILL = "#f1f1f1"
_LARGE_EDGES = 200
# A box linked with more boxes than this (the arguments feeding every block) has its edges left out and
# counted in its label: edges across the whole level made dot take 15 s on a 10,000-op gradient's top level.
_HUB_LINKS = 12
_LARGE_LEVEL = 30  # boxes
GROUP_CLASS = "wbg-group"  # the SVG class of a box (or opened cluster) that stands for a group
GROUP_ID = "wbg-group:"  # its SVG id: this, then the path that group= opens
LAYOUT_SECONDS = 30.0
"""How long ``dot`` may lay one graph out (``StageGraph.layout_seconds``): a 400-op gradient (the
default ``max_ops``) takes a few seconds, a 1,000-op one minutes."""
DRAW_LIMIT = 1000
"""The most ops ``stage_graph`` draws one by one, whatever ``max_ops`` asks: above, the hierarchy's top
level. ``dot`` lays out a 1,000-op gradient in minutes, not seconds."""




class StageGraph(graphviz.Digraph):
    """A ``graphviz.Digraph`` whose ``pipe`` runs the layout with a time limit.

    graphviz's own ``pipe`` waits for ``dot`` as long as it takes, and a Ctrl-C leaves ``dot`` running.
    Here ``dot`` gets ``layout_seconds`` (``LAYOUT_SECONDS`` unless set on the graph): past it ``dot`` is
    killed and reaped and ``pipe`` raises ``GraphTooLargeError`` saying what to narrow (``hint``); a
    Ctrl-C kills it too. A notebook showing the graph shows that message instead of the picture.
    ``render`` and ``view`` (files and viewers) are graphviz's own, without a limit.
    """

    layout_seconds: float = LAYOUT_SECONDS
    hint: str = "draw fewer ops: a smaller max_ops (the hierarchy's top level), group=... (one group), a smaller stage"

    def pipe(self, format: str | None = None, renderer: str | None = None, formatter: str | None = None,
             neato_no_op: bool | int | None = None, quiet: bool = False, *, engine: str | None = None,
             encoding: str | None = None) -> bytes | str:
        """``graphviz.Digraph.pipe``, bounded by ``layout_seconds``; GraphTooLargeError past it."""
        from graphviz.backend import dot_command

        cmd = dot_command.command(engine or self.engine, format or self.format, renderer=renderer,
                                  formatter=formatter, neato_no_op=neato_no_op)
        try:
            proc = subprocess.run(cmd, input=self.source.encode(self.encoding), capture_output=True,
                                  timeout=self.layout_seconds)
        except FileNotFoundError as e:
            raise graphviz.ExecutableNotFound(cmd) from e
        except subprocess.TimeoutExpired:  # subprocess.run has killed and reaped dot
            raise GraphTooLargeError(
                f"graphviz's dot could not lay out this graph ({_plural(self.nodes, 'node')}, "
                f"{_plural(self.edges, 'edge')}) within {self.layout_seconds:g} s and was stopped; {self.hint}. "
                "or give it longer: set graph.layout_seconds (e.g. 120) and show the graph again",
                self.layout_seconds, self.nodes, self.edges) from None
        if not quiet and proc.stderr:
            sys.stderr.write(proc.stderr.decode(self.encoding, "replace"))
        if proc.returncode:
            raise graphviz.CalledProcessError(proc.returncode, cmd, output=proc.stdout, stderr=proc.stderr)
        return proc.stdout.decode(encoding) if encoding is not None else proc.stdout

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        try:
            return super()._repr_mimebundle_(include, exclude, **kwargs)
        except GraphTooLargeError as e:  # a note in the notebook rather than a formatter's traceback
            return {"text/plain": f"GraphTooLargeError: {e}"}

    @property
    def nodes(self) -> int:
        """The node statements of the DOT source (clusters' included)."""
        return self._statements()[0]

    @property
    def edges(self) -> int:
        """The edge statements of the DOT source."""
        return self._statements()[1]

    def _statements(self) -> tuple[int, int]:
        nodes = edges = 0
        for line in self.body:
            m = _STATEMENT.match(line)
            if m and m.group(1) not in _NOT_NODES:
                if m.group(2) == "->":
                    edges += 1
                else:
                    nodes += 1
        return nodes, edges


# A DOT statement line as graphviz writes it: an id, then an edge arrow, attributes or nothing
_STATEMENT = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[^\s\[\]"=]+)\s*(->|\[|$)')
_NOT_NODES = frozenset(("graph", "node", "edge", "{", "}"))


def _kind(text: str) -> str:
    """``"mlir"`` or ``"hlo"`` for the texts that can be drawn, else ``"none"``."""
    kind = input_kind(text)
    return kind if kind in ("mlir", "hlo") else "none"


@lru_cache(maxsize=32)
def _dataflow(text: str, located: str) -> Dataflow:
    """The model of one stage's text; cached since a stage is drawn both as itself and as a parent.
    ``located`` is the same module with its locations (an MLIR stage's ``text_with_locations``): each
    op's name stack is read from it. An HLO text carries its metadata (``op_name``) itself."""
    if _kind(text) == "hlo":
        with collector_paused():
            module = read_hlo(text)
            # what op_counts_by_function counts, from the module read once
            ops = {c.name: Counter(ins.opcode for ins in c.instructions) for c in module.computations
                   if c.instructions}
            return HloReader(module, ops).read()
    ops = op_counts_by_function(text)
    from ...pipeline.exported import readable_module

    try:
        module = readable_module(located)
    except ModuleParseError as err:
        raise GraphUnavailableError(str(err)) from err
    with collector_paused():
        return MlirReader(ops).read(module)


def _model(stage) -> Dataflow:
    return _dataflow(stage.text, stage.text_with_locations or stage.text)


@lru_cache(maxsize=16)
def _scoped_texts(text: str, located: str) -> Scoped:
    model = _dataflow(text, located)
    with collector_paused():
        return scoped(model)


def _scoped(stage) -> Scoped:
    return _scoped_texts(stage.text, stage.text_with_locations or stage.text)


@dataclass(frozen=True)
class _Comparison:
    changed: frozenset[str]  # node ids of the ops whose signature the parent lacks
    modified: Counter  # op name -> how many of those the parent has an op of that name for
    added: Counter  # op name -> how many have no op of that name left in the parent
    removed: Counter  # op name -> how many of the parent's ops are left over


def _compare(model: Dataflow, parent: Dataflow) -> _Comparison:
    available = Counter(n.signature for n in parent.signed())
    changed: list[Node | Cluster] = []
    for n in model.signed():
        if available[n.signature] > 0:
            available[n.signature] -= 1
        else:
            changed.append(n)
    left: Counter = Counter()
    for signature, count in available.items():
        if count > 0:
            left[signature[0]] += count
    modified: Counter = Counter()
    added: Counter = Counter()
    for n in changed:
        name = n.signature[0]
        if left[name] > 0:
            left[name] -= 1
            modified[name] += 1
        else:
            added[name] += 1
    return _Comparison(frozenset(n.id for n in changed), modified, added, +left)


def _tally(counts: Counter, limit: int = 6) -> str:
    shown = ", ".join(f"{name} \u00d7{n}" if n > 1 else name for name, n in counts.most_common(limit))
    return shown + (", \u2026" if len(counts) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _dot_text(*lines: str, left: bool = False) -> str:
    r"""One DOT label from plain lines: backslashes made literal, lines ended by ``\n`` (centred) or
    ``\l`` (left-justified), never read as an HTML label."""
    escaped = [line.replace("\\", "\\\\") for line in lines]
    return graphviz.nohtml("".join(f"{line}\\l" for line in escaped) if left else "\\n".join(escaped))


_SHAPES = {"op": "box", "const": "box", "arg": "ellipse", "return": "invhouse"}
_FILLS = {"op": _OP_FILL, "const": _CONST_FILL, "arg": _ARG_FILL, "return": _RETURN_FILL}


def _emit(graph: graphviz.Digraph, items, changed: frozenset[str]) -> None:
    for item in items:
        if isinstance(item, Cluster):
            with graph.subgraph(name=item.id) as sub:
                sub.attr(label=_dot_text(item.label), style="rounded", fontsize="10",
                         **({"color": CHANGED_FILL, "penwidth": "2"} if item.id in changed else {"color": "#999999"}))
                _emit(sub, item.items, changed)
            continue
        attrs = {
            "label": _dot_text(*item.label),
            "shape": _SHAPES[item.kind],
            "fillcolor": CHANGED_FILL if item.id in changed else _FILLS[item.kind],
        }
        if item.tooltip:
            attrs["tooltip"] = _dot_text(item.tooltip)
        if item.root:
            attrs["peripheries"] = "2"
        graph.node(item.id, **attrs)


def _new_graph(caption: list[str]) -> StageGraph:
    return StageGraph(
        graph_attr={"compound": "true", "rankdir": "TB", "labelloc": "t", "labeljust": "l",
                    "fontname": "Helvetica", "fontsize": "11", "label": _dot_text(*caption, left=True),
                    "nodesep": "0.25", "ranksep": "0.35"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "rounded,filled",
                   "height": "0.3", "margin": "0.08,0.03"},
        edge_attr={"fontname": "Helvetica", "fontsize": "8", "arrowsize": "0.6", "color": "#555555"},
    )


def _draw_all(model: Dataflow, caption: list[str], changed: frozenset[str]) -> StageGraph:
    g = _new_graph(caption)
    if len(model.edges) > _LARGE_EDGES:
        # dot places x coordinates by network simplex over one virtual node per rank an edge
        # crosses; gradients keep activations alive across hundreds of ranks, and without a limit
        # a 400-op gradient takes minutes instead of seconds.
        g.graph_attr["nslimit"] = "1"
    _emit(g, model.items, changed)
    for e in model.edges:
        attrs = {}
        if e.label:
            # xlabel, not label: a labelled edge makes dot split every rank in two, which made
            # a 300-op gradient take 25 s to lay out instead of 1 s.
            attrs["xlabel"] = _dot_text(e.label)
        if e.lhead:
            attrs["lhead"] = e.lhead
        if e.style:
            attrs["style"] = e.style
        g.edge(e.tail, e.head, **attrs)
    return g


def _parent_comparison(model: Dataflow, kind: str, parent) -> tuple[_Comparison | None, str]:
    if parent is None:
        return None, ""
    if parent.error or not parent.text:
        return None, f"not compared with {parent.name!r}: that stage has no text"
    parent_kind = _kind(parent.text)
    if parent_kind != kind:
        what = {"hlo": "XLA HLO", "mlir": "MLIR", "none": "not a module"}[parent_kind]
        return None, f"not compared with {parent.name!r}: it is {what}"
    try:
        parent_model = _model(parent)
    except GraphUnavailableError as err:
        return None, f"not compared with {parent.name!r}: it does not parse ({str(err).splitlines()[0]})"
    comparison = _compare(model, parent_model)
    if not comparison.changed and not comparison.removed:
        return comparison, f"no op changed since {parent.name!r}"
    colour = "orange (filled, or outlined for a fusion or call cluster)" if kind == "hlo" else "filled orange"
    parts = [f"{colour}: {_plural(len(comparison.changed), 'op')} new or changed since {parent.name!r}"]
    for what, counts in (("changed", comparison.modified), ("new", comparison.added),
                         ("removed", comparison.removed)):
        if counts:
            parts.append(f"{what}: {_tally(counts)}")
    line = "; ".join(parts)
    return comparison, line


_BOX_FILLS = {"group": _GROUP_FILL, "fold": _FOLD_FILL, "run": _FOLD_FILL}


def _box(graph: graphviz.Digraph, b: Box, stage: str, unit: str, linked: int) -> None:
    """``linked``: the boxes it has edges with, when they are too many to draw (0 otherwise)."""
    hub = [f"linked with {linked} boxes"] if linked else []
    if b.kind == "op":
        item = b.item
        more = [f"+{b.ops - 1} ops inside"] if b.ops > 1 and isinstance(item, Node) else []
        tooltip = [item.tooltip if isinstance(item, Node) else item.label]
        if item.scope:
            tooltip.append(f"name stack: {item.scope}")
        if isinstance(item, Node):
            attrs = {"label": _dot_text(*item.label, *more, *hub), "shape": _SHAPES[item.kind],
                     "fillcolor": CHANGED_FILL if b.changed else _FILLS[item.kind]}
            if item.root:
                attrs["peripheries"] = "2"
        else:  # an HLO fusion or call, with the instructions of its computation
            attrs = {"label": _dot_text(item.label, _plural(b.ops, "instruction"), *hub), "shape": "box",
                     "fillcolor": CHANGED_FILL if b.changed else _OP_FILL}
        graph.node(b.key, tooltip=_dot_text(*tooltip), **attrs)
        return
    if b.kind == "port":
        word = "from" if b.direction == "in" else "to"
        graph.node(b.key, label=_dot_text(f"{word} {b.label}", *hub), shape="ellipse", style="dashed,filled",
                   fillcolor="#ffffff", **{"class": "wbg-port"},
                   tooltip=_dot_text(f"values {'read from' if b.direction == 'in' else 'used by'} {b.label}, "
                                     "outside this group"))
        return
    lines = [b.label, _plural(b.members, "argument") if not b.ops else _plural(b.ops, unit)]
    if b.changed:
        lines.append(f"{b.changed} new/changed")
    lines += hub
    kinds = ", ".join(f"{name} \u00d7{n}" for name, n in b.kinds)
    graph.node(b.key, label=_dot_text(*lines), shape="box3d",
               fillcolor=CHANGED_FILL if b.changed else _BOX_FILLS[b.kind],
               id=_dot_text(GROUP_ID + b.path), **{"class": GROUP_CLASS},
               tooltip=_dot_text(f"{b.path}: {lines[1]}" + (f" ({kinds})" if kinds else ""),
                                 "open it: click it (in the panel's Graph tab) or "
                                 f"ex.graph({stage!r}, group={b.path!r})"))


def _draw_level(lv: Level, caption: list[str], stage: str, unit: str) -> StageGraph:
    degree: dict[str, set] = defaultdict(set)
    for link in lv.links:
        degree[link.tail].add(link.head)
        degree[link.head].add(link.tail)
    hubs = {key: len(linked) for key, linked in degree.items() if len(linked) > _HUB_LINKS}
    if hubs:
        caption = caption + [f"a box linked with more than {_HUB_LINKS} others is drawn without its edges; "
                             "its label counts them"]
    g = _new_graph(caption)
    if len(lv.boxes) > _LARGE_LEVEL:
        # dot's network simplex (ranks, then x) and crossing minimisation, cut short: a 10,000-op
        # gradient's top level (forward blocks down, backward blocks up, an edge between each pair) lays
        # out in a fifth of the time and no less readable
        g.graph_attr.update(nslimit="1", nslimit1="1", mclimit="0.3")
    by_cluster: dict[str, list[Box]] = defaultdict(list)
    for b in lv.boxes:
        by_cluster[b.cluster].append(b)

    def emit(graph, depth: int) -> None:
        for b in by_cluster["" if depth == 0 else lv.opened[depth - 1]]:
            _box(graph, b, stage, unit, hubs.get(b.key, 0))
        if depth < len(lv.opened):
            path = lv.opened[depth]
            with graph.subgraph(name=f"cluster_open{depth}") as sub:
                sub.attr(label=_dot_text(path), style="rounded", color="#6b8fc7", fontsize="10",
                         id=_dot_text(GROUP_ID + path), tooltip=_dot_text(
                             f"{path}: the only group at its level, opened in place; "
                             f"ex.graph({stage!r}, group={path!r}) draws it alone"), **{"class": GROUP_CLASS})
                emit(sub, depth + 1)

    emit(g, 0)
    for link in lv.links:
        if link.tail in hubs or link.head in hubs:
            continue
        attrs = {"penwidth": f"{1 + min(3.0, math.log2(link.values) / 2):.2f}"} if link.values > 1 else {}
        if link.call:
            attrs.update(style="dashed", xlabel=_dot_text("call"))
        elif link.values > 1:
            attrs["xlabel"] = _dot_text(f"\u00d7{link.values}")
        attrs["tooltip"] = _dot_text(_plural(link.values, "value"))
        g.edge(link.tail, link.head, **attrs)
    return g


def _level_caption(lv: Level, kind: str, max_ops: int, stage: str, draw_limit: int) -> list[str]:
    unit = "instructions" if kind == "hlo" else "ops"
    groups = [b for b in lv.boxes if b.kind in ("group", "run")]
    lines = []
    if lv.group:
        lines.append(f"group {lv.group!r}: {lv.ops} of the {lv.total} {unit}")
    elif lv.total <= max_ops:
        lines.append(f"{lv.total} {unit}: the top level of a hierarchy; at most {draw_limit} are drawn one by one, "
                     "whatever max_ops says (graphviz would take minutes to lay out more)")
    elif lv.total <= draw_limit:
        lines.append(f"{lv.total} {unit} > max_ops={max_ops}: the top level of a hierarchy; "
                     f"pass max_ops={lv.total} to draw every op")
    else:
        lines.append(f"{lv.total} {unit} > max_ops={max_ops}: the top level of a hierarchy; at most {draw_limit} are "
                     "drawn one by one, whatever max_ops says (graphviz would take minutes to lay out more)")
    if lv.by == "scope" and groups:
        lines.append(f"grouped by JAX's name stack: {_plural(len(groups), 'group')} here, each with its op count; "
                     f"open one by clicking it in the panel's Graph tab, or with "
                     f"ex.graph({stage!r}, group={groups[0].path!r})")
    elif lv.by == "scope":
        lines.append("no group inside it: its ops" if lv.group else
                     "JAX's name stack puts no op in a named scope here: the ops themselves, folded by kind past "
                     f"{LEVEL_LIMIT}")
    else:
        lines.append("this module has no name-stack locations (text without loc(...)): grouped by function "
                     f"and control-flow region, ops folded by kind past {LEVEL_LIMIT}")
    if lv.opened:
        lines.append(f"opened in place, as the only group at its level: {', '.join(lv.opened)}")
    if lv.folded:
        lines.append("[name]: the ops of one kind directly in a group, folded")
    if lv.runs:
        lines.append(f"[i-j]: a run of the level's entries (there are more than {LEVEL_LIMIT})")
    if lv.adopted and lv.by == "scope":
        lines.append(f"{lv.adopted} ops without a name stack (constants JAX makes at the boundary, ops passes add) "
                     "are counted in the group of their users")
    if any(b.kind == "port" for b in lv.boxes):
        lines.append("from ... / to ...: where values come from and go outside the group")
    lines.append("an edge stands for the values one box defines and the other uses (\u00d7n: n values)")
    return lines


def _checked_model(stage) -> tuple[Dataflow, str]:
    if stage.error or not stage.text:
        raise GraphUnavailableError(
            f"stage {stage.name!r} has no text to draw" + (" (it failed; see ex.error)" if stage.error else ""))
    kind = _kind(stage.text)
    if kind == "none":
        raise GraphUnavailableError(
            f"stage {stage.name!r} is not an MLIR or HLO module (group {stage.group!r}); "
            "draw a StableHLO, MLIR-pass or xla: stage instead")
    try:
        return _model(stage), kind
    except GraphUnavailableError as err:
        raise GraphUnavailableError(f"stage {stage.name!r} does not parse as MLIR: {err}") from err


def _changed_units(s: Scoped, changed: frozenset[str]) -> dict[int, int]:
    out: Counter = Counter()
    for node in changed:
        k = s.unit_of.get(node)
        if k is not None:
            out[k] += 1
    return out


def stage_level(stage, parent=None, group: str | None = None) -> Level:
    """One level of the hierarchy of ``stage``'s ops by JAX's name stack: the top level, or the group
    at path ``group`` (``"block_0/attn"``); ``workbench.analysis.graph.levels`` says what a level holds.
    ``parent`` counts each box's ops that are new or changed since it. UnknownNameError names the
    groups there are when ``group`` is none of them."""
    model, kind = _checked_model(stage)
    comparison, _ = _parent_comparison(model, kind, parent)
    s = _scoped(stage)
    return level(s, group, _changed_units(s, comparison.changed) if comparison else None)


def stage_graph(stage, parent=None, max_ops: int = 400, group: str | None = None, draw_limit: int = DRAW_LIMIT,
                layout_seconds: float | None = None) -> StageGraph:
    """The dataflow graph of ``stage`` (a ``Stage``), highlighting what changed since ``parent``.

    MLIR/StableHLO and XLA HLO stages can be drawn; a jaxpr or backend dump raises
    ``GraphUnavailableError``. ``parent`` (a ``Stage`` or None) is compared only when it holds the
    same kind of text. Up to ``max_ops`` ops (and never more than ``draw_limit``) every op is drawn;
    above, the top level of the stage's hierarchy by JAX's name stack (``stage_level``): one box per
    group with its op count, the values between them. ``group`` (a path such as ``"block_0/attn"``,
    as a box's tooltip names it) draws that group's level, whatever the size. The result renders with
    ``.pipe(format="svg")`` and shows as SVG in a notebook, laid out within ``layout_seconds``
    (``LAYOUT_SECONDS`` by default; past it ``GraphTooLargeError``, see ``StageGraph``).
    """
    model, kind = _checked_model(stage)
    comparison, compared = _parent_comparison(model, kind, parent)
    changed = comparison.changed if comparison else frozenset()
    total = model.op_count
    unit = "instructions" if kind == "hlo" else "ops"
    caption = [f"{stage.name}: {total} {unit}"]
    if compared:
        caption.append(compared)
    if group is None and total <= min(max_ops, draw_limit):
        caption.extend(model.notes)
        g = _draw_all(model, caption, changed)
        g.hint = (f"draw fewer ops: a max_ops below {total} draws the top level of its hierarchy by JAX's name "
                  f"stack (ex.graph({stage.name!r}, max_ops=100)), group=... one group of it; or draw a smaller stage")
    else:
        s = _scoped(stage)
        lv = level(s, group, _changed_units(s, changed))
        g = _draw_level(lv, caption + _level_caption(lv, kind, max_ops, stage.name, draw_limit), stage.name,
                        "instruction" if kind == "hlo" else "op")
        inside = next((b.path for b in lv.boxes if b.kind == "group"), None)
        g.hint = (f"draw one group of it: ex.graph({stage.name!r}, group={inside!r})" if inside else
                  "draw a smaller group or stage")
    if layout_seconds is not None:
        g.layout_seconds = layout_seconds
    return g
