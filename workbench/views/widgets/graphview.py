"""A graphviz SVG you can navigate: fit to the width, zoom (buttons, ctrl/cmd + wheel), pan (drag),
focus on an op's neighbourhood, and open the groups of a big stage's hierarchy.

Python sends graphviz's SVG once; the browser does the rest on it. Focus reads the SVG's own
structure (``<g class="node"><title>name</title>`` and ``<g class="edge"><title>a->b</title>``):
clicking a node shows only the nodes within ``hops`` edges of it (edges followed either way), the
edges among them and the clusters holding them, scaled to fit; "whole graph" (``focus = ""``) shows
every node again. The layout is graphviz's, of the whole graph: focus hides, it does not re-lay out.

A big stage is drawn one level of its hierarchy at a time (``ex.graph(stage, group=...)``): a box that
stands for a group has the SVG class ``wbg-group`` and the id ``wbg-group:<path>``. Shown with an
``opener`` (a function from a group's path to the SVG of its level), clicking such a box opens the
group: the browser sets ``group``, Python draws that level once, and a breadcrumb leads back. The
browser keeps every level it has shown (until the next ``show``), so going back, and opening a group
again, needs no call to Python.

A graph opens at a size its labels can be read at: fitted to the width of the view while that keeps its
smallest labels at 9 px or more on screen, at graphviz's own size (100%) otherwise, scrolled to the first
op filled ``changed_fill`` (new or changed since the parent stage), else to the top; and so anew when the
view's width changes, until the user zooms or pans. ``graph_svg`` takes a graph's caption out of the
drawing: the view shows it above the graph as its legend, wrapped to the view's width and readable at
any zoom.
"""
from __future__ import annotations

import html
import pathlib
import re

from collections import OrderedDict
from typing import Callable

import anywidget
import traitlets

from ...analysis.graph import CHANGED_FILL
from ...artifacts.assets import inlined
from ...errors import UnknownNameError, WorkbenchError

__all__ = ["GraphView", "MAX_HOPS", "graph_svg"]

_HERE = pathlib.Path(__file__).parent
_NODE = re.compile(r'<g id="[^"]*" class="node(?: [^"]*)?">\s*<title>([^<]*)</title>')
MAX_HOPS = 20
_KEPT_LEVELS = 16  # levels Python keeps drawn, for groups opened again from Python


class GraphView(anywidget.AnyWidget):
    """Graphviz's SVG with fit-to-width (how a graph wider than the view opens while its labels stay
    readable so), zoom, pan and click-to-focus. ``focus`` is the node shown with its ``hops``-edge neighbourhood ("" for
    the whole graph); the browser sets it on a click, Python may set it with ``focus_on``. ``group``
    is the group of a hierarchy whose level is shown ("" for the top level); the browser sets it when
    a group box is clicked, Python with ``open_group``."""

    _esm = inlined(_HERE / "graphview.js")  # with what it shares with the diff view (assets/widgetkit.*)
    _css = inlined(_HERE / "graphview.css")

    svg = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    focus = traitlets.Unicode("").tag(sync=True)
    hops = traitlets.Int(2).tag(sync=True)
    height = traitlets.Int(640).tag(sync=True)
    group = traitlets.Unicode("").tag(sync=True)  # the group asked for: a click sets it
    level = traitlets.Unicode("").tag(sync=True)  # the group whose level svg is
    openable = traitlets.Bool(False).tag(sync=True)  # an opener draws the groups' levels
    drawing = traitlets.Int(0).tag(sync=True)  # one more for each show: the browser drops the levels it kept
    changed_fill = traitlets.Unicode(CHANGED_FILL).tag(sync=True)  # a big graph opens at the first op so filled

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._opener: Callable[[str], str] | None = None
        self._levels: OrderedDict[str, str] = OrderedDict()
        self._setting = False

    @traitlets.validate("hops")
    def _valid_hops(self, proposal):
        k = proposal["value"]
        if not 1 <= k <= MAX_HOPS:
            raise traitlets.TraitError(f"hops must be between 1 and {MAX_HOPS} (edges from the focused node), not {k}")
        return k

    def show(self, svg: str, opener: Callable[[str], str] | None = None, group: str = "") -> None:
        """Display graphviz's SVG (``graph.pipe(format="svg")``), the whole graph. ``svg`` is the level
        of group ``group`` when the graph is a level of a hierarchy, and ``opener(path)`` returns the
        SVG of another group's level (``lambda g: ex.graph(stage, group=g).pipe(format="svg").decode()``):
        with one, a click on a group box opens it."""
        body = _svg_body(svg)
        self._opener = opener
        self._levels = OrderedDict([(group, body)])
        with self.hold_sync():
            self.message = ""
            self.openable = opener is not None
            self.drawing += 1
            self._show_level(group, body)

    def open_group(self, path: str) -> None:
        """Show the level of group ``path`` ("" for the top level) of the hierarchy shown. What the
        opener raises (UnknownNameError for a path that is no group) propagates, and nothing changes."""
        if self._opener is None:
            raise WorkbenchError("this graph was shown without an opener: GraphView.show(svg, opener=...) "
                                 "draws the groups' levels")
        body = self._level(path)
        with self.hold_sync():
            self.message = ""
            self._show_level(path, body)

    def show_message(self, text: str) -> None:
        """Replace the graph by a message (why there is no graph to draw)."""
        self._opener = None
        with self.hold_sync():
            self.svg = self.focus = self.level = ""
            self.openable = False
            self._set_group("")
            self.message = text

    def _level(self, path: str) -> str:
        body = self._levels.get(path)
        if body is None:
            body = _svg_body(self._opener(path))
            self._levels[path] = body
            while len(self._levels) > _KEPT_LEVELS:
                self._levels.popitem(last=False)
        self._levels.move_to_end(path)
        return body

    def _show_level(self, path: str, body: str) -> None:
        self.focus = ""
        self._set_group(path)
        self.level = path
        self.svg = body

    def _set_group(self, path: str) -> None:
        self._setting = True
        try:
            self.group = path
        finally:
            self._setting = False

    @traitlets.observe("group")
    def _group_clicked(self, change) -> None:
        """The browser opened a group (a click, or its breadcrumb): draw that level if not drawn yet."""
        if self._setting or self._opener is None:
            return
        path = change["new"]
        try:
            body = self._level(path)
        except Exception as e:  # a click's callback: say why (dot missing, a stage gone), the breadcrumb leads back
            with self.hold_sync():
                self.svg = self.focus = ""
                self.level = path
                self.message = f"cannot open group {path!r}: {e}"
            return
        with self.hold_sync():
            self.message = ""
            self.focus = ""
            self.level = path
            self.svg = body

    @property
    def nodes(self) -> list[str]:
        """The names of the drawn nodes (graphviz's node ids, as each node's SVG title holds them)."""
        return [html.unescape(m.group(1)) for m in _NODE.finditer(self.svg)]

    def focus_on(self, node: str, hops: int | None = None) -> None:
        """Show only ``node`` and what lies within ``hops`` edges of it; ``node=""``: the whole graph."""
        if node and node not in self.nodes:
            names = self.nodes
            raise UnknownNameError("graph node", node, names,
                                   f"the graph's {len(names)} nodes are GraphView.nodes"
                                   + (f" ({names[0]} ... {names[-1]})" if names else " (none: no graph shown)"))
        with self.hold_sync():
            if hops is not None:
                self.hops = hops
            self.focus = node


def graph_svg(graph) -> str:
    """The SVG of ``graph`` (a graphviz graph, e.g. ``ex.graph(stage)``) for ``GraphView.show``, its label
    (the caption: what is drawn, what changed, how to read it) laid out apart from the graph: its lines go
    into a ``<desc class="wbg-legend">`` that the view shows above the graph, wrapped to the view's width
    and readable at any zoom, where graphviz would draw them at the graph's scale (and widen a narrow
    graph to their width). ``graph`` is left as it was; an HTML label (``<...>``) stays in the drawing."""
    label = graph.graph_attr.get("label")
    lines = _label_lines(str(label)) if label and not str(label).startswith("<") else []
    if lines:
        del graph.graph_attr["label"]
    try:
        svg = graph.pipe(format="svg").decode()
    finally:
        if lines:
            graph.graph_attr["label"] = label
    body = _svg_body(svg)
    if not lines:
        return body
    end = body.index(">") + 1  # after the <svg ...> tag: its attributes hold no ">"
    legend = '<desc class="wbg-legend">' + html.escape("\n".join(lines), quote=False) + "</desc>"
    return body[:end] + legend + body[end:]


def _label_lines(label: str) -> list[str]:
    r"""A DOT label's lines: ``\l``, ``\n`` and ``\r`` end a line, ``\\`` is a backslash."""
    lines, line, i = [], [], 0
    while i < len(label):
        c, nxt = label[i], label[i + 1:i + 2]
        if c == "\\" and nxt in ("l", "n", "r"):
            lines.append("".join(line))
            line, i = [], i + 2
        elif c == "\\" and nxt == "\\":
            line.append("\\")
            i += 2
        else:
            line.append(c)
            i += 1
    if line:
        lines.append("".join(line))
    return [x for x in lines if x.strip()]


def _svg_body(svg: str) -> str:
    """graphviz's SVG without its XML prologue and doctype."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError("not an SVG document: no <svg> element (pass graphviz's output, "
                         "graph.pipe(format='svg').decode())")
    return svg[start:]
