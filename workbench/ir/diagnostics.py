"""MLIR's diagnostics as a pass that failed left them: read from the text the pass runner printed.

MLIR reports an error on an op as a *diagnostic*: a severity, a message and the op's location. Where no
handler takes it, MLIR prints it to stderr as ``loc(...): error: message`` (the location whole, every frame
of JAX's call-site chain spelled out); jaxlib's MLIRError words one ``error: loc(...): message``. A location
MLIR does not know prints nothing: ``error: message``. ``read_diagnostics`` reads any of these lines.

enzyme-ad's ``run_pass_pipeline`` (enzyme_ad/jax/compile_with_xla.cc) writes its error text in one stream:
"Failed to parse pipeline" goes in before it parses the pipeline, "Pipeline failed:" and each diagnostic's
message (no location) after a pass fails, and it raises that text as a ValueError. So every failed pass reads
"Failed to parse pipeline" though the pipeline parsed; ``enzyme_failure`` tells the two apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .locations import read_location
from .origins import Origin
from .text import skip_balanced

__all__ = ["Diagnostic", "enzyme_failure", "read_diagnostics"]


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic: ``severity`` (error, warning, note, remark), ``message``, ``location`` as MLIR printed
    it (``loc(...)``; "" when it printed none) and the ``origins`` read from it (``locations.read_location``)."""

    severity: str
    message: str
    location: str
    origins: tuple[Origin, ...]


_SEVERITY = r"(error|warning|note|remark)"
_AFTER_LOC = re.compile(r":\s*" + _SEVERITY + r":\s?(.*)$")  # loc(...): error: message
_BEFORE_LOC = re.compile(r"\s*" + _SEVERITY + r":\s*(?=loc\()")  # error: loc(...): message
_BARE = re.compile(r"\s*" + _SEVERITY + r":\s(.*)$")  # error: message (an unknown location)


def _one(line: str) -> tuple[str, str, str] | None:
    """(severity, message, location) of one printed diagnostic line, or None."""
    stripped = line.lstrip()
    if stripped.startswith("loc("):
        end = skip_balanced(stripped, 3)
        m = _AFTER_LOC.match(stripped, end)
        return (m.group(1), m.group(2).strip(), stripped[:end]) if m else None
    m = _BEFORE_LOC.match(line)
    if m:
        end = skip_balanced(line, m.end() + 3)
        if line.startswith(":", end):
            return m.group(1), line[end + 1:].strip(), line[m.end():end]
        return None
    m = _BARE.match(line)
    return (m.group(1), m.group(2).strip(), "") if m else None


def read_diagnostics(text: str) -> tuple[Diagnostic, ...]:
    """Every diagnostic printed in ``text`` (a pass runner's log, an MLIRError's message), in order, each
    once; the other lines (the runner's own words, Python's) are not diagnostics and are left out."""
    out: list[Diagnostic] = []
    for line in text.splitlines():
        read = _one(line)
        if read is None:
            continue
        severity, message, location = read
        d = Diagnostic(severity, message, location, read_location(location) if location else ())
        if d not in out:
            out.append(d)
    return tuple(out)


def enzyme_failure(message: str) -> tuple[str, ...] | None:
    """The messages of the diagnostics a pass raised, as enzyme-ad's runner words its error ("Failed to
    parse pipeline", "Pipeline failed:", each message on a line); None when ``message`` is not a pass's
    failure in that form (a pipeline that truly did not parse has no "Pipeline failed:" line)."""
    lines = [ln.strip() for ln in message.splitlines()]
    if "Pipeline failed:" not in lines:
        return None
    return tuple(ln for ln in lines[lines.index("Pipeline failed:") + 1:] if ln)
