"""Two explorations compared, as one offline page (``hlo-workbench diff a.hlox b.hlox --html OUT``, and the
HTML a failed golden check writes next to its golden): the comparison model (``comparison_model``: the versions
and settings that differ, the first differing stage, the aligned stage table with each side's ops and cost, the
final modules measured and their diffs) drawn by the components as the JupyterLab extension's Compare tab draws
it, under a check's verdict, which only this page shows.
"""
from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from ..analysis.diff.explorations import Comparison, number_text
from ..analysis.diff.gates import Verdict
from .comparison_model import comparison_model
from .report import write_page

__all__ = ["write_comparison_page"]


def _verdict_table(verdict: Verdict) -> Markup:
    head = Markup("").join(Markup("<th>{}</th>").format(c)
                           for c in ("result", "what", "golden", "now", "change", "limit", "note"))
    rows = Markup("").join(Markup('<tr data-ok="{}"><td class="{}">{}</td>{}</tr>').format(
        "true" if r.ok else "false", "" if r.ok else "wb-fail", "ok" if r.ok else "FAIL",
        Markup("").join(Markup("<td>{}</td>").format(v) for v in (
            r.what, number_text(r.golden), number_text(r.now), r.change, r.limit, r.note))) for r in verdict.rows)
    status = "passed" if verdict.ok else f"failed ({len(verdict.failed)} of {len(verdict.rows)} limits)"
    return Markup('<h2 id="wb-verdict">Check: {}</h2><table class="wb-table"><thead><tr>{}</tr></thead>'
                  "<tbody>{}</tbody></table>").format(status, head, rows)


def write_comparison_page(c: Comparison, path, verdict: Verdict | None = None) -> Path:
    """Write the comparison (and a check's verdict) as one self-contained HTML page; returns the path."""
    a, b = c.labels
    return write_page(path, f"{a} \u2192 {b} \u2014 hlo-workbench comparison", "hlo-workbench diff a.hlox b.hlox --html",
                      comparison_model(c), lead=_verdict_table(verdict) if verdict is not None else Markup(""))
