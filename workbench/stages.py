"""The values a user holds: ``Stage`` (one program text in the pipeline) and ``Exploration`` (all of them).

An Exploration is immutable: toggling a pattern or an XLA pass returns a new one, recomputed
incrementally by ``explore.py``. XLA's stages are computed the first time something asks for them,
since compiling is the slowest step and a user toggling patterns often looks at MLIR stages first.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .errors import StageError, UnknownNameError

__all__ = ["Stage", "Exploration"]

GROUPS = ("trace", "mlir", "xla", "backend")


@dataclass(frozen=True)
class Stage:
    """One program text after one step.

    ``produced_by`` is the exact pass or pipeline string that made it from ``parent`` (pasteable into
    ``enzymexlamlir-opt --pass-pipeline=...`` for MLIR stages). ``seconds`` is None where the tool
    that made it does not report a time (single XLA passes). ``error`` is set on a stage that failed;
    its ``text`` is then empty.
    """

    name: str
    group: str
    text: str
    produced_by: str
    changed: bool
    seconds: float | None
    parent: str | None
    error: str | None = None
    text_with_locations: str = field(default="", repr=False, compare=False)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (1 if self.text and not self.text.endswith("\n") else 0)

    def __repr__(self) -> str:
        state = "ERROR" if self.error else ("changed" if self.changed else "unchanged")
        t = "" if self.seconds is None else f", {self.seconds * 1e3:.1f} ms"
        return f"Stage({self.name!r}, {self.group}, {state}, {self.lines} lines{t})"

    def _repr_html_(self) -> str:
        import html

        head = html.escape(repr(self))
        body = html.escape(self.error or self.text)
        return f"<details open><summary><code>{head}</code></summary><pre>{body}</pre></details>"


class Exploration:
    """Every stage of one program through one pipeline, in order.

    ``ex.stages`` lists them all; ``ex["stablehlo"]``, ``ex[-1]`` and ``ex.stage("canonicalize#2")``
    pick one; ``ex.changed()`` keeps those whose text differs from their parent. ``ex.error`` is the
    StageError of a failed stage (the stages before it stay usable), or None.
    """

    def __init__(self, *, spec, early: Sequence[Stage], error: StageError | None,
                 late: Callable[[], tuple[list[Stage], StageError | None, tuple[str, ...]]] | None):
        self._spec = spec
        self._early = tuple(early)
        self._error = error
        self._late_fn = late
        self._late: tuple[Stage, ...] | None = None if late else ()
        self._late_error: StageError | None = None
        self._xla_passes: tuple[str, ...] = ()
        self._lock = threading.Lock()

    # -- computing ---------------------------------------------------------------------------------
    def _ensure_late(self) -> None:
        with self._lock:
            if self._late is None:
                stages, err, passes = self._late_fn()
                self._late, self._late_error, self._xla_passes = tuple(stages), err, passes

    # -- reading -----------------------------------------------------------------------------------
    @property
    def stages(self) -> list[Stage]:
        self._ensure_late()
        return list(self._early + self._late)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    @property
    def error(self) -> StageError | None:
        if self._error is None:
            self._ensure_late()
            return self._late_error
        return self._error

    @property
    def spec(self):
        """The settings this Exploration was built with (pipeline, patterns, XLA options, device)."""
        return self._spec

    @property
    def pipeline_string(self) -> str:
        """The whole MLIR pipeline as one string, for ``enzymexlamlir-opt --pass-pipeline``."""
        return ",".join(s.produced_by for s in self._early if s.group == "mlir" and not s.error)

    @property
    def xla_passes(self) -> list[str]:
        """The HLO pass names XLA's dumps mentioned in the last compile (toggle them with ``with_xla``)."""
        self._ensure_late()
        return list(self._xla_passes)

    def stage(self, key: str | int | Stage) -> Stage:
        if isinstance(key, Stage):
            return key
        if isinstance(key, int):
            return self.stages[key]
        for s in self._early:
            if s.name == key:
                return s
        for s in self.stages:
            if s.name == key:
                return s
        raise UnknownNameError("stage", key, self.names)

    __getitem__ = stage

    def __len__(self) -> int:
        return len(self.stages)

    def __iter__(self):
        return iter(self.stages)

    def changed(self) -> list[Stage]:
        return [s for s in self.stages if s.changed or s.error]

    def parent_of(self, key) -> Stage | None:
        s = self.stage(key)
        return self.stage(s.parent) if s.parent else None

    def table(self):
        """The stages as a pandas DataFrame (name, group, changed, lines, ms, error, produced_by)."""
        import pandas as pd

        return pd.DataFrame([
            {"stage": s.name, "group": s.group, "changed": s.changed, "lines": s.lines,
             "ms": None if s.seconds is None else round(s.seconds * 1e3, 2),
             "error": s.error or "", "produced_by": s.produced_by}
            for s in self.stages
        ])

    # -- deriving new explorations --------------------------------------------------------------------
    def with_patterns(self, disable: Sequence[str] = (), enable: Sequence[str] = ()) -> "Exploration":
        """A new Exploration with these patterns switched off/on on top of the current toggles.

        Only the stages from the first one whose input or pass string changes are recomputed.
        """
        from .build import rebuild

        return rebuild(self, disable=disable, enable=enable)

    def with_xla(self, disable: Sequence[str] = (), enable: Sequence[str] = (), **options) -> "Exploration":
        """A new Exploration with XLA HLO passes switched off (or back on) and other XLA options set.

        The MLIR stages are reused as they are; only XLA recompiles.
        """
        from .build import rebuild_xla

        return rebuild_xla(self, disable=disable, enable=enable, options=options)

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        early = [s for s in self._early]
        n_late = "" if self._late is None else f" + {len(self._late)} XLA/backend"
        err = f", FAILED at {self.error.stage!r}" if self._error else ""
        return (f"Exploration({self._spec.title!r}, pipeline={self._spec.pipeline!r}, "
                f"{len(early)} trace/MLIR stages{n_late}{err})")

    def _repr_html_(self) -> str:
        import html

        head = f"<p><code>{html.escape(repr(self))}</code></p>"
        err = f"<pre style='color:#b00'>{html.escape(str(self.error))}</pre>" if self.error else ""
        return head + err + self.table().to_html(index=False, escape=True)
