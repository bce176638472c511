"""Build the stages of an Exploration: a Spec from the user's arguments, then the MLIR pipeline step
by step (``steps.py``: cached per step in the worker's runner), then XLA's per-pass dumps: compiled on a
background thread as soon as an Exploration starts it, or on first use (the queue of those compiles,
one at a time, is ``compile_queue.py``; this module says what a compile is and what it gives).

The result is a ``Built`` value; the ``Exploration`` facade (``workbench/exploration.py``) wraps it.
"""
from __future__ import annotations

import dataclasses
import difflib
import warnings
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import jax

from ..errors import InputKindError, MlirSyntaxError, StageError, UnknownNameError, WorkbenchError, XlaPassWarning
from ..ir.lit import run_line_pipeline
from .lit import titled
from .exported import exported_for_text, swap_module
from ..ir.text import input_kind, strip_locations, text_hash
from .catalog import PatternOptions, PatternSelection, catalog
from .compile_queue import XLA_QUEUE, CompileJob, Served
from .runner import default_runner
from .steps import edited_start, edited_steps, made_by_steps
from .shardy import SHARDY_MODES, is_sharded, resolve_mode
from ..stages import STABLEHLO, Spec, Stage
from .trace import device_for_args, resolve_device, trace
from .worker import enzyme_available
from .program import as_itself, relowered
from .xla import (after_compile_begins, check_options, compile_job_ends, compile_lowered_with_dumps, compiles_begun,
                  lower_exported)
from .xla_probe import compile_guarded, compile_sharded, guard_compile, remember_verdict

__all__ = ["Built", "XlaStages", "XlaSource", "build", "spec_for_function", "spec_for_text", "with_toggles", "with_exactly",
           "with_xla_options", "rebuild_xla", "clear_caches",
           "LateXla", "xla_compiles", "xla_passes_known", "xla_compile_again", "xla_lowering"]


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
    XLA stages (a LateXla; None when the MLIR pipeline failed, so there is nothing to compile)."""

    spec: Spec
    early: tuple[Stage, ...]
    error: StageError | None
    late: XlaSource | None
    runs: tuple = ()  # RunResults made before (a saved exploration's)


class XlaSource(Protocol):
    """Where an Exploration's XLA stages come from (``Built.late``): a compile (``LateXla``) or a saved
    file (``saved_xla.SavedXla``). Calling gives them, waiting as needed; ``start`` begins the work in the
    background, ``ready`` says whether calling would wait, ``phase`` what the wait is for now, in words,
    ``steps`` the steps the work took with their seconds, and ``watch`` gives a Future done when it would not."""

    def __call__(self) -> XlaStages: ...

    def start(self) -> None: ...

    def ready(self) -> bool: ...

    def phase(self) -> str: ...

    def steps(self) -> list[tuple[str, float]]: ...

    def watch(self) -> Future: ...


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
                      enable: Sequence[str] = (), device: str | None = None, xla_disable: Sequence[str] = (),
                      xla_options: dict | None = None, timeout: float = 600.0, static_argnums: Sequence[int] = (),
                      shardy_passes: str | None = None, optimize_communications: bool = True,
                      **pattern_options) -> Spec:
    """The Spec for ``explore(fn, *args, ...)``: options checked, patterns resolved, ``fn`` traced.
    ``shardy_passes``/``optimize_communications``: Reactant's options for a sharded program
    (``pipeline/shardy.py``)."""
    inline, options = _split_options(pattern_options)
    device = device_for_args(device, args)
    dev = resolve_device(device)
    xla = _xla_options(xla_disable, (), xla_options or {})
    sel = _selection(options, disable, enable)
    traced = trace(fn, args, device=dev, static_argnums=tuple(static_argnums))
    title = getattr(fn, "__name__", type(fn).__name__)
    mode = _shardy_mode(shardy_passes, is_sharded("", traced.nr_devices))  # a trace's devices say it
    return Spec(title, pipeline, inline, sel, xla, device, timeout, traced, mode, bool(optimize_communications))


def spec_for_text(text: str, *, pipeline: str = "all", disable: Sequence[str] = (), enable: Sequence[str] = (),
                  device: str | None = None, xla_disable: Sequence[str] = (), xla_options: dict | None = None,
                  timeout: float = 600.0, title: str = "text", shardy_passes: str | None = None,
                  optimize_communications: bool = True, **pattern_options) -> Spec:
    """The Spec for ``explore_text(text, ...)``: text that is not MLIR refused (InputKindError), MLIR
    that does not parse refused with its line:col (MlirSyntaxError), before any stage is made. A text of
    several modules or ``// -----`` chunks is read as MLIR reads it, one module, and its default title says
    so ("text: 3 modules read as one"); ``pipeline="RUN"`` is its RUN line's (``pipeline/lit.py``)."""
    kind = _refuse_non_mlir(text)
    pipeline, _ = run_line_pipeline(text, pipeline)
    inline, options = _split_options(pattern_options)
    device = device_for_args(device, ())
    xla = _xla_options(xla_disable, (), xla_options or {})
    sel = _selection(options, disable, enable)
    try:
        title = titled(text, title, default_runner())
    except MlirSyntaxError as e:
        if kind == "mlir":
            raise
        head = text.strip().splitlines()[0][:60]
        raise MlirSyntaxError(f"the text does not look like MLIR (it starts with {head!r}), and {e}",
                              e.diagnostics, e.line, e.column) from None
    mode = _shardy_mode(shardy_passes, is_sharded(text))
    return Spec(title, pipeline, inline, sel, xla, device, timeout, text, mode, bool(optimize_communications))


def _shardy_mode(shardy_passes, sharded: bool) -> str:
    """``shardy_passes`` resolved (``shardy.resolve_mode``); a custom propagation pipeline is checked
    against the pass registry that will run it (PipelineSyntaxError if it does not parse)."""
    mode = resolve_mode(shardy_passes, sharded)
    if mode not in SHARDY_MODES:
        default_runner().check_pipeline(mode)
    return mode


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
    if spec.loaded is not None:  # a saved exploration: its first stages as they were saved
        return list(spec.loaded.first)
    t = spec.traced
    if t is None:
        text = spec.source
        return [Stage("input", "trace", strip_locations(text), "the text given to explore_text", True, None, None,
                      text_with_locations=text)]
    platform = resolve_device(spec.device).platform
    jaxpr = t.jaxpr_text if isinstance(t.jaxpr_text, str) else ""  # still printing: see _with_jaxpr
    return [
        Stage("jaxpr", "trace", jaxpr, f"{t.how or spec.title}.trace(...).jaxpr  # on {platform}", True,
              t.seconds_jaxpr, None),
        Stage(STABLEHLO, "trace", strip_locations(t.stablehlo), f"{t.how or spec.title}.lower(...).as_text()",
              True, t.seconds_lower, "jaxpr", text_with_locations=t.stablehlo),
    ]


def _with_jaxpr(spec: Spec, stages: list[Stage]) -> list[Stage]:
    """``stages`` with the jaxpr's text in the jaxpr stage, once its printing (a thread of ``trace``, which the
    MLIR passes ran beside) is done."""
    t = spec.traced
    if spec.loaded is None and t is not None and not isinstance(t.jaxpr_text, str) and stages[0].name == "jaxpr":
        stages[0] = dataclasses.replace(stages[0], text=t.jaxpr)
    return stages


def _until_compiling(phase: str, seen: int) -> None:
    """Where a compile just queued is next (``phase`` "starting"), wait until it has begun (at most 1 s): XLA's
    input is made holding the GIL, as are the portable round trip and the jaxpr's printing that would delay it."""
    if phase == "starting":
        after_compile_begins(seen, lambda: None)


def build(spec: Spec, start_xla: bool = False) -> Built:
    """The stages of ``spec``: the trace's, then the MLIR pipeline's step by step. ``start_xla``: queue XLA's
    compile of the last stage as soon as it exists (before the jaxpr's text is waited for), for a caller that
    starts it anyway (``xla_checked``)."""
    steps, start = edited_steps(spec)
    owner, seen = object(), compiles_begun()  # this exploration, which asks first for the compiles begun here
    source = _xla_first(spec, owner, seen) if start_xla and not steps and start is None else None
    stages = _first_stages(spec)
    if start is not None:
        stages = edited_start(stages, start)
    ahead = _XlaAhead(spec, stages[-1], owner) if start_xla else None
    if steps and spec.traced is not None and hasattr(spec.traced.jaxpr_text, "start"):
        spec.traced.jaxpr_text.start()  # the jaxpr printed while the worker runs the steps (trace._Printing)
    error = made_by_steps(steps, stages, spec.timeout, ahead.saw if ahead is not None else None)
    late = None if error else LateXla(spec, stages[-1], owner=owner, source=source)
    if late is not None and start_xla:
        late.start()
        if not steps:  # the jaxpr's printing, not yet begun, begins once XLA compiles
            _until_compiling(late.phase(), seen)
    stages = _with_jaxpr(spec, stages)
    return Built(spec, tuple(stages), error, late)


# -- XLA: one compile per (module, device, options), queued on the one compile thread (compile_queue.py) --


def _xla_first(spec: Spec, owner: Any, seen: int) -> str | None:
    """A pipeline without steps compiles the traced module: XLA's compile begins on the module as JAX printed it
    (``Traced.text_for_xla``), and the text the stage shows is made while it compiles (StableHLO's portable round
    trip, which holds the GIL much of its time: it waits until XLA's input is made and the compile has begun). XLA
    makes the same HLO of either text. The text XLA compiles, or None (no trace)."""
    t = spec.traced
    if t is None or spec.loaded is not None:
        return None
    source = t.text_for_xla()
    job = _xla_job(spec, source, spec.xla_options)
    XLA_QUEUE.start(job, owner=owner)
    _until_compiling(XLA_QUEUE.phase(job.key), seen)  # before the round trip
    return source


class _XlaAhead:
    """XLA's compile of an MLIR stage begun while the worker runs the steps after it, once it is settled: every
    pass that ran up to the step that made it has run again since and left it as it is. The presets repeat
    their passes (patterns, inline, canonicalize, cse) and their last steps seldom change a program: every
    corpus program's last change is at step 5 of 21, it is settled at step 11, and XLA compiles beside the ten
    steps left instead of after them. A program no step changes, or a changing pass that does not come
    again, is compiled after the last step, as it would be. A settled stage that a later step changes after all
    had its compile begun for nothing: a queued one is cancelled by the next (``XLA_QUEUE.start``), a running
    one ends first. The compile is the exploration's own (``LateXla``'s owner), not one served from a cache."""

    def __init__(self, spec: Spec, start: Stage, owner: Any):
        self.spec, self.text, self.owner = spec, start.text_with_locations, owner
        self.ran: set[str] = set()  # the passes run so far
        self.owed: set[str] = set()  # those to run again, leaving the last changed stage as it is

    def saw(self, stage: Stage) -> None:
        text, step = stage.text_with_locations, stage.produced_by
        self.ran.add(step)
        if text is not self.text and text != self.text:
            self.text, self.owed = text, set(self.ran)
        elif step in self.owed:
            self.owed.discard(step)
            if not self.owed:
                LateXla(self.spec, stage, owner=self.owner).start()


class LateXla:
    """How an Exploration gets its XLA stages (``Built.late``): ``start()`` begins XLA's compile of the
    last MLIR stage in the background, ``ready()`` says whether calling would wait for XLA,
    ``watch()`` gives a Future done when it would not, and calling gives the XlaStages, waiting for
    the compile (or running it) as needed. All of them use the same entry of ``XLA_QUEUE``."""

    def __init__(self, spec: Spec, last: Stage, owner: Any = None, source: str | None = None):
        self.spec, self.last, self.owner = spec, last, self if owner is None else owner  # who compiles it first
        self.source = last.text_with_locations if source is None else source  # what XLA compiles: see _xla_first
        self.compiles = spec.traced is not None or "@main" in self.source

    def __call__(self) -> XlaStages:
        return _xla_stages(self.spec, self.last, owner=self.owner, source=self.source)

    def _job(self) -> CompileJob:
        return _xla_job(self.spec, self.source, self.spec.xla_options)

    def start(self) -> None:
        """Queue the compile unless it is cached or queued already; older queued compiles of the same
        program that nobody waits for are cancelled (superseded)."""
        if self.compiles:
            XLA_QUEUE.start(self._job(), owner=self.owner)

    def ready(self) -> bool:
        """Whether the XLA stages can be had without waiting for a compile (also when it failed)."""
        return not self.compiles or XLA_QUEUE.ready(self._job().key)

    def phase(self) -> str:
        """What the compile is doing now ("queued behind 1 compile", "XLA compiling, ..."); "" when done."""
        return XLA_QUEUE.phase(self._job().key) if self.compiles else ""

    def steps(self) -> list[tuple[str, float]]:
        """The steps the compile said it took, each with its seconds (see ``CompileQueue.steps``)."""
        return XLA_QUEUE.steps(self._job().key) if self.compiles else []

    def watch(self) -> Future:
        """A new Future, done (result None) when the XLA stages can be had without waiting. While it is
        pending the compile is never cancelled for a newer one; ``cancel()`` it when the stages are no
        longer wanted (a queued compile that nobody else waits for is then cancelled too). Its
        callbacks run on the compile thread: they should hand work on, not read the stages there."""
        if self.compiles:
            return XLA_QUEUE.watch(self._job(), owner=self.owner)
        mine: Future = Future()
        mine.set_result(None)
        return mine


def xla_compiles() -> int:
    """How many XLA compiles (with per-pass dumps) this process has run."""
    return XLA_QUEUE.runs


def xla_passes_known(names) -> bool:
    """Whether every name in ``names`` is an HLO pass that some compile in this process reported, so
    that disabling it cannot draw the unknown-pass warning of ``_check_disabled_passes``."""
    return set(names) <= _XLA_PASSES_SEEN


def _xla_stages(spec: Spec, last: Stage, owner: Any = None, source: str | None = None) -> XlaStages:
    """XLA's stages for the last MLIR stage (compiled from ``source``, by default its text), the error if XLA
    refused it, and the XlaResult; a compile that ``owner`` did not ask for first is served from the cache (its
    seconds those of that compile)."""
    source = last.text_with_locations if source is None else source
    if spec.traced is None and "@main" not in source:
        return XlaStages((), None, None)
    try:
        served = _compile(spec, source, spec.xla_options, owner)
        result, cached = served.value, served.cached
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


def _xla_job(spec: Spec, source: str, options: tuple[tuple[str, str], ...]) -> CompileJob:
    """XLA's compile of ``source`` with per-pass dumps as ``XLA_QUEUE``'s job: keyed by (module, device,
    options), of the program ``spec`` traced or read, with 64-bit types as the asking thread has them."""
    program = id(spec.traced) if spec.traced is not None else text_hash(spec.input_text)  # the job holds spec.traced
    x64 = bool(jax.config.jax_enable_x64)  # the asker's, maybe set by `with jax.enable_x64()` (thread-local)
    return CompileJob(_xla_key(spec, source, options), program, lambda: _compile_now(spec, source, options, x64))


def _compile(spec: Spec, source: str, options: tuple[tuple[str, str], ...], owner: Any = None) -> Served:
    """XLA's compile of ``source`` with per-pass dumps, cached by (module, device, options), waiting for
    it as needed; ``cached``: someone other than ``owner`` asked for it first."""
    return XLA_QUEUE.result(_xla_job(spec, source, options), owner)


def _compile_now(spec: Spec, source: str, options: tuple[tuple[str, str], ...], x64: bool):
    """One XLA compile of ``source`` with per-pass dumps (into a directory of its own), on the compile
    thread, with 64-bit types as the thread that asked for it had them (``XLA_QUEUE.runs`` counts them)."""
    try:
        with jax.enable_x64(x64):
            return _compile_exported(spec, source, options)
    finally:
        compile_job_ends()


def xla_lowering(spec: Spec, source: str):
    """``source`` ready for XLA and the number of devices it spans: for a traced program, the user's own
    lowering with the stage's module (its callbacks, donation and locations hold); for a module given as
    text, its ``@main`` lowered for the device."""
    traced = spec.traced
    if traced is None:
        dev = resolve_device(spec.device)
        exported = exported_for_text(source, dev.platform)
        return as_itself(lower_exported(exported, dev), source), exported.nr_devices
    return relowered(traced.lowered, source), traced.nr_devices


def _compile_exported(spec: Spec, source: str, options: tuple[tuple[str, str], ...]):
    traced = spec.traced
    if traced is not None and traced.nr_devices > 1 and traced.exporter is not None:
        shardings = [leaf.sharding for leaf in jax.tree_util.tree_leaves(traced.args)]
        # XLA's SPMD pipeline can abort the process: a sharded module is compiled in a child (xla_probe.py)
        done = compile_sharded(swap_module(traced.exported, source), spec.device, dict(options), shardings,
                               spec.timeout)
        if done is not None:
            remember_verdict(source, spec.device, dict(options), traced.nr_devices)
            return done
    return _guarded(spec, source, options, *xla_lowering(spec, source))


def _guarded(spec: Spec, source: str, options: tuple[tuple[str, str], ...], lowered, partitions: int):
    """``lowered``'s compile with dumps where XLA cannot abort this process: disabled passes are compiled in
    the child once (its dumps are the stages), a sharded module is tried there first (XLA's SPMD pipeline
    can abort too), and anything else, or what the child could not take, is compiled here."""
    done = compile_guarded(lowered, source, spec.device, dict(options), spec.timeout, partitions)
    if done is not None:
        return done
    guard_compile(source, spec.device, dict(options), spec.timeout, partitions=partitions)
    return compile_lowered_with_dumps(lowered, dict(options))


def xla_compile_again(spec: Spec, last: Stage, around) -> Any:
    """XLA's compile of ``last`` (an exploration's last MLIR stage) with per-pass dumps, as the exploration's
    own, done again in this thread inside the context manager ``around`` (a profiler trace): never served
    from the cache, never in the child. Options that could abort XLA are tried in the child first, as any
    compile here is (``guard_compile``). Returns the XlaResult, with every dump XLA wrote (``runs``)."""
    source = last.text_with_locations
    lowered, partitions = xla_lowering(spec, source)
    guard_compile(source, spec.device, dict(spec.xla_options), spec.timeout, partitions=partitions)
    return compile_lowered_with_dumps(lowered, dict(spec.xla_options), around=around)


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
        plain = tuple((k, v) for k, v in spec.xla_options if k != "xla_disable_hlo_passes")
        base = _compile(spec, source, plain).value
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
    """Forget cached pass results and XLA compiles (the worker stays warm): queued compiles that
    nobody waits for are cancelled, and a running one is waited for, so none runs on afterwards."""
    default_runner().clear()
    XLA_QUEUE.clear()


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
    source = getattr(built.late, "source", None)  # XLA's input as the first compile had it
    return Built(spec, built.early, built.error, None if built.error else LateXla(spec, built.early[-1], source=source))
