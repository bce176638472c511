"""The panel's Passes tab: the pipeline (a preset or a pass pipeline string), and the Enzyme-JaX
patterns and XLA's HLO passes, each a switch.

Python makes the facts (``data``): the pattern catalog ([name, group, on by default]) and the patterns
on, the XLA passes the compiles reported with those switched off, the presets (those that apply
patterns offered when the pipeline applies none) and the pipeline. The component "passes"
(extensions/hlo-workbench-lab/src/components/passes.ts) draws them; the user's clicks come back to the
panel as actions (``on_action``: toggle_patterns / toggle_xla {names, on}, reset_patterns / reset_xla,
set_pipeline {pipeline}), each a rebuild of the Exploration on the panel's worker.
"""
from __future__ import annotations

import threading
from typing import Callable

from ...errors import WorkbenchError
from ...exploration import Exploration
from ...pipeline.presets import PRESETS, preset, resolve
from .component import Component

__all__ = ["PassesTab"]

# the presets whose pipeline applies the Enzyme-JaX patterns (an enzyme-hlo-patterns step)
_WITH_PATTERNS = [n for n in PRESETS if any(st.kind == "patterns" for st in preset(n).steps)]


class PassesTab:
    """The tab's component (``widget``): ``show`` sends it an Exploration's facts, ``set_busy`` whether the
    panel's actions wait (its switches and buttons are held meanwhile)."""

    def __init__(self, on_action: Callable[[str, dict], None]):
        self._xla_seen: list[str] = []  # the XLA passes any compile shown here reported, in order
        self._catalog: tuple | None = None  # (options, items, default-on names)
        self._facts, self._busy, self._lock = {}, False, threading.Lock()  # show and set_busy: from two threads
        self.widget = self.view = Component("passes", {}, on_action=on_action)

    @property
    def data(self) -> dict:
        return self.view.data

    def patterns_on(self) -> set[str]:
        return set(self.data.get("patterns", {}).get("on", ()))

    def set_busy(self, busy: bool) -> None:
        self._send(busy=busy)

    def _send(self, facts: dict | None = None, busy: bool | None = None) -> None:
        with self._lock:
            self._facts, self._busy = facts or self._facts, self._busy if busy is None else busy
            if self._facts:
                self.view.data = {**self._facts, "busy": self._busy}

    def show(self, ex: Exploration, pending: bool) -> None:
        """Show ``ex``'s pipeline and switches; ``pending``: its XLA compile has not ended (no XLA passes yet)."""
        self._xla_seen += [p for p in ([] if pending else ex.xla_passes) if p not in self._xla_seen]
        used = any(st.kind == "patterns" for st in resolve(ex.spec.pipeline, inline=ex.spec.inline).steps)
        off = ex.spec.xla_disabled
        xla = self._xla_seen + [p for p in off if p not in self._xla_seen]
        self._send({"pipeline": ex.spec.pipeline, "presets": list(PRESETS), "with_patterns": _WITH_PATTERNS,
                    "patterns_used": used, "patterns": self._patterns(ex, used),
                    "xla": {"items": [[n, "XLA HLO passes", True] for n in xla], "on": [n for n in xla if n not in off],
                            "message": "" if xla else "XLA is compiling: its passes are listed when it ends" if pending
                            else "no XLA compile (a module without @main, or XLA failed)"}})

    def _patterns(self, ex: Exploration, used: bool) -> dict:
        from ...pipeline.catalog import catalog

        options, sel = ex.spec.selection.options, ex.spec.selection
        try:
            if self._catalog is None or self._catalog[0] != options:  # catalog(): patterns()'s rows, without pandas
                items = [[p.name, p.group, bool(p.default_enabled)] for p in catalog(options)]
                self._catalog = (options, items, {n for n, _, d in items if d})
        except WorkbenchError as e:
            return {"items": [], "on": [], "message": str(e)}
        _, items, default_on = self._catalog
        return {"items": items, "on": sorted((default_on - sel.disabled) | sel.enabled), "message": "" if used else (
            f"the pipeline {ex.spec.pipeline!r} has no enzyme-hlo-patterns step: switching patterns has no effect on "
            "its stages")}
