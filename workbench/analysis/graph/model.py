"""The drawn model of one stage: plain values, independent of the IR objects they were read from.

``mlir.py`` and ``hlo.py`` read a module into a ``Dataflow``; ``render.py`` compares two and draws one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

__all__ = ["Node", "Cluster", "Item", "Edge", "Function", "Dataflow", "clip", "many_callers",
           "MAX_LABEL_CHARS", "MAX_TOOLTIP_CHARS", "MAX_CALL_EDGES"]

MAX_LABEL_CHARS = 48
MAX_TOOLTIP_CHARS = 1500
MAX_CALL_EDGES = 4  # a callee with more call sites gets no edges: they would hide the dataflow


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # "op" | "const" | "arg" | "return"
    label: tuple[str, ...]  # lines, not yet escaped for DOT
    function: str  # the function / HLO computation it belongs to
    signature: tuple | None = None  # None for arguments: they are not ops
    tooltip: str = ""
    root: bool = False  # HLO: the computation's ROOT instruction
    scope: str = ""  # JAX's name stack of the op, as its location or metadata holds it ("" when none)


@dataclass(frozen=True)
class Cluster:
    id: str
    label: str
    items: tuple["Item", ...]
    function: str = ""
    signature: tuple | None = None  # HLO: the fusion or call instruction drawn as this cluster
    scope: str = ""  # the name stack of that instruction
    owner: str = ""  # a region or called computation: the id of the op holding or calling it

    @property
    def anchor(self) -> str | None:
        """A node inside the cluster, for edges that point at the cluster as a whole."""
        for item in self.items:
            anchor = item.id if isinstance(item, Node) else item.anchor
            if anchor is not None:
                return anchor
        return None


Item = Union[Node, Cluster]


@dataclass(frozen=True)
class Edge:
    tail: str
    head: str
    label: str = ""
    lhead: str = ""  # a cluster id: the edge ends at the cluster's border
    style: str = ""


@dataclass(frozen=True)
class Function:
    name: str
    label: str
    ops: int
    calls: tuple[tuple[str, int], ...]  # (callee, number of call sites)


@dataclass(frozen=True)
class Dataflow:
    kind: str  # "mlir" | "hlo"
    items: tuple[Item, ...]
    edges: tuple[Edge, ...]
    functions: tuple[Function, ...]
    notes: tuple[str, ...] = ()

    def signed(self) -> list[Node | Cluster]:
        """The nodes and clusters that stand for an op, in order."""
        out: list[Node | Cluster] = []

        def walk(items):
            for item in items:
                if item.signature is not None:
                    out.append(item)
                if isinstance(item, Cluster):
                    walk(item.items)

        walk(self.items)
        return out

    @property
    def op_count(self) -> int:
        return sum(f.ops for f in self.functions)



def clip(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"



def many_callers(names) -> tuple[str, ...]:
    names = sorted(names)
    if not names:
        return ()
    shown = ", ".join(names[:6]) + (", \u2026" if len(names) > 6 else "")
    return (f"no call edges to {shown}: more than {MAX_CALL_EDGES} call sites each; every call names its callee",)
