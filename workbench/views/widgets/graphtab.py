"""The panel's Graph tab: the dataflow graph of one stage, the diff's right-hand stage B unless the user
picks another.

A dropdown says which stage is drawn. Its first entry follows B ("cse#1 (B of the diff)"); the others
are the stages that can be drawn (StableHLO or the text given, the MLIR stages, XLA's HLO stages), in
order. Picking one draws it (``ex.graph(stage)``, the line the panel shows) on the panel's worker; a
big stage is drawn one level of its hierarchy at a time, its groups opened by a click (``GraphView``).
A stage picked stays picked when the Exploration changes (a toggle re-ran the pipeline) while the new
one has it, or while XLA compiles the XLA stage picked; otherwise the tab follows B again. The tab
draws when shown and anew when the stage to draw, the Exploration or the XLA stages' arrival changes
what it shows. The graph's caption is its legend, above it (``graph_svg``).
"""
from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W

from ...errors import WorkbenchError
from ...exploration import Exploration
from . import actions
from .graphview import GraphView, graph_svg
from .pending import late_name

__all__ = ["GraphTab", "drawable"]

B = ""  # the dropdown's value that follows the diff's right-hand stage


def drawable(stage) -> bool:
    """Whether ``ex.graph`` draws ``stage``: an MLIR module (StableHLO, the text given, an MLIR pass's
    output) or XLA's HLO, that did not fail; not the jaxpr, not a backend dump."""
    return stage.group in ("trace", "mlir", "xla") and stage.name != "jaxpr" and not stage.error


class GraphTab:
    """The tab (``widget``): the stage ``picker`` above the graph ``view``. ``show`` is called each time the
    panel shows a pair or a tab (``visible``: this one is selected); ``stage`` is the stage to draw,
    ``drawn`` the one whose graph (or why it has none) the view shows."""

    def __init__(self, name: str, submit: Callable):
        self.name, self._submit = name, submit
        self.view = GraphView()
        self.picker = W.Dropdown(description="stage", style={"description_width": "initial"},
                                 layout=W.Layout(width="420px", max_width="100%"))
        self.picker.observe(self._on_pick, "value")
        self.widget = W.VBox([self.picker, self.view])
        self.widget.add_class("wb-graph")
        self.drawn = ""
        self._ex: Exploration | None = None
        self._right, self._pending = "", False
        self._pinned = B  # the stage picked in the dropdown; B: the diff's right-hand stage
        self._listed: tuple | None = None  # (Exploration, B, pending) the dropdown lists the stages of
        self._shown: tuple | None = None  # what the view shows, or is about to: see _key
        self._setting = False

    @property
    def stage(self) -> str:
        """The stage the tab draws: the one picked, or B."""
        return self._pinned or self._right

    def show(self, ex: Exploration, right: str, *, visible: bool, pending: bool, again: bool = False) -> None:
        """Follow the panel's Exploration and B; shown (``visible``), draw what is not drawn yet (``again``:
        draw it anew all the same)."""
        self._ex, self._right, self._pending = ex, right, pending
        self._list()
        if visible and (again or self._shown != self._key()):
            self.draw()

    def pick(self, stage: str | None) -> None:
        """Draw ``stage`` (a stage's name; None or "": B of the diff) and keep it picked."""
        names = [v for _, v in self.picker.options]
        value = stage or B
        if value not in names:
            st = self._ex.stage(value)  # UnknownNameError names the stages there are
            raise WorkbenchError(f"stage {st.name!r} cannot be drawn: the graph draws StableHLO, MLIR and XLA "
                                 f"HLO stages that did not fail ({', '.join(n for n in names if n)})")
        if self.picker.value == value:
            self._pinned = value
            self.draw()
        else:
            self.picker.value = value  # _on_pick draws it

    def draw(self) -> None:
        """Draw the stage to draw, on the panel's worker."""
        self._shown = self._key()
        act = actions.graph(self.name, self.stage)
        self._submit(act.label, act.python, self._load, busy=False)

    def _key(self) -> tuple:
        """What the view shows: the Exploration, the stage, and whether XLA's stages were on their way
        for it (an XLA stage): when they arrive, it is drawn anew."""
        stage = self.stage
        return id(self._ex), stage, self._pending and late_name(stage)

    def _list(self) -> None:
        """The dropdown: B first, then every stage that can be drawn; the stage picked kept while it is there."""
        ex, pending = self._ex, self._pending
        if self._listed is not None and self._listed[0] is ex and self._listed[1:] == (self._right, pending):
            return
        self._listed = (ex, self._right, pending)
        stages = ex.pipeline_stages if pending else ex.stages  # ex.stages waits for XLA's
        names = [s.name for s in stages if drawable(s)]
        if self._pinned not in names and not (pending and late_name(self._pinned)):
            self._pinned = B
        options = [(f"{self._right} (B of the diff)", B)] + [(n, n) for n in names]
        if self._pinned and self._pinned not in names:  # an XLA stage picked, on its way
            options.append((f"{self._pinned} (XLA is compiling)", self._pinned))
        self._setting = True
        try:
            self.picker.options = options
            self.picker.value = self._pinned
        finally:
            self._setting = False

    def _on_pick(self, change) -> None:
        if self._setting or self._ex is None:
            return
        self._pinned = change["new"] or B
        self.draw()

    def _load(self) -> None:
        ex, stage = self._ex, self.stage
        self._shown, self.drawn = self._key(), stage
        if self._pending and late_name(stage):
            self.view.show_message(f"XLA is compiling: stage {stage!r} is drawn when its stages arrive")
            return
        try:
            svg = graph_svg(actions.graph(self.name, stage).call(ex))
        except ImportError as e:
            self.view.show_message(f"the graph view is not available: {e}")
            return
        except WorkbenchError as e:
            self.view.show_message(str(e))
            return
        self.view.show(svg, opener=lambda g: graph_svg(ex.graph(stage, group=g or None)))
