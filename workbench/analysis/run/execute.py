"""Run any MLIR stage on a chosen device and check its numbers against the unoptimized program.

A traced program's stage runs through the user's own lowering with the stage's module in its place
(``pipeline.program.relowered``); a module given as text through ``jax.export``, with the arguments placed
on the chosen device (or left on their mesh when they are sharded). Outputs keep the user's pytree structure.

A stage explored for one platform runs on another where its module compiles there (StableHLO usually does;
a platform's own custom calls do not, and the error says which): the user's function is lowered once more
for that platform (``traced_for``) and the stage's module takes the place of that lowering's, so a TPU's
numbers can be held against the CPU's.
"""
from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ...errors import WorkbenchError
from ...ir.text import custom_call_targets
from ...pipeline.array_limit import Planned, refuse_large
from ...pipeline.exported import exported_for_text, swap_module
from ...pipeline.hlo_stage import first_after_layout, hlo_as_stablehlo
from ...pipeline.program import host_array, relowered, relowered_with_results, undonated_call
from ...pipeline.trace import all_devices, resolve_device, trace
from ...pipeline.xla import check_options
from ...pipeline.xla_probe import guard_compile
from ...stages import Staged
from .check import REFERENCE, Check, LeafCheck, Reference, check_outputs, compare_outputs  # noqa: F401
from .history import RunProgram, why_stale
from .printed import captured_if_printing

__all__ = ["devices", "RunResult", "RunProgram", "Timing", "Check", "LeafCheck", "Reference", "run_stage",
           "compare_outputs", "check_outputs", "args_key", "REFERENCE", "runnable_source", "tap_program", "traced_for"]


def traced_for(traced, dev):
    """``traced`` where it was lowered for ``dev``'s platform, else the same function traced again for it
    (once per platform, kept in ``traced.memo``): its lowering takes a stage's module on that platform.
    The arguments are copied to ``dev`` for the trace (the user's own, committed to their device, would
    pull the lowering back there). A sharded program stays on its mesh."""
    if traced.nr_devices != 1 or not traced.platforms or dev.platform in traced.platforms:
        return traced
    key = ("traced for", dev.platform)
    if key not in traced.memo:
        if traced.fn is None:
            raise WorkbenchError(f"the program was lowered for {list(traced.platforms)}, and its function is not "
                                 f"at hand to lower it for {dev.platform}: explore it with device={dev.platform!r}")
        moved = jax.tree_util.tree_map(lambda x: jax.device_put(x, dev) if isinstance(x, jax.Array) else x,
                                       traced.all_args)
        try:
            traced.memo[key] = trace(traced.fn, moved, device=dev, static_argnums=traced.static_argnums)
        except WorkbenchError as e:
            raise WorkbenchError(f"the program, lowered for {list(traced.platforms)}, cannot be lowered for "
                                 f"{dev.platform}: {e}") from None
    return traced.memo[key]


def _elsewhere(explored_on: str, dev, source: str) -> str:
    """What to add to a failed run's error where the stage runs on another platform than it was explored for."""
    if dev.platform == explored_on:
        return ""
    targets = custom_call_targets(source)
    calls = (f"; its module calls custom calls made for {explored_on} ({', '.join(targets[:4])}), which "
             f"{dev.platform} may not have") if targets else ""
    return (f" (the stage was explored for {explored_on}{calls}: explore with device={dev.platform!r} to lower the "
            f"program for {dev.platform})")


def devices():
    """Every device JAX sees, as a pandas DataFrame: id ("cpu:0", "gpu:0"), platform, kind, memory (bytes)."""
    import pandas as pd

    rows = []
    for ident, d in all_devices():
        stats = d.memory_stats() if hasattr(d, "memory_stats") else None
        rows.append({"id": ident, "platform": d.platform, "kind": d.device_kind,
                     "memory": (stats or {}).get("bytes_limit"), "process": d.process_index})
    return pd.DataFrame(rows, columns=["id", "platform", "kind", "memory", "process"])


@dataclass(frozen=True)
class Timing:
    """Wall times per repeat after one warm-up call (seconds). ``traced``: where the calls were also run
    inside a profiler's trace (``run_stage(around=...)``), their wall times there, after the untraced
    ``times``; ``overhead`` their medians' ratio, the trace's measured cost."""

    times: tuple[float, ...]
    traced: tuple[float, ...] = ()

    @property
    def overhead(self) -> float | None:
        return statistics.median(self.traced) / self.median if self.traced and self.median else None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q = statistics.quantiles(self.times, n=4)
        return q[2] - q[0]

    def __repr__(self) -> str:
        return f"Timing(median={self.median * 1e3:.3f} ms, min={self.min * 1e3:.3f} ms, iqr={self.iqr * 1e3:.3f} ms, n={len(self.times)})"


@dataclass(frozen=True)
class RunResult:
    """One run of a stage. ``outputs`` is what the user's function returns, as its own jit returns
    it; ``program_outputs`` is everything the compiled program returned, which the check covers (the
    same, except through a library's jit such as ``nnx.jit``, whose program also returns the state
    it writes back into the model and optimizer). ``program`` is the program it ran (a ``RunProgram``:
    the stage's text by hash and the settings), which ``stale_for(ex)`` compares with ``ex``'s.
    ``printed``: what the call the user asked for printed (its host callbacks -- ``jax.debug.print``, a
    callback's ``print`` --, the warnings raised meanwhile), each line with its end; the timing repeats and
    the reference's calls print nothing."""

    stage: str
    device: str
    outputs: Any
    timing: Timing
    check: Check | None
    program_outputs: Any = None
    program: RunProgram | None = None  # the program it ran: the stage's text (by hash) and the settings
    printed: tuple[str, ...] = ()  # what its first call printed, line by line (host callbacks, warnings)

    @property
    def seconds(self) -> tuple[float, ...]:
        return self.timing.times

    def why_stale(self, ex: Staged) -> str:
        """Why this run's numbers are not those of ``ex``'s program, in words: ``ex``'s stage of that
        name is gone, holds another text, or XLA compiles it with other options (``history.why_stale``);
        "" when ``ex`` has the program this run ran, or when the run does not record its program."""
        return why_stale(self.program, ex) if self.program is not None else ""

    def stale_for(self, ex: Staged) -> bool:
        """Whether the program this run ran has changed in ``ex`` (a toggle changed it since): see ``why_stale``."""
        return bool(self.why_stale(ex))

    def __repr__(self) -> str:
        return f"RunResult({self.stage!r} on {self.device}: {self.timing!r}, {self.check!r})"


def args_key(args) -> str:
    """A fingerprint of arguments by value (tree structure, shapes, dtypes, bytes), for caching
    reference outputs: two calls with equal arguments share one reference, and no reused object id
    can return a stale one."""
    h = hashlib.sha256()
    leaves, tree = jax.tree_util.tree_flatten(args)
    h.update(str(tree).encode())
    for leaf in leaves:
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", np.float32), jax.dtypes.extended):
            leaf = jax.random.key_data(leaf)  # a typed PRNG key: its raw bits are its value
        a = np.asarray(leaf)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def runnable_source(ex, stage) -> str:
    """The module text of ``stage`` that JAX can run (an XLA stage's HLO turned into StableHLO:
    ``pipeline.hlo_stage``); WorkbenchError for stages that cannot run."""
    if stage.error:
        raise WorkbenchError(f"stage {stage.name!r} failed ({stage.error.splitlines()[0]}); it has no module to run")
    if stage.group == "backend":
        raise WorkbenchError(f"stage {stage.name!r} is XLA backend output, not a module: run the last MLIR stage, "
                             "which XLA compiles into it")
    if stage.group == "xla":
        return _runnable_hlo(ex, stage)
    if stage.name == "jaxpr":
        raise WorkbenchError("the jaxpr stage is not a module; run 'stablehlo' (the same program, lowered)")
    return stage.text_with_locations or stage.text


def _runnable_hlo(ex, stage) -> str:
    """An XLA stage before layout assignment as StableHLO; the later ones refused, naming the last that runs."""
    stages = list(ex.stages)
    result = getattr(ex, "xla_result", None)
    cut = first_after_layout(stages, getattr(result, "runs", ()) or ())
    xla = [s.name for s in stages if s.group == "xla"]
    if cut is not None and cut in xla and stage.name in xla and xla.index(stage.name) >= xla.index(cut):
        last = xla[xla.index(cut) - 1] if xla.index(cut) > 0 else None
        raise WorkbenchError(
            f"stage {stage.name!r} is made by XLA's layout assignment or a pass after it: its module carries layouts and "
            "backend-specific forms that cannot be turned back into StableHLO and compiled again"
            + (f"; the last XLA stage that runs is {last!r}" if last else "")
            + ". The last MLIR stage runs as XLA compiles it into these stages.")
    try:
        return hlo_as_stablehlo(stage.text)
    except WorkbenchError as e:
        raise WorkbenchError(f"stage {stage.name!r} cannot run: {e}") from None


def runnable_exported(ex, stage, platform: str | None = None):
    """The ``jax.export.Exported`` that runs ``stage`` of ``ex`` (for features that ship the program
    serialized); a module given as text is exported for ``platform`` (default: the exploration's).
    WorkbenchError for stages that cannot run or programs jax.export cannot serialize."""
    source = runnable_source(ex, stage)
    traced = ex.spec.traced
    platform = platform or resolve_device(ex.spec.device).platform
    try:
        return swap_module(traced.exported, source) if traced is not None else exported_for_text(source, platform)
    except WorkbenchError as e:
        raise WorkbenchError(f"stage {stage.name!r} cannot run: {e}") from None


def example_args(exported, seed: int = 0, doing: str = "the workbench would make seeded example arguments "
                 "for @main") -> tuple:
    """Seeded random arguments matching an Exported's input shapes, for modules given as text;
    ArrayTooLargeError (``doing`` says for what) before any is made when they pass ``array_limit()``."""
    refuse_large([Planned(f"argument {i}", a.shape, a.dtype) for i, a in enumerate(exported.in_avals)], doing,
                 _OWN_ARGS)
    key = jax.random.PRNGKey(seed)
    flat = []
    for aval in exported.in_avals:
        key, sub = jax.random.split(key)
        if jax.numpy.issubdtype(aval.dtype, jax.numpy.floating):
            flat.append(jax.random.normal(sub, aval.shape, aval.dtype))
        elif aval.dtype == jax.numpy.bool_:
            flat.append(jax.random.bernoulli(sub, 0.5, aval.shape))
        else:
            flat.append(jax.random.randint(sub, aval.shape, 0, 8).astype(aval.dtype))
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, flat)
    return tuple(args)


_OWN_ARGS = "Pass arrays of your own (ex.run(args=...)), or explore a smaller module."


def _place(args, exported, device):
    if exported is not None and exported.nr_devices > 1:
        return args  # sharded: the arguments already live on their mesh
    leaves = jax.tree_util.tree_leaves(args)
    # a numpy array becomes an XLA buffer of its logical size (a zero-stride view expands): bounded
    refuse_large([Planned(f"numpy argument leaf {i}", x.shape, x.dtype) for i, x in enumerate(leaves)
                  if isinstance(x, np.ndarray)], f"the workbench would copy numpy arguments to {device}",
                 "Place it on the device yourself (jax.device_put) and pass that, or run on smaller arrays.")
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, device) if isinstance(x, (jax.Array, np.ndarray)) else x,
                                  args)


def run_stage(ex, stage, device: str | None = None, repeat: int = 20, args=None,
              xla_options=None, around=None, seen: dict | None = None,
              printed: list[str] | None = None) -> tuple[Any, Timing]:
    """Call the stage's module ``repeat`` times after a warm-up; returns (outputs, timing). It is compiled
    with ``xla_options`` (default: the Exploration's, so a run follows its XLA toggles; ``()``: XLA's
    defaults); a compile with disabled passes is tried in a child process first (XLA may abort).

    A traced function's stage runs as the user's own jit would run it (``pipeline.program``): its
    host callbacks fire, and a donated argument is copied before each call, so the user's arrays
    live on. ``args`` are the traced positional arguments (static ones left out), as given to explore.
    ``around``: a context manager (a profiler trace) that ``repeat`` more calls run in, after the untraced
    ones (the compile and the warm-up stay outside; the timing's ``traced`` holds their times); where it has
    ``batches(repeat)``, it is entered once per batch, with as many calls as each batch says. ``seen`` (a
    dict) gets the executable's optimized HLO text as ``seen["hlo"]``.

    What the program prints (host callbacks, warnings: ``analysis.run.printed``) is caught on every call; with
    ``printed`` (a list), the warm-up call's lines are appended to it and echoed to ``sys.stdout``, once,
    as the user's own call would print them; the timed calls' are dropped, as all are without ``printed``.
    """
    options = check_options(dict(ex.spec.xla_options if xla_options is None else xla_options))
    device = device or ex.spec.device
    traced = ex.spec.traced
    if traced is None:
        return _run_exported(ex, stage, device, repeat, args, options, around, seen, printed)
    source = runnable_source(ex, stage)
    dev = resolve_device(device)
    explored_on = resolve_device(ex.spec.device).platform
    try:
        traced = traced_for(traced, dev)
        lowered = relowered(traced.lowered, source)
    except WorkbenchError as e:
        raise WorkbenchError(f"stage {stage.name!r} cannot run: {e}") from None
    call_args, call_kwargs = traced.executable_args(None if args is None else tuple(args))
    if traced.nr_devices == 1:
        call_args, call_kwargs = _place((call_args, call_kwargs), None, dev)

    def compile_it():
        guard_compile(source, device, options, ex.spec.timeout, partitions=traced.nr_devices)
        compiled = lowered.compile(compiler_options=options or None)
        if seen is not None:
            seen["hlo"] = compiled.as_text()
        return lambda: undonated_call(lowered, call_args, call_kwargs), lambda ak: compiled(*ak[0], **ak[1])

    return _timed(stage, device, repeat, compile_it, around, _elsewhere(explored_on, dev, source), printed)


def _timed(stage, device: str, repeat: int, compile_it, around=None, hint: str = "",
           printed: list[str] | None = None) -> tuple[Any, Timing]:
    """Compile (``compile_it`` returns ``fresh``, which makes one call's arguments -- copies of the
    donated ones --, and ``call``), call once to warm up, then time ``repeat`` calls, the copies made
    outside the timed region; any failure but the workbench's own is a WorkbenchError naming the stage.
    The warm-up's printed lines go to ``printed`` (and are echoed) when it is a list; the others nowhere. Only a
    program with host callbacks can print: a capture takes the whole process's output, other threads' too (a
    panel's run in the background would swallow what the user's next cell prints), so nothing else is caught."""
    text = getattr(stage, "text", "") or ""
    try:
        fresh, call = compile_it()
        with captured_if_printing(text, printed, echo=printed is not None):
            outputs = jax.block_until_ready(call(fresh()))

        def timed(n: int, into: list) -> None:
            for _ in range(n):
                arguments = fresh()
                t = time.perf_counter()
                jax.block_until_ready(call(arguments))
                into.append(time.perf_counter() - t)

        times: list = []
        traced: list = []
        with captured_if_printing(text):
            timed(max(1, repeat), times)
            if around is not None:
                plan = around.batches(max(1, repeat)) if hasattr(around, "batches") else (max(1, repeat),)
                for n in plan:
                    with around:
                        timed(n, traced)
    except WorkbenchError:
        raise
    except Exception as e:
        if "host callback" in str(e):
            hint += (" (the module's host callbacks -- jax.debug.print, io_callback, eqx.error_if -- no longer "
                     "match the Python functions JAX registered when it lowered the program: a pass rewrote them; "
                     "an earlier stage may run)")
        raise WorkbenchError(f"stage {stage.name!r} did not run on {device}: {_said(e)}{hint}") from None
    return outputs, Timing(tuple(times), tuple(traced))


def _said(e: Exception) -> str:
    """An error that is not the workbench's own, in one line: its type and its message's first line."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _run_exported(ex, stage, device: str, repeat: int, args, options: dict, around=None,
                  seen: dict | None = None, printed: list[str] | None = None) -> tuple[Any, Timing]:
    """A module given as text (or loaded): run through ``jax.export`` with its ``@main``'s signature, for
    ``device``'s platform."""
    dev = resolve_device(device)
    exported = runnable_exported(ex, stage, dev.platform)
    loaded = ex.spec.loaded
    if args is None and loaded is not None and loaded.args:  # saved with its arrays: the values it was explored with
        args = loaded.args
    # the outputs of @main are this run's making too, and a text module declares them freely
    made = [] if args is not None else [Planned(f"argument {i}", a.shape, a.dtype)
                                        for i, a in enumerate(exported.in_avals)]
    refuse_large(made + [Planned(f"output {i}", a.shape, a.dtype) for i, a in enumerate(exported.out_avals)],
                 f"running stage {stage.name!r} would make {'its seeded example arguments and ' * bool(made)}"
                 "the outputs of @main", _OWN_ARGS if made else "Explore a smaller module.")
    if args is None:
        args = example_args(exported)
    if exported.nr_devices == 1 and dev.platform not in exported.platforms:
        raise WorkbenchError(f"stage {stage.name!r} was lowered for {exported.platforms}, not {dev.platform}: "
                             f"explore with device={device!r} to run there")
    placed = _place(tuple(args), exported, dev)

    def compile_it():
        # disabled passes and sharded modules can make XLA abort: guard_compile tries those in a child first
        guard_compile(stage.text_with_locations or stage.text, device, options, ex.spec.timeout,
                      partitions=exported.nr_devices)
        call = jax.jit(exported.call)
        if options or seen is not None:
            call = call.lower(*placed).compile(compiler_options=options or None)
            if seen is not None:
                seen["hlo"] = call.as_text()
        return lambda: placed, lambda arguments: call(*arguments)

    source = stage.text_with_locations or stage.text
    return _timed(stage, device, repeat, compile_it, around,
                  _elsewhere(resolve_device(ex.spec.device).platform, dev, source), printed)


def tap_program(ex, label: str, text: str, extra: list, device: str, xla_options=None):
    """The tap module ``text`` (``ir.taps.tapped``: ``@main`` returns the program's results and then one value
    per ``extra`` entry, each a ``jax.ShapeDtypeStruct``) compiled once for ``device`` with ``xla_options``
    (None: the exploration's; ``()``: XLA's defaults): a function of the arguments (None: those a run of
    ``ex`` takes) that runs it once and returns the extra values as numpy arrays. ``label`` names the module
    in errors. A traced function's tap module runs through its own lowering, so its host callbacks fire and
    its donated arguments are copied first; a sharded program is refused (taps of a mesh are not supported).
    Compiling holds no lock of the workbench's: several tap modules may be compiled at once, in threads."""
    options = check_options(dict(ex.spec.xla_options if xla_options is None else xla_options))
    traced = ex.spec.traced
    dev = resolve_device(device)
    if traced is not None and traced.nr_devices > 1:
        raise WorkbenchError(f"{label}: the program runs on a mesh of {traced.nr_devices} devices, and finding "
                             "where its numbers drift taps one device's program only: sharded drift is not "
                             "supported. Explore it on one device to search there.")
    try:
        guard_compile(text, device, options, ex.spec.timeout)
        if traced is None:
            exported = exported_for_text(text, dev.platform)
            compiled: list = []

            def run(args):
                given = args if args is not None else (ex.spec.loaded.args if ex.spec.loaded is not None
                                                       and ex.spec.loaded.args else example_args(exported))
                placed = _place(tuple(given), exported, dev)
                if not compiled:
                    compiled.append(jax.jit(exported.call).lower(*placed).compile(compiler_options=options or None))
                return compiled[0](*placed)
        else:
            traced = traced_for(traced, dev)
            lowered = relowered_with_results(traced.lowered, text, extra)
            executable = lowered.compile(compiler_options=options or None)

            def run(args):
                call_args, call_kwargs = traced.executable_args(None if args is None else tuple(args))
                call_args, call_kwargs = _place((call_args, call_kwargs), None, dev)
                call_args, call_kwargs = undonated_call(lowered, call_args, call_kwargs)
                return executable(*call_args, **call_kwargs)
    except WorkbenchError:
        raise
    except Exception as e:
        raise WorkbenchError(f"{label} did not compile for {device}: {_said(e)}") from None

    def values(args=None) -> list:
        try:
            flat = jax.tree_util.tree_leaves(jax.block_until_ready(run(args)))
        except WorkbenchError:
            raise
        except Exception as e:
            raise WorkbenchError(f"{label} did not run on {device}: {_said(e)}") from None
        return [host_array(x) for x in flat[len(flat) - len(extra):]] if extra else []

    return values
