"""Which program a run ran, and whether an exploration still has that program.

A toggle (``with_patterns``, ``with_xla``, ``with_pipeline``) makes a new Exploration that carries the
runs made so far along; each run keeps a ``RunProgram``: the stage it ran, a hash of that stage's text
as it ran, and the settings that made and compiled it. A run is *stale* for an exploration whose stage
of that name is gone, holds another text, or is compiled with other XLA settings: its numbers say
nothing about the program that exploration has. ``why_stale`` says which, in words ("" for a run
that is current); it reads only the exploration's trace and MLIR stages, so it never waits for XLA.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

from ...ir.text import text_hash
from ...stages import Spec, Stage, Staged

__all__ = ["RunProgram", "program_of", "why_stale", "settings_words"]

_LISTED = 4  # names listed in words before "and N more"
_SKIP = "xla_disable_hlo_passes"


@dataclass(frozen=True)
class RunProgram:
    """The program one run ran: ``stage``, the SHA-256 of its text (without locations) as it ran, and
    the settings of the exploration it ran in: the MLIR ``pipeline``, the patterns switched off and
    added on top of the defaults, and the XLA options it was compiled with (``xla_disable_hlo_passes``
    among them). ``settings`` says them in words."""

    stage: str
    text_sha256: str
    pipeline: str
    patterns_off: tuple[str, ...] = ()
    patterns_added: tuple[str, ...] = ()
    xla_options: tuple[tuple[str, str], ...] = ()

    @property
    def xla_off(self) -> tuple[str, ...]:
        """The XLA HLO passes the run's compile skipped, sorted."""
        return tuple(_skipped(self.xla_options))

    @property
    def settings(self) -> str:
        return settings_words(self.pipeline, self.patterns_off, self.patterns_added, self.xla_options)


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def settings_words(pipeline: str, patterns_off: Sequence[str] = (), patterns_added: Sequence[str] = (),
                   xla_options: Sequence[tuple[str, str]] = ()) -> str:
    """The settings in words, as the panel's header says them: "pipeline all; patterns off:
    dot_transpose; XLA off: algsimp" (a long pipeline string cut at 60 characters)."""
    bits = [f"pipeline {pipeline if len(pipeline) <= 60 else pipeline[:59] + '…'}"]
    if patterns_off:
        bits.append(f"patterns off: {_names(sorted(patterns_off))}")
    if patterns_added:
        bits.append(f"patterns added: {_names(sorted(patterns_added))}")
    return "; ".join(bits + _xla_words(xla_options))


def _skipped(xla_options: Sequence[tuple[str, str]]) -> list[str]:
    return sorted(p for p in dict(xla_options).get(_SKIP, "").split(",") if p)


def _xla_words(xla_options: Sequence[tuple[str, str]]) -> list[str]:
    """XLA's options in words: the passes skipped, then every other option as key=value."""
    off, others = _skipped(xla_options), sorted((k, v) for k, v in xla_options if k != _SKIP)
    return [f"XLA off: {_names(off)}"] * bool(off) + [f"XLA {k}={v}" for k, v in others]


@functools.lru_cache(maxsize=16)  # holds the texts: few, as a session runs few stages
def _hash(text: str) -> str:
    """``text_hash``, remembered for the texts asked about lately: the panel asks of every run of the
    session after every toggle, mostly of the same stage texts (a str caches its own hash, so a lookup
    costs nothing once the text has been hashed)."""
    return text_hash(text)


def program_of(spec: Spec, stage: Stage) -> RunProgram:
    """The program a run of ``stage`` in an exploration built with ``spec`` runs."""
    sel = spec.selection
    return RunProgram(stage.name, _hash(stage.text), spec.pipeline, tuple(sorted(sel.disabled)),
                      tuple(sorted(sel.enabled)), tuple(spec.xla_options))


def why_stale(program: RunProgram, ex: Staged) -> str:
    """Why ``ex`` no longer has the program ``program`` is of, in words; "" when it has it: its stage
    of that name holds the same text and XLA compiles it with the same options. Reads ``ex``'s trace
    and MLIR stages only (a run is of one of those), never its XLA stages."""
    stage = next((s for s in ex.pipeline_stages if s.name == program.stage), None)
    if stage is None:
        return f"stage {program.stage!r} is not in this exploration (pipeline {ex.spec.pipeline!r})"
    if stage.error:
        return f"stage {program.stage!r} failed in this exploration"
    if _hash(stage.text) != program.text_sha256:
        return f"stage {program.stage!r} holds another program than the one this run ran"
    now = tuple(ex.spec.xla_options)
    if tuple(sorted(now)) != tuple(sorted(program.xla_options)):
        was, is_ = ("; ".join(_xla_words(o)) or "XLA's defaults" for o in (program.xla_options, now))
        return f"XLA compiles it with other options ({is_}; the run had {was})"
    return ""
