"""Run any MLIR stage on a chosen device and check its numbers against the unoptimized program.

The public route: the stage's module goes into the traced ``jax.export.Exported`` in place of the
original (``exported.swap_module``) and is called through ``Exported.call`` under ``jax.jit``, with the
arguments placed on the chosen device (or left on their mesh when they are sharded). Outputs keep the
user's pytree structure.
"""
from __future__ import annotations

import dataclasses
import hashlib
import statistics
import time
from dataclasses import dataclass
from typing import Any, Literal

import jax
import numpy as np

from ..errors import WorkbenchError
from ..pipeline.exported import exported_for_text, swap_module
from ..pipeline.program import relowered, undonated_call
from ..pipeline.trace import all_devices, resolve_device
from ..pipeline.xla import check_options
from ..pipeline.xla_probe import guard_compile

__all__ = ["devices", "RunResult", "Timing", "Check", "LeafCheck", "Reference", "run_stage", "compare_outputs",
           "check_outputs", "float64_reference", "args_key", "REFERENCE"]

REFERENCE = "stablehlo"  # the stage every other stage's numbers are checked against

# Per-dtype tolerances: an optimizing rewrite may reassociate floating-point arithmetic, so a
# stage may differ from the reference by rounding; integers and booleans must match exactly.
_RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2, "complex64": 1e-4, "complex128": 1e-9}


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
    """Wall times per repeat after one warm-up call (seconds)."""

    times: tuple[float, ...]

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
class LeafCheck:
    """One output leaf against the reference.

    ``max_abs``/``max_rel`` are the stage's errors against the reference (the float64 evaluation
    where there is one, else the as-lowered stage); ``lowered_abs`` is the as-lowered stage's own
    error against the float64 reference (None without one); ``tolerance`` is the largest
    ``max_abs`` that passes, by the rule in ``check_outputs``.
    """

    path: str
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float
    tolerance: float
    passed: bool
    lowered_abs: float | None = None


ReferenceKind = Literal["float64", "stage"]


@dataclass(frozen=True)
class Check:
    """How a stage's outputs compare with the reference, leaf by leaf.

    ``kind`` says which reference decided floating-point leaves: "float64" (the traced function
    evaluated in float64, each stage measured against it next to the as-lowered program's own
    error), or "stage" (the as-lowered stage, with a per-dtype tolerance); ``note`` says why there
    was no float64 reference.
    """

    reference: str
    leaves: tuple[LeafCheck, ...]
    kind: ReferenceKind = "stage"
    note: str = ""

    @property
    def passed(self) -> bool:
        return all(leaf.passed for leaf in self.leaves)

    @property
    def max_abs(self) -> float:
        return max((leaf.max_abs for leaf in self.leaves), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((leaf.max_rel for leaf in self.leaves), default=0.0)

    @property
    def lowered_abs(self) -> float | None:
        """The as-lowered program's largest error against the float64 reference (None without one)."""
        errs = [leaf.lowered_abs for leaf in self.leaves if leaf.lowered_abs is not None]
        return max(errs) if errs else None

    def table(self):
        import pandas as pd

        return pd.DataFrame([leaf.__dict__ for leaf in self.leaves])

    def __repr__(self) -> str:
        bad = [leaf.path for leaf in self.leaves if not leaf.passed]
        state = "passed" if not bad else f"FAILED at {', '.join(bad[:5])}"
        low = "" if self.lowered_abs is None else f" (as lowered: {self.lowered_abs:.3g})"
        return (f"Check(vs {self.reference!r}: {state}, max_abs={self.max_abs:.3g}{low}, "
                f"max_rel={self.max_rel:.3g})")


@dataclass(frozen=True)
class Reference:
    """What a stage's outputs are checked against: the as-lowered stage's outputs, and the traced
    function's outputs evaluated in float64 (``wide``; None where there is none, ``note`` says why)."""

    label: str  # the as-lowered stage, e.g. "stablehlo" (or "f:stablehlo" for another Exploration)
    lowered: Any
    wide: Any = None
    note: str = ""
    title: str = ""  # the traced function's name

    @property
    def wide_label(self) -> str:
        return f"{self.title or 'the function'} in float64"

    @property
    def kind(self) -> ReferenceKind:
        return "float64" if self.wide is not None else "stage"


@dataclass(frozen=True)
class RunResult:
    stage: str
    device: str
    outputs: Any
    timing: Timing
    check: Check | None

    @property
    def seconds(self) -> tuple[float, ...]:
        return self.timing.times

    def __repr__(self) -> str:
        return f"RunResult({self.stage!r} on {self.device}: {self.timing!r}, {self.check!r})"


_WIDE = {"float16": np.float64, "bfloat16": np.float64, "float32": np.float64, "float64": np.float64,
         "complex64": np.complex128, "complex128": np.complex128}
# The dtypes a float64 evaluation is wider than, with their unit roundoff.
_EPS = {"float16": float(np.finfo(np.float16).eps), "bfloat16": 2.0 ** -7,
        "float32": float(np.finfo(np.float32).eps), "complex64": float(np.finfo(np.float32).eps)}


def _dtype_name(dt) -> str | None:
    """numpy's name of a dtype ("float32", "bfloat16"); None for none, or JAX's extended dtypes (PRNG keys)."""
    if dt is None:
        return None
    try:
        return str(np.dtype(dt))
    except TypeError:
        return None


def _leaves(tree) -> list[tuple[str, np.ndarray]]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(path) or "output", np.asarray(leaf)) for path, leaf in leaves]


def _same_structure(got, want) -> None:
    got_tree, want_tree = jax.tree_util.tree_structure(got), jax.tree_util.tree_structure(want)
    if got_tree != want_tree:
        raise WorkbenchError(f"output structure differs from the reference: {got_tree} vs {want_tree}")


def compare_outputs(got, want, reference: str = REFERENCE) -> Check:
    """Leaf-by-leaf comparison with the as-lowered outputs ``want``, with a per-dtype tolerance.

    An optimizing rewrite may reassociate floating-point arithmetic, so a floating leaf passes when
    ``max |got - want| <= rtol(dtype) * max |want|``; integers and booleans must match exactly.
    This is the check where no float64 reference exists (see ``check_outputs``).
    """
    _same_structure(got, want)
    out = []
    for (name, g), (_, w) in zip(_leaves(got), _leaves(want)):
        dtype = str(w.dtype)
        if g.shape != w.shape:
            out.append(LeafCheck(name, w.shape, dtype, float("inf"), float("inf"), 0.0, False))
        elif dtype in _RTOL:
            out.append(_dtype_rule(name, g, w, dtype))
        else:
            out.append(_exact_rule(name, g, w, dtype))
    return Check(reference, tuple(out))


def _exact_rule(name: str, g: np.ndarray, w: np.ndarray, dtype: str) -> LeafCheck:
    mismatch = g != w
    n = int(mismatch.sum())
    max_abs = float(np.abs(g.astype(np.int64) - w.astype(np.int64)).max()) if n else 0.0
    return LeafCheck(name, w.shape, dtype, max_abs, float(n > 0), 0.0, n == 0)


def _dtype_rule(name: str, g: np.ndarray, w: np.ndarray, dtype: str) -> LeafCheck:
    wide = _WIDE[dtype]
    g64, w64 = g.astype(wide), w.astype(wide)
    diff = np.abs(g64 - w64)
    both_nan = np.isnan(g64) & np.isnan(w64)
    diff = np.where(both_nan, 0.0, diff)
    scale = _scale(w64)
    tol = _RTOL[dtype] * max(scale, np.finfo(np.float32).tiny) + (1e-30 if scale == 0 else 0.0)
    max_abs = float("inf") if np.isnan(diff).any() else (float(np.max(diff)) if diff.size else 0.0)
    rel = diff / np.maximum(np.abs(w64), max(scale, 1e-30))
    rel = rel[~np.isnan(rel)]  # a NaN on one side only is already an infinite max_abs
    max_rel = float(rel.max()) if rel.size else (float("inf") if np.isnan(diff).any() else 0.0)
    return LeafCheck(name, w.shape, dtype, max_abs, max_rel, tol, max_abs <= tol)


def _scale(a: np.ndarray) -> float:
    """The largest finite magnitude of ``a`` (0.0 when it has none)."""
    finite = np.abs(a[np.isfinite(a)]) if a.size else a
    return float(finite.max()) if finite.size else 0.0


def _same_class(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: both NaN, or both the same infinity, or both finite."""
    return (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & np.isinf(b) & (np.sign(a.real) == np.sign(b.real))) | (
        np.isfinite(a) & np.isfinite(b))


def _float64_rule(name: str, g: np.ndarray, low: np.ndarray, ref: np.ndarray, dtype: str) -> LeafCheck:
    """The stage ``g`` and the as-lowered program ``low`` (both in ``dtype``) against ``ref`` (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _float64_leaf(name, g, low, ref, dtype)


def _float64_leaf(name: str, g: np.ndarray, low: np.ndarray, ref: np.ndarray, dtype: str) -> LeafCheck:
    wide = _WIDE[dtype]
    g, low, ref = g.astype(wide), low.astype(wide), ref.astype(wide)
    eps = _EPS[dtype]
    finite = np.isfinite(g) & np.isfinite(low) & np.isfinite(ref)
    err_stage = float(np.max(np.abs(g - ref)[finite])) if finite.any() else 0.0
    err_lowered = float(np.max(np.abs(low - ref)[finite])) if finite.any() else 0.0
    scale = _scale(ref)
    tol = max(4.0 * err_lowered + 8.0 * eps * scale, _RTOL[dtype] * scale + err_lowered)
    ok = err_stage <= tol
    # Where the as-lowered program or the reference is not finite (overflow, NaN by design), the
    # stage must do what the program as lowered does, or be finite and within tolerance of a
    # finite reference (a rewrite that avoids an overflow is more accurate, not wrong).
    special = ~finite
    if special.any():
        both_finite = np.isfinite(g) & np.isfinite(low)  # on special elements: the reference is not finite
        fine = (_same_class(g, low) & ~both_finite) | (
            both_finite & (np.abs(g - low) <= _RTOL[dtype] * max(_scale(low), 1e-30)))
        fine |= np.isfinite(g) & np.isfinite(ref) & (np.abs(g - ref) <= tol)
        if not fine[special].all():
            ok, err_stage = False, float("inf")
    rel = np.abs(g - ref)[finite] / max(scale, 1e-30) if finite.any() else np.zeros(0)
    max_rel = float(rel.max()) if rel.size and np.isfinite(err_stage) else (0.0 if ok else float("inf"))
    return LeafCheck(name, low.shape, dtype, err_stage, max_rel, tol, ok, lowered_abs=err_lowered)


def check_outputs(got, ref: Reference) -> Check:
    """Check a stage's outputs ``got`` against ``ref``.

    With a float64 reference, each floating leaf is measured twice against it: the stage's error
    ``err_stage = max |stage - ref64|`` and the as-lowered program's own ``err_lowered = max |lowered
    - ref64|`` (over the elements where all three are finite). The stage passes when

        err_stage <= max(4 * err_lowered + 8 * eps(dtype) * scale,  rtol(dtype) * scale + err_lowered)

    with ``scale = max |ref64|``. Why: ``err_lowered`` is the rounding error of one valid evaluation
    order in the stage's dtype, and a rewrite that reassociates, fuses or reorders is another
    evaluation order whose rounding error is of the same size but not the same: the factor 4 leaves
    room for that. ``8 eps * scale`` (a few ulp of the output's magnitude) keeps a stage passing
    when the lowered program happens to be exact (``err_lowered == 0``). The second term makes the
    rule never stricter than the per-dtype check against the as-lowered outputs, since
    ``|stage - ref64| <= |stage - lowered| + err_lowered`` (the triangle inequality). An
    ill-conditioned output (a near-zero gradient of a near-constant loss) has an ``err_lowered``
    as large as the output itself, so rounding noise passes, while a wrong result (a changed
    constant, a dropped term) moves the output far more than rounding does and fails.

    Without a float64 reference, or for a leaf whose float64 evaluation is missing, floating leaves
    are compared with the as-lowered outputs at the per-dtype tolerance (``compare_outputs``).
    Integer and boolean leaves always match the as-lowered outputs exactly.
    """
    if ref.wide is None:
        check = compare_outputs(got, ref.lowered, ref.label)
        return dataclasses.replace(check, note=ref.note)
    _same_structure(got, ref.lowered)
    out = []
    for (name, g), (_, low), (_, w) in zip(_leaves(got), _leaves(ref.lowered),
                                           _leaves(ref.wide)):
        dtype = str(low.dtype)
        if g.shape != low.shape:
            out.append(LeafCheck(name, low.shape, dtype, float("inf"), float("inf"), 0.0, False))
        elif dtype in _EPS and w.shape == low.shape:
            out.append(_float64_rule(name, g, low, w, dtype))
        elif dtype in _RTOL:
            out.append(_dtype_rule(name, g, low, dtype))
        else:
            out.append(_exact_rule(name, g, low, dtype))
    return Check(ref.wide_label, tuple(out), "float64")


# ---- the float64 reference -----------------------------------------------------------------------

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


def _why_not_wide(jaxpr) -> str:
    """Why a float64 trace is not the same computation in float64 ("" when it is)."""
    narrow: set[str] = set()
    for eqn in _eqns(jaxpr):
        if eqn.primitive.name in _RANDOM_PRIMITIVES:
            return ("the function draws random numbers, and with float64 enabled JAX draws different ones, "
                    "so a float64 evaluation is not the same computation")
        for v in eqn.outvars:
            name = _dtype_name(getattr(getattr(v, "aval", None), "dtype", None))
            if name in _EPS:
                narrow.add(name)
    if narrow:
        return (f"even with float64 enabled the function computes in {', '.join(sorted(narrow))} (explicit "
                "dtypes), so there is no wider evaluation to compare with")
    return ""


def _upcast(leaf, device, sharded: bool):
    if not hasattr(leaf, "dtype") or not hasattr(leaf, "shape"):
        return leaf  # Python numbers: float64 under x64 by themselves
    dtype = _dtype_name(leaf.dtype)  # None for typed PRNG keys: not numbers to widen
    if dtype not in _WIDE:
        return leaf
    value = np.asarray(leaf).astype(_WIDE[dtype])
    if sharded and isinstance(leaf, jax.Array):
        return jax.device_put(value, leaf.sharding)
    return jax.device_put(value, device)


def float64_reference(traced, device, dynamic_args) -> tuple[Any, str]:
    """The traced function evaluated in float64 on ``device`` (x64 enabled, floating inputs upcast):
    (outputs as numpy arrays, "") or (None, why there is none)."""
    if traced is None or traced.fn is None:
        return None, "the module was given as text, so there is no function to evaluate in float64"
    if not any(_dtype_name(a.dtype) in _EPS for a in traced.out_avals):
        return None, ("no output is floating point narrower than float64, so there is no wider dtype to "
                      "evaluate the function in")
    full = traced.full_args(tuple(dynamic_args))
    sharded = traced.nr_devices > 1
    dev = resolve_device(device)
    try:
        with jax.enable_x64(True):
            wide = tuple(a if i in traced.static_argnums else
                         jax.tree_util.tree_map(lambda x: _upcast(x, dev, sharded), a) for i, a in enumerate(full))
            closed = jax.make_jaxpr(traced.fn, static_argnums=traced.static_argnums)(*wide)
            why = _why_not_wide(closed.jaxpr)
            if why:
                return None, why
            out = jax.jit(traced.fn, static_argnums=traced.static_argnums)(*wide)
            return jax.tree_util.tree_map(np.asarray, out), ""
    except Exception as e:  # the function cannot be traced in float64 (a dtype assertion, an op without f64)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, f"the function cannot be evaluated in float64 ({type(e).__name__}: {first[:200]})"


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


def _runnable_source(ex, stage) -> str:
    """The module text of ``stage`` that JAX can run; WorkbenchError for stages that cannot run."""
    if stage.error:
        raise WorkbenchError(f"stage {stage.name!r} failed ({stage.error.splitlines()[0]}); it has no module to run")
    if stage.group in ("xla", "backend"):
        raise WorkbenchError(
            f"stage {stage.name!r} is XLA {('HLO' if stage.group == 'xla' else 'backend')} text: JAX's public API runs "
            "StableHLO/MLIR modules only. Run the last MLIR stage: XLA compiles it into exactly these stages.")
    if stage.name == "jaxpr":
        raise WorkbenchError("the jaxpr stage is not a module; run 'stablehlo' (the same program, lowered)")
    return stage.text_with_locations or stage.text


def runnable_exported(ex, stage):
    """The ``jax.export.Exported`` that runs ``stage`` of ``ex`` (for features that ship the program
    serialized); WorkbenchError for stages that cannot run or programs jax.export cannot serialize."""
    source = _runnable_source(ex, stage)
    traced = ex.spec.traced
    platform = resolve_device(ex.spec.device).platform
    try:
        return swap_module(traced.exported, source) if traced is not None else exported_for_text(source, platform)
    except WorkbenchError as e:
        raise WorkbenchError(f"stage {stage.name!r} cannot run: {e}") from None


def example_args(exported, seed: int = 0) -> tuple:
    """Seeded random arguments matching an Exported's input shapes, for modules given as text."""
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


def _place(args, exported, device):
    if exported is not None and exported.nr_devices > 1:
        return args  # sharded: the arguments already live on their mesh
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, device) if isinstance(x, (jax.Array, np.ndarray)) else x,
                                  args)


def run_stage(ex, stage, device: str = "cpu:0", repeat: int = 20, args=None,
              xla_options=None) -> tuple[Any, Timing]:
    """Call the stage's module ``repeat`` times after a warm-up; returns (outputs, timing). It is compiled
    with ``xla_options`` (default: the Exploration's, so a run follows its XLA toggles; ``()``: XLA's
    defaults); a compile with disabled passes is tried in a child process first (XLA may abort).

    A traced function's stage runs as the user's own jit would run it (``pipeline.program``): its
    host callbacks fire, and a donated argument is copied before each call, so the user's arrays
    live on. ``args`` are the traced positional arguments (static ones left out), as given to explore.
    """
    options = check_options(dict(ex.spec.xla_options if xla_options is None else xla_options))
    traced = ex.spec.traced
    if traced is None:
        return _run_exported(ex, stage, device, repeat, args, options)
    source = _runnable_source(ex, stage)
    dev = resolve_device(device)
    if traced.nr_devices == 1 and traced.platforms and dev.platform not in traced.platforms:
        raise WorkbenchError(f"stage {stage.name!r} was lowered for {list(traced.platforms)}, not {dev.platform}: "
                             f"explore with device={device!r} to run there")
    try:
        lowered = relowered(traced.lowered, source)
    except WorkbenchError as e:
        raise WorkbenchError(f"stage {stage.name!r} cannot run: {e}") from None
    call_args, call_kwargs = traced.executable_args(None if args is None else tuple(args))
    if traced.nr_devices == 1:
        call_args, call_kwargs = _place((call_args, call_kwargs), None, dev)
    try:
        guard_compile(source, device, options, ex.spec.timeout, partitions=traced.nr_devices)
        compiled = lowered.compile(compiler_options=options or None)
        a, k = undonated_call(lowered, call_args, call_kwargs)
        outputs = jax.block_until_ready(compiled(*a, **k))
        times = []
        for _ in range(max(1, repeat)):
            a, k = undonated_call(lowered, call_args, call_kwargs)
            t = time.perf_counter()
            jax.block_until_ready(compiled(*a, **k))
            times.append(time.perf_counter() - t)
    except WorkbenchError:
        raise
    except Exception as e:
        raise WorkbenchError(f"stage {stage.name!r} did not run on {device}: {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return outputs, Timing(tuple(times))


def _run_exported(ex, stage, device: str, repeat: int, args, options: dict) -> tuple[Any, Timing]:
    """A module given as text (or loaded): run through ``jax.export`` with its ``@main``'s signature."""
    exported = runnable_exported(ex, stage)
    if args is None:
        loaded = ex.spec.loaded
        if loaded is not None and loaded.args:  # saved with its arrays: the values it was explored with
            args = loaded.args
        else:
            args = example_args(exported)
    dev = resolve_device(device)
    if exported.nr_devices == 1 and dev.platform not in exported.platforms:
        raise WorkbenchError(f"stage {stage.name!r} was lowered for {exported.platforms}, not {dev.platform}: "
                             f"explore with device={device!r} to run there")
    placed = _place(tuple(args), exported, dev)
    call = jax.jit(exported.call)
    try:
        # disabled passes and sharded modules can make XLA abort: guard_compile tries those in a child first
        guard_compile(stage.text_with_locations or stage.text, device, options, ex.spec.timeout,
                      partitions=exported.nr_devices)
        if options:
            call = call.lower(*placed).compile(compiler_options=options)
        outputs = jax.block_until_ready(call(*placed))
        times = []
        for _ in range(max(1, repeat)):
            t = time.perf_counter()
            jax.block_until_ready(call(*placed))
            times.append(time.perf_counter() - t)
    except WorkbenchError:
        raise
    except Exception as e:
        raise WorkbenchError(f"stage {stage.name!r} did not run on {device}: {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return outputs, Timing(tuple(times))
