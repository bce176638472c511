"""The diff of two stages, side by side or unified, virtualized in the browser so a 50,000-line
module scrolls.

Python sends the two normalized texts once and the alignment as a compact int32 array of
``(before line, after line, kind)`` triples (-1 for "no line on this side"); the browser splits the
texts, and paints and highlights only the rows in view. ``mode`` is the layout: "split" (two panes
scrolled together), "unified" (one pane, deleted and inserted lines interleaved with both line
numbers, a changed line as a -/+ pair), or "auto": unified while a side-by-side pane would show
fewer than 80 characters of code, measured on the view's own width in the browser.

``marks_before``/``marks_after`` mark lines of the two texts (the ops of a source line, an op and its
counterparts: the panel's Source tab sets them); the view scrolls to the first one. A click on a code
row is sent to ``handler`` as ``{"type": "op", "side": "before" | "after", "line": n}`` (0-based, in
the texts shown).

``tips_before``/``tips_after`` are a sharded stage's value shardings (``sharding_tips.tips``): hovering
a value's name shows its sharding. ``show`` fills them; an unsharded pair leaves them empty.
"""
from __future__ import annotations

import array
import sys
from typing import Iterable

import traitlets

from ...analysis.diff import Diff
from ...analysis.diff.kinds import ROW_CODES, ROW_KINDS as KINDS  # the kinds by their code in ``rows``
from ...artifacts.assets import ASSETS, inlined
from .lists import Messages
from .sharding_tips import tips

__all__ = ["DiffView", "KINDS", "MODES"]

MODES = ("auto", "split", "unified")


def _pack(rows: list[tuple[int, int, str]]) -> bytes:
    flat = array.array("i")
    for i, j, kind in rows:
        flat.extend((i, j, ROW_CODES[kind]))
    if sys.byteorder == "big":  # the browser reads little-endian
        flat.byteswap()
    return flat.tobytes()


class DiffView(Messages):
    """Two stages side by side or unified (``mode``): synchronized scrolling, MLIR/HLO highlighting,
    next/previous change, an overview ruler of where the changes are, a "changes only" fold, and a
    line cut by the pane's width shown whole when hovered."""

    _esm = inlined(ASSETS / "diffview.js")  # one copy, shared with the offline report (artifacts/report.py)
    _css = inlined(ASSETS / "diffview.css")

    before_name = traitlets.Unicode("").tag(sync=True)
    after_name = traitlets.Unicode("").tag(sync=True)
    before = traitlets.Unicode("").tag(sync=True)
    after = traitlets.Unicode("").tag(sync=True)
    rows = traitlets.Bytes(b"").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(560).tag(sync=True)
    mode = traitlets.Enum(MODES, "auto").tag(sync=True)
    marks_before = traitlets.List(traitlets.Int()).tag(sync=True)  # 0-based lines of ``before`` shown marked
    marks_after = traitlets.List(traitlets.Int()).tag(sync=True)
    mark_focus = traitlets.Enum(("", "before", "after"), "").tag(sync=True)  # the side scrolled to first
    tips_before = traitlets.Dict().tag(sync=True)  # the values' shardings of ``before``: sharding_tips.tips
    tips_after = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)  # Messages: ``handler`` hears the clicks on code rows
        self.shown = 0  # how many diffs or messages were shown: marks belong to one of them

    def mark(self, before: Iterable[int] = (), after: Iterable[int] = (), focus: str = "") -> None:
        """Mark lines of the two texts (0-based, as shown); the view scrolls to the first one of
        ``focus``'s side ("before", "after"; "": either) unless one is in view."""
        with self.hold_sync():
            self.mark_focus = focus
            self.marks_before = sorted(set(before))
            self.marks_after = sorted(set(after))

    def show(self, diff: Diff) -> None:
        """Display ``diff`` (a ``workbench.diff.Diff``); no line is marked. A hovered value of a sharded
        stage shows its sharding (``tips_before``/``tips_after``)."""
        before, after = "\n".join(diff.before), "\n".join(diff.after)
        tips_before, tips_after = tips(before), tips(after)
        with self.hold_sync():
            self.tips_before, self.tips_after = tips_before, tips_after
            self.shown += 1
            self.mark()
            self.message = ""
            self.before_name, self.after_name = diff.before_name, diff.after_name
            self.before, self.after = before, after
            self.rows = _pack(diff.rows())

    def show_message(self, text: str) -> None:
        """Replace the diff by a message (a failed stage, nothing to compare)."""
        with self.hold_sync():
            self.shown += 1
            self.mark()
            self.before = self.after = ""
            self.tips_before = self.tips_after = {}
            self.rows = b""
            self.message = text

    @property
    def row_count(self) -> int:
        return len(self.rows) // 12
