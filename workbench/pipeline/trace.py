"""Trace a user's function: the jaxpr, and the StableHLO module as JAX lowers it for one platform.

The module comes from ``jax.export`` because an ``Exported`` is also the public route for running
and compiling a modified module later (swap its serialized module, then ``.call``).
"""
from __future__ import annotations

import os
import re
import traceback
from typing import Any, Callable

import jax
import numpy as np

from ..errors import ArgumentError, TraceError, UnknownNameError
from ..stages import Traced

__all__ = ["Traced", "trace", "resolve_device", "device_ids"]


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


def resolve_device(device: str | Any):
    """A jax Device from "cpu:0"/"gpu:1" (or a Device, returned as is)."""
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
    """Positional arguments whose leaves are not arrays become static, as ``jax.jit`` allows; so do
    the ``declared`` ones (a jitted function's own static arguments, or ``static_argnums``)."""
    static = []
    for i, a in enumerate(args):
        leaves = jax.tree_util.tree_leaves(a)
        if i not in declared and all(_is_array_like(x) for x in leaves):
            continue
        try:
            hash(a)
        except TypeError:
            if i in declared:
                raise ArgumentError(f"argument {i} is declared static but its {type(a).__name__} value is not "
                                    "hashable, as JAX requires of static arguments") from None
            bad = next(x for x in leaves if not _is_array_like(x))
            raise ArgumentError(
                f"argument {i} holds a {type(bad).__name__}, which is neither an array nor hashable: JAX can "
                "neither trace it nor treat it as static. Pass arrays, or a hashable value (tuple, "
                "number, string) for configuration.") from None
        static.append(i)
    return tuple(static)


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


def trace(fn: Callable, args: tuple, *, platform: str = "cpu", static_argnums: tuple[int, ...] = ()) -> Traced:
    import time

    for i in static_argnums:
        if not -len(args) <= i < len(args):
            raise ArgumentError(f"static_argnums names argument {i}, but the call has {len(args)} arguments")
    declared = {i % len(args) for i in static_argnums} | {i for i in jit_static_argnums(fn) if i < len(args)}
    static = _static_argnums(args, tuple(sorted(declared)))
    jitted = jax.jit(fn, static_argnums=static)
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        t0 = time.perf_counter()
        jaxpr = jax.make_jaxpr(fn, static_argnums=static)(*args)
        t1 = time.perf_counter()
        exported = jax.export.export(jitted, platforms=[platform])(*args)
        t2 = time.perf_counter()
    except Exception as e:
        hint = _concrete_value_hint(fn, args, static, e)
        raise TraceError(f"tracing {name}{_shapes(args)} failed:\n{user_frames(e)}{hint}") from None
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    # str() would colour the text where JAX thinks colour is welcome (a Jupyter kernel): the stage is text
    return Traced(str(jaxpr.pretty_print(use_color=False)), exported.mlir_module(), exported, dynamic, static, t1 - t0, t2 - t1,
                  fn=fn, all_args=tuple(args))


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
