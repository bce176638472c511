"""The MLIR pipeline of an Exploration step by step: the steps a pipeline and its hand edits make
(``edited_steps``), their stage names, and the stages the worker's runner makes of them (``made_by_steps``).
``build`` puts them after the trace's stages and before XLA's."""
from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import StageError, WorkbenchError
from ..ir.mlir import context_ahead
from ..ir.text import strip_locations
from ..stages import Spec, Stage
from .catalog import PatternOptions, PatternSelection
from .opt import pipeline_steps
from .runner import StepResult, default_runner
from .shardy import shardy_steps, unregistered_reason
from .worker import enzyme_available

__all__ = ["stage_name", "stage_from_run", "failed_stage", "edited_steps", "edited_start", "check_pass",
           "made_by_steps"]


def stage_name(base: str, earlier: Sequence[Stage]) -> str:
    """``<base>#k`` for the k-th stage that ``base`` makes, counting those among ``earlier``."""
    return f"{base}#{1 + sum(s.name.rpartition('#')[0] == base for s in earlier)}"


def _passes_from(steps: list["_Step"], i: int) -> list["_Step"]:
    """The steps from ``steps[i]`` up to the next one that is a hand edit's text or a pass not registered."""
    end = i
    while end < len(steps) and steps[end].text is None and not unregistered_reason(steps[end].pass_string):
        end += 1
    return steps[i:end]


def _names_ahead(stages: Sequence[Stage], run: Sequence["_Step"]) -> list[str]:
    """The names ``run``'s steps get as stages after ``stages`` (``stage_name``, counted on as they are made)."""
    counts = collections.Counter(s.name.rpartition("#")[0] for s in stages)
    names = []
    for step in run:
        counts[step.base] += 1
        names.append(f"{step.base}#{counts[step.base]}")
    return names


def stage_from_run(name: str, parent: Stage, result: StepResult, pass_string: str) -> Stage:
    """The MLIR stage that the runner's ``result`` of ``pass_string`` on ``parent`` is: shown without
    locations, changed when that text differs from the parent's, cached when the runner served it.
    An unchanged stage holds its parent's text objects rather than copies of them."""
    with_locations = result.text
    if parent.text_with_locations and with_locations == parent.text_with_locations:  # `is`, mostly: see StepRunner.run
        with_locations, text = parent.text_with_locations, parent.text
    else:
        text = strip_locations(with_locations)
        if text == parent.text:
            text = parent.text
    return Stage(name, "mlir", text, pass_string, text != parent.text, result.seconds, parent.name,
                 text_with_locations=with_locations, cached=result.cached)


def failed_stage(name: str, parent: Stage, pass_string: str, error: StageError) -> Stage:
    """The MLIR stage that ``pass_string`` failed to make from ``parent``: no text, the error instead."""
    return Stage(name, "mlir", "", pass_string, False, None, parent.name, error=str(error))


@dataclass(frozen=True)
class _Step:
    """One step of the pipeline as built: its base name and pass string, ``edit`` "inserted" for a pass a
    hand edit added ("after-removed": the step after one a hand edit left out), and ``text`` the module that
    replaces its output (a hand edit; None: the pass's own)."""

    base: str
    pass_string: str
    edit: str = ""
    text: str | None = None


def edited_steps(spec: Spec) -> tuple[list[_Step], str | None]:
    """The pipeline's steps with ``spec.edits`` applied in order, and the module that replaces the one the
    pipeline starts from (None: none does). WorkbenchError for an edit whose step is not there (its pipeline
    has fewer steps than when it was made)."""
    steps = [_Step(base, p) for base, p in pipeline_steps(spec.pipeline, spec.selection, inline=spec.inline)
             + shardy_steps(spec.shardy, spec.optimize_communications, enzyme_available())]
    start = None
    for e in spec.edits:
        if e.kind == "text" and e.at == -1:
            start = e.text
        elif e.kind == "insert" and 0 <= e.at <= len(steps):
            added = [_Step(base, p, "inserted") for base, p in pipeline_steps(e.pass_, spec.selection, inline=spec.inline)]
            steps[e.at:e.at] = added
        elif e.kind in ("text", "remove") and 0 <= e.at < len(steps):
            if e.kind == "text":
                steps[e.at] = dataclasses.replace(steps[e.at], text=e.text)
            else:
                del steps[e.at]
                if e.at < len(steps):  # the step that takes its place shows the edit, and its diff what it changed
                    steps[e.at] = dataclasses.replace(steps[e.at], edit=steps[e.at].edit or "after-removed")
        else:
            raise WorkbenchError(f"the edit {e!r} is for step {e.at}, and this pipeline has {len(steps)} steps: it "
                                 "was made on another pipeline")
    return steps, start


def check_pass(pass_string: str) -> None:
    """PipelineSyntaxError when ``pass_string`` (a pass or pipeline string, or a preset) names no pass."""
    pipeline_steps(pass_string, PatternSelection(PatternOptions()))


def edited_start(first: list[Stage], text: str) -> list[Stage]:
    """The first stages with the module the pipeline starts from replaced by ``text`` (a hand edit)."""
    last = first[-1]
    edited = Stage(last.name, last.group, strip_locations(text), last.produced_by, True, None, last.parent,
                   text_with_locations=text, edit="text")
    return first[:-1] + [edited]


def _edited(name: str, parent: Stage, step: _Step) -> Stage:
    """The stage a hand edit's text makes of step ``step`` (its pass's own output replaced)."""
    text = step.text or ""
    plain = strip_locations(text)
    return Stage(name, "mlir", plain, step.pass_string, plain != parent.text, None, parent.name,
                 text_with_locations=text, edit="text")



def made_by_steps(steps: list[_Step], stages: list[Stage], timeout: float | None,
                  each: Callable[[Stage], None] | None = None) -> StageError | None:
    """The MLIR pipeline's stages, appended to ``stages`` (the trace's) one per step: a pass's output, a hand
    edit's text, or the failed stage of the first step that fails, whose StageError is returned. The passes
    between hand edits go to the worker as one run of steps (``StepRunner.run_steps``): each stage is made
    here while the worker runs the next step, and ``each(stage)`` is called with it (not with a failed one)."""
    def append(stage: Stage) -> None:
        stages.append(stage)
        if each is not None:
            each(stage)

    runner = default_runner()
    context_ahead()  # XLA's input is parsed next: its context is made while this waits for the worker
    error: StageError | None = None
    i = 0
    while i < len(steps) and error is None:
        step = steps[i]
        name, parent = stage_name(step.base, stages), stages[-1]
        reason = unregistered_reason(step.pass_string)
        if reason:
            error = StageError(name, step.pass_string, reason)
            stages.append(failed_stage(name, parent, step.pass_string, error))
        elif step.text is not None:
            append(_edited(name, parent, step))
            i += 1
        else:  # the passes from here to the next hand edit or unknown pass, sent to the worker together
            run = _passes_from(steps, i)
            names = _names_ahead(stages, run)
            sources = [parent.name, *names[:-1]]

            first = len(stages)

            def made(r: StepResult, run=run, names=names, first=first) -> None:  # while the worker runs the next
                k = len(stages) - first
                stage = stage_from_run(names[k], stages[-1], r, run[k].pass_string)
                append(dataclasses.replace(stage, edit=run[k].edit) if run[k].edit else stage)

            try:
                runner.run_steps(parent.text_with_locations, list(zip(names, [s.pass_string for s in run], sources)),
                                 timeout=timeout, each=made)
            except StageError as e:
                error = e
                stages.append(failed_stage(e.stage, stages[-1], run[len(stages) - first].pass_string, e))
            i += len(stages) - first - (error is not None)
    return error
