"""What a view component sends: a long string of its data (a stage's text, an SVG) travels once, in ``blobs``, and a
click that changes a small fact sends the small facts. Counted in bytes of the state messages the widget's comm
carries, on a real program's 5,000-line stages. The browser's side (the blobs put back): test/widget.test.ts."""
import json

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.views.widgets import DiffView
from workbench.views.widgets.component import BLOB_MIN, Component
from workbench.views.widgets.graphview import GraphView, graph_svg


def mlp_loss(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return (x ** 2).sum()


@pytest.fixture(scope="module")
def ex():
    params = [(jnp.ones((16, 16)), jnp.ones((16,))) for _ in range(320)]
    return wb.explore(jax.grad(mlp_loss), params, jnp.ones((4, 16)), pipeline="canonicalize,cse")


class _Comm:
    """A comm with a kernel: ipywidgets sends a changed trait only through one, and whether the comm a widget gets
    outside a kernel has one depends on what ran before in the process (an InteractiveShell of another test)."""

    kernel = "a kernel"

    def __init__(self, comm_id: str):
        self.comm_id = comm_id

    def on_msg(self, callback) -> None:
        pass

    def send(self, data=None, buffers=None, **kwargs) -> None:
        pass

    def close(self, *args, **kwargs) -> None:
        pass


def counted(widget) -> list[dict]:
    """The state messages ``widget`` sends from now on, as its comm would carry them."""
    sent = []
    widget.comm = _Comm(widget.model_id)
    widget._send = lambda msg, buffers=None: sent.append(msg)
    return sent


def size(messages) -> int:
    return sum(len(json.dumps(m)) for m in messages)


def test_a_mark_click_or_a_relist_of_the_diff_sends_the_small_facts_not_the_texts(ex):
    assert len(ex["stablehlo"].text.splitlines()) > 5000 and len(ex["cse#1"].text.splitlines()) > 4500
    view = DiffView()
    sent = counted(view)
    view.show(ex.diff("stablehlo", "cse#1"))
    whole = len(json.dumps(view.data))  # what each update sent before the texts travelled apart
    assert whole > 1_000_000
    blobs, data = sent  # the texts first, then the facts that refer to them
    assert set(blobs["state"]) == {"blobs"} and size([blobs]) > 1_000_000
    assert set(data["state"]) == {"data"} and size([data]) < 5_000
    ref = data["state"]["data"]["diff"]["before"]  # the browser reads it by reference; Python keeps the text
    assert set(ref) == {"$blob"} and view.blobs[ref["$blob"]] == view.side("before")[1] == view.data["diff"]["before"]

    for change in (lambda: view.mark(before=[10, 12], after=[11], focus="after"),  # the Source tab marks a line
                   lambda: view._heard(view, {"action": "mode", "payload": {"mode": "split"}}, []),  # a layout picked
                   lambda: view.pair("stablehlo", "cse#1", ["stablehlo", "canonicalize#1", "cse#1"])):  # relisted
        sent.clear()
        change()
        assert [set(m["state"]) for m in sent] == [{"data"}] and size(sent) < 5_000, size(sent)

    sent.clear()
    view.show(ex.diff("stablehlo", "cse#1"))  # the same pair again: the same texts, not sent again
    assert [set(m["state"]) for m in sent] == [{"data"}]
    sent.clear()
    view.show(ex.diff("stablehlo", "canonicalize#1"))  # a new text: the blobs go again, those no data refers to go
    assert [set(m["state"]) for m in sent] == [{"blobs"}, {"data"}]
    assert sorted(view.blobs.values()) == sorted({view.side("before")[1], view.side("after")[1]})  # one if the same


def test_a_relist_of_the_graphs_stage_picker_sends_no_svg(ex):
    svg = graph_svg(ex.graph("stablehlo"))
    assert len(svg) > BLOB_MIN
    view = GraphView()
    sent = counted(view)
    view.show(svg)
    assert size(sent) > len(svg) and view.svg == svg
    sent.clear()
    view.set(stages=[["cse#1 (B of the diff)", ""], ["stablehlo", "stablehlo"], ["cse#1", "cse#1"]], picked="")
    assert [set(m["state"]) for m in sent] == [{"data"}] and size(sent) < 1_000


def test_a_kind_without_long_strings_sends_its_data_as_it_is():
    c = Component("passes", {"pipeline": "cse", "rows": [{"name": "x" * 100}]})
    assert c.blobs == {} and c.get_state("data")["data"] == c.data
    c.data = {**c.data, "text": "y" * BLOB_MIN}
    assert c.get_state("data")["data"]["text"] == {"$blob": next(iter(c.blobs))} and c.data["text"] == "y" * BLOB_MIN
    assert c.get_state()["blobs"] == c.blobs  # the state a new view (a notebook opened again) starts from has them
