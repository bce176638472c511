"""The panel's HTML: each function turns one value (a status, a diff, a run, a table) into the markup
an ``ipywidgets.HTML`` shows. No widgets and no work here: the panel computes, these only render.
Markup is written with markupsafe's ``Markup.format``, which escapes every value it is given (names,
pass strings, errors, Python lines) unless it is ``Markup`` the workbench made; each function returns
it as a plain ``str`` for the widget (a ``Markup`` would escape whatever a caller adds to it). The
class names are those of ``panel.css``.
"""
from __future__ import annotations

import numbers
from typing import Collection, Sequence

from markupsafe import Markup

from ...analysis.cost.table import summary_columns
from ...analysis.diff import Changes, Diff
from ...analysis.numbers import num
from ...exploration import Exploration
from ...stages import Stage

__all__ = ["num", "cell", "table", "running", "failed", "done", "awaiting", "compiling", "compiled", "header", "stage_error",
           "pipeline_string", "python_line", "ops_delta", "change_summary", "run_result",
           "run_history", "stage_costs", "op_costs", "op_costs_missing"]


def cell(v, digits: int = 3) -> str:
    """One table cell: numbers through ``num``, booleans as True/False, missing values blank."""
    import pandas as pd

    if v is None or (not isinstance(v, (str, bytes)) and pd.api.types.is_scalar(v) and pd.isna(v)):
        return ""
    if isinstance(v, numbers.Number) and not isinstance(v, (bool, complex)):
        import numpy as np

        return str(bool(v)) if isinstance(v, np.bool_) else num(v, digits)
    return str(v)


def table(df, floats: int = 3, max_rows: int = 200) -> str:
    """A DataFrame as a compact HTML table: every number through ``num`` (``floats`` significant
    digits), blanks for missing values."""
    df = df.copy()
    for c in df.columns:
        df[c] = [cell(v, floats) for v in df[c]]
    return df.to_html(index=False, escape=True, classes="wb-table", border=0, max_rows=max_rows)


# -- the status line -------------------------------------------------------------------------------
def running(label: str, elapsed: float, note: str = "", done: int | None = None, total: int | None = None) -> str:
    """A running job: a determinate bar and "done/total" when the job reports both (a pattern scan),
    else the browser's indeterminate bar (a pass pipeline, a bisection, whose length is unknown)."""
    if done is not None and total:
        done = min(max(int(done), 0), int(total))
        bar = Markup('<progress class="wb-progress" value="{}" max="{}"></progress>').format(done, int(total))
        count = Markup(" &middot; {}/{}").format(done, int(total))
    else:
        bar, count = Markup('<progress class="wb-progress"></progress>'), ""
    return str(Markup('<span class="wb-status wb-running">{}{}{} &middot; {:.1f} s{}</span>').format(
        bar, label, count, elapsed, note))


def failed(message: str) -> str:
    """An error: its first line, the rest folded under "details"."""
    head, _, rest = message.partition("\n")
    more = Markup("<details><summary>details</summary><pre>{}</pre></details>").format(rest) if rest.strip() else ""
    return str(Markup('<div class="wb-status wb-error"><b>&#10006; {}</b>{}</div>').format(head, more))


def done(text: str) -> str:
    return str(Markup('<span class="wb-status wb-done">&#10003; {}</span>').format(text))


def awaiting(label: str, elapsed: float, before: str = "") -> str:
    """What the panel waits for outside its queue (XLA compiling in the background), after ``before``,
    the markup of how the last job ended (made by ``done`` or ``failed``)."""
    return str(Markup('{} <span class="wb-status wb-running wb-awaiting"><progress class="wb-progress"></progress>'
                      "{}&hellip; {:.1f} s</span>").format(Markup(before), label, elapsed))


def compiling(ex: Exploration) -> str:
    """The status line while XLA's stages are awaited: what XLA's compile does now (``ex.xla_phase()``)."""
    phase = ex.xla_phase()
    return f"compiling XLA: {phase}" if phase else "compiling XLA"


def compiled(ex: Exploration, waited: float, took: float) -> str:
    """The status line once XLA's stages are shown: the wait, the steps XLA's compile took, the drawing."""
    steps = "; ".join(f"{text.split(' (')[0].split(',')[0]} {s:.1f} s" for text, s in ex.xla_steps())
    return f"XLA's stages shown: ready after {waited:.1f} s{f' ({steps})' if steps else ''}, drawn in {took:.2f} s"


# -- the Exploration shown -------------------------------------------------------------------------
def header(ex: Exploration, stages: Sequence[Stage], xla_off: Sequence[str], compiling: bool = False) -> str:
    """One line: title, pipeline, stage counts (so far, while XLA compiles), device, and what is toggled
    off or added."""
    changed = sum(1 for s in stages if s.changed)
    sel = ex.spec.selection
    toggles = []
    if sel.disabled:
        toggles.append(f"{len(sel.disabled)} pattern{'s' * (len(sel.disabled) != 1)} off")
    if sel.enabled:
        toggles.append(f"{len(sel.enabled)} added")
    if xla_off:
        toggles.append(f"XLA off: {', '.join(xla_off)}")
    bits = [Markup("<b>{}</b>").format(ex.spec.title), Markup("pipeline <code>{}</code>").format(ex.spec.pipeline[:60]),
            f"{len(stages)} stages{' so far' * compiling}, {changed} changed", ex.spec.device]
    bits += toggles + [Markup("compiling XLA&hellip;")] * compiling
    return str(Markup('<div class="wb-header">{}</div>').format(Markup(" &middot; ").join(bits)))


def stage_error(ex: Exploration, compiling: bool = False) -> str:
    """The Exploration's failed stage, if any, with its error (empty when none failed); while XLA
    compiles, only a failed MLIR stage (the XLA stages' error is not known yet)."""
    error = ex.pipeline_error if compiling else ex.error
    if not error:
        return ""
    more = ""
    if error.full != str(error):  # the short form cut frames or the runner's own words: one click away
        more = Markup('<details class="wb-error-full"><summary>the whole diagnostic, every frame '
                      "(<code>.error.full</code>)</summary><pre>{}</pre></details>").format(error.full)
    return str(Markup('<div class="wb-stage-error"><b>{} failed</b> (the stages before it are usable)'
                      "<pre>{}</pre>{}</div>").format(error.stage, error, more))


def pipeline_string(name: str, pipeline: str) -> str:
    return str(Markup('<details class="wb-pipeline"><summary><b>Pipeline string</b> (<code>{}.pipeline_string</code>, '
                      "{:,} characters) for <code>enzymexlamlir-opt --pass-pipeline='builtin.module(…)'</code>"
                      '</summary><pre class="wb-copy">{}</pre></details>').format(name, len(pipeline), pipeline))


def python_line(line: str, history: Sequence[str], bound: Sequence[str] = (), name: str = "ex") -> str:
    """The line of the last action, ready to copy, the toggles so far folded under it, and which
    variables follow the panel (``bound``; none: ``name`` stays what the panel started from)."""
    hist = ""
    if history:
        hist = Markup('<details><summary>the toggles so far, as code</summary><pre class="wb-copy">{}</pre>'
                      "</details>").format("\n".join(history))
    if bound:
        names = Markup(" and ").join(Markup("<code>{}</code>").format(b) for b in bound)
        follow = Markup("{} follow{} this panel: after each toggle, {} the Exploration shown").format(
            names, "s" * (len(bound) == 1), "they are" if len(bound) > 1 else "it is")
    else:
        follow = Markup("<code>{0}</code> stays the Exploration the panel started from (paste the lines to follow "
                        "it, or make the panel with <code>wb.panel({0}, bind=globals())</code>)").format(name)
    return str(Markup('<div class="wb-python"><span class="wb-python-label">Python</span>'
                      '<pre class="wb-copy" title="click to select">{}</pre>'
                      '<span class="wb-note wb-follow">{}</span>{}</div>').format(line, follow, hist))


NORMALIZED = Markup(
    '<div class="wb-note wb-normalized" title="analysis.diff.normalize: the same rules for every view of a diff">'
    "<b>normalized text</b>: values renumbered in order (<code>%0</code>, <code>%1</code>, &hellip;; B's onto A's), "
    'locations, metadata and <code>public</code> dropped. <code>ex["B"].text</code> is the stage as written.</div>')
"""The line above the diff view: its text is not the stages' own text, and how it differs."""


def ops_delta(d: Diff) -> str:
    """How many of each op the diff's right side has more or fewer of, as chips, then ``NORMALIZED``."""
    return str(Markup("{}{}").format(Markup(_ops_chips(d)), NORMALIZED))


def _ops_chips(d: Diff) -> str:
    if d.is_empty:
        return '<div class="wb-delta">no change (up to SSA names and locations)</div>'
    df = d.ops_delta()
    if df.empty:
        return '<div class="wb-delta">the same ops, rewired or with other attributes</div>'
    chips = Markup("").join(
        Markup('<span class="wb-chip {}"><code>{}</code> {}&rarr;{} ({:+d})</span>').format(
            "wb-up" if r.delta > 0 else "wb-down", r.op, r.before, r.after, r.delta)
        for r in df.head(12).itertuples())
    more = f" … {len(df) - 12} more" if len(df) > 12 else ""
    return str(Markup('<div class="wb-delta">ops: {}{}</div>').format(chips, more))


def change_summary(changes: Changes) -> str:
    """What the last rebuild changed, on one line: the settings, then the stages recomputed, the final
    MLIR module and xla:optimized (``Changes.parts``), a changed module's phrase marked."""
    first, *rest = changes.parts()
    marked = {m.words(): m.changed for m in (changes.mlir, changes.xla) if m is not None}
    shown = Markup(" &middot; ").join(
        Markup('<span class="{}">{}</span>').format("wb-changed" if marked.get(p) else "", p) for p in rest)
    return str(Markup('<div class="wb-changes"><b>{}</b>: {}</div>').format(first, shown))


# -- results ---------------------------------------------------------------------------------------
_LEAF_HEAD = Markup("".join(f"<th>{h}</th>" for h in ("output", "shape", "dtype", "max abs err", "as lowered",
                                                       "max rel err", "tolerance", "check")))
PRINTED_SHOWN = 4_000  # characters of a run's printed output the Run tab shows (the run keeps them all)


def _leaf_row(c) -> Markup:
    """One checked leaf of a run's program outputs (``LeafCheck``): its path, shape, dtype, errors, tolerance
    and verdict, its facts in data attributes as the components write them."""
    return Markup('<tr data-hwb="leaf" data-path="{}" data-passed="{}"{}><td><code>{}</code></td><td>{}</td><td>{}</td>'
                  "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
        c.path, "true" if c.passed else "false", Markup(' class="wb-fail"') if not c.passed else "", c.path,
        tuple(c.shape), c.dtype, num(c.max_abs), "" if c.lowered_abs is None else num(c.lowered_abs), num(c.max_rel),
        num(c.tolerance), "passed" if c.passed else "FAILED")


def _output_row(key: str, leaf) -> Markup:
    """One output leaf of a run that was not checked: its path, shape and dtype."""
    return Markup("<tr><td><code>{}</code></td><td>{}</td><td>{}</td>{}</tr>").format(
        key, tuple(getattr(leaf, "shape", ())), getattr(leaf, "dtype", type(leaf).__name__), Markup("<td></td>" * 5))


def _printed(lines) -> Markup:
    """What a run's call printed (host callbacks, warnings), cut at ``PRINTED_SHOWN`` characters with a note."""
    text = "".join(lines)
    if not text:
        return Markup("")
    cut = Markup('<div class="wb-note">the first {:,} of {:,} characters; the run&#39;s <code>.printed</code> '
                 "holds them all</div>").format(PRINTED_SHOWN, len(text)) if len(text) > PRINTED_SHOWN else ""
    return Markup('<div class="wb-printed"><b>printed</b> (its call, once; the timing repeats print nothing):'
                  '<pre data-hwb="printed">{}</pre>{}</div>').format(text[:PRINTED_SHOWN], cut)


def _verdict(check) -> Markup:
    """A run's check: the chip, the reference, the errors, the failed leaves named, and the check's note."""
    if check is None:
        return Markup('<span class="wb-chip">not checked</span>')
    chip = Markup('<span class="wb-chip wb-pass">&#10003; passed</span>' if check.passed
                  else '<span class="wb-chip wb-fail">&#10006; FAILED</span>')
    lowered = "" if check.lowered_abs is None else f", the program as lowered: {num(check.lowered_abs)}"
    failed = [c.path for c in check.leaves if not c.passed]
    named = Markup(" &middot; failed: {}{}").format(
        Markup(", ").join(Markup("<code>{}</code>").format(f) for f in failed[:6]),
        f" and {len(failed) - 6} more" if len(failed) > 6 else "") if failed else ""
    note = Markup('<div class="wb-note">{}</div>').format(check.note) if check.note else ""
    return Markup("{} against <code>{}</code> (max abs error {}{}; max rel error {}){}{}").format(
        chip, check.reference, num(check.max_abs), lowered, num(check.max_rel), named, note)


def run_result(r, stale: str = "") -> str:
    """One ``Exploration.run``: the check's verdict, the timing, what its call printed, and a row per checked
    leaf (``r.check.leaves``: the leaves of the program's outputs, which through ``nnx.jit`` or
    ``eqx.filter_jit`` are more than the user's outputs: the state written back into the model), else per
    output leaf; ``stale`` (``r.why_stale(ex)`` for the Exploration shown) marks a run whose program a toggle
    changed since."""
    if r.check is not None:
        rows = [_leaf_row(c) for c in r.check.leaves]
    else:
        import jax

        rows = [_output_row(jax.tree_util.keystr(path) or "output", leaf)
                for path, leaf in jax.tree_util.tree_flatten_with_path(r.outputs)[0]]
    t = r.timing
    mark = Markup('<div class="wb-stale-note">{} the program changed since this run &mdash; run again ({})'
                  "</div>").format(_STALE, stale) if stale else ""
    return str(Markup(
        '<div class="wb-result{}" data-hwb="run">{}<div><b>{}</b> on <b>{}</b>: {}</div>'
        "<div>time per call: median <b>{} ms</b> &middot; min {} ms &middot; IQR {} ms &middot; n={} (after one "
        'warm-up call)</div>{}<table class="wb-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>').format(
        " wb-stale" * bool(stale), mark, r.stage, r.device, _verdict(r.check), num(t.median * 1e3), num(t.min * 1e3),
        num(t.iqr * 1e3), len(t.times), _printed(getattr(r, "printed", ())), _LEAF_HEAD, Markup("").join(rows)))


_STALE = Markup('<span class="wb-chip wb-stale">stale:</span>')


def run_history(ex: Exploration, name: str = "ex") -> str:
    """The session's runs (``ex.history``, ``name`` the variable), newest first: stage, the settings of
    the program it ran, device, median time, check, and whether ``ex`` still has that program (else
    why not); "" when there are none."""
    runs = ex.history
    if not runs:
        return ""
    rows = []
    for k, r in reversed(list(enumerate(runs, 1))):
        why = r.why_stale(ex)
        check = Markup("") if r.check is None else Markup('<span class="wb-chip {}">{}</span>').format(
            *(("wb-pass", "passed") if r.check.passed else ("wb-fail", "FAILED")))
        state = Markup("{} {}").format(_STALE, why) if why else "current"
        rows.append(Markup('<tr class="{}"><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>'
                           "<td>{}</td><td>{}</td></tr>").format("wb-stale" * bool(why), k, r.stage,
                                                      r.program.settings if r.program else "", r.device,
                                                      num(r.timing.median * 1e3), check, state))
    head = Markup("").join(Markup("<th>{}</th>").format(h) for h in ("#", "stage", "program", "device", "median ms",
                                                                     "check", "state"))
    return str(Markup('<details class="wb-history" open><summary><b>This session\'s runs</b> ({}, <code>{}.history'
                      '</code>: those before a toggle too)</summary><table class="wb-table"><thead><tr>{}</tr></thead>'
                      "<tbody>{}</tbody></table></details>").format(len(runs), name, head, Markup("").join(rows)))


def stage_costs(python: str, df, cached: Collection[str] = ()) -> str:
    """``Exploration.cost()``, every stage, in the columns the Cost tab shows; the seconds of the
    ``cached`` stages (served from a cache, so timed on their first run) say so."""
    df = df[summary_columns(df)].copy()
    if "seconds" in df and "stage" in df:
        df["seconds"] = [cell(t) + (" (cached)" if st in cached and cell(t) else "")
                         for st, t in zip(df["stage"], df["seconds"])]
    return str(Markup("<b>Every stage</b> <code>{}</code>{}").format(python, Markup(table(df))))


def op_costs(stage: str, python: str, ops) -> str:
    """``Exploration.cost(stage)``: an HLO stage's instructions costliest first (XLA's own analysis of
    each), an MLIR stage's ops summed by op kind."""
    if "computation" in ops:  # an XLA HLO stage: one row per instruction, as XLA costs it
        top = ops.sort_values(["flops", "bytes"], ascending=False, na_position="first").head(100)
        more = f" (the costliest 100 of {len(ops)})" if len(ops) > 100 else ""
        return str(Markup("<b>Per instruction of {}</b> <code>{}</code>: XLA's HloCostAnalysis of each instruction "
                          "alone, for all its runs (a fusion is one kernel; a loop body's instructions run trip-count "
                          "times, <code>runs</code>){}{}").format(
            stage, python, more, Markup(table(top[[c for c in ("name", "op", "shape", "runs", "flops",
                                                               "transcendentals", "bytes", "note") if c in top]]))))
    agg = (ops.groupby("op", as_index=False)
           .agg(count=("op", "size"), flops=("flops", "sum"), transcendentals=("transcendentals", "sum"),
                bytes=("bytes", "sum"))
           .sort_values(["flops", "bytes"], ascending=False))
    return str(Markup("<b>Per op of {}</b> <code>{}</code>, summed by op{}").format(stage, python, Markup(table(agg))))


def op_costs_missing(stage: str, why: BaseException) -> str:
    return str(Markup("<b>Per op of {}</b>: {}").format(stage, why))
