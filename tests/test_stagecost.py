"""The cost of every stage of an Exploration: one table, one chart."""
import jax
import jax.numpy as jnp
import pandas as pd
import pytest

from workbench import examples
import workbench as wb

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

COLUMNS = ["stage", "group", "ops", "flops", "transcendentals", "bytes", "loop_multiplied", "xla_flops",
           "xla_transcendentals", "xla_bytes", "seconds", "argument_bytes", "output_bytes", "temp_bytes",
           "alias_bytes", "generated_code_bytes"]


@pytest.mark.parametrize("name", ["mlp", "attention", "convnet"])
def test_every_stage_is_costed_and_agrees_with_xla_on_loop_free_programs(name):
    fn, args = examples.load(name)
    ex = wb.explore(fn, *args)
    df = ex.cost()
    assert set(COLUMNS) <= set(df.columns)
    assert list(df.stage) == ex.names
    assert any(c.startswith("ops_stablehlo") for c in df.columns)
    modules = df[df.group.isin(["mlir"]) | (df.stage == "stablehlo")]
    assert len(modules) == len([s for s in ex.stages if s.group == "mlir"]) + 1
    for _, row in modules.iterrows():
        assert abs(row.flops - row.xla_flops) <= 0.01 * max(row.xla_flops, 1), row.stage
        assert abs(row.transcendentals - row.xla_transcendentals) <= 0.01 * max(row.xla_transcendentals, 1)
        assert not row.loop_multiplied
    final = df.set_index("stage").loc["xla:optimized"]
    assert final.temp_bytes >= 0 and final.argument_bytes > 0 and final.output_bytes > 0
    assert final.generated_code_bytes >= 0  # XLA:CPU reports 0 here; GPU reports the kernel size
    assert final.xla_flops > 0  # XLA's own analysis of the optimized, fused module
    # a pattern that removes ops shows in the op counts
    assert df.set_index("stage").loc["stablehlo", "ops"] >= df[df.group == "mlir"].ops.iloc[-1]


def test_scan_flops_are_trip_count_times_body():
    fn, args = examples.load("scan")
    ex = wb.explore(fn, *args, pipeline="canonicalize")
    row = ex.cost().set_index("stage").loc["stablehlo"]
    assert row.loop_multiplied
    per_op = ex.cost("stablehlo")
    inside = per_op[per_op.trip_count > 1]
    assert set(inside.trip_count) >= {16}  # the scan's 16 steps, read from the while loop's counter
    body = per_op[per_op.trip_count == 16]
    assert body.flops.sum() % 16 == 0 and body.flops.sum() > 0
    assert row.flops > row.flops_body_once  # XLA's way counts the body once
    assert row.xla_flops == pytest.approx(row.flops_body_once, rel=0.01)


def test_roofline_columns_for_a_chosen_device():
    fn, args = examples.load("mlp")
    df = wb.explore(fn, *args, pipeline="canonicalize").cost(device="H100")
    row = df.set_index("stage").loc["stablehlo"]
    assert row.roofline_flops_s > 0 and row.roofline_bytes_s > 0 and row.bound in ("compute", "memory")


def test_custom_calls_are_unknown_not_minus_one():
    def f(x):
        return jnp.linalg.cholesky(x @ x.T + 4.0 * jnp.eye(4))

    ex = wb.explore(f, jnp.ones((4, 4)) * 0.1, pipeline="canonicalize")
    row = ex.cost().set_index("stage").loc["stablehlo"]
    assert row.unknown_custom_calls >= 1
    # XLA charges the custom call -1 flops and -1 bytes and sums that in: the totals are unknown
    assert pd.isna(row.xla_flops) and pd.isna(row.xla_bytes) and row.xla_transcendentals == 0
    opt = ex.cost().set_index("stage").loc["xla:optimized"]
    assert "custom-call" in ex["xla:optimized"].text
    assert pd.isna(opt.xla_flops) and pd.isna(opt.xla_bytes) and "custom calls" in opt.note
    ops = ex.cost("stablehlo")
    cc = ops[ops.kind == "custom_call"]
    assert len(cc) >= 1 and cc.flops.isna().all()


def test_plot_cost_draws_three_panels():
    fn, args = examples.load("attention")
    fig = wb.explore(fn, *args).plot_cost()
    assert len(fig.axes) == 3
    assert [a.get_ylabel() for a in fig.axes] == ["ops", "flops", "bytes (unfused)"]
