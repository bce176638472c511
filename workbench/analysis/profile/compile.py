"""Compile time per XLA pass, from the profiler's events of one compile, matched to the stages it made.

In a compile's trace (jax 0.10.2), the compile is one ``Pjrt...Client::Compile`` event on a thread of the
compiler's pool. Inside it, each run of an HLO pass pipeline is an event named ``"<pipeline> (<module>)"``
(stat ``module``), and each pass it runs an event named after the pass; a pass may hold pipelines of
its own (``simplification`` runs ``simplification (jit_f)`` until nothing changes). The backend's steps
sit under ``...Compiler::RunBackend``. A pass's time here is its self time (its event less the pass and
pipeline events inside it), so the rows add up without counting anything twice, and what no row holds
(dumping each module, XLA's invariant checks, the gaps between) is one row of its own.

XLA writes a dump after each pass that changed the module, named by its pipeline, the pass, and the pass
after it. Pipeline runs and dumps come in the same order, so each dump is matched to the pass event
of its pipeline run that has that name and is followed by that next pass: that pass ``changed`` the
module, and made the stage the dump became (if its text differed).
"""
from __future__ import annotations

from typing import Sequence

from .capture import Event, Nesting

__all__ = ["xla_pass_rows"]

_SKIP = ("RunInvariantCheckers",)


def _norm(name: str) -> str:
    return name.replace(" ", "_")


def _is_pipeline(e: Event) -> bool:
    return e.stat("module") is not None and e.name.endswith(")")


def _pipeline_name(e: Event) -> str:
    """``simplification`` of the pipeline run event ``simplification (jit_f)``."""
    return e.name[:e.name.rfind(" (")]


def _dump_runs(runs: Sequence[tuple[str, str, str, str]]) -> dict[str, list[list[tuple[str, str, str]]]]:
    """Each pipeline's dumps, split into its runs at its "pipeline-start" dumps (runs of other pipelines may
    come between: a pass that runs a pipeline of its own): {pipeline: [[(pass, next pass, stage), ...], ...]}."""
    groups: dict[str, list[list[tuple[str, str, str]]]] = {}
    for pipeline, after, nxt, stage in runs:
        its = groups.setdefault(_norm(pipeline), [])
        if after == "pipeline-start" or not its:
            its.append([])
        if after not in ("pipeline-start", "pipeline-end"):
            its[-1].append((after, nxt, stage))
    return groups


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


def _backend_rows(nest: Nesting) -> list[dict]:
    """The backend's steps (code generation): the children of ``...Compiler::RunBackend`` (one level further
    in while it has a single child), pipelines left to the pass rows."""
    for e in nest.events:
        if "RunBackend" in e.name:
            body = e
            while len(nest.kids(body)) == 1 and not _is_pipeline(nest.kids(body)[0]):
                body = nest.kids(body)[0]  # RunBackend -> CompileCpuExecutable: the steps are one level in
            return [{"kind": "xla backend", "name": k.name, "pipeline": "", "seconds": k.duration_ns / 1e9,
                     "changed": None, "stage": "", "_start": k.start_ns} for k in nest.kids(body) if not _is_pipeline(k)]
    return []


def xla_pass_rows(events: Sequence[Event], runs: Sequence[tuple[str, str, str, str]]) -> tuple[list[dict], float]:
    """Rows for one compile's trace: ``kind`` ("xla pass", "xla backend" or "xla other"), ``name``,
    ``pipeline``, ``seconds`` (self time), ``changed`` (True/False for a pass, None otherwise), ``stage``
    (the XLA stage it made, else ""; the last one where it made several), ``stages`` (all it made, comma
    separated); and the compile's wall seconds. ``runs``: XlaResult.runs of the same
    compile, in XLA's order. Empty rows and 0.0 when the trace holds no compile."""
    top = next((e for e in events if e.name.endswith("Client::Compile")), None)
    if top is None:
        return [], 0.0
    nest = Nesting([e for e in events if e.line == top.line and e.plane == top.plane
                     and top.start_ns <= e.start_ns and e.end_ns <= top.end_ns and e.name not in _SKIP])
    groups = _dump_runs(runs)
    seen: dict[str, int] = {}
    rows: list[dict] = []
    for e in nest.events:
        if not _is_pipeline(e):
            continue
        pipeline = _pipeline_name(e)
        passes = [k for k in nest.kids(e) if not _is_pipeline(k)]
        k = seen.get(_norm(pipeline), 0)  # this is the pipeline's k-th run: its k-th group of dumps
        seen[_norm(pipeline)] = k + 1
        its = groups.get(_norm(pipeline), [])
        matched = _matched(passes, its[k] if k < len(its) else [])
        rows += [{"kind": "xla pass", "name": p.name, "pipeline": pipeline, "seconds": nest.self_ns(p) / 1e9,
                  "changed": j in matched, "stage": matched.get(j, ""), "stages": [matched[j]] if matched.get(j) else [],
                  "_start": p.start_ns}
                 for j, p in enumerate(passes)]
    _own_steps(rows, groups, {_norm(_pipeline_name(e)) for e in nest.events if _is_pipeline(e)})
    rows += _backend_rows(nest)
    rows.sort(key=lambda r: r["_start"])
    for r in rows:
        del r["_start"]
    wall = top.duration_ns / 1e9
    rows.append({"kind": "xla other", "name": "dumps, invariant checks, pipeline bookkeeping", "pipeline": "",
                 "seconds": max(0.0, wall - sum(r["seconds"] for r in rows)), "changed": None, "stage": ""})
    for r in rows:
        r["stages"] = ", ".join(r.get("stages") or ())
    return rows, wall


def _own_steps(rows: list[dict], groups: dict, pipelines: set[str]) -> None:
    """Dumps named after a pass instead of a pipeline (``copy-insertion`` dumps each of its own steps):
    the k-th such group goes to the k-th run of that pass, which made those stages (``stages``; ``stage``
    stays the module its pipeline dumped after it, where there is one, else the last step's)."""
    runs_of: dict[str, list[dict]] = {}
    for r in rows:
        runs_of.setdefault(_norm(r["name"]), []).append(r)
    for name, its in groups.items():
        if name in pipelines:
            continue
        for row, dumps in zip(runs_of.get(name, []), its):
            made = [stage for _, _, stage in dumps if stage]
            if dumps:
                row["changed"] = True
            if made:  # its own steps come before the module its pipeline dumped after it
                row["stages"] = made + row["stages"]
                row["stage"] = row["stage"] or made[-1]
