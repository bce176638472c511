"""wb.compare_pipelines: one program through several MLIR pipelines, one row each (time, cost, op counts
by dialect, the numeric check), and wb.plot_pipelines drawing it. Times are never asserted."""
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.search.pipelines import DEFAULT_PIPELINES

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@pytest.fixture(scope="module")
def mlp_table():
    fn, args = examples.load("mlp")
    return wb.compare_pipelines(fn, *args, repeat=5)


def test_the_default_pipelines_are_real_presets():
    assert DEFAULT_PIPELINES == ("all", "no_enzyme", "none")
    assert set(DEFAULT_PIPELINES) <= set(wb.pipelines()["name"])


def test_one_row_per_pipeline_with_time_check_cost_and_ops(mlp_table):
    df = mlp_table
    assert list(df["pipeline"]) == ["all", "no_enzyme", "none"]
    for col in ("stage", "median_ms", "iqr_ms", "q1_ms", "q3_ms", "repeat", "check_passed", "max_abs_err",
                "max_rel_err", "flops", "bytes", "xla_flops", "xla_bytes", "ops", "ops_stablehlo", "ops_func", "error"):
        assert col in df.columns, col
    assert (df["error"] == "").all(), df["error"]
    assert df["check_passed"].all()  # every pipeline computes the MLP's numbers
    assert (df["repeat"] == 5).all()
    assert ((df["median_ms"] > 0) & (df["iqr_ms"] >= 0)).all()
    assert ((df["q1_ms"] <= df["median_ms"]) & (df["median_ms"] <= df["q3_ms"])).all()
    assert (df["iqr_ms"] - (df["q3_ms"] - df["q1_ms"])).abs().max() < 1e-9
    assert (df["flops"] > 0).all() and (df["bytes"] > 0).all()
    dialects = [c for c in df.columns if c.startswith("ops_")]
    assert (df[dialects].sum(axis=1) == df["ops"]).all()
    rows = df.set_index("pipeline")
    assert rows.loc["none", "stage"] == "stablehlo"  # no MLIR pass: the module as lowered
    assert rows.loc["all", "stage"].startswith("enzyme-hlo-patterns")
    # the patterns simplify the MLP: fewer stablehlo ops than as lowered, no more flops
    assert rows.loc["all", "ops_stablehlo"] < rows.loc["none", "ops_stablehlo"]
    assert rows.loc["all", "flops"] <= rows.loc["none", "flops"]


def test_the_plot_has_time_flops_and_ops_side_by_side(mlp_table):
    fig = wb.plot_pipelines(mlp_table)
    axes = fig.get_axes()
    assert [a.get_title() for a in axes] == ["time", "flops", "ops by dialect"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["all", "no_enzyme", "none"]
    from matplotlib.container import BarContainer, ErrorbarContainer

    kinds = {type(c) for c in axes[0].containers}
    assert {BarContainer, ErrorbarContainer} <= kinds  # bars with the IQR as error bars
    assert sorted(t.get_text() for t in axes[2].get_legend().get_texts()) == ["func", "stablehlo"]


def test_a_failing_pipeline_is_a_row_with_its_error_not_the_end():
    def f(x):
        return jnp.sin(x) * 2.0

    df = wb.compare_pipelines(f, jnp.ones((4, 3)), pipelines=["canonicalize", "cse,one-shot-bufferize"], repeat=3)
    assert list(df["pipeline"]) == ["canonicalize", "cse,one-shot-bufferize"]
    ok, broken = df.iloc[0], df.iloc[1]
    assert ok["error"] == "" and bool(ok["check_passed"])
    assert "the pipeline failed at one-shot-bufferize" in broken["error"]
    with pytest.raises(wb.UnknownNameError):
        wb.compare_pipelines(f, jnp.ones(3), pipelines=["al"])
