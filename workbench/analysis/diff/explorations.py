"""Two explorations of one program side by side: ``compare_explorations`` (``wb.compare_explorations``).

The two can come from two versions of jax/jaxlib/enzyme-ad (two saved ``.hlox`` files), two flag sets
or two pipelines. A ``Comparison`` holds:

- ``pairs``: the two stage lists aligned by stage name (the pass and its ``#k``): the names both have,
  in an order both keep (the longest such run: a longest increasing subsequence, n log n), anchor the
  alignment; between two anchors a stage only one side has gets a row of its own;
- ``first_difference``: the first row where the two modules differ beyond renaming (SSA names and
  locations do not count: ``normalize``). A stage only one side has is compared with the other side's
  module at that point (the last stage of the same group before it), so the first pass that only one
  pipeline runs and that changes the module is named;
- ``table()``: per row, each side's op count and cost (flops, bytes, XLA's flops and bytes, memory) with
  their deltas;
- ``mlir`` and ``xla``: the final MLIR module's and ``xla:optimized``'s structural diff (``ModuleChange``);
- ``versions`` and ``settings``: what made the two files that differs, and the settings that do;
- ``times``: each side's final stage run and timed, when ``compare_explorations(..., run=True)``;
- ``kernels_change``: where both sides have the TPU's kernels (computed or saved), how each fusion's bundles and
  MXU occupancy changed (``analysis.backend.KernelsChange``; ``kernels()`` its table), else ``kernels_note`` says
  why not.

Work: each stage's text is normalized at most once (by its hash), each op count taken once: linear in
the texts' size. The facade hands the cost tables and versions in; nothing here runs a pass.
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence

from markupsafe import Markup

from ...errors import WorkbenchError
from ...ir.ops import op_counts
from ...stages import Spec, Stage
from .changes import NO_KERNELS, XLA_OPTIMIZED, ModuleChange, setting_changes
from .normalize import normalize

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Comparison", "StagePair", "comparison_of", "compare_stages", "align_names", "growth", "growth_text",
           "number_text", "module_shape", "shape_is_normalized", "FINAL_MEASURES", "VERSION_KEYS"]

_GROUPS = ("trace", "mlir", "xla")  # the groups whose stages are modules to compare
COST_COLUMNS = ("flops", "bytes", "xla_flops", "xla_bytes", "memory")
VERSION_KEYS = ("workbench", "jax", "jaxlib", "enzyme-ad", "python", "platform")
# The measures a regression gate reads of the final modules: (name, what it is, in words)
FINAL_MEASURES = (
    ("ops", "ops of the final MLIR module"),
    ("xla_ops", "instructions of xla:optimized"),
    ("flops", "flops of xla:optimized by XLA's analysis of each computation, loop bodies x trip count (the final MLIR "
              "modules' analytic flops, same loop rule, where a side has none from XLA)"),
    ("bytes", "bytes accessed of xla:optimized by XLA's analysis, loop bodies x trip count (the analytic bytes where a "
              "side has none from XLA)"),
    ("memory", "XLA's memory analysis: arguments + outputs + temporaries - aliased bytes"),
)


@dataclass(frozen=True)
class StagePair:
    """One row of the alignment: ``a`` and ``b`` (None where that side has no stage of this name), and
    ``same``: whether the two modules at this point are the same beyond renaming."""

    a: Stage | None
    b: Stage | None
    same: bool

    @property
    def name(self) -> str:
        return (self.a or self.b).name  # type: ignore[union-attr]

    @property
    def side(self) -> str:
        """"both", "a" or "b": which explorations have this stage."""
        return "both" if self.a is not None and self.b is not None else ("a" if self.a is not None else "b")

    def words(self, labels: tuple[str, str]) -> str:
        if self.side == "both":
            return self.name
        return f"{self.name} (only in {labels[0] if self.side == 'a' else labels[1]})"


def align_names(a: Sequence[str], b: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Index pairs aligning two lists of unique names: the longest run of names both have in the same
    order (n log n) anchors, and between anchors the rest of ``a``, then the rest of ``b``, stand alone."""
    where_b = {name: j for j, name in enumerate(b)}
    common = [(i, where_b[name]) for i, name in enumerate(a) if name in where_b]
    anchors = _increasing(common)
    out: list[tuple[int | None, int | None]] = []
    i = j = 0
    for ai, bj in anchors + [(len(a), len(b))]:
        out += [(k, None) for k in range(i, ai)] + [(None, k) for k in range(j, bj)]
        if ai < len(a):
            out.append((ai, bj))
        i, j = ai + 1, bj + 1
    return out


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (increasing in their first item) increasing in the second."""
    tails: list[int] = []  # tails[k]: the smallest second item ending an increasing run of length k + 1
    ends: list[int] = []  # the index in pairs of that run's last pair
    back = [-1] * len(pairs)
    for k, (_, second) in enumerate(pairs):
        n = bisect.bisect_left(tails, second)
        back[k] = ends[n - 1] if n else -1
        if n == len(tails):
            tails.append(second)
            ends.append(k)
        else:
            tails[n], ends[n] = second, k
    out, k = [], ends[-1] if ends else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    return out[::-1]


def shape_is_normalized(stage: Stage) -> bool:
    """Whether ``module_shape`` hashes the stage's normalized module (a trace, MLIR or XLA module), not its
    text as it is (the jaxpr, backend output)."""
    return stage.group in _GROUPS and stage.name != "jaxpr"


def module_shape(stage: Stage) -> str:
    """The SHA-256 of a stage's module as normalized (SSA names, locations and debug information left out:
    two stages with the same shape differ at most by renaming); of its text as it is for the jaxpr."""
    lines = normalize(stage.text) if shape_is_normalized(stage) else [stage.text]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


class _Shapes:
    """Each text's ``module_shape``, by the text's hash, made at most once."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def key(self, stage: Stage) -> str:
        raw = hashlib.sha256(stage.text.encode()).hexdigest()
        if raw not in self._seen:
            self._seen[raw] = module_shape(stage)
        return self._seen[raw]


def compare_stages(a: Sequence[Stage], b: Sequence[Stage]) -> tuple[StagePair, ...]:
    """The aligned rows of two stage lists (see the module docstring), backend output left out."""
    a = [s for s in a if s.group in _GROUPS]
    b = [s for s in b if s.group in _GROUPS]
    shapes = _Shapes()
    now: dict[str, dict[str, Stage]] = {"a": {}, "b": {}}  # each side's latest stage of each group
    rows = []
    for i, j in align_names([s.name for s in a], [s.name for s in b]):
        sa, sb = (a[i] if i is not None else None), (b[j] if j is not None else None)
        for side, s in (("a", sa), ("b", sb)):
            if s is not None and not s.error:
                now[side][s.group] = s
        group = (sa or sb).group  # type: ignore[union-attr]
        left = sa if sa is not None else now["a"].get(group)
        right = sb if sb is not None else now["b"].get(group)
        if left is None or right is None or left.error or right.error:
            same = left is not None and right is not None and left.error == right.error
        else:
            same = left.text == right.text or shapes.key(left) == shapes.key(right)
        rows.append(StagePair(sa, sb, same))
    return tuple(rows)


def _ops(stage: Stage | None) -> int | None:
    if stage is None or stage.error or stage.name == "jaxpr" or stage.group not in _GROUPS:
        return None
    return _op_total(stage.text)


@functools.lru_cache(maxsize=128)  # a table and the gate's measures read each stage's count: counted once
def _op_total(text: str) -> int:
    return sum(op_counts(text).values())


def _memory(row: dict) -> float | None:
    parts = [row.get(k) for k in ("argument_bytes", "output_bytes", "temp_bytes")]
    if any(_missing(p) for p in parts):
        return None
    alias = row.get("alias_bytes")
    return float(sum(parts)) - (0.0 if _missing(alias) else float(alias))


def _missing(v: Any) -> bool:
    import pandas as pd

    return v is None or bool(pd.isna(v))


def _cost_rows(cost: "pd.DataFrame | None") -> dict[str, dict]:
    """The cost table's rows by stage name, each with ``memory`` added."""
    if cost is None:
        return {}
    out = {}
    for row in cost.to_dict("records"):
        out[row["stage"]] = {**row, "memory": _memory(row)}
    return out


@dataclass(frozen=True)
class Comparison:
    """Two explorations side by side (the module's docstring says what each part is). ``labels``: the
    names the two go by ("a.hlox", "b.hlox"; "a" and "b" by default)."""

    labels: tuple[str, str]
    pairs: tuple[StagePair, ...]
    mlir: ModuleChange | None
    xla: ModuleChange | None
    settings: tuple[str, ...]
    versions: tuple[tuple[str, str | None, str | None], ...]
    same_input: bool
    costs: tuple[dict[str, dict], dict[str, dict]] = field(repr=False)
    times: tuple[Any, Any] | None = None  # each side's Timing when run=True
    # each side's final MLIR module and xla:optimized (None where it has none): what ``mlir`` and ``xla`` pair
    finals: tuple[tuple[Stage | None, Stage | None], ...] = field(default=((None, None), (None, None)), repr=False)
    # what the change did to XLA's peak memory and the buffers live at it (analysis.memory.MemoryChange), where
    # both sides have one
    memory: Any = None
    # each fusion's kernel before and after (analysis.backend.KernelsChange), where both sides have kernels; else why not
    kernels_change: Any = None
    kernels_note: str = ""

    @property
    def first_difference(self) -> StagePair | None:
        """The first aligned row whose modules differ beyond renaming; None when none does."""
        return next((p for p in self.pairs if not p.same), None)

    @property
    def identical(self) -> bool:
        return self.first_difference is None

    def _value(self, side: int, stage: Stage | None, column: str):
        if stage is None:
            return None
        if column == "ops":
            return _ops(stage)
        v = self.costs[side].get(stage.name, {}).get(column)
        return None if _missing(v) else float(v)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per aligned stage: ``stage``, ``side`` ("both", "a", "b"), ``same`` (module equal beyond
        renaming at this point), then for ops, flops, bytes, xla_flops, xla_bytes and memory the value of
        each side and the delta (b - a); None where a side has no value."""
        rows = []
        for p in self.pairs:
            row: dict[str, Any] = {"stage": p.name, "side": p.side, "same": p.same}
            for col in ("ops",) + COST_COLUMNS:
                va, vb = self._value(0, p.a, col), self._value(1, p.b, col)
                row[f"{col}_a"], row[f"{col}_b"] = va, vb
                row[f"{col}_delta"] = None if va is None or vb is None else vb - va
            rows.append(row)
        return rows

    def table(self) -> "pd.DataFrame":
        """``rows()`` as a DataFrame (a missing value is pandas' NA)."""
        import pandas as pd

        return pd.DataFrame(self.rows()).convert_dtypes()

    @cached_property
    def final(self) -> dict[str, tuple[float | None, float | None]]:
        """The gate's measures (``FINAL_MEASURES``) of each side's final modules: ``{name: (a, b)}``."""
        out = {}
        # flops and bytes: xla:optimized's where both sides have them, else both sides' analytic counts (never one
        # of each). Both under the cost table's one loop rule (loop bodies x trip count), never XLA's own total
        # (xla_flops), which counts a loop body once: a loop that runs more steps must show as growth.
        by_xla = {col: all(self._value(side, xla, col) is not None
                           for side, (_, xla) in enumerate(self.finals)) for col in ("flops", "bytes")}
        for side, (mlir, xla) in enumerate(self.finals):
            values = {"ops": _ops(mlir), "xla_ops": _ops(xla)}
            for col in ("flops", "bytes"):
                values[col] = self._value(side, xla, col) if by_xla[col] else self._value(side, mlir, col)
            values["memory"] = self._value(side, xla, "memory")
            for k, v in values.items():
                out.setdefault(k, [None, None])[side] = None if v is None else float(v)
        return {k: (v[0], v[1]) for k, v in out.items()}

    def kernels(self) -> "pd.DataFrame":
        """How each fusion's kernel changed (``Kernels.compare``: bundles, bundles issued per call and MXU occupancy
        on each side); WorkbenchError saying why where a side has no kernels computed or saved."""
        if self.kernels_change is None:
            raise WorkbenchError(f"no kernels to compare: {self.kernels_note or NO_KERNELS}")
        return self.kernels_change.table()

    def same_final_module(self) -> bool | None:
        """Whether the final MLIR modules and xla:optimized are the same beyond renaming (None: no pair)."""
        parts = [m for m in (self.mlir, self.xla) if m is not None]
        return None if not parts else not any(m.changed for m in parts)

    def made_by_lines(self) -> list[str]:
        """The versions and the settings that differ, a line each (none when they agree)."""
        out = []
        if self.versions:
            out.append("versions: " + ", ".join(f"{k} {va or 'none'} → {vb or 'none'}" for k, va, vb in self.versions))
        if self.settings:
            out.append("settings: " + ", ".join(self.settings))
        return out

    def lines(self) -> list[str]:
        """The comparison in words, a line each (``str()`` joins them)."""
        a, b = self.labels
        out = [f"{a} → {b}", *self.made_by_lines()]
        if not self.same_input:
            out.append("the input modules differ (the program as lowered is not the same)")
        first = self.first_difference
        out.append("first difference: " + (first.words(self.labels) if first else "none (the same modules throughout)"))
        for m in (self.mlir, self.xla):
            if m is not None:
                out.append(m.words())
        if self.memory is not None:
            out.append(self.memory.words())
        if self.kernels_change is not None:
            out.append(self.kernels_change.words())
        elif self.kernels_note:
            out.append(f"kernels: not compared ({self.kernels_note})")
        for name, (va, vb) in self.final.items():
            if va is not None or vb is not None:
                g = growth(va, vb)
                out.append(f"{name}: {number_text(va)} → {number_text(vb)}" + (f" ({growth_text(g)})" if g else ""))
        if self.times is not None:
            ta, tb = self.times
            out.append(f"run time (median): {ta.median * 1e3:.3f} ms → {tb.median * 1e3:.3f} ms "
                       f"({tb.median / ta.median:.2f}x)")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        first = self.first_difference
        return f"Comparison({self.labels[0]} → {self.labels[1]}: first difference {first.name if first else 'none'})"

    def _repr_html_(self) -> str:
        head, *rest = self.lines()
        items = Markup("").join(Markup("<li>{}</li>").format(line) for line in rest)
        return str(Markup('<div class="wb-comparison"><b>{}</b><ul>{}</ul></div>').format(head, items))


def number_text(v: Any) -> str:
    """A value of a comparison's tables as written: "-" for none, a whole number with thousands' commas, else
    four significant digits; anything else as it is."""
    if v is None:
        return "-"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = float(v)
        return f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:,.4g}"
    return str(v)


def growth(a: float | None, b: float | None) -> float | None:
    """``b`` over ``a`` less one (0.05: 5% more); inf when ``a`` is 0 and ``b`` is not; None when either is missing."""
    if a is None or b is None:
        return None
    if a == 0:
        return 0.0 if b == 0 else float("inf")
    return b / a - 1.0


def growth_text(g: float | None) -> str:
    """A growth as a signed percent ("+7.0%", "-0.6%", "0%"); one of a few in a million keeps its digits
    ("+2.2e-05%"); "inf" from nothing; "none" for no value (a limit that is off)."""
    if g is None:
        return "none"
    if math.isinf(g):
        return "inf"
    if not g:
        return "0%"
    return f"{g * 100:+.1f}%" if abs(g) >= 0.001 else f"{g * 100:+.2g}%"


def comparison_of(a_stages: Sequence[Stage], b_stages: Sequence[Stage], a_spec: Spec, b_spec: Spec, *,
                  labels: tuple[str, str] = ("a", "b"), costs: tuple = (None, None),
                  versions: tuple[dict, dict] = ({}, {}), times: tuple | None = None, memory: Any = None,
                  kernels: Any = None, kernels_note: str = "") -> Comparison:
    """The Comparison of two explorations' stages (see the module docstring). ``costs``: each side's cost
    table (``ex.cost()``), ``versions``: what made each side (``saved_by``, or the versions installed);
    ``kernels``: the KernelsChange of the two sides' kernels, or None and ``kernels_note`` why not."""
    pairs = compare_stages(a_stages, b_stages)
    finals = []
    for stages in (a_stages, b_stages):
        ok = [s for s in stages if not s.error]
        finals.append((next((s for s in reversed(ok) if s.is_module), None),
                       next((s for s in ok if s.name == XLA_OPTIMIZED), None)))
    (ma, xa), (mb, xb) = finals
    mlir = ModuleChange("final MLIR", ma, mb) if ma and mb else None
    xla = ModuleChange(XLA_OPTIMIZED, xa, xb) if xa and xb else None
    ta, tb = a_spec.input_text, b_spec.input_text
    same_input = ta == tb or normalize(ta) == normalize(tb)
    settings = [s for s in setting_changes(a_spec, b_spec) if s != "another program"]
    differing = tuple((k, versions[0].get(k), versions[1].get(k)) for k in VERSION_KEYS
                      if versions[0].get(k) != versions[1].get(k))
    return Comparison(labels, pairs, mlir, xla, tuple(settings), differing, same_input,
                      (_cost_rows(costs[0]), _cost_rows(costs[1])), times, tuple(finals), memory, kernels, kernels_note)
