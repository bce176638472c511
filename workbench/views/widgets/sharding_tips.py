"""What the diff view shows when a value's name is hovered in a sharded stage: its sharding.

``tips(text)`` turns the value shardings of one side's shown text (``analysis.sharding.shardings``, read on
the normalized lines the view shows, so the names are those on screen) into the compact form the
browser reads: each distinct description once (a module repeats a few shardings many times), and
per function the lines it spans and its names. An unsharded text gives ``{}`` after one substring
look.
"""
from __future__ import annotations

from ...analysis.sharding.shardings import has_shardings, read_shardings

__all__ = ["tips"]


def tips(text: str, partitioned: bool | None = None) -> dict:
    """``{"texts": [description], "scopes": [[first, last, {name: index}]]}`` for the shown ``text``
    (0-based, inclusive ranges of its lines); ``{}`` when no value has a sharding."""
    if not has_shardings(text):
        return {}
    scopes = read_shardings(text, partitioned=partitioned)
    if not scopes:
        return {}
    texts: dict[str, int] = {}
    out = []
    for s in scopes:
        out.append([s.first, s.last, {n: texts.setdefault(v.description, len(texts)) for n, v in s.values.items()}])
    return {"texts": list(texts), "scopes": out}
