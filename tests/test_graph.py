"""Dataflow graphs of real stages: one node per op, one edge per use of a value, regions and functions
as clusters, what a pass changed filled in, big constants kept readable, big modules drawn as the
hierarchy of JAX's name stack (the model's scopes) one level at a time, every label escaped, XLA HLO
drawn too."""

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.graph import CHANGED_FILL, GROUP_CLASS, GROUP_ID, GraphUnavailableError, stage_graph, stage_level
from workbench.analysis.graph.render import _scoped
from workbench.analysis.graph.levels import LEVEL_LIMIT, PORT_LIMIT
from workbench.errors import UnknownNameError
from workbench.stages import Stage
from tests.corpus.scoped import scoped_model, scoped_params

# --- reading the DOT source back ---------------------------------------------------------------------


@dataclass
class Drawn:
    id: str
    lines: list[str]
    attrs: dict[str, str]
    clusters: list[str] = field(default_factory=list)  # labels of the enclosing clusters, outermost first

    @property
    def head(self) -> str:
        return self.lines[0]

    @property
    def filled(self) -> bool:
        return self.attrs.get("fillcolor") == CHANGED_FILL


_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s\]]+)')


def _unquote(value: str) -> str:
    """A DOT attribute value as text: ``\\n``/``\\l`` end lines, other escapes stand for the character."""
    if value.startswith('"'):
        value = value[1:-1]
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append("\n" if nxt in "nl" else nxt)
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out).rstrip("\n")


def _attrs(text: str) -> dict[str, str]:
    return {k: _unquote(v) for k, v in _ATTR.findall(text)}


def read_dot(g) -> tuple[dict[str, Drawn], list[tuple[str, str, dict]], dict[str, str]]:
    """(nodes by id, edges as (tail, head, attrs), graph attributes) of a Digraph's source."""
    nodes: dict[str, Drawn] = {}
    edges: list[tuple[str, str, dict]] = []
    graph: dict[str, str] = {}
    stack: list[str] = []
    for line in g.source.splitlines():
        s = line.strip()
        if re.match(r"subgraph cluster_\w+ \{$", s):
            stack.append("")
        elif s == "}":
            if stack:
                stack.pop()
        elif s.startswith("graph ["):
            graph = _attrs(s[len("graph ["):-1])
        elif stack and re.match(r"\w+=", s):  # the attributes of the innermost cluster
            stack[-1] = _attrs(s).get("label", stack[-1])
        elif m := re.match(r"(\w+) -> (\w+)(?: \[(.*)\])?$", s):
            edges.append((m.group(1), m.group(2), _attrs(m.group(3) or "")))
        elif m := re.match(r"(\w+) \[(.*)\]$", s):
            if m.group(1) in ("node", "edge"):
                continue
            attrs = _attrs(m.group(2))
            nodes[m.group(1)] = Drawn(m.group(1), attrs["label"].split("\n"), attrs, list(stack))
    return nodes, edges, graph


def dataflow_edges(edges):
    """The edges that stand for a use of a value (not the dashed/dotted ones to a called region)."""
    return [(t, h, a) for t, h, a in edges if "lhead" not in a]


def svg_of(g) -> str:
    svg = g.pipe(format="svg").decode()
    ET.fromstring(svg)  # well-formed XML, whatever the labels held
    return svg


# --- programs ----------------------------------------------------------------------------------------


def mlp(w1, b1, w2, x):
    h = jnp.maximum(x @ w1 + b1, 0.0)
    return jnp.tanh(h @ w2)


@pytest.fixture(scope="module")
def mlp_ex():
    return wb.explore(mlp, jnp.ones((16, 64)), jnp.ones((64,)), jnp.ones((64, 32)), jnp.ones((8, 16)),
                      pipeline="upstream")


def scan_program(c, xs):
    def body(c, x):
        return c * x + 1.0, c.sum()

    return jax.lax.scan(body, c, xs)


@pytest.fixture(scope="module")
def scan_ex():
    return wb.explore(scan_program, jnp.ones((4,)), jnp.ones((10, 4)), pipeline="upstream")


# --- MLIR: nodes and edges are the ops and their def-use ----------------------------------------------


def _text_dataflow(text: str):
    """Ops, arguments and (definer, user) pairs of a one-function module, read straight off the text."""
    assert text.count("func.func") == 1
    header = next(line for line in text.splitlines() if "func.func" in line)
    args = re.findall(r"(%arg\d+):", header)
    definer = {a: a for a in args}
    ops, uses = [], []
    for line in text.splitlines():
        s = line.strip()
        if m := re.match(r"(%[\w:]+) = (?:\w+\.)?(\w+)", s):
            result, name = m.group(1).split(":")[0], m.group(2)
            rhs = s.split(" = ", 1)[1]
        elif m := re.match(r"(?:func\.)?(return)\b", s):
            result, name, rhs = None, "return", s
        else:
            continue
        ops.append(name)
        uses += [(definer[ref.split("#")[0]], name) for ref in re.findall(r"%[\w#]+", rhs)]
        if result:
            definer[result] = name
    return args, ops, uses


def test_stablehlo_graph_has_a_node_per_op_and_an_edge_per_use(mlp_ex):
    stage = mlp_ex["stablehlo"]
    args, ops, uses = _text_dataflow(stage.text)
    nodes, edges, graph = read_dot(stage_graph(stage))

    arg_nodes = [n for n in nodes.values() if n.attrs["shape"] == "ellipse"]
    op_nodes = [n for n in nodes.values() if n.attrs["shape"] != "ellipse"]
    assert sorted(n.head for n in arg_nodes) == sorted(args)
    assert Counter(n.head.split()[0] for n in op_nodes) == Counter(ops)
    drawn_uses = [(nodes[t].head.split()[0], nodes[h].head.split()[0]) for t, h, _ in dataflow_edges(edges)]
    assert Counter(drawn_uses) == Counter(uses)
    assert graph["label"].startswith(f"stablehlo: {len(ops)} ops")


def test_op_labels_carry_the_short_name_and_result_type(mlp_ex):
    nodes, edges, _ = read_dot(stage_graph(mlp_ex["stablehlo"]))
    dots = [n for n in nodes.values() if n.head == "dot_general"]
    assert sorted(n.lines[1] for n in dots) == ["f32[8,32]", "f32[8,64]"]
    first = next(n for n in dots if n.lines[1] == "f32[8,64]")
    assert sorted(nodes[t].lines for t, h, _ in edges if h == first.id) == [["%arg0", "f32[16,64]"],
                                                                           ["%arg3", "f32[8,16]"]]
    assert [n.lines for n in nodes.values() if n.attrs["shape"] == "invhouse"] == [["return"]]
    assert any(n.lines == ["constant 0", "f32[]"] for n in nodes.values())  # a splat shows its value


def test_graph_renders_to_svg_with_dot(mlp_ex):
    g = stage_graph(mlp_ex["stablehlo"])
    svg = svg_of(g)
    assert "<svg" in svg and "dot_general" in svg
    assert "<svg" in g._repr_mimebundle_()["image/svg+xml"]  # what a notebook displays


def test_trace_stages_that_are_not_modules_are_refused(mlp_ex):
    with pytest.raises(GraphUnavailableError, match="jaxpr"):
        stage_graph(mlp_ex["jaxpr"])


# --- what a pass changed ------------------------------------------------------------------------------


def test_ops_a_pattern_rewrote_are_filled_and_the_removed_ones_counted():
    pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

    def f(x, y):
        return jnp.tanh(jnp.transpose(jnp.transpose(x)) @ y)

    ex = wb.explore(f, jnp.ones((8, 8)), jnp.ones((8, 4)))
    stage = ex["enzyme-hlo-patterns#1"]
    assert stage.changed
    nodes, _, graph = read_dot(stage_graph(stage, ex.parent_of(stage.name)))
    # transpose(transpose(x)) @ y became x @ y: the dot now reads the argument; tanh and return
    # still read what they read before.
    assert sorted(n.head for n in nodes.values() if n.filled) == ["dot_general"]
    assert {n.head for n in nodes.values() if not n.filled} == {"%arg0", "%arg1", "tanh", "return"}
    assert "1 op new or changed since 'canonicalize#2'" in graph["label"]
    assert "removed: transpose \u00d72" in graph["label"]

    unchanged = next(s for s in ex.stages if s.group == "mlir" and not s.changed)
    nodes, _, graph = read_dot(stage_graph(unchanged, ex.parent_of(unchanged.name)))
    assert not any(n.filled for n in nodes.values())
    assert "no op changed since" in graph["label"]


def test_a_parent_of_another_kind_is_not_compared(mlp_ex):
    nodes, _, graph = read_dot(stage_graph(mlp_ex["stablehlo"], mlp_ex.parent_of("stablehlo")))
    assert not any(n.filled for n in nodes.values())
    assert "not compared with 'jaxpr'" in graph["label"]


# --- constants ---------------------------------------------------------------------------------------


def test_a_large_constant_shows_its_type_and_never_its_payload():
    w = (np.arange(1024 * 1024, dtype=np.float32) % 97).reshape(1024, 1024)

    def f(x):
        return x @ w + 2.5

    ex = wb.explore(f, jnp.ones((2, 1024)), pipeline="upstream")
    assert len(ex["stablehlo"].text) > 1_000_000  # the payload is in the text...
    g = stage_graph(ex["stablehlo"])
    nodes, _, _ = read_dot(g)
    labels = [n.lines for n in nodes.values() if n.head.startswith("constant")]
    assert ["constant", "f32[1024,1024]"] in labels
    assert ["constant 2.5", "f32[]"] in labels
    assert len(g.source) < 5_000  # ...but not in the graph, nor in its tooltips
    assert len(svg_of(g)) < 20_000


# --- regions and functions ---------------------------------------------------------------------------


def test_scan_shows_while_cond_and_body_and_calls_point_to_their_function(scan_ex):
    nodes, edges, _ = read_dot(stage_graph(scan_ex["stablehlo"]))
    by_head = {}
    for n in nodes.values():
        by_head.setdefault(n.head, []).append(n)
    compare = by_head["compare LT"][0]
    assert compare.clusters == ["func @main", "while cond"]
    call = by_head["call @closed_call"][0]
    assert call.clusters == ["func @main", "while body"]
    assert by_head["add"][0].clusters in (["func @main", "while body"], ["func @closed_call"])
    assert any(n.clusters == ["func @closed_call", "reduce body"] for n in by_head["add"])

    while_node = by_head["while"][0]
    assert while_node.lines[1:] == ["f32[10,4]", "i32[]", "f32[4]", "f32[10]"]
    region_edges = [nodes[h].clusters[-1] for t, h, a in edges if t == while_node.id and "lhead" in a]
    assert region_edges == ["while cond", "while body"]
    called = [nodes[h].clusters for t, h, a in edges if t == call.id and "lhead" in a]
    assert called == [["func @closed_call"]]
    # the loop's results #2 and #3 are what main returns
    returned = sorted(a.get("xlabel") for t, h, a in edges if t == while_node.id and nodes[h].head == "return")
    assert returned == ["#2", "#3"]
    svg_of(stage_graph(scan_ex["stablehlo"]))


# --- big modules: a hierarchy by JAX's name stack ----------------------------------------------------


BLOCKS = [f"block_{i}" for i in range(12)]


@pytest.fixture(scope="module")
def scoped_ex():
    return wb.explore(scoped_model, scoped_params(12), jnp.ones((8, 16)), pipeline="upstream")


def _mlir_ops(text: str) -> int:
    """The ops of a module's functions, counted off its text by the workbench's one op counter."""
    from workbench.ir.ops import op_counts_by_function

    return sum(sum(c.values()) for f, c in op_counts_by_function(text).items() if f)


def _groups(nodes) -> dict[str, Drawn]:
    """The drawn boxes that open a group, by the path their SVG id names."""
    return {n.attrs["id"][len(GROUP_ID):]: n for n in nodes.values() if n.attrs.get("class") == GROUP_CLASS}


def _edge(edges, tail: Drawn, head: Drawn) -> dict | None:
    return next((a for t, h, a in edges if t == tail.id and h == head.id), None)


def test_a_big_module_is_drawn_as_the_groups_of_its_name_stack(scoped_ex):
    stage = scoped_ex["stablehlo"]
    total = _mlir_ops(stage.text)
    assert total > 400
    g = scoped_ex.graph("stablehlo")
    nodes, edges, graph = read_dot(g)
    assert graph["label"].startswith(f"stablehlo: {total} ops")
    assert "grouped by JAX's name stack" in graph["label"] and f"max_ops={total}" in graph["label"]
    groups = _groups(nodes)
    assert [p for p in groups if not p.startswith("[")] == BLOCKS + ["head"]
    assert groups["[arguments]"].lines == ["[arguments]", "73 arguments"]  # 6 weights a block, and x
    sizes = {p: int(n.lines[1].split()[0]) for p, n in groups.items() if n.lines[1].endswith("ops")}
    assert len({sizes[b] for b in BLOCKS}) == 1  # twelve blocks alike
    # each block feeds the next one value (x), and nothing flows back
    for a, b in zip(BLOCKS, BLOCKS[1:]):
        assert _edge(edges, groups[a], groups[b]) is not None and _edge(edges, groups[b], groups[a]) is None
    assert _edge(edges, groups["block_11"], groups["head"]) is not None
    assert len(nodes) < 30
    assert "block_7" in svg_of(g)

    level = stage_level(stage)
    assert level.total == total and level.ops == total == sum(b.ops for b in level.boxes)
    assert level.box("block_0").ops == sizes["block_0"]
    assert level.box("[arguments]").ops == 0 and level.box("[arguments]").members == 73

    nodes, _, graph = read_dot(scoped_ex.graph("stablehlo", max_ops=total))  # every op, as before
    assert "hierarchy" not in graph["label"] and not _groups(nodes)
    assert sum(1 for n in nodes.values() if n.attrs["shape"] != "ellipse") == total


def test_opening_a_group_shows_its_children_and_where_its_values_come_from(scoped_ex):
    stage = scoped_ex["stablehlo"]
    block = stage_level(stage).box("block_3")
    level = stage_level(stage, group="block_3")
    assert [b.path for b in level.boxes if b.kind == "group"] == ["block_3/attn", "block_3/mlp"]
    assert level.ops == block.ops == sum(b.ops for b in level.boxes)
    ins = {b.label for b in level.boxes if b.direction == "in"}
    outs = {b.label for b in level.boxes if b.direction == "out"}
    assert "block_2" in ins and outs == {"block_4"}
    assert {f"%arg{k}" for k in range(18, 24)} <= ins  # block_3's six weights

    nodes, edges, graph = read_dot(scoped_ex.graph("stablehlo", group="block_3"))
    assert "group 'block_3': " + f"{block.ops} of the {level.total} ops" in graph["label"]
    by_head = {n.head: n for n in nodes.values()}
    attn, mlp = _groups(nodes)["block_3/attn"], _groups(nodes)["block_3/mlp"]
    assert _edge(edges, by_head["from block_2"], attn) is not None
    assert _edge(edges, attn, mlp) is not None and _edge(edges, mlp, by_head["to block_4"]) is not None

    inner = stage_level(stage, group="block_3/attn")
    assert not [b for b in inner.boxes if b.kind == "group"]
    ops = Counter(b.label for b in inner.boxes if b.kind == "op")
    assert ops["dot_general"] == 6  # q, k, v, q k^T, (.) v, the output projection
    assert inner.ops == level.box("block_3/attn").ops
    assert {b.label for b in inner.boxes if b.direction == "out"} == {"block_3/mlp"}


def test_a_group_that_is_not_there_is_refused_with_the_ones_that_are(scoped_ex):
    with pytest.raises(UnknownNameError, match=r"unknown group 'block_3/atn'; did you mean 'block_3/attn'"):
        scoped_ex.graph("stablehlo", group="block_3/atn")
    with pytest.raises(UnknownNameError, match=r"the groups at the top level are '\[arguments\]'"):
        scoped_ex.graph("stablehlo", group="layer_0")


def test_xla_stages_are_grouped_by_their_metadata(scoped_ex):
    stage = scoped_ex["xla:optimized"]
    total = sum(op != "parameter" for op in _hlo_instructions(stage.text))
    level = stage_level(stage, group=None)
    assert level.total == total == sum(b.ops for b in level.boxes)
    scopes = [b.path for b in level.boxes if b.kind == "group" and not b.path.startswith("[")]
    assert scopes[:12] == BLOCKS and set(scopes) <= set(BLOCKS) | {"head"}
    inside = stage_level(stage, group="block_3")
    assert [b.path for b in inside.boxes if b.kind == "group"] == ["block_3/attn", "block_3/mlp"]
    assert inside.ops == level.box("block_3").ops
    nodes, _, graph = read_dot(scoped_ex.graph("xla:optimized", max_ops=100))
    assert graph["label"].startswith(f"xla:optimized: {total} instructions")
    assert BLOCKS[0] in _groups(nodes)


def test_changed_ops_are_counted_in_their_groups():
    pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

    def f(x, ws):
        for i, w in enumerate(ws):
            with jax.named_scope(f"layer_{i}"):
                if i == 2:
                    x = jnp.transpose(jnp.transpose(x))
                x = jnp.tanh(x @ w)
                x = x * x
        return x

    ex = wb.explore(f, jnp.ones((4, 8)), [jnp.full((8, 8), 0.1)] * 4)
    stage = ex["enzyme-hlo-patterns#1"]
    parent = ex.parent_of(stage.name)
    assert "transpose" in parent.text and "transpose" not in stage.text
    # layer_2's dot now reads layer_1's tanh itself: the one op that changed, counted in its group
    level = stage_level(stage, parent)
    assert [(b.path, b.changed) for b in level.boxes if b.changed] == [("layer_2", 1)]
    nodes, _, graph = read_dot(ex.graph(stage.name, max_ops=5))
    groups = _groups(nodes)
    assert groups["layer_2"].filled and groups["layer_2"].lines[-1] == "1 new/changed"
    assert not any(groups[f"layer_{i}"].filled for i in (0, 1, 3))
    assert "removed: transpose \u00d72" in graph["label"]
    inside = stage_level(stage, parent, group="layer_2")
    assert [b.label for b in inside.boxes if b.changed] == ["dot_general"]


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x + nn.Dense(16, name="attn")(nn.LayerNorm(name="ln")(x))
        return x + nn.Dense(16, name="mlp")(x)


class Stack(nn.Module):
    layers: int = 3

    @nn.compact
    def __call__(self, x):
        for i in range(self.layers):
            x = Block(name=f"block_{i}")(x)
        return x.sum()


def test_a_flax_model_shows_its_modules_and_its_gradient_the_transformations():
    m = Stack()
    params = m.init(jax.random.key(0), jnp.ones((4, 16)))
    ex = wb.explore(m.apply, params, jnp.ones((4, 16)), pipeline="upstream")
    level = stage_level(ex["stablehlo"])
    # Flax scopes every op in the top module, Stack: the only group at the top is opened in place
    assert level.opened == ("Stack",)
    assert [b.path for b in level.boxes if b.kind == "group"] == [f"Stack/block_{i}" for i in range(3)]
    assert level.ops == _mlir_ops(ex["stablehlo"].text)
    nodes, _, graph = read_dot(ex.graph("stablehlo", max_ops=50))
    assert "opened in place, as the only group at its level: Stack" in graph["label"]
    assert {n.clusters[0] for p, n in _groups(nodes).items() if p.startswith("Stack/")} == {"Stack"}
    inner = stage_level(ex["stablehlo"], group="Stack/block_1")
    assert [b.path for b in inner.boxes if b.kind == "group"] == [f"Stack/block_1/{m}" for m in ("ln", "attn", "mlp")]

    grad = wb.explore(jax.grad(lambda p, x: m.apply(p, x)), params, jnp.ones((4, 16)), pipeline="upstream")
    top = stage_level(grad["stablehlo"])
    assert [b.path for b in top.boxes if b.kind == "group"] == ["jvp(Stack)", "transpose(jvp(Stack))"]
    assert top.ops == _mlir_ops(grad["stablehlo"].text) == sum(b.ops for b in top.boxes)
    backward = stage_level(grad["stablehlo"], group="transpose(jvp(Stack))")
    assert [b.label for b in backward.boxes if b.kind == "group"] == ["block_2", "block_1", "block_0"]


def test_text_without_locations_is_grouped_by_function_region_and_kind(scan_ex):
    text = jax.jit(scan_program).lower(jnp.ones((4,)), jnp.ones((10, 4))).as_text()
    assert "loc(" not in text
    ex = wb.explore_text(text, pipeline="canonicalize")
    stage = ex["input"]
    level = stage_level(stage)
    assert level.by == "structure" and level.ops == _mlir_ops(stage.text) == sum(b.ops for b in level.boxes)
    groups = [b.path for b in level.boxes if b.kind == "group"]
    # the loop's regions, then the private functions JAX made (the scan's body among them)
    assert groups[:2] == ["while#1 cond", "while#1 body"] and "@closed_call" in groups
    assert all(g.startswith("@") for g in groups[2:])
    body = stage_level(stage, group="while#1 body")
    assert "call @closed_call" in {b.item.label[0] for b in body.boxes if b.kind == "op"}
    _, _, graph = read_dot(ex.graph("input", max_ops=5))
    assert "no name-stack locations" in graph["label"]

    flat = wb.explore_text(jax.jit(scoped_model).lower(scoped_params(12), jnp.ones((8, 16))).as_text(),
                           pipeline="canonicalize")["input"]
    folded = stage_level(flat)
    assert folded.folded and folded.ops == _mlir_ops(flat.text) == sum(b.ops for b in folded.boxes)
    dots = folded.box("[dot_general]")
    assert dots.ops == 12 * 8 and len(folded.boxes) < 40
    opened = stage_level(flat, group="[dot_general]")  # more than a level holds: in runs
    assert opened.ops == 96 and {b.kind for b in opened.boxes} - {"port"} == {"run"}
    run = stage_level(flat, group=f"[dot_general]/{opened.boxes[0].path.rpartition('/')[2]}")
    assert {b.label for b in run.boxes if b.kind == "op"} == {"dot_general"} and run.ops == opened.boxes[0].ops


def _stage_of(fn, *args) -> Stage:
    """A Stage of JAX's lowering of fn, as the workbench keeps it: the text, and the text with locations."""
    lowered = jax.jit(fn).lower(*args)
    return Stage("stablehlo", "trace", lowered.as_text(), "lower", True, None, None,
                 text_with_locations=lowered.as_text(debug_info=True))


def test_more_groups_than_a_level_holds_are_cut_into_runs():
    def chain(x, w):
        for i in range(300):
            with jax.named_scope(f"layer_{i}"):
                x = jnp.tanh(x * w + 1.0)
        return x

    stage = _stage_of(chain, jnp.ones(4), jnp.ones(4))
    level = stage_level(stage)
    size = -(-301 // LEVEL_LIMIT)  # the entries a run holds: 300 layers and the return, cut into LEVEL_LIMIT runs
    runs = [b for b in level.boxes if b.kind == "run"]
    assert level.runs and len(runs) == 301 // size and len(level.boxes) <= LEVEL_LIMIT + 1
    assert runs[0].path == f"[1-{size}]" and runs[0].label == f"layer_0 \u2026 layer_{size - 1}"
    assert level.ops == _mlir_ops(stage.text) == sum(b.ops for b in level.boxes)
    inner = stage_level(stage, group=runs[0].path)
    assert [b.path for b in inner.boxes if b.kind == "group"] == [f"layer_{i}" for i in range(size)]
    assert inner.ops == runs[0].ops == size * stage_level(stage, group="layer_150").ops  # a layer opens by its path
    nodes, _, _ = read_dot(stage_graph(stage))
    assert runs[1].path in _groups(nodes)


def test_a_10k_op_module_draws_a_bounded_top_level_in_one_pass():
    stage = _stage_of(jax.grad(scoped_model), scoped_params(80), jnp.ones((8, 16)))
    total = _mlir_ops(stage.text)
    assert total > 10_000
    level = stage_level(stage)
    assert level.ops == total == sum(b.ops for b in level.boxes)
    assert len(level.boxes) <= LEVEL_LIMIT + 2 * PORT_LIMIT
    scoped = _scoped(stage)
    assert level.work.units == len(scoped.units) and level.work.flows == len(scoped.flows) < 3 * len(scoped.units)
    # gradients record the transformation around each scope: jvp(block_i) forward, transpose(...) back;
    # 160 of them are more than a level holds, so they come in runs
    first = level.boxes[[b.kind for b in level.boxes].index("run")]
    assert first.path == "[1-3]" and first.label == "jvp(block_0) \u2026 jvp(block_2)"
    assert [b.path for b in stage_level(stage, group="[1-3]").boxes if b.kind == "group"] == [
        "jvp(block_0)", "jvp(block_1)", "jvp(block_2)"]
    back = stage_level(stage, group="transpose(jvp(block_79))")
    assert [b.path for b in back.boxes if b.kind == "group"] == [
        "transpose(jvp(block_79))/mlp", "transpose(jvp(block_79))/attn"]
    g = stage_graph(stage)
    nodes, edges, graph = read_dot(g)
    assert len(nodes) == len(level.boxes) and len(edges) <= len(level.links)
    # the arguments feed every block: drawn without their edges, which would cross the whole level
    assert "drawn without its edges" in graph["label"]
    assert _groups(nodes)["[arguments]"].lines[-1].startswith("linked with ")


# --- escaping ----------------------------------------------------------------------------------------


def test_labels_with_markup_characters_and_backslashes_render_literally():
    text = r'''module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @"weird<target>&co\\N"(%arg0) {backend_config = "a<b> && \"q\" {braces}"} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
'''
    ex = wb.explore_text(text, pipeline="canonicalize")
    g = stage_graph(ex["input"])
    nodes, _, _ = read_dot(g)
    assert "custom_call @weird<target>&co\\N" in [n.head for n in nodes.values()]
    svg = svg_of(g)
    assert "custom_call @weird&lt;target&gt;&amp;co\\N</text>" in svg  # not dot's \N (node name) escape
    assert "a&lt;b&gt; &amp;&amp;" in svg  # the tooltip


# --- XLA HLO -----------------------------------------------------------------------------------------


def _hlo_instructions(text: str) -> list[str]:
    return re.findall(r"^\s*(?:ROOT )?%[\w.\-]+ = \S+ ([\w\-]+)\(", text, re.M)


def test_optimized_hlo_renders_with_fusions_in_place(mlp_ex):
    stage = mlp_ex["xla:optimized"]
    assert stage.text.startswith("HloModule")
    g = stage_graph(stage, mlp_ex.parent_of(stage.name))
    nodes, edges, graph = read_dot(g)
    instructions = _hlo_instructions(stage.text)
    assert graph["label"].startswith(f"xla:optimized: {sum(op != 'parameter' for op in instructions)} instructions")
    assert all(n.clusters[0].startswith("ENTRY main") for n in nodes.values())
    fused = [n for n in nodes.values() if len(n.clusters) > 1 and n.clusters[1].startswith("fusion")]
    assert fused, "every fusion's computation is drawn inside the ENTRY computation"
    # a fused computation's parameters are fed by the fusion's operands from outside the fusion
    params = [n for n in fused if n.head.startswith("parameter")]
    assert params and all(any(h == p.id and nodes[t].clusters != p.clusters for t, h, _ in edges) for p in params)
    assert "<svg" in svg_of(g)


def test_hlo_while_shows_condition_and_body(scan_ex):
    stage = scan_ex["xla:optimized"]
    nodes, edges, _ = read_dot(stage_graph(stage))
    whiles = [n for n in nodes.values() if n.head == "while"]
    assert whiles
    called = {a["xlabel"]: nodes[h].clusters[-1] for t, h, a in edges if t == whiles[0].id and "lhead" in a}
    assert set(called) == {"condition", "body"}
    assert called["body"].startswith("body: ") and called["condition"].startswith("condition: ")


def test_hlo_pass_changes_are_filled(mlp_ex):
    stage = next(s for s in mlp_ex.stages
                 if s.group == "xla" and s.changed and s.parent and s.parent.startswith("xla:"))
    nodes, _, graph = read_dot(stage_graph(stage, mlp_ex.parent_of(stage.name)))
    assert f"since {stage.parent!r}" in graph["label"]
    assert any(n.filled for n in nodes.values()) or "removed:" in graph["label"]


# --- composites: a call of their decomposition ----------------------------------------------------


def _composite_calls(nodes, edges, head):
    """The composite nodes headed ``head``, each with the clusters its dashed decomposition edges reach."""
    return [(n, [nodes[h].clusters[0] for t, h, a in edges if t == n.id and a.get("xlabel") == "decomposition"
                 and a.get("style") == "dashed" and "lhead" in a])
            for n in nodes.values() if n.head == head]


def test_every_stage_of_a_top_k_program_draws_its_composite():
    # jax.lax.top_k lowers to chlo.top_k, which becomes a stablehlo.composite "chlo.top_k" whose
    # decomposition is a private function; every MLIR stage of the default pipeline holds it.
    def f(x):
        return jax.lax.top_k(x, 3)[0].sum()

    ex = wb.explore(f, jnp.arange(10.0))
    mlir = [s for s in ex.stages if s.group in ("trace", "mlir") and s.name != "jaxpr"]
    assert len(mlir) > 10 and all('stablehlo.composite "chlo.top_k"' in s.text for s in mlir)
    assert any(s.group == "mlir" for s in ex.changed())
    for stage in mlir:
        g = ex.graph(stage.name)
        nodes, edges, graph = read_dot(g)
        [(composite, called)] = _composite_calls(nodes, edges, "composite chlo.top_k")
        assert composite.lines[1:] == ["f32[3]", "i32[3]"]
        assert composite.clusters == ["func @main"]
        assert called == ["func @chlo.top_k.impl"]
        assert "decomposition = @chlo.top_k.impl" in composite.attrs["tooltip"]
        # it feeds the reduce its values (#0), and reads the argument
        assert [nodes[h].head for t, h, a in edges if t == composite.id and a.get("xlabel") == "#0"] == ["reduce"]
        assert [nodes[t].lines for t, h, _ in edges if h == composite.id] == [["%arg0", "f32[10]"]]
        assert {"sort", "slice"} <= {n.head for n in nodes.values() if n.clusters[:1] == ["func @chlo.top_k.impl"]}
        if stage.group == "mlir" and not stage.changed:
            assert not any(n.filled for n in nodes.values()), stage.name
            assert "no op changed since" in graph["label"]
    svg = svg_of(ex.graph(mlir[-1].name))
    assert "composite chlo.top_k" in svg and "decomposition" in svg
    for name in ("xla:before_optimizations", "xla:optimized"):
        assert "<svg" in svg_of(ex.graph(name))


def test_a_lax_composite_is_labelled_with_its_name_and_points_to_its_decomposition():
    def f(x):
        return jax.lax.composite(lambda x, *, alpha: jnp.sin(x) / jnp.cos(x) * alpha, name="my.tangent")(x, alpha=2.0)

    ex = wb.explore(f, jnp.ones((4,)), pipeline="upstream")
    for stage in (s for s in ex.stages if s.group in ("trace", "mlir") and s.name != "jaxpr"):
        nodes, edges, _ = read_dot(stage_graph(stage, ex.parent_of(stage.name)))
        [(composite, called)] = _composite_calls(nodes, edges, "composite my.tangent")
        assert composite.lines[1:] == ["f32[4]"]
        assert "composite_attributes = {alpha = 2.0" in composite.attrs["tooltip"]
        [decomposition] = called
        assert {"sine", "cosine", "divide"} <= {n.head for n in nodes.values() if n.clusters[:1] == [decomposition]}
    assert "composite my.tangent" in svg_of(stage_graph(ex["stablehlo"]))


def test_a_decomposition_with_many_composites_is_named_on_each_instead_of_linked():
    sites = "\n".join(
        f'    %{i + 1} = stablehlo.composite "my.double" %{i} {{decomposition = @double}} : (tensor<4xf32>) -> tensor<4xf32>'
        for i in range(5)).replace("%0 ", "%arg0 ")
    text = f'''module {{
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {{
{sites}
    return %5 : tensor<4xf32>
  }}
  func.func private @double(%arg0: tensor<4xf32>) -> tensor<4xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}
'''
    ex = wb.explore_text(text, pipeline="canonicalize")
    g = stage_graph(ex["input"])
    nodes, edges, graph = read_dot(g)
    composites = [n for n in nodes.values() if n.head == "composite my.double"]
    assert [n.lines[1:] for n in composites] == [["f32[4]", "decomposition=@double"]] * 5
    assert not [e for e in edges if "lhead" in e[2] and e[2].get("style") == "dashed"]
    assert "no call edges to @double" in graph["label"]
    svg_of(g)


def test_an_op_reading_an_argument_is_not_filled_when_only_another_op_changed():
    pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

    def f(x, y):
        return jnp.tanh(x) + jnp.transpose(jnp.transpose(y))

    ex = wb.explore(f, jnp.ones((4, 4)), jnp.ones((4, 4)))
    stage = ex["enzyme-hlo-patterns#1"]
    assert stage.changed
    nodes, _, graph = read_dot(stage_graph(stage, ex.parent_of(stage.name)))
    # the transposes went and add now reads %arg1; tanh(%arg0) is as it was
    assert sorted(n.head for n in nodes.values() if n.filled) == ["add"]
    assert "removed: transpose \u00d72" in graph["label"]
