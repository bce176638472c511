"""The structural diffs a saved form carries, for the views that read it without a kernel (the JupyterLab
extension), so that they show and count exactly what the panel's Diff tab shows.

What is carried of a ``Diff`` (``analysis.diff``; ``carried``): its two normalized texts, ``Diff.before``
and ``Diff.after`` (locations, metadata and ``public`` dropped, values renumbered, the after side's onto
the before side's names), each joined by newlines as the panel's DiffView sends them, and its rows as
``Diff.runs()`` -- a tag and a count per run of one kind (``"=12~1-3+2=40"``), tens of bytes where the
rows are thousands. The rows could index the stages' own lines (``normalize.shown_lines`` says which
line each normalized one comes from), but the panel shows the normalized texts -- an equal row's two
lines are equal only as normalized, the after side named after the before side -- so the texts travel
with the rows.

A notebook's bundle (``views/widgets/bundle.py``) carries the diff of the pair it shows, inline. A
``.hlox`` (``saved.py``) carries each stage's diff against its parent (``stage_diffs``), the pair the
extension opens first and the one its stage list's "diff" buttons open: in the manifest's stage entry
``diff: {before, after, runs}``, ``before`` and ``after`` the SHA-256 of texts stored among the file's
texts (once each: an unchanged stage's two texts are one, and a stage's ``after`` is at times the next
one's ``before``). Each diff takes the time ``ex.diff`` takes, linear-ish in the modules' lines; a file's
diffs are bounded by ``PAIR_LINES`` per side, ``WORK_LINES`` read in all (the time a save takes) and
``DIFF_BYTES`` of texts added. Measured: the attention example's texts 2.2 -> 4.3 MB, its file 108 ->
211 kB; a 3-layer block's texts 6.2 -> 12.1 MB, its file 185 -> 389 kB, its save 0.2 -> ~5 s.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from ..analysis.diff import Diff, diff_texts
from ..analysis.diff.explorations import module_shape, shape_is_normalized
from ..analysis.diff.normalize import read_module
from ..stages import Stage

__all__ = ["DIFF_BYTES", "PAIR_LINES", "WORK_LINES", "carried", "stage_diffs", "stage_shapes"]

PAIR_LINES = 50_000  # a .hlox carries a stage's diff when it and its parent each have at most this many lines
WORK_LINES = 400_000  # the lines (both sides) a .hlox's diffs read, at most: ~25,000 a second on a busy 2-core machine
DIFF_BYTES = 32 * 2**20  # the normalized texts a .hlox's diffs add to its texts, UTF-8 (the extension reads 256 MiB)


def carried(d: Diff) -> dict[str, str]:
    """``d`` as a saved form carries it: ``before`` and ``after``, its normalized texts, and ``runs``."""
    return {"before": "\n".join(d.before), "after": "\n".join(d.after), "runs": d.runs()}


def stage_diffs(stages: Sequence[Stage], add: Callable[[str], str | None],
                shapes: dict[str, str] | None = None) -> list[dict | None]:
    """Per stage, its diff against its parent as a .hlox's manifest holds it (``{"before": hash, "after": hash,
    "runs": ...}``, the hashes ``add`` gives the normalized texts as it stores them), or None: for a stage
    without a parent, a failed stage or parent, a pair the diff cannot read, a side over ``PAIR_LINES`` lines,
    and, in stage order, every pair past ``WORK_LINES`` lines diffed or whose new texts would take the texts
    the diffs add past ``DIFF_BYTES``. ``shapes`` (a dict) gets the ``module_shape`` of each text a diff
    normalized, by the text: the normalized parent is the diff's ``before``, so it is not normalized twice."""
    by_name = {s.name: s for s in stages}
    out: list[dict | None] = []
    seen: set[str] = set()
    used = work = 0
    for s in stages:
        parent = by_name.get(s.parent) if s.parent else None
        entry = None
        if parent is not None and not (s.error or parent.error) and max(s.lines, parent.lines) <= PAIR_LINES \
                and work + s.lines + parent.lines <= WORK_LINES:
            work += s.lines + parent.lines
            entry = _carried(parent, s)
        # the diff's normalized parent is the parent's shape (the jaxpr's shape is its text as it is)
        if entry is not None and shapes is not None and shape_is_normalized(parent):
            shapes.setdefault(parent.text, _sha256(entry["before"]))
            if s.text == parent.text:
                shapes.setdefault(s.text, _sha256(entry["after"]))
        new = {entry["before"], entry["after"]} - seen if entry else set()
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in new)
        if entry is None or used + size > DIFF_BYTES:
            out.append(None)
            continue
        used += size
        seen |= new
        out.append({"before": add(entry["before"]), "after": add(entry["after"]), "runs": entry["runs"]})
    return out


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def stage_shapes(stages: Sequence[Stage], known: dict[str, str]) -> list[str | None]:
    """Each stage's ``module_shape`` (None for backend output and failed stages), taken from ``known`` (what
    ``stage_diffs`` normalized, by text) or made, each distinct text once."""
    out: list[str | None] = []
    for s in stages:
        if s.group == "backend" or s.error or not s.text:
            out.append(None)
            continue
        if s.text not in known:
            known[s.text] = module_shape(s)
        out.append(known[s.text])
    return out


def _carried(parent: Stage, stage: Stage) -> dict[str, str] | None:
    """``carried`` of ``ex.diff(parent, stage)``; None for texts the diff cannot read (the viewer then diffs them
    by lines, as it would any other pair)."""
    try:
        if stage.text == parent.text:  # a pass that changed nothing: every row equal, no alignment to make
            lines = read_module(stage.text).lines
            text = "\n".join(lines)
            return {"before": text, "after": text, "runs": f"={len(lines)}" if lines else ""}
        return carried(diff_texts(parent.text, stage.text, parent.name, stage.name))
    except Exception:  # noqa: BLE001 -- a saved file goes without this one diff rather than fail
        return None
