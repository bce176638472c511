"""The Run tab's "find where it drifts": under a run whose check failed, one button runs ``ex.drift`` on that
stage and device, shows what it found (``Drift._repr_html_``), and hands the op to the panel, which diffs the
stage against the reference and marks the op there and its line in the Source tab."""
from __future__ import annotations

from typing import Callable

import ipywidgets as W
from markupsafe import Markup

from . import actions

__all__ = ["DriftBox"]


class DriftBox:
    """``offer(r)`` with the run shown (the button shows when its check failed); ``find()`` clicks it;
    ``found`` is the last ``Drift``. ``submit(label, python, work, busy=...)`` queues work on the panel's
    worker, ``exploration()`` is the panel's Exploration now, ``show(drift)`` marks what was found."""

    def __init__(self, name: str, exploration: Callable, submit: Callable, show: Callable) -> None:
        self.name, self._exploration, self._submit, self._show = name, exploration, submit, show
        self.button = W.Button(description="Find where it drifts", icon="search", button_style="warning",
                               tooltip="tap the stage and the program as lowered, and find the first op whose value "
                                       "goes wrong (ex.drift)", layout=W.Layout(width="190px", display="none"))
        self.button.add_class("wb-drift-button")
        self.button.on_click(lambda _b: self.find())
        self.out = W.HTML()
        self.out.add_class("wb-drift")
        self.widget = W.VBox([self.button, self.out])
        self.found = None
        self._run = None

    def offer(self, r) -> None:
        """The run shown is ``r``: offer the search when its check failed; a new run clears the last answer."""
        if r is not self._run:
            self.out.value, self.found = "", None
        self._run = r
        failed = r is not None and r.check is not None and not r.check.passed
        self.button.layout.display = "" if failed else "none"

    def find(self) -> None:
        r = self._run
        if r is None:
            return
        act = actions.drift(self.name, r.stage, r.device)
        self.out.value = str(Markup('<div class="wb-note">finding where {} drifts&hellip;</div>').format(r.stage))

        def work():
            d = act.call(self._exploration())
            self.found = d
            self.out.value = str(Markup('<div class="wb-drift-result">{}</div>').format(Markup(d._repr_html_())))
            if d.found:
                self._show(d)

        self._submit(act.label, act.python, work, busy=True)
