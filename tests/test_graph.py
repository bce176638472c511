"""Dataflow graphs of real stages: one node per op, one edge per use of a value, regions and functions
as clusters, what a pass changed filled in, big constants and big modules kept readable, every label
escaped, XLA HLO drawn too."""

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.graph import CHANGED_FILL, GraphUnavailableError, stage_graph

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


# --- big modules -------------------------------------------------------------------------------------


@jax.jit
def _head(x):
    return (x ** 2).sum()


def deep_loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w + 0.5)
    return _head(x)


def test_a_large_module_collapses_to_one_node_per_function():
    ws = [jnp.full((8, 8), 0.05) for _ in range(40)]
    ex = wb.explore(jax.grad(deep_loss), ws, jnp.ones((2, 8)), pipeline="upstream")
    stage = ex["stablehlo"]
    functions = re.findall(r"func\.func \w+ @(\w+)", stage.text)
    assert len(functions) >= 2

    g = stage_graph(stage, max_ops=400)
    nodes, edges, graph = read_dot(g)
    total = int(re.match(r"stablehlo: (\d+) ops", graph["label"]).group(1))
    assert total > 400
    assert "collapsed to one node per function" in graph["label"]
    assert f"max_ops={total}" in graph["label"]
    assert sorted(n.head for n in nodes.values()) == sorted(f"@{f}" for f in functions)
    counts = {n.head: int(n.lines[1].split()[0]) for n in nodes.values()}
    assert sum(counts.values()) == total
    main = next(n.id for n in nodes.values() if n.head == "@main")
    assert any(t == main for t, _, _ in edges)  # main calls the others
    svg_of(g)

    nodes, edges, graph = read_dot(stage_graph(stage, max_ops=total))
    assert "collapsed" not in graph["label"]
    assert sum(1 for n in nodes.values() if n.attrs["shape"] != "ellipse") == total


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
