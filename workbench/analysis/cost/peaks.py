"""Peak rates of devices and the roofline of a module's totals on one of them.

The GPU and TPU peaks are spec-sheet numbers (``backends.peaks``); the CPU's are measured
on this machine by a micro-benchmark (under a second) the first time they are asked for, and cached by
host name; the CPU has no interconnect figure (NaN).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ...backends.peaks import GPU_PEAKS, TPU_PEAKS, DevicePeak
from ...errors import UnknownNameError, UnknownPeakError
from .model import ModuleCost

__all__ = ["PEAKS", "DevicePeak", "Roofline", "collective_seconds", "cpu_peak", "peak_of", "roofline"]

def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hlo-workbench" / "cpu_peak.json"


def _best_seconds(fn: Callable[[], object], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _measure_cpu() -> DevicePeak:
    # A float32 matmul large enough to reach BLAS's steady state but quick: ~0.27 GFLOP per call.
    n = 512
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up: thread pool start and page faults
    flops = 2 * n**3 / _best_seconds(lambda: a @ b, repeats=5)
    # A copy of 64 MiB, well beyond the caches; a copy reads and writes every byte.
    src = np.ones(16 * 2**20, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    bandwidth = 2 * src.nbytes / _best_seconds(lambda: np.copyto(dst, src), repeats=5)
    host = socket.gethostname()
    day = datetime.date.today().isoformat()
    return DevicePeak(
        "cpu",
        MappingProxyType({"fp32": flops}),
        bandwidth,
        f"measured by workbench.cost micro-benchmark on {host}, {day} "
        "(numpy float32 512x512 matmul; 64 MiB array copy)",
    )


def cpu_peak(cache: Path | None = None) -> DevicePeak:
    """This machine's peaks, measured once (under a second) and then read from a JSON cache.

    The cache (``~/.cache/hlo-workbench/cpu_peak.json`` unless ``cache`` names another file) is
    keyed by host name, so a home directory shared between machines re-measures on each.
    """
    path = cache or _cache_file()
    host = socket.gethostname()
    try:
        stored = json.loads(path.read_text())
        if stored.get("host") == host:
            return DevicePeak(
                "cpu",
                MappingProxyType(dict(stored["flops_per_s"])),
                float(stored["bytes_per_s"]),
                str(stored["source"]),
            )
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no cache yet, or an unreadable one: measure again
    peak = _measure_cpu()
    record = {
        "host": host,
        "flops_per_s": dict(peak.flops_per_s),
        "bytes_per_s": peak.bytes_per_s,
        "source": peak.source,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2))
    except OSError:
        pass  # a read-only home still gets the numbers, just not cached
    return peak


_SHEETS = {**GPU_PEAKS, **TPU_PEAKS}


class _PeakTable(Mapping[str, DevicePeak]):
    """The GPU and TPU spec-sheet peaks, plus "cpu", measured only when first looked up."""

    def __init__(self) -> None:
        self._cpu: DevicePeak | None = None

    def __getitem__(self, device: str) -> DevicePeak:
        if device == "cpu":
            if self._cpu is None:
                self._cpu = cpu_peak()
            return self._cpu
        return _SHEETS[device]

    def __iter__(self) -> Iterator[str]:
        return iter([*_SHEETS, "cpu"])

    def __len__(self) -> int:
        return len(_SHEETS) + 1


PEAKS: Mapping[str, DevicePeak] = _PeakTable()


def peak_of(device) -> DevicePeak | None:
    """The peaks of a JAX device: the CPU's measured here, an accelerator's from its spec sheet (found by its
    ``device_kind``); None where none is known."""
    from ...backends import backend_of

    if device.platform == "cpu":
        return PEAKS["cpu"]
    return backend_of(device).peak(str(getattr(device, "device_kind", "")))


@dataclasses.dataclass(frozen=True)
class Roofline:
    """Lower bounds on run time from the flop count, the bytes moved in memory and the bytes moved
    between devices by collectives, and which one binds."""

    device: str
    dtype: str
    flops: int
    bytes: int
    peak_flops_per_s: float
    peak_bytes_per_s: float
    time_flops_s: float
    time_bytes_s: float
    bound: str
    arithmetic_intensity: float
    ridge_point: float
    source: str
    collective_bytes: int = 0
    peak_interconnect_bytes_per_s: float = math.nan
    time_collective_s: float = 0.0


def _peak(device: str) -> DevicePeak:
    """The peaks named ``device``: a key of ``PEAKS`` ("H100", "TPU v5e", "cpu"), or a device JAX has here
    ("tpu:0", "tpu", "cpu:0": its sheet found from its ``device_kind``)."""
    if device in PEAKS:
        return PEAKS[device]
    found = _peak_of_device(device)
    if found is None:
        raise UnknownPeakError("device", device, list(PEAKS), f"roofline has peaks for {', '.join(PEAKS)}, and for "
                               "the devices JAX has here by their id (tpu:0, cpu:0)")
    return found


def _peak_of_device(device: str) -> DevicePeak | None:
    from ...pipeline.trace import resolve_device

    try:
        return peak_of(resolve_device(device))
    except UnknownNameError:  # no such device here
        return None


def collective_seconds(collective_bytes: int | None, device: str) -> float:
    """Seconds ``collective_bytes`` (bytes each device sends, the ``collective_bytes`` of ``ex.cost()``)
    take at ``device``'s one-direction interconnect bandwidth: 0 for none, NaN where the bandwidth or
    the bytes are unknown (the CPU has no interconnect figure)."""
    if collective_bytes is None:
        return math.nan
    if collective_bytes == 0:
        return 0.0
    return collective_bytes / _peak(device).interconnect_bytes_per_s


def roofline(cost: ModuleCost, device: str = "H100", dtype: str = "fp32", collective_bytes: int = 0) -> Roofline:
    """Roofline of a module's totals on ``device`` (a key of ``PEAKS``) at ``dtype``'s peak rate, with
    ``collective_bytes`` (bytes each device sends in collectives) at its interconnect bandwidth.

    ``bound`` is "compute", "memory" or "collective": whichever time is longest (a collective time that
    is NaN, for a device of unknown interconnect, does not take part). Transcendentals are not in the
    flop count (XLA keeps them apart), unfused bytes overstate the traffic of a fused program, and
    collectives may overlap computation: the times are bounds for comparing stages, not predictions.
    An unknown device or dtype raises UnknownPeakError with the closest names.
    """
    peak = _peak(device)
    if dtype not in peak.flops_per_s:
        raise UnknownPeakError("dtype", dtype, list(peak.flops_per_s),
                               f"{device} has peaks for {', '.join(peak.flops_per_s)}")
    flops_rate = peak.flops_per_s[dtype]
    time_flops = cost.flops / flops_rate
    time_bytes = cost.bytes / peak.bytes_per_s
    time_collective = collective_seconds(collective_bytes, device)
    bound = "compute" if time_flops >= time_bytes else "memory"
    if time_collective > max(time_flops, time_bytes):  # False for NaN
        bound = "collective"
    return Roofline(
        device=device,
        dtype=dtype,
        flops=cost.flops,
        bytes=cost.bytes,
        peak_flops_per_s=flops_rate,
        peak_bytes_per_s=peak.bytes_per_s,
        time_flops_s=time_flops,
        time_bytes_s=time_bytes,
        bound=bound,
        arithmetic_intensity=cost.flops / cost.bytes if cost.bytes else math.inf,
        ridge_point=flops_rate / peak.bytes_per_s,
        source=peak.source,
        collective_bytes=collective_bytes,
        peak_interconnect_bytes_per_s=peak.interconnect_bytes_per_s,
        time_collective_s=time_collective,
    )
