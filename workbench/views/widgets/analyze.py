"""The panel's Analyze tab: which patterns change a stage when applied alone, a bisection of the
enabled patterns, XLA's passes or both for a predicate, a reduction of a module to the smallest one on
which the predicate holds, and a comparison of pipelines.

Python makes the facts (``data``): each menu's choices, the form's values, the predicate's repr and the
one proposed (``default_predicate``), and each action's result. The component "analyze" (components/analyze.ts
in extensions/hlo-workbench-lab) draws them; its clicks come back as actions: set {field: value}, toggle
{names, on} (an applicable pattern's switch), and the public methods by name (``_ACTIONS``).
"""
from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from typing import Callable, NamedTuple, Sequence

from ...artifacts.jsonout import plain_json, table_json
from ...errors import UnknownNameError
from ...exploration import Exploration
from ...ir.ops import op_counts
from ...stages import STABLEHLO
from . import actions
from .component import Component

__all__ = ["AnalyzeTab", "Default", "default_predicate", "applicable_rows"]

_PATTERNS_PASS = "enzyme-hlo-generate-td"  # how a stage made by the pattern list starts its pass string
_OVER = (("patterns", "patterns"), ("XLA passes", "xla"), ("both", "all"))  # bisect's domains, as offered
_PARAMS = ("op", "n", "device", "stage")  # the predicate parameters the tab has a field for
_ACTIONS = ("set", "find_applicable", "bisect", "switch_culprits_off", "reduce", "compare_pipelines")
_NOUN = {"patterns": ("pattern", "patterns"), "xla": ("XLA pass", "XLA passes"), "all": ("candidate", "candidates")}
_FIRST_RUNS = {"patterns": ("every enabled pattern", "no pattern"), "xla": ("every XLA pass", "no XLA pass"),
               "all": ("every pattern and XLA pass", "no pattern nor XLA pass")}  # the two runs a bisection starts with
_REDUCED = ("stage", "ops_before", "ops_after", "runs", "skipped", "errors", "seconds", "interrupted", "text")
_PIPELINE_COLUMNS = ("pipeline", "stage", "median_ms", "iqr_ms", "check_passed", "max_rel_err", "flops", "bytes",
                     "xla_flops", "ops", "error")


class Default(NamedTuple):
    """The predicate the tab proposes for an Exploration, and a sentence on why."""

    kind: str
    op: str
    n: int
    why: str


def default_predicate(ex: Exploration) -> Default | None:
    """The op whose count the pattern stages change most, as a predicate that holds with every pattern:
    an op the patterns add, ``op_count_above(op, n)`` with ``n`` its count without their additions;
    an op they remove, ``op_count_at_most(op, n)`` with ``n`` its final count. With no pattern, the
    count is (usually) on the other side of ``n``, so the bisection has something to find. None when
    no pattern stage changes an op count."""
    stages = {s.name: s for s in ex.pipeline_stages}
    delta: Counter[str] = Counter()
    ran = 0
    for s in stages.values():
        if s.error or not s.produced_by.startswith(_PATTERNS_PASS) or s.parent not in stages:
            continue
        ran += 1
        if s.changed:
            after, before = op_counts(s.text), op_counts(stages[s.parent].text)
            for op in after.keys() | before.keys():
                delta[op] += after[op] - before[op]
    moved = [(op, d) for op, d in delta.items() if d]
    if not moved:
        return None
    op, d = min(moved, key=lambda od: (-abs(od[1]), od[0]))
    final = op_counts(ex.default_run_stage().text)[op]
    where = f"over the {ran} pattern stage{'s' * (ran != 1)}"
    if d > 0:
        return Default("op_count_above(op, n)", op, max(0, final - d), f"the patterns add {d} {op} {where} ({final} in "
                       "the end): bisect finds the fewest patterns that make more than n of them")
    return Default("op_count_at_most(op, n)", op, final, f"the patterns remove {-d} {op} {where} ({final} left): "
                   "bisect finds the fewest patterns that bring them down to n")


def applicable_rows(df) -> list[dict]:
    """The patterns of ``Exploration.applicable(stage, details=True)`` that change the stage, as the Analyze
    tab's switches show them: name, group, and the ms it took alone."""
    return [{"name": str(r.name), "group": str(r.group), "ms": float(r.seconds) * 1e3}
            for r in df[df["changed"]].itertuples()]


def _said(e: BaseException) -> str:
    return str(e).strip() or type(e).__name__


def _keep(value, options: Sequence, *fallbacks):
    """``value`` if it is one of ``options``, else the first of ``fallbacks`` that is (None if none)."""
    return next((v for v in (value, *fallbacks) if v is not None and v in options), None)


class AnalyzeTab:
    """The Analyze tab's component (``widget``), its form's values (``form``) and actions. ``exploration()`` is
    the Exploration shown, ``submit(label, python, work, busy=...)`` queues work on the panel's worker,
    ``note(text)`` tells the status line of progress, ``progress(done, total)`` is the actions' ``on_progress``,
    ``enabled()`` names the patterns on in the panel, ``switch_off(names)`` switches patterns off there and
    ``switch_off_xla(names)`` XLA passes (without it, "switch these off" leaves XLA culprits on);
    ``toggle(names, on)`` switches patterns on or off (an applicable pattern's switch; without it,
    ``switch_off`` for a pattern switched off, and one switched on stays off)."""

    def __init__(self, name: str, exploration: Callable[[], Exploration], submit: Callable,
                 note: Callable[[str], None], progress: Callable[[int, int | None], None],
                 enabled: Callable[[], set[str]], switch_off: Callable[[list[str]], None],
                 switch_off_xla: Callable[[list[str]], None] | None = None,
                 toggle: Callable[[list[str], bool], None] | None = None):
        self.name = name
        self._toggle = toggle or (lambda names, on: None if on else switch_off(names))
        self._exploration, self._submit, self._note, self._enabled = exploration, submit, note, enabled
        self._on_progress = progress
        self._switch_off, self._switch_off_xla = switch_off, switch_off_xla
        self.culprits, self.culprits_xla = [], []  # the last bisection's culprit patterns and XLA passes
        self.reduced = self.compared = None  # the last ReduceResult, the last comparison's DataFrame
        self._default: Default | None = None
        self._runs: list[bool] = []  # the predicate's answer on each pipeline run of the bisection
        self._lock = threading.RLock()  # the panel's worker and the browser's messages both change the facts
        self.form = {"applicable_stage": None, "predicate": next(iter(actions.PREDICATES)), "op": "stablehlo.transpose",
                     "n": 0, "device": None, "stage": "", "over": "patterns", "from_stage": None,
                     "pipelines": "all, no_enzyme, none"}
        self._choices = {"applicable_stage": [], "predicate": list(actions.PREDICATES), "device": [],
                         "over": [list(o) for o in _OVER], "from_stage": []}  # each menu's, as the form names it
        self._facts = {"name": name, "busy": False, "choices": self._choices, "proposal": None, "applicable": None,
                       "bisect": None, "reduce": None, "pipelines": None}
        self.widget = self.view = Component("analyze", {}, on_action=self._on_action)
        self._send()

    @property
    def data(self) -> dict:
        return self.view.data

    def set_busy(self, busy: bool) -> None:
        """While the panel's actions wait, the tab's buttons and switches are held."""
        self._send(busy=busy)

    def _send(self, **facts) -> None:
        with self._lock:
            self._facts.update(facts)
            kind, shown = self.form["predicate"], {}
            try:
                shown["expr"] = repr(actions.predicate(kind, **self._values())[1])
            except Exception as e:  # a field being typed: the component says why there is no predicate yet
                shown["expr_error"] = _said(e)
            self.view.data = plain_json({**self._facts, **shown, "form": dict(self.form),
                                         "params": list(actions.predicate_params(kind)),
                                         "stage_required": kind == "differs_from(stage)"})

    def _on_action(self, action: str, payload: dict) -> None:
        if action == "toggle" and payload.get("names"):
            self._toggle([str(n) for n in payload["names"]], bool(payload.get("on")))
        elif action in _ACTIONS:
            getattr(self, action)(**payload)

    def set(self, **fields) -> None:
        """Set the form's fields (``form``'s keys); a predicate that needs a stage gets "stablehlo" if it has none."""
        unknown = set(fields) - set(self.form)
        if unknown:
            raise TypeError(f"unknown field {sorted(unknown)[0]!r}; the fields are {', '.join(self.form)}")
        if "predicate" in fields:
            actions.predicate_params(fields["predicate"])  # an unknown kind: UnknownNameError with the known ones
        if "over" in fields and fields["over"] not in dict(_OVER).values():
            raise UnknownNameError("bisect domain (over=)", str(fields["over"]), [v for _k, v in _OVER],
                                   "over is one of patterns, xla, all")
        with self._lock:
            self.form.update(fields, **({"n": int(fields["n"] or 0)} if "n" in fields else {}))
            if "predicate" in fields and self.form["predicate"] == "differs_from(stage)" and not self.form["stage"]:
                self.form["stage"] = STABLEHLO
            self._send()

    # -- the Exploration shown ---------------------------------------------------------------------
    def show(self, ex: Exploration, runnable: Sequence[str], devices: Sequence[str]) -> None:
        """Offer ``ex``'s stages and ``devices``, and propose its default predicate unless the user chose one."""
        ref, f = ex.reference_stage().name, self.form
        modules = [s.name for s in ex.pipeline_stages if s.is_module and not s.error]
        new = default_predicate(ex)
        with self._lock:
            f["applicable_stage"] = _keep(f["applicable_stage"], runnable, ref)
            f["device"] = _keep(f["device"], devices, ex.spec.device, *devices[:1])
            f["from_stage"] = _keep(f["from_stage"], modules, STABLEHLO, ref)
            old = self._default
            untouched = old is None or (f["predicate"], f["op"], f["n"]) == old[:3]
            if untouched and new is not None:
                f["predicate"], f["op"], f["n"] = new.kind, new.op, new.n
            self._default = new if untouched else old
            ran = any(s.produced_by.startswith(_PATTERNS_PASS) for s in ex.pipeline_stages)
            proposal = {"state": "no-patterns"} if not ran else {"state": "proposed", **new._asdict()} if new else \
                {"state": "no-default"}
            found = self._facts["applicable"]
            if found and found["state"] == "found":  # the switches say what is on in the Exploration shown
                found = {**found, "on": sorted(self._enabled() & {r["name"] for r in found["rows"]})}
            self._choices.update(applicable_stage=list(runnable), device=list(devices), from_stage=modules)
            self._send(proposal=proposal, applicable=found)

    def _values(self) -> dict:
        """The chosen predicate's parameters, from the form."""
        f = self.form
        values = {"op": f["op"], "n": int(f["n"]), "device": f["device"], "stage": (f["stage"] or "").strip()}
        return {k: v for k, v in values.items() if k in actions.predicate_params(f["predicate"])}

    def _choose(self, kind: str | None, params: dict) -> tuple[str, dict, str]:
        """Set the predicate fields from ``kind`` and ``params``; (kind, its parameters, its Python expression)."""
        unknown = set(params) - set(_PARAMS)
        if unknown:
            raise TypeError(f"unknown predicate parameter {sorted(unknown)[0]!r}; the fields are {', '.join(_PARAMS)}")
        self.set(**({"predicate": kind} if kind else {}),
                 **{k: "" if v is None and k == "stage" else v for k, v in params.items()})
        values = self._values()
        return self.form["predicate"], values, actions.predicate(self.form["predicate"], **values)[0]

    def _job(self, key: str, act: actions.Action, work: Callable[[], dict], failed: Callable[[str], dict] | None = None,
             label: str | None = None) -> None:
        """Queue ``work`` for the result ``key``: "running" until it ends, then what ``work`` returns, or what
        ``failed`` makes of its error (which, re-raised, the status line shows too)."""
        self._send(**{key: {"state": "running", "label": act.label}})

        def job():
            result = None
            try:
                result = work()
            except Exception as e:
                result = failed(_said(e)) if failed else None
                raise
            finally:
                self._send(**{key: result})

        self._submit(label or act.label, act.python, job, busy=True)

    # -- actions -----------------------------------------------------------------------------------
    def find_applicable(self, stage: str | None = None) -> None:
        """Try every pattern of the catalog alone on a stage; list those that change it."""
        stage = stage or self.form["applicable_stage"]
        if stage in self._choices["applicable_stage"]:
            self.set(applicable_stage=stage)
        act = actions.applicable(self.name, stage, on_progress=self._on_progress)

        def work() -> dict:
            df = act.call(self._exploration())
            rows = applicable_rows(df)
            failed = int((df["error"].notna() & (df["error"] != "")).sum()) if "error" in df else 0
            return {"state": "found", "stage": stage, "total": len(df), "failed": failed, "rows": rows,
                    "on": sorted(self._enabled() & {r["name"] for r in rows})}

        self._job("applicable", act, work, label=act.label + " (in the worker pool)")

    def bisect(self, kind: str | None = None, over: str | None = None, **params) -> None:
        """Bisect ``over`` the enabled patterns ("patterns"), XLA's passes ("xla") or both ("all"; default:
        the tab's choice) for a predicate of ``actions.PREDICATES`` (params: op, n, device, stage)."""
        if over is not None:
            self.set(over=over)
        kind, values, expr = self._choose(kind, params)
        over = self.form["over"]
        act = actions.bisect(self.name, kind, on_run=self._progress, on_progress=self._on_progress, over=over,
                             **values)
        self.culprits, self.culprits_xla = [], []
        self._runs = []
        first = _FIRST_RUNS[over]
        self._job("bisect", act, lambda: self._bisected(act, expr, over), lambda message: {
            "state": "failed", "expr": expr, "message": message, "log_on": "on",
            "reason": "not-with-all" if "does not hold with all" in message else
            "with-none" if "holds with no " in message else "stopped",
            "log": [[first[k] if k < 2 else "a subset", held] for k, held in enumerate(self._runs)]})

    def switch_culprits_off(self) -> None:
        """Switch the last bisection's culprit patterns off, and its culprit XLA passes."""
        if self.culprits:
            self._switch_off(list(self.culprits))
        if self.culprits_xla and self._switch_off_xla is not None:
            self._switch_off_xla(list(self.culprits_xla))

    def reduce(self, kind: str | None = None, from_stage: str | None = None, **params) -> None:
        """Reduce ``from_stage``'s module (default: the tab's choice, "stablehlo" at first) for a predicate
        of ``actions.PREDICATES`` (params: op, n, device, stage -- the predicate's own stage)."""
        kind, values, expr = self._choose(kind, params)
        stage = from_stage or self.form["from_stage"] or STABLEHLO
        if stage in self._choices["from_stage"]:
            self.set(from_stage=stage)
        act = actions.reduce(self.name, kind, stage, on_progress=self._reduce_progress, **values)
        self.reduced = None

        def work() -> dict:
            self.reduced = r = act.call(self._exploration())
            return {"state": "reduced", "expr": expr, "predicate": repr(r.predicate), "python": act.python,
                    **{k: getattr(r, k) for k in _REDUCED}}

        self._job("reduce", act, work,
                  lambda message: {"state": "failed", "stage": stage, "expr": expr, "message": message})

    def compare_pipelines(self, pipelines: Sequence[str] | None = None, device: str | None = None) -> None:
        """``wb.compare_pipelines`` of the Exploration shown, for ``pipelines`` (default: the field's)."""
        given = self.form["pipelines"].split(",") if pipelines is None else pipelines
        names = [p.strip() for p in given if p.strip()]
        self.set(pipelines=", ".join(names))
        device = device or self.form["device"] or self._exploration().spec.device
        act = actions.compare_pipelines(self.name, names, device)
        self.compared = None

        def work() -> dict:
            self.compared = df = act.call(self._exploration())
            main = df[[c for c in _PIPELINE_COLUMNS if c in df.columns]]
            dialects = df[["pipeline"] + [c for c in df.columns if c.startswith("ops_")]]
            return {"state": "compared", "table": table_json(main, "pipelines"),
                    "dialects": table_json(dialects, "dialects"), "python": act.python}

        self._job("pipelines", act, work, lambda message: {"state": "failed", "message": message})

    def _reduce_progress(self, runs: int, total: int | None) -> None:
        if runs:  # 0: the search starts
            self._note(f" · reduce run {runs}")
        self._on_progress(runs, total)

    def _progress(self, runs: int, held: bool) -> None:
        self._runs.append(held)
        self._note(f" · pipeline run {runs}: the predicate {'holds' if held else 'does not hold'}")

    def _bisected(self, act: actions.Action, expr: str, over: str) -> dict:
        """A bisection's facts: the culprits (patterns with group and parameters, XLA passes; what removing each
        changes), what they change together (or why that could not be computed), the XLA passes always on, the
        runs, and the line that switches the culprits off."""
        from ...pipeline.catalog import patterns

        ex = self._exploration()
        res = act.call(ex)
        cat = patterns(**dataclasses.asdict(ex.spec.selection.options)).set_index("name")
        try:
            delta, why_not = res.diff.ops_delta().head(12).to_dict("records"), ""
        except Exception as e:  # what they change is extra information: the culprits stand without it
            delta, why_not = None, _said(e)
        try:
            changes = {(r.kind, r.name): r.changes for r in res.table().itertuples()}
        except Exception:  # as extra as the delta: the culprits stand without it
            changes = {}
        self.culprits, self.culprits_xla = list(res.patterns), list(res.xla_passes)
        switch_off = [actions.toggle_patterns(self.name, res.patterns, False).python] if res.patterns else []
        switch_off += [actions.toggle_xla(self.name, res.xla_passes, False).python] if res.xla_passes else []
        noun = _NOUN[over]
        info = lambda p, col: str(cat.at[p, col]) if p in cat.index else ""  # noqa: E731
        return {
            "state": "found", "expr": expr, "over": res.over, "runs": res.runs, "seconds": res.seconds,
            "patterns": [{"name": p, "group": info(p, "group"), "parameters": info(p, "parameters"),
                          "changes": changes.get(("pattern", p), "")} for p in res.patterns],
            "xla": [{"name": p, "changes": changes.get(("xla", p), "")} for p in res.xla_passes],
            "always_needed": None if res.over == "patterns" else list(res.always_needed),
            "always_needed_how": res.always_needed_how, "delta": delta, "why_not": why_not,
            "delta_on": "xla:optimized" if res.xla_passes and not res.patterns else "the last MLIR stage",
            "log": [[f"{size} {noun[size != 1]}", held] for size, held in res.log], "log_on": f"{noun[1]} on",
            "python": "; ".join(switch_off),
            "can_switch_off": bool(res.patterns or (res.xla_passes and self._switch_off_xla is not None))}
