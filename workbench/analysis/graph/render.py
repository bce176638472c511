"""Comparing a stage's dataflow with its parent's, and drawing it with graphviz: ``stage_graph``."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import graphviz

from ...errors import GraphUnavailableError, ModuleParseError
from ...ir.hlo import read_hlo
from ...ir.ops import op_counts_by_function
from ...ir.text import input_kind
from .hlo import HloReader
from .mlir import MlirReader
from .model import Cluster, Dataflow, Node

__all__ = ["stage_graph", "CHANGED_FILL"]

CHANGED_FILL = "#ffb454"
_OP_FILL = "#ffffff"
_CONST_FILL = "#eeeeee"
_ARG_FILL = "#dbe8f5"
_RETURN_FILL = "#e3f1dc"
_LARGE_EDGES = 200


def _kind(text: str) -> str:
    """``"mlir"`` or ``"hlo"`` for the texts that can be drawn, else ``"none"``."""
    kind = input_kind(text)
    return kind if kind in ("mlir", "hlo") else "none"


@lru_cache(maxsize=32)
def _dataflow(text: str) -> Dataflow:
    """The model of one stage's text; cached since a stage is drawn both as itself and as a parent."""
    ops = op_counts_by_function(text)
    if _kind(text) == "hlo":
        return HloReader(read_hlo(text), ops).read()
    from ...pipeline.exported import readable_module

    try:
        module = readable_module(text)
    except ModuleParseError as err:
        raise GraphUnavailableError(str(err)) from err
    return MlirReader(ops).read(module)


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


def _new_graph(caption: list[str]) -> graphviz.Digraph:
    return graphviz.Digraph(
        graph_attr={"compound": "true", "rankdir": "TB", "labelloc": "t", "labeljust": "l",
                    "fontname": "Helvetica", "fontsize": "11", "label": _dot_text(*caption, left=True),
                    "nodesep": "0.25", "ranksep": "0.35"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "rounded,filled",
                   "height": "0.3", "margin": "0.08,0.03"},
        edge_attr={"fontname": "Helvetica", "fontsize": "8", "arrowsize": "0.6", "color": "#555555"},
    )


def _draw_all(model: Dataflow, caption: list[str], changed: frozenset[str]) -> graphviz.Digraph:
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


def _draw_collapsed(model: Dataflow, caption: list[str], changed: frozenset[str]) -> graphviz.Digraph:
    g = _new_graph(caption)
    per_function = Counter(n.function for n in model.signed() if n.id in changed)
    ids = {f.name: f"f{i}" for i, f in enumerate(model.functions)}
    for f in model.functions:
        lines = [f.label, f"{f.ops} ops"]
        if per_function[f.name]:
            lines.append(f"{per_function[f.name]} new/changed")
        g.node(ids[f.name], label=_dot_text(*lines), shape="box",
               fillcolor=CHANGED_FILL if per_function[f.name] else _OP_FILL)
    for f in model.functions:
        for callee, count in f.calls:
            if callee in ids:
                attrs = {"xlabel": _dot_text(f"\u00d7{count}")} if count > 1 else {}
                g.edge(ids[f.name], ids[callee], style="dashed", **attrs)
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
        parent_model = _dataflow(parent.text)
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


def stage_graph(stage, parent=None, max_ops: int = 400) -> graphviz.Digraph:
    """The dataflow graph of ``stage`` (a ``Stage``), highlighting what changed since ``parent``.

    MLIR/StableHLO and XLA HLO stages can be drawn; a jaxpr or backend dump raises
    ``GraphUnavailableError``. ``parent`` (a ``Stage`` or None) is compared only when it holds the
    same kind of text. Above ``max_ops`` ops the graph has one node per function (computation);
    pass a larger ``max_ops`` to see every op. The result renders with ``.pipe(format="svg")`` and
    shows as SVG in a notebook.
    """
    if stage.error or not stage.text:
        raise GraphUnavailableError(
            f"stage {stage.name!r} has no text to draw" + (" (it failed; see ex.error)" if stage.error else ""))
    kind = _kind(stage.text)
    if kind == "none":
        raise GraphUnavailableError(
            f"stage {stage.name!r} is not an MLIR or HLO module (group {stage.group!r}); "
            "draw a StableHLO, MLIR-pass or xla: stage instead")
    try:
        model = _dataflow(stage.text)
    except GraphUnavailableError as err:
        raise GraphUnavailableError(f"stage {stage.name!r} does not parse as MLIR: {err}") from err
    comparison, compared = _parent_comparison(model, kind, parent)
    changed = comparison.changed if comparison else frozenset()
    total = model.op_count
    unit = "instructions" if kind == "hlo" else "ops"
    caption = [f"{stage.name}: {total} {unit}"]
    if compared:
        caption.append(compared)
    if total <= max_ops:
        caption.extend(model.notes)
    if total > max_ops:
        per = "computation" if kind == "hlo" else "function"
        caption.append(f"collapsed to one node per {per}: {total} {unit} > max_ops={max_ops}; "
                       f"pass max_ops={total} to draw every op")
        return _draw_collapsed(model, caption, changed)
    return _draw_all(model, caption, changed)
