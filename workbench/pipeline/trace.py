"""Trace a user's function: the jaxpr, and the StableHLO module as the user's own jit lowers it.

The module comes from ``.lower()`` of the jit the user applied (or of ``jax.jit`` for a plain
function): the ``jax.stages.Lowered`` it returns is also how every stage is compiled and run later
(``program.relowered``), so host callbacks, donation and a library's own split of state from arrays
hold in every stage. ``jax.export`` serializes the program only where a feature needs bytes (several
processes, a sharded compile in a child process) and can have them.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import re
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import jax
import numpy as np

from ..backends import default_device_id, device_id
from ..errors import ArgumentError, TraceError, UnknownNameError, WorkbenchError
from ..ir.collector import full_collections_deferred
from ..stages import Traced
from .program import (host_callbacks, in_avals, kept_var_idx, lowerings_seen, num_devices, out_avals, platforms,
                      portable_text, unwrap_lowered)

__all__ = ["Traced", "trace", "resolve_device", "device_ids", "device_for_args"]


def all_devices() -> list[tuple[str, Any]]:
    """Every device JAX sees with its id "platform:id" (e.g. "cpu:0", "gpu:1")."""
    out = []
    for backend in ("cpu", "gpu", "tpu"):
        try:
            devs = jax.devices(backend)
        except RuntimeError:  # no such backend on this machine
            continue
        out += [(f"{backend}:{d.id}", d) for d in devs]
    return out


def device_ids() -> list[str]:
    return [i for i, _ in all_devices()]


def resolve_device(device: str | Any | None):
    """A jax Device from "cpu:0"/"gpu:1"/"tpu" (or a Device, returned as is); None: JAX's default device
    (``backends.default_device_id``: where ``jax.jit`` computes)."""
    if device is None:
        device = default_device_id()
    if not isinstance(device, str):
        return device
    platform, _, idx = device.partition(":")
    try:
        devs = jax.devices(platform)
        for d in devs:
            if str(d.id) == (idx or str(devs[0].id)):
                return d
    except RuntimeError:
        pass
    raise UnknownNameError("device", device, device_ids())


def device_for_args(device: str | Any | None, args: tuple) -> str:
    """The device id an exploration of ``args`` is for: ``device`` as given (normalized: "tpu" -> "tpu:0"),
    else where ``jax.jit`` would compute: the device of the first argument committed to one (an array the
    user placed with ``jax.device_put(x, d)``, or sharded on a mesh: its first device), else JAX's default."""
    if device is not None:
        return device_id(resolve_device(device))
    for leaf in jax.tree_util.tree_leaves(args):
        if isinstance(leaf, jax.Array) and getattr(leaf, "committed", False):
            try:
                return device_id(min(leaf.sharding.device_set, key=lambda d: d.id))
            except Exception:  # noqa: BLE001 -- a deleted or abstract array: the next leaf, or JAX's default
                continue
    return default_device_id()


def _is_array_like(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct, bool, int, float, complex))


def jit_static_argnums(fn: Callable) -> tuple[int, ...]:
    """The positional arguments a ``jax.jit``-wrapped function declares static (``static_argnums``, and
    ``static_argnames`` resolved to positions by JAX); () for a plain function.

    JAX keeps these on the jitted function's ``_jit_info``; there is no public accessor, so a JAX
    without it gives () and the workbench's own rule (non-array arguments are static) applies.
    """
    info = getattr(fn, "_jit_info", None)
    nums = getattr(info, "static_argnums", ()) or ()
    return tuple(int(i) for i in nums)


def _static_argnums(args: tuple, declared: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The positional arguments that are static as a whole: the ``declared`` ones (a jitted
    function's own static arguments, or ``static_argnums``), and those without a single array leaf
    (a string, a function, a tuple of ints), as ``jax.jit`` would need them to be."""
    static = []
    for i, a in enumerate(args):
        leaves = jax.tree_util.tree_leaves(a)
        if i not in declared and any(_is_array_like(x) for x in leaves):
            continue  # traced (all arrays), or split into its arrays and the rest (see _Split)
        if i not in declared and not leaves:
            continue  # an empty container: nothing to trace, nothing to hash
        try:
            hash(a)
        except TypeError:
            if i in declared:
                raise ArgumentError(f"argument {i} is declared static but its {type(a).__name__} value is not "
                                    "hashable, as JAX requires of static arguments") from None
            bad = next(x for x in leaves if not _is_array_like(x))
            raise ArgumentError(
                f"argument {i} holds a {type(bad).__name__} and no array: JAX can neither trace it nor treat it as "
                "static, since it is not hashable. Pass arrays, or a hashable value (tuple, number, string) "
                "for configuration.") from None
        static.append(i)
    return tuple(static)


class _Opaque:
    """A non-array leaf of an argument that also holds arrays (an Equinox module's activation
    function, a Flax linen module's config): static to JAX, compared by identity, as
    ``eqx.filter_jit`` treats such leaves."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Opaque) and other.value is self.value


def _split(arg) -> tuple[list, tuple]:
    """An argument as (its array leaves, the rest): the rest is static to JAX."""
    leaves, tree = jax.tree_util.tree_flatten(arg)
    arrays = [x for x in leaves if _is_array_like(x)]
    rest = tuple(None if _is_array_like(x) else _Opaque(x) for x in leaves)
    return arrays, (tree, rest)


def _join(arrays, shape) -> Any:
    tree, rest = shape
    it = iter(arrays)
    return jax.tree_util.tree_unflatten(tree, [next(it) if r is None else r.value for r in rest])


def _mixed(args: tuple, static: tuple[int, ...]) -> tuple[int, ...]:
    """The traced arguments that hold a non-array leaf besides arrays (split by ``_split``)."""
    return tuple(i for i, a in enumerate(args) if i not in static
                 and not all(_is_array_like(x) for x in jax.tree_util.tree_leaves(a)))


def _our_dirs() -> tuple[str, ...]:
    import jaxlib

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # all of workbench/
    dirs = {os.path.dirname(jax.__file__), os.path.dirname(jaxlib.__file__), package}
    return tuple(d + os.sep for d in dirs)


def user_frames(exc: BaseException) -> str:
    """The traceback of ``exc`` without JAX's and the workbench's own frames."""
    ours = _our_dirs()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(ours)]
    text = "".join(traceback.format_list(frames))
    return text + "".join(traceback.format_exception_only(type(exc), exc))


def _jit_kind(fn: Callable) -> str:
    """"jit" for a ``jax.jit``-wrapped function, "wrapper" for another library's jit that lowers
    (``nnx.jit``, ``eqx.filter_jit``: anything with a ``.lower`` that is not JAX's), else "plain"."""
    if hasattr(fn, "_jit_info") or type(fn).__name__ == "PjitFunction":
        return "jit"
    if callable(getattr(fn, "lower", None)) and not isinstance(fn, type):
        return "wrapper"
    return "plain"


_FORGOTTEN: list = []  # what the last clear of JAX's tracing caches held, freed by release_forgotten()
_RELEASER = ThreadPoolExecutor(1, thread_name_prefix="wb-release")


def forget_traced_jaxprs() -> None:
    """Drop the jaxprs JAX keeps of the jitted functions it traced, so that this trace records its own lines.

    JAX caches a jitted function's jaxpr by its argument types, with the source lines of the call that
    traced it first; its own jitted helpers (``dynamic_index_in_dim``, which a scan slices with) are then
    inlined into a later program with an earlier program's lines. Only the two tracing caches go (a
    trace's params and ``trace_to_jaxpr``): the executables the user's functions were compiled to stay,
    and a call that hits them does not trace again. JAX has no public call for this; where these private
    caches are missing, nothing is cleared.

    Freeing what the caches held is the slow part, not the clear: each function that dies with its entry
    has JAX's other caches drop their entries for it (12 ms for the ~40 entries a small program's set-up
    leaves, 45 ms for ~120). So the entries are held here (the caches' own references, as the garbage
    collector sees them) and freed by ``release_forgotten()``, which the facade calls once XLA's compile
    runs beside it; where the caches do not show their entries, the clear frees them at once.
    """
    import gc

    from jax._src import pjit
    from jax._src.interpreters import partial_eval

    for cache in (getattr(pjit, "_infer_params_cached", None), getattr(partial_eval, "trace_to_jaxpr", None)):
        if callable(getattr(cache, "cache_clear", None)):
            _FORGOTTEN.append(gc.get_referents(cache))
            cache.cache_clear()


def release_forgotten() -> None:
    """Free the entries ``forget_traced_jaxprs`` took out of JAX's caches (see there)."""
    _FORGOTTEN.clear()


def release_forgotten_later(compiles_seen: int) -> None:
    """``release_forgotten`` on a thread of its own once XLA's compile (one beyond ``compiles_seen``) runs, which
    it then no longer delays: freeing holds the GIL that the compile's set-up needs."""
    from .xla import after_compile_begins

    _RELEASER.submit(after_compile_begins, compiles_seen, release_forgotten)


def trace(fn: Callable, args: tuple, *, device: Any = None, static_argnums: tuple[int, ...] = ()) -> Traced:
    """Trace and lower ``fn(*args)`` as the user's own jit would, on ``device`` (default: JAX's).

    * a ``jax.jit`` function is lowered by itself, so its donated and static arguments hold;
    * another library's jit (``nnx.jit``, ``eqx.filter_jit``, any object with a ``.lower`` returning
      a ``jax.stages.Lowered`` or a wrapper of one) is lowered by its own ``.lower``: the program it
      compiles, with its own split of state and arrays;
    * a plain function is jitted here: arguments without arrays are static, and an argument holding
      arrays and other leaves (an Equinox module) is split as ``eqx.filter_jit`` splits it.
    """
    for i in static_argnums:
        if not -len(args) <= i < len(args):
            raise ArgumentError(f"static_argnums names argument {i}, but the call has {len(args)} arguments")
    name = getattr(fn, "__name__", type(fn).__name__)
    kind = _jit_kind(fn)
    forget_traced_jaxprs()
    dev = resolve_device(device) if device is not None else None
    # JAX's default device needs no context, and one costs: a Diffrax solve traced 26 % slower (528 -> 668 ms)
    # under jax.default_device set to the device it would pick anyway
    if dev is not None and device_id(dev) == default_device_id():
        dev = None
    # the trace and the lowering keep what they make alive: a full collection they would trigger walks the whole
    # heap (~150 ms on a Diffrax solve) and comes later instead, while the passes run or XLA compiles
    with (jax.default_device(dev) if dev is not None else contextlib.nullcontext()), full_collections_deferred():
        if kind == "wrapper":
            if static_argnums:
                raise ArgumentError(f"{name} is a {type(fn).__name__}, which decides its static arguments itself: "
                                    "declare them where it is made (its static_argnums), not in explore")
            return _trace_wrapper(fn, name, tuple(args))
        return _trace_jit(fn, name, kind, tuple(args), static_argnums)


def _trace_jit(fn: Callable, name: str, kind: str, args: tuple, static_argnums: tuple[int, ...]) -> Traced:
    own = {i for i in jit_static_argnums(fn) if i < len(args)}
    declared = {i % len(args) for i in static_argnums} | own
    static = _static_argnums(args, tuple(sorted(declared)))
    mixed = _mixed(args, static)
    dynamic_pos = tuple(i for i in range(len(args)) if i not in static)
    if mixed:
        shapes = {i: _split(args[i])[1] for i in mixed}

        def split_call(*dyn):
            full = list(args)
            for i, d in zip(dynamic_pos, dyn):
                full[i] = _join(d, shapes[i]) if i in shapes else d
            return fn(*full)

        split_call.__name__ = name
        jitted, how = jax.jit(split_call), f"jax.jit({name}) with the arrays of argument(s) {list(mixed)} split from the rest"

        def call_args(full: tuple) -> tuple[tuple, dict]:
            return tuple(_split(full[i])[0] if i in mixed else full[i] for i in dynamic_pos), {}

        lower_args = call_args(args)[0]
    elif kind == "jit" and set(static) <= own:
        jitted, how = fn, name  # the user's own jit: its donation, shardings and static arguments

        def call_args(full: tuple) -> tuple[tuple, dict]:
            return tuple(a for i, a in enumerate(full) if i not in own), {}

        lower_args = args
    else:
        jitted = jax.jit(fn, static_argnums=static)
        how = f"jax.jit({name}" + (f", static_argnums={static})" if static else ")")

        def call_args(full: tuple) -> tuple[tuple, dict]:
            return tuple(a for i, a in enumerate(full) if i not in static), {}

        lower_args = args
    try:
        t0 = time.perf_counter()
        traced = jitted.trace(*lower_args)
        jaxpr = traced.jaxpr
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
    except Exception as e:
        hint = _concrete_value_hint(fn, args, static, e)
        raise TraceError(f"{name}{_shapes(args)}", f"{user_frames(e)}{hint}", type(e).__name__) from None

    def export():
        return jax.export.export(jitted, platforms=list(platforms(lowered)) or None)(*lower_args)

    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    return _traced(lowered, jaxpr, how, dynamic, static, t1 - t0, t2 - t1, fn, args, call_args, export)


class _Recorded(Exception):
    """Raised by the stand-in executable once it has seen the arguments a library's jit passes."""

    def __init__(self, args: tuple, kwargs: dict):
        super().__init__("recorded")
        self.args_kwargs = (args, kwargs)


class _StandInExecutable:
    """In place of XLA's executable inside a library's compiled object: records the arguments the
    library prepares (state split from arrays, static parts removed) and stops, or, given outputs,
    returns them for the library to unpack."""

    def __init__(self, outputs: Any = None, replay: bool = False):
        self._outputs, self._replay = outputs, replay

    def __call__(self, *args, **kwargs):
        if self._replay:
            return self._outputs
        raise _Recorded(args, kwargs)


class _StandInLowered:
    """Stands for a library's inner ``jax.stages.Lowered``: its ``compile`` returns the stand-in
    executable, and nothing is compiled."""

    def __init__(self, inner, executable: _StandInExecutable):
        self._inner, self._executable = inner, executable

    def compile(self, *_, **__):
        return self._executable

    def __getattr__(self, name):
        return getattr(self._inner, name)


def fresh_copy(args: tuple) -> tuple:
    """A deep copy of ``args`` for one trace, lowering or stand-in call of a library's jit, its JAX arrays
    shared, not copied: an array is immutable, and none of these runs or donates it, so only the Python
    objects around the arrays need copying (an nnx Module's Variables, which nnx.jit updates in place).
    Copying every array as well cost ~25 ms a copy on a small Equinox model. An nnx Module's own
    ``__deepcopy__`` ignores the memo and copies its arrays (~120 ms on a one-block transformer and its
    optimizer, the first time: a copy kernel per shape), so the arguments that are nnx graph nodes are cloned
    together by nnx itself (new Variables around the same arrays, references between them kept)."""
    memo = {id(x): x for x in jax.tree_util.tree_leaves(args) if isinstance(x, jax.Array)}
    graphlib = getattr(sys.modules.get("flax.nnx"), "graphlib", None)  # never imports flax
    nodes = [i for i, a in enumerate(args) if graphlib is not None and graphlib.is_graph_node(a)]
    try:
        clones = graphlib.clone(tuple(args[i] for i in nodes)) if nodes else ()
    except Exception:  # noqa: BLE001 -- a graph nnx cannot clone: its own __deepcopy__ below copies it, as before
        clones = ()
    for i, clone in zip(nodes, clones):
        memo[id(args[i])] = clone
    return copy.deepcopy(args, memo)


def _with_stand_in(outer, executable: _StandInExecutable):
    stand_in = copy.copy(outer)
    object.__setattr__(stand_in, "lowered", _StandInLowered(unwrap_lowered(outer), executable))
    return stand_in.compile()


def _wrapper_call_args(outer, full: tuple) -> tuple[tuple, dict]:
    """The arguments a library's jit hands its inner ``jax.jit`` for the user's arguments ``full``:
    its own compiled object is called on copies (so no state of the user's changes) with a recording
    executable in place of XLA's."""
    compiled = _with_stand_in(outer, _StandInExecutable())
    try:
        compiled(*fresh_copy(full))
    except _Recorded as r:
        return r.args_kwargs
    raise WorkbenchError(f"{type(outer).__name__}.compile() returned an object that did not call its executable: "
                         "the workbench cannot tell which arrays it passes; explore the function under jax.jit")


def _inner_jaxpr(traced):
    """The ``jax.core.ClosedJaxpr`` a library's ``.trace`` result holds: its own ``.jaxpr``, or that of the
    ``jax.stages.Traced`` it wraps (Flax NNX keeps it as ``.traced``); None where it holds none."""
    for obj in (traced, getattr(traced, "traced", None)):
        jaxpr = getattr(obj, "jaxpr", None)
        if jaxpr is not None:
            return jaxpr
    return None


def _trace_wrapper(fn: Callable, name: str, args: tuple) -> Traced:
    """A library's jit traced and lowered once, on one copy of the arguments (``fresh_copy``): through its
    ``.trace(...)`` and that result's ``.lower()`` where it has them (Flax NNX), else through its ``.lower`` alone
    (Equinox), the jaxpr taken from the ``jax.stages.Traced`` whose ``.lower()`` made the module
    (``program.lowerings_seen``; tracing the call again under ``jax.make_jaxpr`` for it cost a fifth of the
    lowering on a small Equinox model). A library that lowers some other way gets the jaxpr of its call under
    ``jax.make_jaxpr``, on a copy of its own: one equation holding its program (its array outputs only: it may
    return a module holding functions)."""
    try:
        t0 = time.perf_counter()
        copied = fresh_copy(args)
        traced = fn.trace(*copied) if callable(getattr(fn, "trace", None)) else None
        jaxpr = _inner_jaxpr(traced) if traced is not None else None
        t1 = time.perf_counter()
        if jaxpr is None:
            with lowerings_seen() as seen:
                outer = fn.lower(*copied)
            lowered = unwrap_lowered(outer)
            t2 = time.perf_counter()
            found = next(((t, at) for t, made, at in seen if made is lowered), None)
            if found is not None:
                jaxpr, t1 = found[0].jaxpr, found[1]
            else:
                again = fresh_copy(args)
                jaxpr = jax.make_jaxpr(lambda: [x for x in jax.tree_util.tree_leaves(fn(*again)) if _is_array_like(x)])()
        else:
            outer = traced.lower() if callable(getattr(traced, "lower", None)) else fn.lower(*copied)
            lowered = unwrap_lowered(outer)
            t2 = time.perf_counter()
    except WorkbenchError:
        raise
    except Exception as e:
        raise TraceError(f"{name}{_shapes(args)} with its own {type(fn).__name__}", user_frames(e),
                         type(e).__name__) from None
    how = f"{name} (a {type(fn).__module__.split('.')[0]} {type(fn).__name__})"
    traced = _traced(lowered, jaxpr, how, args, (), t1 - t0, t2 - t1, fn, args,
                     lambda full: _wrapper_call_args(outer, full), None)

    def returned(full: tuple, program_outputs):
        return _with_stand_in(outer, _StandInExecutable(program_outputs, replay=True))(*fresh_copy(full))

    return dataclasses.replace(traced, library_jit=type(fn).__name__, to_returned=returned)


_PRINTER = ThreadPoolExecutor(1, thread_name_prefix="wb-jaxpr")


class _Printing:
    """The jaxpr's text, printed on a thread of its own (without colour, which JAX would add where it thinks it
    welcome, a Jupyter kernel: the stage is text). The printing holds the GIL (~90 ms on a Diffrax solve), so it
    begins where this process waits without it: when the MLIR steps go to the worker (``start``, from ``build``)
    or when XLA's compile begins (a pipeline without steps), else when the text is asked for (``result``)."""

    def __init__(self, jaxpr):
        from .xla import after_compile_begins, compiles_begun

        self._jaxpr, self._future, self._lock = jaxpr, None, threading.Lock()
        _WAITER.submit(after_compile_begins, compiles_begun(), self.start)

    def start(self) -> Future:
        with self._lock:
            if self._future is None:
                self._future = _PRINTER.submit(self._text)
            return self._future

    def result(self, timeout: float | None = None) -> str:
        return self.start().result(timeout)

    def _text(self) -> str:
        try:
            return str(self._jaxpr.pretty_print(use_color=False))
        except Exception as e:  # noqa: BLE001 -- JAX's printer failing loses the stage's text, not the explore
            return f"(JAX could not print this jaxpr: {type(e).__name__}: {e})"
        finally:
            self._jaxpr = None


_WAITER = ThreadPoolExecutor(1, thread_name_prefix="wb-jaxpr-wait")


class _Portable:
    """The lowered module's text as every pipeline starts from it (``program.portable_text``: StableHLO's portable
    round trip, ~6 ms on a tiny module, 150 on a Diffrax solve), made on first use and kept. Until then
    ``for_xla`` gives the module as JAX printed it, of which XLA makes the same HLO: a pipeline without steps has
    XLA's compile begin on that text and the round trip made while the compile thread readies it. One lock: both
    use the lowering's MLIR context, which JAX makes without locks of its own."""

    def __init__(self, lowered):
        self._lowered, self._lock, self._text = lowered, threading.Lock(), None

    def result(self) -> str:
        with self._lock:
            if self._text is None:
                self._text = portable_text(self._lowered)
            return self._text

    def for_xla(self) -> str:
        from jax._src.interpreters import mlir as jax_mlir

        with self._lock:
            if self._text is not None:
                return self._text
            try:
                return jax_mlir.module_to_string(self._lowered.compiler_ir("stablehlo"), enable_debug_info=True)
            except Exception:  # noqa: BLE001 -- a lowering without a module of its own: the text every stage starts from
                pass
        return self.result()


def _traced(lowered, jaxpr, how: str, dynamic: tuple, static: tuple[int, ...], s_jaxpr: float, s_lower: float,
            fn, args, call_args, export) -> Traced:
    callbacks = host_callbacks(lowered)
    why = ""
    if callbacks:
        why = (f"it calls {callbacks} host callback(s) (jax.debug.print, jax.debug.callback, pure_callback, "
               "io_callback, eqx.error_if), which jax.export cannot serialize")
        export = None
    elif export is None:
        why = f"{how} is lowered by its library's own jit, which jax.export cannot take"
    return Traced(_Printing(jaxpr), _Portable(lowered), lowered, dynamic, static, s_jaxpr, s_lower, fn=fn,
                  all_args=args, how=how, call_args=call_args, exporter=export, why_not_exported=why,
                  nr_devices=num_devices(lowered), in_avals=in_avals(lowered), out_avals=out_avals(lowered),
                  platforms=platforms(lowered), host_callbacks=callbacks, kept_var_idx=kept_var_idx(lowered))


_CONCRETE_ERRORS = tuple(getattr(jax.errors, n) for n in (
    "ConcretizationTypeError", "TracerIntegerConversionError", "TracerBoolConversionError",
    "TracerArrayConversionError") if hasattr(jax.errors, n))


def _concrete_value_hint(fn: Callable, args: tuple, static: tuple[int, ...], exc: BaseException) -> str:
    """For an error that needed a concrete value of a traced argument (``range(n)``, ``if x > 0``,
    a shape from ``n``): which argument it was and how to make it static. Empty for other errors."""
    message = str(exc)
    if not (isinstance(exc, _CONCRETE_ERRORS) or "depends on the value of the argument" in message):
        return ""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    named = re.findall(r"argument[s]? ((?:'?\w+'?(?:, | and )?)+)", message)
    names = {n.strip("'") for group in named for n in re.split(r", | and ", group)}
    positions = [i for i, p in enumerate(params[:len(args)]) if p in names]
    if not positions:  # JAX did not say which: every traced Python number is a candidate
        positions = [i for i, a in enumerate(args) if i not in static and isinstance(a, (bool, int, float))
                     and not isinstance(a, np.generic)]
    if not positions:
        return ("\nThis error needs the concrete value of a traced array: compute it with jax.lax control flow "
                "(jax.lax.cond, jax.lax.fori_loop) or pass that value as a Python number made static.")
    which = ", ".join(f"argument {i}" + (f" ({params[i]!r})" if i < len(params) else "") for i in positions)
    name = getattr(fn, "__name__", "fn")
    return (f"\n{name} needs the concrete value of {which}, which JAX traces as an array. Make it static: "
            f"wb.explore({name}, ..., static_argnums={tuple(positions)}), or %%hlo --static {','.join(map(str, positions))} "
            "in a notebook.")


def _shapes(args: tuple) -> str:
    def one(a):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            return f"{np.dtype(a.dtype).name}{list(a.shape)}"
        return type(a).__name__

    return "(" + ", ".join(str(jax.tree_util.tree_map(one, a)) for a in args) + ")"
