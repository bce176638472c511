"""Measured times from JAX's own profiler: a trace taken around some work, read back as plain events.

``Capture()`` runs ``jax.profiler.trace`` (its Python tracer off: it would record every Python call and
slow the work it measures) into a folder of its own, and reads the XSpace it wrote with
``jax.profiler.ProfileData``. Every event is kept as an ``Event`` value (name, start, duration, the
thread or device stream it ran on, its statistics such as ``hlo_op`` and ``run_id``), so nothing
downstream touches the profiler's objects. The folder is removed unless the caller keeps it.

What the events are, on jax 0.10.2: on CPU, one event per executed thunk named by its HLO instruction
(stats ``hlo_op``, ``hlo_module``, ``run_id``) on the threads of XLA's pools, and during a compile one
event per HLO pass (``algsimp``), per pass pipeline (``simplification (jit_f)``, stat ``module``), and
the backend's steps (``CpuCompiler::RunBackend``, ``ThunkEmitter::EmitEntryComputation``, ``Codegen``).
On a GPU the kernels are events of the ``/device:GPU:N`` planes, with the same ``hlo_op`` statistics. On
a TPU the device plane ``/device:TPU:0`` has one event per call (line ``XLA Modules``) and one per executed
instruction named by its HLO text (line ``XLA Ops``); where the backend's layout says so
(``backends.TraceLayout``), a run's trace is read from those lines only (``lines=``), so the host's own
events of a long loop never become Events. A device's events carry picosecond offsets
(``device_offset_ps``, ``device_duration_ps``): their nanoseconds are made from those, each end rounded, so
events that abut stay abutting and no call loses the nanosecond a truncated duration would drop per event.
Names and statistic strings repeat (each call runs the same instructions): each distinct one is held once.
"""
from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass

from ...errors import WorkbenchError

__all__ = ["Event", "Capture", "Nesting", "TRACE_LIMIT", "read_events", "write_trace"]

_LOCK = threading.Lock()  # one trace at a time: JAX's profiler is process-wide
TRACE_LIMIT = 64 * 2**20  # the largest trace file a Capture keeps in memory (``trace``)


@dataclass(frozen=True, slots=True)  # slots: a long run's trace holds hundreds of thousands of them
class Event:
    name: str
    start_ns: int
    duration_ns: int
    line: str  # the thread (host) or stream (device) it ran on
    plane: str  # "/host:CPU", "/device:GPU:0", ...
    stats: tuple[tuple[str, object], ...] = ()

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    def stat(self, key: str, default=None):
        for k, v in self.stats:
            if k == key:
                return v
        return default


class Nesting:
    """Events of one thread (or stream), sorted by start, longest first at a tie, nested by time: an event
    that starts before another ends is inside it. ``kids(e)``: the events directly inside ``e``;
    ``self_ns(e)``: its duration less theirs (an XLA pass less the pipelines it runs, a ``while`` thunk less
    its body's thunks)."""

    def __init__(self, events: list[Event]):
        self.events = events
        self._index = {id(e): i for i, e in enumerate(events)}
        self._children: dict[int, list[Event]] = {-1: []}
        stack: list[int] = []
        for i, e in enumerate(events):
            while stack and e.start_ns >= events[stack[-1]].end_ns:
                stack.pop()
            self._children.setdefault(stack[-1] if stack else -1, []).append(e)
            self._children[i] = []
            stack.append(i)

    def kids(self, e: Event) -> list[Event]:
        return self._children.get(self._index[id(e)], [])

    def self_ns(self, e: Event) -> int:
        return max(0, e.duration_ns - sum(k.duration_ns for k in self.kids(e)))


def read_events(xspace: bytes, lines: Collection[str] | None = None) -> list[Event]:
    """The events of a profiler's XSpace file (``Capture.trace``, a ``.xplane.pb``), sorted by start, longest
    first at a tie; ``lines``: the names of the only lines (threads, device streams) to read, None: all."""
    from jax.profiler import ProfileData

    events = []
    held: dict = {}  # each distinct name and statistic string once
    for plane in ProfileData.from_serialized_xspace(xspace).planes:
        for line in plane.lines:
            if lines is not None and line.name not in lines:
                continue
            for e in line.events:
                name = e.name
                if name.startswith(("ThreadpoolListener::", "end: ")):
                    continue  # XLA's markers of a pool's regions: no work of their own
                stats = dict((k, held.setdefault(v, v) if isinstance(v, str) else v)
                             for k, v in e.stats if not k.startswith("_"))
                start, end = _span_ns(e, stats)
                events.append(Event(held.setdefault(name, name), start, end - start, line.name, plane.name,
                                    tuple(stats.items())))
    events.sort(key=lambda e: (e.start_ns, -e.duration_ns))
    return events


def _span_ns(e, stats: dict) -> tuple[int, int]:
    """An event's start and end in ns: from its picosecond statistics where it has them (taken out of
    ``stats``: the times hold them), each end rounded."""
    offset, duration = stats.get("device_offset_ps"), stats.get("device_duration_ps")
    if offset is None or duration is None:
        start = int(e.start_ns)
        return start, start + int(e.duration_ns)
    del stats["device_offset_ps"], stats["device_duration_ps"]
    return round(int(offset) / 1000), round((int(offset) + int(duration)) / 1000)


class Capture:
    """A trace of the work done inside ``with Capture() as c:``; afterwards ``c.events`` holds its events
    (sorted by start) and ``c.wall_ns`` the block's own wall time. ``keep``: a folder to leave the
    profiler's files in (``.xplane.pb``: TensorBoard's and XProf's format); else they are removed. ``lines``:
    the only lines whose events are read (``read_events``; the kept file has them all). A profiler trace
    already running in this process (the user's own ``jax.profiler.trace``) is refused in words: JAX allows
    one at a time."""

    def __init__(self, keep: str | None = None, lines: Collection[str] | None = None):
        self.keep, self.folder, self.lines = keep, keep, lines
        self.events: list[Event] = []
        self.trace: bytes | None = None  # the XSpace file as the profiler wrote it (None over TRACE_LIMIT)
        self.wall_ns = 0
        self._t = 0
        self._dir = None

    def __enter__(self) -> "Capture":
        import jax
        from jax.profiler import ProfileOptions

        if not _LOCK.acquire(blocking=False):
            raise WorkbenchError("another profile is being taken in this process; wait for it to finish")
        self._dir = self.keep or tempfile.mkdtemp(prefix="hlo-workbench-profile-")
        options = ProfileOptions()
        options.python_tracer_level = 0  # every Python call as an event: slow, and not what is measured
        options.host_tracer_level = 2  # XLA's passes and thunks (level 1 has the user's annotations only)
        try:
            jax.profiler.start_trace(self._dir, profiler_options=options)
        except Exception as e:  # noqa: BLE001 -- JAX's own error, said in words
            self._done()
            raise WorkbenchError(f"JAX's profiler cannot start: {e} (a jax.profiler.trace of your own running? "
                                 "JAX allows one at a time; stop it first)") from None
        self._t = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        import jax

        self.wall_ns = time.perf_counter_ns() - self._t
        try:
            jax.profiler.stop_trace()
            if exc[0] is None:
                found = sorted(glob.glob(os.path.join(self._dir, "**", "*.xplane.pb"), recursive=True),
                               key=os.path.getmtime)
                if not found:
                    raise WorkbenchError(f"JAX's profiler wrote no trace into {self._dir}")
                with open(found[-1], "rb") as f:
                    data = f.read()
                self.events = read_events(data, self.lines)
                if len(data) <= TRACE_LIMIT:  # what save(profile=True) stores with the file
                    self.trace = data
        finally:
            self._done()

    def _done(self) -> None:
        _LOCK.release()
        if self.keep is None and self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)


def write_trace(data: bytes, folder: str, name: str = "trace") -> str:
    """Write a kept trace (``Capture.trace``) where TensorBoard's and XProf's profile plugin look for one:
    ``folder/plugins/profile/<name>/workbench.xplane.pb``; returns that path."""
    where = os.path.join(folder, "plugins", "profile", name)
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, "workbench.xplane.pb")
    with open(path, "wb") as f:
        f.write(data)
    return path
