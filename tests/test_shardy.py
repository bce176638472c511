"""Shardy's stages for a sharded program (Reactant's shardy_passes / optimize_communications), on the
sharded transformer block of workbench/examples/attention.py over a 2 x 4 CPU mesh, and XLA's SPMD
partitioner's stages after them. The mesh needs 8 devices, so the program runs in a child Python
started with XLA_FLAGS=--xla_force_host_platform_device_count=8 (this process's JAX has one)."""
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.pipeline.shardy import is_sharded, resolve_mode, shardy_steps
from tests.devices import run_on_cpu_devices

ROOT = str(Path(__file__).resolve().parents[1])

SCRIPT = r"""
import json, re, sys
sys.path.insert(0, %(root)r)
import workbench as wb
from workbench.examples import attention

COLL = re.compile(r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(")
args = attention.sharded_args()
out = {}

def facts(ex):
    mlir = [s for s in ex.stages if s.group == "mlir"]
    xla = [s for s in ex.stages if s.group == "xla"]
    return {
        "shardy": ex.spec.shardy,
        "mlir": [[s.name, s.changed, bool(s.error), s.produced_by] for s in mlir],
        "error": str(ex.error) if ex.error else "",
        "xla": [s.name for s in xla],
        "collectives": {s.name: len(COLL.findall(s.text)) for s in xla},
        "op_shardings": {s.name: s.text.count("sdy.sharding_per_value") for s in mlir if not s.error},
    }

ex = wb.explore(attention.fn, *args)
out["default"] = facts(ex)
out["default"]["check"] = ex.run(repeat=2).check.passed
coll = ex.collectives()
out["default"]["collectives_table"] = {
    "spmd": coll[coll["stage"] == "xla:spmd-partitioning#1"][["kind", "group_size", "bytes_per_device"]].values.tolist(),
    "optimized": coll[coll["stage"] == "xla:optimized"][["kind", "group_size", "bytes_per_device"]].values.tolist(),
    "cost": ex.cost().set_index("stage")["collective_bytes"].fillna(-1).to_dict()}
first = ex.pipeline_stages[0].name
toggled = ex.with_patterns(disable=[wb.patterns()["name"].iloc[0]])
out["toggled"] = facts(toggled)
out["none"] = facts(wb.explore(attention.fn, *args, shardy_passes="none"))
out["no_comm"] = facts(wb.explore(attention.fn, *args, optimize_communications=False))
out["mhlo"] = facts(wb.explore(attention.fn, *args, shardy_passes="to_mhlo_shardings"))
custom = wb.explore(attention.fn, *args, shardy_passes="sdy-propagation-pipeline,sdy-close-shardings,"
                    "func.func(sdy-insert-explicit-reshards),func.func(sdy-reshard-to-collectives)")
out["custom"] = facts(custom)
out["custom"]["check"] = custom.run(repeat=2).check.passed
try:
    wb.explore(attention.fn, *args, shardy_passes="sdy-no-such-pass")
    out["bad"] = ""
except wb.WorkbenchError as e:
    out["bad"] = type(e).__name__ + ": " + str(e)
# the sharded scan example through canonicalize alone: Shardy's propagation gives a module on which
# XLA (jaxlib 0.10.2) fails a RET_CHECK that ends the process; the compile is tried in a child first
import jax, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from workbench import examples
mesh = attention.mesh()
def place(a):
    split = a.ndim == 2 and a.shape[0] %% 2 == 0 and a.shape[1] %% 4 == 0
    return jax.device_put(a, NamedSharding(mesh, P("data", "model") if split else P()))
fn, sargs = examples.load("scan")
loop = wb.explore(fn, *jax.tree_util.tree_map(place, sargs), pipeline="canonicalize")
try:
    ran = loop.run(repeat=1).check.passed
except wb.WorkbenchError as e:
    ran = type(e).__name__ + ": " + str(e)
out["abort"] = {"error": str(loop.error or ""), "run": ran, "before": loop.run("canonicalize#1", repeat=1).check.passed}
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    script = tmp_path_factory.mktemp("shardy") / "shardy.py"
    script.write_text(SCRIPT % {"root": ROOT})
    return run_on_cpu_devices(script)


SDY = ["sdy-propagation-pipeline#1", "sdy-close-shardings#1", "comm-patterns#1", "comm-patterns#2",
       "optimize-communication#1", "comm-patterns#3", "optimize-communication#2", "sdy-reshard-to-collectives#1"]


@pytest.mark.slow
def test_a_sharded_block_gets_reactants_post_propagation_stages_then_xlas_spmd_stages(sharded):
    d = sharded["default"]
    assert d["shardy"] == "post_sdy_propagation" and not d["error"]
    names = [m[0] for m in d["mlir"]]
    assert names[-len(SDY):] == SDY, names  # after the Enzyme pipeline, in Reactant's order
    by = {m[0]: m for m in d["mlir"]}
    assert by["sdy-propagation-pipeline#1"][1]  # propagation annotates the ops...
    assert d["op_shardings"]["sdy-propagation-pipeline#1"] > 20 and d["op_shardings"][names[-len(SDY) - 1]] == 0
    assert by["sdy-reshard-to-collectives#1"][3] == "func.func(sdy-reshard-to-collectives)"
    assert by["optimize-communication#1"][3].startswith("optimize-communication{") and "concat_to_dus=1" in by["optimize-communication#1"][3]
    # XLA's own Shardy pass and SPMD partitioner are stages, with the collectives they insert
    assert "xla:shardy-xla#1" in d["xla"] and "xla:spmd-partitioning#1" in d["xla"]
    assert d["collectives"]["xla:before_optimizations"] == 0
    assert d["collectives"]["xla:spmd-partitioning#1"] > 0 and d["collectives"]["xla:optimized"] > 0
    assert d["check"]  # and the numbers are those of the float64 reference
    # ex.collectives(): the all-reduces XLA's partitioner inserted (Megatron's row-split products and the
    # gradient's sums over the batch), each with its group and the bytes each device moves
    table = d["collectives_table"]
    assert len(table["spmd"]) == d["collectives"]["xla:spmd-partitioning#1"]
    assert {k for k, _, _ in table["spmd"]} == {"all-reduce"} and all(n in (2, 4, 8) and b > 0 for _, n, b in table["spmd"])
    assert table["optimized"] and sum(b for _, _, b in table["optimized"]) == table["cost"]["xla:optimized"] > 0
    assert table["cost"]["stablehlo"] == 0


@pytest.mark.slow
def test_the_modes_and_options_change_the_stages_as_reactant_does(sharded):
    assert sharded["toggled"]["mlir"][-len(SDY):] and [m[0] for m in sharded["toggled"]["mlir"]][-len(SDY):] == SDY
    none = sharded["none"]
    assert none["shardy"] == "none" and not any(m[0].startswith(("sdy-", "comm-", "optimize-")) for m in none["mlir"])
    assert "xla:spmd-partitioning#1" in none["xla"] and none["collectives"]["xla:optimized"] > 0
    no_comm = [m[0] for m in sharded["no_comm"]["mlir"]]
    assert no_comm[-4:] == ["sdy-propagation-pipeline#1", "sdy-close-shardings#1", "comm-patterns#1",
                            "sdy-reshard-to-collectives#1"]
    assert "lower_rotate" in sharded["no_comm"]["mlir"][-2][3]
    mhlo = sharded["mhlo"]  # the export XLA runs inside its compiler is not a registered pass here: it fails, clearly
    assert mhlo["mlir"][-1][0] == "xla-sdy-stablehlo-export-pipeline#1" and mhlo["mlir"][-1][2]
    assert "registered neither by enzyme-ad" in mhlo["error"] and mhlo["xla"] == []
    assert [m[0] for m in mhlo["mlir"]][-len(SDY) - 1:-1] == SDY and not any(m[2] for m in mhlo["mlir"][:-1])
    custom = [m[0] for m in sharded["custom"]["mlir"]]
    assert custom[-10:-6] == ["sdy-propagation-pipeline#1", "sdy-close-shardings#1", "sdy-insert-explicit-reshards#1",
                             "sdy-reshard-to-collectives#1"] and custom[-6] == "sdy-close-shardings#2"
    assert sharded["custom"]["check"] and not sharded["custom"]["error"]
    assert sharded["bad"].startswith("PipelineSyntaxError") and "sdy-no-such-pass" in sharded["bad"]


def test_shardy_modes_resolve_like_reactants_and_refuse_what_cannot_apply():
    assert resolve_mode(None, True) == "post_sdy_propagation" and resolve_mode(None, False) == "none"
    assert resolve_mode(":to_mhlo_shardings", True) == "to_mhlo_shardings"
    with pytest.raises(wb.WorkbenchError, match="not: its arguments are on one device"):
        wb.explore(lambda a: a + 1, jnp.ones(3), shardy_passes="post_sdy_propagation")
    with pytest.raises(wb.WorkbenchError, match="'canonicalize' is not"):
        resolve_mode("sdy-propagation-pipeline,canonicalize", True)
    ex = wb.explore(lambda a: a * 2, jnp.ones(3), pipeline="canonicalize")
    assert ex.spec.shardy == "none" and [s.name for s in ex.stages if s.group == "mlir"] == ["canonicalize#1"]
    assert is_sharded('module {\n  sdy.mesh @mesh = <["x"=2]>\n}') and not is_sharded("module {\n}")
    assert not is_sharded('module {\n  sdy.mesh @empty_mesh = <[]>\n}')  # JAX writes one for a PRNG key
    key = wb.explore(lambda k: jax.random.normal(k, (4,)), jax.random.key(0), pipeline="none")
    assert key.spec.shardy == "none" and not any(s.name.startswith("sdy-") for s in key.stages)
    assert [b for b, _ in shardy_steps("post_sdy_propagation", enzyme=False)] == [
        "sdy-propagation-pipeline", "sdy-close-shardings", "sdy-reshard-to-collectives"]


SHARDED_TEXT = """\
module @sharded attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x6xf32>) -> tensor<8x6xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = stablehlo.tanh %0 : tensor<8x6xf32>
    return %1 : tensor<8x6xf32>
  }
}
"""


def test_a_sharded_module_given_as_text_gets_its_propagation_stages():
    ex = wb.explore_text(SHARDED_TEXT, pipeline="canonicalize")
    assert ex.spec.shardy == "post_sdy_propagation"
    prop = ex["sdy-propagation-pipeline#1"]
    assert prop.changed and re.search(r"stablehlo\.tanh .*sdy\.sharding_per_value<\[<@mesh, \[\{\"x\"", prop.text)
    assert ex.pipeline_stages[-1].name == "sdy-reshard-to-collectives#1" and ex.pipeline_error is None
    none = wb.explore_text(SHARDED_TEXT, pipeline="canonicalize", shardy_passes="none")
    assert [s.name for s in none.stages if s.group == "mlir"] == ["canonicalize#1"]


@pytest.mark.slow
def test_a_sharded_compile_xla_aborts_on_is_an_error_and_the_process_lives(sharded):
    a = sharded["abort"]  # the child script got here: XLA's abort did not take it down
    assert a["before"]  # the stage before Shardy's compiles and runs
    if a["error"].startswith("stage 'xla:compile' failed: XlaAbortError"):
        # XLA refuses this module (jaxlib 0.10.2): a RET_CHECK, which at times ends the process
        assert a["error"].startswith("stage 'xla:compile' failed: XlaAbortError: XLA "), a
        assert "sharded over 8 devices" in a["error"] and "lives on" in a["error"] and "RET_CHECK" in a["error"]
        assert a["run"].startswith("XlaAbortError")  # and a run does not try it here either
    elif a["error"]:
        # at other times XLA's SPMD partitioner refuses it with an error of its own (seen in a loaded CI run:
        # "(...) has 6 leaf nodes while this sharding has 9"), raised where the compile runs: said in words, the
        # stage named, the process alive
        assert a["error"].startswith("stage 'xla:compile' failed: ") and "sharding" in a["error"], a
        assert a["run"] is True or "Error" in a["run"], a
    else:  # a jaxlib that compiles it: then it runs and checks
        assert a["run"] is True


def test_the_diff_of_propagation_pairs_each_op_with_its_annotated_self():
    """Shardy's propagation writes a sharding on every op: the diff shows those lines as changed, the
    sharding the difference, rather than the whole function deleted and written again."""
    ex = wb.explore_text(SHARDED_TEXT, pipeline="canonicalize")
    d = ex.diff("canonicalize#1", "sdy-propagation-pipeline#1")
    kinds = [k for _, _, k in d.rows()]
    assert "deleted" not in kinds and "inserted" not in kinds and kinds.count("changed") >= 3, d.unified()
    tanh = next(j for _, j, k in d.rows() if k == "changed" and "stablehlo.tanh" in d.after[j])
    assert "sdy.sharding_per_value" in d.after[tanh]
