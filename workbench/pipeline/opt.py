"""A pipeline as its steps, and run in one go as an opt tool runs it (``wb.opt``, ``hlo-workbench opt``).

``pipeline_steps`` spells a preset or a pipeline string out as its top-level steps (the Enzyme-JaX pattern
steps with the selection's list), each a stage of an Exploration; ``run_passes`` runs them all at once on a
module, or on each ``// -----`` chunk of a lit file (``pipeline/lit.py``), as ``enzymexlamlir-opt`` does.
"""
from __future__ import annotations

from ..errors import WorkbenchError
from ..ir.lit import run_line_pipeline
from .catalog import PatternOptions, PatternSelection, pattern_list, patterns_pass
from .lit import run_chunks
from .presets import PRESETS, resolve
from .runner import default_runner
from .worker import enzyme_available

__all__ = ["pipeline_steps", "run_passes"]


def pipeline_steps(pipeline: str, selection: PatternSelection, inline: bool = True) -> list[tuple[str, str]]:
    """(base name, pass string) of each top-level step of ``pipeline`` (a preset or a pipeline string,
    ``builtin.module(...)`` or not), pattern steps spelled out with ``selection``'s list; a custom
    string is checked against the real pass registry (PipelineSyntaxError if it does not parse)."""
    pipe = resolve(pipeline, inline=inline)
    steps = []
    for step in pipe.steps:
        if step.kind == "patterns":
            if not enzyme_available():
                raise WorkbenchError("this pipeline applies Enzyme-JaX patterns, but enzyme-ad is not installed "
                                     "(it ships for CPython 3.11 on x86-64 Linux); use pipeline='upstream' or a "
                                     "custom string of upstream passes such as 'canonicalize,cse'")
            steps.append((step.base_name, patterns_pass(pattern_list(selection, direction=step.direction))))
        else:
            steps.append((step.base_name, step.text))
    if steps and pipeline not in PRESETS:
        default_runner().check_pipeline(",".join(p for _, p in steps))
    return steps


def run_passes(text: str, pipeline: str, timeout: float = 600.0, split_input_file: bool | None = None) -> str:
    """``pipeline`` run on the module ``text`` in one go, as ``enzymexlamlir-opt --pass-pipeline`` runs
    it (not a stage per pass): the result with locations and its public functions public. The text
    is parsed first (MlirSyntaxError with line:col) and the pipeline checked (PipelineSyntaxError); a
    pass that fails raises StageError("opt", ...). An empty pipeline parses, verifies and prints.

    As the opt tool: modules one after another are one module around them, which the passes run on (their
    output is that module, the inner ones in it); with ``split_input_file`` each ``// -----`` chunk is parsed
    and run on its own and the outputs are joined with ``// -----`` lines; a chunk that fails is named
    with its line, after every chunk ran (LitFileError, the others' outputs in its ``results``).
    ``pipeline="RUN"``: the text's RUN line's pipeline, and its ``--split-input-file`` unless
    ``split_input_file`` says otherwise."""
    pipeline, split_run = run_line_pipeline(text, pipeline)
    split = split_input_file if split_input_file is not None else bool(split_run)
    runner = default_runner()
    if pipeline.strip() and pipeline not in PRESETS and not any(c in pipeline for c in ",{}()-."):
        pipeline = f"builtin.module({pipeline.strip()})"  # a lone pass name ("sccp") is a pass, not a preset
    if not split:
        runner.check_module(text, several=True)
    steps = pipeline_steps(pipeline, PatternSelection(PatternOptions())) if pipeline.strip() else []
    passes = ",".join(p for _, p in steps)
    if split:
        return run_chunks(runner, text, passes, timeout)
    return runner.run("opt", text, passes, timeout=timeout, source="input").text
