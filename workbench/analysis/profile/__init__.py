"""Where the time goes: run time per HLO instruction and compile time per pass, measured.

``profile_stage`` runs a stage under JAX's profiler and tabulates each instruction's measured time
beside XLA's cost, its roofline time and the user's lines (``runtime.py``); ``compile_profile`` puts
every MLIR stage's own clock and every XLA pass of a profiled compile in one table (``compile.py``).
Every time here is measured: by the profiler, or by the workbench's own clocks around each MLIR pass.
"""
from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field

from ...errors import WorkbenchError
from .capture import TRACE_LIMIT, Capture, Event
from .compile import xla_pass_rows
from .runtime import CallReader, instruction_origins, instruction_rows, split_by_line, trace_lines

__all__ = ["Profile", "CompileProfile", "profile_stage", "compile_profile", "measured_by_line", "Capture", "Event",
           "RUN_SUMMARY", "COMPILE_SUMMARY"]

# the columns the CLI and the report show of each table
RUN_SUMMARY = ("instruction", "op", "median_us", "share", "flops", "bytes", "roofline_us", "your_lines", "mlir_ops")
COMPILE_SUMMARY = ("kind", "name", "pipeline", "stage", "seconds", "share", "changed")


def _module_name(hlo_text: str) -> str | None:
    first = hlo_text.lstrip().split("\n", 1)[0]
    return first.split()[1].rstrip(",") if first.startswith("HloModule ") and len(first.split()) > 1 else None


@dataclass
class Profile:
    """Measured run time per HLO instruction of one stage's executable (``ex.profile()``).

    ``table``: one row per instruction that ran, largest first: ``instruction, op, median_us, p25_us,
    p75_us, runs_per_call, share, flops, bytes, roofline_us, x_roofline`` (measured over roofline: where
    the model misjudges), ``lines`` (the innermost frames, often a library's), ``your_lines`` (the
    innermost outside installed packages), ``mlir_ops`` (its counterparts in the stage). Every time in the
    table is measured under JAX's profiler, which slows what it traces (each thunk it records costs about a
    microsecond): ``call_us`` is the median call's time under it (first to last event of its ``run_id``; on
    a TPU, the call's module event), and each ``share`` is of that traced call, so the shares and the call
    agree. The program's own time is ``untraced_call_us``: the median of as many calls timed without the
    profiler just before the traced ones, as ``run()`` times them; ``overhead`` is the traced calls' median
    wall time over the untraced ones', the profiler's measured cost (None where not measured: a profile
    saved before it was). ``coverage`` is the median share of a traced call during which some thread
    worked for one of its instructions (their events, and the tasks they queued on XLA's pool: see
    ``runtime.CallReader``); the rest is the executor dispatching between thunks and threads waiting.
    ``calls`` how many calls were profiled; ``hlo`` the executable's optimized HLO; ``folder`` the
    profiler's files where kept (``keep=``).

    The medians over calls are exact: each call's time per instruction is a sum, kept per instruction and
    call, never per event. ``events_read``: the events the profiler recorded; ``events_kept``: the most
    held at once while reading them (bounded by the module: its nesting, the pool's queue, one per thread);
    ``largest_trace``: the most events one of the traces the calls were split over held (the profiler's own
    memory follows it: at most ``capture.SESSION_EVENTS`` or one call's events, whichever is more)."""
    stage: str
    device: str
    table: object
    call_us: float
    coverage: float
    calls: int
    hlo: str = field(repr=False)
    peak: str | None = None
    folder: str | None = None
    timing: object = None
    trace: bytes | None = field(default=None, repr=False)  # the profiler's XSpace file (save(profile=True) keeps it)
    untraced_call_us: float | None = None
    overhead: float | None = None
    events_read: int = 0
    events_kept: int = 0
    largest_trace: int = 0

    def write_trace(self, folder: str) -> str:
        """The profiler's trace of the calls, written for TensorBoard or XProf (``tensorboard --logdir
        folder``); returns the file's path. WorkbenchError when it was not kept (over TRACE_LIMIT)."""
        return _write_trace(self.trace, folder, "run")

    @property
    def device_clock(self) -> bool:
        """Whether ``call_us`` is the device's own time for a call (a TPU's module event, which the profiler
        does not slow), not a host's wall time under the profiler (the CPU's thunks)."""
        from ...backends import backend_of

        return backend_of(self.device).trace.module_line is not None

    def call_said(self) -> str:
        """The call's time in words: the program's own (untraced) and the traced one the table's shares are of."""
        if self.device_clock:
            said = f"median call {_us(self.call_us)} on the device (its own clock, which the profiler does not slow)"
            if self.untraced_call_us is None:
                return said
            said += (f"; {_us(self.untraced_call_us)} wall time untraced, as run() times it (the host's dispatch "
                     "and its wait for the device included)")
            if self.overhead is not None:
                said += f"; traced calls took {self.overhead:.2f}x the untraced wall time"
            return said
        traced = f"median call {_us(self.call_us)} under the profiler"
        if self.untraced_call_us is None:
            return traced + " (its untraced time was not measured)"
        said = f"{traced}, {_us(self.untraced_call_us)} untraced"
        if self.overhead is not None and self.overhead >= 1.1:
            said += f" (the profiler's measured overhead: traced calls take {self.overhead:.1f}x the untraced wall time)"
        elif self.overhead is not None:
            said += (f" (traced calls took {self.overhead:.2f}x the untraced wall time: the profiler's overhead is "
                     "within this machine's noise)")
        return said

    def _repr_html_(self) -> str:
        head = (f"<p><b>{html.escape(self.stage)}</b> on {html.escape(self.device)}: {self.calls} calls profiled, "
                f"{html.escape(self.call_said())}; the instructions' times and shares are "
                f"{'the device' + chr(39) + 's' if self.device_clock else 'under the profiler'}, and they cover "
                f"{100 * self.coverage:.1f}% of the traced call"
                f"{'' if self.peak else ' (no peak known for this device: no roofline)'}</p>")
        shown = self.table.drop(columns=[c for c in ("p25_us", "p75_us") if c in self.table.columns]).head(40)
        return head + shown.to_html(index=False, float_format=lambda v: f"{v:.3g}")

    def __repr__(self) -> str:
        return (f"Profile({self.stage!r} on {self.device}: {self.calls} calls, {self.call_said()}; "
                f"{len(self.table)} instructions covering {100 * self.coverage:.1f}% of the traced call)")


def _us(value: float) -> str:
    return f"{value / 1e3:.2f} ms" if value >= 1e3 else f"{value:.1f} µs"


def _write_trace(data: bytes | None, folder: str, name: str) -> str:
    from .capture import write_trace

    if data is None:
        raise WorkbenchError(f"this profile's trace was not kept (over {TRACE_LIMIT // 2**20} MiB): take it again "
                             "with keep=FOLDER to have the profiler write it there")
    return write_trace(data, folder, name)


def profile_stage(ex, stage, device: str, repeat: int, args=None, keep: str | None = None) -> Profile:
    """Run ``stage`` of ``ex`` ``repeat`` times as ``run`` does (after a warm-up), then ``repeat`` times
    under JAX's profiler, and tabulate its instructions' measured times (see ``Profile``). The traced calls
    are split over traces of at most ``capture.SESSION_EVENTS`` events (one call at least), each read as a
    stream into a ``runtime.CallReader``: no event is kept."""
    import pandas as pd

    from ...backends import backend_of
    from ...pipeline.trace import resolve_device
    from ..cost.peaks import peak_of
    from ..run.execute import run_stage

    dev = resolve_device(device)
    layout = backend_of(dev).trace
    seen: dict = {}

    def sink(events, calls):
        reader = CallReader(_module_name(seen.get("hlo", "")), layout).feed(events)
        reader.calls = reader.finish(calls or max(1, repeat))
        return reader

    capture = Capture(keep, lines=trace_lines(layout), sink=sink)
    _, timing = run_stage(ex, stage, device, max(1, repeat), args, around=capture, seen=seen)
    hlo = seen.get("hlo", "")
    calls = [c for reader in capture.results for c in reader.calls]
    if not calls:
        raise WorkbenchError(f"JAX's profiler recorded no instruction of {stage.name!r} on {device}: "
                             f"this backend's trace carries no {_op_events(layout)}")
    peak = peak_of(dev)
    ops = _stage_ops(stage)
    chains = {g.key: g.frames for o in ops for g in o.origins if len(g.frames) > 1}
    origins = instruction_origins(hlo)
    rows = instruction_rows(calls, hlo, origins, peak, chains)
    _add_mlir_ops(ops, origins, rows)
    table = pd.DataFrame([{k: v for k, v in r.items() if k != "_lines"} for r in rows])
    table.attrs["lines"] = {r["instruction"]: r["_lines"] for r in rows}
    return Profile(stage.name, device, table, statistics.median(c.wall_ns for c in calls) / 1e3,
                   statistics.median(c.covered_ns / c.wall_ns for c in calls if c.wall_ns), len(calls), hlo,
                   peak.device if peak is not None else None, keep, timing, capture.trace,
                   untraced_call_us=timing.median * 1e6, overhead=timing.overhead,
                   events_read=capture.events_read, events_kept=capture.events_kept,
                   largest_trace=capture.largest_trace)


def _op_events(layout) -> str:
    """What ``CallReader`` looks for in a trace with ``layout`` (a backends.TraceLayout), in words."""
    if layout.op_stat is not None:
        return f"{layout.op_stat} events"
    return (f"events on its {' or '.join(repr(n) for n in layout.op_lines)} line inside a call on its "
            f"{layout.module_line!r} line")


def _stage_ops(stage) -> tuple:
    """The ops of an MLIR stage with their origins (none for other stages, or one without locations)."""
    from ..provenance import stage_ops

    if stage.group != "mlir" and stage.name not in ("stablehlo", "input"):
        return ()
    try:
        return stage_ops(stage)
    except WorkbenchError:
        return ()


def _add_mlir_ops(ops, origins: dict[str, list], rows: list[dict]) -> None:
    """Each row's counterparts among ``ops`` (the profiled MLIR stage's: the ops with a source position in
    common with the instruction; ``origins``: each instruction's), one pass over each side's locations."""
    by_key: dict = {}
    for o in ops:
        if o.op in ("func.func", "func.return", "stablehlo.return"):
            continue
        for g in o.origins:
            by_key.setdefault(g.key, []).append(f"{o.result} {o.op}" if o.result else o.op)
    owner_keys = {owner: dict.fromkeys(g.key for g in its) for owner, its in origins.items()}
    for r in rows:  # at most 6 named (and a count of the rest): a row's work is bounded by what it holds
        found: dict = {}
        more = 0
        for k in owner_keys.get(r["instruction"], ()):
            for x in by_key.get(k, ()):
                if x not in found:
                    if len(found) < 6:
                        found[x] = None
                    else:
                        more += 1
        r["mlir_ops"] = ", ".join(found) + (f" (+{more})" if more else "")


def measured_by_line(profile: Profile, weights: dict):
    """The profile's time per user line: a DataFrame ``file, line, function, measured_us, measured_share,
    measured_how``; an instruction over several lines is split by ``weights`` ({(file, line): (flops,
    bytes)} of the last MLIR stage), and ``measured_how`` says how each line's time was attributed."""
    import pandas as pd

    rows = [{"_lines": profile.table.attrs["lines"].get(name, []), "median_us": us}
            for name, us in zip(profile.table["instruction"], profile.table["median_us"])]
    split = split_by_line(rows, weights)
    total = profile.call_us or 1.0
    out = [{"file": f, "line": n, "function": fn, "measured_us": us, "measured_share": us / total,
            "measured_how": ", ".join(sorted(hows))} for (f, n), (us, fn, hows) in split.items()]
    df = pd.DataFrame(out, columns=["file", "line", "function", "measured_us", "measured_share", "measured_how"])
    return df.sort_values("measured_us", ascending=False, kind="stable").reset_index(drop=True)


@dataclass
class CompileProfile:
    """Compile time per step, both pipelines in one table (``ex.compile_profile()``).

    ``table``: one row per step in order (``kind, name, pipeline, stage, seconds, share, changed``):
    ``trace`` and ``lowering`` (the workbench's clocks around JAX's), one ``mlir pass`` row per MLIR
    stage (its clock in the pass worker; ``cached``: made earlier, its first run's seconds), one ``xla
    pass`` row per HLO pass event of a compile of the last MLIR stage taken again under JAX's profiler
    (self time; ``stage`` the XLA stage it made, ``stages`` all of them where a pass dumps its own
    steps), ``xla backend`` rows (code generation), and one ``xla other`` row (dumps, XLA's invariant
    checks). ``total_s`` sums the rows; ``explore_s`` is what the
    exploration's own clocks measured for the same work (its trace, lowering, MLIR passes and XLA compile)."""
    table: object
    total_s: float
    explore_s: float
    xla_wall_s: float
    folder: str | None = None
    patterns: object = None  # with compile_profile(patterns=True): seconds per pattern group of each pattern stage
    trace: bytes | None = field(default=None, repr=False)  # the profiler's XSpace file of the XLA compile

    def write_trace(self, folder: str) -> str:
        """The profiler's trace of the XLA compile, written for TensorBoard or XProf; returns its path."""
        return _write_trace(self.trace, folder, "compile")

    def _repr_html_(self) -> str:
        head = (f"<p>compile profile: {self.total_s:.3f} s in {len(self.table)} steps "
                f"(the exploration measured {self.explore_s:.3f} s for the same work)</p>")
        return head + self.table.to_html(index=False, float_format=lambda v: f"{v:.4g}")

    def __repr__(self) -> str:
        kinds = self.table.groupby("kind", sort=False)["seconds"].sum()
        return ("CompileProfile(" + ", ".join(f"{k} {v:.3f} s" for k, v in kinds.items())
                + f"; total {self.total_s:.3f} s)")


def compile_profile(ex, keep: str | None = None) -> CompileProfile:
    """See ``CompileProfile``. The XLA compile is done again (with the exploration's options and dumps)
    inside a profiler trace; nothing else is recompiled or rerun."""
    import pandas as pd

    from ...backends import backend_of
    from ...pipeline.build import xla_compile_again
    from ...pipeline.trace import resolve_device

    rows: list[dict] = []
    traced = ex.spec.traced
    if traced is not None:
        rows.append({"kind": "trace", "name": "jaxpr", "pipeline": "", "stage": "jaxpr",
                     "seconds": traced.seconds_jaxpr, "changed": None})
        rows.append({"kind": "lowering", "name": "StableHLO", "pipeline": "", "stage": "stablehlo",
                     "seconds": traced.seconds_lower, "changed": None})
    mlir = [s for s in ex.pipeline_stages if s.group == "mlir"]
    for s in mlir:
        rows.append({"kind": "mlir pass", "name": s.name.split("#")[0], "pipeline": "", "stage": s.name,
                     "seconds": s.seconds or 0.0, "changed": bool(s.changed), "cached": bool(s.cached)})
    explore_s = sum(r["seconds"] for r in rows)
    xla_wall, trace = 0.0, None
    last = next((s for s in reversed(ex.pipeline_stages) if s.is_module), None)
    if last is not None and not ex.pipeline_error:
        capture = Capture(keep)
        result = xla_compile_again(ex.spec, last, capture)
        layout = backend_of(resolve_device(ex.spec.device)).trace
        xrows, xla_wall = xla_pass_rows(capture.events, result.runs, layout)
        trace = capture.trace
        rows += xrows
        opt = next((s for s in ex.stages if s.name == "xla:optimized"), None)
        explore_s += (opt.seconds or 0.0) if opt is not None else 0.0
    for r in rows:
        r.setdefault("stages", r["stage"])
    df = pd.DataFrame(rows, columns=["kind", "name", "pipeline", "stage", "seconds", "changed", "cached", "stages"])
    total = float(df["seconds"].sum())
    df["share"] = df["seconds"] / total if total else 0.0
    df["cached"] = df["cached"].eq(True)  # rows without the mark (XLA's passes) were not cached
    return CompileProfile(df, total, explore_s, xla_wall, keep, trace=trace)
