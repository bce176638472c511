"""The panel's Backend tab: what the TPU made of each fusion (``ex.backend()``, read from libtpu's LLO dump) -- the
fusions with their bundles, MXU occupancy, busiest other unit, time and verdict; a fusion clicked opens its kernel:
its bundles with each unit's slots, the user's lines it came from and its LLO passes, a pass clicked shows its
text or its diff from the pass before that changed the kernel (in the tab's own diff view).

The tab is there where it can say something: the Exploration's device is a TPU, or ``ex.backend()`` was computed
already (a loaded TPU ``.hlox`` with ``ex.backend(dump=...)``); elsewhere the panel has no Backend tab. Opened on
a TPU, it runs ``ex.backend()`` on the panel's worker (libtpu compiles the program again in a child: seconds) while
the rest of the panel works; where there is no dump to read it says why (``Kernels.why``).

The vertical slice: a line of the user's selected in the Source tab (``select_line``) selects the fusions that line
went into (``Kernels.for_line``); a fusion's lines are clickable back to the Source tab (``follow_line``). The table
is ``viewmodel.backend_entry``'s, which a saved view and the report keep and draw with the same component
("backend", extensions/hlo-workbench-lab/src/components/backend.ts).
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import ipywidgets as W

from ...artifacts.viewmodel import backend_entry, line_label
from ...backends import backend_of, default_device_id
from ...errors import WorkbenchError
from ...exploration import Exploration
from .component import Component
from .diffview import DiffView

__all__ = ["BackendTab", "BUNDLES_SHOWN", "TITLE", "applies", "kernel_data"]

TITLE = "Backend"
BUNDLES_SHOWN = 400  # a kernel's first bundles listed (the rest counted)
_OPS_CHARS = 160  # a bundle's opcodes shown, at most


def applies(ex: Exploration) -> bool:
    """Whether ``ex`` has a Backend tab: its kernels were read, or its device is one whose backend writes LLO."""
    if getattr(ex, "_kernels", None) is not None:
        return True
    device = ex.spec.device if isinstance(ex.spec.device, str) and ex.spec.device else default_device_id()
    return bool(backend_of(device).llo_flags)


def kernel_data(kernels, fusion: str, limit: int = BUNDLES_SHOWN) -> dict:
    """What the tab shows of the kernel ``fusion`` runs: its numbers, its user lines (with ``at``), its LLO passes
    (``stage``, ``changed``) and its first ``limit`` bundles (address, loops, runs per call, the slots each unit
    uses, the opcodes; ``units``: those some of them use)."""
    from ...analysis.memory import user_line

    k = kernels.kernel(fusion)
    table = k.bundle_table(limit=limit)
    fixed = {"address", "loops", "runs", "ops", "calls"}
    units = [c for c in table.columns if c not in fixed and table[c].any()]  # the units these bundles use
    rows = [[r["address"], int(r["loops"]), None if r["runs"] != r["runs"] or r["runs"] is None else int(r["runs"]),
             [int(r[u]) for u in units], r["ops"][:_OPS_CHARS] + ("…" if len(r["ops"]) > _OPS_CHARS else "")]
            for r in table.to_dict("records")]
    return {"fusion": fusion, "name": k.name, "fusions": k.fusions, "bundles": k.bundles, "issued": k.issued,
            "occupancy": k.occupancy, "dmas": k.dmas, "units": units, "rows": rows, "more": max(0, k.bundles - limit),
            "lines": [{"line": line_label(line), "at": user_line(line)} for line in k.lines()],
            "passes": [{"stage": s, "pass": s.rsplit(":", 1)[1], "changed": c} for s, c in k.passes()]}


class BackendTab:
    """The Backend tab (``widget``: the component "backend" over a diff view of the kernel's passes).
    ``submit(label, python, work, busy=...)`` queues work on the panel's worker; ``follow_line(file, line)`` is the
    panel's answer to a click on a user's line."""

    def __init__(self, name: str, submit: Callable, follow_line: Callable[[str, int], None]):
        self.name, self._submit, self._follow_line = name, submit, follow_line
        self.view = Component("backend", on_action=self._on_action)
        self.diff = DiffView(on_action=self._on_diff)
        self.diff.layout.display = "none"  # until a pass is opened
        self.widget = W.VBox([self.view, self.diff])
        self._for: Exploration | None = None  # the Exploration whose kernels are shown (or on their way)
        self._profile = None  # its ex.profile() the times shown are of (None: none)
        self._kernels = None  # its Kernels, once read
        self._line: tuple[str, int] | None = None  # the user's line selected last (the Source tab's)
        self._lock = threading.Lock()

    @property
    def python(self) -> str:
        return f"{self.name}.backend()"

    def facts_of(self, ex: Exploration) -> dict | None:
        """The table the tab shows of ``ex`` (``viewmodel.backend_entry``), None until it has read it."""
        return self.view.data.get("backend") if self._for is ex else None

    def show(self, ex: Exploration, *, visible: bool, pending: bool) -> None:
        """Fill the tab for ``ex`` if it is ``visible`` and shows another Exploration's kernels, or times of another
        ``ex.profile()`` than the one taken since (measured, they replace libtpu's estimates); while XLA compiles
        (``pending``) it says it waits."""
        profile = ex.profiles.get("run")
        if not visible or (self._for is ex and self._profile is profile):
            return
        if pending:
            self._set(busy="XLA is compiling: the TPU's kernels are compiled from its module when it is done",
                      replace=True)
            return
        self._for, self._kernels, self._profile = ex, None, profile
        self.diff.layout.display = "none"
        ready = getattr(ex, "_kernels", None) is not None
        self._set(busy="reading libtpu's kernels…" if ready else
                  "compiling the program again for libtpu's LLO dump (seconds)…", python=self.python, replace=True)

        def work():
            try:
                kernels = ex.backend()
                data = {"why": kernels.why} if not kernels.available else {"backend": backend_entry(kernels)}
            except WorkbenchError as e:
                kernels, data = None, {"error": str(e)}
            except Exception as e:  # noqa: BLE001 -- a compile or a dump this reader cannot take is said in the tab
                kernels, data = None, {"error": f"the TPU's kernels could not be read: {type(e).__name__}: {e}"}
            if self._for is ex:  # else another Exploration is shown meanwhile
                self._kernels = kernels if kernels is not None and kernels.available else None
                self._set(python=self.python, **data, replace=True)
                if self._line is not None:
                    self._choose(*self._line)

        self._submit("reading the TPU's kernels", self.python, work, busy=False)

    def select_line(self, file: str, line: int) -> None:
        """The user's line ``line`` of ``file`` selected (in the Source tab): the fusions it went into are chosen."""
        self._line = (file, int(line))
        if self._kernels is not None:
            self._submit("finding the line's fusions", None, lambda: self._choose(file, int(line)), busy=False)

    def open(self, fusion: str) -> None:
        """Open the kernel ``fusion`` runs: its bundles, lines and passes."""
        kernels = self._kernels
        if kernels is None:
            return
        python = f'{self.name}.backend(fusion="{fusion}").bundle_table()'

        def work():
            try:
                facts = kernel_data(kernels, fusion)
            except WorkbenchError as e:
                facts = {"fusion": fusion, "error": str(e)}
            if self._kernels is kernels:
                self.diff.layout.display = "none"
                self._set(kernel=facts, opened=fusion, python=python)

        self._submit(f"reading the bundles of {fusion}", python, work, busy=False)

    def open_pass(self, stage: str, other: str | None = None) -> None:
        """Show an LLO pass of the kernel open: its diff from ``other`` (default: the pass before it that changed the
        kernel), or its text where there is none before it."""
        kernels, kernel = self._kernels, self.view.data.get("kernel") or {}
        passes = [p["stage"] for p in kernel.get("passes", ())]
        if kernels is None or stage not in passes:
            return
        changed = [p["stage"] for p in kernel["passes"] if p["changed"]]
        if other is None:
            before = [s for s in changed if passes.index(s) < passes.index(stage)]
            other = before[-1] if before else stage
        python = f'{self.name}.diff({self.name}.backend().stage("{other}"), {self.name}.backend().stage("{stage}"))'
        ex = self._for

        def work():
            a, b = kernels.stage(other), kernels.stage(stage)
            self.diff.pair(other, stage, changed if stage in changed else [*changed, stage])
            self.diff.show(ex.diff(a, b), note=f"{kernel['name']}: LLO after {b.name.rsplit(':', 1)[1]}"
                           + (f", against {a.name.rsplit(':', 1)[1]}" if a.name != b.name else
                              " (its text: no pass before it changed the kernel)"))
            self.diff.layout.display = ""
            self._set(shown_pass=stage)

        self._submit(f"reading the LLO after {stage.rsplit(':', 1)[1]}", python, work, busy=False)

    # -- the work and the clicks ------------------------------------------------------------------------------
    def _choose(self, file: str, line: int) -> None:
        kernels = self._kernels
        if kernels is None:
            return
        self._set(chosen=kernels.for_line(f"{file}:{line}"), line=line_label(f"{file}:{line}"))

    def _set(self, replace: bool = False, **facts) -> None:
        """Some facts anew (``replace``: these alone)."""
        with self._lock:
            self.view.data = facts if replace else {**self.view.data, **facts}

    def _on_action(self, action: str, payload: dict) -> None:
        if action == "fusion" and payload.get("fusion"):
            self.open(str(payload["fusion"]))
        elif action == "pass" and payload.get("stage"):
            self.open_pass(str(payload["stage"]))
        elif action == "select_line" and payload.get("file"):
            self._follow_line(str(payload["file"]), int(payload.get("line") or 0))

    def _on_diff(self, action: str, payload: dict) -> None:
        """The diff view's pickers and swap: another pair of the kernel's passes."""
        left, right = self.diff.data["left"], self.diff.data["right"]
        if action == "swap":
            self.open_pass(left, right)
        elif action == "pick" and payload.get("stage") and payload.get("side") == "left":
            self.open_pass(right, str(payload["stage"]))
        elif action == "pick" and payload.get("stage"):
            self.open_pass(str(payload["stage"]), left)


