"""Two explorations compared, as one offline page (``hlo-workbench diff a.hlox b.hlox --html OUT``, and the
HTML a failed golden check writes next to its golden): the versions and settings that differ, a check's
verdict, the first differing stage, the aligned stage table with each side's ops and cost, and the final
MLIR modules in the report's diff viewer (xla:optimized's diff under it, as a table).

Everything comes from a ``Comparison`` (and a ``Verdict``): nothing is computed here but the HTML.
"""
from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from ..analysis.diff.explorations import Comparison, number_text
from ..analysis.diff.gates import Verdict
from .report import write_diff_page

__all__ = ["write_comparison_page", "comparison_html"]

_STYLE = Markup("""<style>
.wb-cmp-table{border-collapse:collapse;font-size:12px;margin:6px 0 14px}
.wb-cmp-table th,.wb-cmp-table td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
.wb-cmp-table th:first-child,.wb-cmp-table td:first-child{text-align:left}
.wb-cmp-table tr.wb-cmp-differs td{background:#fff4d6}
.wb-cmp-table tr.wb-cmp-first td{background:#ffd9a8;font-weight:bold}
.wb-cmp-table td.wb-cmp-fail{color:#b00020;font-weight:bold}
.wb-cmp-table td.wb-cmp-ok{color:#1b5e20}
</style>""")
_SHOWN = ("ops", "flops", "bytes", "xla_flops", "memory")


def _delta(v) -> str:
    if v is None or v == 0:
        return ""
    return f"{v:+,.0f}" if float(v).is_integer() else f"{v:+,.4g}"


def _verdict_table(verdict: Verdict) -> Markup:
    head = Markup("<tr><th>result</th><th>what</th><th>golden</th><th>now</th><th>change</th><th>limit</th>"
                  "<th>note</th></tr>")
    rows = Markup("").join(Markup(
        '<tr><td class="{}">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>').format(
        "wb-cmp-ok" if r.ok else "wb-cmp-fail", "ok" if r.ok else "FAIL", r.what, number_text(r.golden), number_text(r.now),
        r.change, r.limit, r.note) for r in verdict.rows)
    status = "passed" if verdict.ok else f"failed ({len(verdict.failed)} of {len(verdict.rows)} limits)"
    return Markup('<h2 id="wb-verdict">Check: {}</h2><table class="wb-cmp-table">{}{}</table>').format(
        status, head, rows)


def _stage_table(c: Comparison) -> Markup:
    first = c.first_difference
    a, b = c.labels
    head = Markup("<tr><th>stage</th><th>in</th><th>module</th>{}</tr>").format(Markup("").join(
        Markup("<th>{} {}</th><th>{} {}</th><th>Δ</th>").format(col, a, col, b) for col in _SHOWN))
    rows = []
    for p, row in zip(c.pairs, c.rows()):
        cls = "wb-cmp-first" if p is first else "" if p.same else "wb-cmp-differs"
        side = "both" if p.side == "both" else (a if p.side == "a" else b)
        cells = Markup("").join(Markup("<td>{}</td><td>{}</td><td>{}</td>").format(
            number_text(row[f"{col}_a"]), number_text(row[f"{col}_b"]), _delta(row[f"{col}_delta"]))
            for col in _SHOWN)
        rows.append(Markup('<tr class="{}"><td>{}</td><td>{}</td><td>{}</td>{}</tr>').format(
            cls, p.name, side, "same" if p.same else "differs", cells))
    return Markup('<h2>Stages, aligned by pass</h2><table class="wb-cmp-table" id="wb-stages">{}{}</table>').format(
        head, Markup("").join(rows))


def comparison_html(c: Comparison, verdict: Verdict | None = None) -> Markup:
    """The page's header: facts, the verdict, the stage table and xla:optimized's diff."""
    head, *facts = c.lines()
    parts = [_STYLE, Markup('<ul id="wb-facts">{}</ul>').format(
        Markup("").join(Markup("<li>{}</li>").format(f) for f in facts))]
    if verdict is not None:
        parts.append(_verdict_table(verdict))
    parts.append(_stage_table(c))
    if c.xla is not None and c.xla.changed:
        parts.append(Markup("<h2>xla:optimized</h2>") + Markup(c.xla.diff.side_by_side()))
    return Markup("").join(parts)


def write_comparison_page(c: Comparison, path, verdict: Verdict | None = None) -> Path:
    """Write the comparison (and a check's verdict) as one self-contained HTML page; returns the path."""
    a, b = c.labels
    before, after = (c.mlir.before.text, c.mlir.after.text) if c.mlir is not None else ("", "")
    names = (c.mlir.before.name, c.mlir.after.name) if c.mlir is not None else ("final MLIR", "final MLIR")
    return write_diff_page(before, after, f"{a}: {names[0]}", f"{b}: {names[1]}", path,
                           header=comparison_html(c, verdict), title=f"{a} \u2192 {b} \u2014 hlo-workbench comparison",
                           made_by="hlo-workbench diff a.hlox b.hlox --html")
