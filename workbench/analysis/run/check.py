"""The numeric check: is a stage's output what the program computes, up to rounding?

A stage is checked against the program as lowered ("stablehlo", or "input" for text), and the
question is whether it is materially less accurate than that program. Accuracy needs something more
accurate to measure against, so the check uses, in this order, the first that exists
(``Reference.source``):

- "promoted": the as-lowered module itself with its floating-point arithmetic promoted to float64 at
  the IR level (``workbench.ir.promote``), run on the same arguments. It is the same computation --
  the same random bits, the same branches, the same explicit dtypes -- only without float32's (or
  bfloat16's) rounding, so it exists for library code that pins float32 everywhere, for programs that
  draw random numbers, and for modules given as text.
- "traced": the traced function evaluated again with JAX's float64 mode, where the promotion is
  refused (a host callback, a LAPACK custom call) and the function computes the same thing in float64.
- "as-lowered": no wider evaluation. The program's own noise is measured instead: it is run again with
  every floating input moved by one ulp (see ``noise`` in ``check_outputs``).

Each leaf's tolerance follows the precision the program actually computes in: the narrowest floating
type that rounded anything the output depends on (``ir.promote.computed_in``), not the output's dtype;
a float32 output of a bfloat16 scan is held to bfloat16's rounding. ``check_outputs`` states the rules;
why they are what they are:

- float64: the as-lowered program's error against the float64 evaluation is the rounding error of one
  valid evaluation order at precision c, and a rewrite that reassociates, fuses or reorders is another
  evaluation order whose rounding error is of the same size but not the same: the factor 4 leaves room
  for that (on the real programs of the tests, every stage's error is within 1.3x of the as-lowered
  one). ``8 eps * scale`` (8 ulp of the output's magnitude at precision c) keeps a stage passing when
  the lowered program happens to be exact. An ill-conditioned output (a gradient that is zero but for
  rounding, which Adam then scales up to the learning rate) has an error as large as the output
  itself, so rounding noise passes, while a wrong result (a changed constant, a learning rate 10% off,
  a dropped term, a NaN folded away) moves the output far more than rounding does and fails. No fixed
  per-dtype constant enters: a float32 program is held to float32's rounding, not to 1e-4.
- noise: the program is its own yardstick. Moving an input by one ulp is exactly the perturbation
  rounding makes, and by backward-error analysis a rounding in the middle of a program acts like such
  a perturbation of its inputs, so the noise measures how far rounding-size changes move each output
  -- large on an ill-conditioned output, tiny on a well-conditioned one -- with no fixed per-dtype
  constant. Other evaluation schemes were rejected as yardsticks: the same module compiled with other
  valid XLA options, or the jaxpr run op by op, often reproduces the same roundings bit for bit (a
  noise of zero, which would fail every reassociation), and inputs are the one thing every program has.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import jax
import numpy as np

from ...errors import WorkbenchError
from ...pipeline.program import host_array

__all__ = ["Check", "LeafCheck", "Reference", "ReferenceKind", "ReferenceSource", "LeafRule", "compare_outputs",
           "check_outputs", "check_leaf", "machine_eps", "dtype_name", "REFERENCE", "NOISE_TRIES", "RTOL"]

REFERENCE = "stablehlo"  # the stage every other stage's numbers are checked against
NOISE_TRIES = 3  # runs with inputs moved by one ulp, where there is no wider evaluation

# Per-dtype tolerances of the plain comparison with the as-lowered outputs (``compare_outputs``,
# also what a reproducer script uses): an optimizing rewrite may reassociate floating-point
# arithmetic, so a stage may differ by rounding; integers and booleans must match exactly.
RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2, "complex64": 1e-4, "complex128": 1e-9}
_NARROWER_RTOL = 0.25  # float8 and other types narrower than float16

ReferenceKind = Literal["float64", "stage"]
ReferenceSource = Literal["promoted", "traced", "as-lowered"]
LeafRule = Literal["float64", "noise", "dtype", "exact"]

_WIDE = {"float16": np.float64, "bfloat16": np.float64, "float32": np.float64, "float64": np.float64,
         "complex64": np.complex128, "complex128": np.complex128}
_REAL = {"complex64": "float32", "complex128": "float64"}


def machine_eps(name: str) -> float:
    """Machine epsilon of a floating dtype by numpy's (or ml_dtypes') name; a coarse 2^-2 for one
    neither knows, so an unknown narrow type never makes the check stricter than it can be."""
    import ml_dtypes

    try:
        return float(ml_dtypes.finfo(np.dtype(_REAL.get(name, name))).eps)
    except (TypeError, ValueError):
        return 2.0 ** -2


def _rtol(name: str) -> float:
    return RTOL.get(name, RTOL["float64"] if machine_eps(name) < 1e-12 else _NARROWER_RTOL)


@dataclass(frozen=True)
class LeafCheck:
    """One output leaf against the reference.

    ``max_abs``/``max_rel`` are the stage's errors against the reference (the float64 evaluation
    where there is one, else the as-lowered stage); ``lowered_abs`` is the as-lowered program's own
    error against the float64 evaluation (None without one); ``tolerance`` is the largest ``max_abs``
    that passes, by ``rule`` (see ``check_outputs``); ``computed`` is the floating dtype whose
    rounding set the tolerance's floor: the narrowest type the program computed this output through.
    """

    path: str
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float
    tolerance: float
    passed: bool
    lowered_abs: float | None = None
    rule: LeafRule = "exact"
    computed: str = ""


@dataclass(frozen=True)
class Check:
    """How a stage's outputs compare with the reference, leaf by leaf.

    ``kind`` says which reference decided floating-point leaves: "float64" (a float64 evaluation,
    each stage measured against it next to the as-lowered program's own error) or "stage" (the
    as-lowered stage). ``source`` says which evaluation that was ("promoted", "traced" or
    "as-lowered", see the module docstring), ``reference`` names it, ``note`` says why there was no
    float64 evaluation, ``why_not_promoted`` why the as-lowered module was not promoted to float64
    ("" when it was), and ``tolerance_from`` where each tolerance came from.
    """

    reference: str
    leaves: tuple[LeafCheck, ...]
    kind: ReferenceKind = "stage"
    note: str = ""
    source: ReferenceSource = "as-lowered"
    why_not_promoted: str = ""

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

    @property
    def tolerance_from(self) -> str:
        """Where the leaves' tolerances came from, in words (one clause per rule used)."""
        parts = []
        for rule in ("float64", "noise", "dtype", "exact"):
            leaves = [leaf for leaf in self.leaves if leaf.rule == rule]
            if not leaves:
                continue
            types = ", ".join(sorted({leaf.computed for leaf in leaves if leaf.computed}))
            floor = f"at least 8 ulp of {types} (the narrowest type computed in)"
            if rule == "float64":
                parts.append(f"4x the as-lowered program's own error against {self.reference}, {floor}")
            elif rule == "noise":
                parts.append("4x the most the as-lowered program moves when its floating inputs move by one ulp "
                             f"({NOISE_TRIES} tries), {floor}")
            elif rule == "dtype":
                parts.append(f"the per-dtype tolerance of {types} against {self.reference}")
            else:
                parts.append("integers and booleans match exactly")
        return "; ".join(parts)

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
    """What a stage's outputs are checked against: the as-lowered stage's outputs (``lowered``), a
    float64 evaluation (``wide``, from ``source``; None where there is none, ``note`` says why), or in
    its place the as-lowered program run on inputs moved by one ulp (``nudged``: one output tree per
    try; empty where there are no floating inputs to move). ``computed`` holds, per flattened output,
    the narrowest floating type the as-lowered module computed it through (None where unknown)."""

    label: str  # the as-lowered stage, e.g. "stablehlo" (or "f:stablehlo" for another Exploration)
    lowered: Any
    wide: Any = None
    note: str = ""
    title: str = ""  # the traced function's name
    source: ReferenceSource = "as-lowered"
    nudged: tuple = ()
    computed: tuple[str | None, ...] | None = None
    why_not_promoted: str = ""

    @property
    def wide_label(self) -> str:
        if self.source == "promoted":
            return f"{self.label} promoted to float64"
        return f"{self.title or 'the function'} in float64"

    @property
    def kind(self) -> ReferenceKind:
        return "float64" if self.wide is not None else "stage"


def dtype_name(dt) -> str | None:
    """numpy's name of a dtype ("float32", "bfloat16"); None for none, or JAX's extended dtypes (PRNG keys)."""
    if dt is None:
        return None
    try:
        return str(np.dtype(dt))
    except TypeError:
        return None


def _leaves(tree) -> list[tuple[str, np.ndarray]]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(path) or "output", host_array(leaf)) for path, leaf in leaves]


def _same_structure(got, want) -> None:
    got_tree, want_tree = jax.tree_util.tree_structure(got), jax.tree_util.tree_structure(want)
    if got_tree != want_tree:
        raise WorkbenchError(f"output structure differs from the reference: {got_tree} vs {want_tree}")


def _coarsest(dtype: str, computed: str | None) -> str:
    """The coarser of an output's dtype and the narrowest type it was computed through."""
    own = _REAL.get(dtype, dtype)
    if not computed:
        return own
    return computed if machine_eps(computed) > machine_eps(own) else own


def compare_outputs(got, want, reference: str = REFERENCE) -> Check:
    """Leaf-by-leaf comparison with the as-lowered outputs ``want``, with a per-dtype tolerance.

    An optimizing rewrite may reassociate floating-point arithmetic, so a floating leaf passes when
    ``max |got - want| <= rtol(dtype) * max |want|``; integers and booleans must match exactly. This
    is the plain "do the numbers differ" of ``differs_from`` and of reproducer scripts; ``ex.run``'s
    check is ``check_outputs``.
    """
    _same_structure(got, want)
    out = []
    for (name, g), (_, w) in zip(_leaves(got), _leaves(want)):
        dtype = str(w.dtype)
        if g.shape != w.shape:
            out.append(LeafCheck(name, w.shape, dtype, float("inf"), float("inf"), 0.0, False))
        elif dtype in RTOL:
            out.append(_dtype_rule(name, g, w, dtype, _REAL.get(dtype, dtype)))
        else:
            out.append(_exact_rule(name, g, w, dtype))
    return Check(reference, tuple(out))


def _exact_rule(name: str, g: np.ndarray, w: np.ndarray, dtype: str) -> LeafCheck:
    mismatch = g != w
    n = int(mismatch.sum())
    max_abs = float(np.abs(g.astype(np.int64) - w.astype(np.int64)).max()) if n else 0.0
    return LeafCheck(name, w.shape, dtype, max_abs, float(n > 0), 0.0, n == 0)


def _stage_error(g64: np.ndarray, w64: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(max |g - w|, max relative to max |w|, the elementwise differences) where matching NaNs and
    same-sign infinities count as equal and a NaN or infinity on one side only as infinitely far."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(g64 - w64)
        diff = np.where(_same_class(g64, w64) & ~(np.isfinite(g64) & np.isfinite(w64)), 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
    max_abs = float(np.max(diff)) if diff.size else 0.0
    scale = _scale(w64)
    finite = diff[np.isfinite(diff)]
    rel = finite / max(scale, 1e-30)
    max_rel = float("inf") if not np.isfinite(max_abs) else (float(rel.max()) if rel.size else 0.0)
    return max_abs, max_rel, diff


def _dtype_rule(name: str, g: np.ndarray, w: np.ndarray, dtype: str, computed: str) -> LeafCheck:
    wide = _WIDE[dtype]
    g64, w64 = g.astype(wide), w.astype(wide)
    scale = _scale(w64)
    tol = _rtol(computed) * max(scale, np.finfo(np.float32).tiny) + (1e-30 if scale == 0 else 0.0)
    max_abs, max_rel, _ = _stage_error(g64, w64)
    return LeafCheck(name, w.shape, dtype, max_abs, max_rel, tol, max_abs <= tol, rule="dtype", computed=computed)


def _scale(a: np.ndarray) -> float:
    """The largest finite magnitude of ``a`` (0.0 when it has none)."""
    finite = np.abs(a[np.isfinite(a)]) if a.size else a
    return float(finite.max()) if finite.size else 0.0


def _same_class(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: both NaN, or both the same infinity, or both finite."""
    return (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & np.isinf(b) & (np.sign(a.real) == np.sign(b.real))) | (
        np.isfinite(a) & np.isfinite(b))


def _float64_rule(name: str, g: np.ndarray, low: np.ndarray, ref: np.ndarray, dtype: str,
                  computed: str) -> LeafCheck:
    """The stage ``g`` and the as-lowered program ``low`` (both in ``dtype``) against ``ref`` (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _float64_leaf(name, g, low, ref, dtype, computed)


def _float64_leaf(name: str, g: np.ndarray, low: np.ndarray, ref: np.ndarray, dtype: str,
                  computed: str) -> LeafCheck:
    wide = _WIDE[dtype]
    g, low, ref = g.astype(wide), low.astype(wide), ref.astype(wide)
    eps, rtol = machine_eps(computed), _rtol(computed)
    finite = np.isfinite(g) & np.isfinite(low) & np.isfinite(ref)
    err_stage = float(np.max(np.abs(g - ref)[finite])) if finite.any() else 0.0
    err_lowered = float(np.max(np.abs(low - ref)[finite])) if finite.any() else 0.0
    scale = _scale(ref)
    tol = 4.0 * err_lowered + 8.0 * eps * scale
    ok = err_stage <= tol
    # Where the as-lowered program or the reference is not finite (overflow, NaN by design), the
    # stage must do what the program as lowered does, or be finite and within tolerance of a
    # finite reference (a rewrite that avoids an overflow is more accurate, not wrong).
    special = ~finite
    if special.any():
        both_finite = np.isfinite(g) & np.isfinite(low)  # on special elements: the reference is not finite
        fine = (_same_class(g, low) & ~both_finite) | (
            both_finite & (np.abs(g - low) <= rtol * max(_scale(low), 1e-30)))
        fine |= np.isfinite(g) & np.isfinite(ref) & (np.abs(g - ref) <= tol)
        if not fine[special].all():
            ok, err_stage = False, float("inf")
    rel = np.abs(g - ref)[finite] / max(scale, 1e-30) if finite.any() else np.zeros(0)
    max_rel = float(rel.max()) if rel.size and np.isfinite(err_stage) else (0.0 if ok else float("inf"))
    return LeafCheck(name, low.shape, dtype, err_stage, max_rel, tol, ok, lowered_abs=err_lowered,
                     rule="float64", computed=computed)


def _noise_rule(name: str, g: np.ndarray, low: np.ndarray, nudged: list[np.ndarray], dtype: str,
                computed: str) -> LeafCheck:
    """The stage ``g`` against the as-lowered ``low``, at 4x the program's own noise ``nudged``."""
    wide = _WIDE[dtype]
    g64, low64 = g.astype(wide), low.astype(wide)
    noise = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        for other in nudged:
            if other.shape == low.shape:
                d = np.abs(other.astype(wide) - low64)
                d = d[np.isfinite(d)]  # where one ulp tips a value over to inf or NaN, it says nothing of rounding
                noise = max(noise, float(d.max()) if d.size else 0.0)
    scale = _scale(low64)
    tol = 4.0 * noise + 8.0 * machine_eps(computed) * scale
    max_abs, max_rel, _ = _stage_error(g64, low64)
    return LeafCheck(name, low.shape, dtype, max_abs, max_rel, tol, max_abs <= tol, rule="noise", computed=computed)


def check_outputs(got, ref: Reference) -> Check:
    """Check a stage's outputs ``got`` against ``ref``, leaf by leaf.

    Every floating leaf's tolerance is set by ``c``, the coarser of its dtype and the narrowest
    floating type the as-lowered module rounded anything it depends on to (``ref.computed``), with
    ``eps`` = c's machine epsilon and ``rtol`` = c's per-dtype tolerance (float32 1e-4, bfloat16
    2e-2, ...). The rule, in the first case that applies (the module docstring says why):

    float64 (a float64 evaluation exists): over the elements where the stage, the as-lowered program
    and ``ref64`` are all finite, it passes when

        max |stage - ref64| <= 4 * max |lowered - ref64| + 8 * eps * scale,   scale = max |ref64|

    and where the as-lowered program or the reference is not finite, the stage must match the program
    as lowered (or be finite and within tolerance of a finite reference: avoiding an overflow is more
    accurate, not wrong).

    noise (no float64 evaluation; the program has floating inputs): the program is run
    ``NOISE_TRIES`` more times, each with every finite nonzero floating input moved by one ulp up or
    down at random (seeded), ``noise = max |nudged - lowered|``, and the stage passes when

        max |stage - lowered| <= 4 * noise + 8 * eps * scale,   scale = max |lowered|

    (NaNs must match NaNs and infinities the same infinities).

    dtype (no float64 evaluation and no floating input to move): ``max |stage - lowered| <= rtol *
    max |lowered|``, the per-dtype rule of ``compare_outputs`` at precision c.

    Integer and boolean leaves always match the as-lowered outputs exactly.
    """
    _same_structure(got, ref.lowered)
    stage, lowered = _leaves(got), _leaves(ref.lowered)
    wide, nudged, computed = _reference_leaves(ref, len(lowered))
    out = []
    for i, ((name, g), (_, low)) in enumerate(zip(stage, lowered)):
        out.append(check_leaf(name, g, low, wide[i][1] if wide is not None else None,
                               [n[i][1] for n in nudged], computed[i] if computed else None))
    if ref.wide is not None:
        return Check(ref.wide_label, tuple(out), "float64", "", ref.source, ref.why_not_promoted)
    return Check(ref.label, tuple(out), "stage", ref.note, "as-lowered", ref.why_not_promoted)


def _reference_leaves(ref: Reference, n: int) -> tuple[list | None, list[list], tuple[str | None, ...] | None]:
    """The leaves of ``ref``'s float64 evaluation, of its nudged runs and its computed types, each
    only where it has the ``n`` leaves of the as-lowered outputs (None, or no nudged run, where not)."""
    wide = _leaves(ref.wide) if ref.wide is not None else None
    if wide is not None and len(wide) != n:
        wide = None
    nudged = [leaves for leaves in map(_leaves, ref.nudged) if len(leaves) == n]
    computed = ref.computed if ref.computed is not None and len(ref.computed) == n else None
    return wide, nudged, computed


def check_leaf(name: str, g: np.ndarray, low: np.ndarray, wide: np.ndarray | None, nudged: list[np.ndarray],
               computed: str | None) -> LeafCheck:
    """One leaf of ``check_outputs`` (and one tapped value of a drift search): the stage's ``g`` by the first rule that applies, given the
    as-lowered ``low``, its float64 evaluation ``wide`` (None without one), its nudged runs and the
    narrowest type it was computed through."""
    dtype = str(low.dtype)
    c = _coarsest(dtype, computed)
    if g.shape != low.shape:
        return LeafCheck(name, low.shape, dtype, float("inf"), float("inf"), 0.0, False)
    if dtype not in RTOL:
        return _exact_rule(name, g, low, dtype)
    if wide is not None and wide.shape == low.shape:
        return _float64_rule(name, g, low, wide, dtype, c)
    if nudged:
        return _noise_rule(name, g, low, nudged, dtype, c)
    return _dtype_rule(name, g, low, dtype, c)
