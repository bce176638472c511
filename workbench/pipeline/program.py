"""Compile and call any stage's module the way the user's own jit would.

``jax.jit(f).lower(*args)`` (or the ``.lower`` of a library's jit: ``nnx.jit``, ``eqx.filter_jit``)
returns a ``jax.stages.Lowered``: the StableHLO module together with everything XLA needs besides the
text to compile and call it -- the host callbacks behind ``jax.debug.print``/``pure_callback``/
``io_callback`` (which ``jax.export`` cannot serialize), the donated arguments, the shardings, the
arguments JAX pruned as unused. ``relowered(lowered, text)`` keeps all of that and swaps the module
for a stage's text, so the stage compiles (``.compile(compiler_options=...)``), costs and runs as the
user's program does, with the user's locations intact in XLA's metadata.

JAX has no public constructor for a Lowered with another module; the one used here is a shallow copy
of the lowering object with its module replaced, the same object ``Lowered.compile`` compiles. A
module must keep ``@main``'s signature (every pass the workbench runs does).
"""
from __future__ import annotations

import contextlib
import copy
import threading
import time
from typing import Any

import jax

from ..errors import WorkbenchError
from ..ir.collector import collector_paused
from ..ir.locations import xla_locations
from ..ir.mlir import parse_module
from .exported import prepare_for_jax

__all__ = ["unwrap_lowered", "relowered", "as_itself", "relowered_with_results", "num_devices", "kept_var_idx", "host_callbacks", "in_avals", "out_avals",
           "platforms", "donated", "undonated_call", "portable_text", "host_array", "compile_request",
           "lowerings_seen"]


def unwrap_lowered(obj: Any) -> jax.stages.Lowered:
    """The ``jax.stages.Lowered`` inside what a jit's ``.lower`` returned: JAX's own, or a library's
    wrapper of it (Flax NNX and Equinox keep it as ``.lowered``)."""
    seen = 0
    while not isinstance(obj, jax.stages.Lowered):
        inner = getattr(obj, "lowered", None)
        if inner is None or seen > 8:
            raise WorkbenchError(f"{type(obj).__name__} (what .lower() returned) holds no jax.stages.Lowered: "
                                 "pass the function undecorated, or decorated with jax.jit")
        obj, seen = inner, seen + 1
    return obj


def _lowering_of(lowered: jax.stages.Lowered, text: str, what: str):
    """A copy of ``lowered``'s lowering holding ``text`` (parsed as ``relowered`` says), never its executable. The
    collector waits meanwhile: what the reading makes holds no cycles, and the collections it set off (a dozen on
    a Diffrax solve's 250 kB module, one of the middle generation) found nothing, on the way to every XLA compile."""
    with collector_paused():
        return _lowering_with(lowered, text, what)


def _lowering_with(lowered: jax.stages.Lowered, text: str, what: str):
    located = xla_locations(text)
    try:
        try:  # Enzyme's attributes dropped from the text: the module enzyme-ad's own pass gives, 10x sooner
            module = parse_module(prepare_for_jax(located, scrub=True), allow_unregistered=False)
        except WorkbenchError:  # what the text scrubber left, enzyme-ad's pass drops, or says why not
            if "enzymexla" not in located:  # nothing was scrubbed: the same text would be parsed again
                raise
            module = parse_module(prepare_for_jax(located), allow_unregistered=False)
    except WorkbenchError as e:
        raise WorkbenchError(f"{what} cannot be handed to JAX: {e}") from None
    lowering = copy.copy(lowered._lowering)
    lowering._hlo = module
    lowering._executable = None  # the copy must not reuse the original's compiled executable
    return lowering


def relowered(lowered: jax.stages.Lowered, text: str) -> jax.stages.Lowered:
    """``lowered`` with its module replaced by ``text`` (parsed in JAX's own MLIR context, Enzyme's
    attributes dropped, ``@main`` public, locations that XLA would lose rewritten: ``xla_locations``):
    compile, cost and call it as the original."""
    lowering = _lowering_of(lowered, text, "the module")
    return jax.stages.Lowered(lowering, lowered.args_info, lowered.out_tree, lowered._no_kwargs,
                              getattr(lowered, "_in_types", None), getattr(lowered, "_out_types", None))


def as_itself(wrapper: jax.stages.Lowered, source: str) -> jax.stages.Lowered:
    """A module given as text, lowered for XLA as itself rather than called from ``jax.export``'s wrapper
    (``wrapper``, its ``Exported.call`` lowered), where it is a named module as JAX lowers one: its XLA stages are
    then those a jit of the program gives (a golden saved from a function and checked from its module agree).
    Any other module, or one the wrapper's lowering cannot take, keeps the wrapper."""
    if "\nmodule @" in "\n" + source:
        try:
            return relowered(wrapper, source)
        except WorkbenchError:
            pass
    return wrapper


def relowered_with_results(lowered: jax.stages.Lowered, text: str, extra: list) -> jax.stages.Lowered:
    """``lowered`` with its module replaced by ``text``, whose ``@main`` returns the program's results and
    then one more value per ``extra`` entry (a ``jax.ShapeDtypeStruct``): a tap module. The copy's outputs
    are one flat tuple, the program's leaves then the extra values, each left where XLA puts it (no
    sharding asked for), so a single-device program keeps its host callbacks and donations as it
    compiles. WorkbenchError where the module does not parse."""
    from jax._src import core
    from jax._src.sharding_impls import UNSPECIFIED

    lowering = _lowering_of(lowered, text, "the tap module")
    args = dict(_compile_args(lowered))
    n = len(extra)
    args["global_out_avals"] = list(args["global_out_avals"]) + [core.ShapedArray(tuple(a.shape), a.dtype)
                                                                 for a in extra]
    args["out_shardings"] = tuple(args["out_shardings"]) + (UNSPECIFIED,) * n
    args["out_layouts"] = tuple(args["out_layouts"]) + (None,) * n
    lowering.compile_args = args
    total = len(args["global_out_avals"])
    flat = jax.tree_util.tree_structure(tuple(range(total)))
    return jax.stages.Lowered(lowering, lowered.args_info, flat, lowered._no_kwargs,
                              getattr(lowered, "_in_types", None), None)


def _compile_args(lowered: jax.stages.Lowered) -> dict:
    return getattr(lowered._lowering, "compile_args", {})


def num_devices(lowered: jax.stages.Lowered) -> int:
    """How many devices the program runs on (1 unless its arguments are sharded over a mesh)."""
    return int(_compile_args(lowered).get("num_devices", 1) or 1)


def kept_var_idx(lowered: jax.stages.Lowered) -> tuple[int, ...]:
    """Positions (among the flattened arguments) that ``@main`` takes: JAX prunes unused ones."""
    args = _compile_args(lowered)
    kept = args.get("kept_var_idx")
    if kept is None:
        return tuple(range(len(jax.tree_util.tree_leaves(lowered.in_avals))))
    return tuple(sorted(kept))


def host_callbacks(lowered: jax.stages.Lowered) -> int:
    """How many host callbacks (``jax.debug.print``, ``pure_callback``, ``io_callback``) the program calls."""
    return len(_compile_args(lowered).get("host_callbacks", ()) or ())


def in_avals(lowered: jax.stages.Lowered) -> tuple:
    """The flattened argument shapes and dtypes, every argument (pruned ones too)."""
    return tuple(jax.tree_util.tree_leaves(lowered.in_avals))


def out_avals(lowered: jax.stages.Lowered) -> tuple:
    return tuple(jax.tree_util.tree_leaves(lowered.out_info))


def platforms(lowered: jax.stages.Lowered) -> tuple[str, ...]:
    lowering = lowered._lowering
    found = getattr(lowering, "_platforms", None)
    if found:
        return tuple(found)
    backend = _compile_args(lowered).get("backend")
    return (backend.platform,) if backend is not None else ()


def donated(lowered: jax.stages.Lowered) -> tuple[int, ...]:
    """Positions (among the flattened arguments) the program donates: XLA may reuse their buffers
    for outputs, and JAX deletes the arrays passed there."""
    return tuple(i for i, info in enumerate(jax.tree_util.tree_leaves(lowered.args_info))
                 if getattr(info, "donated", False))


def undonated_call(lowered: jax.stages.Lowered, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` with a fresh copy of each array the program donates, so that calling it
    deletes the copies, never the user's arrays. Call once per execution."""
    positions = set(donated(lowered))
    if not positions:
        return args, kwargs
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    leaves = [jax.numpy.array(x, copy=True) if i in positions and isinstance(x, jax.Array) else x
              for i, x in enumerate(leaves)]
    return jax.tree_util.tree_unflatten(tree, leaves)


def portable_text(lowered: jax.stages.Lowered) -> str:
    """The lowered module's text (with locations) as ``jax.export`` writes it: through StableHLO's
    portable-artifact round trip, which hoists constants and drops attributes that hold their default
    values. Every greedy MLIR pass does the same, so without the round trip the first pass of any
    pipeline (and each pattern tried alone) would seem to change a program it leaves alone. The
    text as JAX printed it where the round trip is not possible. The lowering's own module goes in as
    bytecode (printing it and parsing the text back cost as much again: ~8 ms of 20 on the attention
    example); the round trip leaves it as it was. The module comes back in the lowering's own MLIR context, which
    has the dialects it needs: a fresh context costs ~3 ms to make."""
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import _jax
    from jax._src.lib.mlir.dialects import hlo

    try:
        module = lowered.compiler_ir("stablehlo")
        bytecode = jax_mlir.module_to_bytecode(module)
        target = hlo.get_version_from_compatibility_requirement(hlo.StablehloCompatibilityRequirement.WEEK_4)
        blob = _jax.mlir.serialize_portable_artifact(bytecode, target, xla_bridge.get_backend().serialize_with_sdy)
        back = _jax.mlir.deserialize_portable_artifact(blob, module.context)
        return jax_mlir.module_to_string(back, enable_debug_info=True)
    except Exception:  # noqa: BLE001 -- a module the portable format cannot carry: shown as JAX printed it
        return lowered.as_text(debug_info=True)


def compile_request(lowered: jax.stages.Lowered, options: dict) -> dict | None:
    """What another process needs to compile ``lowered`` exactly as ``lowered.compile(compiler_options=
    options)`` does here: the module's bytecode, the serialized ``CompileOptions`` JAX builds for it (the
    jit's own compiler options, the options given, the sharding propagation flags, the device
    assignment: the settings that reach XLA) and the devices' ids. None where that cannot be said: a
    program whose host callbacks XLA is handed as objects (not on CPU or GPU), symbolic shapes, a lowering
    of another kind, or JAX internals that moved -- the caller then compiles here."""
    import numpy as np
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.interpreters import pxla

    lowering = lowered._lowering
    args = _compile_args(lowered)
    try:
        # on CPU and GPU a host callback is a custom call that finds its function at run time, so a compile
        # elsewhere needs no function; elsewhere (send/recv callbacks) XLA is handed the functions themselves
        if args.get("host_callbacks") and args["backend"].platform not in ("cpu", "cuda", "rocm", "gpu"):
            return None
        if args.get("shape_poly_state") is not None and args["shape_poly_state"].uses_dim_vars:
            return None
        devices = lowering._device_list
        if devices is None:  # the devices are chosen at compile time
            return None
        placed = np.array([devices[i] for i in range(len(devices))], dtype=object)
        to_inputs, to_outputs = pxla.get_prop_to_input_output(args["in_shardings"], args["out_shardings"],
                                                              len(args["ordered_effects"]))
        kvs = {**dict(lowering._compiler_options_kvs), **options}
        built = pxla.create_compile_options(lowering._hlo, args["tuple_args"], to_inputs, to_outputs,
                                            args["backend"], placed, kvs)
        return {"module": jax_mlir.module_to_bytecode(lowering._hlo), "options": built.SerializeAsString(),
                "platform": args["backend"].platform, "device_ids": [int(d.id) for d in placed]}
    except Exception:  # noqa: BLE001 -- see above: compiled here instead
        return None


def host_array(leaf: Any):
    """An output or argument leaf as a numpy array: a typed PRNG key as its raw bits (numpy cannot
    hold JAX's key types), anything else as ``np.asarray`` gives it."""
    import numpy as np

    if jax.dtypes.issubdtype(getattr(leaf, "dtype", np.float32), jax.dtypes.extended):
        return np.asarray(jax.random.key_data(leaf))
    return np.asarray(leaf)


_LOWERINGS_WATCHED = threading.Lock()


@contextlib.contextmanager
def lowerings_seen():
    """Inside, every ``jax.stages.Traced.lower()`` call (a library's jit lowering through its inner ``jax.jit``) is
    seen: a list of (the Traced, the Lowered it made, when it began lowering). One watcher at a time; calls of
    other threads meanwhile are seen too, and told apart by the Lowered they made."""
    from jax._src import stages as jax_stages

    seen: list = []
    with _LOWERINGS_WATCHED:
        original = jax_stages.Traced.lower

        def lower(self, *a, **k):
            began = time.perf_counter()
            made = original(self, *a, **k)
            seen.append((self, made, began))
            return made

        jax_stages.Traced.lower = lower
        try:
            yield seen
        finally:
            jax_stages.Traced.lower = original
