"""Run time per HLO instruction, measured by JAX's profiler, joined to XLA's cost and to the user's lines.

Each call of a compiled program is one ``run_id``: the thunks (CPU) or kernels (GPU) it ran are events
named by their HLO instruction (``hlo_op``). Per call, an instruction's time is its events' self time
(an event's duration less that of the instruction events nested in it on the same thread: a ``while``
holds its body's thunks), summed over its runs within the call (a loop body runs many times). The call's
own time is the span from its first to its last event; ``covered`` is the union of its instruction
intervals over that span (thunks run concurrently on XLA's pools, so the sum of times may exceed it).

Where the backend's trace layout (``backends.TraceLayout``) names no statistic, as on a TPU, each call is
an event of the device's module line (``jit_f(<fingerprint>)``, with its ``run_id``), its span the call's
time, and the instructions are the events of its op lines that start inside it on the same device, each
named by its HLO text (``%fusion.2 = ... fusion(...)``: the instruction is ``fusion.2``); ``device_calls``.

An instruction's user lines are those of every instruction it holds (a fusion: its fused computation's)
read from the executable's HLO metadata. Where it holds ops of several lines, the line table splits its
time between them by the flops those lines cost in the last MLIR stage (else their bytes, else evenly),
and says which (``split``).
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass, field
from typing import Sequence

from ...backends import TraceLayout
from ...ir.hlo_locations import hlo_instruction_locations
from ..provenance import NO_LOCATION, users_frame
from .capture import Event, Nesting

__all__ = ["Call", "calls_of", "device_calls", "instruction_of", "instruction_rows", "instruction_origins",
           "module_of", "trace_lines"]


@dataclass
class Call:
    run_id: object
    start_ns: int
    end_ns: int
    covered_ns: int = 0
    self_ns: dict = field(default_factory=dict)  # instruction -> summed self time in this call
    count: dict = field(default_factory=dict)  # instruction -> how many events it had

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns


def _union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    start = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + (end - start if end is not None else 0)


def calls_of(events: Sequence[Event], module: str | None, repeat: int = 1,
             layout: TraceLayout | None = None) -> list[Call]:
    """One Call per ``run_id`` of the program ``module`` (its HLO module name; None: any), in order.
    ``layout``: where the trace keeps the instructions (None: a statistic ``hlo_op`` on each op event, as
    on CPU and GPU); a layout without such a statistic is read by ``device_calls``.
    Where a device's own events (a GPU's kernels, on ``/device:...`` planes) carry instructions, those
    are the times, not the host's annotations of the launches. Events without a ``run_id`` (a trace of
    kernels may not carry it) make one call of all of them, its times divided by ``repeat``: the mean."""
    if layout is not None and layout.op_stat is None:
        return device_calls(events, module, layout)
    key = layout.op_stat if layout is not None else "hlo_op"
    mine = [e for e in events if e.stat(key) is not None
            and (module is None or e.stat("hlo_module") in (None, module))]
    if any(e.plane.startswith("/device:") for e in mine):
        mine = [e for e in mine if e.plane.startswith("/device:")]
    ids = {id(e) for e in mine}
    by_run: dict = {}
    for e in mine:
        by_run.setdefault(e.stat("run_id", "all"), []).append(e)
    others: dict = {}  # the run's other events (the executor's wait): they bound its span too
    for e in events:
        run_id = e.stat("run_id")
        if run_id is not None and run_id in by_run and id(e) not in ids:
            others.setdefault(run_id, []).append(e)
    out = []
    for run_id, evs in by_run.items():
        spans = others.get(run_id, [])
        call = Call(run_id, min(e.start_ns for e in evs + spans), max(e.end_ns for e in evs + spans))
        call.covered_ns = _union([(e.start_ns, e.end_ns) for e in evs])
        _add_self_times(call, evs, lambda e: e.stat(key))
        if run_id == "all" and repeat > 1:  # one span over every call: its times as one call's mean
            call.self_ns = {k: v / repeat for k, v in call.self_ns.items()}
            call.count = {k: v / repeat for k, v in call.count.items()}
            call.covered_ns, call.end_ns = call.covered_ns / repeat, call.start_ns + call.wall_ns / repeat
        out.append(call)
    out.sort(key=lambda c: c.start_ns)
    return out


def _add_self_times(call: Call, events: list[Event], name_of) -> None:
    """Add ``events`` (one call's instruction events) to ``call``'s self times and counts: nested
    instruction events on one thread or stream, each named by ``name_of(event)``."""
    by_line: dict = {}
    for e in events:
        by_line.setdefault((e.plane, e.line), []).append(e)
    for line_events in by_line.values():
        line_events.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        nest = Nesting(line_events)
        for e in line_events:
            op = name_of(e)
            call.self_ns[op] = call.self_ns.get(op, 0) + nest.self_ns(e)
            call.count[op] = call.count.get(op, 0) + 1


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


def device_calls(events: Sequence[Event], module: str | None, layout: TraceLayout) -> list[Call]:
    """One Call per event of ``layout.module_line`` running ``module`` (None: any), in order: its ``run_id``,
    its span the call's time; its instructions the events of ``layout.op_lines`` that start inside it on the
    same device plane (one run_id on several planes: one call over all of them). ``covered_ns``: the union of
    those events, each cut at the call's end.

    Only the op lines count: the TPU's ``Async XLA Ops`` line holds each asynchronous copy's whole flight,
    from its ``copy-start`` to its ``copy-done``, named after the start. The core runs other instructions
    meanwhile; what the core itself spends on the copy (issuing it, waiting for it) is the ``copy-start``
    and ``copy-done`` events of ``XLA Ops``. Counting the flight too would count the time of the instructions
    that run beside it twice, the second time under the copy's name."""
    modules: dict[str, list[Event]] = {}
    ops: dict[str, list[Event]] = {}
    for e in events:
        if e.line == layout.module_line and (module is None or module_of(e.name) == module):
            modules.setdefault(e.plane, []).append(e)
        elif e.line in layout.op_lines:
            ops.setdefault(e.plane, []).append(e)
    calls: dict = {}
    spans: dict = {}
    names: dict[str, str] = {}  # each HLO text's instruction, read once

    def name_of(o: Event) -> str:
        found = names.get(o.name)
        return found if found is not None else names.setdefault(o.name, instruction_of(o.name))

    for plane, runs in modules.items():
        runs.sort(key=lambda m: m.start_ns)
        starts = [m.start_ns for m in runs]
        inside: dict[int, list[Event]] = {}
        for o in ops.get(plane, ()):
            i = bisect.bisect_right(starts, o.start_ns) - 1
            if i >= 0 and o.start_ns < runs[i].end_ns:
                inside.setdefault(i, []).append(o)
        for i, m in enumerate(runs):
            run_id = m.stat("run_id", f"{plane} #{i}")
            call = calls.setdefault(run_id, Call(run_id, m.start_ns, m.end_ns))
            call.start_ns, call.end_ns = min(call.start_ns, m.start_ns), max(call.end_ns, m.end_ns)
            its = inside.get(i, [])
            spans.setdefault(run_id, []).extend((o.start_ns, min(o.end_ns, m.end_ns)) for o in its)
            _add_self_times(call, its, name_of)
    for run_id, call in calls.items():
        call.covered_ns = _union(spans[run_id])
    return sorted(calls.values(), key=lambda c: c.start_ns)


def _installed(path: str) -> bool:
    return "/site-packages/" in path or "/dist-packages/" in path


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
            g = next((g for g in frames[i:] if not _installed(g.file)), f)
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
