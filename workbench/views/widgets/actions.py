"""Everything the panel does, each as one line of Python next to the call that does it.

The panel shows the line of every action it takes, so a click can be pasted into a notebook or a
script: ``ex = ex.with_patterns(disable=["dot_transpose"])``. Each ``Action`` carries the line and
the call; the panel runs the call on its worker thread. Lines assume ``import workbench as wb``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...exploration import Exploration

__all__ = ["Action", "with_pipeline", "toggle_patterns", "reset_patterns", "toggle_xla", "reset_xla",
           "set_pipeline", "run", "compare", "applicable", "bisect", "predicate", "PREDICATES",
           "disabled_xla_passes"]


@dataclass(frozen=True)
class Action:
    """One panel action: ``label`` for the status line, ``python`` the same action as one line of
    Python on the variable ``name``, ``call`` the action itself (Exploration in, anything out)."""

    label: str
    python: str
    call: Callable[[Exploration], Any]


def with_pipeline(ex: Exploration, pipeline: str) -> Exploration:
    """``ex.with_pipeline(pipeline)``, kept here for lines the panel printed before that method existed."""
    return ex.with_pipeline(pipeline)


def _lit(value) -> str:
    """A Python literal with double quotes, as people write them in notebooks."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return repr(value)


def _names(names: Sequence[str]) -> list[str]:
    return sorted(dict.fromkeys(names))


def toggle_patterns(name: str, names: Sequence[str], on: bool) -> Action:
    names = _names(names)
    key = "enable" if on else "disable"
    shown = names[0] if len(names) == 1 else f"{len(names)} patterns"
    return Action(f"{key} {shown}", f"{name} = {name}.with_patterns({key}={_lit(names)})",
                  lambda ex: ex.with_patterns(**{key: names}))


def reset_patterns(name: str, ex: Exploration) -> Action:
    """Every pattern back to its default: re-enable what was switched off, switch off what was added."""
    sel = ex.spec.selection
    on, off = sorted(sel.disabled), sorted(sel.enabled)
    args = ", ".join(a for a in (f"enable={_lit(on)}" if on else "", f"disable={_lit(off)}" if off else "") if a)
    return Action("reset the patterns to their defaults", f"{name} = {name}.with_patterns({args})",
                  lambda e: e.with_patterns(enable=on, disable=off))


def disabled_xla_passes(ex: Exploration) -> list[str]:
    value = dict(ex.spec.xla_options).get("xla_disable_hlo_passes", "")
    return sorted(p for p in value.split(",") if p)


def toggle_xla(name: str, names: Sequence[str], on: bool) -> Action:
    names = _names(names)
    key = "enable" if on else "disable"
    shown = names[0] if len(names) == 1 else f"{len(names)} XLA passes"
    return Action(f"{key} XLA pass {shown}", f"{name} = {name}.with_xla({key}={_lit(names)})",
                  lambda ex: ex.with_xla(**{key: names}))


def reset_xla(name: str, ex: Exploration) -> Action:
    on = disabled_xla_passes(ex)
    return Action("re-enable every XLA pass", f"{name} = {name}.with_xla(enable={_lit(on)})",
                  lambda e: e.with_xla(enable=on))


def set_pipeline(name: str, pipeline: str) -> Action:
    return Action(f"pipeline {pipeline}", f"{name} = {name}.with_pipeline({_lit(pipeline)})",
                  lambda ex: with_pipeline(ex, pipeline))


def run(name: str, stage: str, device: str, repeat: int) -> Action:
    return Action(f"run {stage} on {device}",
                  f"{name}.run({_lit(stage)}, device={_lit(device)}, repeat={repeat})",
                  lambda ex: ex.run(stage, device=device, repeat=repeat))


def compare(name: str, stages: Sequence[str], device: str, repeat: int) -> Action:
    stages = list(stages)
    return Action(f"compare {len(stages)} stages on {device}",
                  f"{name}.compare({_lit(stages)}, device={_lit(device)}, repeat={repeat})",
                  lambda ex: ex.compare(stages, device=device, repeat=repeat))


def applicable(name: str, stage: str) -> Action:
    return Action(f"try every pattern alone on {stage}",
                  f"{name}.applicable({_lit(stage)}, details=True)",
                  lambda ex: ex.applicable(stage, details=True, progress=False))


# The predicates a bisection can look for; the keyword arguments each one takes from the panel.
PREDICATES = {
    "op_count_above(op, n)": ("op", "n"),
    "crashes()": (),
    "miscompiles(device)": ("device",),
}


def predicate(kind: str, *, op: str = "", n: int = 0, device: str = "cpu:0") -> tuple[str, Callable]:
    """(the Python expression, the predicate) for one entry of PREDICATES."""
    from ...analysis.bisect import crashes, miscompiles, op_count_above

    if kind == "op_count_above(op, n)":
        return f"wb.op_count_above({_lit(op)}, {int(n)})", op_count_above(op, int(n))
    if kind == "crashes()":
        return "wb.crashes()", crashes()
    if kind == "miscompiles(device)":
        return f"wb.miscompiles({_lit(device)})", miscompiles(device)
    raise ValueError(f"unknown predicate {kind!r}; one of {list(PREDICATES)}")


def bisect(name: str, kind: str, on_run: Callable[[int, bool], None] | None = None, **params) -> Action:
    """Bisect the enabled patterns for ``kind``; ``on_run(runs, held)`` hears of every pipeline run."""
    expr, pred = predicate(kind, **params)
    runs = [0]

    def counted(ex: Exploration) -> bool:
        held = bool(pred(ex))
        runs[0] += 1
        if on_run is not None:
            on_run(runs[0], held)
        return held

    return Action(f"bisect the patterns for {expr}", f"{name}.bisect({expr})",
                  lambda ex: ex.bisect(counted, progress=False))
