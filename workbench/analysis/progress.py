"""Progress bars for the long calls (applicable, bisect, pattern_timing): tqdm when it is installed.

A bar is shown on stderr in a terminal or a plain process, and as a widget in a notebook kernel
(``tqdm.auto``). Callers test the returned bar with ``is not None``: a tqdm bar defines ``__len__``
from its total, so ``if bar:`` raises for a bar without a total and is False for a total of 0.
"""
from __future__ import annotations

__all__ = ["progress_bar"]


def progress_bar(total: int | None, desc: str, show: bool):
    """A tqdm bar (``total=None`` counts without an end), or None when ``show`` is False or tqdm is absent."""
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False)
