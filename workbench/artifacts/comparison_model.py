"""The comparison model: two explorations side by side, as the JupyterLab extension's Compare tab draws it
(``extensions/hlo-workbench-lab/src/components/compare.ts``), made of a ``Comparison``
(``analysis.diff.explorations``, ``wb.compare_explorations``) into one JSON document, ``format`` 1, described
by ``assets/compare.schema.json``. The tab computes nothing: every fact it shows is here.

    {"schema": "hlo-workbench/comparison", "format": 1, "labels": [a, b], "paths": [a, b],
     "identical", "same_input", "first_difference", "versions", "settings", "lines",
     "columns", "rows", "final", "modules", "times", "views"}

``rows`` are ``Comparison.rows()`` (the stages aligned by name, each side's ops and cost, the delta) with each
stage's group; ``first_difference`` the first row whose modules differ beyond renaming; ``modules`` the final
MLIR module's and ``xla:optimized``'s change, each with its structural diff as a view model's ``diff`` carries
one (``stage_diffs.carried``: normalized texts and runs) or a ``note`` saying why there is none; ``final`` the
measures a regression gate reads; ``lines`` the comparison in words (``str(comparison)``); ``views``: each
file's own view model (``viewmodel.view_model``), opened on the pass of its first difference where it has it.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..analysis.diff.explorations import COST_COLUMNS, FINAL_MEASURES, Comparison, growth, growth_text
from .jsonout import plain_json
from .viewmodel import finite, pair_diff, validate_view

__all__ = ["SCHEMA", "FORMAT", "DIFF_BYTES", "comparison_model", "validate_comparison"]

SCHEMA = "hlo-workbench/comparison"
FORMAT = 1
DIFF_BYTES = 8 * 2**20  # a final module's carried diff (normalized texts and runs, UTF-8), at most; the server's too
_COLUMNS = ("ops",) + COST_COLUMNS


def _row(pair, row: dict[str, Any]) -> dict[str, Any]:
    out = {"stage": row["stage"], "group": (pair.a or pair.b).group, "side": row["side"], "same": bool(row["same"])}
    for col in _COLUMNS:
        out[col] = [finite(row[f"{col}_{k}"]) for k in ("a", "b", "delta")]
    return out


def _module(m, labels: tuple[str, str]) -> dict[str, Any]:
    a, b = labels
    return {"what": m.what, "label": m.label, "changed": m.changed, "words": m.words(),
            "ops": [{"op": op, "before": x, "after": y, "delta": d} for op, x, y, d in m.ops],
            "diff": pair_diff(m.before, m.after, f"{a}: {m.before.name}", f"{b}: {m.after.name}", DIFF_BYTES)}


def _final(c: Comparison) -> list[dict[str, Any]]:
    said = dict(FINAL_MEASURES)
    out = []
    for name, (va, vb) in c.final.items():
        g = growth(va, vb)
        out.append({"measure": name, "what": said.get(name, name), "a": finite(va), "b": finite(vb),
                    "growth": growth_text(g) if g is not None else ""})
    return out


def comparison_model(c: Comparison, paths: tuple[str, str] = ("", ""), views: Sequence[dict] = ()) -> dict[str, Any]:
    """The JSON model of ``c`` (see the module docstring); ``paths``: the two files' paths as the viewer names
    them, ``views``: each file's view model (none: the tab shows the comparison alone)."""
    first = c.first_difference
    data = {
        "schema": SCHEMA,
        "format": FORMAT,
        "labels": list(c.labels),
        "paths": list(paths),
        "identical": c.identical,
        "same_input": c.same_input,
        "first_difference": None if first is None else {
            "stage": first.name, "side": first.side, "words": first.words(c.labels)},
        "versions": [{"name": k, "a": va, "b": vb} for k, va, vb in c.versions],
        "settings": list(c.settings),
        "lines": c.lines(),
        "columns": list(_COLUMNS),
        "rows": [_row(p, r) for p, r in zip(c.pairs, c.rows())],
        "final": _final(c),
        "modules": [_module(m, c.labels) for m in (c.mlir, c.xla) if m is not None],
        "times": None if c.times is None else {
            "a_ms": finite(c.times[0].median * 1e3), "b_ms": finite(c.times[1].median * 1e3)},
        "views": list(views),
    }
    return plain_json(data, "comparison", allow_nan=False)


def validate_comparison(model: dict[str, Any]) -> None:
    """ValueError naming the field where ``model`` is not a comparison model as ``assets/compare.schema.json``
    says (each of its ``views`` checked as a view model too)."""
    validate_view(model, "compare.schema.json", "a comparison model")
    for view in model["views"]:
        validate_view(view)
