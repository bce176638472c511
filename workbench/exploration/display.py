"""An Exploration as a notebook shows it (``_repr_html_``), and a Stepwise in words."""
from __future__ import annotations

from markupsafe import Markup

from ..ir.text import short_pass

__all__ = ["exploration_html", "stepwise_summary"]


def exploration_html(ex) -> str:
    """``ex``'s repr, its error, and its stage table as HTML. A pass string is shortened as the CLI
    does (``<526 patterns>``; ``ex.table()`` and ``ex[name].produced_by`` keep it exact), and XLA's
    passes have a blank ms with a line saying why: they run inside one compile, timed on xla:optimized."""
    df = ex.table()  # first: reading the stages may compile, and the repr then counts every stage
    df["produced_by"] = [short_pass(p) for p in df["produced_by"]]
    table = Markup(df.to_html(index=False, escape=True, na_rep=""))
    err = Markup("<pre style='color:#b00'>{}</pre>").format(ex.error) if ex.error else ""
    note = ""
    untimed = df[(df["group"] != "trace") & (df["group"] != "mlir") & df["ms"].isna()]
    if len(untimed):
        # from the stage's own seconds: the table's ms is rounded to 2 places, and rounding that again to 1
        # can differ from rounding the time once (100.8501 -> 100.85 -> "100.8", against "100.9")
        whole = next((s.seconds for s in ex.stages if s.name == "xla:optimized"), None)
        took = f" ({whole * 1e3:,.1f} ms)" if whole is not None else ""
        note = Markup("<p style='color:#666;font-size:90%'>ms is blank for {} XLA/backend stages: XLA runs its "
                      "passes inside one compile, whose time is on xla:optimized{}.</p>").format(len(untimed), took)
    return str(Markup("<p><code>{}</code></p>{}{}{}").format(repr(ex), err, table, note))


def stepwise_summary(s) -> str:
    """What ``ex.step()`` did (``Stepwise.summary``), in words: the patterns applied (or that none
    applies), whether the end is where one greedy run of the whole list ends, and the patterns that raised."""
    start, applied = s.pipeline_stages[0].name, s.applied()
    if not applied:
        text = f"no pattern applies to {start!r}"
    else:
        distinct = list(dict.fromkeys(applied))
        shown = ", ".join(distinct[:4]) + (f", ... ({len(distinct)} distinct)" if len(distinct) > 4 else "")
        text = (f"{len(applied)} step{'s' * (len(applied) != 1)} from {start!r}: {shown}; "
                + ("ends where one greedy run of all the patterns ends" if s.matches_reference
                   else "ends elsewhere than one greedy run of all the patterns (see .difference)"))
    if s.reference.error:
        text += "; the greedy run of all the patterns failed (see .reference.error)"
    elif not applied and not s.matches_reference:
        text += ", yet one greedy run of all the patterns changes it (see .difference)"
    if s.skipped:
        text += f"; {len(s.skipped)} pattern{'s' * (len(s.skipped) != 1)} raised and were skipped (.skipped)"
    return text
