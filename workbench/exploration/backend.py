"""The backend's own code per kernel, as an Exploration asks for it: ``ex.backend()`` (on a TPU, libtpu's LLO and
bundles: ``analysis/backend``; the dump made by ``pipeline/llo`` or read from a folder the user has)."""
from __future__ import annotations

import shutil
import threading
import weakref

from ..analysis.backend import Kernels
from ..backends import backend_of, spec_peak, tpu_clock
from ..errors import WorkbenchError
from ..ir.llo import LloIndex
from .backend_change import explored_device, not_compiled_here

__all__ = ["InBackend"]


def _device_kind(device: str) -> str:
    import jax

    platform, _, idx = device.partition(":")
    try:
        devices = jax.devices(platform)
    except RuntimeError:
        return ""
    return str(next((d for d in devices if str(d.id) == idx), devices[0]).device_kind) if devices else ""


class InBackend:
    """The Exploration's backend method (a mixin: it reads ``spec``, ``stages``, ``_last_module`` and
    ``_profiles``)."""

    _kernels: Kernels | None = None

    @property
    def _kernels_lock(self) -> threading.Lock:
        """This exploration's own lock (another's LLO compile does not hold this one's up); made on first use."""
        return self.__dict__.setdefault("_kernels_lock_", threading.Lock())

    def backend(self, fusion: str | None = None, dump: str | None = None, timeout: float | None = None):
        """The TPU's kernels of this program: a ``Kernels`` (``table()``: per fusion its bundles, the bundles it
        issues per call, slot occupancy per unit, DMAs, HBM bytes, libtpu's cycle estimate, the measured time
        after ``ex.profile()``, and whether it is MXU-, issue-, DMA- or latency-bound; ``kernel(name)``: its LLO
        after each pass and its bundles; ``for_line(line)``: the fusions a line of yours went into). With
        ``fusion``, that fusion's ``Kernel``.

        On a TPU the first call compiles the program again in a child process whose libtpu writes its LLO
        (seconds; the dump, often tens of MB, is read a kernel at a time and removed with the Exploration).
        ``dump``: a folder libtpu already wrote for this program (``LIBTPU_INIT_ARGS="--xla_jf_dump_to=DIR
        --xla_jf_dump_llo_text=true"``), read instead. Elsewhere, or where libtpu wrote nothing, the Kernels
        says why (``available`` False, ``why``) and everything else works."""
        with self._kernels_lock:
            if dump is not None:
                self._kernels = self._kernels_from(dump)
            elif self._kernels is None:
                here = not_compiled_here(self)  # a TPU file on a CPU: the table it kept, or why there is none
                self._kernels = here if here is not None else self._compile_kernels(timeout)
            kernels = self._kernels
        kernels.measured = self._measured_per_instruction() or self._saved_measured()
        if fusion is not None:
            return kernels.kernel(fusion)
        return kernels

    def _own_device(self) -> str:
        return explored_device(self)

    def _kernels_from(self, folder: str) -> Kernels:
        import os

        from ..pipeline.llo import llo_folder_index

        if not os.path.isdir(folder):
            raise WorkbenchError(f"{folder!r} is no folder: give the folder libtpu dumped into (--xla_jf_dump_to)")
        index = llo_folder_index(folder)
        return self._kernels_of(index, lambda name: _read(os.path.join(folder, name)), folder=None,
                                why="" if index else f"{folder} holds no LLO files of libtpu's (<n>-<kernel>-<NN>-<pass>.txt)")

    def _compile_kernels(self, timeout: float | None) -> Kernels:
        import os

        from ..pipeline.llo import llo_dump

        device = self._own_device()
        if not backend_of(device).llo_flags:
            return Kernels(LloIndex(), None, why=(
                f"this exploration compiled for {device}, whose backend output is in the backend:* stages (LLVM IR on a "
                "CPU, PTX on a GPU); the LLO and bundles are a TPU's"))
        self.stages  # noqa: B018 -- XLA's compile first: the LLO compile repeats it, with its options
        dumped = llo_dump(self.spec, self._last_module(), timeout or self.spec.timeout or 600.0)
        folder = dumped.folder
        kernels = self._kernels_of(dumped.index, lambda name: _read(os.path.join(folder, name)), folder=folder,
                                   why=dumped.why, seconds=dumped.seconds)
        weakref.finalize(kernels, shutil.rmtree, folder, True)
        return kernels

    def _kernels_of(self, index: LloIndex, read, folder, why: str, seconds: float = 0.0) -> Kernels:
        device = self._own_device()
        kind = _device_kind(device)
        peak = spec_peak(backend_of(device).platform, kind) if kind else None
        clock, bandwidth = (tpu_clock(kind) if kind else None), (peak.bytes_per_s if peak else None)
        saved = getattr(self, "_saved_kernels", None)
        if not kind and saved is not None:  # a TPU file read on another machine: the chip it was saved on
            kind, clock, bandwidth = saved.device_kind, saved.clock_hz, saved.hbm_bytes_per_s
        mlir = self._last_module() if self.spec.traced is not None or self.spec.loaded is not None else None
        return Kernels(index, read, why=why, device_kind=kind, clock_hz=clock, hbm_bytes_per_s=bandwidth, mlir=mlir,
                       seconds=seconds, folder=folder)

    def _saved_measured(self) -> dict:
        """{fusion: measured us} a loaded file's kernel table kept (measured on its TPU), {} without one."""
        saved = getattr(self, "_saved_kernels", None)
        rows = getattr(saved, "rows", None) or []
        return {r["fusion"]: float(r["measured_us"]) for r in rows
                if r.get("measured_us") is not None and r.get("measured_us") == r.get("measured_us")}

    def _measured_per_instruction(self) -> dict:
        """{HLO instruction: measured us per call} of the last ``profile()`` of this exploration, {} without one."""
        prof = self._profiles.get("run") if isinstance(getattr(self, "_profiles", None), dict) else None
        table = getattr(prof, "table", None)
        if table is None or not len(table) or "instruction" not in table:
            return {}
        per_call = table["median_us"]
        return {str(name).lstrip("%"): float(us) for name, us in zip(table["instruction"], per_call)}


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()

