"""A structural diff as a view model carries it (``carried``), so that every view shows and counts exactly
what the panel's Diff tab shows.

What is carried of a ``Diff`` (``analysis.diff``): its two normalized texts, ``Diff.before`` and
``Diff.after`` (locations, metadata and ``public`` dropped, values renumbered, the after side's onto the
before side's names), each joined by newlines as the panel's DiffView sends them, and its rows as
``Diff.runs()`` -- a tag and a count per run of one kind (``"=12~1-3+2=40"``), tens of bytes where the
rows are thousands. The rows could index the stages' own lines (``normalize.shown_lines`` says which
line each normalized one comes from), but the panel shows the normalized texts -- an equal row's two
lines are equal only as normalized, the after side named after the before side -- so the texts travel
with the rows.

Who carries one: the view model (``viewmodel.py``: the pair it shows) and the comparison model
(``comparison_model.py``: the final modules' pair). A ``.hlox`` carries none: the JupyterLab extension
asks the Jupyter server extension (``views/labserver.py``), which loads the file in Python and diffs the
pair asked for. Files of workbenches before that carry each stage's diff against its parent and its
shape (the manifest's ``diff`` and ``normalized``); a load checks their form and reads nothing else of
them (``manifest.py``).
"""
from __future__ import annotations

from ..analysis.diff import Diff

__all__ = ["carried"]


def carried(d: Diff) -> dict[str, str]:
    """``d`` as a saved form carries it: ``before`` and ``after``, its normalized texts, and ``runs``."""
    return {"before": "\n".join(d.before), "after": "\n".join(d.after), "runs": d.runs()}
