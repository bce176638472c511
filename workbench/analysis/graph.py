"""Dataflow pictures of one stage: ops as nodes, SSA values as edges, regions as clusters.

``stage_graph(stage, parent)`` returns a ``graphviz.Digraph``: notebooks show it as SVG through the
Digraph's own rich display (``_repr_mimebundle_``), and ``.pipe(format="svg")`` renders it with
Debian's ``dot``.

* MLIR / StableHLO stages are parsed with jaxlib's MLIR (``pipeline.exported.readable_module``, which tolerates
  Enzyme-JaX's attributes). Each op is a node labelled with its short name and result types
  (``dot_general`` / ``f32[64,32]``); each use of a value is an edge from the op or argument that
  defines it (``#k`` names the result of a multi-result op). Function arguments and ``return`` are
  nodes of their own. Regions (while cond/body, reduce bodies, case branches) are clusters next to
  their op; when there are several functions each is a cluster, and a ``call`` points to its
  callee's cluster. A ``stablehlo.composite`` (``composite chlo.top_k``) is drawn as a call of
  its ``decomposition`` function, the edge labelled ``decomposition``.
* XLA HLO stages (text starting with ``HloModule``) are read by a small parser of instruction
  lines, one cluster per computation. A fusion's (or call's) computation is drawn in place of the
  instruction, operands flowing into its parameters and its ROOT out to the users, as XLA's own
  graph dumper draws fusions; while cond/body, reduce and sort bodies and branches are clusters
  next to the instruction, with a dashed ``condition`` / ``body`` / ``to_apply`` ... edge.
* A callee with more than a few call sites gets no call edges (they would hide the dataflow); the
  caption says so, and each call names its callee.
* Ops that are new or changed relative to ``parent`` are filled with ``CHANGED_FILL``. An op's
  signature is its name, result types, attributes and, for each operand, what defines it (the
  defining op's name and result type, or the argument number); ops whose signature the parent does
  not have (counting multiplicity) are the changed ones. Ops the parent had and this stage lacks
  cannot be drawn; the caption counts them by name.
* Constants bigger than a few elements show their type, never their payload; splats show the value.
* A module with more than ``max_ops`` ops is drawn as one node per function (or computation) with
  its op count, and the caption says how to draw every op.

The picture is for reading; it promises no particular layout.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

import graphviz

from ..errors import GraphUnavailableError

__all__ = ["stage_graph", "CHANGED_FILL", "GraphUnavailableError"]

CHANGED_FILL = "#ffb454"
_OP_FILL = "#ffffff"
_CONST_FILL = "#eeeeee"
_ARG_FILL = "#dbe8f5"
_RETURN_FILL = "#e3f1dc"

_MAX_SHOWN_ELEMENTS = 4  # a constant with more elements shows only its type
_MAX_LABEL_CHARS = 48
_MAX_TOOLTIP_CHARS = 1500
_MAX_CALL_EDGES = 4  # a callee with more call sites gets no edges: they would hide the dataflow
_LARGE_EDGES = 200


# ---------------------------------------------------------------------------------------------------
# The drawn model: plain values, independent of the IR objects they were read from


@dataclass(frozen=True)
class _Node:
    id: str
    kind: str  # "op" | "const" | "arg" | "return"
    label: tuple[str, ...]  # lines, not yet escaped for DOT
    function: str  # the function / HLO computation it belongs to
    signature: tuple | None = None  # None for arguments: they are not ops
    tooltip: str = ""
    root: bool = False  # HLO: the computation's ROOT instruction


@dataclass(frozen=True)
class _Cluster:
    id: str
    label: str
    items: tuple["_Item", ...]
    function: str = ""
    signature: tuple | None = None  # HLO: the fusion or call instruction drawn as this cluster

    @property
    def anchor(self) -> str | None:
        """A node inside the cluster, for edges that point at the cluster as a whole."""
        for item in self.items:
            anchor = item.id if isinstance(item, _Node) else item.anchor
            if anchor is not None:
                return anchor
        return None


_Item = Union[_Node, _Cluster]


@dataclass(frozen=True)
class _Edge:
    tail: str
    head: str
    label: str = ""
    lhead: str = ""  # a cluster id: the edge ends at the cluster's border
    style: str = ""


@dataclass(frozen=True)
class _Function:
    name: str
    label: str
    ops: int
    calls: tuple[tuple[str, int], ...]  # (callee, number of call sites)


@dataclass(frozen=True)
class _Dataflow:
    kind: str  # "mlir" | "hlo"
    items: tuple[_Item, ...]
    edges: tuple[_Edge, ...]
    functions: tuple[_Function, ...]
    notes: tuple[str, ...] = ()

    def signed(self) -> list[_Node | _Cluster]:
        """The nodes and clusters that stand for an op, in order."""
        out: list[_Node | _Cluster] = []

        def walk(items):
            for item in items:
                if item.signature is not None:
                    out.append(item)
                if isinstance(item, _Cluster):
                    walk(item.items)

        walk(self.items)
        return out

    @property
    def op_count(self) -> int:
        return sum(f.ops for f in self.functions)


def _kind(text: str) -> str:
    head = text.lstrip()
    if head.startswith("HloModule"):
        return "hlo"
    if head.startswith("{ lambda") or not head:
        return "none"
    return "mlir"


@lru_cache(maxsize=32)
def _dataflow(text: str) -> _Dataflow:
    """The model of one stage's text; cached since a stage is drawn both as itself and as a parent."""
    if _kind(text) == "hlo":
        return _HloReader(text).read()
    from ..errors import ModuleParseError
    from ..pipeline.exported import readable_module

    try:
        module = readable_module(text)
    except ModuleParseError as err:
        raise GraphUnavailableError(str(err)) from err
    return _MlirReader().read(module)


def _many_callers(names) -> tuple[str, ...]:
    names = sorted(names)
    if not names:
        return ()
    shown = ", ".join(names[:6]) + (", \u2026" if len(names) > 6 else "")
    return (f"no call edges to {shown}: more than {_MAX_CALL_EDGES} call sites each; every call names its callee",)


# ---------------------------------------------------------------------------------------------------
# MLIR


def _op_name(op) -> str:
    """The op's name (``stablehlo.add``), whether ``op`` is an ``ir.Operation`` or an ``OpView``.

    Never ``op.name`` on what the bindings hand out: ``OpResult.owner`` and ``Block.owner`` are
    OpViews, and an OpView whose op has a ``name`` attribute (``stablehlo.composite``; ``func.func``,
    whose ``name`` is its ``sym_name``) answers ``.name`` with that attribute, not the op's name."""
    return op.operation.name


def _short_name(name: str) -> str:
    for prefix in ("stablehlo.", "mhlo.", "func."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _type_label(t) -> str:
    """``tensor<64x32xf32>`` -> ``f32[64,32]``; other types as MLIR prints them, shortened."""
    from jaxlib.mlir import ir

    if isinstance(t, ir.RankedTensorType):
        dims = ",".join("?" if t.is_dynamic_dim(i) else str(d) for i, d in enumerate(t.shape))
        return f"{t.element_type}[{dims}]"
    text = str(t)
    m = re.fullmatch(r"tensor<\*x(.+)>", text)
    if m:
        return f"{m.group(1)}[*]"
    return _clip(text.replace("!stablehlo.", ""))


def _clip(text: str, limit: int = _MAX_LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _results_label(types: list[str]) -> list[str]:
    if len(types) <= 4:
        return types
    return types[:3] + [f"\u2026 (+{len(types) - 3} results)"]


def _elements(attr) -> int | None:
    from jaxlib.mlir import ir

    try:
        shape = ir.ShapedType(attr.type)
        n = 1
        for d in shape.shape:
            n *= d
        return n
    except (ValueError, TypeError):
        return None


def _is_dense(attr) -> bool:
    from jaxlib.mlir import ir

    return isinstance(attr, ir.DenseElementsAttr)


def _attr_fingerprint(attr) -> str:
    """Text that identifies an attribute, without printing a large constant's payload."""
    if _is_dense(attr) and not attr.is_splat and (_elements(attr) or 0) > 16:
        import numpy as np

        try:
            data = np.asarray(attr).tobytes()
        except (ValueError, TypeError, RuntimeError):
            data = str(attr).encode()  # element types numpy cannot view (i1, complex ints)
        return f"dense#{hashlib.sha1(data).hexdigest()} : {attr.type}"
    return str(attr)


def _attr_display(attr) -> str:
    if _is_dense(attr) and not attr.is_splat and (_elements(attr) or 0) > 16:
        return f"dense<\u2026> : {attr.type}"
    return _clip(str(attr), 200)


def _scalar_text(attr) -> str:
    value = getattr(attr, "value", None)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return str(value)
    return str(attr).split(" : ")[0]


def _constant_label(op, result_types: list[str]) -> list[str]:
    """``constant 2.5`` for a splat, ``constant [1, 2, 3]`` for a few elements, else the type only."""
    attrs = op.operation.attributes
    head = _short_name(_op_name(op))
    value = attrs["value"] if "value" in attrs else None
    if value is None:
        return [head, *result_types]
    n = _elements(value)  # None for a scalar attribute (arith.constant 1.0 : f32)
    if _is_dense(value) and value.is_splat:
        head = f"{head} {_scalar_text(value.get_splat_value())}"
    elif _is_dense(value) and n is not None and n <= _MAX_SHOWN_ELEMENTS:
        shown = str(value)
        shown = shown[len("dense<"): shown.rfind(">")] if shown.startswith("dense<") else shown
        head = f"{head} {_clip(shown, 32)}"
    elif not _is_dense(value) and (n is None or n <= _MAX_SHOWN_ELEMENTS):
        head = f"{head} {_clip(_scalar_text(value), 32)}"
    return [head, *result_types]


def _op_head(op) -> str:
    """The first label line: the short name and, for a few ops, the attribute that says most."""
    name = _op_name(op)
    attrs = op.operation.attributes
    short = _short_name(name)
    if name == "func.call" and "callee" in attrs:
        return f"call {attrs['callee']}"
    if name == "stablehlo.composite" and "name" in attrs:
        return f"composite {_clip(_string_value(attrs['name']), 40)}"
    if name.endswith("custom_call") and "call_target_name" in attrs:
        target = attrs["call_target_name"]
        return f"{short} @{_clip(getattr(target, 'value', str(target)), 40)}"
    if name.endswith("compare") and "comparison_direction" in attrs:
        m = re.search(r"(\w+)>?\s*$", str(attrs["comparison_direction"]))
        return f"{short} {m.group(1).rstrip('>')}" if m else short
    return short


def _string_value(attr) -> str:
    """A StringAttr's or symbol reference's text (``chlo.top_k``, no quotes or ``@``), else as printed."""
    value = getattr(attr, "value", None)
    return value if isinstance(value, str) else str(attr)


def _callee(op) -> tuple[str, str] | None:
    """(callee symbol, edge label) of an op that calls a function: ``func.call``, and a
    ``stablehlo.composite``, which is a call of its ``decomposition`` to whoever does not know it."""
    name = _op_name(op)
    attrs = op.operation.attributes
    if name == "func.call" and "callee" in attrs:
        return _string_value(attrs["callee"]), ""
    if name == "stablehlo.composite" and "decomposition" in attrs:
        return _string_value(attrs["decomposition"]), "decomposition"
    return None


_REGION_NAMES = {"while": ("cond", "body"), "if": ("true", "false"), "sort": ("comparator",)}


def _region_name(short: str, index: int, count: int) -> str:
    names = _REGION_NAMES.get(short)
    if names and index < len(names):
        return names[index]
    if short == "case":
        return f"branch {index}"
    return "body" if count == 1 else f"region {index}"


class _MlirReader:
    def __init__(self) -> None:
        self._ids = itertools.count()
        self._defs: dict = {}  # ir.Value -> (node id, label of the edge it starts)
        self._uses: list[tuple] = []  # (ir.Value, user node id), resolved when everything is defined
        self._calls: list[tuple[str, str, str, str]] = []  # (call node id, caller, callee symbol, edge label)
        self._edges: list[_Edge] = []
        self._ops: Counter = Counter()
        self._callees: dict[str, Counter] = {}

    def _id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def read(self, module) -> _Dataflow:
        funcs = [op.operation for op in module.body.operations if _op_name(op) == "func.func"]
        several = len(funcs) > 1
        items: list[_Item] = []
        clusters: dict[str, _Cluster] = {}
        functions: list[_Function] = []
        for f in funcs:
            name = f.attributes["sym_name"].value
            self._callees[name] = Counter()
            body = self._block(f.regions[0].blocks[0], name, arg_prefix="%arg") if len(f.regions[0].blocks) else []
            if several:
                cluster = _Cluster(self._id("cluster_"), f"func @{name}", tuple(body))
                clusters[name] = cluster
                items.append(cluster)
            else:
                items.extend(body)
            functions.append(_Function(name, f"@{name}", self._ops[name], tuple(self._callees[name].items())))
        for value, user in self._uses:
            src = self._defs.get(value)
            if src is not None:
                self._edges.append(_Edge(src[0], user, src[1]))
        sites = Counter(callee for _, caller, callee, _ in self._calls if caller != callee)
        unlinked: dict[str, str] = {}  # composite node id -> its decomposition, named in its label
        for node, caller, callee, label in self._calls:
            target = clusters.get(callee)
            if target is None or target.anchor is None or caller == callee:
                continue
            if sites[callee] <= _MAX_CALL_EDGES:
                self._edges.append(_Edge(node, target.anchor, label, lhead=target.id, style="dashed"))
            elif label:  # a call's label names its callee already; a composite's names the composite
                unlinked[node] = f"{label}=@{callee}"
        if unlinked:
            items = _with_lines(items, unlinked)
        notes = _many_callers(f"@{name}" for name, n in sites.items() if name in clusters and n > _MAX_CALL_EDGES)
        return _Dataflow("mlir", tuple(items), tuple(self._edges), tuple(functions), notes)

    def _block(self, block, function: str, arg_prefix: str) -> list[_Item]:
        items: list[_Item] = []
        for i, arg in enumerate(block.arguments):
            nid = self._id()
            self._defs[arg] = (nid, "")
            items.append(_Node(nid, "arg", (f"{arg_prefix}{i}", _type_label(arg.type)), function))
        for op in block.operations:
            items.extend(self._op(op.operation, function))
        return items

    def _op(self, op, function: str) -> list[_Item]:
        op = op.operation
        nid = self._id()
        self._ops[function] += 1
        name = _op_name(op)
        short = _short_name(name)
        results = list(op.results)
        result_types = [_type_label(r.type) for r in results]
        attrs = op.attributes
        attr_items = [(attrs[i].name, attrs[i].attr) for i in range(len(attrs))]
        for k, r in enumerate(results):
            self._defs[r] = (nid, f"#{k}" if len(results) > 1 else "")
        operands = list(op.operands)
        self._uses.extend((v, nid) for v in operands)
        if not results and name.endswith("return"):  # func.return, and stablehlo.return ending a region
            kind = "return"
            label = ["return"]
        elif short.rpartition(".")[2] == "constant":
            kind = "const"
            label = _constant_label(op, _results_label(result_types))
        else:
            kind = "op"
            label = [_op_head(op), *_results_label(result_types)]
        call = _callee(op)
        if call is not None:
            self._calls.append((nid, function, *call))
            self._callees[function][call[0]] += 1
        signature = (
            short,
            tuple(str(r.type) for r in results),
            tuple(sorted((n, _attr_fingerprint(a)) for n, a in attr_items)),
            tuple(_operand_origin(v) for v in operands),
            len(op.regions),
        )
        tooltip = name
        if attr_items:
            tooltip += " {" + ", ".join(f"{n} = {_attr_display(a)}" for n, a in attr_items) + "}"
        node = _Node(nid, kind, tuple(label), function, signature, _clip(tooltip, _MAX_TOOLTIP_CHARS))
        items: list[_Item] = [node]
        count = len(op.regions)
        for r, region in enumerate(op.regions):
            region_label = f"{short} {_region_name(short, r, count)}"
            body: list[_Item] = []
            for b, block in enumerate(region.blocks):
                body.extend(self._block(block, function, arg_prefix=f"bb{b}:arg" if b else "arg"))
            cluster = _Cluster(self._id("cluster_"), region_label, tuple(body))
            if cluster.anchor is not None:
                self._edges.append(_Edge(nid, cluster.anchor, lhead=cluster.id, style="dotted"))
            items.append(cluster)
        return items


def _operand_origin(value) -> tuple:
    """What defines an operand, without naming it: names change whenever ops are added or removed."""
    from jaxlib.mlir import ir

    owner = value.owner  # a Block for a block argument, else the defining op (an OpView)
    if isinstance(owner, ir.Block):
        parent = owner.owner  # the op holding the block's region: func.func, while, sort, ...
        return ("arg", ir.BlockArgument(value).arg_number, _op_name(parent) if parent is not None else "",
                str(value.type))
    return (_short_name(_op_name(owner)), ir.OpResult(value).result_number, str(value.type))


def _with_lines(items, extra: dict[str, str]) -> list[_Item]:
    """``items`` with a line added to the label of each node named in ``extra`` (by id)."""
    out: list[_Item] = []
    for item in items:
        if isinstance(item, _Cluster):
            item = dataclasses.replace(item, items=tuple(_with_lines(item.items, extra)))
        elif item.id in extra:
            item = dataclasses.replace(item, label=(*item.label, extra[item.id]))
        out.append(item)
    return out


# ---------------------------------------------------------------------------------------------------
# XLA HLO text


_HLO_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(")
_HLO_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_HLO_REF = re.compile(r"%([\w.\-]+)")
_HLO_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_HLO_LAYOUT = re.compile(r"\]\{[^{}]*\}")
_HLO_NAMED_COMPUTATIONS = re.compile(r"\b([\w]+)=(%[\w.\-]+|\{[^{}]*\})")


def _balanced_end(text: str, i: int) -> int:
    """Index just past the bracketed group opening at ``text[i]``, skipping string literals."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            m = _HLO_STRING.match(text, i)
            i = m.end() if m else len(text)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _drop_attribute(text: str, name: str) -> str:
    """``text`` without the ``name={...}`` attribute (HLO's ``metadata``, which is debug info)."""
    while True:
        i = text.find(f"{name}={{")
        if i < 0:
            return text
        end = _balanced_end(text, i + len(name) + 1)
        text = text[:i].rstrip(", ") + text[end:]


@dataclass(frozen=True)
class _HloInstruction:
    name: str
    root: bool
    shape: str
    opcode: str
    operands: str
    attributes: str


def _split_instruction(line: str) -> _HloInstruction | None:
    m = _HLO_INSTRUCTION.match(line)
    if not m:
        return None
    rest = m.group(3)
    if rest.startswith("("):
        end = _balanced_end(rest, 0)
    else:
        end = 0
        while end < len(rest) and not rest[end].isspace():
            end = _balanced_end(rest, end) if rest[end] in "[{" else end + 1
    shape, rest = rest[:end], rest[end:].lstrip()
    op = re.match(r"([\w\-]+)\(", rest)
    if not op:
        return None
    close = _balanced_end(rest, op.end() - 1)
    operands = rest[op.end(): close - 1]
    attributes = rest[close:].lstrip(", ")
    return _HloInstruction(m.group(2), bool(m.group(1)), shape, op.group(1), operands, attributes)


@dataclass(frozen=True)
class _HloComputation:
    name: str
    entry: bool
    instructions: tuple[_HloInstruction, ...]


@dataclass(frozen=True)
class _HloCall:
    caller: str
    instruction: _HloInstruction
    attribute: str  # calls, to_apply, body, condition, branch_computations, ...
    callee: str


@dataclass(frozen=True)
class _Drawn:
    """One computation as drawn: its items, the nodes of its parameters (by number) and of its ROOT."""

    items: tuple[_Item, ...]
    parameters: dict[int, str]
    root: str | None


_INLINED = {("fusion", "calls"), ("call", "to_apply")}


def _hlo_computations(text: str) -> list[_HloComputation]:
    """The computations of HLO text, in order; lines outside them (the debug-info sections) are skipped."""
    computations: list[_HloComputation] = []
    header: tuple[str, bool] | None = None
    current: list[_HloInstruction] = []
    for line in text.splitlines():
        stripped = line.strip()
        if header is None:
            m = _HLO_HEADER.match(stripped)
            if m and stripped.endswith("{") and "->" in stripped:
                header, current = (m.group(2), bool(m.group(1))), []
            continue
        if stripped == "}":
            computations.append(_HloComputation(header[0], header[1], tuple(current)))
            header = None
            continue
        instruction = _split_instruction(line)
        if instruction is not None:
            current.append(instruction)
    return computations


class _HloReader:
    """Computations as clusters. A fusion's or call's computation with that one call site is drawn
    in place of the instruction, its operands flowing into the parameters and its ROOT out to the
    users, as XLA's own graph dumper draws fusions; other called computations (while cond/body,
    reduce and sort bodies, branches) are clusters next to the caller, or on their own when several
    instructions call them, with an edge from each call site. Edges from call sites to far-away
    clusters would make dot's spline routing take minutes on a few hundred instructions."""

    def __init__(self, text: str) -> None:
        self._computations = {c.name: c for c in _hlo_computations(text)}
        self._calls = [
            _HloCall(c.name, ins, attr, callee)
            for c in self._computations.values()
            for ins in c.instructions
            for attr, value in _HLO_NAMED_COMPUTATIONS.findall(
                _HLO_STRING.sub('""', _drop_attribute(ins.attributes, "metadata")))
            for callee in _HLO_REF.findall(value)
            if callee in self._computations and callee != c.name
        ]
        self._sites = Counter(call.callee for call in self._calls)
        # (computation, instruction) -> the computation drawn in its place
        self._inlined = {
            (call.caller, call.instruction.name): call.callee for call in self._calls
            if (call.instruction.opcode, call.attribute) in _INLINED and self._sites[call.callee] == 1
            and not self._computations[call.callee].entry
        }
        # computation -> the calls whose callee is drawn as a cluster inside it
        self._nested: dict[str, list[_HloCall]] = {}
        self._placed = set(self._inlined.values())
        for call in self._calls:
            if self._sites[call.callee] == 1 and call.callee not in self._placed:
                self._nested.setdefault(call.caller, []).append(call)
                self._placed.add(call.callee)
        # (computation, instruction) -> its calls that get no edge, named in its label instead
        self._unlinked: dict[tuple[str, str], list[_HloCall]] = {}
        for call in self._calls:
            if self._sites[call.callee] > _MAX_CALL_EDGES:
                self._unlinked.setdefault((call.caller, call.instruction.name), []).append(call)
        self._ids = itertools.count()
        self._edges: list[_Edge] = []
        self._clusters: dict[str, _Cluster] = {}
        self._drawn_ids: dict[tuple[str, str], str] = {}  # (computation, instruction) -> node id

    def _id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def read(self) -> _Dataflow:
        items: list[_Item] = []
        for c in self._computations.values():
            if c.name not in self._placed:
                cluster = _Cluster(self._id("cluster_"), f"ENTRY {c.name}" if c.entry else c.name, self._draw(c).items)
                self._clusters[c.name] = cluster
                items.append(cluster)
        for call in self._calls:
            if 1 < self._sites[call.callee] <= _MAX_CALL_EDGES:
                self._call_edge(call)
        functions = tuple(
            _Function(c.name, f"ENTRY {c.name}" if c.entry else c.name,
                      sum(1 for ins in c.instructions if ins.opcode != "parameter"),
                      tuple(Counter(call.callee for call in self._calls if call.caller == c.name).items()))
            for c in self._computations.values()
        )
        notes = _many_callers(name for name, n in self._sites.items() if n > _MAX_CALL_EDGES)
        return _Dataflow("hlo", tuple(items), tuple(self._edges), functions, notes)

    def _call_edge(self, call: _HloCall) -> None:
        target = self._clusters[call.callee]
        tail = self._drawn_ids.get((call.caller, call.instruction.name))
        if tail is not None and target.anchor is not None:
            self._edges.append(_Edge(tail, target.anchor, call.attribute, lhead=target.id, style="dashed"))

    def _draw(self, comp: _HloComputation) -> _Drawn:
        items: list[_Item] = []
        ids: dict[str, str] = {}
        parameters: dict[int, str] = {}
        root: str | None = None
        by_name = {ins.name: ins for ins in comp.instructions}
        for ins in comp.instructions:
            refs = [r for r in _HLO_REF.findall(ins.operands) if r in ids]
            clean = _drop_attribute(ins.attributes, "metadata")
            shape = _HLO_LAYOUT.sub("]", ins.shape)
            callee = self._inlined.get((comp.name, ins.name))
            if callee is not None:
                inner = self._draw(self._computations[callee])
                label = f"{_hlo_head(ins, clean)}: {callee}"
                items.append(_Cluster(self._id("cluster_"), label, inner.items, comp.name,
                                      _hlo_signature(ins, clean, refs, by_name)))
                for k, r in enumerate(refs):
                    if k in inner.parameters:
                        self._edges.append(_Edge(ids[r], inner.parameters[k]))
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
                self._edges.append(_Edge(ids[r], nid))
            tooltip = _clip(f"%{ins.name} = {ins.shape} {ins.opcode}({_clip(ins.operands, 200)})"
                            + (f", {clean}" if clean else ""), _MAX_TOOLTIP_CHARS)
            if ins.opcode == "parameter":
                number = ins.operands.strip()
                if number.isdigit():
                    parameters[int(number)] = nid
                items.append(_Node(nid, "arg", (f"parameter({number})", _clip(shape)), comp.name, tooltip=tooltip))
                continue
            signature = _hlo_signature(ins, clean, refs, by_name)
            kind = "const" if ins.opcode == "constant" else "op"
            label = (_hlo_head(ins, clean), _clip(shape),
                     *(f"{c.attribute}={c.callee}" for c in self._unlinked.get((comp.name, ins.name), ())))
            items.append(_Node(nid, kind, label, comp.name, signature, tooltip, ins.root))
        for call in self._nested.get(comp.name, ()):
            inner = self._draw(self._computations[call.callee])
            cluster = _Cluster(self._id("cluster_"), f"{call.attribute}: {call.callee}", inner.items)
            self._clusters[call.callee] = cluster
            items.append(cluster)
            self._call_edge(call)
        return _Drawn(tuple(items), parameters, root)


def _hlo_signature(ins: _HloInstruction, attributes: str, refs: list[str],
                   by_name: dict[str, _HloInstruction]) -> tuple:
    """What an instruction is and reads, without the names that renumbering changes."""
    origins = tuple(
        ("parameter", by_name[r].operands.strip()) if by_name[r].opcode == "parameter"
        else (by_name[r].opcode, _HLO_LAYOUT.sub("]", by_name[r].shape))
        for r in refs
    )
    return (ins.opcode, ins.shape, _HLO_REF.sub("%", attributes), origins, ins.root)


def _hlo_head(ins: _HloInstruction, attributes: str) -> str:
    if ins.opcode == "constant":
        literal = ins.operands.strip()
        return f"constant {literal}" if len(literal) <= 16 and "{" not in literal else "constant"
    extra = ""
    for key in ("kind", "direction", "custom_call_target", "index"):
        m = re.search(rf"\b{key}=(\"(?:[^\"\\]|\\.)*\"|[\w.\-]+)", attributes)
        if m:
            extra = m.group(1).strip('"')
            break
    return f"{ins.opcode} {_clip(extra, 40)}" if extra else ins.opcode


# ---------------------------------------------------------------------------------------------------
# Comparing with the parent, and drawing


@dataclass(frozen=True)
class _Comparison:
    changed: frozenset[str]  # node ids of the ops whose signature the parent lacks
    modified: Counter  # op name -> how many of those the parent has an op of that name for
    added: Counter  # op name -> how many have no op of that name left in the parent
    removed: Counter  # op name -> how many of the parent's ops are left over


def _compare(model: _Dataflow, parent: _Dataflow) -> _Comparison:
    available = Counter(n.signature for n in parent.signed())
    changed: list[_Node | _Cluster] = []
    for n in model.signed():
        if available[n.signature] > 0:
            available[n.signature] -= 1
        else:
            changed.append(n)
    left: Counter = Counter()
    for signature, count in available.items():
        if count > 0:
            left[signature[0]] += count
    modified: Counter = Counter()
    added: Counter = Counter()
    for n in changed:
        name = n.signature[0]
        if left[name] > 0:
            left[name] -= 1
            modified[name] += 1
        else:
            added[name] += 1
    return _Comparison(frozenset(n.id for n in changed), modified, added, +left)


def _tally(counts: Counter, limit: int = 6) -> str:
    shown = ", ".join(f"{name} \u00d7{n}" if n > 1 else name for name, n in counts.most_common(limit))
    return shown + (", \u2026" if len(counts) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _dot_text(*lines: str, left: bool = False) -> str:
    r"""One DOT label from plain lines: backslashes made literal, lines ended by ``\n`` (centred) or
    ``\l`` (left-justified), never read as an HTML label."""
    escaped = [line.replace("\\", "\\\\") for line in lines]
    return graphviz.nohtml("".join(f"{line}\\l" for line in escaped) if left else "\\n".join(escaped))


_SHAPES = {"op": "box", "const": "box", "arg": "ellipse", "return": "invhouse"}
_FILLS = {"op": _OP_FILL, "const": _CONST_FILL, "arg": _ARG_FILL, "return": _RETURN_FILL}


def _emit(graph: graphviz.Digraph, items, changed: frozenset[str]) -> None:
    for item in items:
        if isinstance(item, _Cluster):
            with graph.subgraph(name=item.id) as sub:
                sub.attr(label=_dot_text(item.label), style="rounded", fontsize="10",
                         **({"color": CHANGED_FILL, "penwidth": "2"} if item.id in changed else {"color": "#999999"}))
                _emit(sub, item.items, changed)
            continue
        attrs = {
            "label": _dot_text(*item.label),
            "shape": _SHAPES[item.kind],
            "fillcolor": CHANGED_FILL if item.id in changed else _FILLS[item.kind],
        }
        if item.tooltip:
            attrs["tooltip"] = _dot_text(item.tooltip)
        if item.root:
            attrs["peripheries"] = "2"
        graph.node(item.id, **attrs)


def _new_graph(caption: list[str]) -> graphviz.Digraph:
    return graphviz.Digraph(
        graph_attr={"compound": "true", "rankdir": "TB", "labelloc": "t", "labeljust": "l",
                    "fontname": "Helvetica", "fontsize": "11", "label": _dot_text(*caption, left=True),
                    "nodesep": "0.25", "ranksep": "0.35"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "rounded,filled",
                   "height": "0.3", "margin": "0.08,0.03"},
        edge_attr={"fontname": "Helvetica", "fontsize": "8", "arrowsize": "0.6", "color": "#555555"},
    )


def _draw_all(model: _Dataflow, caption: list[str], changed: frozenset[str]) -> graphviz.Digraph:
    g = _new_graph(caption)
    if len(model.edges) > _LARGE_EDGES:
        # dot places x coordinates by network simplex over one virtual node per rank an edge
        # crosses; gradients keep activations alive across hundreds of ranks, and without a limit
        # a 400-op gradient takes minutes instead of seconds.
        g.graph_attr["nslimit"] = "1"
    _emit(g, model.items, changed)
    for e in model.edges:
        attrs = {}
        if e.label:
            # xlabel, not label: a labelled edge makes dot split every rank in two, which made
            # a 300-op gradient take 25 s to lay out instead of 1 s.
            attrs["xlabel"] = _dot_text(e.label)
        if e.lhead:
            attrs["lhead"] = e.lhead
        if e.style:
            attrs["style"] = e.style
        g.edge(e.tail, e.head, **attrs)
    return g


def _draw_collapsed(model: _Dataflow, caption: list[str], changed: frozenset[str]) -> graphviz.Digraph:
    g = _new_graph(caption)
    per_function = Counter(n.function for n in model.signed() if n.id in changed)
    ids = {f.name: f"f{i}" for i, f in enumerate(model.functions)}
    for f in model.functions:
        lines = [f.label, f"{f.ops} ops"]
        if per_function[f.name]:
            lines.append(f"{per_function[f.name]} new/changed")
        g.node(ids[f.name], label=_dot_text(*lines), shape="box",
               fillcolor=CHANGED_FILL if per_function[f.name] else _OP_FILL)
    for f in model.functions:
        for callee, count in f.calls:
            if callee in ids:
                attrs = {"xlabel": _dot_text(f"\u00d7{count}")} if count > 1 else {}
                g.edge(ids[f.name], ids[callee], style="dashed", **attrs)
    return g


def _parent_comparison(model: _Dataflow, kind: str, parent) -> tuple[_Comparison | None, str]:
    if parent is None:
        return None, ""
    if parent.error or not parent.text:
        return None, f"not compared with {parent.name!r}: that stage has no text"
    parent_kind = _kind(parent.text)
    if parent_kind != kind:
        what = {"hlo": "XLA HLO", "mlir": "MLIR", "none": "not a module"}[parent_kind]
        return None, f"not compared with {parent.name!r}: it is {what}"
    try:
        parent_model = _dataflow(parent.text)
    except GraphUnavailableError as err:
        return None, f"not compared with {parent.name!r}: it does not parse ({str(err).splitlines()[0]})"
    comparison = _compare(model, parent_model)
    if not comparison.changed and not comparison.removed:
        return comparison, f"no op changed since {parent.name!r}"
    colour = "orange (filled, or outlined for a fusion or call cluster)" if kind == "hlo" else "filled orange"
    parts = [f"{colour}: {_plural(len(comparison.changed), 'op')} new or changed since {parent.name!r}"]
    for what, counts in (("changed", comparison.modified), ("new", comparison.added),
                         ("removed", comparison.removed)):
        if counts:
            parts.append(f"{what}: {_tally(counts)}")
    line = "; ".join(parts)
    return comparison, line


def stage_graph(stage, parent=None, max_ops: int = 400) -> graphviz.Digraph:
    """The dataflow graph of ``stage`` (a ``Stage``), highlighting what changed since ``parent``.

    MLIR/StableHLO and XLA HLO stages can be drawn; a jaxpr or backend dump raises
    ``GraphUnavailableError``. ``parent`` (a ``Stage`` or None) is compared only when it holds the
    same kind of text. Above ``max_ops`` ops the graph has one node per function (computation);
    pass a larger ``max_ops`` to see every op. The result renders with ``.pipe(format="svg")`` and
    shows as SVG in a notebook.
    """
    if stage.error or not stage.text:
        raise GraphUnavailableError(
            f"stage {stage.name!r} has no text to draw" + (" (it failed; see ex.error)" if stage.error else ""))
    kind = _kind(stage.text)
    if kind == "none":
        raise GraphUnavailableError(
            f"stage {stage.name!r} is not an MLIR or HLO module (group {stage.group!r}); "
            "draw a StableHLO, MLIR-pass or xla: stage instead")
    try:
        model = _dataflow(stage.text)
    except GraphUnavailableError as err:
        raise GraphUnavailableError(f"stage {stage.name!r} does not parse as MLIR: {err}") from err
    comparison, compared = _parent_comparison(model, kind, parent)
    changed = comparison.changed if comparison else frozenset()
    total = model.op_count
    unit = "instructions" if kind == "hlo" else "ops"
    caption = [f"{stage.name}: {total} {unit}"]
    if compared:
        caption.append(compared)
    if total <= max_ops:
        caption.extend(model.notes)
    if total > max_ops:
        per = "computation" if kind == "hlo" else "function"
        caption.append(f"collapsed to one node per {per}: {total} {unit} > max_ops={max_ops}; "
                       f"pass max_ops={total} to draw every op")
        return _draw_collapsed(model, caption, changed)
    return _draw_all(model, caption, changed)
