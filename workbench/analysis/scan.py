"""Which patterns apply to a stage, one pattern at a time, and how long each group takes.

The mechanism is the plainest one that is exact: apply a pattern alone to a copy of the stage's
module (in the worker pool) and compare the result with the input.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..pipeline.catalog import Pattern, catalog, pattern_list, patterns_pass
from ..errors import StageError, WorkbenchError
from ..ir.text import strip_locations
from .progress import progress_bar
from ..pipeline.runner import default_runner
from ..stages import Stage
from ..pipeline.worker import default_pool

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
    if st.error or st.group not in ("trace", "mlir") or st.name == "jaxpr":
        raise WorkbenchError(f"stage {st.name!r} is not an MLIR module the patterns can run on; pick "
                             "'stablehlo' or an MLIR pipeline stage")
    return st


def scan_patterns(ex: Exploration, stage, patterns: list[Pattern] | None = None, progress: bool = True,
                  chunk: int = 24) -> list[ScanRow]:
    """Apply every pattern (default: the whole catalog) alone to ``stage``; one row per pattern."""
    st = _module_stage(ex, stage)
    pats = list(patterns if patterns is not None else catalog(ex.spec.selection.options))
    by_pass = {patterns_pass((p.spec,)): p for p in pats}
    passes = list(by_pass)
    chunks = [passes[i:i + chunk] for i in range(0, len(passes), chunk)]
    bar = progress_bar(len(passes), f"patterns on {st.name}", progress)
    text = st.text  # locations do not change what a pattern does, and the module parses faster without
    try:
        raw = default_pool().map("run_each", chunks, lambda c: (text, c, False),
                                 on_done=(bar.update if bar is not None else None), timeout=ex.spec.timeout)
    finally:
        if bar is not None:
            bar.close()
    rows = {}
    for kind, item in raw:
        if kind == "ok":
            pipeline, changed, seconds, err = item
            p = by_pass[pipeline]
            rows[p.name] = ScanRow(p.name, p.group, changed, seconds, err)
        else:
            pipeline, diagnostics = item
            p = by_pass[pipeline]
            rows[p.name] = ScanRow(p.name, p.group, False, float("nan"), f"{kind}: {diagnostics.strip()[-300:]}")
    return [rows[p.name] for p in pats if p.name in rows]


@dataclass(frozen=True)
class StepRun:
    """What stepping produced: the stages (the start, then ``pattern:<name>#k`` each), the stage one
    greedy run of the whole list makes from the same start, and the patterns that raised."""

    stages: tuple[Stage, ...]
    reference: Stage
    skipped: tuple[str, ...]


def step_patterns(ex: Exploration, stage, max_steps: int = 200) -> StepRun:
    """Apply the enabled patterns one at a time, the first applicable one each step, to a fixpoint."""
    st = _module_stage(ex, stage)
    specs = list(pattern_list(ex.spec.selection))
    by_pass = {patterns_pass((s,)): s.split("<")[0].split("(")[0] for s in specs}
    runner = default_runner()
    current = dataclasses.replace(st, parent=None, changed=False)
    stages = [current]
    counts: dict[str, int] = {}
    skipped: list[str] = []  # patterns that raised on this module: reported, not retried
    order = {p: k for k, p in enumerate(by_pass)}
    pool = default_pool()
    for _ in range(max_steps):
        candidates = [p for p, n in by_pass.items() if n not in skipped]
        # Each worker scans a contiguous share of the list and stops at its first hit; the earliest
        # hit overall is then the first applicable pattern in list order, as a serial scan finds.
        size = -(-len(candidates) // len(pool.workers))
        shares = [candidates[i:i + size] for i in range(0, len(candidates), size)]
        text = current.text_with_locations
        raw = pool.map("run_each", shares, lambda c: (text, c, True), timeout=ex.spec.timeout)
        skipped += [by_pass[item[0]] for kind, item in raw if kind != "ok" or item[3]]
        hits = sorted((order[item[0]], item[0]) for kind, item in raw if kind == "ok" and item[1])
        if not hits:
            break
        pipeline = hits[0][1]
        name = by_pass[pipeline]
        counts[name] = counts.get(name, 0) + 1
        out = runner.run(f"pattern:{name}", current.text_with_locations, pipeline, timeout=ex.spec.timeout)
        current = Stage(f"pattern:{name}#{counts[name]}", "mlir", strip_locations(out.text), pipeline, True,
                        out.seconds, current.name, text_with_locations=out.text)
        stages.append(current)
    try:
        full = runner.run("all patterns", st.text_with_locations, patterns_pass(tuple(specs)), timeout=ex.spec.timeout)
        reference = Stage("all patterns", "mlir", strip_locations(full.text), patterns_pass(tuple(specs)),
                          strip_locations(full.text) != st.text, full.seconds, st.name, text_with_locations=full.text)
    except StageError as e:
        reference = Stage("all patterns", "mlir", "", e.produced_by, False, None, st.name, error=str(e))
    return StepRun(tuple(stages), reference, tuple(skipped))


def pattern_timing(ex: Exploration, stage, per_pattern: bool = False, progress: bool = True):
    """Seconds each pattern group (or, with ``per_pattern``, each pattern) takes on ``stage``, run alone.

    Groups are applied with their enabled patterns only, in one greedy run each, so a slow group
    stands out; the rows are sorted slowest first.
    """
    import pandas as pd

    st = _module_stage(ex, stage)
    if per_pattern:
        rows = scan_patterns(ex, st, progress=progress)
        df = pd.DataFrame([dataclasses.asdict(r) for r in rows])
        return df.sort_values("seconds", ascending=False, ignore_index=True)
    enabled = set(pattern_list(ex.spec.selection))
    groups: dict[str, list[str]] = {}
    for p in catalog(ex.spec.selection.options):
        if p.spec in enabled:
            groups.setdefault(p.group, []).append(p.spec)
    by_pass = {patterns_pass(tuple(v)): k for k, v in groups.items()}
    text = st.text_with_locations or st.text
    bar = progress_bar(len(by_pass), f"pattern groups on {st.name}", progress)
    try:
        raw = default_pool().map("run_each", [[p] for p in by_pass], lambda c: (text, c, False),
                                 on_done=(bar.update if bar is not None else None), timeout=ex.spec.timeout)
    finally:
        if bar is not None:
            bar.close()
    rows = []
    for kind, item in raw:
        pipeline = item[0]
        g = by_pass[pipeline]
        if kind == "ok":
            _, changed, seconds, err = item
            rows.append({"group": g, "patterns": len(groups[g]), "seconds": seconds, "changed": changed, "error": err or ""})
        else:
            rows.append({"group": g, "patterns": len(groups[g]), "seconds": float("nan"), "changed": False,
                         "error": f"{kind}: {item[1].strip()[-300:]}"})
    return pd.DataFrame(rows).sort_values("seconds", ascending=False, ignore_index=True)
