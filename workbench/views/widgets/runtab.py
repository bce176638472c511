"""The panel's Run tab, one view component ("run", extensions/hlo-workbench-lab/src/components/runtab.ts): the
stage, device and repeat of a run and its button; under a run whose check failed, "Find where it drifts" with its
whole answer (the view model's ``drift``: the op, the user's line, where the values entered, one cause) and buttons
that show the op in the Diff tab or its line in the Source tab; the session's runs (the view model's); the stages
to compare, their button and table. The search's modules compile as soon as a failure shows (``ex.warm_drift``), so
that the click mostly runs them. Each action comes back with the controls' values (kept in ``settings``): "set",
"run", "compare", "drift" and "show" {where}."""
from __future__ import annotations

import dataclasses
import threading
from typing import Callable

from ...artifacts.jsonout import table_json
from ...artifacts.viewmodel import drift_entry
from . import actions
from .component import Component

__all__ = ["RunSettings", "RunTab"]


@dataclasses.dataclass
class RunSettings:
    """What the Run tab's controls hold: the stage and device a run uses, its timing repeats, the stages compared."""
    stage: str | None = None
    device: str | None = None
    repeat: int = 20
    compare: tuple[str, ...] = ()


class RunTab:
    """The tab's component (``view``, ``data``): ``show`` and ``send`` send facts, ``offer(r)`` the run just made,
    ``find()`` searches where it drifts (``found``: the ``Drift``), ``show_in(where)`` calls ``show(found, where)``;
    its buttons call ``run()`` and ``compare()``, ``submit`` queues work on the panel's worker."""

    def __init__(self, name: str, exploration: Callable, submit: Callable, run: Callable, compare: Callable,
                 show: Callable) -> None:
        self.name, self._exploration, self._submit, self._show = name, exploration, submit, show
        self._buttons = {"run": run, "compare": compare, "drift": self.find}
        self.settings = RunSettings()
        self.found = None
        self._run = None  # the run offered
        self._facts = {"stages": [], "devices": [], "runs": [], "compared": None, "drift": None, "busy": False}
        self._lock = threading.Lock()  # the worker and the browser's clicks send
        self.view = Component("run", {}, on_action=self._heard).add_class("wb-run-tab")

    @property
    def data(self) -> dict:
        return self.view.data

    @property
    def offered(self) -> bool:
        """The search is offered: the run shown last failed its check."""
        return self._facts["drift"] is not None

    def send(self, **facts) -> None:
        """Send ``facts`` (stages, devices, runs, compared, drift, busy) with the others last sent."""
        with self._lock:
            self._facts.update(facts)
            self.view.data = {**self._facts, **dataclasses.asdict(self.settings)}

    def show(self, ex, runnable: list[str], devices: list[str], runs: list[dict]) -> None:
        """The choices for ``ex``: its stages that run (the stage and stages compared kept where they remain, else
        its default run stage and its reference with it) and the devices; and ``runs``, the view model's."""
        s = self.settings
        if s.stage not in runnable:
            s.stage = ex.default_run_stage().name if runnable else None
        default = (ex.reference_stage().name, s.stage)
        s.compare = tuple(n for n in s.compare if n in runnable) or tuple(n for n in dict.fromkeys(default)
                                                                        if n in runnable)
        if s.device not in devices:
            s.device = ex.spec.device if ex.spec.device in devices else devices[0]
        self.send(stages=runnable, devices=devices, runs=runs)

    def compared(self, df) -> None:
        """The table of "Compare stages" (``ex.compare``), None while it runs."""
        self.send(compared=None if df is None else table_json(df.replace([float("inf"), -float("inf")],
                                                                          ["inf", "-inf"]), "compare"))

    def set(self, stage: str | None = None, device: str | None = None, repeat: int | None = None,
            compare=None) -> None:
        """Set the controls' values (those given and valid); the component shows them."""
        s, shown = self.settings, self._facts
        s.stage = stage if stage in shown["stages"] else s.stage
        s.device = device if device in shown["devices"] else s.device
        s.repeat = min(max(int(repeat), 1), 10_000) if repeat else s.repeat
        s.compare = s.compare if compare is None else tuple(n for n in compare if n in shown["stages"])
        self.send()

    def _heard(self, action: str, payload: dict) -> None:
        self.set(payload.get("stage"), payload.get("device"), payload.get("repeat"), payload.get("compare"))
        if action in self._buttons:
            self._buttons[action]()
        elif action == "show":
            self.show_in(str(payload.get("where")))

    def offer(self, r) -> None:
        """The run shown is ``r``: offer the search when its check failed (and start compiling its modules); a new
        run clears the last answer."""
        if r is self._run:
            return
        self._run, self.found = r, None
        failed = r is not None and r.check is not None and not r.check.passed
        if failed:  # the search's modules compile while the user reads the failure (nothing runs)
            self._exploration().warm_drift(r.stage, device=r.device)
        self.send(drift={"stage": r.stage, "finding": False, "found": None} if failed else None)

    def find(self) -> None:
        r = self._run
        if not self.offered:
            return
        act = actions.drift(self.name, r.stage, r.device)
        self.send(drift={"stage": r.stage, "finding": True, "found": None})

        def work():
            try:
                self.found = act.call(self._exploration())
            finally:
                found = None if self.found is None else drift_entry(self.found)
                self.send(drift={"stage": r.stage, "finding": False, "found": found})

        self._submit(act.label, act.python, work, busy=True)

    def show_in(self, where: str) -> None:
        """Show the op found in the Diff tab ("diff") or its line in the Source tab ("source")."""
        if self.found is not None and self.found.found:
            self._show(self.found, where)
