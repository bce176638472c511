"""Which patterns apply to a stage, one pattern at a time, and how long each group takes.

The mechanism is the plainest one that is exact: apply a pattern alone to a copy of the stage's
module (in the worker pool) and compare the result with the input.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import StageError, WorkbenchError
from ..pipeline.build import failed_stage, stage_from_run, stage_name
from ..pipeline.catalog import Pattern, catalog, pattern_list, pattern_name, patterns_pass
from ..pipeline.runner import default_runner
from ..pipeline.worker import ItemFailure, PoolResult, default_pool
from ..stages import Stage
from .progress import OnProgress, Progress

if TYPE_CHECKING:  # the facade hands itself down; analysis never imports it
    from ..exploration import Exploration

__all__ = ["ScanRow", "StepRun", "scan_patterns", "step_patterns", "pattern_timing"]


@dataclass(frozen=True)
class ScanRow:
    name: str
    group: str
    changed: bool
    seconds: float
    error: str | None


def _module_stage(ex: Exploration, stage) -> Stage:
    st = ex.stage(stage)
    if not st.is_module:
        raise WorkbenchError(f"stage {st.name!r} is not an MLIR module the patterns can run on; pick "
                             "'stablehlo' or an MLIR pipeline stage")
    return st


def scan_patterns(ex: Exploration, stage, patterns: list[Pattern] | None = None, progress: bool = True,
                  chunk: int = 24, on_progress: OnProgress | None = None) -> list[ScanRow]:
    """Apply every pattern (default: the whole catalog) alone to ``stage``; one row per pattern.
    ``on_progress(done, total)`` hears the patterns tried so far of all of them."""
    st = _module_stage(ex, stage)
    pats = list(patterns if patterns is not None else catalog(ex.spec.selection.options))
    by_pass = {patterns_pass((p.spec,)): p for p in pats}
    passes = list(by_pass)
    chunks = [passes[i:i + chunk] for i in range(0, len(passes), chunk)]
    text = st.text  # locations do not change what a pattern does, and the module parses faster without
    raw = _run_each(text, chunks, f"patterns on {st.name}", progress, ex.spec.timeout, on_progress)
    rows = {}
    for o in raw.results:
        p = by_pass[o.pipeline]
        rows[p.name] = ScanRow(p.name, p.group, o.changed, o.seconds, o.error)
    for f in raw.failures:
        p = by_pass[f.item]
        rows[p.name] = ScanRow(p.name, p.group, False, float("nan"), _failure_note(f))
    return [rows[p.name] for p in pats if p.name in rows]


def _run_each(text: str, chunks: list[list[str]], desc: str, progress: bool, timeout: float,
              on_progress: OnProgress | None = None) -> PoolResult:
    """Each pipeline of ``chunks`` alone on ``text`` over the worker pool: one bar for the whole
    scan, advanced as each batch comes back (see ``progress``: none when there is nowhere to draw it)."""
    with Progress(sum(len(c) for c in chunks), desc, progress, on_progress, unit="pattern") as bar:
        return default_pool().map("run_each", chunks, lambda c: (text, c, False), on_done=bar.update,
                                  timeout=timeout)


def _failure_note(f: ItemFailure) -> str:
    return f"{f.kind}: {f.diagnostics.strip()[-300:]}"


@dataclass(frozen=True)
class StepRun:
    """What stepping produced: the stages (the start, then ``pattern:<name>#k`` each), the stage one
    greedy run of the whole list makes from the same start, and the patterns that raised."""

    stages: tuple[Stage, ...]
    reference: Stage
    skipped: tuple[str, ...]


def step_patterns(ex: Exploration, stage, max_steps: int = 200, progress: bool = True,
                  on_progress: OnProgress | None = None) -> StepRun:
    """Apply the enabled patterns one at a time, the first applicable one each step, to a fixpoint.

    The number of steps is not known in advance: ``on_progress(steps, None)`` hears each pattern
    applied, and the bar counts steps without an end."""
    st = _module_stage(ex, stage)
    specs = list(pattern_list(ex.spec.selection))
    by_pass = {patterns_pass((s,)): pattern_name(s) for s in specs}
    runner = default_runner()
    current = dataclasses.replace(st, parent=None, changed=False)
    stages = [current]
    skipped: list[str] = []  # patterns that raised on this module: reported, not retried
    order = {p: k for k, p in enumerate(by_pass)}
    pool = default_pool()
    with Progress(None, f"stepping patterns on {st.name}", progress, on_progress, unit="step") as bar:
        for _ in range(max_steps):
            candidates = [p for p, n in by_pass.items() if n not in skipped]
            # Each worker scans a contiguous share of the list and stops at its first hit; the earliest
            # hit overall is then the first applicable pattern in list order, as a serial scan finds.
            size = -(-len(candidates) // len(pool.workers))
            shares = [candidates[i:i + size] for i in range(0, len(candidates), size)]
            text = current.text_with_locations
            raw = pool.map("run_each", shares, lambda c: (text, c, True), timeout=ex.spec.timeout)
            skipped += [by_pass[o.pipeline] for o in raw.results if o.error] + [by_pass[f.item] for f in raw.failures]
            hits = [o.pipeline for o in raw.results if o.changed]
            if not hits:
                break
            pipeline = min(hits, key=order.__getitem__)
            base = f"pattern:{by_pass[pipeline]}"
            out = runner.run(base, current.text_with_locations, pipeline, timeout=ex.spec.timeout)
            current = stage_from_run(stage_name(base, stages), current, out, pipeline)
            stages.append(current)
            bar.update(1)
    everything = patterns_pass(tuple(specs))
    try:
        full = runner.run("all patterns", st.text_with_locations, everything, timeout=ex.spec.timeout)
        reference = stage_from_run("all patterns", st, full, everything)
    except StageError as e:
        reference = failed_stage("all patterns", st, everything, e)
    return StepRun(tuple(stages), reference, tuple(skipped))


def pattern_timing(ex: Exploration, stage, per_pattern: bool = False, progress: bool = True,
                   on_progress: OnProgress | None = None):
    """Seconds each pattern group (or, with ``per_pattern``, each pattern) takes on ``stage``, run alone.

    Groups are applied with their enabled patterns only, in one greedy run each, so a slow group
    stands out; the rows are sorted slowest first. ``on_progress(done, total)`` counts the groups
    (or the patterns) run so far.
    """
    import pandas as pd

    st = _module_stage(ex, stage)
    if per_pattern:
        rows = scan_patterns(ex, st, progress=progress, on_progress=on_progress)
        df = pd.DataFrame([dataclasses.asdict(r) for r in rows])
        return df.sort_values("seconds", ascending=False, ignore_index=True)
    enabled = set(pattern_list(ex.spec.selection))
    groups: dict[str, list[str]] = {}
    for p in catalog(ex.spec.selection.options):
        if p.spec in enabled:
            groups.setdefault(p.group, []).append(p.spec)
    by_pass = {patterns_pass(tuple(v)): k for k, v in groups.items()}
    text = st.text_with_locations or st.text
    raw = _run_each(text, [[p] for p in by_pass], f"pattern groups on {st.name}", progress, ex.spec.timeout,
                    on_progress)
    rows = [{"group": by_pass[o.pipeline], "patterns": len(groups[by_pass[o.pipeline]]), "seconds": o.seconds,
             "changed": o.changed, "error": o.error or ""} for o in raw.results]
    rows += [{"group": by_pass[f.item], "patterns": len(groups[by_pass[f.item]]), "seconds": float("nan"),
              "changed": False, "error": _failure_note(f)} for f in raw.failures]
    return pd.DataFrame(rows).sort_values("seconds", ascending=False, ignore_index=True)
