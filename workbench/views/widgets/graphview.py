"""The panel's Graph tab: the dataflow graph of one stage, the diff's right-hand stage B unless the user picks another,
to navigate. ``GraphTab`` is the tab, ``GraphView`` its view component ("graph", extensions/hlo-workbench-lab/src/
components/graph.ts: fit to the width, zoom, pan, focus on an op's neighbourhood, open a big stage's groups), and
``graph_svg`` makes the SVG it shows.

The stage picker's first entry follows B ("cse#1 (B of the diff)"); the others are the stages that can be drawn
(StableHLO or the text given, the MLIR stages, XLA's HLO stages), in order. Picking one draws it (``ex.graph(stage)``,
the line the panel shows) on the panel's worker. A stage picked stays picked when the Exploration changes (a toggle
re-ran the pipeline) while the new one has it, or while XLA compiles the XLA stage picked; otherwise the tab follows B
again. The tab draws when shown and anew when the stage to draw, the Exploration or the XLA stages' arrival changes
what it shows. A big stage is drawn one level of its hierarchy at a time (``ex.graph(stage, group=...)``): a click on
a group's box (SVG class ``wbg-group``, id ``wbg-group:<path>``) asks Python for that level (action "open"), once;
the browser keeps the levels it has shown until the next drawing.
"""
from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable

from ...analysis.graph import CHANGED_FILL
from ...errors import UnknownNameError, WorkbenchError
from ...exploration import Exploration
from . import actions
from .component import Component
from .pending import late_name

__all__ = ["GraphTab", "GraphView", "MAX_HOPS", "drawable", "graph_svg"]

_NODE = re.compile(r'<g id="[^"]*" class="node(?: [^"]*)?">\s*<title>([^<]*)</title>')
MAX_HOPS = 20
B = ""  # the picker's value that follows the diff's right-hand stage


def drawable(stage) -> bool:
    """Whether ``ex.graph`` draws ``stage``: an MLIR module (StableHLO, the text given, an MLIR pass's
    output) or XLA's HLO, that did not fail; not the jaxpr, not a backend dump."""
    return stage.group in ("trace", "mlir", "xla") and stage.name != "jaxpr" and not stage.error


class GraphTab:
    """The tab (``widget``, the ``view``). ``show`` is called each time the panel shows a pair or a tab
    (``visible``: this one is selected); ``stage`` is the stage to draw, ``drawn`` the one whose graph (or why it
    has none) the view shows; the view's data has the picker's entries (``stages``: label, stage) and ``picked``."""

    def __init__(self, name: str, submit: Callable):
        self.name, self._submit = name, submit
        self.widget = self.view = GraphView(on_pick=self._pick)
        self.widget.add_class("wb-graph")
        self.drawn = ""
        self._ex: Exploration | None = None
        self._right, self._pending = "", False
        self._pinned = B  # the stage picked; B: the diff's right-hand stage
        self._listed: tuple | None = None  # (Exploration, B, pending) the picker lists the stages of
        self._shown: tuple | None = None  # what the view shows, or is about to: see _key

    @property
    def stage(self) -> str:
        """The stage the tab draws: the one picked, or B."""
        return self._pinned or self._right

    def show(self, ex: Exploration, right: str, *, visible: bool, pending: bool) -> None:
        """Follow the panel's Exploration and B; shown (``visible``), draw what is not drawn yet."""
        self._ex, self._right, self._pending = ex, right, pending
        self._list()
        if visible and self._shown != self._key():
            self.draw()

    def pick(self, stage: str | None) -> None:
        """Draw ``stage`` (a stage's name; None or "": B of the diff) and keep it picked."""
        names = [v for _, v in self.view.data["stages"]]
        if (stage or B) not in names:
            st = self._ex.stage(stage)  # UnknownNameError names the stages there are
            raise WorkbenchError(f"stage {st.name!r} cannot be drawn: the graph draws StableHLO, MLIR and XLA "
                                 f"HLO stages that did not fail ({', '.join(n for n in names if n)})")
        self._pick(stage or B)

    def _pick(self, stage: str) -> None:
        """A pick in the picker (or ``pick``'s): drawn, and kept picked."""
        if self._ex is not None:
            self._pinned = stage
            self.view.set(picked=stage)
            self.draw()

    def draw(self) -> None:
        """Draw the stage to draw, on the panel's worker."""
        self._shown = self._key()
        act = actions.graph(self.name, self.stage)
        self._submit(act.label, act.python, self._load, busy=False)

    def _key(self) -> tuple:
        """What the view shows: the Exploration, the stage, and whether XLA's stages were on their way for it (an
        XLA stage): when they arrive, it is drawn anew."""
        return id(self._ex), self.stage, self._pending and late_name(self.stage)

    def _list(self) -> None:
        """The picker: B first, then every stage that can be drawn; the stage picked kept while it is there."""
        ex, pending = self._ex, self._pending
        if self._listed is not None and self._listed[0] is ex and self._listed[1:] == (self._right, pending):
            return
        self._listed = (ex, self._right, pending)
        names = [s.name for s in (ex.pipeline_stages if pending else ex.stages) if drawable(s)]  # stages waits for XLA
        if self._pinned not in names and not (pending and late_name(self._pinned)):
            self._pinned = B
        options = [(f"{self._right} (B of the diff)", B)] + [(n, n) for n in names]
        if self._pinned and self._pinned not in names:  # an XLA stage picked, on its way
            options.append((f"{self._pinned} (XLA is compiling)", self._pinned))
        self.view.set(stages=options, picked=self._pinned)

    def _load(self) -> None:
        ex, stage = self._ex, self.stage
        self._shown, self.drawn = self._key(), stage
        if self._pending and late_name(stage):
            self.view.show_message(f"XLA is compiling: stage {stage!r} is drawn when its stages arrive")
            return
        try:
            svg = graph_svg(actions.graph(self.name, stage).call(ex))
        except (ImportError, WorkbenchError) as e:  # graphviz missing; a stage it cannot draw, or not in dot's time
            self.view.show_message(f"the graph view is not available: {e}" if isinstance(e, ImportError) else str(e))
            return
        self.view.show(svg, opener=lambda g: graph_svg(ex.graph(stage, group=g or None)))


class GraphView(Component):
    """Graphviz's SVG (``svg``) or why there is none (``message``). ``focus`` is the node shown with its
    ``hops``-edge neighbourhood ("" for the whole graph): a click in the browser sets it, or ``focus_on``. ``level``
    is the group of a hierarchy whose level is shown ("" for the top level): a click on a group's box opens one, or
    ``open_group``. In the Graph tab the component shows the tab's stage picker too: a pick calls ``on_pick``."""

    svg = property(lambda self: self.data["svg"])
    message = property(lambda self: self.data["message"])
    level = property(lambda self: self.data["level"])
    focus = property(lambda self: self.data["focus"])
    hops = property(lambda self: self.data["hops"])

    def __init__(self, svg: str = "", *, on_pick: Callable[[str], None] | None = None, **kwargs):
        super().__init__("graph", {"svg": _svg_body(svg) if svg else "", "message": "", "level": "", "openable": False,
                                   "drawing": 0, "focus": "", "hops": 2, "max_hops": MAX_HOPS,
                                   "changed_fill": CHANGED_FILL}, on_action=self._on_action, **kwargs)
        self._on_pick, self._lock = on_pick, threading.Lock()
        self._opener: Callable[[str], str] | None = None
        self._levels: dict[str, str] = {}

    def set(self, **facts) -> None:
        """Send these facts with the others (the panel's worker and the kernel's thread both send); the SVG goes
        once, as a blob (component.py), not again with each fact."""
        with self._lock:
            self.data = {**self.data, **facts}

    def show(self, svg: str, opener: Callable[[str], str] | None = None, group: str = "") -> None:
        """Display graphviz's SVG (``graph.pipe(format="svg")``), the whole graph. ``svg`` is the level of group
        ``group`` when the graph is a level of a hierarchy, and ``opener(path)`` returns the SVG of another group's
        level (``lambda g: ex.graph(stage, group=g).pipe(format="svg").decode()``): with one, a click on a group's
        box opens it."""
        body = _svg_body(svg)
        self._opener, self._levels = opener, {group: body}
        self.set(svg=body, level=group, message="", focus="", openable=opener is not None,
                 drawing=self.data["drawing"] + 1)

    def open_group(self, path: str) -> None:
        """Show the level of group ``path`` ("" for the top level) of the hierarchy shown. What the opener raises
        (UnknownNameError for a path that is no group) propagates, and nothing changes."""
        if self._opener is None:
            raise WorkbenchError("this graph was shown without an opener: GraphView.show(svg, opener=...) "
                                 "draws the groups' levels")
        if path not in self._levels:  # kept until the next show, for the group opened again
            self._levels[path] = _svg_body(self._opener(path))
        self.set(svg=self._levels[path], level=path, message="", focus="")

    def show_message(self, text: str) -> None:
        """Replace the graph by a message (why there is no graph to draw)."""
        self._opener = None
        self.set(svg="", level="", focus="", openable=False, message=text)

    @property
    def nodes(self) -> list[str]:
        """The names of the drawn nodes (graphviz's node ids, as each node's SVG title holds them)."""
        return [html.unescape(m.group(1)) for m in _NODE.finditer(self.svg)]

    def focus_on(self, node: str, hops: int | None = None) -> None:
        """Show only ``node`` and what lies within ``hops`` edges of it; ``node=""``: the whole graph."""
        if hops is not None and not 1 <= hops <= MAX_HOPS:
            raise ValueError(f"hops must be between 1 and {MAX_HOPS} (edges from the focused node), not {hops}")
        names = self.nodes
        if node and node not in names:
            raise UnknownNameError("graph node", node, names, f"the graph's {len(names)} nodes are GraphView.nodes"
                                   + (f" ({names[0]} ... {names[-1]})" if names else " (none: no graph shown)"))
        self.set(focus=node, hops=hops or self.hops)

    def _on_action(self, action: str, payload: dict) -> None:
        if action == "pick" and self._on_pick is not None:
            self._on_pick(str(payload.get("stage", "")))
        elif action == "focus":  # what the browser shows already: noted, not sent back
            self.data.update(focus=str(payload.get("node", "")), hops=int(payload.get("hops", self.hops)))
        elif action == "open" and self._opener is not None:
            path = str(payload.get("group", ""))
            try:
                self.open_group(path)
            except Exception as e:  # noqa: BLE001 -- a click's: say why (dot missing, a stage gone), the kernel goes on
                self.set(svg="", focus="", level=path, message=f"cannot open group {path!r}: {e}")


def graph_svg(graph) -> str:
    """The SVG of ``graph`` (a graphviz graph, e.g. ``ex.graph(stage)``) for ``GraphView.show``, its label (the
    caption: what is drawn, what changed, how to read it) laid out apart from the graph: its lines go into a
    ``<desc class="wbg-legend">`` that the view shows above the graph, wrapped to the view's width and readable at
    any zoom, where graphviz would draw them at the graph's scale (and widen a narrow graph to their width).
    ``graph`` is left as it was; an HTML label (``<...>``) stays in the drawing."""
    label = graph.graph_attr.get("label")
    # a DOT label's lines: \l, \n and \r end a line, \\ is a backslash
    lines = [] if not label or str(label).startswith("<") else [
        line for line in re.sub(r"\\([\\lnr])", lambda m: "\\" if m[1] == "\\" else "\n", str(label)).split("\n")
        if line.strip()]
    if lines:
        del graph.graph_attr["label"]
    try:
        body = _svg_body(graph.pipe(format="svg").decode())
    finally:
        if lines:
            graph.graph_attr["label"] = label
    if not lines:
        return body
    end = body.index(">") + 1  # after the <svg ...> tag: its attributes hold no ">"
    return body[:end] + '<desc class="wbg-legend">' + html.escape("\n".join(lines), quote=False) + "</desc>" + body[end:]


def _svg_body(svg: str) -> str:
    """graphviz's SVG without its XML prologue and doctype."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError("not an SVG document: no <svg> element (pass graphviz's output, "
                         "graph.pipe(format='svg').decode())")
    return svg[start:]
