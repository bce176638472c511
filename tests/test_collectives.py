"""ex.collectives(): the collective ops of every stage, what each moves per device, and the cost table's
collective_bytes with the interconnect's share of the roofline."""
import math
import os

import jax.numpy as jnp
import pandas as pd
import pytest

import workbench as wb
from workbench.analysis.sharding.collectives import COLLECTIVE_COLUMNS
from workbench.analysis.cost import PEAKS, module_cost, roofline
from tests.devices import run_on_cpu_devices

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A shard_map body as JAX lowers one (sdy.manual_computation around per-device code): an all-reduce
# over the "model" axis (groups of 4), then an all-gather over the "data" axis (groups of 2).
COLLECTIVES = """\
module @collectives attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]>
  func.func public @main(%arg0: tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}) -> (tensor<16x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"data"}, {"model"}]>] out_shardings=[<@mesh, [{"data"}, {"model"}]>] manual_axes={"data", "model"} (%x: tensor<8x16xf32>) {
      %summed = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<8x16xf32>) -> tensor<8x16xf32>
      %gathered = "stablehlo.all_gather"(%summed) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> : (tensor<8x16xf32>) -> tensor<8x32xf32>
      sdy.return %gathered : tensor<8x32xf32>
    } : (tensor<16x64xf32>) -> tensor<16x128xf32>
    return %0 : tensor<16x128xf32>
  }
}
"""


@pytest.fixture(scope="module")
def text_ex():
    ex = wb.explore_text(COLLECTIVES, pipeline="canonicalize")
    assert ex["input"].text_with_locations == COLLECTIVES and not ex["canonicalize#1"].error
    return ex


def test_stablehlo_collectives_of_a_module_given_as_text(text_ex):
    df = text_ex.collectives("input")
    assert tuple(df.columns) == COLLECTIVE_COLUMNS
    assert list(df.kind) == ["all-reduce", "all-gather"]
    assert list(df.op) == ["stablehlo.all_reduce", "stablehlo.all_gather"]
    assert set(df.dialect) == {"stablehlo"} and set(df.func) == {"main"}
    assert list(df.result) == ["%summed", "%gathered"]  # the names the stage's text gives them
    assert list(df["shape"]) == ["8x16", "8x16"] and set(df.dtype) == {"f32"}
    assert df.replica_groups[0] == "dense<[[0, 1, 2, 3], [4, 5, 6, 7]]>"
    assert df.replica_groups[1] == "dense<[[0, 4], [1, 5], [2, 6], [3, 7]]>"
    assert df.mesh_axes.isna().all() and df.source.isna().all()  # no loc(...) in the text
    ar, ag = df.iloc[0], df.iloc[1]
    # all-reduce over 4 devices of an 8x16 f32 buffer (512 bytes): 2 * 3/4 * 512
    assert (ar.group_size, ar.buffer_bytes, ar.bytes_per_device) == (4, 512, 768)
    # all-gather over 2 devices into 8x32 f32 (1024 bytes): 1/2 * 1024
    assert (ag.group_size, ag.buffer_bytes, ag.bytes_per_device) == (2, 1024, 512)
    # canonicalize renumbers the values; the ops and their sizes stay
    after = text_ex.collectives("canonicalize#1")
    assert list(after.result) == ["%1", "%2"] and list(after.bytes_per_device) == [768, 512]
    everything = text_ex.collectives()
    assert set(everything.stage) == {s.name for s in text_ex.stages if s.is_module}
    assert (everything.groupby("stage").bytes_per_device.sum() == 1280).all()


def test_cost_table_sums_the_collective_bytes_of_each_stage(text_ex):
    table = text_ex.cost().set_index("stage")
    assert "collective_bytes" in table.columns
    for s in text_ex.stages:
        if s.is_module:
            assert table.loc[s.name, "collective_bytes"] == 1280
        else:  # the failed XLA compile (a sharded module given as text has no mesh to compile for)
            assert pd.isna(table.loc[s.name, "collective_bytes"])
    h100 = text_ex.cost(device="H100").set_index("stage").loc["input"]
    assert h100.roofline_collective_s == pytest.approx(1280 / PEAKS["H100"].interconnect_bytes_per_s)
    assert h100.bound in ("compute", "memory", "collective")
    cpu = text_ex.cost(device="cpu").set_index("stage").loc["input"]
    assert math.isnan(cpu.roofline_collective_s)  # no interconnect figure for the CPU


def test_a_program_without_collectives_has_an_empty_table_and_zero_bytes():
    ex = wb.explore(lambda x: jnp.sin(x) * 2.0, jnp.ones((8, 4)), pipeline="canonicalize")
    df = ex.collectives()
    assert df.empty and tuple(df.columns) == COLLECTIVE_COLUMNS
    table = ex.cost().set_index("stage")
    assert table.loc["stablehlo", "collective_bytes"] == 0 and table.loc["xla:optimized", "collective_bytes"] == 0
    assert pd.isna(table.loc["jaxpr", "collective_bytes"])  # a jaxpr is not read for collectives
    assert ex.cost(device="H100").set_index("stage").loc["stablehlo", "roofline_collective_s"] == 0


def test_interconnect_peaks_are_per_direction_and_unknown_on_cpu():
    # NVIDIA's datasheets: NVLink 900 GB/s (H100 SXM, H200 SXM) and 600 GB/s (A100 SXM), both directions
    # summed; a device sends at half that while it receives as much.
    assert PEAKS["H100"].interconnect_bytes_per_s == PEAKS["H200"].interconnect_bytes_per_s == 450e9
    assert PEAKS["A100"].interconnect_bytes_per_s == 300e9
    for device in ("H100", "H200", "A100"):
        assert "NVLink" in PEAKS[device].source and "per direction" in PEAKS[device].source
    assert math.isnan(PEAKS["cpu"].interconnect_bytes_per_s)
    small = module_cost(wb.explore(lambda x: x + 1.0, jnp.ones((4,)), pipeline="none")["stablehlo"].text)
    r = roofline(small, device="H100", collective_bytes=9 * 10**9)
    assert r.time_collective_s == pytest.approx(0.02) and r.bound == "collective"
    assert roofline(small, device="H100").bound in ("compute", "memory")
    assert math.isnan(roofline(small, device="cpu", collective_bytes=10).time_collective_s)


HOSTILE = "<img src=x onerror=alert(1)>"  # a name that is markup


def test_the_tab_sends_facts_not_markup_and_its_clicks_come_back_as_actions(text_ex):
    from workbench.views.widgets import Panel
    from workbench.views.widgets.collectives import TITLE, stage_lines, stage_summary

    p = Panel(text_ex, name=HOSTILE, background=False)  # the variable's name, in the tab's two Python lines
    try:
        p.pick("canonicalize#1")
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
        p.wait()
        data = p.collectives.widget.data
        assert p.last_error is None and data["state"] == "shown" and data["stage"] == "canonicalize#1"
        assert data["notes"][0].count(HOSTILE) == 2  # as text: the component writes it with textContent
        here = data["here"]
        assert here["status"] == "listed" and here["caption"] == "canonicalize#1: 2 collectives, 1.25 KiB per device"
        rows = [dict(zip(here["table"]["columns"], r)) for r in here["table"]["rows"]]
        assert [(r["result"], r["kind"], r["bytes_per_device"]) for r in rows] == [("%1", "all-reduce", "768 B"),
                                                                                  ("%2", "all-gather", "512 B")]
        assert "source" not in here["table"]["columns"]  # a column with no value (no loc(...) in the text) is left out
        # a click on a collective: the Diff tab, the op marked on B's side
        op = {"stage": "canonicalize#1", "result": "%2", "func": "main"}
        p.collectives.widget._heard(None, {"action": "op", "payload": op}, [])
        p.wait()
        assert p.tabs.selected_index == 0 and p.last_error is None and "error" not in p.collectives.widget.data
        marks = p.diff_view.data["marks"]
        (marked,) = marks["after"]  # the line of the op as the diff shows it (its names normalized)
        assert '"stablehlo.all_gather"(' in p.diff_view.side("after")[1].split("\n")[marked] and marks["before"] == []
        assert marks["focus"] == "after"
        # a click on a stage of the per-stage table: it becomes B
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
        p.collectives.widget._heard(None, {"action": "stage", "payload": {"stage": "input"}}, [])
        p.wait()
        assert p.right == "input" and p.collectives.widget.data["here"]["caption"].startswith("input: 2 collectives")
        p.collectives.widget._heard(None, {"action": "stage", "payload": {"stage": "no-such-stage"}}, [])
        assert "no-such-stage" in p.collectives.widget.data["error"]  # said in the tab, the panel goes on
    finally:
        p.close()
    # a stage's name in the per-stage table (here a failed stage's line): a fact, as it is
    lines = stage_lines(stage_summary(text_ex.collectives(), ["input", HOSTILE], failed={HOSTILE}), HOSTILE)
    assert lines[-1] == {"first": HOSTILE, "last": HOSTILE, "stages": 1, "collectives": None, "bytes": "",
                         "kinds": "(the stage failed)", "b": True}


SHARDED = r"""
import json, sys
from functools import partial
sys.path.insert(0, %(root)r)
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import workbench as wb
from workbench import examples
from workbench.analysis.cost import PEAKS
from workbench.ir.hlo import read_hlo

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
x = jax.device_put(jnp.ones((16, 64), jnp.float32), NamedSharding(mesh, P("data", "model")))
w1 = jax.device_put(jnp.ones((64, 32), jnp.float32), NamedSharding(mesh, P("model", None)))
LINE = {}

def matmul(x, w1):
    LINE["matmul"] = sys._getframe().f_lineno + 1
    return jnp.tanh(x @ w1)  # w1's contracting dim is sharded on "model": XLA adds an all-reduce

@partial(jax.shard_map, mesh=mesh, in_specs=(P("data", "model"),), out_specs=P("data", "model"), check_vma=False)
def by_hand(x):
    LINE["psum"] = sys._getframe().f_lineno + 1
    s = jax.lax.psum(x, "model")
    g = jax.lax.all_gather(x, "model", axis=1, tiled=True)
    r = jax.lax.psum_scatter(g, "model", scatter_dimension=1, tiled=True)
    t = jax.lax.all_to_all(g, "model", 0, 1, tiled=True)
    p = jax.lax.ppermute(x, "model", perm=[(0, 1), (1, 2), (2, 3), (3, 0)])
    return jnp.concatenate([s, r, p, s], axis=1) + g + t.sum()

def constrained(x, w1):
    y = jnp.tanh(x @ w1)
    return jax.lax.with_sharding_constraint(y, NamedSharding(mesh, P(None, "model"))) * 2.0

def rows(df):
    return json.loads(df.to_json(orient="records", double_precision=15))

def result_bytes(ex):
    # each HLO all-gather's result as XLA writes it, in bytes (f32): S_out = n * S_in checks the group size
    out = {}
    for s in ex.stages:
        if s.group == "xla" and not s.error:
            for c in read_hlo(s.text).computations:
                for i in c.instructions:
                    if i.opcode == "all-gather" and i.shape.startswith("f32["):
                        dims = i.shape[4:i.shape.index("]")].split(",")
                        out[s.name + "/" + i.name] = 4 * int(np.prod([int(d) for d in dims]))
    return out

out = {"line": LINE}
ex = wb.explore(matmul, x, w1)
out["matmul"] = {"rows": rows(ex.collectives()), "names": ex.names,
                 "cost": rows(ex.cost(device="H100")[["stage", "collective_bytes", "roofline_collective_s"]]),
                 "interconnect": PEAKS["H100"].interconnect_bytes_per_s}
ex = wb.explore(by_hand, x)
out["shard_map"] = {"rows": rows(ex.collectives()), "all_gathers": result_bytes(ex)}
ex = wb.explore(constrained, x, w1, shardy_passes="sdy-propagation-pipeline,"
                "func.func(sdy-insert-explicit-reshards{enable-full-version=true}),func.func(sdy-reshard-to-collectives)")
out["shardy"] = {"rows": rows(ex.collectives()), "names": ex.names,
                 "cost": rows(ex.cost()[["stage", "collective_bytes"]])}
def place(a):
    split = a.ndim == 2 and a.shape[0] %% 2 == 0 and a.shape[1] %% 4 == 0
    return jax.device_put(a, NamedSharding(mesh, P("data", "model") if split else P()))

fn, args = examples.load("scan")  # its loop's collectives: XLA writes their groups in the iota and mesh forms
ex = wb.explore(fn, *jax.tree_util.tree_map(place, args))
out["scan"] = {"rows": rows(ex.collectives()), "all_gathers": result_bytes(ex)}
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    script = tmp_path_factory.mktemp("collectives") / "sharded_collectives.py"
    script.write_text(SHARDED % {"root": ROOT})
    res = run_on_cpu_devices(script)
    res["script"] = str(script)
    return res


def _by_stage(rows):
    out = {}
    for r in rows:
        out.setdefault(r["stage"], []).append(r)
    return out


def test_xla_inserts_an_all_reduce_for_a_sharded_contraction(sharded):
    m = sharded["matmul"]
    stages = _by_stage(m["rows"])
    for name in ("xla:spmd-partitioning#1", "xla:optimized"):
        assert name in m["names"] and name in stages, sorted(stages)
        (ar,) = [r for r in stages[name] if r["kind"] == "all-reduce"]
        # per device: x is 8x16, w1 16x32, so the partial product is 8x32 f32 (1024 bytes), summed over
        # the 4 devices of "model": 2 * 3/4 * 1024
        assert ar["op"] == "all-reduce" and ar["dialect"] == "hlo" and ar["shape"] == "8x32"
        assert ar["replica_groups"] == "replica_groups={{0,1,2,3},{4,5,6,7}}"
        assert (ar["group_size"], ar["buffer_bytes"], ar["bytes_per_device"]) == (4, 1024, 1536)
        assert ar["source"] == f"{sharded['script']}:{sharded['line']['matmul']}"
    # no collective before XLA partitions: the MLIR stages only annotate shardings
    assert not [r for r in m["rows"] if r["dialect"] != "hlo"]
    # the cost table's column is each stage's sum, 0 where there is none
    sums = {s: sum(r["bytes_per_device"] for r in rs) for s, rs in stages.items()}
    for row in m["cost"]:
        if row["stage"] == "jaxpr" or row["stage"].startswith("backend:"):
            assert row["collective_bytes"] is None
            continue
        assert row["collective_bytes"] == sums.get(row["stage"], 0), row
        assert row["roofline_collective_s"] == pytest.approx(row["collective_bytes"] / m["interconnect"])


def test_shard_map_collectives_in_stablehlo_and_in_xla(sharded):
    rows = sharded["shard_map"]["rows"]
    stages = _by_stage(rows)
    lowered = {r["kind"]: r for r in stages["stablehlo"]}
    assert set(lowered) == {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
    assert {r["dialect"] for r in stages["stablehlo"]} == {"stablehlo"}
    # per device x is 8x16 f32 (512 bytes); the all-gather makes it 8x64 (2048 bytes) over 4 devices
    expect = {"all-reduce": (4, 512, 768), "all-gather": (4, 2048, 1536), "reduce-scatter": (4, 2048, 1536),
              "all-to-all": (4, 2048, 1536), "collective-permute": (8, 512, 512)}
    for kind, want in expect.items():
        r = lowered[kind]
        assert (r["group_size"], r["buffer_bytes"], r["bytes_per_device"]) == want, r
        assert r["result"].startswith("%") and r["source"].startswith(sharded["script"] + ":"), r
    psum = int(lowered["all-reduce"]["source"].rsplit(":", 1)[1])
    assert psum == sharded["line"]["psum"] and int(lowered["collective-permute"]["source"].rsplit(":", 1)[1]) == psum + 4
    assert lowered["collective-permute"]["replica_groups"].startswith("dense<[[0, 1], [1, 2]")
    optimized = {r["kind"] for r in stages["xla:optimized"]}
    assert {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"} <= optimized
    assert all(r["bytes_per_device"] > 0 and r["source"] for r in stages["xla:optimized"])


def test_shardys_collectives_are_sized_by_their_shardings(sharded):
    s = sharded["shardy"]
    stages = _by_stage(s["rows"])
    done = stages["sdy-reshard-to-collectives#1"]
    by_kind = {r["kind"]: r for r in done}
    assert [r["op"] for r in done] == ["sdy.all_reduce", "sdy.all_slice", "sdy.all_gather"]
    assert {r["dialect"] for r in done} == {"sdy"} and all(r["replica_groups"] is None for r in done)
    # the product is 16x32 f32, 8x32 per device under [{"data"}, {}]: reduced over "model" (4 devices)
    ar = by_kind["all-reduce"]
    assert ar["shape"] == "16x32" and ar["mesh_axes"] == '{"model"}'
    assert (ar["group_size"], ar["buffer_bytes"], ar["bytes_per_device"]) == (4, 1024, 1536)
    assert "per device 8x32" in ar["note"]
    sl = by_kind["all-slice"]  # a local slice: nothing moves
    assert sl["mesh_axes"] == '[{}, {"model"}]' and (sl["group_size"], sl["bytes_per_device"]) == (4, 0)
    ag = by_kind["all-gather"]  # to [{}, {"model"}]: 16x8 per device, gathered over "data" (2 devices)
    assert ag["mesh_axes"] == '[{"data"}, {}]'
    assert (ag["group_size"], ag["buffer_bytes"], ag["bytes_per_device"]) == (2, 512, 256)
    # before sdy-reshard-to-collectives the same traffic is written as reshards, estimated alike
    explicit = [r for r in stages["sdy-insert-explicit-reshards#1"] if r["kind"] == "reshard"]
    assert sorted(r["bytes_per_device"] for r in explicit) == [0, 0, 256]
    cost = {r["stage"]: r["collective_bytes"] for r in s["cost"]}
    assert cost["sdy-reshard-to-collectives#1"] == 1536 + 256 and cost["stablehlo"] == 0


def test_xlas_iota_and_mesh_replica_groups_give_the_group_sizes_xlas_shapes_imply(sharded):
    for name in ("scan", "shard_map"):
        rows = sharded[name]["rows"]
        gathers = sharded[name]["all_gathers"]
        seen = set()
        for r in rows:
            key = f"{r['stage']}/{r['result']}"
            if r["dialect"] == "hlo" and r["kind"] == "all-gather" and key in gathers:
                # S_out = n * S_in: the group size read from replica_groups times the operand is the result
                assert r["buffer_bytes"] == gathers[key], r
                seen.add(r["replica_groups"].split("=", 1)[1][:5])
        assert seen, name
    forms = {r["replica_groups"].split("=", 1)[1][:5] for r in sharded["scan"]["rows"] if r["dialect"] == "hlo"}
    assert {"[4,2]", "mesh["} <= forms  # [4,2]<=[2,4]T(1,0) and mesh['axis_0'=1,...] {'axis_1'}
