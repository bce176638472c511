"""MLIR / StableHLO stages as a ``Dataflow``: ops as nodes, each use of a value an edge, regions and
functions as clusters, calls (and composites' decompositions) as dashed edges to the callee."""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections import Counter

from ...ir.locations import fast_name_stack, read_location
from ...ir.mlir import OpaqueAttribute, attribute, attribute_items
from ...ir.text import comparison_direction, unranked_element_type
from .model import MAX_CALL_EDGES, MAX_TOOLTIP_CHARS, Cluster, Dataflow, Edge, Function, Item, Node, clip, many_callers

__all__ = ["MlirReader"]

_MAX_SHOWN_ELEMENTS = 4  # a constant with more elements shows only its type


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
    element = unranked_element_type(text)
    if element is not None:
        return f"{element}[*]"
    return clip(text.replace("!stablehlo.", ""))


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


def _attr_texts(attr) -> tuple[str, str]:
    """Text that identifies an attribute, and text that shows it, without printing a large constant's
    payload."""
    if isinstance(attr, OpaqueAttribute):  # a complex constant: its text, its payload hashed when long
        text = attr.text
        if len(text) <= 200:
            return text, text
        kind = text[text.rfind(" : ") + 3:] if " : " in text else ""
        return f"dense#{hashlib.sha1(text.encode()).hexdigest()} : {kind}", f"dense<\u2026> : {kind}"
    if _is_dense(attr) and not attr.is_splat and (_elements(attr) or 0) > 16:
        import numpy as np

        try:
            data = np.asarray(attr).tobytes()
        except (ValueError, TypeError, RuntimeError):
            data = str(attr).encode()  # element types numpy cannot view (i1, complex ints)
        return f"dense#{hashlib.sha1(data).hexdigest()} : {attr.type}", f"dense<\u2026> : {attr.type}"
    text = str(attr)
    return text, clip(text, 200)


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
    head = _short_name(_op_name(op))
    value = attribute(op, "value")
    if value is None:
        return [head, *result_types]
    if isinstance(value, OpaqueAttribute):  # complex: its elements shown as printed when they are few
        shown = value.text
        shown = shown[len("dense<"): shown.rfind(">")] if shown.startswith("dense<") else shown
        return [f"{head} {clip(shown, 32)}" if len(value.text) <= 200 else head, *result_types]
    n = _elements(value)  # None for a scalar attribute (arith.constant 1.0 : f32)
    if _is_dense(value) and value.is_splat:
        head = f"{head} {_scalar_text(value.get_splat_value())}"
    elif _is_dense(value) and n is not None and n <= _MAX_SHOWN_ELEMENTS:
        shown = str(value)
        shown = shown[len("dense<"): shown.rfind(">")] if shown.startswith("dense<") else shown
        head = f"{head} {clip(shown, 32)}"
    elif not _is_dense(value) and (n is None or n <= _MAX_SHOWN_ELEMENTS):
        head = f"{head} {clip(_scalar_text(value), 32)}"
    return [head, *result_types]


def _op_head(op) -> str:
    """The first label line: the short name and, for a few ops, the attribute that says most."""
    name = _op_name(op)
    attrs = op.operation.attributes
    short = _short_name(name)
    if name == "func.call" and "callee" in attrs:
        return f"call {attrs['callee']}"
    if name == "stablehlo.composite" and "name" in attrs:
        return f"composite {clip(_string_value(attrs['name']), 40)}"
    if name.endswith("custom_call") and "call_target_name" in attrs:
        target = attrs["call_target_name"]
        return f"{short} @{clip(getattr(target, 'value', str(target)), 40)}"
    if name.endswith("compare") and "comparison_direction" in attrs:
        direction = comparison_direction(str(attrs["comparison_direction"]))
        return f"{short} {direction}" if direction else short
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


class MlirReader:
    """Reads a parsed module; ``ops`` are the op counts of each function body
    (``workbench.ir.ops.op_counts_by_function`` of its text), which a collapsed graph shows."""

    def __init__(self, ops: dict[str, Counter]) -> None:
        self._ops = ops
        self._ids = itertools.count()
        self._defs: dict = {}  # ir.Value -> (node id, label of the edge it starts)
        self._uses: list[tuple] = []  # (ir.Value, user node id), resolved when everything is defined
        self._calls: list[tuple[str, str, str, str]] = []  # (call node id, caller, callee symbol, edge label)
        self._edges: list[Edge] = []
        self._callees: dict[str, Counter] = {}
        self._labels: dict[str, str] = {}  # type text -> its label
        self._scopes: dict[str, str] = {}  # location text -> its name stack

    def _id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def _type(self, t) -> tuple[str, str]:
        """A type as MLIR prints it and as a label shows it; a module repeats a few types many times."""
        text = str(t)
        label = self._labels.get(text)
        if label is None:
            label = self._labels[text] = _type_label(t)
        return text, label

    def _scope(self, location) -> str:
        text = str(location)
        fast = fast_name_stack(text)
        if fast is not None:
            return fast
        if text not in self._scopes:  # other forms (fused locations that passes make) by the one reader
            self._scopes[text] = next((o.name for o in read_location(text) if o.name), "")
        return self._scopes[text]

    def read(self, module) -> Dataflow:
        funcs = [op.operation for op in module.body.operations if _op_name(op) == "func.func"]
        several = len(funcs) > 1
        items: list[Item] = []
        clusters: dict[str, Cluster] = {}
        functions: list[Function] = []
        for f in funcs:
            name = f.attributes["sym_name"].value
            self._callees[name] = Counter()
            body = (self._block(f.regions[0].blocks[0], name, "%arg", "func.func")
                    if len(f.regions[0].blocks) else [])
            if several:
                cluster = Cluster(self._id("cluster_"), f"func @{name}", tuple(body), name)
                clusters[name] = cluster
                items.append(cluster)
            else:
                items.extend(body)
            ops = sum(self._ops.get(name, Counter()).values())
            functions.append(Function(name, f"@{name}", ops, tuple(self._callees[name].items())))
        for value, user in self._uses:
            src = self._defs.get(value)
            if src is not None:
                self._edges.append(Edge(src[0], user, src[1]))
        self._defs.clear()  # the bindings' values: the model keeps none of them
        sites = Counter(callee for _, caller, callee, _ in self._calls if caller != callee)
        unlinked: dict[str, str] = {}  # composite node id -> its decomposition, named in its label
        for node, caller, callee, label in self._calls:
            target = clusters.get(callee)
            if target is None or target.anchor is None or caller == callee:
                continue
            if sites[callee] <= MAX_CALL_EDGES:
                self._edges.append(Edge(node, target.anchor, label, lhead=target.id, style="dashed"))
            elif label:  # a call's label names its callee already; a composite's names the composite
                unlinked[node] = f"{label}=@{callee}"
        if unlinked:
            items = _with_lines(items, unlinked)
        notes = many_callers(f"@{name}" for name, n in sites.items() if name in clusters and n > MAX_CALL_EDGES)
        return Dataflow("mlir", tuple(items), tuple(self._edges), tuple(functions), notes)

    def _block(self, block, function: str, arg_prefix: str, owner: str) -> list[Item]:
        """``owner``: the name of the op whose region holds the block."""
        items: list[Item] = []
        for i, arg in enumerate(block.arguments):
            nid = self._id()
            text, label = self._type(arg.type)
            self._defs[arg] = (nid, "", ("arg", i, owner, text))
            items.append(Node(nid, "arg", (f"{arg_prefix}{i}", label), function))
        for op in block.operations:
            items.extend(self._op(op.operation, function))
        return items

    def _op(self, op, function: str) -> list[Item]:
        op = op.operation
        nid = self._id()
        name = _op_name(op)
        short = _short_name(name)
        results = list(op.results)
        types = [self._type(r.type) for r in results]
        result_types = [label for _, label in types]
        attr_items = [(name, _attr_texts(attr)) for name, attr in attribute_items(op)]
        for k, r in enumerate(results):
            self._defs[r] = (nid, f"#{k}" if len(results) > 1 else "", (short, k, types[k][0]))
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
        defs = self._defs
        signature = (
            short,
            tuple(text for text, _ in types),
            tuple(sorted((n, fingerprint) for n, (fingerprint, _) in attr_items)),
            tuple(defs[v][2] if v in defs else _operand_origin(v) for v in operands),
            len(op.regions),
        )
        tooltip = name
        if attr_items:
            tooltip += " {" + ", ".join(f"{n} = {shown}" for n, (_, shown) in attr_items) + "}"
        node = Node(nid, kind, tuple(label), function, signature, clip(tooltip, MAX_TOOLTIP_CHARS),
                    scope=self._scope(op.location))
        items: list[Item] = [node]
        count = len(op.regions)
        for r, region in enumerate(op.regions):
            region_label = f"{short} {_region_name(short, r, count)}"
            body: list[Item] = []
            for b, block in enumerate(region.blocks):
                body.extend(self._block(block, function, f"bb{b}:arg" if b else "arg", name))
            cluster = Cluster(self._id("cluster_"), region_label, tuple(body), function, owner=nid)
            if cluster.anchor is not None:
                self._edges.append(Edge(nid, cluster.anchor, lhead=cluster.id, style="dotted"))
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


def _with_lines(items, extra: dict[str, str]) -> list[Item]:
    """``items`` with a line added to the label of each node named in ``extra`` (by id)."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, Cluster):
            item = dataclasses.replace(item, items=tuple(_with_lines(item.items, extra)))
        elif item.id in extra:
            item = dataclasses.replace(item, label=(*item.label, extra[item.id]))
        out.append(item)
    return out

