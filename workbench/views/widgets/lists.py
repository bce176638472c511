"""The panel's two list views, rendered in the browser: the stages, and a toggle list (patterns, XLA passes).

Both send what the user clicked as a message (``{"type": "pick", ...}``, ``{"type": "toggle", ...}``,
``{"type": "reset"}``) and leave the decision to Python, which answers by setting the traits.
"""
from __future__ import annotations

import pathlib
from typing import Callable

import anywidget
import traitlets

from ...stages import Stage

__all__ = ["StageList", "ToggleList", "stage_rows"]

_HERE = pathlib.Path(__file__).parent


def stage_rows(stages: list[Stage]) -> list[dict]:
    """What the stage list shows of each stage."""
    return [{"name": s.name, "group": s.group, "parent": s.parent,
             "state": "error" if s.error else ("changed" if s.changed else "unchanged"),
             "ms": None if s.seconds is None else round(s.seconds * 1e3, 2), "lines": s.lines,
             "error": (s.error or "").splitlines()[0] if s.error else ""}
            for s in stages]


class _Messages(anywidget.AnyWidget):
    """An anywidget whose browser-side messages go to one handler (set by the panel)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handler: Callable[[dict], None] | None = None
        self.on_msg(self._receive)

    def _receive(self, _widget, content, _buffers) -> None:
        if self.handler is not None and isinstance(content, dict):
            self.handler(content)


class StageList(_Messages):
    """Every stage with its group, time, lines and state (changed, unchanged, failed). Clicking a stage
    asks for it on the right and its parent on the left; shift-click asks for it on the left."""

    _esm = _HERE / "stagelist.js"
    _css = _HERE / "lists.css"

    stages = traitlets.List(traitlets.Dict()).tag(sync=True)
    left = traitlets.Unicode("").tag(sync=True)
    right = traitlets.Unicode("").tag(sync=True)
    hide_unchanged = traitlets.Bool(False).tag(sync=True)
    loading = traitlets.Unicode("").tag(sync=True)

    def visible(self) -> list[str]:
        """The names the list shows now (the hide-unchanged filter keeps the two picked stages)."""
        return [r["name"] for r in self.stages
                if not self.hide_unchanged or r["state"] != "unchanged" or r["name"] in (self.left, self.right)]


class ToggleList(_Messages):
    """Named switches in groups, with client-side search: ``items`` are ``[name, group, on by default]``,
    ``enabled`` the names on now. Those that differ from their default are highlighted."""

    _esm = _HERE / "togglelist.js"
    _css = _HERE / "lists.css"

    items = traitlets.List().tag(sync=True)
    enabled = traitlets.List(traitlets.Unicode()).tag(sync=True)
    noun = traitlets.Unicode("pattern").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)

    def changed_from_default(self) -> list[str]:
        on = set(self.enabled)
        return [name for name, _group, default in self.items if (name in on) != bool(default)]
