"""The diff of two stages as the panel's Diff tab shows it: a view component (kind "diff",
extensions/hlo-workbench-lab/src/components/diff.ts over the virtualized viewer every view of a diff shares,
assets/diffview.js) drawn from the facts Python sends in ``data``:

``stages`` and ``left``/``right``: the A and B pickers' choices and the pair picked; ``diff``: the diff shown as a
view model carries it (``stage_diffs.carried``: the normalized texts and runs, with ``left``/``right`` its sides'
names), or ``{"note": why there is none}``; ``ops_delta``: the ops whose count differs (``Diff.ops_delta()``; None
without a diff); ``note``: what the diff is where it is not the pair picked; ``mode``: the layout the user chose
(auto, split, unified), kept for the view drawn next (another tab shows it, the notebook draws it anew); ``shown``: how many diffs or messages
were shown (marks belong to one); ``marks``: lines of either side marked (0-based, as shown) and the side scrolled
to first (the Source and Collectives tabs set them); ``tips``: a sharded stage's value shardings
(``sharding_tips.tips``), shown when a value's name is hovered.

What the user does comes back to ``on_action``: "pick" {side: "left" | "right", stage}, "swap", and "op" {side:
"before" | "after", line} (a click on a code row, 0-based in the text shown); "mode" {mode} is kept here.
"""
from __future__ import annotations

from typing import Callable, Iterable

from ...analysis.diff import Diff
from ...artifacts.stage_diffs import carried
from .component import Component
from .sharding_tips import tips

__all__ = ["DiffView", "MODES"]

MODES = ("auto", "split", "unified")

_UNMARKED = {"before": [], "after": [], "focus": ""}


class DiffView(Component):
    """Two stages side by side or unified: synchronized scrolling, MLIR/HLO highlighting, next/previous change,
    an overview ruler of where the changes are, a "changes only" fold, the counts by kind and the ops delta."""

    def __init__(self, on_action: Callable[[str, dict], None] | None = None, **kwargs):
        super().__init__("diff", {"stages": [], "left": "", "right": "", "shown": 0, "note": "", "ops_delta": None,
                                  "diff": {"left": "", "right": "", "note": "no pair picked yet"}, "marks": _UNMARKED,
                                  "tips": {}, "height": 560, "mode": "auto"}, on_action=self._heard_action, **kwargs)
        self._then = on_action

    def _heard_action(self, action: str, payload: dict) -> None:
        if action == "mode":
            if payload.get("mode") in MODES:
                self._set(mode=payload["mode"])
        elif self._then is not None:
            self._then(action, payload)

    def _set(self, **facts) -> None:
        self.data = {**self.data, **facts}  # a new dict, sent; the texts go once, as blobs (component.py)

    def pair(self, left: str, right: str, stages: Iterable[str] | None = None) -> None:
        """The pair picked and (given) the pickers' stages; a stage in no picker yet shows none."""
        self._set(left=left, right=right, **({} if stages is None else {"stages": list(stages)}))

    def mark(self, before: Iterable[int] = (), after: Iterable[int] = (), focus: str = "") -> None:
        """Mark lines of the two texts (0-based, as shown); the view scrolls to the first one of ``focus``'s side
        ("before", "after"; "": either) unless one is in view."""
        self._set(marks={"before": sorted(set(before)), "after": sorted(set(after)), "focus": focus})

    def show(self, diff: Diff, note: str = "") -> None:
        """Display ``diff`` (a ``workbench.diff.Diff``), no line marked, ``note`` above it; a hovered value of a
        sharded stage shows its sharding."""
        entry = {"left": diff.before_name, "right": diff.after_name, **carried(diff)}
        self._set(shown=self.data["shown"] + 1, diff=entry, ops_delta=diff.ops_delta_rows(), note=note,
                  marks=_UNMARKED, tips={"before": tips(entry["before"]), "after": tips(entry["after"])})

    def show_message(self, text: str, left: str = "", right: str = "") -> None:
        """Replace the diff of ``left`` and ``right`` by a message (a failed stage, XLA still compiling)."""
        self._set(shown=self.data["shown"] + 1, diff={"left": left, "right": right, "note": text}, ops_delta=None,
                  note="", marks=_UNMARKED, tips={})

    def side(self, side: str) -> tuple[str, str]:
        """The name and normalized text the diff shows on ``side`` ("before" or "after"); "" for no text."""
        d = self.data["diff"]
        return d["left" if side == "before" else "right"], d.get(side, "")
