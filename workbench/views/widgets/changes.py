"""The panel's change summary: after every rebuild (a toggle, a reset, another pipeline), one line above
the line of Python says what it changed (``Exploration.changes_since``: the settings, the stages recomputed,
whether the final MLIR module and xla:optimized changed and their ops delta), and two buttons show
the final MLIR stage and xla:optimized diffed against themselves before the rebuild, in the Diff tab.

The line is made on the panel's worker as the new Exploration is shown, without waiting for XLA:
while XLA compiles, its part says so, and it is filled in when XLA's stages arrive (the panel shows
the Exploration again then).
"""
from __future__ import annotations

from typing import Callable

import ipywidgets as W
from markupsafe import Markup

from ...analysis.diff import Changes
from ...exploration import Exploration
from . import html

__all__ = ["ChangeSummary"]

_WHAT = {"mlir": "the final MLIR stage", "xla": "xla:optimized"}


class ChangeSummary:
    """The change summary's line (``line``) and its two buttons (``mlir_button``, ``xla_button``), in
    ``widget``, hidden until the first rebuild. ``changes`` is the last rebuild's ``Changes`` (None
    before one). ``submit(label, python, work, busy=...)`` queues work on the panel's worker; a diff
    a button asks for is shown in ``diff_view`` with its ops delta in ``ops_delta``, and ``show_tab()``
    brings the Diff tab forward."""

    def __init__(self, name: str, submit: Callable, diff_view, ops_delta: W.HTML, show_tab: Callable[[], None]):
        self.name, self._submit = name, submit
        self._diff_view, self._ops_delta, self._show_tab = diff_view, ops_delta, show_tab
        self.changes: Changes | None = None
        self._pair: tuple[Exploration, Exploration] | None = None  # (before, after) of the last rebuild
        self.line = W.HTML(layout=W.Layout(flex="1 1 auto", min_width="0"))
        self.mlir_button = W.Button(description="final MLIR vs before", icon="columns", disabled=True,
                                    layout=W.Layout(width="auto", flex="none"),
                                    tooltip="diff the final MLIR stage against itself before the last toggle")
        self.xla_button = W.Button(description="xla:optimized vs before", icon="columns", disabled=True,
                                   layout=W.Layout(width="auto", flex="none"),
                                   tooltip="diff xla:optimized against itself before the last toggle")
        self.mlir_button.on_click(lambda _b: self.diff("mlir"))
        self.xla_button.on_click(lambda _b: self.diff("xla"))
        self.widget = W.HBox([self.line, self.mlir_button, self.xla_button],
                             layout=W.Layout(display="none", align_items="center", flex_flow="row wrap"))
        self.widget.add_class("wb-row")

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
            line = html.change_summary(changes)
        except Exception as e:  # noqa: BLE001 -- the summary must never keep the Exploration from showing
            changes, line = None, html.failed(f"what the toggle changed could not be worked out: {e}")
        self.changes = changes
        self.line.value = line
        self.mlir_button.disabled = changes is None or changes.mlir is None
        # without a pair yet, XLA's stages before the toggle may just not be compiled: a click compiles them
        self.xla_button.disabled = (changes is None or pending or changes.xla_compiled is None
                                    or (changes.xla is None and before.xla_ready()))
        self.widget.layout.display = ""

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
        self._diff_view.show(d)
        note = Markup('<div class="wb-note">{} against {}: what the last toggle changed (pick a stage to '
                      "diff the stages again)</div>").format(d.after_name, d.before_name)
        self._ops_delta.value = str(note) + html.ops_delta(d)
        self._show_tab()
