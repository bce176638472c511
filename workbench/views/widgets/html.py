"""The panel's HTML: each function turns one value (a status, a diff, a run, a table) into the markup
an ``ipywidgets.HTML`` shows. No widgets and no work here: the panel computes, these only render,
with every piece of text escaped. The class names are those of ``panel.css``.
"""
from __future__ import annotations

from html import escape
from typing import Sequence

from ...analysis.diff import Diff
from ...exploration import Exploration
from ...stages import Stage

__all__ = ["esc", "table", "running", "failed", "done", "header", "stage_error", "pipeline_string", "python_line",
           "ops_delta", "run_result", "applicable", "bisect_result", "stage_costs", "op_costs", "op_costs_missing",
           "graph", "graph_note"]

# the columns of ``Exploration.cost()`` the Cost tab shows, in this order
_COST_COLUMNS = ("stage", "group", "ops", "flops", "transcendentals", "bytes", "xla_flops", "xla_bytes",
                 "temp_bytes", "seconds", "note")


def esc(x) -> str:
    return escape(str(x))


def table(df, floats: int = 3, max_rows: int = 200) -> str:
    """A DataFrame as a compact HTML table: blanks for missing values, whole floats without ".0"."""
    import pandas as pd

    df = df.copy()
    for c in df.columns:
        values = df[c].dropna()
        if df[c].dtype.kind == "f" and len(values) and (values == values.round()).all():
            df[c] = df[c].astype("Int64")
    df = df.astype(object).where(df.notna(), "")
    with pd.option_context("display.max_rows", max_rows, "display.precision", floats):
        return df.to_html(index=False, escape=True, classes="wb-table", border=0, max_rows=max_rows)


# -- the status line -------------------------------------------------------------------------------
def running(label: str, elapsed: float, note: str = "") -> str:
    # No callback reports how far a pass pipeline, a pattern scan or a bisection is, so the bar is
    # the browser's indeterminate one; what is known (elapsed time, runs) is text.
    return (f'<span class="wb-status wb-running"><progress class="wb-progress"></progress>'
            f'{esc(label)} &middot; {elapsed:.1f} s{esc(note)}</span>')


def failed(message: str) -> str:
    """An error: its first line, the rest folded under "details"."""
    head, _, rest = message.partition("\n")
    more = f"<details><summary>details</summary><pre>{esc(rest)}</pre></details>" if rest.strip() else ""
    return f'<div class="wb-status wb-error"><b>&#10006; {esc(head)}</b>{more}</div>'


def done(text: str) -> str:
    return f'<span class="wb-status wb-done">&#10003; {esc(text)}</span>'


# -- the Exploration shown -------------------------------------------------------------------------
def header(ex: Exploration, stages: Sequence[Stage], xla_off: Sequence[str]) -> str:
    """One line: title, pipeline, stage counts, device, and what is toggled off or added."""
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
            f"{len(stages)} stages, {changed} changed", esc(ex.spec.device)] + [esc(t) for t in toggles]
    return '<div class="wb-header">' + " &middot; ".join(bits) + "</div>"


def stage_error(ex: Exploration) -> str:
    """The Exploration's failed stage, if any, with its error (empty when none failed)."""
    if not ex.error:
        return ""
    return (f'<div class="wb-stage-error"><b>{esc(ex.error.stage)} failed</b> '
            f'(the stages before it are usable)<pre>{esc(ex.error)}</pre></div>')


def pipeline_string(name: str, pipeline: str) -> str:
    return ('<details class="wb-pipeline"><summary><b>Pipeline string</b> '
            f'(<code>{name}.pipeline_string</code>, {len(pipeline):,} characters) for '
            "<code>enzymexlamlir-opt --pass-pipeline='builtin.module(…)'</code></summary>"
            f'<pre class="wb-copy">{esc(pipeline)}</pre></details>')


def python_line(line: str, history: Sequence[str]) -> str:
    """The line of the last action, ready to copy, and the toggles so far folded under it."""
    hist = ""
    if history:
        hist = ('<details><summary>the toggles so far, as code</summary><pre class="wb-copy">'
                + esc("\n".join(history)) + "</pre></details>")
    return (f'<div class="wb-python"><span class="wb-python-label">Python</span>'
            f'<pre class="wb-copy" title="click to select">{esc(line)}</pre>{hist}</div>')


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
                    + (f"<td>{c.max_abs:.3g}</td>"
                       f"<td>{'' if c.lowered_abs is None else format(c.lowered_abs, '.3g')}</td>"
                       f"<td>{c.max_rel:.3g}</td><td>{c.tolerance:.3g}</td>"
                       f"<td>{'passed' if c.passed else 'FAILED'}</td>" if c else "<td></td>" * 5) + "</tr>")
    if r.check is None:
        verdict = '<span class="wb-chip">not checked</span>'
    else:
        chip = ('<span class="wb-chip wb-pass">&#10003; passed</span>' if r.check.passed
                else '<span class="wb-chip wb-fail">&#10006; FAILED</span>')
        low = r.check.lowered_abs
        lowered = "" if low is None else f", the program as lowered: {low:.3g}"
        note = f'<div class="wb-note">{esc(r.check.note)}</div>' if r.check.note else ""
        verdict = (f"{chip} against <code>{esc(r.check.reference)}</code> (max abs error "
                   f"{r.check.max_abs:.3g}{lowered}; max rel error {r.check.max_rel:.3g}){note}")
    t = r.timing
    return (f'<div class="wb-result"><div><b>{esc(r.stage)}</b> on <b>{esc(r.device)}</b>: {verdict}</div>'
            f"<div>time per call: median <b>{t.median * 1e3:.3f} ms</b> &middot; min {t.min * 1e3:.3f} ms "
            f"&middot; IQR {t.iqr * 1e3:.3f} ms &middot; n={len(t.times)} (after one warm-up call)</div>"
            '<table class="wb-table"><thead><tr><th>output</th><th>shape</th><th>dtype</th><th>max abs err</th>'
            "<th>as lowered</th><th>max rel err</th><th>tolerance</th><th>check</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")


def applicable(name: str, stage: str, df, enabled: set[str]) -> str:
    """``Exploration.applicable(stage, details=True)``: the patterns that change the stage, and
    whether each is in ``name``'s pipeline (``enabled``)."""
    changed = df[df["changed"]]
    errors = df[df["error"].notna() & (df["error"] != "")] if "error" in df else df.iloc[:0]
    rows = "".join(
        f"<tr><td><code>{esc(r.name)}</code></td><td>{esc(r.group)}</td><td>{r.seconds * 1e3:.1f}</td>"
        f"<td>{'on' if r.name in enabled else '<b>off</b>'}</td></tr>"
        for r in changed.itertuples())
    return (f'<div class="wb-result">{len(changed)} of {len(df)} patterns change '
            f"<code>{esc(stage)}</code> when applied alone"
            + (f"; {len(errors)} failed on it" if len(errors) else "")
            + ('<table class="wb-table"><thead><tr><th>pattern</th><th>group</th><th>ms</th>'
               f"<th>in {name}'s pipeline</th></tr></thead><tbody>{rows}</tbody></table>" if rows else "")
            + "</div>")


def bisect_result(res, switch_off: str) -> str:
    """A bisection's patterns, its runs and time, and ``switch_off``, the line that disables them."""
    n = len(res.patterns)
    return (f'<div class="wb-result"><b>{n} pattern{"s" * (n != 1)}</b> '
            f"make the predicate hold ({res.runs} pipeline runs, {res.seconds:.1f} s): "
            + ", ".join(f"<code>{esc(p)}</code>" for p in res.patterns)
            + "<br>to switch them off: <code>" + esc(switch_off) + "</code></div>")


def stage_costs(python: str, df) -> str:
    """``Exploration.cost()``, every stage, in the columns the Cost tab shows."""
    cols = [c for c in _COST_COLUMNS if c in df]
    return f"<b>Every stage</b> <code>{python}</code>" + table(df[cols])


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


def graph(svg: str) -> str:
    """Graphviz's SVG, from its ``<svg`` element on (the XML prologue and doctype dropped)."""
    return f'<div class="wb-graph">{svg[svg.find("<svg"):]}</div>'


def graph_note(message: str) -> str:
    return f"<i>{esc(message)}</i>"
