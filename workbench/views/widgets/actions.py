"""Everything the panel does, each as one line of Python next to the call that does it.

The panel shows the line of every action it takes, so a click can be pasted into a notebook or a
script: ``ex = ex.with_patterns(disable=["dot_transpose"])``. Each ``Action`` carries the line and
the call; the panel runs the call on its worker thread. Lines assume ``import workbench as wb``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...errors import UnknownNameError
from ...exploration import Exploration
from ...stages import STABLEHLO

__all__ = ["Action", "toggle_patterns", "reset_patterns", "toggle_xla", "reset_xla", "set_pipeline", "diff",
           "cost", "graph", "run", "compare", "applicable", "bisect", "reduce", "predicate", "predicate_params",
           "PREDICATES", "source_map", "ops_at", "lineage", "compile_profile", "drift", "with_text"]


@dataclass(frozen=True)
class Action:
    """One panel action: ``label`` for the status line, ``python`` the same action as one line of
    Python on the variable ``name``, ``call`` the action itself (Exploration in, anything out)."""

    label: str
    python: str
    call: Callable[[Exploration], Any]


def _lit(value) -> str:
    """A Python literal with double quotes, as people write them in notebooks."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return repr(value)


def _names(names: Sequence[str]) -> list[str]:
    return sorted(dict.fromkeys(names))


def _toggle(name: str, names: Sequence[str], on: bool, method: str, noun: str, label_noun: str) -> Action:
    """Switch ``names`` on or off with ``ex.<method>(enable=...|disable=...)``."""
    names = _names(names)
    key = "enable" if on else "disable"
    shown = names[0] if len(names) == 1 else f"{len(names)} {noun}"
    return Action(f"{key} {label_noun}{shown}", f"{name} = {name}.{method}({key}={_lit(names)})",
                  lambda ex: getattr(ex, method)(**{key: names}))


def toggle_patterns(name: str, names: Sequence[str], on: bool) -> Action:
    return _toggle(name, names, on, "with_patterns", "patterns", "")


def reset_patterns(name: str, ex: Exploration) -> Action:
    """Every pattern back to its default: re-enable what was switched off, switch off what was added."""
    sel = ex.spec.selection
    on, off = sorted(sel.disabled), sorted(sel.enabled)
    args = ", ".join(a for a in (f"enable={_lit(on)}" if on else "", f"disable={_lit(off)}" if off else "") if a)
    return Action("reset the patterns to their defaults", f"{name} = {name}.with_patterns({args})",
                  lambda e: e.with_patterns(enable=on, disable=off))


def toggle_xla(name: str, names: Sequence[str], on: bool) -> Action:
    return _toggle(name, names, on, "with_xla", "XLA passes", "XLA pass ")


def reset_xla(name: str, ex: Exploration) -> Action:
    on = list(ex.spec.xla_disabled)
    return Action("re-enable every XLA pass", f"{name} = {name}.with_xla(enable={_lit(on)})",
                  lambda e: e.with_xla(enable=on))


def set_pipeline(name: str, pipeline: str) -> Action:
    return Action(f"pipeline {pipeline}", f"{name} = {name}.with_pipeline({_lit(pipeline)})",
                  lambda ex: ex.with_pipeline(pipeline))


def diff(name: str, left: str, right: str) -> Action:
    return Action(f"diff {left} → {right}", f"{name}.diff({_lit(left)}, {_lit(right)})",
                  lambda ex: ex.diff(left, right))


def cost(name: str, stage: str | None = None) -> Action:
    """Every stage's cost, or with ``stage`` that stage's cost per op."""
    if stage is None:
        return Action("costing every stage", f"{name}.cost()", lambda ex: ex.cost())
    return Action(f"costing {stage} per op", f"{name}.cost({_lit(stage)})", lambda ex: ex.cost(stage))


def graph(name: str, stage: str) -> Action:
    return Action(f"drawing {stage}", f"{name}.graph({_lit(stage)})", lambda ex: ex.graph(stage))


def source_map(name: str, stage: str, measured: bool = False) -> Action:
    if measured:  # the run is profiled once per Exploration: later maps reuse its profile (ex.profiles)
        return Action(f"profiling the run and mapping {stage} to the source lines",
                      f"{name}.source_map(stage={_lit(stage)}, measured=True)",
                      lambda ex: ex.source_map(stage=stage, measured=True))
    return Action(f"mapping {stage} to the source lines", f"{name}.source_map(stage={_lit(stage)})",
                  lambda ex: ex.source_map(stage=stage))


def compile_profile(name: str) -> Action:
    return Action("profiling the compile (XLA compiles the last MLIR stage again under JAX's profiler)",
                  f"{name}.compile_profile()", lambda ex: ex.compile_profile())


def ops_at(name: str, stage: str, file: str, line: int) -> Action:
    """The ops of ``stage`` that came from line ``line`` of ``file`` (``file`` "": the ops with no line)."""
    query = f"file == {file!r} and line == {int(line)}" if file else "file == ''"
    return Action(f"the ops of {stage} from line {line}" if file else f"the ops of {stage} with no line",
                  f"{name}.locations({_lit(stage)}).query({_lit(query)})",
                  lambda ex: ex.locations(stage).query(query))


def lineage(name: str, stage: str, op: str) -> Action:
    return Action(f"the lineage of {op} of {stage}", f"{name}.lineage({_lit(stage)}, {_lit(op)})",
                  lambda ex: ex.lineage(stage, op))


def run(name: str, stage: str, device: str, repeat: int) -> Action:
    return Action(f"run {stage} on {device}",
                  f"{name}.run({_lit(stage)}, device={_lit(device)}, repeat={repeat})",
                  lambda ex: ex.run(stage, device=device, repeat=repeat))


def with_text(name: str, stage: str, text: str) -> Action:
    """``stage``'s module replaced by ``text`` (the panel's editor): the line names the text as ``text``."""
    return Action(f"edit {stage}", f"{name} = {name}.with_text({_lit(stage)}, text)  # text: the module as edited",
                  lambda ex: ex.with_text(stage, text))


def drift(name: str, stage: str, device: str) -> Action:
    return Action(f"finding where {stage} drifts on {device}", f"{name}.drift({_lit(stage)}, device={_lit(device)})",
                  lambda ex: ex.drift(stage, device=device))


def compare(name: str, stages: Sequence[str], device: str, repeat: int) -> Action:
    stages = list(stages)
    return Action(f"compare {len(stages)} stages on {device}",
                  f"{name}.compare({_lit(stages)}, device={_lit(device)}, repeat={repeat})",
                  lambda ex: ex.compare(stages, device=device, repeat=repeat))


def applicable(name: str, stage: str, on_progress: Callable[[int, int | None], None] | None = None) -> Action:
    return Action(f"try every pattern alone on {stage}",
                  f"{name}.applicable({_lit(stage)}, details=True)",
                  lambda ex: ex.applicable(stage, details=True, progress=False, on_progress=on_progress))


# The predicates a bisection or a reduction can look for; the keyword arguments each one takes from the panel
# (a has_op/lacks_op stage of "" is the last MLIR stage).
PREDICATES = {
    "op_count_above(op, n)": ("op", "n"),
    "op_count_at_most(op, n)": ("op", "n"),
    "has_op(op, stage)": ("op", "stage"),
    "lacks_op(op, stage)": ("op", "stage"),
    "differs_from(stage)": ("stage",),
    "crashes()": (),
    "miscompiles(device)": ("device",),
}


def predicate_params(kind: str) -> tuple[str, ...]:
    """The keyword arguments predicate ``kind`` takes; UnknownNameError for a kind not in PREDICATES."""
    if kind not in PREDICATES:
        raise UnknownNameError("predicate", kind, list(PREDICATES), f"one of {', '.join(PREDICATES)}")
    return PREDICATES[kind]


def predicate(kind: str, *, op: str = "", n: int = 0, device: str | None = None, stage: str = "") -> tuple[str, Callable]:
    """(the Python expression, the predicate) for one entry of PREDICATES."""
    from ...analysis.search.bisect import (crashes, differs_from, has_op, lacks_op, miscompiles, op_count_above,
                                    op_count_at_most)

    predicate_params(kind)
    if kind == "op_count_above(op, n)":
        return f"wb.op_count_above({_lit(op)}, {int(n)})", op_count_above(op, int(n))
    if kind == "op_count_at_most(op, n)":
        return f"wb.op_count_at_most({_lit(op)}, {int(n)})", op_count_at_most(op, int(n))
    if kind in ("has_op(op, stage)", "lacks_op(op, stage)"):
        fn = has_op if kind.startswith("has_op") else lacks_op
        where = f", stage={_lit(stage)}" if stage else ""
        return f"wb.{fn.__name__}({_lit(op)}{where})", fn(op, stage or None)
    if kind == "differs_from(stage)":
        return f"wb.differs_from({_lit(stage)})", differs_from(stage)
    if kind == "crashes()":
        return "wb.crashes()", crashes()
    return f"wb.miscompiles({_lit(device) if device else ''})", miscompiles(device)


def _counted(pred: Callable, on_run: Callable[[int, bool], None] | None) -> Callable[[Exploration], bool]:
    """``pred``, telling ``on_run(runs, held)`` of every call."""
    runs = [0]

    def counted(ex: Exploration) -> bool:
        held = bool(pred(ex))
        runs[0] += 1
        if on_run is not None:
            on_run(runs[0], held)
        return held

    return counted


def bisect(name: str, kind: str, on_run: Callable[[int, bool], None] | None = None,
           on_progress: Callable[[int, int | None], None] | None = None, over: str = "patterns", **params) -> Action:
    """Bisect ``over`` the enabled patterns, XLA's passes or both ("patterns", "xla", "all") for ``kind``;
    ``on_run(runs, held)`` hears of every pipeline run."""
    expr, pred = predicate(kind, **params)
    counted = _counted(pred, on_run)
    what = {"xla": "the XLA passes", "all": "the patterns and XLA passes"}.get(over, "the patterns")
    where = "" if over == "patterns" else f", over={_lit(over)}"
    return Action(f"bisect {what} for {expr}", f"{name}.bisect({expr}{where})",
                  lambda ex: ex.bisect(counted, progress=False, on_progress=on_progress, over=over))


def reduce(name: str, kind: str, from_stage: str = STABLEHLO,
           on_progress: Callable[[int, int | None], None] | None = None, **params) -> Action:
    """Reduce ``from_stage``'s module to the smallest one on which ``kind`` holds (``params``: the
    predicate's, its own ``stage`` included); ``on_progress(runs, None)`` hears of every predicate run."""
    expr, pred = predicate(kind, **params)
    stage = from_stage
    where = "" if stage == STABLEHLO else f", stage={_lit(stage)}"
    return Action(f"reduce {stage} for {expr}", f"r = {name}.reduce({expr}{where})",
                  lambda ex: ex.reduce(pred, stage=stage, progress=False, on_progress=on_progress))


def compare_pipelines(name: str, pipelines: Sequence[str], device: str) -> Action:
    """Run ``name``'s program through each of ``pipelines`` on ``device`` (``wb.compare_pipelines``)."""
    from ...exploration import compare_pipelines as compare

    names = [p for p in pipelines if p]
    return Action(f"compare pipelines {', '.join(names)}",
                  f"wb.compare_pipelines({name}, pipelines={names!r}, device={_lit(device)})",
                  lambda ex: compare(ex, pipelines=names, device=device))
