"""The panel's Analyze tab: which patterns change a stage when applied alone, a bisection of the
enabled patterns, XLA's passes or both for a predicate, and a reduction of a module to the smallest
one on which the predicate holds.

Results and failures are shown in the tab itself: the culprits (patterns with their group and
parameters, XLA passes, what removing each changes, what they change together, the XLA passes that
cannot be disabled), every pipeline run of the search, the predicate, and, when there is nothing to
bisect, why; a reduction's op counts before and after, its runs and the reduced module. The default
predicate is one that holds with every pattern and usually not with none (see ``default_predicate``),
so a first click finds something. The panel composes this tab: it hands over the variable's name and
how to reach the Exploration shown, queue work and switch patterns (and XLA passes) off; the tab
only reads the Exploration and calls its public methods.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, NamedTuple, Sequence

import ipywidgets as W
from markupsafe import Markup

from ...errors import UnknownNameError
from ...exploration import Exploration
from ...ir.ops import op_counts
from ...stages import STABLEHLO
from . import actions
from .html import num
from .lists import ApplicableList

__all__ = ["AnalyzeTab", "Default", "default_predicate", "applicable_html", "applicable_rows", "bisect_html",
           "bisect_failed_html",
           "reduce_html", "reduce_failed_html"]

_PATTERNS_PASS = "enzyme-hlo-generate-td"  # how a stage made by the pattern list starts its pass string
_OVER = (("patterns", "patterns"), ("XLA passes", "xla"), ("both", "all"))  # bisect's domains, as offered
_PARAMS = ("op", "n", "device", "stage")  # the predicate parameters the tab has a field for
_SHORT = {"description_width": "initial"}  # a field's label as wide as its text


class Default(NamedTuple):
    """The predicate the tab proposes for an Exploration, and a sentence on why (markup, its op escaped)."""

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
        n = max(0, final - d)
        return Default("op_count_above(op, n)", op, n, str(Markup(
            "the patterns add {} <code>{}</code> {} ({} in the end): bisect finds the fewest patterns that make "
            "more than n of them").format(d, op, where, final)))
    return Default("op_count_at_most(op, n)", op, final, str(Markup(
        "the patterns remove {} <code>{}</code> {} ({} left): bisect finds the fewest patterns that bring them "
        "down to n").format(-d, op, where, final)))


class AnalyzeTab:
    """The Analyze tab's widgets (``widget``) and actions. ``exploration()`` is the Exploration shown,
    ``submit(label, python, work, busy=...)`` queues work on the panel's worker, ``note(text)`` tells the
    status line of progress, ``progress(done, total)`` is the actions' ``on_progress``, ``enabled()``
    names the patterns on in the panel, ``switch_off(names)`` switches patterns off there and
    ``switch_off_xla(names)`` XLA passes (without it, "switch these off" leaves XLA culprits on);
    ``toggle(names, on)`` switches patterns on or off there (an applicable pattern's switch; without it,
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
        self.culprits: list[str] = []  # the culprit patterns of the last bisection
        self.culprits_xla: list[str] = []  # its culprit XLA passes
        self.reduced = None  # the last ReduceResult
        self.compared = None  # the last comparison's DataFrame
        self._default: Default | None = None
        self._runs: list[bool] = []  # the predicate's answer on each pipeline run of the bisection
        self.widget = W.VBox([*self._applicable_rows(), *self._predicate_rows(), *self._bisect_rows(),
                              *self._reduce_rows(), *self._pipelines_rows()])
        self.buttons = [self.applicable_button, self.bisect_button, self.culprits_off, self.reduce_button,
                        self.pipelines_button]
        self._show_params()

    # -- the tab's sections, top to bottom: each one's heading, then its rows ------------------------------
    def _applicable_rows(self) -> list[W.Widget]:
        self.applicable_stage = W.Dropdown(description="stage", layout=W.Layout(width="330px"), style=_SHORT)
        self.applicable_button = W.Button(description="Find applicable patterns", icon="search",
                                          layout=W.Layout(width="210px"),
                                          tooltip="apply every pattern of the catalog alone to this stage")
        self.applicable_button.on_click(lambda _b: self.find_applicable())
        self.applicable_out = W.HTML()
        self.applicable = ApplicableList(variable=self.name)  # each pattern found, a switch of it in the pipeline
        self.applicable.handler = self._on_applicable
        return [W.HTML("<b>Applicable patterns</b>: which patterns change this stage when applied alone"),
                W.HBox([self.applicable_stage, self.applicable_button]), self.applicable_out, self.applicable]

    def _predicate_rows(self) -> list[W.Widget]:
        L = W.Layout
        self.predicate = W.Dropdown(options=list(actions.PREDICATES), description="predicate",
                                    layout=L(width="290px"), style=_SHORT)
        self.pred_op = W.Text(value="stablehlo.transpose", description="op", layout=L(width="260px"), style=_SHORT)
        self.pred_n = W.IntText(value=0, description="n", layout=L(width="120px"), style=_SHORT)
        self.pred_device = W.Dropdown(description="device", layout=L(width="200px"), style=_SHORT)
        self.pred_stage = W.Combobox(description="stage", placeholder="last MLIR stage", ensure_option=False,
                                     layout=L(width="250px"), style=_SHORT)
        self.predicate.observe(lambda _ch: self._show_params(), "value")
        for w in (self.pred_op, self.pred_n, self.pred_device, self.pred_stage):
            w.observe(lambda _ch: self._show_repr(), "value")
        self.predicate_note = W.HTML()
        self.predicate_repr = W.HTML()
        return [W.HTML("<b>Predicate</b>: what a bisection and a reduction look for"),
                W.HBox([self.predicate, self.pred_op, self.pred_n, self.pred_device, self.pred_stage]),
                self.predicate_repr, self.predicate_note]

    def _bisect_rows(self) -> list[W.Widget]:
        self.over = W.Dropdown(options=_OVER, value="patterns", description="over", layout=W.Layout(width="190px"),
                               style=_SHORT)
        self.bisect_button = W.Button(description="Bisect", icon="code-fork", layout=W.Layout(width="100px"),
                                      tooltip="find a minimal set of enabled patterns and/or XLA passes for which "
                                              "the predicate holds")
        self.bisect_button.on_click(lambda _b: self.bisect())
        self.bisect_out = W.HTML()
        self.culprits_off = W.Button(description="switch these off", layout=W.Layout(width="160px", display="none"))
        self.culprits_off.on_click(lambda _b: self.switch_culprits_off())
        return [W.HTML("<b>Bisect</b>: a minimal set of enabled patterns, XLA passes (those XLA's compile ran) or "
                       "both that makes the predicate hold. It must hold with every candidate on and not with none."),
                W.HBox([self.over, self.bisect_button]), self.bisect_out, self.culprits_off]

    def _reduce_rows(self) -> list[W.Widget]:
        self.reduce_stage = W.Dropdown(description="from stage", layout=W.Layout(width="300px"), style=_SHORT)
        self.reduce_button = W.Button(description="Reduce", icon="compress", layout=W.Layout(width="100px"),
                                      tooltip="delete and cut ops of the stage's module while the predicate holds")
        self.reduce_button.on_click(lambda _b: self.reduce())
        self.reduce_out = W.HTML()
        return [W.HTML("<b>Reduce</b>: the smallest module, made from a stage's by deleting and cutting ops, on "
                       "which the predicate holds (each candidate explored as text with this pipeline)"),
                W.HBox([self.reduce_stage, self.reduce_button]), self.reduce_out]

    def _pipelines_rows(self) -> list[W.Widget]:
        self.pipelines = W.Text(value="all, no_enzyme, none", description="pipelines", layout=W.Layout(width="330px"),
                                style=_SHORT)
        self.pipelines_button = W.Button(description="Compare pipelines", icon="balance-scale",
                                         layout=W.Layout(width="170px"), tooltip="run the program through each "
                                         "pipeline: time per call, the numeric check, cost and op counts side by side")
        self.pipelines_button.on_click(lambda _b: self.compare_pipelines())
        self.pipelines_out = W.HTML()
        return [W.HTML("<b>Pipelines</b>: what the optimizer buys -- this program through each pipeline (presets "
                       "or pass strings, comma-separated), on the device picked in the Run tab"),
                W.HBox([self.pipelines, self.pipelines_button]), self.pipelines_out]

    # -- the Exploration shown ---------------------------------------------------------------------
    def show(self, ex: Exploration, runnable: Sequence[str], devices: Sequence[str]) -> None:
        """Offer ``ex``'s stages and ``devices``, and propose its default predicate unless the user chose one."""
        keep = self.applicable_stage.value
        self.applicable_stage.options = list(runnable)
        ref = ex.reference_stage().name
        self.applicable_stage.value = keep if keep in runnable else (ref if ref in runnable else None)
        keep = self.pred_device.value
        self.pred_device.options = list(devices)
        self.pred_device.value = keep if keep in devices else (ex.spec.device if ex.spec.device in devices
                                                               else devices[0] if devices else None)
        self.pred_stage.options = list(runnable)
        keep = self.reduce_stage.value
        modules = [s.name for s in ex.pipeline_stages if s.is_module and not s.error]
        self.reduce_stage.options = modules
        start = STABLEHLO if STABLEHLO in modules else ref
        self.reduce_stage.value = keep if keep in modules else (start if start in modules else None)
        old = self._default
        untouched = old is None or (self.predicate.value, self.pred_op.value, self.pred_n.value) == old[:3]
        new = default_predicate(ex)
        if untouched and new is not None:
            self.predicate.value, self.pred_op.value, self.pred_n.value = new.kind, new.op, new.n
        self._default = new if untouched else old
        self._show_note(new, any(s.produced_by.startswith(_PATTERNS_PASS) for s in ex.pipeline_stages))
        if self.applicable.rows:  # the switches say what is on in the Exploration shown
            self.applicable.enabled = sorted(self._enabled() & {r["name"] for r in self.applicable.rows})

    def _on_applicable(self, msg: dict) -> None:
        if msg.get("type") == "toggle" and msg.get("names"):
            self._toggle([str(n) for n in msg["names"]], bool(msg.get("on")))

    def _show_note(self, d: Default | None, patterns_ran: bool) -> None:
        if not patterns_ran:
            self.predicate_note.value = ('<div class="wb-note">This pipeline applies no Enzyme-JaX patterns (no '
                                         "<code>enzyme-hlo-patterns</code> stage), so a bisection has nothing to "
                                         "find: pick a preset that applies them in the Passes tab.</div>")
        elif d is None:
            self.predicate_note.value = ('<div class="wb-note">No pattern stage of this pipeline changes an op '
                                         "count, so there is no default predicate to propose: choose one that "
                                         "holds for this Exploration.</div>")
        else:
            self.predicate_note.value = str(Markup('<div class="wb-note">Proposed: <code>{}</code> with op '
                                                   "<code>{}</code>, n={}: {}.</div>").format(
                d.kind, d.op, d.n, Markup(d.why)))

    def _fields(self):
        return {"op": self.pred_op, "n": self.pred_n, "device": self.pred_device, "stage": self.pred_stage}

    def _show_params(self) -> None:
        wanted = actions.predicate_params(self.predicate.value)
        for key, widget in self._fields().items():
            widget.layout.display = "" if key in wanted else "none"
        required = self.predicate.value == "differs_from(stage)"
        self.pred_stage.placeholder = "a stage" if required else "last MLIR stage"
        if required and not self.pred_stage.value:
            self.pred_stage.value = STABLEHLO
        self._show_repr()

    def _values(self) -> dict:
        """The chosen predicate's parameters, from the fields."""
        values = {"op": self.pred_op.value, "n": int(self.pred_n.value), "device": self.pred_device.value,
                  "stage": (self.pred_stage.value or "").strip()}
        return {k: v for k, v in values.items() if k in actions.predicate_params(self.predicate.value)}

    def _show_repr(self) -> None:
        try:
            shown = Markup("<code>{}</code>").format(repr(actions.predicate(self.predicate.value,
                                                                            **self._values())[1]))
        except Exception as e:  # a field being typed: say why there is no predicate yet
            shown = f"none yet ({str(e).strip() or type(e).__name__})"
        self.predicate_repr.value = str(Markup('<div class="wb-note">predicate: {}</div>').format(shown))

    def _choose(self, kind: str | None, params: dict) -> tuple[str, dict, str]:
        """Set the predicate fields from ``kind`` and ``params``; (kind, its parameters, its Python expression)."""
        if kind:
            actions.predicate_params(kind)  # an unknown kind: UnknownNameError with the known ones
            self.predicate.value = kind
        fields = self._fields()
        for key, value in params.items():
            if key not in fields:
                raise TypeError(f"unknown predicate parameter {key!r}; the fields are {', '.join(_PARAMS)}")
            fields[key].value = "" if value is None and key == "stage" else value
        values = self._values()
        return self.predicate.value, values, actions.predicate(self.predicate.value, **values)[0]

    # -- actions -----------------------------------------------------------------------------------
    def find_applicable(self, stage: str | None = None) -> None:
        """Try every pattern of the catalog alone on a stage; list those that change it."""
        stage = stage or self.applicable_stage.value
        if stage in self.applicable_stage.options:
            self.applicable_stage.value = stage
        act = actions.applicable(self.name, stage, on_progress=self._on_progress)
        self.applicable_out.value = ""
        self.applicable.rows = []

        def work():
            df = act.call(self._exploration())
            rows = applicable_rows(df)
            self.applicable_out.value = applicable_html(self.name, stage, df)
            with self.applicable.hold_sync():
                self.applicable.rows = rows
                self.applicable.enabled = sorted(self._enabled() & {r["name"] for r in rows})

        self._submit(act.label + " (in the worker pool)", act.python, work, busy=True)

    def bisect(self, kind: str | None = None, over: str | None = None, **params) -> None:
        """Bisect ``over`` the enabled patterns ("patterns"), XLA's passes ("xla") or both ("all"; default:
        the tab's choice) for a predicate of ``actions.PREDICATES`` (params: op, n, device, stage)."""
        if over is not None:
            if over not in dict(_OVER).values():
                raise UnknownNameError("bisect domain (over=)", str(over), [v for _k, v in _OVER],
                                       "over is one of patterns, xla, all")
            self.over.value = over
        kind, values, expr = self._choose(kind, params)
        over = self.over.value
        act = actions.bisect(self.name, kind, on_run=self._progress, on_progress=self._on_progress, over=over,
                             **values)
        self.bisect_out.value = ""
        self.culprits_off.layout.display = "none"
        self.culprits, self.culprits_xla = [], []
        self._submit(act.label, act.python, lambda: self._run_bisect(act, expr, over), busy=True)

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
        stage = from_stage or self.reduce_stage.value or STABLEHLO
        if stage in self.reduce_stage.options:
            self.reduce_stage.value = stage
        act = actions.reduce(self.name, kind, stage, on_progress=self._reduce_progress, **values)
        self.reduce_out.value = ""
        self.reduced = None
        self._submit(act.label, act.python, lambda: self._run_reduce(act, expr, stage), busy=True)

    def compare_pipelines(self, pipelines: Sequence[str] | None = None, device: str | None = None) -> None:
        """``wb.compare_pipelines`` of the Exploration shown, for ``pipelines`` (default: the field's)."""
        names = list(pipelines) if pipelines is not None else [p.strip() for p in self.pipelines.value.split(",")]
        names = [p for p in names if p]
        self.pipelines.value = ", ".join(names)
        device = device or self.pred_device.value or self._exploration().spec.device
        act = actions.compare_pipelines(self.name, names, device)
        self.pipelines_out.value = ""
        self.compared = None

        def work():
            try:
                df = act.call(self._exploration())
            except Exception as e:  # shown here and, re-raised, in the status line
                self.pipelines_out.value = str(Markup('<div class="wb-result wb-error"><b>No comparison</b>: '
                                                      "{}</div>").format(str(e).strip() or type(e).__name__))
                raise
            self.compared = df
            self.pipelines_out.value = pipelines_html(df, act.python)

        self._submit(act.label, act.python, work, busy=True)

    def _reduce_progress(self, runs: int, total: int | None) -> None:
        if runs:  # 0: the search starts
            self._note(f" · reduce run {runs}")
        self._on_progress(runs, total)

    def _run_reduce(self, act: actions.Action, expr: str, stage: str) -> None:
        try:
            res = act.call(self._exploration())
        except Exception as e:  # shown here and, re-raised, in the status line
            self.reduce_out.value = reduce_failed_html(expr, stage, str(e).strip() or type(e).__name__)
            raise
        self.reduced = res
        self.reduce_out.value = reduce_html(expr, act.python, res)

    def _progress(self, runs: int, held: bool) -> None:
        self._runs.append(held)
        self._note(f" · pipeline run {runs}: the predicate {'holds' if held else 'does not hold'}")

    def _run_bisect(self, act: actions.Action, expr: str, over: str = "patterns") -> None:
        ex = self._exploration()
        self._runs = []
        try:
            res = act.call(ex)
        except Exception as e:  # shown here and, re-raised, in the status line
            self.bisect_out.value = bisect_failed_html(expr, str(e).strip() or type(e).__name__, self._runs, over)
            raise
        from ...pipeline.catalog import patterns

        cat = patterns(**dataclasses.asdict(ex.spec.selection.options)).set_index("name")
        rows = [(p, cat.at[p, "group"] if p in cat.index else "", cat.at[p, "parameters"] if p in cat.index else "")
                for p in res.patterns]
        try:
            delta, why_not = res.diff.ops_delta(), ""
        except Exception as e:  # what they change is extra information: the culprits stand without it
            delta, why_not = None, str(e).strip() or type(e).__name__
        try:
            changes = {(r.kind, r.name): r.changes for r in res.table().itertuples()}
        except Exception:  # as extra as the delta: the culprits stand without it
            changes = {}
        self.culprits, self.culprits_xla = list(res.patterns), list(res.xla_passes)
        switch_off = [actions.toggle_patterns(self.name, res.patterns, False).python] if res.patterns else []
        switch_off += [actions.toggle_xla(self.name, res.xla_passes, False).python] if res.xla_passes else []
        self.bisect_out.value = bisect_html(expr, res, rows, delta, why_not, "; ".join(switch_off), changes)
        can = res.patterns or (res.xla_passes and self._switch_off_xla is not None)
        self.culprits_off.layout.display = "" if can else "none"


# -- rendering (pure: values in, markup out) -----------------------------------------------------------
# Written with markupsafe's ``Markup.format``, as ``html.py`` is: every value (names, pass strings, errors,
# modules) is escaped unless it is ``Markup`` made here; each function returns a plain ``str`` for its widget.
_RUNS_TABLE = Markup('<details class="wb-runs"><summary>the pipeline runs</summary><table class="wb-table"><thead>'
                     "<tr><th>run</th><th>{}</th><th>predicate</th></tr></thead><tbody>{}</tbody></table></details>")


def applicable_html(name: str, stage: str, df) -> str:
    """What ``Exploration.applicable(stage, details=True)`` found, in a sentence: how many patterns change the
    stage, how many failed on it, and that each listed below (``applicable_rows``) is a switch in ``name``'s
    pipeline."""
    changed = df[df["changed"]]
    errors = df[df["error"].notna() & (df["error"] != "")] if "error" in df else df.iloc[:0]
    how = Markup("; click one to switch it on or off in <code>{}</code>'s pipeline, as the Passes tab does").format(
        name) if len(changed) else ""
    return str(Markup('<div class="wb-result">{} of {} patterns change <code>{}</code> when applied alone{}{}</div>')
               .format(len(changed), len(df), stage, f"; {len(errors)} failed on it" if len(errors) else "", how))


def applicable_rows(df) -> list[dict]:
    """The patterns of ``Exploration.applicable(stage, details=True)`` that change the stage, as the Analyze
    tab's switches show them: name, group, and the ms it took alone."""
    return [{"name": str(r.name), "group": str(r.group), "ms": num(r.seconds * 1e3)}
            for r in df[df["changed"]].itertuples()]


def _runs_html(answers: Sequence[tuple[str, bool]], on: str = "patterns on") -> Markup:
    """The pipeline runs of a bisection: which patterns were on, whether the predicate held."""
    rows = Markup("").join(Markup("<tr><td>{}</td><td>{}</td><td>{}</td></tr>").format(
        k, what, "holds" if held else "does not hold") for k, (what, held) in enumerate(answers, 1))
    return _RUNS_TABLE.format(on, rows)


def _culprits_html(res, rows: Sequence[tuple[str, str, str]], changes: dict) -> Markup:
    """The culprit patterns (``rows``: pattern, group, parameters) and XLA passes, with what removing
    each from the culprits changes (``changes``, by (kind, name): ``res.table()``)."""
    out = []
    if res.patterns or res.over == "patterns":
        body = Markup("").join(
            Markup("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
                p, g, Markup("<code>{}</code>").format(a) if a else "", changes.get(("pattern", p), ""))
            for p, g, a in rows)
        out.append(Markup('<table class="wb-table"><thead><tr><th>pattern</th><th>group</th><th>parameters</th>'
                          "<th>without it</th></tr></thead><tbody>{}</tbody></table>").format(body))
    if res.xla_passes:
        body = Markup("").join(Markup("<tr><td><code>{}</code></td><td>{}</td></tr>").format(
            p, changes.get(("xla", p), "")) for p in res.xla_passes)
        out.append(Markup('<table class="wb-table"><thead><tr><th>XLA pass</th><th>without it</th></tr></thead>'
                          "<tbody>{}</tbody></table>").format(body))
    if res.over != "patterns":
        needed = Markup(", ").join(Markup("<code>{}</code>").format(p) for p in res.always_needed) or "none"
        how = Markup(' <span class="wb-note">({})</span>').format(res.always_needed_how) \
            if res.always_needed_how else ""
        out.append(Markup("<div>XLA passes always on (the compile cannot do without them; never culprits): {}{}"
                          "</div>").format(needed, how))
    return Markup("").join(out)


def _count(n: int, one: str, many: str) -> Markup:
    return Markup("<b>{} {}</b>").format(n, one if n == 1 else many)


def _together(res, delta, why_not: str) -> Markup:
    """What a bisection's culprits change together: the chips of ``delta`` (the ops delta of ``res.diff``),
    or why it could not be computed (``why_not``)."""
    on = "xla:optimized" if res.xla_passes and not res.patterns else "the last MLIR stage"
    who = "the patterns" if res.patterns and res.xla_passes else "they"
    if delta is None:
        return Markup("<div>what {} change could not be computed: {}</div>").format(who, why_not)
    if delta.empty:
        return Markup("<div>together {} change no op count of {} (they rewire or re-attribute)</div>").format(who, on)
    chips = Markup("").join(
        Markup('<span class="wb-chip {}"><code>{}</code> {}&rarr;{} ({:+d})</span>').format(
            "wb-up" if r.delta > 0 else "wb-down", r.op, r.before, r.after, r.delta)
        for r in delta.head(12).itertuples())
    return Markup("<div>what {} do together, on {}: {}</div>").format(who, on, chips)


def bisect_html(expr: str, res, rows: Sequence[tuple[str, str, str]], delta, why_not: str, switch_off: str,
                changes: dict | None = None) -> str:
    """A bisection's culprits (``rows``: pattern, group, parameters; ``res.xla_passes``; ``changes``: what
    removing each changes, by (kind, name)), what they change together (``delta``, the ops delta of
    ``res.diff``; ``why_not`` when it could not be computed), the XLA passes always on, its runs, and
    ``switch_off``, the line that disables them."""
    over = getattr(res, "over", "patterns")
    counts = ([_count(len(res.patterns), "pattern", "patterns")] if res.patterns or over == "patterns" else []) \
        + ([_count(len(res.xla_passes), "XLA pass", "XLA passes")] if res.xla_passes else [])
    total = len(res.patterns) + len(res.xla_passes)
    head = Markup('<div class="wb-result"><div>{} make{} <code>{}</code> hold ({} pipeline runs, {} s); without '
                  "any one of them it does not.</div>").format(
        Markup(" and ").join(counts), "s" * (total == 1), expr, res.runs, num(res.seconds))
    noun = {"xla": ("XLA pass", "XLA passes"), "all": ("candidate", "candidates")}.get(over, ("pattern", "patterns"))
    answers = [(f"{size} {noun[size != 1]}", held) for size, held in res.log]
    return str(Markup("{}{}{}{}<div>to switch them off: <code>{}</code></div></div>").format(
        head, _culprits_html(res, rows, changes or {}), _together(res, delta, why_not),
        _runs_html(answers, f"{noun[1]} on"), switch_off))


def bisect_failed_html(expr: str, message: str, answers: Sequence[bool], over: str = "patterns") -> str:
    """A bisection that had nothing to bisect or failed: the predicate, the message, the runs it made."""
    what = {"xla": ("every XLA pass", "no XLA pass"),  # the two runs a bisection starts with
            "all": ("every pattern and XLA pass", "no pattern nor XLA pass")}.get(over, ("every enabled pattern",
                                                                                     "no pattern"))
    runs = [(what[k] if k < 2 else "a subset", held) for k, held in enumerate(answers)]
    if "does not hold with all" in message:
        advice = "choose a predicate that holds for this Exploration (with every candidate on)"
    elif "holds with no " in message:
        advice = ("the candidates are not what makes it hold: choose a predicate that fails without them, "
                  "or bisect over other candidates")
    else:
        advice = "the bisection stopped: see the message"
    return str(Markup('<div class="wb-result wb-error"><div><b>Nothing bisected</b> for <code>{}</code>: {}</div>'
                      "<div>{}.</div>{}</div>").format(expr, message, advice, _runs_html(runs, "on") if runs else ""))


def reduce_html(expr: str, python: str, res) -> str:
    """A reduction (a ReduceResult): ops before and after, its runs, skipped candidates, whether it was
    interrupted, the reduced module's text, and ``python``, the line that makes it."""
    state = Markup(" <b>Interrupted</b>: the smallest module found so far.") if res.interrupted else ""
    errors = f", {res.errors} on which the predicate raised" if getattr(res, "errors", 0) else ""
    return str(Markup(
        '<div class="wb-result"><div>Reduced <code>{}</code> for <code>{}</code> (<code>{}</code>): <b>ops {} &rarr; '
        "{}</b>, {} runs, {} skipped (did not verify){}, {} s.{}</div>"
        '<pre class="wb-reduced">{}</pre><div><code>{}</code>; then <code>r.exploration</code> explores it</div>'
        "</div>").format(res.stage, expr, repr(res.predicate), res.ops_before, res.ops_after, res.runs, res.skipped,
                         errors, num(res.seconds), state, res.text, python))


def reduce_failed_html(expr: str, stage: str, message: str) -> str:
    """A reduction that had nothing to reduce or failed: the stage, the predicate, the message."""
    return str(Markup('<div class="wb-result wb-error"><div><b>Nothing reduced</b> from <code>{}</code> for '
                      "<code>{}</code>: {}</div></div>").format(stage, expr, message))


_PIPELINE_COLUMNS = ("pipeline", "stage", "median_ms", "iqr_ms", "check_passed", "max_rel_err", "flops", "bytes",
                     "xla_flops", "ops", "error")


def pipelines_html(df, python: str) -> str:
    """A pipeline comparison (``wb.compare_pipelines``'s DataFrame): time per call, check, cost and ops
    per pipeline, the op counts by dialect, and ``python``, the line that makes it."""
    from .html import table

    main = df[[c for c in _PIPELINE_COLUMNS if c in df.columns]]
    dialects = df[["pipeline"] + [c for c in df.columns if c.startswith("ops_")]]
    return str(Markup(
        '<div class="wb-result"><div>Median time per call (ms) after a warm-up, and its interquartile range; the '
        "numeric check against the program in float64; the analytic cost and XLA's of the final module; its "
        "ops.</div>{}<div>ops by dialect</div>{}<div><code>{}</code> · <code>wb.plot_pipelines(df)</code> draws it"
        "</div></div>").format(Markup(table(main)), Markup(table(dialects)), python))
