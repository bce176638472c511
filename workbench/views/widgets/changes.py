"""The panel's change summary: after every rebuild (a toggle, a reset, another pipeline), one line above
the line of Python says what it changed (``Exploration.changes_since``: the settings, the stages recomputed,
whether the final MLIR module and xla:optimized changed and their ops delta), and two buttons show
the final MLIR stage and xla:optimized diffed against themselves before the rebuild, in the Diff tab.

The line is made on the panel's worker as the new Exploration is shown, without waiting for XLA:
while XLA compiles, its part says so, and it is filled in when XLA's stages arrive (the panel shows
the Exploration again then). Python sends the facts (``summary_facts``); the view component "diff", part
"changes" (components/diff.ts), draws them.
"""
from __future__ import annotations

from typing import Callable

from ...analysis.diff import Changes
from ...exploration import Exploration
from .component import Component
from .diffview import DiffView

__all__ = ["ChangeSummary", "summary_facts"]

_WHAT = {"mlir": "the final MLIR stage", "xla": "xla:optimized"}
# the line before the first toggle: it holds the room the first toggle's summary takes (the panel does not grow)
_NONE_YET = {"head": "no toggle yet", "parts": [{"text": text, "changed": False} for text in (
    "after each toggle or edit, what it changed shows here: the stages recomputed and reused",
    "whether the final MLIR module and xla:optimized changed, by which ops", "each diffed against before by the buttons")]}


def summary_facts(changes: Changes) -> dict:
    """What the last rebuild changed: ``head`` (the settings), then ``parts`` (the stages recomputed, the final
    MLIR module and xla:optimized: ``Changes.parts``), a changed module's phrase ``changed``."""
    head, *rest = changes.parts()
    marked = {m.words(): m.changed for m in (changes.mlir, changes.xla) if m is not None}
    return {"head": head, "parts": [{"text": p, "changed": bool(marked.get(p))} for p in rest]}


class ChangeSummary:
    """The change summary (``widget``, a component; before the first rebuild it says what will show there, in the
    room the summary takes); ``changes`` is the last rebuild's ``Changes`` (None before one). ``submit(label,
    python, work, busy=...)`` queues work on the panel's worker; a diff a button asks for (the action "changes"
    {which: "mlir" | "xla"}) is shown in ``diff_view``, and ``show_tab()`` brings the Diff tab forward."""

    def __init__(self, name: str, submit: Callable, diff_view: DiffView, show_tab: Callable[[], None]):
        self.name, self._submit, self._diff_view, self._show_tab = name, submit, diff_view, show_tab
        self.changes: Changes | None = None
        self._pair: tuple[Exploration, Exploration] | None = None  # (before, after) of the last rebuild
        self.widget = Component("diff", {"part": "changes", **_NONE_YET}, on_action=self._heard)

    def rebuilt(self, before: Exploration, after: Exploration) -> None:
        """A rebuild made ``after`` from ``before``: the next ``show(after)`` says what it changed."""
        self._pair = (before, after)

    def show(self, ex: Exploration, pending: bool) -> None:
        """Say what the last rebuild changed, if ``ex`` is what it made (its XLA part too once XLA's
        stages are in: ``pending`` is False); on the worker, never waiting for XLA."""
        if self._pair is None or self._pair[1] is not ex:
            return
        before = self._pair[0]
        try:
            changes = ex.changes_since(before, wait=False)
            facts = summary_facts(changes)
        except Exception as e:  # noqa: BLE001 -- the summary must never keep the Exploration from showing
            changes, facts = None, {"error": f"what the toggle changed could not be worked out: {e}"}
        self.changes = changes
        # without a pair yet, XLA's stages before the toggle may just not be compiled: a click compiles them
        xla = not (changes is None or pending or changes.xla_compiled is None
                   or (changes.xla is None and before.xla_ready()))
        self.widget.data = {"part": "changes", **facts, "mlir": changes is not None and changes.mlir is not None,
                            "xla": xla}

    def _heard(self, action: str, payload: dict) -> None:
        if action == "changes" and payload.get("which") in _WHAT:
            self.diff(payload["which"])

    def diff(self, which: str) -> None:
        """Show the final MLIR stage ("mlir") or xla:optimized ("xla") diffed against itself before
        the last rebuild, in the Diff tab (picking a stage there shows the picked pair again). The
        diff is of the rebuild that is the last one when the job runs (a click queued behind a toggle
        shows that toggle's)."""
        if self._pair is None:
            return
        python = f'{self.name}.changes_since(before).diff("{which}")  # before: {self.name} before the last toggle'
        self._submit(f"diff {_WHAT[which]} against before the last toggle", python, lambda: self._show(which),
                     busy=False)

    def _show(self, which: str) -> None:
        before, after = self._pair
        d = after.changes_since(before).diff(which)  # waits for XLA's stages before the toggle, if need be
        self._diff_view.show(d, note=f"{d.after_name} against {d.before_name}: what the last toggle changed (pick a "
                                     "stage to diff the stages again)")
        self._show_tab()
