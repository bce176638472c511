"""The pass-toggle panel: every stage of an Exploration, any two side by side, the patterns and XLA
passes to switch, and the actions a compiler engineer reaches for (run, compare, cost, graph,
applicable patterns, bisect).

The panel is a view. It reads an Exploration and calls its public methods; a toggle asks the
Exploration for a new one (``with_patterns``, ``with_xla``) and shows that. Work runs on one worker
thread, so the notebook stays responsive and the panel says what runs and for how long; an error is
shown in the panel, never raised into the notebook. A new Exploration's MLIR stages show at once and
its XLA stages when XLA's compile (started in the background by the toggle) ends: that wait holds
no place in the queue, and stages that arrive for an Exploration no longer shown are dropped. Every
action's line of Python is shown, ready to paste. This module lays the widgets out and wires them to
the actions; the Passes, Run, Memory, Compile, Graph, Source, Analyze, Collectives and Backend tabs are modules of
their own (``passes``, ``runtab``, ``memorytab``, ``compiletab``, ``graphview``, ``source``, ``analyze``,
``collectives``, ``backendtab``: the TPU's kernels, a tab added where the Exploration shown has them),
``coreview`` the header and the stage list (view components of one view model), ``jobs`` runs the work, ``html``
renders what it gives, ``changes`` says after each rebuild what it changed, ``savedview`` makes the output: the
widget beside the view model of what the panel shows, sent again after each change, so that a saved notebook keeps
the panel as it ended.
"""
from __future__ import annotations

import pathlib
from concurrent.futures import Future
from typing import Callable, MutableMapping, Sequence

import ipywidgets as W

from ...exploration import XLA_WAIT, Exploration
from . import actions, backendtab, collectives, compiletab, html, memorytab
from .actions import Action
from .ahead import ahead
from .analyze import AnalyzeTab
from ...artifacts.viewmodel import default_right
from .changes import ChangeSummary
from .component import Component
from .coreview import CoreView
from .costtab import cost_data
from .diffview import DiffView
from .editbox import EditBox
from .graphview import GraphTab
from .jobs import Jobs
from .passes import PassesTab
from .pending import SoFar, late_name
from .runtab import RunTab
from .savedview import SavedView, Shown
from .source import SourceTab

__all__ = ["Panel", "panel"]

_CSS = (pathlib.Path(__file__).parent / "panel.css").read_text()
_TABS = ("Diff", "Passes", "Run", "Cost", memorytab.TITLE, compiletab.TITLE, "Graph", "Source", "Analyze",
         collectives.TITLE)


def panel(ex: Exploration, *, name: str = "ex", left: str | None = None, right: str | None = None,
          bind: MutableMapping | None = None, xla_wait: float = XLA_WAIT) -> "Panel":
    """The pass-toggle panel for ``ex``; ``name`` is the variable the Python lines it shows act on.

    ``left``/``right`` pick the two stages to diff (default: the first stage that changed the module
    and its parent). ``panel.ex`` is the Exploration the panel shows now. With ``bind`` (a namespace,
    e.g. ``globals()``), ``bind[name]`` follows the panel: each toggle that gives a new Exploration
    rebinds it there. Without it the panel changes no variable. Shown, its output waits up to
    ``xla_wait`` seconds for XLA's stages, and follows the panel after (``savedview``): a saved notebook
    keeps the panel as it ended.
    """
    return Panel(ex, name=name, left=left, right=right, bind=bind, xla_wait=xla_wait)


class Panel:
    """The panel for one Exploration; see ``panel()``. Display it (it is the last value of a cell, or
    ``display(p)``); ``p.ex`` is the Exploration shown now, ``p.python`` the line of the last action.

    With ``bind``, a namespace, the names ``bind_names`` (default: ``name``) there follow the panel:
    after each action that gives a new Exploration, those still holding the one before are rebound
    to the new one (a name the user has bound to something else since is left alone)."""

    def __init__(self, ex: Exploration, *, name: str = "ex", left: str | None = None, right: str | None = None,
                 background: bool = True, bind: MutableMapping | None = None, bind_names: Sequence[str] = (),
                 xla_wait: float = XLA_WAIT):
        self.name, self.xla_wait = name, xla_wait
        self._bind = bind
        self.bound = tuple(dict.fromkeys(bind_names or (name,))) if bind is not None else ()
        self._ex = ex
        self._left = left or ""
        self._right = right or ""
        self.python = ""
        self.history: list[str] = []  # the lines that changed the Exploration, in order
        self._diff_token = 0
        self._cost_key = None
        self._pending = False  # the XLA stages of the Exploration shown are on their way
        self._xla_watch: Future | None = None  # ex.xla_future() of the Exploration shown, while pending
        self._auto_right = False  # the right stage was the panel's choice while XLA compiled
        self._diffed: tuple | None = None  # (Exploration, left, right) the diff view shows
        self._build()
        self.saved = SavedView(self._root, self._shown)  # the output, and what a saved notebook keeps of it
        self.jobs = Jobs(self.status, self._set_busy, background, on_ended=self.saved.changed)
        self._submit("reading the stages", None, self._load, busy=True)

    # -- the Exploration shown ---------------------------------------------------------------------
    @property
    def ex(self) -> Exploration:
        return self._ex

    @property
    def left(self) -> str:
        return self._left

    @property
    def right(self) -> str:
        return self._right

    @property
    def last_error(self) -> str | None:
        """Why the last action failed, as the status line says it; None when it succeeded."""
        return self.jobs.last_error

    @property
    def widget(self) -> W.VBox:
        return self._root

    def _ipython_display_(self):
        """The output, sent again as the panel changes: a saved notebook keeps the panel as it ended."""
        self.saved.display(self.xla_wait)

    def _repr_mimebundle_(self, **kwargs):
        """The widget's view beside the view model of what the panel shows now (``savedview``)."""
        return self.saved.bundle(wait=self.xla_wait)

    def _shown(self) -> Shown:
        """What the panel shows now, as its saved view keeps it (``bound[0]``: what "Save exploration…" saves)."""
        ex = self._ex
        return Shown(ex, self._left, self._right, tuple(ex.history), self.drift.found, ex.profiles.get("compile"),
                     self._pending, self.bound[0] if self.bound else None,
                     self.core.model_of(ex, self._left, self._right), self.memory.facts_of(ex),
                     self.backend.facts_of(ex))

    def wait(self, timeout: float | None = 600, xla: bool = True) -> "Panel":
        """Block until the panel's queued work is done (for scripts and tests), and with ``xla`` until
        the XLA stages on their way are shown too."""
        self.jobs.wait(timeout, awaiting=xla)
        return self

    def close(self) -> None:
        """Close the panel's widgets and stop its worker thread."""
        self._watch(None)
        self.saved.close()
        self.jobs.shutdown()

        def close(w):
            for child in getattr(w, "children", ()):
                close(child)
            w.close()

        close(self._root)

    # -- actions (each one is also a button, a click or a toggle in the panel) ------------------------
    def pick(self, name: str, side: str = "right") -> None:
        """Diff stage ``name`` against its parent (side "right"), or put it on the left (side "left")."""
        st = self._ex.stage(name)
        if side == "left":
            self._left = st.name
        else:
            self._right = st.name
            if st.parent:
                self._left = st.parent
        self._show_selection()

    def _diff_stage(self, name: str) -> None:
        """A stage picked outside the stage list (the Compile tab): diffed against its parent in the Diff tab."""
        self.pick(name)
        self.tabs.selected_index = 0

    def toggle_patterns(self, names, on: bool) -> None:
        self._rebuild(lambda: actions.toggle_patterns(self.name, list(names), on))

    def reset_patterns(self) -> None:
        self._rebuild(lambda: actions.reset_patterns(self.name, self._ex))

    def toggle_xla(self, names, on: bool) -> None:
        self._rebuild(lambda: actions.toggle_xla(self.name, list(names), on))

    def reset_xla(self) -> None:
        self._rebuild(lambda: actions.reset_xla(self.name, self._ex))

    def set_pipeline(self, pipeline: str) -> None:
        """Rebuild with another preset or pipeline string."""
        self._rebuild(lambda: actions.set_pipeline(self.name, pipeline.strip()))

    def run(self, stage: str | None = None, device: str | None = None, repeat: int | None = None) -> None:
        """Run a stage (default: the one picked in the Run tab) and show its outputs, timing and check."""
        self.run_tab.set(stage, device, repeat)
        s = self.run_settings
        act = actions.run(self.name, stage or s.stage, device or s.device, int(repeat or s.repeat))
        self._submit(act.label, act.python, lambda: self._show_run(act.call(self._ex)), busy=True)

    def compare(self, stages=None, device: str | None = None) -> None:
        """Run several stages (default: those picked in the Run tab) and tabulate their times and checks."""
        self.run_tab.set(device=device, compare=stages)
        s = self.run_settings
        act = actions.compare(self.name, list(s.compare if stages is None else stages), device or s.device, s.repeat)
        self.run_tab.compared(None)
        self._submit(act.label, act.python, lambda: self._show_compare(act.call(self._ex)), busy=True)

    def find_applicable(self, stage: str | None = None) -> None:
        """Try every pattern of the catalog alone on a stage; list those that change it (Analyze tab)."""
        self.analyze.find_applicable(stage)

    def bisect(self, kind: str | None = None, **params) -> None:
        """Bisect the enabled patterns for a predicate of ``actions.PREDICATES`` (params: op, n, device);
        the result, or why there was nothing to bisect, is shown in the Analyze tab."""
        self.analyze.bisect(kind, **params)

    def show_cost(self) -> None:
        """Fill the Cost tab: every stage's cost, the chart, the per-op cost of the right stage."""
        self._cost_key = self._key()
        act = actions.cost(self.name)
        self.cost.data = {"busy": f"{act.label}…"}
        self._submit(act.label, act.python, self._load_cost, busy=False)

    def follow_op(self, instruction: str, stage: str = "xla:optimized") -> None:
        """Follow HLO instruction ``instruction`` of ``stage`` (a buffer clicked in the Memory tab): ``stage`` made B
        (unless it is B already), and in the Source tab its line selected, the instruction and its counterparts
        marked in the diff and its lineage shown."""
        if stage not in self._ex.names:
            return
        if self._right != stage:
            self.pick(stage)
        self.tabs.selected_index = _TABS.index("Source")
        self.source.pick_op(stage, instruction)

    def follow_line(self, file: str, line: int) -> None:
        """Select line ``line`` of ``file`` in the Source tab (a line clicked in the Memory tab): its ops marked in
        the diff."""
        self.tabs.selected_index = _TABS.index("Source")
        self.source.select_line(file, line)

    def show_graph(self, stage: str | None = None) -> None:
        """Draw the Graph tab's stage: ``stage``, kept picked there ("": the right stage B again), or (None)
        the one picked there (by default B)."""
        self.graph.show(self._ex, self._right, visible=False, pending=self._pending)
        if stage is None:
            self.graph.draw()
        else:
            self.graph.pick(stage)

    # -- building the widgets ----------------------------------------------------------------------
    def _build(self) -> None:
        """The header and status line, the stage list beside the tabs, the Python and pipeline lines."""
        L = W.Layout
        self.core = CoreView(self._pick_pair)  # the header and the stage list: view components
        self.status = W.HTML()  # its slot beside or under the header: panel.css
        self._build_tabs()
        self.summary = ChangeSummary(self.name, self._submit, self.diff_view,  # what a toggle changed
                                     lambda: setattr(self.tabs, "selected_index", 0))
        self.python_box = W.HTML()
        self.pipeline_box = W.HTML()
        self._root = W.VBox([
            W.HTML(f"<style>{_CSS}</style>", layout=L(height="0px", overflow="hidden")),
            W.HBox([self.core.header, self.status]).add_class("wb-row").add_class("wb-top"),
            W.HBox([self.core.stages, self.tabs]).add_class("wb-row").add_class("wb-main"),
            self.summary.widget, self.python_box, self.pipeline_box,  # what a toggle changed: under the lists
        ])
        self._root.add_class("wb-panel")
        self._show_python()

    def _build_tabs(self) -> None:
        """The tabs, in ``_TABS``' order."""
        diff_tab = self._build_diff()
        self.passes = p = PassesTab(self._on_passes)  # its clicks are the panel's actions
        # the Run tab, one component: run_settings holds its controls' values, drift is its search of where a failed
        # run drifts (find, found, show_in)
        self.run_tab = self.drift = RunTab(self.name, lambda: self._ex, self._submit, self.run, self.compare,
                                           self._show_drift)
        self.run_settings = self.run_tab.settings
        self.cost = Component("cost")  # every stage's cost, its chart, B's per op: costtab.py's facts
        self.memory = memorytab.MemoryTab(self.name, self._submit, self.follow_op, self.follow_line)
        self.graph = GraphTab(self.name, self._submit)  # its own module: the stage picker and the view
        self.graph_view = self.graph.view
        # Analyze (its own module): the jobs exist once _build is done, hence the lambdas
        self.analyze = AnalyzeTab(self.name, lambda: self._ex, self._submit,
                                  lambda text: setattr(self.jobs, "note", text),
                                  lambda done, total: self.jobs.progress(done, total),
                                  self.passes.patterns_on,
                                  lambda names: self.toggle_patterns(names, False), lambda n: self.toggle_xla(n, False),
                                  toggle=self.toggle_patterns)
        self.collectives = collectives.CollectivesTab(self.name, self._submit, self.pick, self.diff_view,
                                                      lambda: setattr(self.tabs, "selected_index", 0))
        self.compile = compiletab.CompileTab(self.name, self._submit, self._diff_stage)
        # the TPU's kernels: a tab added after the others where the Exploration shown has them (backendtab.applies)
        self.backend = backendtab.BackendTab(self.name, self._submit, self.follow_line)
        self.tabs = W.Tab(children=[diff_tab, p.widget, self.run_tab.view, self.cost, self.memory.widget,
                                    self.compile.widget, self.graph.widget, self.source.widget, self.analyze.widget,
                                    self.collectives.widget])
        self.tabs.titles = _TABS
        self.tabs.layout = W.Layout(flex="1 1 auto", min_width="0")
        self.tabs.observe(lambda _ch: self._on_tab(), "selected_index")

    def _build_diff(self) -> W.VBox:
        """The Diff tab: the stage editor's toggle, and the diff view (a component: the A and B pickers, swap, the
        counts, the op counts' change and the viewer)."""
        self.diff_view = DiffView(on_action=self._on_diff)
        self.editor = EditBox(self.name, lambda: self._ex, lambda: self._right, self._rebuild)
        # Source (its own module): the diff view lives in its .home in this tab, and moves there when shown
        self.source = SourceTab(self.name, lambda: self._ex, lambda: (self._left, self._right), self._submit,
                                self.diff_view, on_line=lambda file, line: self.backend.select_line(file, line))
        return W.VBox([W.HBox([self.editor.toggle]).add_class("wb-row"), self.editor.panel, self.source.home])

    # -- the jobs ------------------------------------------------------------------------------------
    def _submit(self, label: str, python: str | None, work: Callable[[], None], *, busy: bool) -> None:
        """Queue ``work`` (see ``Jobs.submit``), showing ``python``, the line of what it does, first."""
        if python:
            self.python = python
            self._show_python()
        self.jobs.submit(label, work, busy=busy)

    def _set_busy(self, busy: bool) -> None:
        """While busy work is queued or runs, the actions wait: their buttons and toggles are disabled."""
        self.passes.set_busy(busy)
        self.run_tab.send(busy=busy)
        self.analyze.set_busy(busy)

    # -- events from the browser ---------------------------------------------------------------------
    def _pick_pair(self, left: str, right: str) -> None:
        """A pair picked in the stage list (a stage's name: it against its parent; an A or B button: that side)."""
        if {left, right} <= set(self._ex.names):  # else a stage of an Exploration replaced meanwhile
            self._left, self._right = left, right
            self._show_selection()

    def _on_passes(self, action: str, payload: dict) -> None:
        """A click in the Passes tab: a switch or group (toggle_patterns, toggle_xla), reset, or a pipeline."""
        if action in ("toggle_patterns", "toggle_xla"):
            getattr(self, action)([str(n) for n in payload.get("names", [])], bool(payload.get("on")))
        elif action in ("reset_patterns", "reset_xla"):
            getattr(self, action)()
        elif action == "set_pipeline" and str(payload.get("pipeline", "")).strip():
            self.set_pipeline(str(payload["pipeline"]))

    def _on_diff(self, action: str, payload: dict) -> None:
        """A click in the Diff tab: a picker ("pick" {side, stage}), swap, or an op of the diff ("op" {side, line})."""
        if action == "pick" and payload.get("stage") in self._ex.names:
            setattr(self, "_left" if payload.get("side") == "left" else "_right", payload["stage"])
            self._show_selection()
        elif action == "swap":
            self._swap()
        elif action == "op" and payload.get("side") in ("before", "after"):
            self.source.select_op(payload["side"], int(payload.get("line", -1)))

    def _swap(self) -> None:
        self._left, self._right = self._right, self._left
        self._show_selection()

    def _on_tab(self) -> None:
        title = self.tabs.titles[self.tabs.selected_index or 0]
        waiting = next((n for n in (self._right, self._left) if self._pending and late_name(n)), "")
        self.source.show(self._ex, self._left, self._right, visible=title == "Source", waiting=waiting)
        self.collectives.show(self._ex, self._right, visible=title == collectives.TITLE, pending=self._pending)
        self.graph.show(self._ex, self._right, visible=title == "Graph", pending=self._pending)
        self.compile.show(self._ex, visible=title == compiletab.TITLE, pending=self._pending)
        self.memory.show(self._ex, visible=title == memorytab.TITLE, pending=self._pending)
        self.backend.show(self._ex, visible=title == backendtab.TITLE, pending=self._pending)
        if title == "Cost" and self._cost_key != self._key():
            self.show_cost()

    def _key(self) -> tuple:
        """What the Cost tab shows: the Exploration, the right stage, and whether XLA's stages were still
        on their way: when they arrive, it fills anew."""
        return id(self._ex), self._right, self._pending

    # -- showing an Exploration ----------------------------------------------------------------------
    def _load(self) -> None:
        self._show_exploration(self._ex)
        if self.jobs.background:  # the first Run's reference and the Cost tab's imports, made while the user reads
            ahead(self._ex, self.run_settings.device)

    def _rebuild(self, make: Callable[[], Action]) -> None:
        """Queue a rebuild; ``make`` builds its Action on the worker, from the Exploration of that moment
        (a reset queued behind a toggle resets what the toggle left)."""
        def work():
            act = make()
            self.python = act.python
            self._show_python()
            self.jobs.relabel(act.label)
            ex = act.call(self._ex)
            self.summary.rebuilt(self._ex, ex)
            self.history.append(act.python)
            self._show_exploration(ex)

        self._submit("rebuilding", None, work, busy=True)

    def _show_exploration(self, ex: Exploration) -> None:
        """Show ``ex``: in the background, its MLIR stages now and its XLA stages when XLA's compile ends
        (``_watch``, then this again); without it, every stage at once (waiting for XLA)."""
        pending = self.jobs.background and not ex.xla_ready()
        stages = ex.pipeline_stages if pending else ex.stages  # ex.stages: XLA's, ready or waited for
        names = [s.name for s in stages]
        before, self._ex, self._pending = self._ex, ex, pending
        self._follow(before, ex)
        self._watch(ex if pending else None)
        kept = set(names) | ({n for n in (self._left, self._right) if late_name(n)} if pending else set())
        if self._right not in kept or (self._auto_right and not pending and any(s.error for s in stages)):
            self._right = default_right(stages).name  # a failed XLA compile is shown, as it was picked
            self._auto_right = pending
        if self._left not in kept:
            right = next((s for s in stages if s.name == self._right), None)
            self._left = (right.parent if right else names[-1]) or names[0]
        runnable = [s.name for s in stages if s.is_module]
        self.core.show(ex, self._left, self._right, pending=pending)
        if backendtab.TITLE not in self.tabs.titles and backendtab.applies(ex):
            self.tabs.children = (*self.tabs.children, self.backend.widget)
            self.tabs.titles = (*_TABS, backendtab.TITLE)
        self.diff_view.pair(self._left, self._right, names)
        from ...pipeline.trace import device_ids

        ids = device_ids()  # the ids alone: devices()'s DataFrame would import pandas (0.4 s of a first cell)
        self.run_tab.show(ex, runnable, ids, self.core.model["runs"])
        self.passes.show(ex, pending)  # first: the Analyze tab's switches read the patterns on from its list
        self.analyze.show(ex, runnable, ids)
        self._show_pipeline_string(ex)
        self._show_python()
        self.summary.show(ex, pending)
        # the diff anew unless it shows this pair of this Exploration already (XLA's stages arrived)
        self._show_selection(now=True, diff=self._diffed != (ex, self._left, self._right))

    def _watch(self, ex: Exploration | None) -> None:
        """Wait, off the queue, for ``ex``'s XLA compile, then show its stages if ``ex`` is still the one
        shown; the Exploration watched before is let go (its compile, if only queued, is cancelled)."""
        old, self._xla_watch = self._xla_watch, None
        if old is not None:
            old.cancel()
        if ex is not None:
            self._xla_watch = watch = ex.xla_future()
            self.jobs.after(watch, lambda: html.compiling(ex), lambda: self._ex is ex and self._show_exploration(ex),
                            then="showing XLA's stages", ended=lambda waited, took: html.compiled(ex, waited, took))

    def _follow(self, before: Exploration, ex: Exploration) -> None:
        """Rebind the bound names that still hold ``before`` to ``ex`` (see ``Panel``)."""
        if self._bind is None or ex is before:
            return
        for n in self.bound:
            if self._bind.get(n) is before:
                self._bind[n] = ex

    def _show_pipeline_string(self, ex: Exploration) -> None:
        self.pipeline_box.value = html.pipeline_string(self.name, ex.pipeline_string)

    def _show_python(self) -> None:
        n = self.name
        self.python_box.value = html.python_line(self.python or f"{n}.stages, {n}.table()", self.history,
                                                 self.bound, n)

    # -- the two stages ------------------------------------------------------------------------------
    def _show_selection(self, now: bool = False, diff: bool = True) -> None:
        """Show the picked pair everywhere; the diff is computed on the worker (now: already on it);
        without ``diff`` it stays as it is (the tabs still fill)."""
        self._auto_right = self._auto_right and now  # the user's pick (not now) is the user's
        self.diff_view.pair(self._left, self._right)
        self.core.pair(self._left, self._right)
        if not diff:
            if self.tabs.selected_index is not None:
                self._on_tab()
            return
        self._diff_token += 1
        token = self._diff_token
        if now:
            self._show_diff(token)
        else:
            act = actions.diff(self.name, self._left, self._right)
            self._submit(act.label, act.python, lambda: self._show_diff(token), busy=False)

    def _show_diff(self, token: int) -> None:
        if token != self._diff_token:
            return  # the user picked another pair meanwhile
        ex, act = self._ex, actions.diff(self.name, self._left, self._right)
        waiting = [n for n in (self._right, self._left) if self._pending and late_name(n)]
        a, b = (None, None) if waiting else (ex.stage(self._left), ex.stage(self._right))
        failed = next((s for s in (b, a) if s is not None and s.error), None)
        self._diffed = None if waiting else (ex, self._left, self._right)
        if waiting:
            self.diff_view.show_message(f"XLA is compiling: stage {waiting[0]!r} shows when its stages arrive",
                                        self._left, self._right)
        elif failed is not None:
            self.diff_view.show_message(f"stage {failed.name!r} failed, so it has no text to compare:\n\n{failed.error}",
                                        self._left, self._right)
        else:
            self.diff_view.show(act.call(ex))
        if self.tabs.selected_index is not None:
            self._on_tab()

    # -- results -----------------------------------------------------------------------------------
    def _show_run(self, r) -> None:
        self.drift.offer(r)
        self._show_runs()

    def _show_drift(self, d, where: str = "source") -> None:
        """What ``ex.drift`` found, as the drift box's buttons ask: the stage diffed against the reference with the
        op marked (``where`` "diff") or its line in the Source tab ("source"; an XLA stage's op, in its module
        turned back into StableHLO, is not marked)."""
        if {d.stage, d.reference} <= set(self._ex.names):
            self._left, self._right = d.reference, d.stage
            self._show_selection()
        self.tabs.selected_index = _TABS.index("Diff" if where == "diff" else "Source")
        if d.op.result and self._ex.stage(d.stage).group != "xla":
            self.source.pick_op(d.stage, d.op.result)

    def _show_runs(self) -> None:
        """The session's runs (``ex.history``), each marked stale where the Exploration shown has another program."""
        self.core.show(self._ex, self._left, self._right, pending=self._pending)
        self.run_tab.send(runs=self.core.model["runs"])

    def _show_compare(self, df) -> None:
        self.run_tab.compared(df)
        self._show_runs()  # each stage compared is a run of the session

    def _load_cost(self) -> None:
        key, ex = self._key(), self._ex
        src = SoFar(ex) if self._pending else ex  # while XLA compiles: the trace and MLIR stages
        self.cost.data = cost_data(self.name, src, self._right, self._pending)
        self._cost_key = key
