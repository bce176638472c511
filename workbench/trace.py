"""Trace a user's function: the jaxpr, and the StableHLO module as JAX lowers it for one platform.

The module comes from ``jax.export`` because an ``Exported`` is also the public route for running
and compiling a modified module later (swap its serialized module, then ``.call``).
"""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import jax
import numpy as np

from .errors import ArgumentError, TraceError, UnknownNameError

__all__ = ["Traced", "trace", "resolve_device", "device_ids"]


@dataclass(frozen=True)
class Traced:
    """What tracing produced: texts for the first two stages and the Exported to run/compile later."""

    jaxpr: str
    stablehlo: str  # with locations; stages show it without
    exported: Any  # jax.export.Exported
    args: tuple  # the dynamic arguments, flattened per positional argument as the user gave them
    static_argnums: tuple[int, ...]
    seconds_jaxpr: float
    seconds_lower: float


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


def _static_argnums(args: tuple) -> tuple[int, ...]:
    """Positional arguments whose leaves are not arrays become static, as ``jax.jit`` allows."""
    static = []
    for i, a in enumerate(args):
        leaves = jax.tree_util.tree_leaves(a)
        if all(_is_array_like(x) for x in leaves):
            continue
        try:
            hash(a)
        except TypeError:
            bad = next(x for x in leaves if not _is_array_like(x))
            raise ArgumentError(
                f"argument {i} holds a {type(bad).__name__}, which is neither an array nor hashable: JAX can "
                "neither trace it nor treat it as static. Pass arrays, or a hashable value (tuple, "
                "number, string) for configuration.") from None
        static.append(i)
    return tuple(static)


def _our_dirs() -> tuple[str, ...]:
    import jaxlib

    dirs = {os.path.dirname(jax.__file__), os.path.dirname(jaxlib.__file__), os.path.dirname(__file__)}
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
    static = tuple(sorted(set(_static_argnums(args)) | {i % len(args) for i in static_argnums}))
    jitted = jax.jit(fn, static_argnums=static)
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        t0 = time.perf_counter()
        jaxpr = jax.make_jaxpr(fn, static_argnums=static)(*args)
        t1 = time.perf_counter()
        exported = jax.export.export(jitted, platforms=[platform])(*args)
        t2 = time.perf_counter()
    except Exception as e:
        raise TraceError(f"tracing {name}{_shapes(args)} failed:\n{user_frames(e)}") from None
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    return Traced(str(jaxpr), exported.mlir_module(), exported, dynamic, static, t1 - t0, t2 - t1)


def _shapes(args: tuple) -> str:
    def one(a):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            return f"{np.dtype(a.dtype).name}{list(a.shape)}"
        return type(a).__name__

    return "(" + ", ".join(str(jax.tree_util.tree_map(one, a)) for a in args) + ")"
