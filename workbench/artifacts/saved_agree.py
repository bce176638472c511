"""What a ``.hlox`` stores twice must agree: ``saved.load_exploration`` calls ``check_agreement`` before it
builds anything, and refuses a file whose copies disagree (a SavedFileError naming the stage and what
differs).

A stage is stored with its text and, where they differ, its text with locations, and its ``changed``.
All of those are made from the one text with locations when the file is saved, and each view reads a
different copy: ``ex[stage].text`` the plain text, the report and the source views the located one. A
file changed by hand after it was saved, each checksum
recomputed (the checksums only say the bytes arrived as written), would show one program in one view and
another in the next. Deriving one copy from the other and ignoring the stored one would hide which of
the two the hand meant; so the file is refused, in words, and a hand edit goes through
``ex.with_text(stage, text)``, which records it as an edit and re-derives every copy.

Checked, each in time linear in the texts (each distinct pair once): the plain text is the located one
without its locations (``ir.text.strip_locations``, what the pipeline itself derives it with); an MLIR
stage is ``changed`` exactly when its text differs from its parent's. Not checked: the per-stage diffs and
shapes (``diff``, ``normalized``) that files of earlier workbenches carry for the JupyterLab extension of
then. Nothing reads them now (a view without a kernel asks ``views/labserver.py``, which diffs the loaded
stages), so they cannot show one view a program another does not; the manifest's schema still checks
their form.
"""
from __future__ import annotations

from ..errors import SavedFileError
from ..ir.text import strip_locations

__all__ = ["check_agreement", "disagreement"]


def check_agreement(path, rows: list[dict], texts: dict[str, str]) -> None:
    """SavedFileError naming the file at ``path``, the stage and what differs, where ``disagreement`` finds one."""
    why = disagreement(rows, texts)
    if why is not None:
        raise SavedFileError(path, f"corrupt: {why}. What a .hlox stores twice disagrees: it was changed after it was "
                             "saved. Edit a stage with ex.with_text(stage, text), which re-derives every copy, and "
                             "save that")


def disagreement(rows: list[dict], texts: dict[str, str]) -> str | None:
    """The first disagreement among the copies of the manifest's stage entries ``rows`` (checked against
    the schema already), their texts ``texts`` by hash, in words naming the stage; None when they agree."""
    by_name = {r["name"]: r for r in rows}
    stripped: dict[tuple[str, str | None], str | None] = {}  # (located, text) hashes -> what differs, or None
    for r in rows:
        name = r["name"]
        if r.get("located"):
            key = (r["located"], r["text"])
            if key not in stripped:
                stripped[key] = _first_difference(strip_locations(texts[r["located"]]),
                                                  texts[r["text"]] if r["text"] else "")
            if stripped[key] is not None:
                return (f"stage {name!r}: its text is not its text with locations without the locations "
                        f"({stripped[key]})")
        parent = by_name.get(r["parent"]) if r["parent"] else None
        if parent is None or r["error"] or parent["error"]:
            continue
        same = r["text"] == parent["text"]
        if r["group"] == "mlir" and r["changed"] == same:
            return (f"stage {name!r} is marked changed={r['changed']}, but its text is "
                    f"{'the same as' if same else 'not'} its parent {parent['name']!r}'s")
    return None


def _first_difference(a: str, b: str) -> str | None:
    """Where ``b`` first differs from ``a``, line by line, in words; None when they are equal."""
    if a == b:
        return None
    la, lb = a.split("\n"), b.split("\n")
    for k, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            return f"line {k}: {y[:80]!r} where the located text has {x[:80]!r}"
    shorter, longer = ("the text", "the located text") if len(lb) < len(la) else ("the located text", "the text")
    return f"{shorter} ends at line {min(len(la), len(lb))}, {longer} goes on"
