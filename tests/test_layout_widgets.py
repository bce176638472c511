"""The panel's navigable views on the Python side: the graph view holding graphviz's SVG of a real
stage, focus and hops as state Python can set and check, a big stage's groups opened level by level,
the diff's layout kept and the stage list's fold. What they do in a browser is in test_browser.py."""
import html
import re
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.errors import UnknownNameError
from workbench.analysis.graph import CHANGED_FILL
from workbench.views.widgets.graphview import GraphView, graph_svg

SVG = "{http://www.w3.org/2000/svg}"


def loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).sum()


@pytest.fixture(scope="module")
def ex():
    return wb.explore(jax.grad(loss), [jnp.full((8, 8), 0.01)] * 2, jnp.ones((4, 8)), pipeline="canonicalize")


@pytest.fixture(scope="module")
def svg(ex):
    return ex.graph("stablehlo").pipe(format="svg").decode()


def act(view, action: str, **payload) -> None:
    """What the browser sends: a click in the graph view."""
    view._heard(view, {"action": action, "payload": payload}, [])


def test_the_graph_view_holds_the_svg_and_names_its_nodes(svg):
    assert svg.startswith("<?xml")  # graphviz's prologue and doctype, which the view drops
    g = GraphView()
    g.show(svg)
    assert g.svg.startswith("<svg") and g.svg.rstrip().endswith("</svg>") and g.message == ""
    root = ET.fromstring(g.svg)
    titles = [n.find(SVG + "title").text for n in root.iter(SVG + "g") if n.get("class") == "node"]
    assert g.nodes == titles and len(titles) > 10
    ops = [t.text for t in root.iter(SVG + "text")]
    assert "dot_general" in ops and "tanh" in ops


def test_focus_and_hops_are_checked_and_a_new_graph_shows_all_of_it(svg):
    g = GraphView()
    g.show(svg)
    node = g.nodes[5]
    g.focus_on(node, hops=3)
    assert (g.focus, g.hops) == (g.data["focus"], g.data["hops"]) == (node, 3)  # sent to the browser
    with pytest.raises(UnknownNameError, match=r"unknown graph node 'n99999'.*GraphView.nodes \(n0 \.\.\. n"):
        g.focus_on("n99999")
    assert g.focus == node  # a refused name changes nothing
    with pytest.raises(ValueError, match="hops must be between 1 and 20"):
        g.focus_on(node, hops=0)
    assert g.hops == 3
    act(g, "focus", node=g.nodes[2], hops=1)  # a click in the browser, which shows it already: noted
    assert (g.focus, g.hops) == (g.nodes[2], 1)
    g.show(svg)  # another graph: the whole of it
    assert g.focus == ""
    g.show_message("stage 'jaxpr' is not an MLIR or HLO module")
    assert g.svg == "" and g.nodes == [] and "jaxpr" in g.message
    with pytest.raises(ValueError, match="not an SVG document"):
        g.show("digraph { a -> b }")


def test_graph_svg_lays_the_caption_out_apart_as_the_views_legend(ex):
    """The caption is the view's legend (wrapped above the graph, readable at any zoom), not text drawn at the
    graph's scale: graph_svg draws the graph without it and carries its lines in <desc class="wbg-legend">."""
    g = ex.graph("canonicalize#1")
    label = g.graph_attr["label"]
    body = graph_svg(g)
    assert g.graph_attr["label"] == label  # the graph is left as it was
    root = ET.fromstring(body)
    desc = root.find(SVG + "desc")
    lines = desc.text.split("\n")
    assert desc.get("class") == "wbg-legend" and re.fullmatch(r"canonicalize#1: \d+ ops", lines[0])
    assert "since 'stablehlo'" in lines[1]
    drawn = [t.text for t in root.iter(SVG + "text")]
    assert "tanh" in drawn and not set(lines) & set(drawn)  # no caption line is drawn in the graph
    # the same nodes as graphviz's drawing with the caption, without the caption's rows above them
    plain = g.pipe(format="svg").decode()
    shown = GraphView()
    shown.show(plain)
    assert GraphView(svg=body).nodes == shown.nodes and len(shown.nodes) > 10
    assert float(root.get("height").rstrip("pt")) < float(ET.fromstring(shown.svg).get("height").rstrip("pt"))
    assert GraphView().data["changed_fill"] == CHANGED_FILL  # a graph too big to fit readably opens at its first changed op


def scoped(x, ws):
    for i, w in enumerate(ws):
        with jax.named_scope(f"layer_{i}"):
            x = jnp.tanh(x @ w) * 0.5 + x
    return x.sum()


def test_a_click_on_a_group_opens_it_and_a_level_seen_before_is_not_drawn_again():
    ex = wb.explore(scoped, jnp.ones((4, 8)), [jnp.full((8, 8), 0.1)] * 6, pipeline="canonicalize")
    drawn = []

    def opener(group: str) -> str:
        drawn.append(group)
        return ex.graph("stablehlo", max_ops=20, group=group or None).pipe(format="svg").decode()

    g = GraphView()
    g.show(opener(""), opener=opener)
    assert g.data["openable"] and g.level == "" and drawn == [""]
    # graphviz writes the group's path in the box's id, which the browser reads when it is clicked
    groups = re.findall(r'<g id="wbg-group:([^"]*)" class="node wbg-group">', html.unescape(g.svg))
    assert groups == [f"layer_{i}" for i in range(6)] and len(g.nodes) > 6

    act(g, "open", group="layer_2")  # what a click on the box sends from the browser
    assert g.level == "layer_2" and drawn == ["", "layer_2"] and "group &#39;layer_2&#39;" in g.svg
    act(g, "open", group="")  # the breadcrumb back: drawn already
    assert g.level == "" and drawn == ["", "layer_2"]
    g.open_group("layer_2")  # Python opens it as a click would, from what it keeps
    assert g.level == "layer_2" and drawn == ["", "layer_2"]
    with pytest.raises(UnknownNameError, match="unknown group 'layer_9'"):
        g.open_group("layer_9")
    assert g.level == "layer_2" and g.message == ""  # refused: nothing changed

    act(g, "open", group="layer_7")  # a path no group has, sent from the browser: a message, the kernel lives
    assert g.svg == "" and "cannot open group 'layer_7': unknown group" in g.message
    act(g, "open", group="layer_1")
    assert g.message == "" and g.level == "layer_1"

    drawing = g.data["drawing"]
    g.show(opener(""))  # a graph without an opener: its boxes do not open, the levels kept are dropped
    assert not g.data["openable"] and g.data["drawing"] == drawing + 1
    act(g, "open", group="layer_3")
    assert g.level == "" and drawn.count("layer_3") == 0


def test_the_diff_keeps_the_layout_the_user_chose_and_the_stage_list_folds_in_a_narrow_panel():
    from workbench.views.widgets import DiffView
    from workbench.views.widgets.coreview import FOLD_BELOW, CoreView

    heard = []
    d = DiffView(on_action=lambda action, payload: heard.append(action))
    assert d.data["mode"] == "auto"
    for mode in ("unified", "wide"):  # as the component sends a pick of its layout; "wide" is none
        d._heard(d, {"action": "mode", "payload": {"mode": mode}}, [])
    assert d.data["mode"] == "unified" and heard == []  # kept for the next view drawn, not the panel's business

    core = CoreView(lambda left, right: None)  # the view component folds it below this width, until the user opens it
    assert core.stages.data["fold"] == FOLD_BELOW == 760 and core.stages.data["loading"] == "reading the stages…"
