"""Compile time per XLA pass, from the profiler's events of one compile, matched to the stages it made.

In a compile's trace (jax 0.10.2), the compile is one event (``Pjrt...Client::Compile`` on CPU,
``PJRT_Client_Compile`` on TPU: ``TraceLayout.compile_event``). Within its span, each run of an HLO pass
pipeline is an event named ``"<pipeline> (<module>)"`` (stat ``module``), and each pass it runs an event
named after the pass, on the same thread; a pass may hold pipelines of its own (``simplification`` runs
``simplification (jit_f)`` until nothing changes). The CPU runs every pipeline on the compile's thread;
the TPU hands them from thread to thread (``xla_tpu_thread/N`` and an unnamed one), one at a time, so the
pipelines of every thread are read, in the order they started. The backend's steps sit under
``...Compiler::RunBackend`` (CPU) or ``XLA::TPU run backend`` (``TraceLayout.backend_event``), the TPU's
on other threads too. A pass's time here is its self time (its event less the pipeline events inside it;
the events of its own steps, such as the TPU's ``XLA::JF Layout Assignment`` inside ``layout-assignment``,
are its time), so the rows add up without counting anything twice, and what no row holds (dumping each
module, XLA's invariant checks, the gaps between) is one row of its own.

XLA writes a dump after each pass that changed the module, named by its pipeline, the pass, and the pass
after it. Pipeline runs and dumps come in the same order, so each dump is matched to the pass event
of its pipeline run that has that name and is followed by that next pass: that pass ``changed`` the
module, and made the stage the dump became (if its text differed).
"""
from __future__ import annotations

from typing import Sequence

from ...backends import TraceLayout
from .capture import Event, Nesting

__all__ = ["xla_pass_rows"]

_SKIP = ("RunInvariantCheckers",)
_MARKS = ("pipeline-start", "pipeline-end")  # a pipeline's first and last dumps: no pass


def _norm(name: str) -> str:
    return name.replace(" ", "_")


def _is_pipeline(e: Event) -> bool:
    return e.stat("module") is not None and e.name.endswith(")")


def _pipeline_name(e: Event) -> str:
    """``simplification`` of the pipeline run event ``simplification (jit_f)``."""
    return e.name[:e.name.rfind(" (")]


def _dump_runs(runs: Sequence[tuple[str, str, str, str]]) -> tuple[dict, dict]:
    """Each pipeline's dumps, split into its runs at its "pipeline-start" dumps (runs of other pipelines may
    come between: a pass that runs a pipeline of its own): {pipeline: [[(pass, next pass, stage), ...], ...]}.
    Dumps named after a pass instead (its own steps, no "pipeline-start": ``copy-insertion``'s, the TPU's
    tiling rewriter's) are one group per unbroken series, and for each the pass whose run wrote them:
    {name: [pass, ...]}, the pass the next dump of another pipeline was written after (``copy-insertion``;
    ``layout-assignment``, which runs the tiling rewriter), None where no such dump follows."""
    groups: dict[str, list[list[tuple[str, str, str]]]] = {}
    owners: dict[str, list[str | None]] = {}
    started: set[str] = set()
    pending: list[tuple[str, int]] = []
    previous = None
    for pipeline, after, nxt, stage in runs:
        name = _norm(pipeline)
        its = groups.setdefault(name, [])
        if after == "pipeline-start":
            started.add(name)
        if after == "pipeline-start" or not its or (name not in started and name != previous):
            its.append([])
            if name not in started:
                owners.setdefault(name, []).append(None)
                pending.append((name, len(owners[name]) - 1))
        if pending and after and after not in _MARKS and all(n != name for n, _ in pending):
            for n, i in pending:
                owners[n][i] = _norm(after)
            pending = []
        if after not in _MARKS:
            its[-1].append((after, nxt, stage))
        previous = name
    return groups, owners


def _matched(passes: list[Event], dumps: list[tuple[str, str, str]]) -> dict[int, str]:
    """Which of one pipeline run's pass events wrote each of its dumps: {index: the stage it made, or ""}. A
    dump names its pass and the pass after it; the events are searched in order from the last match."""
    matched: dict[int, str] = {}
    at = 0
    for after, nxt, stage in dumps:
        for j in range(at, len(passes)):
            follows = _norm(passes[j + 1].name) if j + 1 < len(passes) else "pipeline-end"
            if _norm(passes[j].name) == after and (not nxt or follows == nxt or nxt == "pipeline-end"):
                matched[j], at = stage, j + 1
                break
    return matched


def _pass_ns(nest: Nesting, e: Event) -> int:
    """A pass's self time: its event less the pipelines it runs (their passes are rows of their own)."""
    return max(0, e.duration_ns - sum(k.duration_ns for k in nest.kids(e) if _is_pipeline(k)))


def _steps(body: Event, nest: Nesting, nests: dict[str, Nesting]) -> list[tuple[Event, Nesting]]:
    """The steps of ``body`` (an event of ``nest``): its children on its thread, and the outermost events
    of other threads in its span that start inside none of those (work it handed over); an event that
    starts inside a step taken is part of that step."""
    taken = [(k, nest) for k in nest.kids(body)]
    others = []
    for n in nests.values():
        if n is nest:
            continue
        end = None
        for e in n.events:
            if body.start_ns <= e.start_ns and e.end_ns <= body.end_ns and (end is None or e.start_ns >= end):
                others.append((e, n))
                end = e.end_ns
    for e, n in sorted(others, key=lambda x: (x[0].start_ns, -x[0].duration_ns)):
        if not any(k.start_ns <= e.start_ns < k.end_ns for k, _ in taken):
            taken.append((e, n))
    return sorted(taken, key=lambda x: x[0].start_ns)


def _backend_rows(nests: dict[str, Nesting], layout: TraceLayout) -> list[dict]:
    """The backend's steps (code generation): the ``_steps`` of the event named by ``layout.backend_event``
    (one level further in while it has a single step: RunBackend -> CompileCpuExecutable), pipelines left
    to the pass rows."""
    found = next(((e, n) for n in nests.values() for e in n.events if layout.backend_event in e.name), None)
    if found is None:
        return []
    steps = _steps(*found, nests)
    while len(steps) == 1 and not _is_pipeline(steps[0][0]):
        steps = _steps(*steps[0], nests)
    return [{"kind": "xla backend", "name": k.name, "pipeline": "", "seconds": k.duration_ns / 1e9,
             "changed": None, "stage": "", "_start": k.start_ns} for k, _ in steps if not _is_pipeline(k)]


def _nestings(events: Sequence[Event], top: Event) -> dict[str, Nesting]:
    """The events in ``top``'s span on its plane (XLA's invariant checks left out), nested per thread."""
    lines: dict[str, list[Event]] = {}
    for e in events:
        if (e.plane == top.plane and top.start_ns <= e.start_ns and e.end_ns <= top.end_ns
                and e.name not in _SKIP):
            lines.setdefault(e.line, []).append(e)
    return {line: Nesting(its) for line, its in lines.items()}


def xla_pass_rows(events: Sequence[Event], runs: Sequence[tuple[str, str, str, str]],
                  layout: TraceLayout | None = None) -> tuple[list[dict], float]:
    """Rows for one compile's trace: ``kind`` ("xla pass", "xla backend" or "xla other"), ``name``,
    ``pipeline``, ``seconds`` (self time), ``changed`` (True/False for a pass, None otherwise), ``stage``
    (the XLA stage it made, else ""; the last one where it made several), ``stages`` (all it made, comma
    separated); and the compile's wall seconds. ``runs``: XlaResult.runs of the same compile, in XLA's
    order; ``layout``: the backend's (None: the CPU's). Empty rows and 0.0 when the trace holds no compile."""
    layout = layout or TraceLayout()
    top = next((e for e in events if e.name.endswith(layout.compile_event)), None)
    if top is None:
        return [], 0.0
    nests = _nestings(events, top)
    pipelines = sorted(((e, n) for n in nests.values() for e in n.events if _is_pipeline(e)),
                       key=lambda x: x[0].start_ns)
    groups, owners = _dump_runs(runs)
    seen: dict[str, int] = {}
    rows: list[dict] = []
    for e, nest in pipelines:
        pipeline = _pipeline_name(e)
        passes = [k for k in nest.kids(e) if not _is_pipeline(k)]
        k = seen.get(_norm(pipeline), 0)  # this is the pipeline's k-th run: its k-th group of dumps
        seen[_norm(pipeline)] = k + 1
        its = groups.get(_norm(pipeline), [])
        matched = _matched(passes, its[k] if k < len(its) else [])
        rows += [{"kind": "xla pass", "name": p.name, "pipeline": pipeline, "seconds": _pass_ns(nest, p) / 1e9,
                  "changed": j in matched, "stage": matched.get(j, ""), "stages": [matched[j]] if matched.get(j) else [],
                  "_start": p.start_ns}
                 for j, p in enumerate(passes)]
    _own_steps(rows, groups, owners, {_norm(_pipeline_name(e)) for e, _ in pipelines})
    rows += _backend_rows(nests, layout)
    rows.sort(key=lambda r: r["_start"])
    for r in rows:
        del r["_start"]
    wall = top.duration_ns / 1e9
    rows.append({"kind": "xla other", "name": "dumps, invariant checks, pipeline bookkeeping", "pipeline": "",
                 "seconds": max(0.0, wall - sum(r["seconds"] for r in rows)), "changed": None, "stage": ""})
    for r in rows:
        r["stages"] = ", ".join(r.get("stages") or ())
    return rows, wall


def _own_steps(rows: list[dict], groups: dict, owners: dict, pipelines: set[str]) -> None:
    """Dumps named after a pass instead of a pipeline (``copy-insertion`` dumps each of its own steps): each
    group goes to the next changed run of the pass that wrote it (``_dump_runs``' owners), else the k-th
    group of a name to the k-th run of the pass of that name; that run made those stages (``stages``;
    ``stage`` stays the module its pipeline dumped after it, where there is one, else the last step's)."""
    runs_of: dict[str, list[dict]] = {}
    for r in rows:
        runs_of.setdefault(_norm(r["name"]), []).append(r)
    changed = {name: [r for r in its if r["changed"]] for name, its in runs_of.items()}
    given: dict[str, int] = {}
    for name, its in groups.items():
        if name in pipelines:
            continue
        for k, (dumps, owner) in enumerate(zip(its, owners.get(name, [None] * len(its)))):
            if owner is None:
                candidates, at = runs_of.get(name, []), k
            else:
                candidates, at = changed.get(owner, []), given.get(owner, 0)
                given[owner] = at + 1
            if at >= len(candidates):
                continue
            row = candidates[at]
            made = [stage for _, _, stage in dumps if stage]
            if dumps:
                row["changed"] = True
            if made:  # its own steps come before the module its pipeline dumped after it
                row["stages"] = made + row["stages"]
                row["stage"] = row["stage"] or made[-1]
