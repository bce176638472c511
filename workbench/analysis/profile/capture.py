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

A run's profile need not hold its events at all: with a ``sink``, each trace is read as a stream
(``stream_events``: the profiler's lines merged in start order, one event of each line held at a time)
into the sink (``runtime.CallReader``), and ``batches`` splits the calls over several traces so that no
trace holds many more than ``SESSION_EVENTS`` events -- what JAX's profiler itself holds in memory (its
buffers, then the XSpace it builds and writes) grows with the events of one trace, as much as ~150 bytes
an event. A loop of many iterations then costs time, never memory: the largest trace is one call's
events or ``SESSION_EVENTS``, whichever is more. XLA's Eigen pool's markers
(``ThreadpoolListener::Record``, ``StartRegion``, ``StopRegion``, with the producer and consumer ids
``_p`` and ``_c`` that link a queued task to its run) are kept there: a convolution's work runs in them.
"""
from __future__ import annotations

import glob
import heapq
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from ...errors import WorkbenchError

__all__ = ["Event", "Capture", "Nesting", "TRACE_LIMIT", "SESSION_EVENTS", "read_events", "stream_events",
           "Disordered", "write_trace", "POOL_RECORD", "POOL_START", "POOL_STOP"]

_LOCK = threading.Lock()  # one trace at a time: JAX's profiler is process-wide
TRACE_LIMIT = 64 * 2**20  # the largest trace file a Capture keeps in memory (``trace``)
SESSION_EVENTS = 200_000  # ``Capture.batches``: the events one trace may hold (unless one call has more)
# XLA's Eigen pool: a task queued (``_p``: its id), a task starting on a thread (``_c``: the id it runs), stopping
POOL_RECORD, POOL_START, POOL_STOP = ("ThreadpoolListener::Record", "ThreadpoolListener::StartRegion",
                                      "ThreadpoolListener::StopRegion")
_POOL = (POOL_RECORD, POOL_START, POOL_STOP)
_FLOW = ("_p", "_c")
_PRIVATE = frozenset(("_src", "_pt", "_ct", "_p", "_c"))  # the profiler's own statistics read_events leaves out


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


class Disordered(Exception):
    """A line of a trace whose events are not in start order (longest first at a tie): it cannot be
    streamed (``stream_events``); read it whole (``read_events``) instead."""


def _line_raw(plane, line, index: int, pool: bool, check: bool = True, counted: dict | None = None) -> Iterator[tuple]:
    """One line's events in the profiler's order, each as a tuple ``(start_ns, -duration_ns, index, n, name,
    stats, plane name, line name)`` (``index``: the line's, ``n``: the event's on it, so that no two compare
    past them; ``stats`` a dict, the profiler's private ``_`` ones too). ``check``: raise ``Disordered``
    unless the line is in start order, longest first at a tie. ``pool``: XLA's pool's three markers kept, with
    their ``_p``/``_c`` (every other marker left out). ``counted["events"]`` counts every event of the line."""
    last = None
    n = 0
    plane_name, line_name = plane.name, line.name
    for e in line.events:
        n += 1
        name = e.name
        if name.startswith(("ThreadpoolListener::", "end: ")):
            if pool and name in _POOL:
                flow = {} if name == POOL_STOP else {k: v for k, v in e.stats if k in _FLOW}
                yield (int(e.start_ns), 0, index, n, name, flow, plane_name, line_name)
            continue  # every other marker of a pool's regions: no work of its own
        stats = dict(e.stats)
        if "device_offset_ps" in stats:
            start, end = _span_ns(e, stats)
        else:
            start = e.start_ns
            end = start + e.duration_ns
        if check:
            key = (start, start - end)
            if last is not None and key < last:
                raise Disordered(f"the events of {plane_name} {line_name} are not in start order")
            last = key
        yield (start, start - end, index, n, name, stats, plane_name, line_name)
    if counted is not None:
        counted["events"] = counted.get("events", 0) + n


def _order(e: Event) -> tuple[int, int]:
    return e.start_ns, -e.duration_ns


def read_events(xspace: bytes, lines: Collection[str] | None = None, pool: bool = False) -> list[Event]:
    """The events of a profiler's XSpace file (``Capture.trace``, a ``.xplane.pb``), sorted by start, longest
    first at a tie; ``lines``: the names of the only lines (threads, device streams) to read, None: all;
    ``pool``: keep XLA's pool's markers (``POOL_RECORD`` ...: what ``runtime.CallReader`` reads to charge a
    queued task to its instruction)."""
    from jax.profiler import ProfileData

    events: list[Event] = []
    held: dict = {}  # each distinct name and statistic string once
    index = 0
    for plane in ProfileData.from_serialized_xspace(xspace).planes:
        for line in plane.lines:
            if lines is None or line.name in lines:
                index += 1
                for start, neg, _, _, name, stats, plane_name, line_name in _line_raw(plane, line, index, pool,
                                                                                      check=False):
                    events.append(Event(held.setdefault(name, name), start, -neg, line_name, plane_name,
                                        tuple((k, held.setdefault(v, v) if isinstance(v, str) else v)
                                              for k, v in stats.items() if k not in _PRIVATE)))
    events.sort(key=_order)
    return events


def stream_events(xspace: bytes, lines: Collection[str] | None = None, pool: bool = True,
                  counted: dict | None = None, whole: bool = False) -> Iterator[tuple]:
    """The events of a profiler's XSpace file one at a time, in ``read_events``'s order, never all at once:
    the lines, each in the profiler's own order, merged (one event of each line held at a time); each event
    a tuple ``(start_ns, -duration_ns, line index, n, name, stats, plane, line)`` (``_line_raw``), which
    ``runtime.CallReader.feed`` reads. Raises ``Disordered`` where a line is out of order (read the file
    with ``whole=True`` then: every event read, sorted, then given one at a time). ``counted`` (a dict) gets
    ``events``: how many events the trace holds, every line and marker counted (what the profiler held),
    once the stream is read through; and ``lines``: how many lines are merged (with ``whole``: how many
    events were held at once)."""
    from jax.profiler import ProfileData

    data = ProfileData.from_serialized_xspace(xspace)
    its = []
    for plane in data.planes:
        for line in plane.lines:
            if lines is None or line.name in lines:
                its.append(_line_raw(plane, line, len(its), pool, check=not whole, counted=counted))
            elif counted is not None:
                counted["events"] = counted.get("events", 0) + sum(1 for _ in line.events)
    if whole:
        every = sorted(e for it in its for e in it)
        if counted is not None:
            counted["lines"] = len(every)
        yield from every
        return
    if counted is not None:
        counted["lines"] = len(its)
    yield from heapq.merge(*its)


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
    one at a time.

    With ``sink`` (a function of an iterator of events -- ``stream_events``'s tuples -- and the number of
    calls the trace holds, or None), no event is kept: each trace's events stream into ``sink``
    (``stream_events``, XLA's pool's markers included; where a line is out of order, the trace is read whole
    and sorted first) and ``results`` holds
    what it returned, one per trace. The block may then be entered once per batch of calls
    (``batches``); each entry is a trace of its own (with ``keep``: the first in ``keep``, the next ones in
    ``keep/trace-2`` ...). Counted: ``events_read`` (every event of every trace), ``largest_trace`` (the most
    events one trace held: what the profiler's own memory follows), ``events_kept`` (the most events held
    at once by this reader: the merge's one per line plus what ``sink`` reports as its ``peak_held``; the
    whole trace where it was read whole or without a sink), ``traces``. ``trace`` is the file of the trace
    of the most calls that fits ``TRACE_LIMIT`` (``trace_calls``: how many)."""

    def __init__(self, keep: str | None = None, lines: Collection[str] | None = None,
                 sink: Callable[[Iterator[Event], int | None], object] | None = None,
                 budget: int | None = None):
        self.keep, self.folder, self.lines, self.sink = keep, keep, lines, sink
        self.budget = SESSION_EVENTS if budget is None else budget
        self.events: list[Event] = []
        self.results: list = []
        self.trace: bytes | None = None  # the XSpace file as the profiler wrote it (None over TRACE_LIMIT)
        self.trace_calls = 0
        self.wall_ns = 0
        self.events_read = self.events_kept = self.largest_trace = self.traces = 0
        self._t = 0
        self._dir = None
        self._calls: int | None = None  # the calls of the trace being taken (``batches``)
        self._last = 0  # the events of the last trace

    def batches(self, repeat: int) -> Iterator[int]:
        """How many calls to run in each entry of the block, ``repeat`` in all: one first, then as many as
        fit ``budget`` events at the events per call the traces so far measured (at least one)."""
        done, n = 0, 1
        while done < repeat:
            n = min(n, repeat - done)
            self._calls = n
            yield n  # the caller runs n calls inside ``with self:``; this resumes after the block
            done += n
            per_call = max(1, self._last // n)
            n = max(1, self.budget // per_call)
        self._calls = None

    def __enter__(self) -> "Capture":
        import jax
        from jax.profiler import ProfileOptions

        if not _LOCK.acquire(blocking=False):
            raise WorkbenchError("another profile is being taken in this process; wait for it to finish")
        if self.keep is None:
            self._dir = tempfile.mkdtemp(prefix="hlo-workbench-profile-")
        else:
            self._dir = self.keep if not self.traces else os.path.join(self.keep, f"trace-{self.traces + 1}")
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

        self.wall_ns += time.perf_counter_ns() - self._t
        try:
            jax.profiler.stop_trace()
            if exc[0] is None:
                found = sorted(glob.glob(os.path.join(self._dir, "**", "*.xplane.pb"), recursive=True),
                               key=os.path.getmtime)
                if not found:
                    raise WorkbenchError(f"JAX's profiler wrote no trace into {self._dir}")
                with open(found[-1], "rb") as f:
                    data = f.read()
                self._read(data)
                calls = self._calls or 1
                if len(data) <= TRACE_LIMIT and calls > self.trace_calls:  # what save(profile=True) stores
                    self.trace, self.trace_calls = data, calls
        finally:
            self._done()

    def _read(self, data: bytes) -> None:
        self.traces += 1
        if self.sink is None:
            self.events = read_events(data, self.lines)
            self._last = len(self.events)
            self.events_kept = max(self.events_kept, self._last)
        else:
            counted: dict = {}
            try:
                result = self.sink(stream_events(data, self.lines, counted=counted), self._calls)
            except Disordered:  # a line out of order: the whole trace, sorted, then
                counted = {}
                result = self.sink(stream_events(data, self.lines, counted=counted, whole=True), self._calls)
            kept = counted.get("lines", 0) + getattr(result, "peak_held", 0)
            self.results.append(result)
            self._last = counted.get("events", 0)
            self.events_kept = max(self.events_kept, kept)
        self.events_read += self._last
        self.largest_trace = max(self.largest_trace, self._last)

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
