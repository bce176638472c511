"""The analytic cost of a whole module: every op costed once per execution, as rows and as totals.

The walk starts at ``@main`` (else at every public function), multiplies while-loop bodies by their
trip counts (``loops.py``), applies XLA's import rewrites (``rewrites.py``) and costs each op by
``rules.py``. A called function costs once per call, as in XLA, but is walked once: its ops are costed
in the function's own context, and how often it runs -- its call paths, each times the trip counts of
the loops around its calls -- is propagated over the call graph. Rows and work stay linear in the
module's text where the call tree is exponential (a chain of functions each calling the next twice);
``model_work`` says what was done.

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

from jaxlib.mlir import ir
from typing import TYPE_CHECKING

from ...pipeline.exported import readable_module
from .loops import trip_count
from .rewrites import import_rewrites
from .rules import APPLIED_REGION_OPS, CALL_OPS, Cost, cost_of, loop_states
from .tensors import nested_ops, tensors_remembered
from .work import Work, WorkCounter

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["COLUMNS", "KINDS", "ModuleCost", "located_op_costs", "model_work", "module_cost", "op_costs"]

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
    "calls",
    "note",
)


@dataclasses.dataclass(frozen=True)
class _Local:
    """Where an op sits inside its own function: the while loops around it there, and whether it counts."""

    loops: tuple[int, ...] = ()
    counted: bool = True
    why_not: str = ""

    @property
    def factor(self) -> int:
        return math.prod(self.loops)

    def in_loop(self, factor: int) -> _Local:
        return dataclasses.replace(self, loops=(*self.loops, factor))

    def uncounted(self, why: str) -> _Local:
        return dataclasses.replace(self, counted=False, why_not=self.why_not or why)


_UNREAD_TRIPS = "trip count not read: body counted once, like XLA"  # the note that marks a loop of unknown trip count


@dataclasses.dataclass(frozen=True)
class _Op:
    """One op costed inside its function, before anything is known of how often the function runs."""

    op: str
    result_shapes: str
    cost: Cost
    local: _Local
    notes: tuple[str, ...]
    location: str
    callee: str | None = None  # the function a call enters, when the walk follows it


@dataclasses.dataclass(frozen=True)
class _Function:
    ops: tuple[_Op, ...]
    flops_once: int  # of one call, loop bodies once: what a conditional's branches are weighed by


@dataclasses.dataclass
class _Reach:
    """How the walk reaches a function: the call paths from its roots, as the calls are propagated.

    ``runs`` sums over those paths the trip counts of the loops around each path's calls; the
    ``counted_*`` sums take only the paths whose every call counts (not in a branch XLA does not
    charge, not in a computation an op applies). ``calls`` stays 0 for a function no root reaches.
    """

    reached: bool = False
    calls: int = 0
    runs: int = 0
    counted_calls: int = 0
    counted_runs: int = 0
    why_not: str = ""
    callers: dict[str, None] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class _Row:
    func: str
    op: str
    result_shapes: str
    cost: Cost
    trip_count: int  # times the op runs: loop trip counts, summed over the call paths reaching it
    calls: int  # call paths reaching the op's function (1 in a root, 0 where no root reaches)
    counted: bool
    runs: int  # what the totals multiply the op's cost by: the runs through counted paths
    counted_calls: int  # the same with loop bodies once, as XLA counts them
    note: str
    location: str = ""  # the op's MLIR location as the bindings print it (loc(unknown) in text without)

    def total(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else value * (self.runs if self.counted else 0)

    def once(self, field: str) -> int | None:
        value = getattr(self.cost, field)
        return None if value is None else value * (self.counted_calls if self.counted else 0)


@dataclasses.dataclass(frozen=True)
class _Walk:
    rows: tuple[_Row, ...]
    loops_read: int
    ops_by_dialect: Mapping[str, int]
    work: Work


def _callee(op: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(op.attributes["callee" if op.name == "func.call" else "decomposition"]).value


def _names(callers: list[str]) -> str:
    shown = ", ".join(f"@{c}" for c in callers[:3])
    return shown + (f" and {len(callers) - 3} more" if len(callers) > 3 else "")


class _Walker:
    """Costs every op of a module once, and how often each runs from the call graph.

    A function's ops are costed once, in the function's own context, whatever its number of call
    sites; the functions are summarized callees first, then the call paths are propagated callers
    first. The work is linear in the module's text even when its call tree is exponential.
    """

    def __init__(self, module: ir.Module) -> None:
        self.funcs: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.loops_read = 0
        self.work = WorkCounter()
        self.imported = {name: import_rewrites(func, self.work) for name, func in self.funcs.items()}
        self.loop_states = {name: loop_states(func, self.work) for name, func in self.funcs.items()}
        if "main" in self.funcs:
            self.roots = ["main"]
        else:
            self.roots = [
                name
                for name, f in self.funcs.items()
                if "sym_visibility" not in f.attributes
                or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
            ]

    def walk(self) -> tuple[_Row, ...]:
        order, recursive = self._callees_first()
        functions: dict[str, _Function] = {}
        for name in order:
            functions[name] = self._function(name, functions, recursive)
        reach = self._reach(order, functions)
        return self._rows(functions, reach)

    # -- the call graph ------------------------------------------------------------------------------
    def _callees_first(self) -> tuple[list[str], frozenset[tuple[str, str]]]:
        """Every function, each after the functions it calls, and the calls that close a cycle.

        An iterative depth-first search (roots first, so recursion is cut where a root's walk meets it):
        a call chain as deep as the module allows cannot overflow Python's stack.
        """
        callees: dict[str, list[str]] = {}
        for name, f in self.funcs.items():
            found: dict[str, None] = {}
            for op in nested_ops(f):
                self.work.ops_visited += 1
                if op.name in CALL_OPS and _callee(op) in self.funcs:
                    found[_callee(op)] = None
            callees[name] = list(found)
        order: list[str] = []
        done: set[str] = set()
        active: set[str] = set()
        cycles: set[tuple[str, str]] = set()
        for start in (*self.roots, *self.funcs):
            if start in done:
                continue
            active.add(start)
            stack = [(start, iter(callees[start]))]
            while stack:
                name, pending = stack[-1]
                callee = next(pending, None)
                if callee is None:
                    stack.pop()
                    active.discard(name)
                    done.add(name)
                    order.append(name)
                elif callee in active:
                    cycles.add((name, callee))
                elif callee not in done:
                    active.add(callee)
                    stack.append((callee, iter(callees[callee])))
        return order, frozenset(cycles)

    def _reach(self, order: list[str], functions: dict[str, _Function]) -> dict[str, _Reach]:
        """How each function is reached, propagated over the calls, callers before callees."""
        reach = {name: _Reach() for name in self.funcs}
        for root in self.roots:
            reach[root] = _Reach(reached=True, calls=1, runs=1, counted_calls=1, counted_runs=1)
        callers_first = order[::-1]
        for name in callers_first:
            if reach[name].reached:
                for o in functions[name].ops:
                    if o.callee is not None:
                        reach[o.callee].reached = True
        # A function no root reaches is costed as if called once from outside: its calls and its
        # callees' are shown with their trip counts, and count nowhere.
        entered: set[str] = set()
        for name in callers_first:
            source = reach[name]
            if not source.reached and name not in entered:
                source.runs = 1
            for o in functions[name].ops:
                if o.callee is None:
                    continue
                target = reach[o.callee]
                factor = o.local.factor
                if not source.reached:
                    if not target.reached:
                        entered.add(o.callee)
                        target.runs += source.runs * factor
                    continue
                target.callers[name] = None
                target.calls += source.calls
                target.runs += source.runs * factor
                if o.local.counted:
                    target.counted_calls += source.counted_calls
                    target.counted_runs += source.counted_runs * factor
                why = o.local.why_not if not o.local.counted else (
                    source.why_not if source.counted_calls < source.calls else ""
                )
                target.why_not = target.why_not or why
        return reach

    # -- one function, in its own context --------------------------------------------------------------
    def _function(self, name: str, functions: dict[str, _Function],
                  recursive: frozenset[tuple[str, str]]) -> _Function:
        ops = self._region(name, self.funcs[name].regions[0], _Local(), functions, recursive)
        return _Function(tuple(ops), sum(self._flops_once(o, functions) for o in ops))

    @staticmethod
    def _flops_once(o: _Op, functions: dict[str, _Function]) -> int:
        if not o.local.counted:
            return 0
        return (o.cost.flops or 0) + (functions[o.callee].flops_once if o.callee is not None else 0)

    def _region(self, func: str, region: ir.Region, local: _Local, functions: dict[str, _Function],
                recursive: frozenset[tuple[str, str]]) -> list[_Op]:
        ops: list[_Op] = []
        for block in region.blocks:
            for op in block.operations:
                ops += self._op(func, op.operation, local, functions, recursive)
        return ops

    def _op(self, func: str, op: ir.Operation, local: _Local, functions: dict[str, _Function],
            recursive: frozenset[tuple[str, str]]) -> list[_Op]:
        self.work.ops_visited += 1
        self.work.ops_costed += 1
        cost = cost_of(op, self.loop_states[func])
        imported = self.imported[func]
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
        notes = [n for n in (cost.note, local.why_not) if n]
        if local.loops:
            notes.append(f"runs x{local.factor} (while trip counts {' x '.join(map(str, local.loops))})")
        nested: list[_Op] = []
        callee = None

        def region(r: ir.Region, where: _Local) -> list[_Op]:
            return self._region(func, r, where, functions, recursive)

        if name == "stablehlo.while":
            trips = trip_count(op)
            if trips is None:
                notes.append(_UNREAD_TRIPS)
                nested = region(op.regions[0], local) + region(op.regions[1], local)
            else:
                self.loops_read += 1
                notes.append(f"trip count {trips}: body x{trips}, condition x{trips + 1}")
                nested = region(op.regions[0], local.in_loop(trips + 1)) + region(op.regions[1], local.in_loop(trips))
        elif name in APPLIED_REGION_OPS:
            applied = local.uncounted(f"applied by the enclosing {name}: counted there")
            for r in op.regions:
                nested += region(r, applied)
        elif name in ("stablehlo.case", "stablehlo.if"):
            nested = self._branches(op, [region(r, local) for r in op.regions], functions)
        elif name in CALL_OPS:
            target = _callee(op)
            if (func, target) in recursive:
                notes.append(f"recursive call of @{target}: not entered (XLA cannot compile recursion)")
            elif target in functions:
                callee = target
        else:
            for r in op.regions:
                nested += region(r, local)
        shapes = ", ".join(str(r.type) for r in op.results)
        row = _Op(name, shapes, cost, local, tuple(notes), str(op.location), callee)
        return [row, *nested]

    def _branches(self, op: ir.Operation, branches: list[list[_Op]], functions: dict[str, _Function]) -> list[_Op]:
        # XLA charges a conditional with its costliest branch.
        flops = [sum(self._flops_once(o, functions) for o in branch) for branch in branches]
        taken = flops.index(max(flops)) if flops else 0
        ops: list[_Op] = []
        for i, branch in enumerate(branches):
            if i == taken:
                ops += branch
                continue
            why = f"branch {i} of {op.name}: not counted (the costliest branch, {taken}, is)"
            ops += [dataclasses.replace(o, local=o.local.uncounted(why), notes=(*o.notes, why)) for o in branch]
        return ops

    # -- the rows ----------------------------------------------------------------------------------------
    def _rows(self, functions: dict[str, _Function], reach: dict[str, _Reach]) -> tuple[_Row, ...]:
        """Each function's rows once, after the call that first reaches it (roots first, then the
        functions no root reaches, in text order)."""
        rows: list[_Row] = []
        shown: set[str] = set()
        for start in (*self.roots, *(n for n in self.funcs if not reach[n].reached)):
            if start in shown:
                continue
            shown.add(start)
            stack = [(start, iter(functions[start].ops))]
            while stack:
                name, pending = stack[-1]
                o = next(pending, None)
                if o is None:
                    stack.pop()
                    continue
                rows.append(self._row(name, o, reach[name]))
                if o.callee is not None and o.callee not in shown:
                    shown.add(o.callee)
                    stack.append((o.callee, iter(functions[o.callee].ops)))
        self.work.rows = len(rows)
        return tuple(rows)

    def _row(self, func: str, o: _Op, reach: _Reach) -> _Row:
        notes = list(o.notes)
        if not reach.reached:
            notes.append("not called from @main")
        else:
            if reach.counted_calls == 0:
                notes.append(reach.why_not)
            elif reach.counted_calls < reach.calls:
                notes.append(f"{reach.calls - reach.counted_calls} of {reach.calls} call paths not counted: "
                             f"{reach.why_not}")
            if func not in self.roots:
                via = f"via {_names(list(reach.callers))}"
                if reach.calls != 1:
                    via += f" ({reach.calls} call paths)"
                if reach.runs != reach.calls:
                    via += f"; @{func} runs x{reach.runs}"
                notes.append(via)
        counted = o.local.counted and reach.counted_calls > 0
        return _Row(func, o.op, o.result_shapes, o.cost, reach.runs * o.local.factor, reach.calls, counted,
                    reach.counted_runs * o.local.factor, reach.counted_calls, "; ".join(n for n in notes if n),
                    o.location)


@functools.lru_cache(maxsize=16)
def _walk(text: str) -> _Walk:
    """The costed rows of a module; cached because views ask for rows and totals of one stage."""
    module = readable_module(text)
    with tensors_remembered():
        walker = _Walker(module)
        rows = walker.walk()
    ops = Counter(
        op.name.partition(".")[0]
        for top in module.body.operations
        for op in (top.operation, *nested_ops(top.operation))
    )
    return _Walk(rows, walker.loops_read, MappingProxyType(dict(sorted(ops.items()))), walker.work.done())


def model_work(text: str) -> Work:
    """The work the model did to cost ``text``, counted as it did it (``work.py``)."""
    return _walk(text).work


def _integers(values: list[int | None]) -> pd.api.extensions.ExtensionArray:
    """A nullable integer column; exact Python integers where a count outgrows int64 (a call tree of
    2**64 paths is a few hundred lines of text)."""
    import pandas as pd

    if all(v is None or -(2**63) <= v < 2**63 for v in values):
        return pd.array(values, dtype="Int64")
    return pd.array(values, dtype=object)


def op_costs(text: str) -> pd.DataFrame:
    """One row per op of the module, costed by the rules of ``rules.py``.

    A function's ops appear once however often it is called, and cost once per call (a function
    called twice costs twice); ops of functions nobody calls appear with no cost. ``flops``,
    ``transcendentals`` and ``bytes`` are what the row adds to the module's totals, trip counts and
    calls applied. ``trip_count`` is how many times the op runs in one execution: the product of the
    trip counts of the while loops around it, summed over the call paths that reach its function (1
    for an op of ``@main`` outside loops); ``calls`` is the number of those call paths (1 in ``@main``,
    0 in a function nothing calls). Unknown costs are ``<NA>``.
    """
    import pandas as pd

    walk = _walk(text)
    return pd.DataFrame(
        {
            "func": [r.func for r in walk.rows],
            "op": [r.op for r in walk.rows],
            "dialect": [r.op.partition(".")[0] for r in walk.rows],
            "kind": pd.Categorical([r.cost.kind for r in walk.rows], categories=KINDS),
            "result_shapes": [r.result_shapes for r in walk.rows],
            "flops": _integers([r.total("flops") for r in walk.rows]),
            "transcendentals": _integers([r.total("transcendentals") for r in walk.rows]),
            "bytes": _integers([r.total("bytes") for r in walk.rows]),
            "trip_count": _integers([r.trip_count for r in walk.rows]),
            "calls": _integers([r.calls for r in walk.rows]),
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
    ``loops_unknown``: the while loops that count whose trip count could not be read (each once per call
    path of its function, as XLA counts a body): the loops whose bodies count once in ``flops`` too.
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
    loops_unknown: int = 0


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
        unknown_custom_calls=sum(r.counted_calls for r in counted if r.cost.kind == "custom_call"),
        unmodelled_ops=sum(
            r.counted_calls for r in counted if r.cost.kind != "custom_call" and r.cost.flops is None
        ),
        flops_body_once=total("flops", once=True),
        transcendentals_body_once=total("transcendentals", once=True),
        bytes_body_once=total("bytes", once=True),
        loops_unknown=sum(r.counted_calls for r in counted if r.op == "stablehlo.while" and _UNREAD_TRIPS in r.note),
    )
