"""A saved exploration's hand edits (``stages.Edit``): in the manifest's ``spec.edits``, each edit's kind, step,
stage and pass, and its text stored with the stage texts (by hash), so that a loaded file's pipeline is
built again with them (a toggle on it keeps them) and ``ex.edits`` lists them."""
from __future__ import annotations

from typing import Callable

from ..stages import Edit

__all__ = ["edits_json", "edits_from"]


def edits_json(edits: tuple[Edit, ...], add: Callable[[str], str]) -> list[dict]:
    """The manifest's rows of ``edits``; ``add(text)`` stores a text with the stage texts and gives its hash."""
    return [{"kind": e.kind, "at": e.at, "stage": e.stage, "pass": e.pass_, "text": add(e.text) if e.text else None}
            for e in edits]


def edits_from(rows: list[dict] | None, texts: dict[str, str]) -> tuple[Edit, ...]:
    """The edits of a manifest's rows (checked against ``manifest.EDITS`` with the rest of the manifest)."""
    return tuple(Edit(r["kind"], int(r["at"]), r["stage"], texts[r["text"]] if r.get("text") else "", r["pass"])
                 for r in rows or ())
