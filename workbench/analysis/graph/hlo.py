"""XLA HLO stages as a ``Dataflow``, one cluster per computation, from ``workbench.ir.hlo``'s reader."""
from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from dataclasses import dataclass

from ...ir.hlo import (Call, Computation, HloModule, Instruction, attribute_value, drop_attribute, without_layout,
                       without_names)
from ...ir.hlo_locations import op_name
from .model import MAX_CALL_EDGES, MAX_TOOLTIP_CHARS, Cluster, Dataflow, Edge, Function, Item, Node, clip, many_callers

__all__ = ["HloReader"]


@dataclass(frozen=True)
class _Drawn:
    """One computation as drawn: its items, the nodes of its parameters (by number) and of its ROOT."""

    items: tuple[Item, ...]
    parameters: dict[int, str]
    root: str | None


_INLINED = {("fusion", "calls"), ("call", "to_apply")}


class HloReader:
    """Computations as clusters. A fusion's or call's computation with that one call site is drawn
    in place of the instruction, its operands flowing into the parameters and its ROOT out to the
    users, as XLA's own graph dumper draws fusions; other called computations (while cond/body,
    reduce and sort bodies, branches) are clusters next to the caller, or on their own when several
    instructions call them, with an edge from each call site. Edges from call sites to far-away
    clusters would make dot's spline routing take minutes on a few hundred instructions."""

    def __init__(self, module: HloModule, ops: dict[str, Counter]) -> None:
        """``ops`` are the op counts of each computation (``workbench.ir.ops.op_counts_by_function``)."""
        self._computations = {c.name: c for c in module.computations}
        self._ops = ops
        self._calls = module.calls
        self._sites = Counter(call.callee for call in self._calls)
        # (computation, instruction) -> the computation drawn in its place
        self._inlined = {
            (call.caller, call.instruction.name): call.callee for call in self._calls
            if (call.instruction.opcode, call.attribute) in _INLINED and self._sites[call.callee] == 1
            and not self._computations[call.callee].entry
        }
        # computation -> the calls whose callee is drawn as a cluster inside it
        self._nested: dict[str, list[Call]] = {}
        self._placed = set(self._inlined.values())
        for call in self._calls:
            if self._sites[call.callee] == 1 and call.callee not in self._placed:
                self._nested.setdefault(call.caller, []).append(call)
                self._placed.add(call.callee)
        # (computation, instruction) -> its calls that get no edge, named in its label instead
        self._unlinked: dict[tuple[str, str], list[Call]] = {}
        for call in self._calls:
            if self._sites[call.callee] > MAX_CALL_EDGES:
                self._unlinked.setdefault((call.caller, call.instruction.name), []).append(call)
        self._ids = itertools.count()
        self._edges: list[Edge] = []
        self._clusters: dict[str, Cluster] = {}
        self._drawn_ids: dict[tuple[str, str], str] = {}  # (computation, instruction) -> node id

    def _id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def read(self) -> Dataflow:
        items: list[Item] = []
        for c in self._computations.values():
            if c.name not in self._placed:
                cluster = Cluster(self._id("cluster_"), f"ENTRY {c.name}" if c.entry else c.name, self._draw(c).items,
                                  c.name)
                self._clusters[c.name] = cluster
                items.append(cluster)
        for call in self._calls:
            if 1 < self._sites[call.callee] <= MAX_CALL_EDGES:
                self._call_edge(call)
        # a computation several instructions call belongs, for grouping, to the first of them
        first_site = {}
        for call in self._calls:
            first_site.setdefault(call.callee, self._drawn_ids.get((call.caller, call.instruction.name), ""))
        items = [dataclasses.replace(item, owner=first_site[item.function]) if item.function in first_site else item
                 for item in items]
        callees: dict[str, Counter] = {}
        for call in self._calls:
            callees.setdefault(call.caller, Counter())[call.callee] += 1
        functions = tuple(
            Function(c.name, f"ENTRY {c.name}" if c.entry else c.name,
                      _instructions(self._ops.get(c.name, Counter())), tuple(callees.get(c.name, Counter()).items()))
            for c in self._computations.values()
        )
        notes = many_callers(name for name, n in self._sites.items() if n > MAX_CALL_EDGES)
        return Dataflow("hlo", tuple(items), tuple(self._edges), functions, notes)

    def _call_edge(self, call: Call) -> None:
        target = self._clusters[call.callee]
        tail = self._drawn_ids.get((call.caller, call.instruction.name))
        if tail is not None and target.anchor is not None:
            self._edges.append(Edge(tail, target.anchor, call.attribute, lhead=target.id, style="dashed"))

    def _draw(self, comp: Computation) -> _Drawn:
        items: list[Item] = []
        ids: dict[str, str] = {}
        parameters: dict[int, str] = {}
        root: str | None = None
        by_name = {ins.name: ins for ins in comp.instructions}
        for ins in comp.instructions:
            refs = [r for r in ins.operand_names if r in ids]
            clean = drop_attribute(ins.attributes, "metadata")
            shape = without_layout(ins.shape)
            callee = self._inlined.get((comp.name, ins.name))
            if callee is not None:
                inner = self._draw(self._computations[callee])
                label = f"{_hlo_head(ins, clean)}: {callee}"
                items.append(Cluster(self._id("cluster_"), label, inner.items, comp.name,
                                      _hlo_signature(ins, clean, refs, by_name), op_name(ins.attributes)))
                for k, r in enumerate(refs):
                    if k in inner.parameters:
                        self._edges.append(Edge(ids[r], inner.parameters[k]))
                if inner.root is not None:
                    ids[ins.name] = inner.root
                    self._drawn_ids[(comp.name, ins.name)] = inner.root
                if ins.root:
                    root = ids.get(ins.name)
                continue
            nid = self._id()
            ids[ins.name] = nid
            self._drawn_ids[(comp.name, ins.name)] = nid
            if ins.root:
                root = nid
            for r in refs:
                self._edges.append(Edge(ids[r], nid))
            tooltip = clip(f"%{ins.name} = {ins.shape} {ins.opcode}({clip(ins.operands, 200)})"
                            + (f", {clean}" if clean else ""), MAX_TOOLTIP_CHARS)
            if ins.opcode == "parameter":
                number = ins.operands.strip()
                if number.isdigit():
                    parameters[int(number)] = nid
                items.append(Node(nid, "arg", (f"parameter({number})", clip(shape)), comp.name, tooltip=tooltip))
                continue
            signature = _hlo_signature(ins, clean, refs, by_name)
            kind = "const" if ins.opcode == "constant" else "op"
            label = (_hlo_head(ins, clean), clip(shape),
                     *(f"{c.attribute}={c.callee}" for c in self._unlinked.get((comp.name, ins.name), ())))
            items.append(Node(nid, kind, label, comp.name, signature, tooltip, ins.root, op_name(ins.attributes)))
        for call in self._nested.get(comp.name, ()):
            inner = self._draw(self._computations[call.callee])
            cluster = Cluster(self._id("cluster_"), f"{call.attribute}: {call.callee}", inner.items, call.callee,
                              owner=self._drawn_ids.get((comp.name, call.instruction.name), ""))
            self._clusters[call.callee] = cluster
            items.append(cluster)
            self._call_edge(call)
        return _Drawn(tuple(items), parameters, root)


def _hlo_signature(ins: Instruction, attributes: str, refs: list[str],
                   by_name: dict[str, Instruction]) -> tuple:
    """What an instruction is and reads, without the names that renumbering changes."""
    origins = tuple(
        ("parameter", by_name[r].operands.strip()) if by_name[r].opcode == "parameter"
        else (by_name[r].opcode, without_layout(by_name[r].shape))
        for r in refs
    )
    return (ins.opcode, ins.shape, without_names(attributes), origins, ins.root)


def _hlo_head(ins: Instruction, attributes: str) -> str:
    if ins.opcode == "constant":
        literal = ins.operands.strip()
        return f"constant {literal}" if len(literal) <= 16 and "{" not in literal else "constant"
    extra = next((v for key in ("kind", "direction", "custom_call_target", "index")
                  if (v := attribute_value(attributes, key)) is not None), "")
    return f"{ins.opcode} {clip(extra, 40)}" if extra else ins.opcode




def _instructions(ops: Counter) -> int:
    """The instructions a computation draws as ops: its parameters are its arguments."""
    return sum(ops.values()) - ops["parameter"]
