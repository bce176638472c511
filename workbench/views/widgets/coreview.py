"""The panel's core, drawn by the view components that draw every other view of an Exploration (the saved view,
the report, the .hlox viewer): the header (title, pipeline, device, what is switched off, a failed stage with its
whole diagnostic) with the hand edits, the stage list beside the tabs, and the Run tab's runs (each with its check
leaf by leaf, what it printed, and why it is stale). Each is a ``Component("view", {"model", "sections"})`` of one
view model (``artifacts.viewmodel.view_model``, source "panel", without the pair's own facts: the Diff and Cost tabs
draw those), made once per Exploration shown and per run, and shared with the saved view (``model_of``); a new pair
only moves the model's ``shown``. A pick in the stage list (a stage's name: it against its parent; its A or B
button: that side) comes back as the action "pair" ({left, right}).
"""
from __future__ import annotations

import threading
from typing import Callable

from ...artifacts.viewmodel import view_model
from .component import Component

__all__ = ["CoreView", "FOLD_BELOW"]

FOLD_BELOW = 760  # px: the stage list folds to its heading in a narrower panel, until the user opens it
_CELL = 300  # characters of a stage's pass string sent (the panel's list does not show it; its title does)


class CoreView:
    """The header (``header``) and the stage list (``stages``): two components of one view model (``model``: the
    last one sent, None before the first; its runs are the Run tab's, ``runtab``). ``show`` makes the model of an
    Exploration, ``pair`` moves the pair shown; a pick in the list calls ``on_pair(left, right)``."""

    def __init__(self, on_pair: Callable[[str, str], None]):
        self._on_pair = on_pair
        self._lock = threading.Lock()  # show (the worker) and pair (a click, or the worker) send from two threads
        self.model: dict | None = None
        self._made: tuple = (None, None)  # (the Exploration, its model whole: the pass strings uncut)
        self.header = Component("view", {"sections": ["header", "edits"]}).add_class("wb-header")
        self.stages = Component("view", {"sections": ["stages"], "fold": FOLD_BELOW, "loading": "reading the stages…"},
                                on_action=self._heard).add_class("wb-stages")

    def show(self, ex, left: str, right: str, *, pending: bool) -> None:
        """Show ``ex`` (its runs: ``ex.history``) with ``left`` and ``right`` picked; ``pending``: its XLA stages are
        on their way (those of the model are the trace's and MLIR's until they are ready)."""
        m = view_model(ex, left, right, wait=0.0 if pending else None, source="panel", pair=False)
        error = ex.error if m["complete"] else ex.pipeline_error
        if error is not None and error.full != str(error):  # the short form cut frames or the runner's words
            m["error"]["full"] = error.full
        with self._lock:
            self._made = (ex, m)
            self._send(m)

    def model_of(self, ex, left: str, right: str) -> dict | None:
        """The model last made of ``ex`` (its pass strings whole) with ``left`` and ``right`` shown; None if the last
        model made is another Exploration's."""
        made, m = self._made
        return None if made is not ex else {**m, "shown": {"left": left, "right": right}}

    def pair(self, left: str, right: str) -> None:
        """Mark ``left`` and ``right`` as the pair shown."""
        with self._lock:
            if self.model is not None and (self.model["shown"]["left"], self.model["shown"]["right"]) != (left, right):
                self._send({**self.model, "shown": {"left": left, "right": right}})

    def _send(self, m: dict) -> None:
        rows = [{**r, "produced_by": r["produced_by"][:_CELL]} for r in m["stages"]]
        self.model = {**m, "stages": rows, "diff": {**m["shown"], "note": "the panel's Diff tab draws it"}}
        for view in (self.header, self.stages):
            view.data = {**view.data, "model": self.model}

    def _heard(self, action: str, payload: dict) -> None:
        if action == "pair" and payload.get("left") and payload.get("right"):
            self._on_pair(str(payload["left"]), str(payload["right"]))
