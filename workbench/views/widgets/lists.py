"""The panel's list view of the patterns that apply to a stage, each a switch, rendered in the browser: it sends
what the user clicked as a message (``{"type": "toggle", ...}``) and leaves the decision to Python, which answers
by setting the traits. ``Messages`` is the anywidget base of the panel's widgets that send messages.
"""
from __future__ import annotations

import pathlib
from typing import Callable

import anywidget
import traitlets

from ...artifacts.assets import inlined
from .html import num

__all__ = ["ApplicableList", "Messages", "time_label"]

_HERE = pathlib.Path(__file__).parent


def time_label(seconds: float, cached: bool = False) -> str:
    """A step's time as the panel writes it: "12.3 ms", with "(cached)" when it was served from a cache (the
    time is then that of the step's first run)."""
    return f"{num(seconds * 1e3)} ms" + " (cached)" * bool(cached)


class Messages(anywidget.AnyWidget):
    """An anywidget whose browser-side messages go to one handler (set by the panel)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handler: Callable[[dict], None] | None = None
        self.on_msg(self._receive)

    def _receive(self, _widget, content, _buffers) -> None:
        if self.handler is not None and isinstance(content, dict):
            self.handler(content)


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
