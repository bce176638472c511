"""Run any MLIR stage on a chosen device and check its numbers against the unoptimized program.

The public route: the stage's module goes into the traced ``jax.export.Exported`` in place of the
original (``exported.swap_module``) and is called through ``Exported.call`` under ``jax.jit``, with the
arguments placed on the chosen device (or left on their mesh when they are sharded). Outputs keep the
user's pytree structure.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .errors import WorkbenchError
from .exported import exported_for_text, swap_module
from .trace import all_devices, resolve_device

__all__ = ["devices", "RunResult", "Timing", "Check", "LeafCheck", "run_stage", "compare_outputs", "REFERENCE"]

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
    path: str
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float
    tolerance: float  # allowed max_abs: rtol(dtype) * max |reference| (+ a floor for all-zero leaves)
    passed: bool


@dataclass(frozen=True)
class Check:
    """How a stage's outputs compare with the reference stage's, leaf by leaf."""

    reference: str
    leaves: tuple[LeafCheck, ...]

    @property
    def passed(self) -> bool:
        return all(leaf.passed for leaf in self.leaves)

    @property
    def max_abs(self) -> float:
        return max((leaf.max_abs for leaf in self.leaves), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((leaf.max_rel for leaf in self.leaves), default=0.0)

    def table(self):
        import pandas as pd

        return pd.DataFrame([leaf.__dict__ for leaf in self.leaves])

    def __repr__(self) -> str:
        bad = [leaf.path for leaf in self.leaves if not leaf.passed]
        state = "passed" if not bad else f"FAILED at {', '.join(bad[:5])}"
        return f"Check(vs {self.reference!r}: {state}, max_abs={self.max_abs:.3g}, max_rel={self.max_rel:.3g})"


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


def compare_outputs(got, want, reference: str = REFERENCE) -> Check:
    """Leaf-by-leaf comparison with a dtype-aware tolerance."""
    got_leaves, got_tree = jax.tree_util.tree_flatten_with_path(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten_with_path(want)
    if got_tree != want_tree:
        raise WorkbenchError(f"output structure differs from the reference: {got_tree} vs {want_tree}")
    out = []
    for (path, g), (_, w) in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        name = jax.tree_util.keystr(path) or "output"
        dtype = str(w.dtype)
        if g.shape != w.shape:
            out.append(LeafCheck(name, w.shape, dtype, float("inf"), float("inf"), 0.0, False))
            continue
        if dtype in _RTOL:
            g64, w64 = g.astype(np.complex128 if "complex" in dtype else np.float64), w.astype(
                np.complex128 if "complex" in dtype else np.float64)
            diff = np.abs(g64 - w64)
            both_nan = np.isnan(g64) & np.isnan(w64) if "complex" not in dtype else np.zeros(diff.shape, bool)
            diff = np.where(both_nan, 0.0, diff)
            scale = float(np.nanmax(np.abs(w64))) if w64.size and np.isfinite(np.nanmax(np.abs(w64))) else 1.0
            tol = _RTOL[dtype] * max(scale, np.finfo(np.float32).tiny) + (1e-30 if scale == 0 else 0.0)
            max_abs = float(np.nanmax(diff)) if diff.size else 0.0
            if np.isnan(diff).any():
                max_abs = float("inf")
            rel = diff / np.maximum(np.abs(w64), max(scale, 1e-30))
            max_rel = float(np.nanmax(rel)) if rel.size else 0.0
            out.append(LeafCheck(name, w.shape, dtype, max_abs, max_rel, tol, max_abs <= tol))
        else:
            mismatch = (g != w)
            n = int(mismatch.sum())
            max_abs = float(np.abs(g.astype(np.int64) - w.astype(np.int64)).max()) if n else 0.0
            out.append(LeafCheck(name, w.shape, dtype, max_abs, float(n > 0), 0.0, n == 0))
    return Check(reference, tuple(out))


def runnable_exported(ex, stage):
    """The Exported that runs ``stage`` of ``ex``; WorkbenchError for stages that cannot run."""
    if stage.error:
        raise WorkbenchError(f"stage {stage.name!r} failed ({stage.error.splitlines()[0]}); it has no module to run")
    if stage.group in ("xla", "backend"):
        raise WorkbenchError(
            f"stage {stage.name!r} is XLA {('HLO' if stage.group == 'xla' else 'backend')} text: JAX's public API runs "
            "StableHLO/MLIR modules only. Run the last MLIR stage: XLA compiles it into exactly these stages.")
    if stage.name == "jaxpr":
        raise WorkbenchError("the jaxpr stage is not a module; run 'stablehlo' (the same program, lowered)")
    source = stage.text_with_locations or stage.text
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
    if exported.nr_devices > 1:
        return args  # sharded: the arguments already live on their mesh
    return jax.device_put(args, device)


def run_stage(ex, stage, device: str = "cpu:0", repeat: int = 20, args=None) -> tuple[Any, Timing]:
    """Call the stage's module ``repeat`` times after a warm-up; returns (outputs, timing)."""
    exported = runnable_exported(ex, stage)
    if args is None:
        traced = ex.spec.traced
        args = traced.args if traced is not None else example_args(exported)
    dev = resolve_device(device)
    if exported.nr_devices == 1 and dev.platform not in exported.platforms:
        raise WorkbenchError(f"stage {stage.name!r} was lowered for {exported.platforms}, not {dev.platform}: "
                             f"explore with device={device!r} to run there")
    placed = _place(tuple(args), exported, dev)
    call = jax.jit(exported.call)
    try:
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
