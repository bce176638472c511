"""Where the bytes go, as an Exploration asks for it: ``ex.memory()`` (``analysis/memory.py`` reads XLA's buffer
assignment and live ranges of the exploration's own compile)."""
from __future__ import annotations

from ..analysis.memory import Memory, memory_of
from ..backends import platform_of
from ..errors import UnknownNameError, WorkbenchError
from .backend_change import explored_device

__all__ = ["InMemory"]


class InMemory:
    """The Exploration's memory methods (a mixin: it reads ``stages``, ``spec``, ``stage``, ``xla_result`` and
    ``_last_module``)."""

    def memory(self, stage: str = "xla:optimized", device: str | None = None, space: int = 0) -> Memory:
        """Where the bytes go in XLA's compile of this program: a ``Memory`` read from XLA's buffer assignment and
        live ranges (``peak_bytes``, ``timeline()``, ``at_peak()``, ``by_line()``, ``donation()``, ``spaces()``,
        ``reported()``). Only ``xla:optimized`` has a schedule and buffers; ``device`` must be the one explored
        for (explore again with ``device=`` for another); ``space`` picks the memory space the tables describe (0
        the main one; 1 a TPU's VMEM)."""
        if stage != "xla:optimized":
            st = self.stage(stage)
            raise UnknownNameError("stage with buffers", st.name, ["xla:optimized"], known_note=(
                f"XLA assigns buffers and schedules only the module it compiles to the end: ask for xla:optimized, "
                f"not {st.name}"))
        own = explored_device(self)
        platform = platform_of(own)
        if device is not None and (platform_of(device) != platform or (":" in device and device != own)):
            raise WorkbenchError(f"this exploration was compiled for {own}, so XLA's buffers are those of {own}; "
                                 f"explore with device={device!r} to see the memory there")
        xla = self.xla_result
        analysis = xla.memory if xla is not None else {}
        mlir = self._last_module() if self.spec.traced is not None or self.spec.loaded is not None else None
        return memory_of(self.stages, platform, analysis, self._donated_parameters(), mlir, space,
                         xla.passes if xla is not None else ())

    def _donated_parameters(self) -> tuple[int, ...]:
        """The HLO parameter numbers of the arguments the program donates."""
        traced = self.spec.traced
        if traced is None:
            return ()
        from ..pipeline.program import donated, kept_var_idx

        gone = set(donated(traced.lowered))
        return tuple(k for k, pos in enumerate(kept_var_idx(traced.lowered)) if pos in gone)
