"""The panel's Analyze tab: which patterns change a stage when applied alone, and a bisection of the
enabled patterns for a predicate.

Results and failures are shown in the tab itself: the culprits (their group and parameters, and
what they change together), every pipeline run of the search, the predicate, and, when there is
nothing to bisect, why. The default predicate is one that holds with every pattern and usually not
with none (see ``default_predicate``), so a first click finds something. The panel composes this
tab: it hands over the variable's name and how to reach the Exploration shown, queue work and
switch patterns off; the tab only reads the Exploration and calls its public methods.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, NamedTuple, Sequence

import ipywidgets as W

from ...exploration import Exploration
from ...ir.ops import op_counts
from . import actions
from .html import esc, num

__all__ = ["AnalyzeTab", "Default", "default_predicate", "applicable_html", "bisect_html", "bisect_failed_html"]

_PATTERNS_PASS = "enzyme-hlo-generate-td"  # how a stage made by the pattern list starts its pass string


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
        n = max(0, final - d)
        return Default("op_count_above(op, n)", op, n,
                       f"the patterns add {d} <code>{esc(op)}</code> {where} ({final} in the end): bisect "
                       "finds the fewest patterns that make more than n of them")
    return Default("op_count_at_most(op, n)", op, final,
                   f"the patterns remove {-d} <code>{esc(op)}</code> {where} ({final} left): bisect finds "
                   "the fewest patterns that bring them down to n")


class AnalyzeTab:
    """The Analyze tab's widgets (``widget``) and actions. ``exploration()`` is the Exploration shown,
    ``submit(label, python, work, busy=...)`` queues work on the panel's worker, ``note(text)`` tells the
    status line of progress, ``progress(done, total)`` is the actions' ``on_progress``, ``enabled()``
    names the patterns on in the panel, ``switch_off(names)`` switches patterns off there."""

    def __init__(self, name: str, exploration: Callable[[], Exploration], submit: Callable,
                 note: Callable[[str], None], progress: Callable[[int, int | None], None],
                 enabled: Callable[[], set[str]], switch_off: Callable[[list[str]], None]):
        self.name = name
        self._exploration, self._submit, self._note, self._enabled = exploration, submit, note, enabled
        self._on_progress = progress
        self.culprits: list[str] = []
        self._default: Default | None = None
        self._runs: list[bool] = []  # the predicate's answer on each pipeline run of the bisection
        L = W.Layout
        short = {"description_width": "initial"}
        self.applicable_stage = W.Dropdown(description="stage", layout=L(width="330px"), style=short)
        self.applicable_button = W.Button(description="Find applicable patterns", icon="search",
                                          layout=L(width="210px"),
                                          tooltip="apply every pattern of the catalog alone to this stage")
        self.applicable_button.on_click(lambda _b: self.find_applicable())
        self.applicable_out = W.HTML()
        self.predicate = W.Dropdown(options=list(actions.PREDICATES), description="predicate",
                                    layout=L(width="290px"), style=short)
        self.pred_op = W.Text(value="stablehlo.transpose", description="op", layout=L(width="260px"), style=short)
        self.pred_n = W.IntText(value=0, description="n", layout=L(width="120px"), style=short)
        self.pred_device = W.Dropdown(description="device", layout=L(width="200px"), style=short)
        self.predicate.observe(lambda _ch: self._show_params(), "value")
        self.predicate_note = W.HTML()
        self.bisect_button = W.Button(description="Bisect", icon="code-fork", layout=L(width="100px"),
                                      tooltip="find a minimal set of enabled patterns for which the predicate holds")
        self.bisect_button.on_click(lambda _b: self.bisect())
        self.bisect_out = W.HTML()
        self.culprits_off = W.Button(description="switch these off", layout=L(width="160px", display="none"))
        self.culprits_off.on_click(lambda _b: switch_off(self.culprits))
        self.buttons = [self.applicable_button, self.bisect_button, self.culprits_off]
        self.widget = W.VBox([
            W.HTML("<b>Applicable patterns</b>: which patterns change this stage when applied alone"),
            W.HBox([self.applicable_stage, self.applicable_button]), self.applicable_out,
            W.HTML("<b>Bisect</b>: a minimal set of enabled patterns that makes the predicate hold on the "
                   "last MLIR stage. The predicate must hold with every enabled pattern and not with none."),
            W.HBox([self.predicate, self.pred_op, self.pred_n, self.pred_device, self.bisect_button]),
            self.predicate_note, self.bisect_out, self.culprits_off,
        ])
        self._show_params()

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
        old = self._default
        untouched = old is None or (self.predicate.value, self.pred_op.value, self.pred_n.value) == old[:3]
        new = default_predicate(ex)
        if untouched and new is not None:
            self.predicate.value, self.pred_op.value, self.pred_n.value = new.kind, new.op, new.n
        self._default = new if untouched else old
        self._show_note(new, any(s.produced_by.startswith(_PATTERNS_PASS) for s in ex.pipeline_stages))

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
            self.predicate_note.value = (f'<div class="wb-note">Proposed: <code>{esc(d.kind)}</code> with op '
                                         f"<code>{esc(d.op)}</code>, n={d.n}: {d.why}.</div>")

    def _show_params(self) -> None:
        wanted = actions.predicate_params(self.predicate.value)
        for key, widget in (("op", self.pred_op), ("n", self.pred_n), ("device", self.pred_device)):
            widget.layout.display = "" if key in wanted else "none"

    # -- actions -----------------------------------------------------------------------------------
    def find_applicable(self, stage: str | None = None) -> None:
        """Try every pattern of the catalog alone on a stage; list those that change it."""
        stage = stage or self.applicable_stage.value
        if stage in self.applicable_stage.options:
            self.applicable_stage.value = stage
        act = actions.applicable(self.name, stage, on_progress=self._on_progress)
        self.applicable_out.value = ""

        def work():
            df = act.call(self._exploration())
            self.applicable_out.value = applicable_html(self.name, stage, df, self._enabled())

        self._submit(act.label + " (in the worker pool)", act.python, work, busy=True)

    def bisect(self, kind: str | None = None, **params) -> None:
        """Bisect the enabled patterns for a predicate of ``actions.PREDICATES`` (params: op, n, device)."""
        if kind:
            actions.predicate_params(kind)  # an unknown kind: UnknownNameError with the known ones
            self.predicate.value = kind
        for key, widget in (("op", self.pred_op), ("n", self.pred_n), ("device", self.pred_device)):
            if key in params:
                widget.value = params[key]
        kind = self.predicate.value
        wanted = actions.predicate_params(kind)
        values = {"op": self.pred_op.value, "n": int(self.pred_n.value), "device": self.pred_device.value}
        values = {k: v for k, v in values.items() if k in wanted}
        expr = actions.predicate(kind, **values)[0]
        act = actions.bisect(self.name, kind, on_run=self._progress, on_progress=self._on_progress, **values)
        self.bisect_out.value = ""
        self.culprits_off.layout.display = "none"
        self.culprits = []
        self._submit(act.label, act.python, lambda: self._run_bisect(act, expr), busy=True)

    def _progress(self, runs: int, held: bool) -> None:
        self._runs.append(held)
        self._note(f" · pipeline run {runs}: the predicate {'holds' if held else 'does not hold'}")

    def _run_bisect(self, act: actions.Action, expr: str) -> None:
        ex = self._exploration()
        self._runs = []
        try:
            res = act.call(ex)
        except Exception as e:  # shown here and, re-raised, in the status line
            self.bisect_out.value = bisect_failed_html(expr, str(e).strip() or type(e).__name__, self._runs)
            raise
        from ...pipeline.catalog import patterns

        cat = patterns(**dataclasses.asdict(ex.spec.selection.options)).set_index("name")
        rows = [(p, cat.at[p, "group"] if p in cat.index else "", cat.at[p, "parameters"] if p in cat.index else "")
                for p in res.patterns]
        try:
            delta, why_not = res.diff.ops_delta(), ""
        except Exception as e:  # what they change is extra information: the culprits stand without it
            delta, why_not = None, str(e).strip() or type(e).__name__
        self.culprits = list(res.patterns)
        switch_off = actions.toggle_patterns(self.name, res.patterns, False).python
        self.bisect_out.value = bisect_html(expr, res, rows, delta, why_not, switch_off)
        self.culprits_off.layout.display = "" if res.patterns else "none"


# -- rendering (pure: values in, markup out) -----------------------------------------------------------
def applicable_html(name: str, stage: str, df, enabled: set[str]) -> str:
    """``Exploration.applicable(stage, details=True)``: the patterns that change the stage, and
    whether each is in ``name``'s pipeline (``enabled``)."""
    changed = df[df["changed"]]
    errors = df[df["error"].notna() & (df["error"] != "")] if "error" in df else df.iloc[:0]
    rows = "".join(
        f"<tr><td><code>{esc(r.name)}</code></td><td>{esc(r.group)}</td><td>{num(r.seconds * 1e3)}</td>"
        f"<td>{'on' if r.name in enabled else '<b>off</b>'}</td></tr>"
        for r in changed.itertuples())
    return (f'<div class="wb-result">{len(changed)} of {len(df)} patterns change '
            f"<code>{esc(stage)}</code> when applied alone"
            + (f"; {len(errors)} failed on it" if len(errors) else "")
            + ('<table class="wb-table"><thead><tr><th>pattern</th><th>group</th><th>ms</th>'
               f"<th>in {name}'s pipeline</th></tr></thead><tbody>{rows}</tbody></table>" if rows else "")
            + "</div>")


def _runs_html(answers: Sequence[tuple[str, bool]]) -> str:
    """The pipeline runs of a bisection: which patterns were on, whether the predicate held."""
    rows = "".join(f"<tr><td>{k}</td><td>{esc(what)}</td><td>{'holds' if held else 'does not hold'}</td></tr>"
                   for k, (what, held) in enumerate(answers, 1))
    return ('<details class="wb-runs"><summary>the pipeline runs</summary><table class="wb-table"><thead><tr>'
            f"<th>run</th><th>patterns on</th><th>predicate</th></tr></thead><tbody>{rows}</tbody></table></details>")


def bisect_html(expr: str, res, rows: Sequence[tuple[str, str, str]], delta, why_not: str, switch_off: str) -> str:
    """A bisection's culprits (``rows``: pattern, group, parameters), what they change together
    (``delta``, the ops delta of ``res.diff``; ``why_not`` when it could not be computed), its runs,
    and ``switch_off``, the line that disables them."""
    n = len(res.patterns)
    head = (f'<div class="wb-result"><div><b>{n} pattern{"s" * (n != 1)}</b> make{"s" * (n == 1)} '
            f"<code>{esc(expr)}</code> hold ({res.runs} pipeline runs, {num(res.seconds)} s); without "
            f"any one of them it does not.</div>")
    body = "".join(f"<tr><td><code>{esc(p)}</code></td><td>{esc(g)}</td>"
                   f"<td>{f'<code>{esc(a)}</code>' if a else ''}</td></tr>" for p, g, a in rows)
    culprits = ('<table class="wb-table"><thead><tr><th>pattern</th><th>group</th><th>parameters</th></tr>'
                f"</thead><tbody>{body}</tbody></table>")
    if delta is None:
        change = f"<div>what they change could not be computed: {esc(why_not)}</div>"
    elif delta.empty:
        change = "<div>together they change no op count of the last MLIR stage (they rewire or re-attribute)</div>"
    else:
        chips = "".join(f'<span class="wb-chip {"wb-up" if r.delta > 0 else "wb-down"}"><code>{esc(r.op)}</code> '
                        f"{r.before}&rarr;{r.after} ({r.delta:+d})</span>" for r in delta.head(12).itertuples())
        change = f"<div>what they do together, on the last MLIR stage: {chips}</div>"
    answers = [(f"{size} pattern{'s' * (size != 1)}", held) for size, held in res.log]
    return (head + culprits + change + _runs_html(answers)
            + "<div>to switch them off: <code>" + esc(switch_off) + "</code></div></div>")


def bisect_failed_html(expr: str, message: str, answers: Sequence[bool]) -> str:
    """A bisection that had nothing to bisect or failed: the predicate, the message, the runs it made."""
    what = ("every enabled pattern", "no pattern")  # the two runs a bisection starts with
    runs = [(what[k] if k < 2 else "a subset", held) for k, held in enumerate(answers)]
    if "does not hold with all" in message:
        advice = "choose a predicate that holds for this Exploration (the last MLIR stage with every pattern on)"
    elif "holds with no pattern" in message:
        advice = "the patterns are not what makes it hold: choose a predicate that fails without them"
    else:
        advice = "the bisection stopped: see the message"
    return (f'<div class="wb-result wb-error"><div><b>Nothing bisected</b> for <code>{esc(expr)}</code>: '
            f"{esc(message)}</div><div>{esc(advice)}.</div>" + (_runs_html(runs) if runs else "") + "</div>")
