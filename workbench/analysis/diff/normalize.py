"""Normalization: module text as lines with canonical value names (see the package docstring).

``read_module`` turns MLIR or HLO text into a ``Module`` -- each line a %-format with one ``%s`` per
value reference, and every value's canonical name and content key -- which the aligner works on;
``normalize`` prints it with the canonical names.
"""
from __future__ import annotations

from functools import lru_cache

from ...ir.collector import collector_paused
from ...ir.hlo import DEBUG_ROW, DEBUG_SECTIONS
from ...ir.text import input_kind
from ...ir.lines.model import Module
from ...ir.lines.hlo import read_hlo
from ...ir.lines.mlir import read_mlir

__all__ = ["Module", "normalize", "read_module", "shown_lines"]


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


def shown_lines(text: str) -> list[int]:
    """The line of ``text`` (0-based, as ``splitlines`` cuts it) that each line of ``normalize(text)``
    (what the diff view shows) comes from. The normalized text drops blank lines, MLIR's ``#loc`` alias
    lines and HLO's debug-info sections (``FileNames`` ... ``StackFrames``); every other line stays one."""
    hlo = input_kind(text) == "hlo"
    out, section = [], False
    for k, line in enumerate(text.splitlines()):
        if hlo and line.rstrip() in DEBUG_SECTIONS:
            section = True
            continue
        if section and DEBUG_ROW.match(line):
            continue
        section = False
        if line.strip() and not (not hlo and line.startswith("#loc")):
            out.append(k)
    return out


