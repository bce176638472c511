"""The panel's list views, rendered in the browser: the stages, and the patterns that apply to a stage, each a
switch.

They send what the user clicked as a message (``{"type": "pick", ...}``, ``{"type": "toggle", ...}``)
and leave the decision to Python, which answers by setting the traits.
"""
from __future__ import annotations

import pathlib
from typing import Callable

import anywidget
import traitlets

from ...artifacts.assets import inlined
from ...stages import Stage
from .html import num

__all__ = ["StageList", "ApplicableList", "stage_rows", "time_label"]

_HERE = pathlib.Path(__file__).parent


def time_label(seconds: float, cached: bool = False) -> str:
    """A step's time as the panel writes it: "12.3 ms", with "(cached)" when it was served from a cache (the
    time is then that of the step's first run)."""
    return f"{num(seconds * 1e3)} ms" + " (cached)" * bool(cached)


def stage_rows(stages: list[Stage]) -> list[dict]:
    """What the stage list shows of each stage; ``time`` as written (``html.num``), marked cached when
    the step was served from the cache (its ms are then those of the step's first run); ``edit`` a hand
    edit's mark ("text": its text was replaced, "inserted": its pass was added, "after-removed": the pass before
    it was left out)."""
    return [{"name": s.name, "group": s.group, "parent": s.parent,
             "state": "error" if s.error else ("changed" if s.changed else "unchanged"),
             "ms": None if s.seconds is None else round(s.seconds * 1e3, 2), "cached": s.cached, "lines": s.lines,
             "time": "" if s.seconds is None else time_label(s.seconds, s.cached),
             "error": (s.error or "").splitlines()[0] if s.error else "", "edit": s.edit}
            for s in stages]


class Messages(anywidget.AnyWidget):
    """An anywidget whose browser-side messages go to one handler (set by the panel)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handler: Callable[[dict], None] | None = None
        self.on_msg(self._receive)

    def _receive(self, _widget, content, _buffers) -> None:
        if self.handler is not None and isinstance(content, dict):
            self.handler(content)


class StageList(Messages):
    """Every stage with its group, time, lines and state (changed, unchanged, failed). Clicking a stage
    asks for it on the right and its parent on the left; shift-click asks for it on the left. ``fold``
    folds it to a strip, as its button does. ``pending`` names a group still on its way (XLA's
    stages while XLA compiles), shown as its marker with ``loading``'s spinner."""

    _esm = _HERE / "stagelist.js"
    _css = inlined(_HERE / "lists.css")  # with what it shares with the other views (assets/widgetkit.css)

    stages = traitlets.List(traitlets.Dict()).tag(sync=True)
    left = traitlets.Unicode("").tag(sync=True)
    right = traitlets.Unicode("").tag(sync=True)
    hide_unchanged = traitlets.Bool(False).tag(sync=True)
    loading = traitlets.Unicode("").tag(sync=True)  # a spinner row with this text after the rows
    pending = traitlets.Unicode("").tag(sync=True)  # the group on its way ("xla" while XLA compiles)
    # "folded": a narrow strip; "open"; "auto": folded while the panel is narrower than 760 px. Open in a panel
    # under 1000 px, the list is compact (names only; stagelist.js decides it in the browser, by the panel's width)
    fold = traitlets.Enum(("auto", "folded", "open"), "auto").tag(sync=True)

    def visible(self) -> list[str]:
        """The names the list shows now (the hide-unchanged filter keeps the two picked stages)."""
        return [r["name"] for r in self.stages
                if not self.hide_unchanged or r["state"] != "unchanged" or r["name"] in (self.left, self.right)]


class ApplicableList(Messages):
    """The patterns that change a stage when applied alone (``rows``: name, group and ms as written), each with
    a switch: a click sends ``{"type": "toggle", "names": [name], "on": ...}`` to the handler (the panel's toggle,
    as the Passes tab's switches do); ``enabled`` names the patterns on in ``variable``'s pipeline now, ``busy``
    holds the switches while the panel's actions wait."""

    _esm = _HERE / "applicable.js"
    _css = inlined(_HERE / "lists.css")

    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    enabled = traitlets.List(traitlets.Unicode()).tag(sync=True)
    variable = traitlets.Unicode("ex").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
