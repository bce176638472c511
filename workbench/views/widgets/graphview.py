"""A graphviz SVG you can navigate: fit to the width, zoom (buttons, ctrl/cmd + wheel), pan (drag),
and focus on an op's neighbourhood.

Python sends graphviz's SVG once; the browser does the rest on it. Focus reads the SVG's own
structure (``<g class="node"><title>name</title>`` and ``<g class="edge"><title>a->b</title>``):
clicking a node shows only the nodes within ``hops`` edges of it (edges followed either way), the
edges among them and the clusters holding them, scaled to fit; "whole graph" (``focus = ""``) shows
every node again. The layout is graphviz's, of the whole graph: focus hides, it does not re-lay out.
"""
from __future__ import annotations

import html
import pathlib
import re

import anywidget
import traitlets

from ...errors import UnknownNameError

__all__ = ["GraphView", "MAX_HOPS"]

_HERE = pathlib.Path(__file__).parent
_NODE = re.compile(r'<g id="[^"]*" class="node">\s*<title>([^<]*)</title>')
MAX_HOPS = 20


class GraphView(anywidget.AnyWidget):
    """Graphviz's SVG with fit-to-width (the default when the graph is wider than the view), zoom,
    pan and click-to-focus. ``focus`` is the node shown with its ``hops``-edge neighbourhood ("" for
    the whole graph); the browser sets it on a click, Python may set it with ``focus_on``."""

    _esm = _HERE / "graphview.js"
    _css = _HERE / "graphview.css"

    svg = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    focus = traitlets.Unicode("").tag(sync=True)
    hops = traitlets.Int(2).tag(sync=True)
    height = traitlets.Int(640).tag(sync=True)

    @traitlets.validate("hops")
    def _valid_hops(self, proposal):
        k = proposal["value"]
        if not 1 <= k <= MAX_HOPS:
            raise traitlets.TraitError(f"hops must be between 1 and {MAX_HOPS} (edges from the focused node), not {k}")
        return k

    def show(self, svg: str) -> None:
        """Display graphviz's SVG (``graph.pipe(format="svg")``), the whole graph."""
        start = svg.find("<svg")
        if start < 0:
            raise ValueError("not an SVG document: no <svg> element (pass graphviz's output, "
                             "graph.pipe(format='svg').decode())")
        with self.hold_sync():
            self.message = ""
            self.focus = ""
            self.svg = svg[start:]  # without the XML prologue and doctype

    def show_message(self, text: str) -> None:
        """Replace the graph by a message (why there is no graph to draw)."""
        with self.hold_sync():
            self.svg = self.focus = ""
            self.message = text

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
