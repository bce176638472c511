"""A program's compile time against a bare compile's, measured side by side in one run.

A compile time alone means little across runs of a CI machine: another job, a slower runner or a
cold disk moves it by more than most regressions. What holds is its ratio to a yardstick measured in
the same run, rounds interleaved: here the yardstick is the *bare compile*, XLA's compile of the
program as lowered with XLA's defaults (what ``jax.jit(f).lower(*args).compile()`` does), and the time
measured is the program's compile through the exploration's pipeline: its MLIR passes run in one go
in the worker (never served from the runner's cache) and XLA's compile of the final module with the
exploration's XLA options. Every compile is XLA's own, without dumps, with JAX's persistent cache off.

The ratio catches what the pipeline makes slower: a pattern that blows up, a final module that XLA
takes longer over, a toggle that makes XLA work harder. A change that slows every compile alike (XLA
itself slower on everything) moves both sides and is not what the ratio measures; the seconds are
reported beside it.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Protocol

from ...errors import WorkbenchError
from ...pipeline.runner import default_runner
from ...pipeline.build import xla_lowering
from ...pipeline.xla import check_options, no_persistent_cache
from ...pipeline.xla_probe import guard_compile
from ...stages import Stage, Staged
from .execute import runnable_source

__all__ = ["CompileTime", "Timed", "measure_compile_time", "REPEAT"]

REPEAT = 3  # rounds of (bare compile, pipeline + compile), interleaved; the medians are compared


@dataclass(frozen=True)
class CompileTime:
    """Medians of ``repeat`` interleaved rounds: ``seconds`` (the MLIR pipeline, ``pipeline_seconds``, and
    XLA's compile of its final module, ``xla_seconds``) and ``bare_seconds`` (XLA's compile of the program
    as lowered, XLA's defaults); ``ratio`` = seconds / bare_seconds."""

    seconds: float
    bare_seconds: float
    pipeline_seconds: float
    xla_seconds: float
    repeat: int

    @property
    def ratio(self) -> float:
        return self.seconds / self.bare_seconds if self.bare_seconds > 0 else float("inf")

    def words(self) -> str:
        return (f"{self.seconds:.3f} s (pipeline {self.pipeline_seconds:.3f} s + XLA {self.xla_seconds:.3f} s) "
                f"against a bare compile's {self.bare_seconds:.3f} s, medians of {self.repeat}")

    def as_json(self) -> dict:
        return {"seconds": self.seconds, "bare_seconds": self.bare_seconds, "pipeline_seconds": self.pipeline_seconds,
                "xla_seconds": self.xla_seconds, "repeat": self.repeat}


class Timed(Staged, Protocol):
    """What ``measure_compile_time`` reads of an exploration: its stages (``Staged``) and the whole MLIR pipeline
    as one string (the facade's ``Exploration.pipeline_string``)."""

    @property
    def pipeline_string(self) -> str: ...


def _lowered(ex: Staged, stage: Stage):
    """``stage`` lowered for XLA as the exploration's own compile lowers it (``build.xla_lowering``)."""
    return xla_lowering(ex.spec, runnable_source(ex, stage))[0]


def _compile_seconds(lowered, options: dict) -> float:
    with no_persistent_cache():
        t = time.perf_counter()
        lowered.compile(compiler_options=options or None)
        return time.perf_counter() - t


def measure_compile_time(ex: Timed, reference: Stage, final: Stage, repeat: int = REPEAT) -> CompileTime:
    """The compile time of ``ex``'s program through its pipeline (ending at ``final``, the last MLIR
    module) and of a bare compile of ``reference`` (the program as lowered), ``repeat`` rounds interleaved.
    WorkbenchError for an exploration with hand edits (its pipeline does not run in one go) or a failed stage."""
    spec = ex.spec
    if spec.edits:
        raise WorkbenchError("the compile time of an exploration edited by hand is not measured: its pipeline "
                             "does not run in one go")
    if final.error or reference.error:
        raise WorkbenchError("the compile time is not measured: a stage failed")
    pipeline = ex.pipeline_string
    options = check_options(dict(spec.xla_options))
    guard_compile(final.text_with_locations or final.text, spec.device, options, spec.timeout,
                  partitions=spec.traced.nr_devices if spec.traced is not None else 1)
    runner = default_runner()
    bare, mlir, xla = [], [], []
    for _ in range(max(1, repeat)):
        # lowered anew each round: JAX keeps the executables of a lowering's module, and a round must compile
        bare.append(_compile_seconds(_lowered(ex, reference), {}))
        mlir.append(runner.seconds(spec.input_text, pipeline, timeout=spec.timeout) if pipeline else 0.0)
        xla.append(_compile_seconds(_lowered(ex, final), options))
    total = statistics.median(m + x for m, x in zip(mlir, xla))
    return CompileTime(total, statistics.median(bare), statistics.median(mlir), statistics.median(xla), len(bare))
