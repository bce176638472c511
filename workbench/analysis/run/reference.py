"""The evaluations the numeric check measures a stage against, besides the as-lowered outputs.

``reference_evaluations`` tries, in order: the as-lowered module promoted to float64
(``ir.promote.promote_to_f64``) run through the same route as every stage (``execute.run_stage``) on
the same arguments; the traced function evaluated with JAX's float64 mode (``float64_reference``) --
both on the CPU where the device has no float64 of its own (a TPU: ``backends.float64_device``);
and where neither exists, the as-lowered program run on inputs moved by one ulp (``nudged_outputs``),
the yardstick of its own noise. ``analysis.run.check`` says why each is sound and how it is used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ...backends import float64_device
from ...errors import WorkbenchError
from ...pipeline.array_limit import ArrayTooLargeError, Planned, refuse_large
from ...pipeline.program import host_array
from ...ir.promote import computed_in, promote_to_f64
from ...pipeline.exported import prepare_for_jax
from ...pipeline.trace import resolve_device
from ...stages import Stage
from .check import NOISE_TRIES, Reference, ReferenceSource, dtype_name, machine_eps
from .execute import example_args, run_stage, runnable_exported

__all__ = ["Evaluations", "reference_evaluations", "promoted_outputs", "float64_reference", "nudged_outputs",
           "nudged_arguments", "WIDE_OPTIONS"]

# How a module promoted to float64 is compiled: LLVM at -O0 and XLA's older fusion emitters. Its values are a
# yardstick whose own rounding (1e-16) is far below any float32 or narrower tolerance, so how fast its code runs
# does not matter, and on the tour's attention example this compiles 6x faster than XLA's defaults (0.2 CPU
# seconds against 1.2; its drift search's tap module 0.3 against 2.1), values equal but for float64 rounding.
WIDE_OPTIONS = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


@dataclass(frozen=True)
class Evaluations:
    """What ``reference_evaluations`` found for one reference stage, device and set of arguments."""

    wide: Any = None
    source: ReferenceSource = "as-lowered"
    note: str = ""  # why there is no float64 evaluation
    nudged: tuple = ()
    computed: tuple[str | None, ...] | None = None
    why_not_promoted: str = ""

    def reference(self, label: str, lowered, title: str) -> Reference:
        return Reference(label, lowered, self.wide, self.note, title, self.source, self.nudged, self.computed,
                         self.why_not_promoted)


def reference_evaluations(ex, stage: Stage, device: str, args) -> Evaluations:
    """The float64 evaluation of ``stage`` (the as-lowered program of ``ex``) on ``args`` (None: the
    ones it was explored with), or in its place the program run on nudged inputs; each run on
    ``device`` with XLA's default options."""
    text = stage.text_with_locations or stage.text
    try:
        text = prepare_for_jax(text)
    except WorkbenchError:
        pass  # promote_to_f64 says what it cannot read
    computed = computed_in(text)
    traced = ex.spec.traced
    sharded = traced is not None and traced.nr_devices > 1  # stays on its mesh
    wide_device = device if sharded else float64_device(device)
    wide, why_not_promoted = promoted_outputs(ex, stage, text, wide_device, args)
    if wide is not None:
        return Evaluations(wide, "promoted", computed=computed)
    dynamic = traced.args if (traced is not None and args is None) else args
    wide, why_not_traced = float64_reference(traced, wide_device, dynamic)
    if wide is not None:
        return Evaluations(wide, "traced", computed=computed, why_not_promoted=why_not_promoted)
    if wide_device != device:  # the promoted module is not for that platform (a TPU's host callbacks: send/recv)
        wide, _ = promoted_outputs(ex, stage, text, device, args)
        if wide is not None:
            return Evaluations(wide, "promoted", computed=computed)
    note = f"the module cannot be promoted to float64: {why_not_promoted}; and {why_not_traced}"
    nudged, why_not_nudged = nudged_outputs(ex, stage, device, args)
    if why_not_nudged:
        note += f"; {why_not_nudged}"
    return Evaluations(None, "as-lowered", note, nudged, computed, why_not_promoted)


def promoted_outputs(ex, stage: Stage, text: str, device: str, args) -> tuple[Any, str]:
    """(outputs of ``text`` promoted to float64, "") or (None, why there are none)."""
    promotion = promote_to_f64(text)
    if not promotion.ok:
        return None, promotion.refused
    wide = Stage(f"{stage.name} promoted to float64", stage.group, promotion.text, "promote-to-f64", True, None,
                 stage.name)
    try:
        outputs, _ = run_stage(ex, wide, device, 1, args, xla_options=WIDE_OPTIONS)
    except WorkbenchError as e:
        return None, f"the promoted module did not run ({str(e).splitlines()[0][:300]})"
    return jax.tree_util.tree_map(host_array, outputs), ""


# ---- the traced function in float64 --------------------------------------------------------------

_RANDOM_PRIMITIVES = {"random_bits", "threefry2x32", "rng_bit_generator", "rng_uniform", "random_seed"}


def _subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _subjaxprs(v)


def _eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in _subjaxprs(value):
                yield from _eqns(sub)


def _narrow(name: str | None) -> bool:
    return name is not None and name.startswith(("float", "bfloat", "complex")) and machine_eps(name) > 1e-12


def _why_not_wide(jaxpr) -> str:
    """Why a float64 trace is not the same computation in float64 ("" when it is)."""
    narrow: set[str] = set()
    for eqn in _eqns(jaxpr):
        if eqn.primitive.name in _RANDOM_PRIMITIVES:
            return ("the function draws random numbers, and with float64 enabled JAX draws different ones, "
                    "so a float64 evaluation is not the same computation")
        for v in eqn.outvars:
            name = dtype_name(getattr(getattr(v, "aval", None), "dtype", None))
            if _narrow(name):
                narrow.add(name)
    if narrow:
        return (f"even with float64 enabled the function computes in {', '.join(sorted(narrow))} (explicit "
                "dtypes), so there is no wider evaluation to compare with")
    return ""


def _wide(dtype: str):
    return np.complex128 if dtype.startswith("complex") else np.float64


def _copied_wide(leaf) -> bool:
    """Whether ``_upcast`` makes a float64 (complex128) copy of ``leaf``."""
    if not hasattr(leaf, "dtype") or not hasattr(leaf, "shape"):
        return False  # Python numbers: float64 under x64 by themselves
    dtype = dtype_name(leaf.dtype)  # None for typed PRNG keys: not numbers to widen
    return _narrow(dtype) or dtype in ("float64", "complex128")


def _upcast(leaf, device, sharded: bool):
    if not _copied_wide(leaf):
        return leaf
    dtype = dtype_name(leaf.dtype)
    value = np.asarray(leaf).astype(_wide(dtype))
    if sharded and isinstance(leaf, jax.Array):
        return jax.device_put(value, leaf.sharding)
    return jax.device_put(value, device)


def float64_reference(traced, device, dynamic_args) -> tuple[Any, str]:
    """The traced function evaluated in float64 on ``device`` (x64 enabled, floating inputs upcast):
    (outputs as numpy arrays, "") or (None, why there is none)."""
    if traced is None or traced.fn is None:
        return None, "the module was given as text, so there is no function to evaluate in float64"
    if traced.library_jit:  # its call returns the function's outputs and writes state back into the user's objects
        return None, (f"{traced.how} returns its outputs through its own wrapper, not as the compiled program "
                      "does, so the function is not evaluated again in float64")
    if not any(_narrow(dtype_name(a.dtype)) for a in traced.out_avals):
        return None, ("no output is floating point narrower than float64, so there is no wider dtype to "
                      "evaluate the function in")
    full = traced.full_args(tuple(dynamic_args))
    sharded = traced.nr_devices > 1
    dev = resolve_device(device)
    leaves = jax.tree_util.tree_leaves([a for i, a in enumerate(full) if i not in traced.static_argnums])
    widened = [Planned(f"argument leaf {i} widened", leaf.shape, _wide(dtype_name(leaf.dtype)))
               for i, leaf in enumerate(leaves) if _copied_wide(leaf)]
    try:
        refuse_large(widened, "the float64 reference would copy the floating arguments to float64")
    except ArrayTooLargeError as e:
        return None, str(e)
    try:
        with jax.enable_x64(True):
            wide = tuple(a if i in traced.static_argnums else
                         jax.tree_util.tree_map(lambda x: _upcast(x, dev, sharded), a) for i, a in enumerate(full))
            closed = jax.make_jaxpr(traced.fn, static_argnums=traced.static_argnums)(*wide)
            why = _why_not_wide(closed.jaxpr)
            if why:
                return None, why
            out = jax.jit(traced.fn, static_argnums=traced.static_argnums)(*wide)
            return jax.tree_util.tree_map(host_array, out), ""
    except Exception as e:  # the function cannot be traced in float64 (a dtype assertion, an op without f64)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, f"the function cannot be evaluated in float64 ({type(e).__name__}: {first[:200]})"


# ---- the program's own noise ---------------------------------------------------------------------


def _arguments(ex, stage: Stage, args) -> tuple:
    """The arguments ``run_stage`` runs ``stage`` with when given ``args``."""
    if args is not None:
        return tuple(args)
    traced, loaded = ex.spec.traced, ex.spec.loaded
    if traced is not None:
        return tuple(traced.args)
    if loaded is not None and loaded.args:
        return tuple(loaded.args)
    return example_args(runnable_exported(ex, stage))


def _nudged(leaf, rng: np.random.Generator):
    """(``leaf`` with each finite nonzero element moved one ulp up or down at random, whether any
    moved); leaves that are not floating arrays come back as they are."""
    dtype = getattr(leaf, "dtype", None)
    if dtype is None or not hasattr(leaf, "shape") or not jax.dtypes.issubdtype(dtype, np.inexact):
        return leaf, False
    a = np.array(leaf)
    real = a.view(a.real.dtype) if np.iscomplexobj(a) else a
    bits = real.view(f"u{real.dtype.itemsize}")
    movable = np.isfinite(real) & (real != 0)
    up = rng.integers(0, 2, size=real.shape).astype(bool)
    # in sign-magnitude floats, the next bit pattern is one ulp further from zero, the previous one nearer
    moved = np.where(movable, np.where(up, bits + 1, bits - 1), bits).astype(bits.dtype).view(real.dtype)
    moved = np.where(np.isfinite(moved), moved, real).astype(real.dtype)
    value = moved.view(a.dtype).reshape(a.shape)
    if not movable.any():
        return leaf, False
    if isinstance(leaf, jax.Array):
        return jax.device_put(value, leaf.sharding), True
    return value, True


def _nudge_copies(dtype) -> int:
    """Arrays of the leaf's size that ``_nudged`` holds at once, at most: its copy, the masks and bit
    patterns, and the int64 coin flips (8 bytes an element whatever the dtype). Measured with
    tracemalloc: 4.3 (float64), 4.5 (float32, complex64), 6.0 (float16, bfloat16), 11.0 (float8)."""
    real = np.dtype(dtype).itemsize // (2 if jax.dtypes.issubdtype(dtype, np.complexfloating) else 1)
    return 4 + 8 // max(1, real)


def _refuse_nudging(ex, stage: Stage, values) -> None:
    """ArrayTooLargeError when the nudged copies of the floating inputs and the outputs of the
    ``NOISE_TRIES`` runs (kept until the check) would pass ``array_limit()``."""
    floating = [Planned(f"argument leaf {i} moved by one ulp", leaf.shape, leaf.dtype, _nudge_copies(leaf.dtype))
                for i, leaf in enumerate(jax.tree_util.tree_leaves(values))
                if hasattr(leaf, "shape") and getattr(leaf, "dtype", None) is not None
                and jax.dtypes.issubdtype(leaf.dtype, np.inexact)]
    traced = ex.spec.traced
    outs = traced.out_avals if traced is not None else runnable_exported(ex, stage).out_avals
    refuse_large(floating + [Planned(f"output {i} of the {NOISE_TRIES} runs on nudged inputs", a.shape, a.dtype,
                                     NOISE_TRIES) for i, a in enumerate(outs)],
                 "measuring the program's noise would copy its inputs and keep the outputs of several runs")


def nudged_arguments(ex, stage: Stage, args, tries: int) -> tuple[list, str]:
    """(``tries`` copies of the arguments a run of ``stage`` takes, each floating input moved by one ulp as
    the check's noise rule moves them, seeded; "") or ([], why there are none)."""
    try:
        values = _arguments(ex, stage, args)
        _refuse_nudging(ex, stage, values)
    except (WorkbenchError, ArrayTooLargeError) as e:
        return [], f"the program has no arguments to move by one ulp ({str(e).splitlines()[0][:300]})"
    rng = np.random.default_rng(0)
    copies = []
    for _ in range(tries):
        leaves, tree = jax.tree_util.tree_flatten(values)
        nudged = [_nudged(leaf, rng) for leaf in leaves]
        if not any(moved for _, moved in nudged):
            return [], "the program has no floating input to move by one ulp"
        copies.append(jax.tree_util.tree_unflatten(tree, [v for v, _ in nudged]))
    return copies, ""


def nudged_outputs(ex, stage: Stage, device: str, args) -> tuple[tuple, str]:
    """(``NOISE_TRIES`` output trees of ``stage`` run on inputs moved by one ulp, "") or ((), why not)."""
    try:
        values = _arguments(ex, stage, args)
    except WorkbenchError as e:
        return (), f"the program has no arguments to move by one ulp ({str(e).splitlines()[0][:300]})"
    try:
        _refuse_nudging(ex, stage, values)
    except ArrayTooLargeError as e:
        return (), str(e)
    rng = np.random.default_rng(0)  # the same nudges on every call: a check is reproducible
    outputs = []
    for _ in range(NOISE_TRIES):
        leaves, tree = jax.tree_util.tree_flatten(values)
        nudged = [_nudged(leaf, rng) for leaf in leaves]
        if not any(moved for _, moved in nudged):
            return (), ("the program has no floating input to move by one ulp, so the per-dtype tolerance "
                        "of the narrowest type it computes in decides")
        try:
            out, _ = run_stage(ex, stage, device, 1, jax.tree_util.tree_unflatten(tree, [v for v, _ in nudged]),
                               xla_options=())
        except WorkbenchError as e:
            return (), f"the program did not run on inputs moved by one ulp ({str(e).splitlines()[0][:300]})"
        outputs.append(jax.tree_util.tree_map(host_array, out))
    return tuple(outputs), ""
