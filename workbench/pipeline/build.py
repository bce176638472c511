"""Build the stages of an Exploration: a Spec from the user's arguments, then the MLIR pipeline step
by step (cached per step in the worker's runner), then XLA's per-pass dumps on first use.

The result is a ``Built`` value; the ``Exploration`` facade (``workbench/exploration.py``) wraps it.
"""
from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax

from ..errors import InputKindError, MlirSyntaxError, StageError, UnknownNameError, WorkbenchError, XlaPassWarning
from .exported import exported_for_text, swap_module
from ..ir.text import input_kind, strip_locations, text_hash
from .catalog import PatternOptions, PatternSelection, catalog, pattern_list, patterns_pass
from .presets import PRESETS, resolve
from .runner import StepResult, default_runner
from ..stages import Spec, Stage
from .trace import resolve_device, trace
from .worker import enzyme_available
from .xla import check_options, compile_with_dumps

__all__ = ["Built", "XlaStages", "build", "spec_for_function", "spec_for_text", "with_toggles", "with_exactly",
           "with_xla_options", "rebuild_xla", "clear_caches", "stage_name", "stage_from_run", "failed_stage"]


@dataclass(frozen=True)
class XlaStages:
    """What XLA's compile of the last MLIR stage gave: its stages, the error if XLA refused it, and
    the XlaResult (passes seen, XLA's cost and memory analysis, warnings)."""

    stages: tuple[Stage, ...]
    error: StageError | None
    result: Any


@dataclass(frozen=True)
class Built:
    """The stages of one Spec: the trace and MLIR stages, the failed one's error, and how to get the
    XLA stages (None when the MLIR pipeline failed, so there is nothing to compile)."""

    spec: Spec
    early: tuple[Stage, ...]
    error: StageError | None
    late: Callable[[], XlaStages] | None


def _split_options(options: dict) -> tuple[bool, PatternOptions]:
    options = dict(options)
    inline = bool(options.pop("inline", True))
    return inline, PatternOptions.from_kwargs(**options)


def _selection(options: PatternOptions, disable: Sequence[str], enable: Sequence[str],
               base: PatternSelection | None = None) -> PatternSelection:
    disable, enable = _names(disable), _names(enable)
    sel = base or PatternSelection(options)
    if enzyme_available() and (disable or enable):
        cat = {p.name: p for p in catalog(options)}
        for n in sorted(disable | enable):
            if n not in cat:
                raise UnknownNameError("pattern", n, list(cat))
        default_on = {n for n, p in cat.items() if p.default_enabled}
    elif disable or enable:
        raise WorkbenchError("enzyme-ad is not installed, so there are no Enzyme-JaX patterns to toggle")
    else:
        return sel
    disabled = (set(sel.disabled) | (disable & default_on)) - enable
    enabled = (set(sel.enabled) | (enable - default_on)) - disable
    return PatternSelection(options, frozenset(disabled), frozenset(enabled))


def _names(x: Sequence[str] | str) -> set[str]:
    """Names given as one comma-separated string or as a sequence of them."""
    if isinstance(x, str):
        x = [x]
    return {n.strip() for item in x for n in str(item).split(",") if n.strip()}


def spec_for_function(fn: Callable, args: tuple, *, pipeline: str = "all", disable: Sequence[str] = (),
                      enable: Sequence[str] = (), device: str = "cpu:0", xla_disable: Sequence[str] = (),
                      xla_options: dict | None = None, timeout: float = 600.0, static_argnums: Sequence[int] = (),
                      **pattern_options) -> Spec:
    """The Spec for ``explore(fn, *args, ...)``: options checked, patterns resolved, ``fn`` traced."""
    inline, options = _split_options(pattern_options)
    dev = resolve_device(device)
    xla = _xla_options(xla_disable, (), xla_options or {})
    sel = _selection(options, disable, enable)
    traced = trace(fn, args, platform=dev.platform, static_argnums=tuple(static_argnums))
    title = getattr(fn, "__name__", type(fn).__name__)
    return Spec(title, pipeline, inline, sel, xla, device, timeout, traced)


def spec_for_text(text: str, *, pipeline: str = "all", disable: Sequence[str] = (), enable: Sequence[str] = (),
                  device: str = "cpu:0", xla_disable: Sequence[str] = (), xla_options: dict | None = None,
                  timeout: float = 600.0, title: str = "text", **pattern_options) -> Spec:
    """The Spec for ``explore_text(text, ...)``: text that is not MLIR refused (InputKindError), MLIR
    that does not parse refused with its line:col (MlirSyntaxError), before any stage is made."""
    kind = _refuse_non_mlir(text)
    inline, options = _split_options(pattern_options)
    resolve_device(device)
    xla = _xla_options(xla_disable, (), xla_options or {})
    sel = _selection(options, disable, enable)
    try:
        default_runner().check_module(text)
    except MlirSyntaxError as e:
        if kind == "mlir":
            raise
        head = text.strip().splitlines()[0][:60]
        raise MlirSyntaxError(f"the text does not look like MLIR (it starts with {head!r}), and {e}",
                              e.diagnostics, e.line, e.column) from None
    return Spec(title, pipeline, inline, sel, xla, device, timeout, text)


_LOWERED = "StableHLO/MLIR text, e.g. from jax.jit(f).lower(*args).as_text()"
_INSTEAD = {
    "empty": "explore_text needs the text of an MLIR module; pass " + _LOWERED,
    "hlo": ("this is XLA HLO text (it starts with 'HloModule' or has an ENTRY computation), not MLIR; jaxlib "
            "cannot parse HLO text into a module, so explore the JAX function with wb.explore(f, *args), or "
            "pass " + _LOWERED),
    "jaxpr": ("this is a jaxpr ('{ lambda ...'), not MLIR; explore the function it came from with "
              "wb.explore(f, *args), or pass " + _LOWERED),
    "python": ("this looks like Python source, not MLIR; run it and explore the function with "
               "wb.explore(f, *args), or pass " + _LOWERED),
}


def _refuse_non_mlir(text) -> str:
    """The kind of ``text`` (``ir.text.input_kind``) if it may be MLIR; InputKindError for the kinds that are not."""
    if not isinstance(text, str):
        raise InputKindError(type(text).__name__, f"explore_text takes MLIR text as a str, not "
                             f"{type(text).__name__}; pass " + _LOWERED)
    kind = input_kind(text)
    if kind in _INSTEAD:
        what = "empty" if not text else ("whitespace only" if not text.strip() else "comments only")
        advice = f"the text is {what}; " + _INSTEAD[kind] if kind == "empty" else _INSTEAD[kind]
        raise InputKindError(kind, advice)
    return kind


def _xla_options(disable, enable, options: dict, base: tuple = ()) -> tuple[tuple[str, str], ...]:
    """The one road into XLA options: ``xla_disable=``/``xla_options=`` of explore, ``with_xla``, the
    panel and the magic all come here. Passes to skip may be named in ``disable`` or in the options'
    own ``xla_disable_hlo_passes`` (a string or a list); they are merged with those of ``base``, less
    the ``enable``d ones, and the result is validated once (``check_options``)."""
    options = dict(options)
    merged = dict(base)
    off = _names(merged.pop("xla_disable_hlo_passes", ""))
    off |= _names(options.pop("xla_disable_hlo_passes", ()))
    off |= _names(disable)
    off -= _names(enable)
    merged.update({k: (",".join(sorted(map(str, v))) if isinstance(v, (list, tuple, set, frozenset)) else str(v))
                   for k, v in options.items()})
    if off:
        merged["xla_disable_hlo_passes"] = ",".join(sorted(off))
    return tuple(sorted(check_options(merged).items()))


def _first_stages(spec: Spec) -> list[Stage]:
    t = spec.traced
    if t is None:
        text = spec.source
        return [Stage("input", "trace", strip_locations(text), "the text given to explore_text", True, None, None,
                      text_with_locations=text)]
    platform = resolve_device(spec.device).platform
    return [
        Stage("jaxpr", "trace", t.jaxpr, f"jax.make_jaxpr({spec.title})", True, t.seconds_jaxpr, None),
        Stage("stablehlo", "trace", strip_locations(t.stablehlo),
              f"jax.export.export(jax.jit({spec.title}), platforms=[{platform!r}])(...).mlir_module()",
              True, t.seconds_lower, "jaxpr", text_with_locations=t.stablehlo),
    ]


def stage_name(base: str, earlier: Sequence[Stage]) -> str:
    """``<base>#k`` for the k-th stage that ``base`` makes, counting those among ``earlier``."""
    return f"{base}#{1 + sum(s.name.rpartition('#')[0] == base for s in earlier)}"


def stage_from_run(name: str, parent: Stage, result: StepResult, pass_string: str) -> Stage:
    """The MLIR stage that the runner's ``result`` of ``pass_string`` on ``parent`` is: shown without
    locations, changed when that text differs from the parent's, cached when the runner served it."""
    text = strip_locations(result.text)
    return Stage(name, "mlir", text, pass_string, text != parent.text, result.seconds, parent.name,
                 text_with_locations=result.text, cached=result.cached)


def failed_stage(name: str, parent: Stage, pass_string: str, error: StageError) -> Stage:
    """The MLIR stage that ``pass_string`` failed to make from ``parent``: no text, the error instead."""
    return Stage(name, "mlir", "", pass_string, False, None, parent.name, error=str(error))


def build(spec: Spec) -> Built:
    runner = default_runner()
    pipe = resolve(spec.pipeline, inline=spec.inline)
    sel = spec.selection
    steps = []
    for step in pipe.steps:
        if step.kind == "patterns":
            if not enzyme_available():
                raise WorkbenchError("this pipeline applies Enzyme-JaX patterns, but enzyme-ad is not installed "
                                     "(it ships for CPython 3.11 on x86-64 Linux); use pipeline='upstream' or a "
                                     "custom string of upstream passes such as 'canonicalize,cse'")
            steps.append((step.base_name, patterns_pass(pattern_list(sel, direction=step.direction))))
        else:
            steps.append((step.base_name, step.text))
    if steps and spec.pipeline not in PRESETS:
        runner.check_pipeline(",".join(p for _, p in steps))

    stages = _first_stages(spec)
    error: StageError | None = None
    for base, pass_string in steps:
        name, parent = stage_name(base, stages), stages[-1]
        try:
            r = runner.run(name, parent.text_with_locations, pass_string, timeout=spec.timeout)
        except StageError as e:
            error = e
            stages.append(failed_stage(name, parent, pass_string, e))
            break
        stages.append(stage_from_run(name, parent, r, pass_string))
    late = None if error else (lambda: _xla_stages(spec, stages[-1]))
    return Built(spec, tuple(stages), error, late)


_XLA_CACHE: OrderedDict[tuple, Any] = OrderedDict()


def _xla_stages(spec: Spec, last: Stage) -> XlaStages:
    """XLA's stages for the last MLIR stage, the error if XLA refused it, and the XlaResult."""
    source = last.text_with_locations
    if spec.traced is None and "@main" not in source:
        return XlaStages((), None, None)
    try:
        cached = _xla_key(spec, source, spec.xla_options) in _XLA_CACHE  # its seconds are the first compile's
        result = _compile(spec, source, spec.xla_options)
        result = _check_disabled_passes(spec, source, result)
    except Exception as e:  # XLA's own rejection of the module or an option, kept as a failed stage
        err = StageError("xla:compile", f"XLA compile with options {dict(spec.xla_options)}",
                         f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", str(e))
        return XlaStages((Stage("xla:compile", "xla", "", err.produced_by, False, None, last.name, error=str(err)),),
                         err, None)
    stages: list[Stage] = []
    for xs in result.stages:
        if xs.group == "backend":
            p = next((s for s in stages if s.name == "xla:optimized"), last)
        else:
            p = stages[-1] if stages else last
        timed = xs.name == "xla:optimized"
        stages.append(Stage(xs.name, xs.group, xs.text, xs.produced_by, xs.text != p.text,
                            result.seconds if timed else None, p.name, cached=timed and cached))
    return XlaStages(tuple(stages), None, result)


def _xla_key(spec: Spec, source: str, options: tuple[tuple[str, str], ...]) -> tuple:
    return (text_hash(source), spec.device, options)


def _compile(spec: Spec, source: str, options: tuple[tuple[str, str], ...]):
    """XLA's compile of ``source`` with per-pass dumps, cached by (module, device, options)."""
    key = _xla_key(spec, source, options)
    if key in _XLA_CACHE:
        _XLA_CACHE.move_to_end(key)
        return _XLA_CACHE[key]
    dev = resolve_device(spec.device)
    exported = (swap_module(spec.traced.exported, source) if spec.traced is not None
                else exported_for_text(source, dev.platform))
    shardings = None
    if spec.traced is not None and exported.nr_devices > 1:
        shardings = [leaf.sharding for leaf in jax.tree_util.tree_leaves(spec.traced.args)]
    result = compile_with_dumps(exported, dev, dict(options), shardings)
    _XLA_CACHE[key] = result
    if len(_XLA_CACHE) > 16:
        _XLA_CACHE.popitem(last=False)
    return result


_XLA_PASSES_SEEN: set[str] = set()  # every pass name any compile in this process reported
_WARNED: dict = {}  # the warnings registry of _check_disabled_passes


def _check_disabled_passes(spec: Spec, source: str, result):
    """Warn about each pass in ``xla_disable_hlo_passes`` that XLA did not report running.

    XLA ignores names it does not know, and its dumps name only the passes that changed the module
    (and the pass after each). A disabled pass is absent from its own compile's dumps, so a name
    not seen before is looked up in the compile without the disables (one more compile, cached).
    A name still unseen is misspelled, or a pass that does nothing to this module: either way the
    disable has no effect, and the warning says so with the closest names XLA did report.
    """
    off = set(spec.xla_disabled)
    _XLA_PASSES_SEEN.update(result.passes)
    if not off - _XLA_PASSES_SEEN:
        return result
    try:
        base = _compile(spec, source, tuple((k, v) for k, v in spec.xla_options if k != "xla_disable_hlo_passes"))
    except Exception:  # the check is advice: a module XLA rejects without the disables gets none
        return result
    _XLA_PASSES_SEEN.update(base.passes)
    ran = list(dict.fromkeys(base.passes + result.passes))
    notes = []
    for name in sorted(off - _XLA_PASSES_SEEN):
        close = difflib.get_close_matches(name, ran, n=5, cutoff=0.5)
        hint = f" Closest passes it reported: {', '.join(close)}." if close else " ex.xla_passes lists those it reported."
        notes.append(f"XLA did not report running a pass named {name!r} on this module, so disabling it has no "
                     f"effect (XLA ignores names it does not know, and its dumps name the passes that change "
                     f"the module).{hint}")
    for note in notes:  # shown once per message, named for the option rather than for this line
        warnings.warn_explicit(note, XlaPassWarning, "xla_disable_hlo_passes", 0, module="workbench.pipeline.xla",
                               registry=_WARNED)
    return dataclasses.replace(result, warnings=tuple(notes))


def clear_caches() -> None:
    """Forget cached pass results and XLA compiles (the worker stays warm)."""
    r = default_runner()
    r.clear()
    _XLA_CACHE.clear()


def with_toggles(spec: Spec, disable: Sequence[str], enable: Sequence[str]) -> Spec:
    """``spec`` with these patterns switched off/on on top of its current toggles."""
    sel = _selection(spec.selection.options, disable, enable, base=spec.selection)
    return dataclasses.replace(spec, selection=sel)


def with_exactly(spec: Spec, names) -> Spec:
    """``spec`` with exactly ``names`` enabled among the patterns of its options' catalog."""
    options = spec.selection.options
    default_on = {p.name for p in catalog(options) if p.default_enabled}
    names = set(names)
    sel = PatternSelection(options, frozenset(default_on - names), frozenset(names - default_on))
    return dataclasses.replace(spec, selection=sel)


def with_xla_options(spec: Spec, disable: Sequence[str], enable: Sequence[str], options: dict) -> Spec:
    """``spec`` with XLA passes switched off/on and other XLA options set, through the one validation."""
    return dataclasses.replace(spec, xla_options=_xla_options(disable, enable, options, spec.xla_options))


def rebuild_xla(built: Built, spec: Spec) -> Built:
    """``built``'s trace and MLIR stages as they are, with XLA's stages for ``spec``'s XLA options."""
    early = built.early
    late = None if built.error else (lambda: _xla_stages(spec, early[-1]))
    return Built(spec, early, built.error, late)
