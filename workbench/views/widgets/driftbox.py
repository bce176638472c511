"""The Run tab's "find where it drifts": under a run whose check failed, one button runs ``ex.drift`` on that
stage and device and shows all it found in this one box (``Drift._repr_html_``: the op, the user's line, where
the values entered and the one cause, then the op beside its counterpart and its inputs); two buttons then
take the user to the op in the Diff tab (the stage diffed against the reference, the op marked) or to its line
in the Source tab. The search's modules are compiled in the background as soon as the failure shows
(``ex.warm_drift``), so that the click mostly runs them."""
from __future__ import annotations

from typing import Callable

import ipywidgets as W
from markupsafe import Markup

from . import actions

__all__ = ["DriftBox"]


class DriftBox:
    """``offer(r)`` with the run shown (the button shows when its check failed); ``find()`` clicks it;
    ``found`` is the last ``Drift``. ``submit(label, python, work, busy=...)`` queues work on the panel's
    worker, ``exploration()`` is the panel's Exploration now, ``show(drift, where)`` shows the op found in
    the Diff tab (``where`` "diff") or its line in the Source tab ("source"): ``show_in(where)`` clicks those."""

    def __init__(self, name: str, exploration: Callable, submit: Callable, show: Callable) -> None:
        self.name, self._exploration, self._submit, self._show = name, exploration, submit, show
        self.button = W.Button(description="Find where it drifts", icon="search", button_style="warning",
                               tooltip="tap the stage and the program as lowered, and find the first op whose value "
                                       "goes wrong (ex.drift)", layout=W.Layout(width="190px", display="none"))
        self.button.add_class("wb-drift-button")
        self.button.on_click(lambda _b: self.find())
        self.out = W.HTML()
        self.out.add_class("wb-drift")
        self.to_diff = W.Button(description="Op in the Diff", icon="columns", layout=W.Layout(width="auto"),
                                tooltip="diff the stage against the reference, the op found marked")
        self.to_source = W.Button(description="Line in Source", icon="file-code-o", layout=W.Layout(width="auto"),
                                  tooltip="the op's line of your program, in the Source tab")
        for b, where in ((self.to_diff, "diff"), (self.to_source, "source")):
            b.add_class(f"wb-drift-to-{where}")
            b.on_click(lambda _b, where=where: self.show_in(where))
        self.links = W.HBox([self.to_diff, self.to_source], layout=W.Layout(display="none", flex_flow="row wrap"))
        self.widget = W.VBox([self.button, self.out, self.links])
        self.found = None
        self._run = None

    def offer(self, r) -> None:
        """The run shown is ``r``: offer the search when its check failed (and start compiling its modules);
        a new run clears the last answer."""
        fresh = r is not self._run
        if fresh:
            self.out.value, self.found = "", None
            self.links.layout.display = "none"
        self._run = r
        failed = r is not None and r.check is not None and not r.check.passed
        self.button.layout.display = "" if failed else "none"
        if failed and fresh:  # the search's modules compile while the user reads the failure (nothing runs)
            self._exploration().warm_drift(r.stage, device=r.device)

    def find(self) -> None:
        r = self._run
        if r is None:
            return
        act = actions.drift(self.name, r.stage, r.device)
        self.out.value = str(Markup('<div class="wb-note">finding where {} drifts&hellip;</div>').format(r.stage))
        self.links.layout.display = "none"

        def work():
            d = act.call(self._exploration())
            self.found = d
            self.out.value = str(Markup('<div class="wb-drift-result">{}</div>').format(Markup(d._repr_html_())))
            self.links.layout.display = "" if d.found and d.op.result else "none"

        self._submit(act.label, act.python, work, busy=True)

    def show_in(self, where: str) -> None:
        """Show the op found in the Diff tab ("diff") or its line in the Source tab ("source")."""
        if self.found is not None and self.found.found:
            self._show(self.found, where)
