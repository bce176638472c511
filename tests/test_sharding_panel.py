"""Sharded programs in the panel: each value's sharding on hover in the diff view (read on the Python side,
sent with the diff) and the Collectives tab.

Two programs: the sharded module of tests/test_shardy.py given as text (its Shardy stages carry
``sdy.sharding`` attributes on one device), and the sharded transformer block of
workbench/examples/attention.py on a 2 x 4 mesh, which needs 8 devices and so runs in a child Python
started with XLA_FLAGS=--xla_force_host_platform_device_count=8 (this process's JAX has one).
The browser shows what these tests read: the widgets' state (tests/test_browser_sharding.py hovers it).
"""
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from tests.test_shardy import SHARDED_TEXT
from workbench.analysis.sharding.shardings import describe_hlo, describe_sdy, is_partitioned, read_shardings, value_shardings
from workbench.views.widgets import Panel
from workbench.views.widgets.collectives import TITLE, is_sharded_program

ROOT = str(Path(__file__).resolve().parents[1])


def described(tips: dict, lines: list[str], name: str, line: int) -> str | None:
    """What the diff view shows for ``name`` hovered on ``line``: diffview.js's lookup, in Python."""
    for first, last, values in tips.get("scopes", []):
        if first <= line <= last:
            return tips["texts"][values[name]] if name in values else None
    return None


def summary_rows(data: dict) -> list[tuple]:
    """The Collectives tab's per-stage lines as the component draws them: ("B" for stage B's line, how many
    stages, stage(s), collectives, bytes, kinds)."""
    return [("B" if l["b"] else "", l["stages"],
             l["first"] if l["stages"] == 1 else f"{l['first']} … {l['last']} ({l['stages']} stages)",
             "" if l["collectives"] is None else str(l["collectives"]), l["bytes"], l["kinds"])
            for l in data["summary"]["lines"]]


def defining_line(lines: list[str], name: str) -> int:
    pattern = re.compile(rf"^\s*(?:ROOT\s+)?{re.escape(name)}(?::\d+)?\s*=|[(,]\s*{re.escape(name)}:")
    return next(k for k, line in enumerate(lines) if pattern.search(line))


# -- the module given as text (one device) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def text_ex():
    return wb.explore_text(SHARDED_TEXT, pipeline="canonicalize")


def test_the_shardings_of_a_propagated_stage_in_words(text_ex):
    got = value_shardings(text_ex["sdy-propagation-pipeline#1"].text)
    assert set(got) == {"%arg0", "%0", "%1"}  # %arg1 has none: it is left to propagation, not "replicated"
    assert got["%arg0"] == ('sharded: dim 0 over x (2), dim 1 replicated; per device 4x4 of 8x4; replicated over y (2)\n'
                            'tensor<8x4xf32> <@mesh, [{"x"}, {}]>')
    assert got["%0"].startswith("sharded: dim 0 over x (2), dim 1 replicated; per device 4x6 of 8x6")
    assert got["%1"].split("\n")[1] == 'tensor<8x6xf32> <@mesh, [{"x"}, {}]>'
    # before propagation only the argument the user placed has one
    assert list(value_shardings(text_ex["input"].text)) == ["%arg0"]
    assert value_shardings(wb.explore(lambda a: a * 2, jnp.ones(3)).stages[1].text) == {}


def test_the_diff_view_gets_the_shardings_of_the_names_it_shows(text_ex):
    p = Panel(text_ex, background=False)
    try:
        p.pick("sdy-propagation-pipeline#1")
        p.wait()
        diff, tips = p.diff_view.data["diff"], p.diff_view.data["tips"]
        assert diff["left"] == "canonicalize#1" and diff["right"] == "sdy-propagation-pipeline#1"
        after, before = diff["after"].split("\n"), diff["before"].split("\n")
        # every name with a sharding is one the view shows, and its line holds that sharding
        (first, last, values), = tips["after"]["scopes"]
        assert after[first].lstrip().startswith("func.func @main(") and after[last].strip() == "}"
        for name, k in values.items():
            written = tips["after"]["texts"][k].split("\n")[1].split(" ", 1)[1]
            assert written in after[defining_line(after, name)], name
        tanh = next(k for k, line in enumerate(after) if "stablehlo.tanh" in line)
        operand = re.search(r"stablehlo\.tanh (%\w+)", after[tanh]).group(1)  # hovered where it is used
        assert described(tips["after"], after, operand, tanh).startswith("sharded: dim 0 over x (2), dim 1 replicated; "
                                                                         "per device 4x6 of 8x6")
        assert described(tips["after"], after, operand, len(after) + 3) is None  # outside @main: nothing
        # before propagation, only the argument the user placed
        assert list(tips["before"]["scopes"][0][2]) == [re.search(r"@main\((%\w+)", before[2]).group(1)]
    finally:
        p.close()


def test_the_collectives_tab_lists_a_sharded_programs_collectives_and_says_why_a_plain_one_has_none(text_ex):
    p = Panel(text_ex, background=False)
    plain = Panel(wb.explore(lambda a: a * 2, jnp.ones(3)), background=False)
    try:
        p.wait()
        plain.wait()
        # a program on one device: the tab is there and says why it lists nothing
        assert plain.tabs.titles[-1] == TITLE and len(plain.tabs.children) == len(plain.tabs.titles) == 10
        plain.tabs.selected_index = 9
        plain.wait()
        (said,) = plain.collectives.widget.data["notes"]
        assert plain.collectives.widget.data["state"] == "one-device" and "summary" not in plain.collectives.widget.data
        assert said.startswith("No collectives: this program runs on one device.") and "NamedSharding" in said
        plain.tabs.selected_index = 0
        tips = plain.diff_view.data["tips"]
        assert plain.diff_view.data["diff"]["runs"] and tips["before"] == tips["after"] == {}
        assert p.tabs.titles[-1] == TITLE and p.collectives.widget in p.tabs.children
        p.pick("sdy-reshard-to-collectives#1")
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
        p.wait()
        assert p.python == 'ex.collectives("sdy-reshard-to-collectives#1")' and p.last_error is None
        assert p.collectives.widget.data["here"] == {"status": "none", "caption": "sdy-reshard-to-collectives#1: no collective ops"}
        rows = summary_rows(p.collectives.widget.data)
        assert rows == [("", 9, "input … optimize-communication#2 (9 stages)", "0", "0 B", ""),
                        ("B", 1, "sdy-reshard-to-collectives#1", "0", "0 B", ""),  # stage B: a line of its own
                        ("", 1, "xla:compile", "", "", "(the stage failed)")]
        assert sum(r[1] for r in rows) == len(text_ex.stages)
    finally:
        p.close()
        plain.close()


def test_shardings_in_words_for_the_forms_shardy_and_xla_write():
    mesh = read_shardings('module {\n  sdy.mesh @m = <["a"=2, "b"=4]>\n  func.func @main(%arg0: tensor<8x8xf32> '
                          '{sdy.sharding = #sdy.sharding<@m, [{"a", "b"}, {}]>}) {\n    return\n  }\n}')
    assert mesh[0].values["%arg0"].summary == "sharded: dim 0 over a×b (8), dim 1 replicated; per device 1x8 of 8x8"
    from workbench.analysis.sharding.shardings import Mesh

    meshes = {"m": Mesh("m", (("a", 2), ("b", 4)))}
    assert describe_sdy('<@m, [{"b":(1)2}, {?}]>', [6, 4], meshes) == (
        "sharded: dim 0 over b:(1)2 (2), dim 1 open; per device 3x4 of 6x4; replicated over a (2)")
    assert describe_sdy('<@m, [{}, {}], unreduced={"a"}>', [4, 4], meshes).startswith(
        "replicated: the whole 4x4 on each of the 8 devices of @m; unreduced over a")
    assert describe_sdy('<@m, [{"a"}]>', [5], meshes).endswith("per device 3 of 5 (padded: a dimension does not divide); "
                                                               "replicated over b (4)")
    assert describe_hlo("{devices=[2,4]<=[8]}", [16, 64], partitioned=False) == (
        "sharded: dim 0 in 2 parts, dim 1 in 4 parts; per device 8x16 of 16x64")
    assert describe_hlo("{devices=[2,1,4]<=[8] last_tile_dims={manual}}", [8, 3], partitioned=True) == (
        "sharded: dim 0 in 2 parts, dim 1 whole; manual over 4 devices; per device 8x3 (this stage is partitioned; "
        "the whole is about 16x3)")
    assert describe_hlo("{replicated}", [4]) == "replicated: the whole 4 on every device"
    assert describe_hlo("{maximal device=3}", [4]) == "on device 3 only (maximal)"
    assert is_partitioned("HloModule m\n\nENTRY %main.3_spmd (p: f32[4]) -> f32[4] {\n}") and not is_partitioned(
        "HloModule m\n\nENTRY %main.3 {\n}")


# -- the sharded transformer block on 8 devices (a child Python) ----------------------------------------------
SCRIPT = r"""
import json, re, sys
sys.path.insert(0, %(root)r)
import workbench as wb
from workbench.examples import attention
from workbench.analysis.sharding.shardings import read_shardings
from workbench.views.widgets import Panel

ex = wb.explore(attention.fn, *attention.sharded_args())
p = Panel(ex, background=False)
p.wait()
out = {"titles": list(p.tabs.titles), "stages": [s.name for s in ex.stages]}

def side(name):
    p.pick(name)
    p.wait()
    d = p.diff_view.data["diff"]
    return {"after": d["after"].split("\n"), "tips": p.diff_view.data["tips"]["after"], "left": d["left"],
            "sharded_ops": d["after"].count("sdy.sharding_per_value<[")}

for name in ("sdy-propagation-pipeline#1", "xla:before_optimizations", "xla:dce#1", "xla:optimized"):
    out[name] = side(name)

p.tabs.selected_index = out["titles"].index("Collectives")
p.wait()
def collectives():
    return {"python": p.python, "error": p.last_error, "right": p.right, "data": p.collectives.widget.data,
            "rows": len(p.ex.collectives(p.right)),
            "kinds": p.ex.collectives(p.right)["kind"].tolist()}
out["collectives"] = collectives()
p.toggle_xla(["cpu-all-reduce-combiner"], False)  # a toggle re-runs XLA: the tab fills anew
p.wait()
out["toggled"] = collectives()
out["toggled"]["python_history"] = p.history
p.close()
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def block(tmp_path_factory, cpu_devices):
    script = tmp_path_factory.mktemp("sharding_panel") / "block.py"
    script.write_text(SCRIPT % {"root": ROOT})
    return cpu_devices(script)


def _arg_of(after: list[str], type_text: str) -> str:
    header = next(line for line in after if line.lstrip().startswith("func.func @main("))
    return re.search(rf"(%arg\d+): {re.escape(type_text)} \{{sdy\.sharding", header).group(1)


def test_the_sharded_blocks_mlir_values_show_their_sharding_and_each_devices_part(block):
    st = block["sdy-propagation-pipeline#1"]
    after, tips = st["after"], st["tips"]
    (first, last, values), = tips["scopes"]
    assert len(values) >= st["sharded_ops"] + 11  # every op propagation annotated, and the 11 arguments
    x = _arg_of(after, "tensor<2x32x64xf32>")  # the activations: the batch over "data"
    assert described(tips, after, x, first) == (
        'sharded: dim 0 over data (2), dim 1 replicated, dim 2 replicated; per device 1x32x64 of 2x32x64; replicated '
        'over model (4)\ntensor<2x32x64xf32> <@mesh, [{"data"}, {}, {}]>')
    # a column-split projection's product, hovered where an op uses it
    k, line = next((k, l) for k, l in enumerate(after) if "stablehlo.dot_general" in l and '[{"data"}, {}, {"model"}]' in l)
    name = line.split("=")[0].strip()
    user = next(j for j in range(k + 1, last) if re.search(rf"{re.escape(name)}\b", after[j]))
    text = described(tips, after, name, user)
    assert text.startswith("sharded: dim 0 over data (2), dim 1 replicated, dim 2 over model (4); per device 1x")
    for name, k in values.items():  # each name's sharding is written on the line that defines it
        assert tips["texts"][k].split("\n")[1].split(" ", 1)[1] in after[defining_line(after, name)], name


def test_the_sharded_blocks_hlo_instructions_show_their_sharding_text_and_shape(block):
    st = block["xla:before_optimizations"]
    after, tips = st["after"], st["tips"]
    k = next(k for k, l in enumerate(after) if "parameter(10)" in l and "sharding={devices=[2,1,1,4]<=[8]" in l)
    name = after[k].split("=")[0].strip()
    assert described(tips, after, name, k) == (
        "sharded: dim 0 in 2 parts, dim 1 whole, dim 2 whole; each part replicated on 4 devices; per device 1x32x64 "
        "of 2x32x64\nf32[2,32,64]{2,1,0} sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}")
    replicated = next(k for k, l in enumerate(after) if "parameter(1)" in l and "sharding={replicated}" in l)
    assert described(tips, after, after[replicated].split("=")[0].strip(), replicated).startswith(
        "replicated: the whole 64 on every device\nf32[64]{0} sharding={replicated}")
    # after the partitioner (its dce runs inside it: already each device's shapes), the shape is a device's part
    for stage in ("xla:dce#1", "xla:optimized"):
        after, tips = block[stage]["after"], block[stage]["tips"]
        k = next(k for k, l in enumerate(after) if "parameter(10)" in l)
        assert described(tips, after, after[k].split("=")[0].strip(), k).startswith(
            "sharded: dim 0 in 2 parts, dim 1 whole, dim 2 whole; each part replicated on 4 devices; per device "
            "1x32x64 (this stage is partitioned; the whole is about 2x32x64)\nf32[1,32,64]"), stage


def test_the_collectives_tab_lists_the_stages_collectives_and_fills_anew_after_a_toggle(block):
    assert block["titles"][-1] == "Collectives"
    c = block["collectives"]
    assert c["right"] == "xla:optimized" and c["error"] is None
    assert c["python"] == 'ex.collectives("xla:optimized")'
    n = c["rows"]
    assert n > 0 and set(c["kinds"]) == {"all-reduce"}
    here = c["data"]["here"]
    assert here["caption"].startswith(f"xla:optimized: {n} collective{'s' * (n != 1)}, ")
    table = [dict(zip(here["table"]["columns"], r)) for r in here["table"]["rows"]]
    assert len(table) == n and any("attention.py:" in r["source"] for r in table)  # a row each, the user's line
    rows = summary_rows(c["data"])
    assert sum(r[1] for r in rows) == len([s for s in block["stages"] if s != "jaxpr"])
    assert [r[:4] for r in rows if r[0] == "B"] == [("B", 1, "xla:optimized", str(n))]
    # none until XLA's SPMD partitioner (the MLIR stages, XLA's first passes: one line), then all-reduces
    assert rows[0][1:5] == (len([s for s in block["stages"] if s != "jaxpr"
                                 and block["stages"].index(s) <= block["stages"].index("xla:shardy-xla#1")]),
                            "stablehlo … xla:shardy-xla#1 (%d stages)" % rows[0][1], "0", "0 B")
    xla = [r for r in rows[1:] if r[2].startswith("xla:")]
    assert xla and all(r[5].startswith("all-reduce ") for r in xla)
    assert all(r[3] == "0" for r in rows if r[2].startswith("backend:"))  # backend output: no module to read
    t = block["toggled"]  # without XLA's all-reduce combiner the all-reduces stay apart
    assert len(t["python_history"]) == 1 and "cpu-all-reduce-combiner" in t["python_history"][0]
    assert t["right"] == "xla:optimized" and t["error"] is None and t["python"] == 'ex.collectives("xla:optimized")'
    assert t["rows"] > n and t["data"]["here"]["caption"].startswith(f"xla:optimized: {t['rows']} collectives, ")


def test_a_program_on_one_device_is_not_sharded_though_jax_writes_an_empty_mesh(text_ex):
    # a PRNG key makes JAX write "sdy.mesh @empty_mesh = <[]>" into a single-device program
    key = wb.explore(lambda k: jax.random.normal(k, (4,)), jax.random.key(0), pipeline="none")
    assert "sdy.mesh @empty_mesh" in key["stablehlo"].text
    assert not is_sharded_program(key) and is_sharded_program(text_ex)
