"""Run time per HLO instruction, measured by JAX's profiler, joined to XLA's cost and to the user's lines.

Each call of a compiled program is one ``run_id``: the thunks (CPU) or kernels (GPU) it ran are events
named by their HLO instruction (``hlo_op``). ``CallReader`` reads a trace's events once, in start order,
and keeps per call only sums per instruction: what it holds is bounded by the module (its nesting, its
instructions), never by how many times a loop ran (``CallReader``'s docstring says what is exact). Per
call, an instruction's time is the wall time during which some thread worked for it: its events, less the
instruction events nested in them on the same thread (a ``while`` holds its body's thunks), and the
threadpool tasks it queued (a convolution's thunk queues its work on XLA's Eigen pool and returns). The
call's own time is the span from its first to its last event; ``covered`` is the wall time within that
span during which some thread worked for one of its instructions (thunks run concurrently on XLA's pools,
so the sum of times may exceed it); the rest of the span is the executor's dispatch between thunks and
threads waiting.

Where the backend's trace layout (``backends.TraceLayout``) names no statistic, as on a TPU, each call is
an event of the device's module line (``jit_f(<fingerprint>)``, with its ``run_id``), its span the call's
time, and the instructions are the events of its op lines that start inside it on the same device, each
named by its HLO text (``%fusion.2 = ... fusion(...)``: the instruction is ``fusion.2``), cut at the call's end.

An instruction's user lines are those of every instruction it holds (a fusion: its fused computation's)
read from the executable's HLO metadata. Where it holds ops of several lines, the line table splits its
time between them by the flops those lines cost in the last MLIR stage (else their bytes, else evenly),
and says which (``split``).
"""
from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ...backends import TraceLayout
from ...ir.attribution import is_library
from ...ir.hlo_locations import hlo_instruction_locations
from ..provenance import NO_LOCATION, users_frame
from .capture import POOL_RECORD, POOL_START, POOL_STOP, Event

_POOL = frozenset((POOL_RECORD, POOL_START, POOL_STOP))

__all__ = ["Call", "CallReader", "calls_of", "instruction_of", "instruction_rows", "instruction_origins",
           "module_of", "trace_lines"]


@dataclass
class Call:
    run_id: object
    start_ns: int
    end_ns: int
    covered_ns: int = 0
    self_ns: dict = field(default_factory=dict)  # instruction -> its time in this call (see CallReader)
    count: dict = field(default_factory=dict)  # instruction -> how many events it had

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns


class _Sums:
    """One call being read: its span, its instructions' sums, and the sweep's counts (how many lines work
    for the call, and for each instruction, at this instant)."""

    __slots__ = ("run_id", "start", "end", "count", "self_ns", "busy", "since", "op_busy", "op_since",
                 "covered", "late")

    def __init__(self, run_id, start: int, end: int):
        self.run_id, self.start, self.end = run_id, start, end
        self.count: dict = {}
        self.self_ns: dict = {}
        self.busy, self.since, self.covered = 0, 0, 0
        self.op_busy: dict = {}
        self.op_since: dict = {}
        self.late: list = []  # covered stretches ending past the span known when they ended (cut at the end)

    def begin(self, op, t: int) -> None:
        n = self.op_busy.get(op, 0)
        if n == 0:
            self.op_since[op] = t
        self.op_busy[op] = n + 1
        if self.busy == 0:
            self.since = t
        self.busy += 1

    def stop(self, op, t: int) -> None:
        n = self.op_busy[op] - 1
        self.op_busy[op] = n
        if n == 0:
            self.self_ns[op] = self.self_ns.get(op, 0) + t - self.op_since[op]
        self.busy -= 1
        if self.busy == 0:
            if t <= self.end:
                self.covered += t - self.since
            else:
                self.late.append((self.since, t))

    def call(self, start: int, end: int) -> Call:
        covered = self.covered + sum(max(0, min(b, end) - max(a, start)) for a, b in self.late)
        return Call(self.run_id, start, end, covered, self.self_ns, self.count)


class CallReader:
    """The calls of one trace, from its events given one at a time (``add``) in start order, longest first
    at a tie, any lines interleaved (``capture.stream_events`` or a sorted list); ``finish`` gives them.

    What it holds at once is bounded by the module and XLA's pools, never by how many events the calls ran:
    per line, the events and threadpool regions open at that instant (a stack as deep as the module's
    nesting) and a heap of their ends; per call, a sum and a count per instruction; the ids of tasks queued
    and not yet started. ``peak_held`` counts the most open events, regions and queued tasks held at once.

    At any instant a line (a thread, a stream) works for one instruction of one call, or for none: the
    innermost instruction event open on it; an event that is no instruction (XLA's executor) inside an
    instruction event works for that instruction, one on no instruction for none; a threadpool region
    (``ThreadpoolListener::StartRegion`` .. ``StopRegion``: a task of XLA's Eigen pool running) works for
    the instruction for which its task was queued (the ``ThreadpoolListener::Record`` whose ``_p`` is the
    region's ``_c``, made while its line worked for that instruction). That is how a convolution's thunk,
    which queues its work and returns, is charged for the work: the profiler's own links between the queue
    and the task, never a guess. A region queued by no instruction (the executor starting thunks) works for
    none; events inside it work for their own instructions.

    Exact, as measured: an instruction's time in a call (``Call.self_ns``) is the wall time during which at
    least one line worked for it, and the call's ``covered_ns`` the wall time within its span during which
    at least one line worked for any of its instructions (a sweep over the moments lines start and stop
    working for them); ``count`` the events of each instruction. Nothing is sampled or estimated."""

    def __init__(self, module: str | None, layout: TraceLayout | None = None):
        self.module = module
        self.device_layout = layout if layout is not None and layout.op_stat is None else None
        self.key = "hlo_op" if layout is None or layout.op_stat is None else layout.op_stat
        self.sums: dict = {}  # (on a device plane, run_id) -> _Sums
        self.spans: dict = {}  # run_id -> [start, end] of its events that are no instruction (the executor's wait)
        self.lines: dict = {}  # (plane, line) -> its open frames, innermost last: [end_ns (None: a region), owner, region?]
        self.ends: list = []  # a heap of (end_ns, n, line, frame): the open events' ends, met in time order
        self.queued: dict = {}  # a queued task's producer id -> the owner it was queued for
        self.modules: dict = {}  # TPU: plane -> ((its current module event's end, call key), module events so far)
        self.names: dict = {}  # TPU: an op event's HLO text -> its instruction
        self.held = self.peak_held = 0
        self.now = 0
        self._n = 0

    # -- a line's owner ((call key, instruction) or None) changes at an instant: the sums follow
    def _switch(self, old, new, t: int) -> None:
        if old != new:
            if old is not None:
                self.sums[old[0]].stop(old[1], t)
            if new is not None:
                self.sums[new[0]].begin(new[1], t)

    def _held(self, change: int) -> None:
        self.held += change
        self.peak_held = max(self.peak_held, self.held + len(self.queued))

    def _close_until(self, t) -> None:
        """Close every open event that ends at or before ``t``, in order of their ends."""
        ends = self.ends
        while ends and ends[0][0] <= t:
            end, _, key, frame = heapq.heappop(ends)
            self._remove(key, frame, end)

    def _remove(self, key, frame: list, t: int) -> None:
        frames = self.lines[key]
        before = frames[-1][1]
        for i in range(len(frames) - 1, -1, -1):
            if frames[i] is frame:
                del frames[i]
                break
        self._held(-1)
        self.now = max(self.now, t)
        self._switch(before, frames[-1][1] if frames else None, t)

    def _push(self, key, frame: list, t: int) -> None:
        frames = self.lines.get(key)
        if frames is None:
            frames = self.lines[key] = []
        before = frames[-1][1] if frames else None
        frames.append(frame)
        self._held(1)
        self._switch(before, frame[1], t)
        if frame[0] is not None:
            self._n += 1
            heapq.heappush(self.ends, (frame[0], self._n, key, frame))

    def add(self, e: Event) -> None:
        """One event (events in start order, longest first at a tie)."""
        self.take(e.start_ns, e.duration_ns, e.name, dict(e.stats), e.plane, (e.plane, e.line))

    def feed(self, events: Iterable[tuple]) -> "CallReader":
        """Every event of ``capture.stream_events`` (its tuples), in its order; returns the reader."""
        take = self.take
        for start, neg, _, _, name, stats, plane, line in events:
            take(start, -neg, name, stats, plane, (plane, line))
        return self

    def take(self, start: int, duration: int, name: str, stats: dict, plane: str, key) -> None:
        """One event: its start and duration in ns, name, statistics, plane, and ``key``: (plane, line)."""
        if self.ends and self.ends[0][0] <= start:
            self._close_until(start)
        if start > self.now:
            self.now = start
        if name in _POOL:
            self._pool(name, stats, start, key)
        elif self.device_layout is not None:
            self._device_event(start, start + duration, name, stats, plane, key)
        else:
            self._host_event(start, start + duration, stats, plane, key)

    def _host_event(self, start: int, end: int, stats: dict, plane: str, key) -> None:
        op = stats.get(self.key)
        run_id = stats.get("run_id")
        if op is None or (self.module is not None and stats.get("hlo_module", self.module) != self.module):
            if run_id is not None:
                span = self.spans.get(run_id)
                if span is None:
                    self.spans[run_id] = [start, end]
                elif end > span[1]:
                    span[1] = end
            if end > start:  # the executor's own work: for the instruction it is in, else for none
                frames = self.lines.get(key)
                below = frames[-1] if frames else None
                self._push(key, [end, below[1] if below is not None and not below[2] else None, False], start)
            return
        ck = (plane.startswith("/device:"), "all" if run_id is None else run_id)
        sums = self.sums.get(ck)
        if sums is None:
            sums = self.sums[ck] = _Sums(ck[1], start, end)
        elif end > sums.end:
            sums.end = end
        sums.count[op] = sums.count.get(op, 0) + 1
        self._push(key, [end, (ck, op), False], start)

    def _pool(self, name: str, stats: dict, start: int, key) -> None:
        frames = self.lines.get(key)
        if name == POOL_RECORD:  # a task queued: for whatever its line works for now
            owner = frames[-1][1] if frames else None
            produced = stats.get("_p")
            if owner is not None and produced is not None:
                self.queued[produced] = owner
                self._held(0)
        elif name == POOL_START:
            self._push(key, [None, self.queued.pop(stats.get("_c"), None), True], start)
        elif frames:  # POOL_STOP: the innermost region open on the line ends
            region = next((f for f in reversed(frames) if f[2]), None)
            if region is not None:
                self._remove(key, region, start)

    def _device_event(self, start: int, end: int, name: str, stats: dict, plane: str, key) -> None:
        """A TPU's: a module event on the layout's module line is a call (several planes, one ``run_id``: one
        call); an op event of its op lines that starts inside its plane's current module event is one of
        that call's instructions, cut at the module event's end. The ``Async XLA Ops`` line is not read: it
        holds each asynchronous copy's whole flight, during which the core runs other instructions (what the
        core itself spends on the copy are its ``copy-start`` and ``copy-done`` events of ``XLA Ops``)."""
        layout = self.device_layout
        line = key[1]
        if line == layout.module_line:
            if self.module is not None and module_of(name) != self.module:
                return
            seen = self.modules.get(plane, (None, 0))[1]
            run_id = stats.get("run_id", f"{plane} #{seen}")
            ck = (True, run_id)
            sums = self.sums.get(ck)
            if sums is None:
                self.sums[ck] = _Sums(run_id, start, end)
            else:
                sums.start, sums.end = min(sums.start, start), max(sums.end, end)
            self.modules[plane] = ((end, ck), seen + 1)
        elif line in layout.op_lines:
            current = self.modules.get(plane, (None, 0))[0]
            if current is None or start >= current[0]:
                return
            call_end, ck = current
            op = self.names.get(name)
            if op is None:
                op = self.names.setdefault(name, instruction_of(name))
            sums = self.sums[ck]
            sums.count[op] = sums.count.get(op, 0) + 1
            self._push(key, [min(end, call_end), (ck, op), False], start)

    def finish(self, calls: int = 1) -> list[Call]:
        """The calls read, in order of their start. Where no event carried a ``run_id`` (a trace of kernels
        may not), they made one call of all of them: its times are divided by ``calls`` (how many calls the
        trace holds), the mean of a call. Where a device's own events (a GPU's kernels) carry instructions,
        those are the times, not the host's annotations of the launches."""
        self._close_until(float("inf"))
        for key, frames in self.lines.items():  # regions still open when the trace stopped end there
            while frames:
                self._remove(key, frames[-1], self.now)
        chosen = {k: s for k, s in self.sums.items() if k[0]} or self.sums
        out = []
        for (_, run_id), s in chosen.items():
            start, end = s.start, s.end
            span = self.spans.get(run_id) if self.device_layout is None else None
            if span is not None:
                start, end = min(start, span[0]), max(end, span[1])
            call = s.call(start, end)
            if run_id == "all" and calls > 1:  # one span over every call: its times as one call's mean
                call.self_ns = {k: v / calls for k, v in call.self_ns.items()}
                call.count = {k: v / calls for k, v in call.count.items()}
                call.covered_ns, call.end_ns = call.covered_ns / calls, call.start_ns + call.wall_ns / calls
            out.append(call)
        out.sort(key=lambda c: c.start_ns)
        return out


def calls_of(events: Sequence[Event], module: str | None, repeat: int = 1,
             layout: TraceLayout | None = None) -> list[Call]:
    """One Call per ``run_id`` of the program ``module`` (its HLO module name; None: any), in order, from
    ``events`` (a list: sorted by start first, as ``read_events`` gives them) read by a ``CallReader``. ``layout``: where
    the trace keeps the instructions (None: a statistic ``hlo_op`` on each op event, as on CPU and GPU; a
    TPU's: its module and op lines). Events without a ``run_id`` make one call of all of them, its times
    divided by ``repeat``: the mean."""
    reader = CallReader(module, layout)
    for e in sorted(events, key=lambda e: (e.start_ns, -e.duration_ns)):
        reader.add(e)
    return reader.finish(repeat)


def trace_lines(layout: TraceLayout) -> frozenset[str] | None:
    """The only lines of a run's trace that ``calls_of`` reads with ``layout`` (``Capture(lines=...)``): its
    module and op lines where those hold the calls; None (every line) where a statistic names the op events,
    which sit on the executor's threads, whose names vary."""
    if layout.op_stat is not None or layout.module_line is None:
        return None
    return frozenset((*layout.op_lines, layout.module_line))


def instruction_of(name: str) -> str:
    """The instruction an op event named by its HLO text runs: ``fusion.2`` of ``%fusion.2 = (...) fusion(...)``
    (a name without `` = `` as it is)."""
    head, sep, _ = name.partition(" = ")
    return head.lstrip("%") if sep else name


def module_of(name: str) -> str:
    """The HLO module a module event runs: ``jit_small`` of ``jit_small(18107345416798615936)``."""
    return name[:name.rfind("(")] if name.endswith(")") and "(" in name else name


def instruction_origins(hlo_text: str) -> dict[str, list]:
    """The origins of each instruction a thunk can be named by -- an entry instruction, a fusion (all it
    holds), an instruction of a loop body or a called computation -- each once, in the text's order."""
    out: dict[str, dict] = {}
    for o in hlo_instruction_locations(hlo_text):
        for owner in dict.fromkeys(x for x in (o.result, o.fusion) if x):
            out.setdefault(owner, {}).update(dict.fromkeys(o.origins))
    return {owner: list(origins) for owner, origins in out.items()}


def instruction_lines(origins: dict[str, list], chains: dict | None = None) -> tuple[dict, dict]:
    """Per instruction (``origins``: ``instruction_origins``), the lines it holds as (file, line, function):
    the innermost frame of each origin (as ``source_map`` counts them: often a library's own line, such as
    flax's ``Linear.__call__``), and the innermost frame outside installed packages (the user's own code
    that called the library; the innermost frame where every frame is a library's). XLA's metadata keeps
    one frame an origin; ``chains`` ({Origin.key: frames} of an MLIR stage, whose locations keep the
    whole call chain) gives the rest."""
    chains = chains or {}
    inner: dict[str, list[tuple[str, int, str]]] = {}
    own: dict[str, list[tuple[str, int, str]]] = {}
    for owner, its in origins.items():
        firsts, mine = {}, {}
        for origin in its:
            f = users_frame(origin)
            if f is None:
                continue
            firsts[(f.file, f.line, f.function)] = None
            frames = chains.get(origin.key, origin.frames)
            i = frames.index(f) if f in frames else 0
            g = next((g for g in frames[i:] if not is_library(g.file)), f)
            mine[(g.file, g.line, g.function)] = None
        inner[owner], own[owner] = list(firsts), list(mine)
    return inner, own


def instruction_rows(calls: list[Call], hlo_text: str, origins: dict[str, list], peak=None,
                     chains: dict | None = None) -> list[dict]:
    """One row per instruction that ran: its times over the calls (median, 25th and 75th percentile, in
    µs), runs per call, share of the median call, XLA's cost (flops, bytes: the executable's own
    HloCostAnalysis), ``origins`` its ``instruction_origins``, the roofline time at ``peak`` (a DevicePeak; None: unknown device), its opcode and
    lines (``lines``: innermost frames; ``your_lines``: outside installed packages). Sorted by median time, largest first."""
    from ..cost.hlo import hlo_op_costs

    if not calls:
        return []
    costs = {}
    try:
        df = hlo_op_costs(hlo_text)
        for name, op, flops, nbytes in zip(df["name"], df["op"], df["flops"], df["bytes"]):
            costs.setdefault(name, (op, flops, nbytes))
    except Exception:  # noqa: BLE001 -- a module XLA's analysis cannot take: times without costs
        pass
    lines, own = instruction_lines(origins, chains)
    wall = statistics.median(c.wall_ns for c in calls)
    names = list(dict.fromkeys(op for c in calls for op in c.self_ns))
    rows = []
    for name in names:
        values = [c.self_ns.get(name, 0) / 1e3 for c in calls]
        quartiles = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
        op, flops, nbytes = costs.get(name, ("", None, None))
        flops = None if _missing(flops) else int(flops)  # XLA cannot cost a custom call: NA
        nbytes = None if _missing(nbytes) else int(nbytes)
        roofline = None
        if peak is not None and (flops or nbytes):
            rate = peak.flops_per_s.get("fp32")
            roofline = 1e6 * max((flops or 0) / rate if rate else 0.0, (nbytes or 0) / peak.bytes_per_s)
        where = lines.get(name, [])
        yours = own.get(name, [])
        rows.append({
            "instruction": name, "op": op, "median_us": statistics.median(values),
            "p25_us": quartiles[0], "p75_us": quartiles[2],
            "runs_per_call": statistics.median(c.count.get(name, 0) for c in calls),
            "share": statistics.median(values) * 1e3 / wall if wall else 0.0,
            "flops": flops, "bytes": nbytes, "roofline_us": roofline,
            "x_roofline": statistics.median(values) / roofline if roofline else None,  # measured / the bound
            "lines": ", ".join(f"{_short(f)}:{n}" for f, n, _ in where) or NO_LOCATION,
            "your_lines": ", ".join(f"{_short(f)}:{n}" for f, n, _ in yours) or NO_LOCATION,
            "_lines": where,
        })
    rows.sort(key=lambda r: -r["median_us"])
    return rows


def _missing(value) -> bool:
    import pandas as pd

    return value is None or bool(pd.isna(value))


def _short(path: str) -> str:
    import os

    return os.path.basename(path) if path else path


def split_by_line(rows: list[dict], weights: dict[tuple[str, int], tuple[float, float]]) -> dict:
    """Each row's median time over its lines: {(file, line): [µs, function, how]} with ``how`` the ways its
    instructions were attributed ("one line", "split by flops", "split by bytes", "split evenly").
    ``weights``: (flops, bytes) of each (file, line) in the last MLIR stage. Instructions with no line
    count under (NO_LOCATION, 0)."""
    out: dict = {}
    for r in rows:
        where = r["_lines"] or [(NO_LOCATION, 0, "")]
        keys = [(f, n) for f, n, _ in where]
        if len(keys) == 1:
            parts, how = [1.0], "one line"
        else:
            flops = [weights.get(k, (0, 0))[0] or 0 for k in keys]
            nbytes = [weights.get(k, (0, 0))[1] or 0 for k in keys]
            if sum(flops) > 0:
                parts, how = [x / sum(flops) for x in flops], "split by flops"
            elif sum(nbytes) > 0:
                parts, how = [x / sum(nbytes) for x in nbytes], "split by bytes"
            else:
                parts, how = [1 / len(keys)] * len(keys), "split evenly"
        for (f, n, fn), part in zip(where, parts):
            slot = out.setdefault((f, n), [0.0, fn, set()])
            slot[0] += r["median_us"] * part
            slot[2].add(how)
    return out
