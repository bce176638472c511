"""The panel's HTML: each function turns one value (a status, a diff, a run, a table) into the markup
an ``ipywidgets.HTML`` shows. No widgets and no work here: the panel computes, these only render,
with every piece of text escaped. The class names are those of ``panel.css``.
"""
from __future__ import annotations

import numbers
from html import escape
from typing import Collection, Sequence

from ...analysis.cost.table import summary_columns
from ...analysis.diff import Diff
from ...analysis.numbers import num
from ...exploration import Exploration
from ...stages import Stage

__all__ = ["esc", "num", "cell", "table", "running", "failed", "done", "awaiting", "header", "stage_error",
           "pipeline_string", "python_line", "patterns_unused", "ops_delta", "run_result", "stage_costs", "op_costs",
           "op_costs_missing"]


def esc(x) -> str:
    return escape(str(x))


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
        bar = f'<progress class="wb-progress" value="{done}" max="{int(total)}"></progress>'
        count = f" &middot; {done}/{int(total)}"
    else:
        bar, count = '<progress class="wb-progress"></progress>', ""
    return (f'<span class="wb-status wb-running">{bar}'
            f'{esc(label)}{count} &middot; {elapsed:.1f} s{esc(note)}</span>')


def failed(message: str) -> str:
    """An error: its first line, the rest folded under "details"."""
    head, _, rest = message.partition("\n")
    more = f"<details><summary>details</summary><pre>{esc(rest)}</pre></details>" if rest.strip() else ""
    return f'<div class="wb-status wb-error"><b>&#10006; {esc(head)}</b>{more}</div>'


def done(text: str) -> str:
    return f'<span class="wb-status wb-done">&#10003; {esc(text)}</span>'


def awaiting(label: str, elapsed: float, before: str = "") -> str:
    """What the panel waits for outside its queue (XLA compiling in the background), after ``before``,
    the markup of how the last job ended."""
    return (f'{before} <span class="wb-status wb-running wb-awaiting"><progress class="wb-progress"></progress>'
            f'{esc(label)}&hellip; {elapsed:.1f} s</span>')


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
    bits = [f"<b>{esc(ex.spec.title)}</b>", f"pipeline <code>{esc(ex.spec.pipeline[:60])}</code>",
            f"{len(stages)} stages{' so far' * compiling}, {changed} changed", esc(ex.spec.device)]
    bits += [esc(t) for t in toggles] + ["compiling XLA&hellip;"] * compiling
    return '<div class="wb-header">' + " &middot; ".join(bits) + "</div>"


def stage_error(ex: Exploration, compiling: bool = False) -> str:
    """The Exploration's failed stage, if any, with its error (empty when none failed); while XLA
    compiles, only a failed MLIR stage (the XLA stages' error is not known yet)."""
    error = ex.pipeline_error if compiling else ex.error
    if not error:
        return ""
    return (f'<div class="wb-stage-error"><b>{esc(error.stage)} failed</b> '
            f'(the stages before it are usable)<pre>{esc(error)}</pre></div>')


def pipeline_string(name: str, pipeline: str) -> str:
    return ('<details class="wb-pipeline"><summary><b>Pipeline string</b> '
            f'(<code>{name}.pipeline_string</code>, {len(pipeline):,} characters) for '
            "<code>enzymexlamlir-opt --pass-pipeline='builtin.module(…)'</code></summary>"
            f'<pre class="wb-copy">{esc(pipeline)}</pre></details>')


def python_line(line: str, history: Sequence[str], bound: Sequence[str] = (), name: str = "ex") -> str:
    """The line of the last action, ready to copy, the toggles so far folded under it, and which
    variables follow the panel (``bound``; none: ``name`` stays what the panel started from)."""
    hist = ""
    if history:
        hist = ('<details><summary>the toggles so far, as code</summary><pre class="wb-copy">'
                + esc("\n".join(history)) + "</pre></details>")
    if bound:
        names = " and ".join(f"<code>{esc(b)}</code>" for b in bound)
        follow = (f"{names} follow{'s' * (len(bound) == 1)} this panel: after each toggle, "
                  f"{'they are' if len(bound) > 1 else 'it is'} the Exploration shown")
    else:
        follow = (f"<code>{esc(name)}</code> stays the Exploration the panel started from (paste the lines to "
                  f"follow it, or make the panel with <code>wb.panel({esc(name)}, bind=globals())</code>)")
    return (f'<div class="wb-python"><span class="wb-python-label">Python</span>'
            f'<pre class="wb-copy" title="click to select">{esc(line)}</pre>'
            f'<span class="wb-note wb-follow">{follow}</span>{hist}</div>')


def patterns_unused(pipeline: str) -> str:
    """Why the pattern switches do nothing under ``pipeline``, above the presets that apply patterns."""
    return (f'<div class="wb-note"><b>No effect here:</b> the pipeline <code>{esc(pipeline)}</code> has no '
            "<code>enzyme-hlo-patterns</code> step, so switching the patterns below changes none of its "
            "stages. These presets apply them:</div>")


def ops_delta(d: Diff) -> str:
    """How many of each op the diff's right side has more or fewer of, as chips."""
    if d.is_empty:
        return '<div class="wb-delta">no change (up to SSA names and locations)</div>'
    df = d.ops_delta()
    if df.empty:
        return '<div class="wb-delta">the same ops, rewired or with other attributes</div>'
    chips = "".join(
        f'<span class="wb-chip {"wb-up" if r.delta > 0 else "wb-down"}"><code>{esc(r.op)}</code> '
        f"{r.before}&rarr;{r.after} ({r.delta:+d})</span>"
        for r in df.head(12).itertuples())
    more = f" … {len(df) - 12} more" if len(df) > 12 else ""
    return f'<div class="wb-delta">ops: {chips}{more}</div>'


# -- results ---------------------------------------------------------------------------------------
def run_result(r) -> str:
    """One ``Exploration.run``: the check's verdict, the timing, and a row per output leaf."""
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(r.outputs)[0]
    checks = {c.path: c for c in (r.check.leaves if r.check else ())}
    rows = []
    for path, leaf in leaves:
        key = jax.tree_util.keystr(path) or "output"
        c = checks.get(key)
        rows.append(f"<tr><td><code>{esc(key)}</code></td><td>{esc(tuple(getattr(leaf, 'shape', ())))}</td>"
                    f"<td>{esc(getattr(leaf, 'dtype', type(leaf).__name__))}</td>"
                    + (f"<td>{num(c.max_abs)}</td>"
                       f"<td>{'' if c.lowered_abs is None else num(c.lowered_abs)}</td>"
                       f"<td>{num(c.max_rel)}</td><td>{num(c.tolerance)}</td>"
                       f"<td>{'passed' if c.passed else 'FAILED'}</td>" if c else "<td></td>" * 5) + "</tr>")
    if r.check is None:
        verdict = '<span class="wb-chip">not checked</span>'
    else:
        chip = ('<span class="wb-chip wb-pass">&#10003; passed</span>' if r.check.passed
                else '<span class="wb-chip wb-fail">&#10006; FAILED</span>')
        low = r.check.lowered_abs
        lowered = "" if low is None else f", the program as lowered: {num(low)}"
        note = f'<div class="wb-note">{esc(r.check.note)}</div>' if r.check.note else ""
        verdict = (f"{chip} against <code>{esc(r.check.reference)}</code> (max abs error "
                   f"{num(r.check.max_abs)}{lowered}; max rel error {num(r.check.max_rel)}){note}")
    t = r.timing
    return (f'<div class="wb-result"><div><b>{esc(r.stage)}</b> on <b>{esc(r.device)}</b>: {verdict}</div>'
            f"<div>time per call: median <b>{num(t.median * 1e3)} ms</b> &middot; min {num(t.min * 1e3)} ms "
            f"&middot; IQR {num(t.iqr * 1e3)} ms &middot; n={len(t.times)} (after one warm-up call)</div>"
            '<table class="wb-table"><thead><tr><th>output</th><th>shape</th><th>dtype</th><th>max abs err</th>'
            "<th>as lowered</th><th>max rel err</th><th>tolerance</th><th>check</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")


def stage_costs(python: str, df, cached: Collection[str] = ()) -> str:
    """``Exploration.cost()``, every stage, in the columns the Cost tab shows; the seconds of the
    ``cached`` stages (served from a cache, so timed on their first run) say so."""
    df = df[summary_columns(df)].copy()
    if "seconds" in df and "stage" in df:
        df["seconds"] = [cell(t) + (" (cached)" if st in cached and cell(t) else "")
                         for st, t in zip(df["stage"], df["seconds"])]
    return f"<b>Every stage</b> <code>{python}</code>" + table(df)


def op_costs(stage: str, python: str, ops) -> str:
    """``Exploration.cost(stage)``: an HLO stage's instructions costliest first (XLA's own analysis of
    each), an MLIR stage's ops summed by op kind."""
    if "computation" in ops:  # an XLA HLO stage: one row per instruction, as XLA costs it
        top = ops.sort_values(["flops", "bytes"], ascending=False, na_position="first").head(100)
        more = f" (the costliest 100 of {len(ops)})" if len(ops) > 100 else ""
        return (f"<b>Per instruction of {esc(stage)}</b> <code>{esc(python)}</code>: XLA's HloCostAnalysis of each "
                f"instruction alone (a fusion is one kernel, a loop body counts once){more}"
                + table(top[["name", "op", "shape", "flops", "transcendentals", "bytes", "note"]]))
    agg = (ops.groupby("op", as_index=False)
           .agg(count=("op", "size"), flops=("flops", "sum"), transcendentals=("transcendentals", "sum"),
                bytes=("bytes", "sum"))
           .sort_values(["flops", "bytes"], ascending=False))
    return f"<b>Per op of {esc(stage)}</b> <code>{python}</code>, summed by op" + table(agg)


def op_costs_missing(stage: str, why: BaseException) -> str:
    return f"<b>Per op of {esc(stage)}</b>: {esc(why)}"
