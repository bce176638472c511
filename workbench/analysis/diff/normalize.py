"""Normalization: module text as lines with canonical value names (see the package docstring).

``read_module`` turns MLIR or HLO text into a ``Module`` -- each line a %-format with one ``%s`` per
value reference, and every value's canonical name and content key -- which the aligner works on;
``normalize`` prints it with the canonical names.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from ...ir.text import input_kind
from .model import Module
from .read_hlo import read_hlo
from .read_mlir import read_mlir

__all__ = ["Module", "read_module", "normalize", "collector_paused"]


@lru_cache(maxsize=4)
def read_module(text: str) -> Module:
    """The normalized model of MLIR or XLA HLO text.

    The last few are kept (stages repeat: many passes leave the module as it was, and a stage is
    diffed with the one before and the one after it); a ``Module`` is never changed once read.
    ``read_module.cache_clear()`` forgets them.
    """
    return read_hlo(text) if input_kind(text) == "hlo" else read_mlir(text)


def normalize(text: str) -> list[str]:
    """Normalized lines of an MLIR or HLO module: no locations or metadata, canonical names.

    See the package docstring for the rules. Two texts that differ only in value names,
    numbering, locations or whitespace normalize to the same list.
    """
    with collector_paused():
        return list(read_module(text).lines)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Parsing allocates ~10^5 small objects that never form cycles; in a process that has
    imported jax each automatic collection they trigger walks a very large heap, which can take
    longer than the diff itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
