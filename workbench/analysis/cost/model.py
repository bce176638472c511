"""The analytic cost of a whole module: every op costed once per execution, as rows and as totals.

The walk starts at ``@main`` (else at every public function), enters a called function once per call
site, multiplies while-loop bodies by their trip counts (``loops.py``), applies XLA's import rewrites
(``rewrites.py``) and costs each op by ``rules.py``.

Where the model and XLA still differ:

* while loops: XLA counts the body and the condition once. Here, when the loop is a counted loop (a
  counter starting at a constant, stepped by a positive constant, compared LT/LE with a constant or a
  loop-invariant value -- what fori_loop and scan lower to), the body counts ``trip count`` times and
  the condition ``trip count + 1`` times. ``ModuleCost``'s ``*_body_once`` totals count them once;
  those are the numbers to compare with XLA.
* custom calls: XLA charges -1 flops and -1 bytes each and adds that into its totals, so ``xla_cost``
  reports its flops and bytes as None for a module with custom calls; the model leaves them out.
* case/if: XLA takes each property's maximum over the branches; the model counts the branch with
  the most flops, whole. They differ only when another branch moves more bytes.
* import rewrites beyond those ``rewrites.py`` lists are not modelled.
* Shardy ops are free here, while XLA sees custom calls for some of them; ops of unknown dialects
  (e.g. ``enzymexla.rotate``) get a cost here, while XLA cannot take such a module at all.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType

import pandas as pd
from jaxlib.mlir import ir

from ...pipeline.exported import readable_module
from .loops import trip_count
from .rewrites import import_rewrites
from .rules import APPLIED_REGION_OPS, CALL_OPS, Cost, cost_of
from .tensors import nested_ops

__all__ = ["COLUMNS", "KINDS", "ModuleCost", "located_op_costs", "module_cost", "op_costs"]

KINDS = (
    "dot_general",
    "convolution",
    "reduce",
    "elementwise",
    "transcendental",
    "data_movement",
    "constant",
    "control",
    "custom_call",
    "other",
)

COLUMNS = (
    "func",
    "op",
    "dialect",
    "kind",
    "result_shapes",
    "flops",
    "transcendentals",
    "bytes",
    "trip_count",
    "note",
)


@dataclasses.dataclass(frozen=True)
class _Context:
    """Where an op sits: its function, the loops around it, and whether it is counted at all."""

    func: str
    path: tuple[str, ...]
    loops: tuple[int, ...] = ()
    counted: bool = True
    why_not: str = ""

    @property
    def trip_count(self) -> int:
        return math.prod(self.loops)

    def in_loop(self, factor: int) -> _Context:
        return dataclasses.replace(self, loops=(*self.loops, factor))

    def uncounted(self, why: str) -> _Context:
        return dataclasses.replace(self, counted=False, why_not=self.why_not or why)

    def called(self, callee: str) -> _Context:
        return dataclasses.replace(self, func=callee, path=(*self.path, callee))


@dataclasses.dataclass(frozen=True)
class _Row:
    func: str
    op: str
    result_shapes: str
    cost: Cost
    trip_count: int
    counted: bool
    note: str
    location: str = ""  # the op's MLIR location as the bindings print it (loc(unknown) in text without)

    @property
    def weight(self) -> int:
        return self.trip_count if self.counted else 0

    def total(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else value * self.weight

    def once(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else (value if self.counted else 0)


@dataclasses.dataclass(frozen=True)
class _Walk:
    rows: tuple[_Row, ...]
    loops_read: int
    ops_by_dialect: Mapping[str, int]


class _Walker:
    def __init__(self, module: ir.Module) -> None:
        self.funcs: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.reached: set[str] = set()
        self.loops_read = 0
        self.imported = {name: import_rewrites(func) for name, func in self.funcs.items()}

    def walk(self) -> tuple[_Row, ...]:
        if "main" in self.funcs:
            roots = ["main"]
        else:
            roots = [
                name
                for name, f in self.funcs.items()
                if "sym_visibility" not in f.attributes
                or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
            ]
        rows: list[_Row] = []
        for root in roots:
            rows += self._func(root, _Context(func=root, path=(root,)))
        for name, func in self.funcs.items():
            if name not in self.reached:
                ctx = _Context(func=name, path=(name,)).uncounted("not called from @main")
                rows += self._region(func.regions[0], ctx)
        return tuple(rows)

    def _func(self, name: str, ctx: _Context) -> list[_Row]:
        self.reached.add(name)
        return self._region(self.funcs[name].regions[0], ctx)

    def _region(self, region: ir.Region, ctx: _Context) -> list[_Row]:
        rows: list[_Row] = []
        for block in region.blocks:
            for op in block.operations:
                rows += self._op(op.operation, ctx)
        return rows

    def _op(self, op: ir.Operation, ctx: _Context) -> list[_Row]:
        cost = cost_of(op)
        imported = self.imported[ctx.func]
        if op in imported.folded:
            cost = Cost(cost.kind, 0, 0, 0, "constant operands: folded when XLA imports the module")
        elif op in imported.dropped:
            cost = Cost(cost.kind, 0, 0, 0, imported.dropped[op])
        if op in imported.materialized:
            note = "; ".join(
                n for n in (cost.note, "a splat: XLA materializes it as a broadcast") if n
            )
            cost = dataclasses.replace(cost, bytes=imported.materialized[op], note=note)
        name = op.name
        notes = [n for n in (cost.note, ctx.why_not) if n]
        if ctx.loops:
            notes.append(f"runs x{ctx.trip_count} (while trip counts {' x '.join(map(str, ctx.loops))})")
        if len(ctx.path) > 1:
            notes.append("via " + " -> ".join(f"@{p}" for p in ctx.path))
        nested: list[_Row] = []
        if name == "stablehlo.while":
            trips = trip_count(op)
            if trips is None:
                notes.append("trip count not read: body counted once, like XLA")
                nested = self._region(op.regions[0], ctx) + self._region(op.regions[1], ctx)
            else:
                self.loops_read += 1
                notes.append(f"trip count {trips}: body x{trips}, condition x{trips + 1}")
                nested = self._region(op.regions[0], ctx.in_loop(trips + 1)) + self._region(
                    op.regions[1], ctx.in_loop(trips)
                )
        elif name in APPLIED_REGION_OPS:
            applied = ctx.uncounted(f"applied by the enclosing {name}: counted there")
            for region in op.regions:
                nested += self._region(region, applied)
        elif name in ("stablehlo.case", "stablehlo.if"):
            nested = self._branches(op, ctx)
        elif name in CALL_OPS:
            attr = "callee" if name == "func.call" else "decomposition"
            callee = ir.FlatSymbolRefAttr(op.attributes[attr]).value
            if callee in self.funcs:
                nested = self._func(callee, ctx.called(callee))
        else:
            for region in op.regions:
                nested += self._region(region, ctx)
        shapes = ", ".join(str(r.type) for r in op.results)
        row = _Row(ctx.func, name, shapes, cost, ctx.trip_count, ctx.counted, "; ".join(notes), str(op.location))
        return [row, *nested]

    def _branches(self, op: ir.Operation, ctx: _Context) -> list[_Row]:
        branches = [self._region(region, ctx) for region in op.regions]
        # XLA charges a conditional with its costliest branch.
        flops = [sum(r.once("flops") or 0 for r in branch) for branch in branches]
        taken = flops.index(max(flops)) if flops else 0
        rows: list[_Row] = []
        for i, branch in enumerate(branches):
            if i == taken:
                rows += branch
                continue
            why = f"branch {i} of {op.name}: not counted (the costliest branch, {taken}, is)"
            rows += [
                dataclasses.replace(r, counted=False, note="; ".join(n for n in (r.note, why) if n))
                for r in branch
            ]
        return rows


@functools.lru_cache(maxsize=16)
def _walk(text: str) -> _Walk:
    """The costed rows of a module; cached because views ask for rows and totals of one stage."""
    module = readable_module(text)
    walker = _Walker(module)
    rows = walker.walk()
    ops = Counter(
        op.name.partition(".")[0]
        for top in module.body.operations
        for op in (top.operation, *nested_ops(top.operation))
    )
    return _Walk(rows, walker.loops_read, MappingProxyType(dict(sorted(ops.items()))))


def op_costs(text: str) -> pd.DataFrame:
    """One row per op of the module, costed by the rules of ``rules.py``.

    Ops of a function appear once per call site (a function called twice costs twice), ops of
    functions nobody calls appear with no cost. ``flops``, ``transcendentals`` and ``bytes`` are what
    the row adds to the module's totals, trip counts applied; ``trip_count`` is the product of the
    trip counts of the while loops around the op (1 outside loops). Unknown costs are ``<NA>``.
    """
    walk = _walk(text)
    return pd.DataFrame(
        {
            "func": [r.func for r in walk.rows],
            "op": [r.op for r in walk.rows],
            "dialect": [r.op.partition(".")[0] for r in walk.rows],
            "kind": pd.Categorical([r.cost.kind for r in walk.rows], categories=KINDS),
            "result_shapes": [r.result_shapes for r in walk.rows],
            "flops": pd.array([r.total("flops") for r in walk.rows], dtype="Int64"),
            "transcendentals": pd.array(
                [r.total("transcendentals") for r in walk.rows], dtype="Int64"
            ),
            "bytes": pd.array([r.total("bytes") for r in walk.rows], dtype="Int64"),
            "trip_count": pd.array([r.trip_count for r in walk.rows], dtype="int64"),
            "note": [r.note for r in walk.rows],
        },
        columns=list(COLUMNS),
    )


def located_op_costs(text: str) -> pd.DataFrame:
    """``op_costs(text)`` with each row's MLIR ``location`` (as jaxlib prints it: ``loc(...)``, aliases
    resolved); give it a stage's ``text_with_locations`` for the source map (analysis/provenance.py)."""
    df = op_costs(text)
    df["location"] = [r.location for r in _walk(text).rows]
    return df


@dataclasses.dataclass(frozen=True)
class ModuleCost:
    """Totals of the analytic model for one module.

    ``flops``, ``transcendentals`` and ``bytes`` multiply loop bodies by their trip counts where they
    could be read (``loop_multiplied``); the ``*_body_once`` totals count every loop body once, the
    way XLA's HloCostAnalysis does. Ops of unknown cost (``unknown_custom_calls`` custom calls and
    ``unmodelled_ops`` others, each counted once per call site) add nothing to any total. ``ops``
    and ``ops_by_dialect`` count the ops written in the text, including ``func.func`` itself.
    """

    ops: int
    ops_by_dialect: Mapping[str, int]
    flops: int
    transcendentals: int
    bytes: int
    loop_multiplied: bool
    unknown_custom_calls: int
    unmodelled_ops: int
    flops_body_once: int
    transcendentals_body_once: int
    bytes_body_once: int


def module_cost(text: str) -> ModuleCost:
    """The totals of ``op_costs(text)`` and the op counts of the module, as a value."""
    walk = _walk(text)
    counted = [r for r in walk.rows if r.counted]

    def total(field: str, once: bool) -> int:
        return sum((r.once(field) if once else r.total(field)) or 0 for r in counted)

    return ModuleCost(
        ops=sum(walk.ops_by_dialect.values()),
        ops_by_dialect=walk.ops_by_dialect,
        flops=total("flops", once=False),
        transcendentals=total("transcendentals", once=False),
        bytes=total("bytes", once=False),
        loop_multiplied=walk.loops_read > 0,
        unknown_custom_calls=sum(1 for r in counted if r.cost.kind == "custom_call"),
        unmodelled_ops=sum(
            1 for r in counted if r.cost.kind != "custom_call" and r.cost.flops is None
        ),
        flops_body_once=total("flops", once=True),
        transcendentals_body_once=total("transcendentals", once=True),
        bytes_body_once=total("bytes", once=True),
    )
