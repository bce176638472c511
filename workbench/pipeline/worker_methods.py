"""What the pass worker process runs (``worker.py``'s ``__main__`` serves ``METHODS``): a pipeline on a module
by enzyme-ad's runner or jaxlib's pass manager, the steps of a pipeline one after another with each output
kept for the next (``run_step``), many pipelines on one module (``run_each``), pattern lists, parse checks
and XLA's cost analysis of HLO texts, with the values it answers with (which the client unpickles by this
module's name, so the process imports it by that name rather than running it as ``__main__``)."""
from __future__ import annotations

import functools
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

from .enzyme_runner import enzyme_call

__all__ = ["METHODS", "warm_up", "jaxlib_pipeline", "enzyme_available", "PassOutcome", "PipelineOutput", "PatternLists"]


def enzyme_available() -> bool:
    """True when enzyme-ad can be imported (CPython 3.11 on x86-64 Linux).

    ``HLO_WORKBENCH_NO_ENZYME=1`` makes the workbench behave as if it were absent, to check that
    path on machines that have it.
    """
    if os.environ.get("HLO_WORKBENCH_NO_ENZYME"):
        return False
    return _enzyme_found()


@functools.cache
def _enzyme_found() -> bool:
    """Whether enzyme-ad is installed: looked for once (every explore asks; the search stats the path, 0.4 ms)."""
    import importlib.util

    return importlib.util.find_spec("enzyme_ad") is not None


@dataclass(frozen=True)
class PassOutcome:
    """One pipeline run alone by ``run_each``: whether it changed the module (compared without
    locations), how long it took, and the error it raised, if any (then ``changed`` is False)."""

    pipeline: str
    changed: bool
    seconds: float
    error: str | None


@dataclass(frozen=True)
class PipelineOutput:
    """A pipeline's output: the entry function's name (enzyme-ad's runner makes it private while it
    works) and the module's text, with locations."""

    entry: str
    text: str


@dataclass(frozen=True)
class PatternLists:
    """enzyme-ad's pattern lists for one set of options: the main list and the lowering list, each
    as its ``;``-separated text."""

    main: str
    lower: str


def jaxlib_pipeline(pipeline: str) -> bool:
    """True when every pass of ``pipeline`` is one of Shardy's (``sdy-...``), which enzyme-ad 0.0.16
    does not register but jaxlib's pass manager does: such a pipeline runs there."""
    from ..ir.text import pass_names

    if "sdy-" not in pipeline:  # every run asks: most are Enzyme-JaX pattern lists of thousands of characters
        return False
    try:
        names = pass_names(pipeline)
    except ValueError:  # not a pipeline: the runner that parses it says why
        return False
    return bool(names) and all(n.startswith("sdy-") for n in names)


def _anchored(pipeline: str) -> str:
    """``pipeline`` as jaxlib's pass manager parses it: anchored on ``builtin.module``."""
    inner = pipeline.strip()
    return inner if inner.startswith("builtin.module(") else f"builtin.module({inner})"


def _jaxlib_run(text: str, pipeline: str, allow_unregistered: bool) -> PipelineOutput:
    """``pipeline`` run by jaxlib's own pass manager in JAX's MLIR context; with ``allow_unregistered``,
    Enzyme-JaX's ops and attributes parse as opaque ones and print back as they were."""
    from jaxlib.mlir import passmanager

    from ..ir.mlir import parse_module

    module = parse_module(text, allow_unregistered=allow_unregistered)
    with module.context:
        passmanager.PassManager.parse(_anchored(pipeline)).run(module.operation)
        return PipelineOutput("main", module.operation.get_asm(enable_debug_info=True))


def _run_pipeline(text: str, pipeline: str) -> PipelineOutput:
    """Run ``pipeline`` on ``text``: enzyme-ad's runner, or jaxlib's pass manager without enzyme-ad
    and for Shardy's passes (``jaxlib_pipeline``)."""
    if not enzyme_available():
        return _jaxlib_run(text, pipeline, allow_unregistered=False)
    if jaxlib_pipeline(pipeline):
        return _jaxlib_run(text, pipeline, allow_unregistered=True)
    return PipelineOutput(*enzyme_call().run_pass_pipeline([], text, pipeline))


_EMPTY_MODULE = "module {\n}\n"


_CHAIN: dict = {"same": set()}  # run_step's series: the last output, and the (input, pipeline) that changed nothing


def _run_step(text: str | None, pipeline: str) -> tuple[str | None, str, float, bool]:
    """One step of a pipeline run step by step (``StepRunner.run_steps``): ``pipeline`` on ``text``, or on
    the last step's output where ``text`` is None, so that the client need not send it back. Returns the
    output with its entry function public again where the input had it public (as ``StepRunner.run``
    makes it), or None where it is the input itself; its entry's name; the seconds the pass took; and
    whether the step was answered without running: the same pipeline on the same text changed nothing
    earlier in the series (a fixpoint, which the client's cache would have answered). A failed step ends
    the series: the next step without a text is refused. Only the last output is kept between requests."""
    from ..ir.text import public_functions, publish_functions, unmarked_functions

    if text is not None:
        _CHAIN["same"].clear()
        _CHAIN.pop("last", None)
    elif "last" not in _CHAIN:
        raise RuntimeError("the step before this one did not run (it failed, or the worker restarted)")
    else:
        text = _CHAIN.pop("last")  # back once this step succeeds
    key = (hash(text), pipeline)
    if key in _CHAIN["same"]:
        _CHAIN["last"] = text
        return None, "", 0.0, True
    t = time.perf_counter()
    ran = _run_pipeline(text, pipeline)
    seconds = time.perf_counter() - t
    out = publish_functions(ran.text, public_functions(text) & {ran.entry}, unmarked_functions(text))
    _CHAIN["last"] = text if out == text else out
    if out == text:
        _CHAIN["same"].add(key)
        return None, ran.entry, seconds, False
    return out, ran.entry, seconds, False


def _check_pipeline(pipeline: str) -> None:
    """Raise if ``pipeline`` does not parse (an unregistered pass, a bad option, a bracket).

    enzyme-ad parses a pipeline only on the way to running it, so it runs on an empty module; a
    pipeline that parses but then fails there ("Pipeline failed", e.g. ``transform-interpreter``,
    which needs the module's own ``@__transform_main``) is accepted: on the real module it may well
    work, and if not its stage says why.
    """
    if enzyme_available() and not jaxlib_pipeline(pipeline):
        try:
            enzyme_call().run_pass_pipeline([], _EMPTY_MODULE, pipeline)
        except Exception as e:
            if "Pipeline failed" not in str(e):
                raise
        return
    from jax._src.interpreters import mlir as jmlir
    from jaxlib.mlir import passmanager

    with jmlir.make_ir_context():
        passmanager.PassManager.parse(_anchored(pipeline))


def _parse_module(text: str) -> list[str]:
    """Parse (and verify) ``text`` with the parser the passes will use; raise with its diagnostics.
    With enzyme-ad, an empty pipeline through its runner: the cheapest call it has that parses (its
    diagnostics go to the worker log as ``loc("-":line:col): error: ...``). Returns the names of the
    modules the text holds side by side (``ir.mlir.side_by_side_modules``): empty for one module."""
    from ..ir.mlir import parse_module, side_by_side_modules

    if enzyme_available():
        enzyme_call().run_pass_pipeline([], text, "")
    else:
        parse_module(text, allow_unregistered=False)
    return side_by_side_modules(text)


def _transform_passes(args: tuple) -> PatternLists:
    return PatternLists(*enzyme_call().get_transform_passes_list(*args))


def _crash(kind: str) -> None:
    """Deliberately die, for tests of crash recovery: 'abort' like a failed C++ CHECK, or 'segv'."""
    os.kill(os.getpid(), signal.SIGABRT if kind == "abort" else signal.SIGSEGV)


_INPUT_FACTS: dict[str, tuple[str, set[str], set[str], set[str]]] = {}  # the last input of run_each only


def _input_facts(text: str) -> tuple[str, set[str], set[str], set[str]]:
    """``text`` without locations, its public functions, the raw outputs known to equal it, and its functions
    written without a visibility keyword (made public again as the runner does: with none)."""
    facts = _INPUT_FACTS.get(text)
    if facts is None:
        from ..ir.text import public_functions, strip_locations, unmarked_functions

        _INPUT_FACTS.clear()
        facts = _INPUT_FACTS[text] = (strip_locations(text), public_functions(text), set(), unmarked_functions(text))
    return facts


def _run_each(text: str, pipelines: list[str], stop_at_first: bool) -> list[PassOutcome]:
    """Run each pipeline alone on ``text``: a PassOutcome for each (up to the first change, with
    ``stop_at_first``).

    Done inside the worker so that one request covers many pipelines (no round trip each).
    ``changed`` compares the outputs without locations, with the input's public functions public.
    What is known of the input (its text without locations, its public functions, the raw outputs
    already found equal to it) is kept for the next request on the same text: a group-tested scan
    sends the same module with one batch at a time, and most batches give the same raw output.
    """
    from ..ir.text import publish_functions, strip_locations

    base, public, same_as_input, unmarked = _input_facts(text)
    out = []
    for pipeline in pipelines:
        t = time.perf_counter()
        try:
            res = _run_pipeline(text, pipeline).text
            changed, err = res not in same_as_input and strip_locations(publish_functions(res, public, unmarked)) != base, None
            if not changed and len(same_as_input) < 16:
                same_as_input.add(res)
        except Exception as e:
            changed, err = False, f"{type(e).__name__}: {e}"
        out.append(PassOutcome(pipeline, changed, time.perf_counter() - t, err))
        if stop_at_first and changed:
            break
    return out


def _hlo_costs(items: list[tuple[Any, str]]) -> list[tuple[Any, dict | str]]:
    """XLA's HloCostAnalysis (on the CPU client) of each ``(key, HLO text)``, its metadata and debug sections
    stripped first (XLA's parser reads neither): ``(key, its dict)``, or
    ``(key, the error)`` for a text XLA's HLO parser or the analysis refuses. In the worker, because a
    module put together by the workbench (one instruction with its operands as parameters) can hit a
    failed CHECK in XLA, which ends the process."""
    import jax
    from jax._src.lib import _jax
    from jaxlib import _hlo

    from ..ir.hlo import strip_debug_info

    client = jax.devices("cpu")[0].client
    out: list[tuple[Any, dict | str]] = []
    for key, text in items:
        try:
            module = _hlo.hlo_module_from_text(strip_debug_info(text))
            out.append((key, dict(_jax.hlo_module_cost_analysis(client, module))))
        except Exception as e:  # XLA's parser and analysis raise several types
            out.append((key, f"{type(e).__name__}: {str(e).strip()}"))
    return out


METHODS = {"run_pipeline": _run_pipeline, "run_step": _run_step, "hlo_costs": _hlo_costs, "transform_passes": _transform_passes,
           "crash": _crash, "run_each": _run_each, "check_pipeline": _check_pipeline, "parse_module": _parse_module}

def warm_up() -> None:
    """The worker's start: load enzyme-ad's pass runner once, before the first request."""
    if enzyme_available():
        enzyme_call()
