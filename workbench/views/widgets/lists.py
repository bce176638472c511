"""``Messages``, the anywidget base of the panel's widgets that send messages, and ``time_label``."""
from __future__ import annotations

from typing import Callable

import anywidget

from .html import num

__all__ = ["Messages", "time_label"]


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

