"""The panel's Compile tab: where compile time goes, both pipelines in one list (``ex.compile_profile()``, whose
table the component "compile", extensions/hlo-workbench-lab/src/components/compile.ts, draws here as in the report and
the saved view). A click on a step that made a stage comes back as the action "stage" {name}: that stage diffed
against its parent in the Diff tab. It fills when first shown for an Exploration, after XLA's own compile (whose
clocks it is compared with); work runs on the panel's worker, and an error is said in the tab."""
from __future__ import annotations

from collections.abc import Callable

from ...artifacts.jsonout import table_json
from ...errors import WorkbenchError
from ...exploration import Exploration
from . import actions
from .component import Component

__all__ = ["CompileTab", "TITLE"]

TITLE = "Compile"


class CompileTab:
    """The Compile tab's component (``widget``). ``submit(label, python, work, busy=...)`` queues work on the
    panel's worker; ``show_stage(name)`` diffs a stage against its parent in the Diff tab."""

    def __init__(self, name: str, submit: Callable, show_stage: Callable[[str], None]):
        self.name, self._submit, self._show_stage = name, submit, show_stage
        self.widget = self.view = Component("compile", on_action=self._on_action)
        self._for: Exploration | None = None
        self.profile = None  # the CompileProfile shown

    def show(self, ex: Exploration, *, visible: bool, pending: bool) -> None:
        if not visible or self._for is ex:
            return
        if pending:
            self.view.data = {"busy": "XLA is compiling: where its compile time goes is measured when it is done "
                                      "(one more compile, under JAX's profiler)"}
            return
        self._for = ex
        act = actions.compile_profile(self.name)
        self.view.data = {"busy": "XLA compiles the last MLIR stage again under JAX's profiler…"}

        def work():
            try:
                self.profile = cp = act.call(ex)
            except WorkbenchError as e:
                self.profile, self.view.data = None, {"error": str(e)}
                return
            self.view.data = {"table": table_json(cp.table, "compile"), "links": [s.name for s in ex.stages],
                              "note": f"compile time per step, {cp.total_s:.3f} s in all: the trace, the lowering and "
                                      "each MLIR pass by the workbench's clocks (a cached pass: its first run's), each XLA "
                                      "pass and backend step by JAX's profiler over one more compile (the exploration's "
                                      f"own clocks measured {cp.explore_s:.3f} s for the same work)"}

        self._submit(act.label, act.python, work, busy=False)

    def _on_action(self, action: str, payload: dict) -> None:
        if action == "stage" and payload.get("name"):
            self._show_stage(str(payload["name"]))
