"""The values every reader of locations gives: a Python ``Frame``, an op's ``Origin`` (a source position) and
``OpLocation`` (an op of a program text and its origins).

An **origin** is one source position: the innermost Python frame (file, line, column, function) and the
name stack. Two ops in two stages with an origin in common came from the same JAX equation
(``Origin.key``: the name stack without XLA's ``jit(...)/call_exported/`` prefix, file, line, column).
MLIR locations are read by ``locations.py``, XLA's metadata by ``hlo_locations.py``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Dataflow", "Frame", "OpLocation", "Origin", "distinct_origins", "jax_name_stack", "user_frame"]


@dataclass(frozen=True)
class Frame:
    """One Python frame of a location: file, line, column (1-based, 0 when unknown) and function."""

    file: str
    line: int
    column: int = 0
    function: str = ""


@dataclass(frozen=True)
class Origin:
    """One source position of an op: the name stack and the Python frames, innermost first."""

    name: str
    frames: tuple[Frame, ...]

    @property
    def frame(self) -> Frame | None:
        """The innermost frame (the line of the user's code that made the op), if any."""
        return self.frames[0] if self.frames else None

    @property
    def key(self) -> tuple:
        """What two stages' ops share when they came from the same JAX equation."""
        f = self.frame
        return (jax_name_stack(self.name),) + ((f.file, f.line, f.column) if f else ("", 0, 0))


@dataclass(frozen=True)
class OpLocation:
    """One op of a program text: ``op`` its name (``stablehlo.add``; an HLO opcode), ``result`` its first
    result (``%3``; an HLO instruction's name), ``func`` the function or computation it sits in, ``line``
    its line (0-based) in the text without locations (``strip_locations``: the stage's text), ``origins`` where it came from (empty: no location), and for an HLO
    instruction inside a fused computation, ``fusion``: the fusion instruction that holds it."""

    op: str
    result: str
    func: str
    line: int
    origins: tuple[Origin, ...]
    fusion: str = ""


@dataclass(frozen=True)
class Dataflow:
    """How the ops of one program text (indexed as its ``OpLocation`` list) are joined: ``operands[i]`` the
    ops whose results op ``i`` uses, ``parent[i]`` the op that holds it (MLIR: the op whose region it is in;
    HLO: the instruction that calls its computation, a fusion for a fused instruction), -1 for none."""

    operands: tuple[tuple[int, ...], ...]
    parent: tuple[int, ...]


_XLA_PREFIX = re.compile(r"^(?:jit\([^/]*\)/)?call_exported/")


def jax_name_stack(name: str) -> str:
    """The name stack as JAX wrote it in StableHLO: XLA's ``jit(call)/call_exported/`` prefix removed."""
    return _XLA_PREFIX.sub("", name)


def distinct_origins(pairs: Iterable[tuple[str, Sequence[Frame]]]) -> tuple[Origin, ...]:
    """The origins of (name stack, frames) pairs, each once, in order; a pair with neither left out."""
    out = []
    for name, frames in pairs:
        o = Origin(name, tuple(frames))
        if (o.name or o.frames) and o not in out:
            out.append(o)
    return tuple(out)


def user_frame(origin: Origin, skip: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Frame | None:
    """The innermost frame of ``origin``, unless its file is under one of ``skip`` and none of ``keep``
    (folders of tools, e.g. the workbench's own package but its examples): an op made where a tool called
    JAX (a constant at the traced function's boundary) came from no line of the user's, and the frames
    outside the tool's are its caller's."""
    f = origin.frame
    if f is None or f.file in _BUFFERS:
        return None
    if any(f.file.startswith(s) for s in skip) and not any(f.file.startswith(k) for k in keep):
        return None
    return f


# what MLIR's parser names a buffer read from a string or stdin: a location into the pass's own input text
# (a module given without locations gets these from the first pass that parses it), never the user's code
_BUFFERS = ("-", "", "<stdin>", "<unknown>")
