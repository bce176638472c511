"""Cost analysis of real programs: the analytic model, op by op and in total, checked against XLA's own
HloCostAnalysis of the same module, before and after Enzyme-JaX's optimization pipeline."""

import contextlib
import dataclasses
import json
import socket

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

from workbench.analysis.cost import (
    COLUMNS,
    KINDS,
    PEAKS,
    ModuleCost,
    ModuleParseError,
    cpu_peak,
    hlo_module_cost,
    hlo_op_costs,
    memory_analysis,
    model_work,
    module_cost,
    op_costs,
    roofline,
    xla_cost,
)


def lowered(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text()


def enzyme_optimized(text: str) -> str:
    enzyme = pytest.importorskip(
        "enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only"
    )
    _, out = enzyme.enzyme_call.run_pass_pipeline([], text, enzyme.optimization_passes())
    return out.replace("func.func private @main", "func.func public @main")


# --- the validation programs ------------------------------------------------------------------------


def mlp_forward_and_grad() -> str:
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    sizes = [64, 128, 128, 10]
    keys = jax.random.split(jax.random.PRNGKey(0), len(sizes))
    params = [
        (jax.random.normal(k, (m, n)) * 0.1, jnp.zeros((n,)))
        for k, m, n in zip(keys, sizes[:-1], sizes[1:])
    ]
    return lowered(jax.value_and_grad(loss), params, jnp.ones((32, 64)), jnp.ones((32, 10)))


def attention_block() -> str:
    def block(x, wq, wk, wv, wo):
        b, t, d = x.shape
        heads = 4

        def split(m):
            return (x @ m).reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

        q, k, v = split(wq), split(wk), split(wv)
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(d // heads)
        mask = jnp.tril(jnp.ones((t, t), bool))
        p = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
        out = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(b, t, d)
        return x + out @ wo

    d = 64
    w = jnp.ones((d, d)) / d
    return lowered(block, jnp.ones((2, 16, d)), w, w, w, w)


def conv_net() -> str:
    def net(x, w1, w2):
        dims = ("NHWC", "HWIO", "NHWC")
        y = jax.nn.relu(jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dims))
        y = jax.nn.relu(jax.lax.conv_general_dilated(y, w2, (2, 2), "VALID", dimension_numbers=dims))
        return jnp.mean(y)

    return lowered(net, jnp.ones((4, 16, 16, 3)), jnp.ones((3, 3, 3, 8)), jnp.ones((3, 3, 8, 16)))


PROGRAMS = {"mlp_grad": mlp_forward_and_grad, "attention": attention_block, "convnet": conv_net}


@pytest.fixture(scope="module")
def stablehlo_texts() -> dict[str, str]:
    return {name: build() for name, build in PROGRAMS.items()}


def assert_agrees_with_xla(text: str) -> None:
    mc = module_cost(text)
    xla = xla_cost(text)
    assert xla is not None
    assert not mc.loop_multiplied and mc.unknown_custom_calls == 0 and mc.unmodelled_ops == 0
    assert mc.flops == pytest.approx(xla["xla_flops"], rel=0.01)
    assert mc.transcendentals == pytest.approx(xla["xla_transcendentals"], rel=0.01)
    assert mc.bytes == pytest.approx(xla["xla_bytes"], rel=0.01)


@pytest.mark.parametrize("name", PROGRAMS)
def test_analytic_totals_agree_with_xla_on_loop_free_programs(stablehlo_texts, name):
    assert_agrees_with_xla(stablehlo_texts[name])


@pytest.mark.parametrize("name", PROGRAMS)
def test_enzyme_optimized_stage_agrees_with_xla(stablehlo_texts, name):
    optimized = enzyme_optimized(stablehlo_texts[name])
    assert optimized != stablehlo_texts[name]
    assert_agrees_with_xla(optimized)


def test_private_main_from_enzyme_is_costed_by_xla(stablehlo_texts):
    text = stablehlo_texts["attention"].replace("func.func public @main", "func.func private @main")
    assert xla_cost(text) == xla_cost(stablehlo_texts["attention"])


def _by_export_route(monkeypatch, text: str):
    """xla_cost as jax.export's route gives it: XLA's own conversion taken away."""
    def refused(_text):
        raise RuntimeError("the conversion is off for this check")

    with monkeypatch.context() as m:
        m.setattr("workbench.analysis.cost.xla._converted", refused)
        return xla_cost(text)


@pytest.mark.parametrize("name", PROGRAMS)
def test_xla_conversion_gives_the_export_routes_numbers(stablehlo_texts, monkeypatch, name):
    """XLA's own MLIR-to-HLO conversion of the module (the route xla_cost takes first) and jax.export's route
    (a call of the module traced and lowered, its wrapper's pointer table taken off) give the same numbers, on
    the program as JAX lowered it, with its results a tuple, and after Enzyme-JaX's pipeline."""
    text = stablehlo_texts[name]
    for module in (text, enzyme_optimized(text)):
        direct = xla_cost(module)
        assert direct is not None and direct["xla_flops"] > 0
        assert direct == _by_export_route(monkeypatch, module)


def test_a_module_with_a_host_callback_gets_xlas_transcendentals(monkeypatch):
    """jax.export cannot carry a host callback; XLA's own conversion can: the module is costed, its flops and
    bytes unknown (XLA charges the callback's custom call -1), its transcendentals XLA's count."""
    def f(x):
        jax.debug.print("x {}", x)
        return jnp.tanh(x) * jnp.exp(x)

    # lowered for the CPU on any host: there the callback is a custom call (a TPU sends to the host instead)
    with jax.default_device(jax.devices("cpu")[0]):
        text = lowered(f, jnp.ones((8, 16)))
    assert _by_export_route(monkeypatch, text) is None
    xla = xla_cost(text)
    assert xla == {"xla_flops": None, "xla_transcendentals": 2 * 8 * 16.0, "xla_bytes": None}
    assert module_cost(text).transcendentals == 2 * 8 * 16


# --- one row per op -------------------------------------------------------------------------------


def test_rows_have_the_documented_columns_and_kinds(stablehlo_texts):
    df = op_costs(stablehlo_texts["mlp_grad"])
    assert tuple(df.columns) == COLUMNS
    assert set(df.kind) <= set(KINDS)
    assert {"dot_general", "reduce", "elementwise", "transcendental", "data_movement"} <= set(df.kind)
    assert (df.trip_count == 1).all()
    first_matmul = df[df.kind == "dot_general"].iloc[0]
    assert first_matmul.op == "stablehlo.dot_general"
    assert first_matmul.result_shapes == "tensor<32x128xf32>"
    assert first_matmul.flops == 2 * 32 * 64 * 128
    tanh = df[df.op == "stablehlo.tanh"].iloc[0]
    assert (tanh.flops, tanh.transcendentals, tanh.bytes) == (0, 32 * 128, 2 * 32 * 128 * 4)


def test_module_cost_is_a_frozen_value_with_op_counts(stablehlo_texts):
    mc = module_cost(stablehlo_texts["convnet"])
    assert isinstance(mc, ModuleCost)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mc.flops = 0
    assert mc.ops == sum(mc.ops_by_dialect.values())
    assert set(mc.ops_by_dialect) == {"func", "stablehlo"}
    assert mc.flops == op_costs(stablehlo_texts["convnet"]).flops.sum()


def test_same_padded_convolution_counts_only_taps_on_real_input():
    text = lowered(
        lambda x, w: jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        ),
        jnp.ones((1, 4, 4, 1)),
        jnp.ones((3, 3, 1, 1)),
    )
    conv = op_costs(text).query("kind == 'convolution'").iloc[0]
    # Per spatial dimension the 3 taps reach 3, 4 and 3 of the 4 output positions: 10 pairs.
    assert conv.flops == 2 * 10 * 10
    assert conv.flops < 2 * 16 * 9
    assert xla_cost(text)["xla_flops"] == conv.flops


def test_functions_cost_once_per_call_site():
    relu_twice = lowered(lambda x: jax.nn.relu(jax.nn.relu(x) - 1.0), jnp.ones((8, 8)))
    assert relu_twice.count("call @relu(") == 2
    df = op_costs(relu_twice)
    maxima = df[df.op == "stablehlo.maximum"]
    # one row per op of @relu, costing both calls
    assert len(maxima) == 1 and (maxima.func.iloc[0], maxima.calls.iloc[0]) == ("relu", 2)
    assert maxima.flops.iloc[0] == maxima.trip_count.iloc[0] * 64 == 2 * 64
    assert "via @main (2 call paths)" in maxima.note.iloc[0]
    assert module_cost(relu_twice).flops == xla_cost(relu_twice)["xla_flops"] == 3 * 64


def test_constant_arithmetic_is_folded_as_xla_imports_it():
    text = lowered(lambda x: x * (jnp.float32(1.0) / jnp.float32(320.0)), jnp.ones((4, 4)))
    df = op_costs(text)
    divide = df[df.op == "stablehlo.divide"].iloc[0]
    assert divide.flops == 0 and "folded" in divide.note
    assert module_cost(text).flops == xla_cost(text)["xla_flops"] == 16


def test_conditional_counts_its_costliest_branch_like_xla():
    def f(x, p):
        return jax.lax.cond(p > 0, lambda x: jnp.sin(x) @ x, lambda x: x * 2.0, x)

    text = lowered(f, jnp.ones((8, 8)), 1.0)
    df = op_costs(text)
    assert df[df.op == "stablehlo.multiply"].note.str.contains("not counted").all()
    assert df[df.op == "stablehlo.dot_general"].flops.sum() == 2 * 8 * 8 * 8
    mc, xla = module_cost(text), xla_cost(text)
    assert (mc.flops, mc.transcendentals, mc.bytes) == (
        xla["xla_flops"],
        xla["xla_transcendentals"],
        xla["xla_bytes"],
    )


# --- loops ----------------------------------------------------------------------------------------


def test_scan_body_is_multiplied_by_its_trip_count():
    def f(x, w):
        h, _ = jax.lax.scan(lambda h, _: (jnp.tanh(h @ w), None), x, None, length=7)
        return h.sum()

    text = lowered(f, jnp.ones((8, 16)), jnp.ones((16, 16)))
    df = op_costs(text)
    mc = module_cost(text)
    body_flops = 2 * 8 * 16 * 16 + 1  # the matmul, and the counter's increment
    cond_flops = 1  # the counter's comparison, evaluated once more than the body runs
    outside_flops = 8 * 16 - 1  # the final sum
    assert mc.loop_multiplied
    assert mc.flops == 7 * body_flops + 8 * cond_flops + outside_flops
    assert mc.transcendentals == 7 * 8 * 16
    assert mc.flops_body_once == body_flops + cond_flops + outside_flops
    assert set(df[df.op == "stablehlo.dot_general"].trip_count) == {7}
    assert "trip count 7" in df[df.op == "stablehlo.while"].note.iloc[0]
    # XLA counts the body once: the body-once totals are the ones to compare.
    xla = xla_cost(text)
    assert (mc.flops_body_once, mc.transcendentals_body_once, mc.bytes_body_once) == (
        xla["xla_flops"],
        xla["xla_transcendentals"],
        xla["xla_bytes"],
    )


def test_nested_loops_multiply_their_trip_counts():
    def f(x):
        inner = lambda i, g: g * 2.0 + 1.0  # noqa: E731
        return jax.lax.fori_loop(0, 3, lambda i, h: jax.lax.fori_loop(0, 4, inner, h), x)

    text = lowered(f, jnp.ones((8, 16)))
    df = op_costs(text)
    adds = df[(df.op == "stablehlo.add") & (df.result_shapes == "tensor<8x16xf32>")]
    assert set(adds.trip_count) == {12}
    assert adds.flops.sum() == 12 * 8 * 16
    inner_iteration = 2 * 8 * 16 + 1
    inner_loop = 4 * inner_iteration + 5
    assert module_cost(text).flops == 3 * (inner_loop + 1) + 4


def test_loop_of_unknown_trip_count_is_counted_once_and_says_so():
    def f(x):
        return jax.lax.while_loop(lambda h: h.sum() < 100.0, lambda h: h * 2.0, x)

    text = lowered(f, jnp.ones((8, 8)))
    mc = module_cost(text)
    assert not mc.loop_multiplied
    assert mc.flops == mc.flops_body_once == xla_cost(text)["xla_flops"]
    assert "trip count not read" in op_costs(text).query("op == 'stablehlo.while'").note.iloc[0]


# --- what the model does not know -----------------------------------------------------------------


def test_custom_calls_are_unknown_never_minus_one():
    text = lowered(lambda a: jnp.linalg.inv(a + 4.0 * jnp.eye(4)), jnp.ones((4, 4)))
    df = op_costs(text)
    calls = df[df.kind == "custom_call"]
    assert len(calls) >= 1
    assert calls.flops.isna().all() and calls.bytes.isna().all()
    mc = module_cost(text)
    assert mc.unknown_custom_calls == len(calls)
    assert mc.flops >= 0 and mc.bytes >= 0
    xla = xla_cost(text)
    assert xla["xla_flops"] is None and xla["xla_bytes"] is None
    assert xla["xla_transcendentals"] >= 0


HAND_WRITTEN = """
module {
  func.func private @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = "enzymexla.rotate"(%arg0) <{amount = 1 : i32, dimension = 0 : i32}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = "mydialect.magic"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = stablehlo.custom_call @my_kernel(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = stablehlo.add %2, %0 {enzymexla.symmetric_matrix = [#enzymexla<guaranteed NOTGUARANTEED>], enzymexla.bounds = [[1 : i32, 7 : i32]]} : tensor<4x8xf32>
    return %3 : tensor<4x8xf32>
  }
}
"""


def test_unknown_dialects_and_enzyme_attributes_still_cost():
    df = op_costs(HAND_WRITTEN).set_index("op")
    assert df.loc["enzymexla.rotate"].kind == "data_movement"
    assert df.loc["enzymexla.rotate", "bytes"] == 2 * 4 * 8 * 4
    assert df.loc["mydialect.magic"].kind == "other"
    assert pd.isna(df.loc["mydialect.magic", "flops"])
    assert df.loc["stablehlo.custom_call"].kind == "custom_call"
    assert df.loc["stablehlo.add", "flops"] == 32
    mc = module_cost(HAND_WRITTEN)
    assert (mc.unknown_custom_calls, mc.unmodelled_ops, mc.flops) == (1, 1, 32)
    assert mc.ops_by_dialect["enzymexla"] == 1
    assert xla_cost(HAND_WRITTEN) is None  # XLA cannot take unregistered dialects
    assert memory_analysis(HAND_WRITTEN) is None


def test_unparseable_text_raises_a_named_error():
    with pytest.raises(ModuleParseError, match="cannot parse"):
        module_cost("this is not MLIR")


def test_xla_cost_is_none_without_main():
    text = "module {\n  func.func @f(%a: tensor<f32>) -> tensor<f32> {\n    return %a : tensor<f32>\n  }\n}"
    assert xla_cost(text) is None


def test_memory_analysis_reports_buffer_sizes():
    text = lowered(lambda a, b: (a @ b, a.sum()), jnp.ones((16, 32)), jnp.ones((32, 8)))
    memory = memory_analysis(text)
    assert set(memory) == {
        "argument_bytes",
        "output_bytes",
        "temp_bytes",
        "alias_bytes",
        "generated_code_bytes",
    }
    assert memory["argument_bytes"] == (16 * 32 + 32 * 8) * 4
    assert memory["output_bytes"] >= (16 * 8 + 1) * 4


# --- peaks and roofline ---------------------------------------------------------------------------


def test_gpu_peaks_name_their_source():
    for device in ("H100", "H200", "A100"):
        peak = PEAKS[device]
        assert {"fp32", "bf16"} <= set(peak.flops_per_s)
        assert peak.flops_per_s["bf16"] > peak.flops_per_s["fp32"] > 0
        assert peak.bytes_per_s > 1e12
        assert "spec sheet" in peak.source
    assert PEAKS["H200"].bytes_per_s > PEAKS["H100"].bytes_per_s > PEAKS["A100"].bytes_per_s
    assert set(PEAKS) == {"H100", "H200", "A100", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "cpu"}


def test_tpu_peaks_come_from_googles_pages_and_are_found_from_the_device_kind():
    """A TPU's device_kind ("TPU v5 lite" is a v5e) picks its generation's sheet; fp32 at JAX's default
    matmul precision runs as one bfloat16 pass, so its peak is the bf16 rate; int8 is twice that from v5 on."""
    from workbench.backends import backend_for

    tpu = backend_for("tpu")
    assert tpu.peak("TPU v5 lite") is PEAKS["TPU v5e"] and tpu.peak("TPU v6 lite") is PEAKS["TPU v6e"]
    assert tpu.peak("TPU v4") is PEAKS["TPU v4"] and tpu.peak("TPU v5p") is PEAKS["TPU v5p"]
    assert tpu.peak("TPU v2") is None
    v5e = PEAKS["TPU v5e"]
    assert v5e.flops_per_s["bf16"] == 197e12 and v5e.bytes_per_s == 819e9 and "Google" in v5e.source
    assert v5e.flops_per_s["fp32"] == v5e.flops_per_s["bf16"] and v5e.flops_per_s["int8"] > v5e.flops_per_s["bf16"]
    r = roofline(module_cost(lowered(lambda a, b: a @ b, jnp.ones((512, 512)), jnp.ones((512, 512)))),
                 device="TPU v5e", dtype="bf16")
    assert r.time_flops_s == pytest.approx(2 * 512**3 / 197e12, rel=0.01) and r.bound == "memory"
    assert backend_for("gpu").peak("NVIDIA H100 80GB HBM3") is PEAKS["H100"]


def test_roofline_says_which_bound_binds():
    matmul = module_cost(lowered(lambda a, b: a @ b, jnp.ones((512, 512)), jnp.ones((512, 512))))
    add = module_cost(lowered(lambda a, b: a + b, jnp.ones((512, 512)), jnp.ones((512, 512))))
    r = roofline(matmul, device="H100")
    assert r.time_flops_s == pytest.approx(matmul.flops / PEAKS["H100"].flops_per_s["fp32"])
    assert r.time_bytes_s == pytest.approx(matmul.bytes / PEAKS["H100"].bytes_per_s)
    assert r.arithmetic_intensity == pytest.approx(matmul.flops / matmul.bytes)
    assert r.bound == "compute" and "spec sheet" in r.source
    # The same matmul falls under the much higher bf16 ridge point of the tensor cores.
    bf16 = roofline(matmul, device="H100", dtype="bf16")
    assert bf16.ridge_point > r.arithmetic_intensity > r.ridge_point
    assert bf16.bound == "memory"
    assert roofline(add, device="A100").bound == "memory"
    with pytest.raises(ValueError, match="unknown device"):
        roofline(add, device="TPU9")


def test_cpu_peak_is_measured_once_then_read_from_its_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cpu_peak.json"
    measured = cpu_peak(cache)
    assert measured.flops_per_s["fp32"] > 0 and measured.bytes_per_s > 0
    assert socket.gethostname() in measured.source and "micro-benchmark" in measured.source
    stored = json.loads(cache.read_text())
    assert stored["host"] == socket.gethostname()
    assert cpu_peak(cache) == measured
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    small = module_cost(lowered(lambda a: a * 2.0, jnp.ones((8, 8))))
    assert roofline(small, device="cpu").device == "cpu"


# --- work: linear in the module's text, never in what it expands to -------------------------------


def constant_chain(depth: int) -> str:
    """``c = c * c`` ``depth`` times on a constant: spelled out, the last constant's history has
    2**depth leaves, while XLA folds the chain into one constant."""

    def f(x):
        c = jnp.ones(4)
        for _ in range(depth):
            c = c * c
        return x + c

    return lowered(f, jnp.ones(4))


def call_chain(depth: int) -> str:
    """``depth + 1`` functions, each calling the one below twice: 2**depth call paths to the last."""
    g = jax.jit(lambda x: x * 2.0 + 1.0)
    for _ in range(depth):
        g = jax.jit(lambda x, g=g: g(g(x)))
    return lowered(lambda x: g(x), jnp.ones(4))


@pytest.mark.parametrize("depth", [10, 20, 40])
def test_a_chain_of_constants_is_costed_in_work_linear_in_its_text(depth):
    text = constant_chain(depth)
    work = model_work(text)
    mc = module_cost(text)
    assert work.ops_costed == work.rows == mc.ops - 1  # every op costed once, func.func aside
    assert work.ops_visited <= 4 * mc.ops  # each of the model's four passes visits an op once
    assert work.constant_keys == depth + 2  # the constant, its broadcast and each product: one key each
    assert work.constant_key_size <= len(text)  # no key spells out another's
    # XLA folds the chain into one constant and materializes it once, as the model does
    assert (mc.flops, mc.transcendentals, mc.bytes) == (4, 0, 68)
    xla = xla_cost(text)
    assert (xla["xla_flops"], xla["xla_transcendentals"], xla["xla_bytes"]) == (4, 0, 68)


def test_equal_constants_built_the_same_way_are_one_constant_to_xla():
    def f(x):
        a = jnp.full(4, 3.0) * jnp.full(4, 2.0)  # built twice the same way: one splat after the import
        b = jnp.full(4, 3.0) * jnp.full(4, 2.0)
        c = jnp.full(4, 5.0)  # another value: a splat of its own
        return x * a + b * c

    text = lowered(f, jnp.ones(4))
    df = op_costs(text)
    assert df.note.str.contains("a splat: XLA materializes it").sum() == 2
    mc, xla = module_cost(text), xla_cost(text)
    assert (mc.flops, mc.bytes) == (xla["xla_flops"], xla["xla_bytes"])


def test_a_chain_of_calls_is_walked_once_per_function_yet_costs_every_call():
    depth = 18  # 262144 call paths to the leaf; JAX's own lowering of the chain doubles per level beyond
    text = call_chain(depth)
    mc = module_cost(text)
    work = model_work(text)
    functions = text.count("func.func")
    assert functions == depth + 2  # @main, the chain and the leaf
    assert work.ops_costed == work.rows == mc.ops - functions
    assert work.ops_visited <= 4 * mc.ops
    # the leaf's multiply and add run 2**depth times on 4 elements
    assert mc.flops == mc.flops_body_once == 2**depth * 2 * 4
    leaf = op_costs(text).query("op == 'stablehlo.multiply'")
    assert len(leaf) == 1 and leaf.calls.iloc[0] == leaf.trip_count.iloc[0] == 2**depth
    assert leaf.flops.iloc[0] == 2**depth * 4


def test_a_short_chain_of_calls_costs_what_xla_counts():
    text = call_chain(6)
    mc, xla = module_cost(text), xla_cost(text)
    assert (mc.flops, mc.transcendentals, mc.bytes) == (xla["xla_flops"], xla["xla_transcendentals"],
                                                          xla["xla_bytes"])


def test_a_function_called_in_a_loop_and_outside_it_is_one_row_per_op_counting_both():
    g = jax.jit(lambda h: jnp.tanh(h) * 3.0)

    def f(x):
        return jax.lax.fori_loop(0, 5, lambda i, h: g(h), g(x))

    text = lowered(f, jnp.ones((8, 8)))
    df = op_costs(text)
    tanh = df[df.op == "stablehlo.tanh"]
    assert len(tanh) == 1  # one function, one row per op
    assert (tanh.calls.iloc[0], tanh.trip_count.iloc[0]) == (2, 6)  # once outside, 5 times inside
    assert tanh.transcendentals.iloc[0] == 6 * 64
    mc = module_cost(text)
    assert mc.transcendentals == 6 * 64 and mc.transcendentals_body_once == 2 * 64
    assert mc.transcendentals_body_once == xla_cost(text)["xla_transcendentals"]


def test_an_hlo_chain_of_calls_is_costed_by_xla_once_per_instruction():
    depth = 12
    g = jax.jit(lambda x: x * 2.0 + 1.0)
    for _ in range(depth):
        g = jax.jit(lambda x, g=g: g(g(x)))
    hlo = jax.jit(lambda x: g(x)).lower(jnp.ones(4)).as_text(dialect="hlo")
    df = hlo_op_costs(hlo)  # one row per analysis XLA made in the worker
    leaf = df[df.op == "add"]
    assert len(df) == 6 and len(leaf) == 1  # the leaf's six instructions, once; every call is opened
    assert f"runs {2**depth} times (called by %" in leaf.note.iloc[0] and leaf.runs.iloc[0] == 2**depth
    assert leaf.flops.iloc[0] == 2**depth * 4
    whole = hlo_module_cost(hlo)  # XLA's own analysis of the whole module walks every call
    assert (int(df.flops.sum()), int(df.bytes.sum())) == (whole["flops"], whole["bytes accessed"])


_SHARDED = r"""
import json, jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(jax.devices(), ("d",))
x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("d")))
w = jax.device_put(jnp.ones((32, 8)), NamedSharding(mesh, P()))
print("RESULT" + json.dumps({"text": jax.jit(lambda x, w: jnp.tanh(x @ w).sum(0)).lower(x, w).as_text()}))
"""


@pytest.mark.subprocess
def test_a_sharded_module_gets_xlas_numbers_for_the_whole_program(tmp_path, monkeypatch):
    """A module sharded over a mesh of 4 (lowered where 4 devices exist; costed here, on one): XLA's conversion
    takes it, where jax.export's route gives nothing, and XLA counts the whole program as the analytic model does."""
    from tests.devices import run_on_cpu_devices

    script = tmp_path / "sharded.py"
    script.write_text(_SHARDED)
    text = run_on_cpu_devices(script, devices=4, timeout=300)["text"]
    assert "sdy.sharding" in text
    assert _by_export_route(monkeypatch, text) is None
    mc = module_cost(text)
    flops = 2 * 16 * 32 * 8 + 15 * 8  # the (16, 32) @ (32, 8) product, then the sum of its 16 rows
    assert (mc.flops, mc.transcendentals) == (flops, 16 * 8)
    assert xla_cost(text) == {"xla_flops": flops, "xla_transcendentals": 16 * 8, "xla_bytes": mc.bytes}


def test_each_distinct_type_is_read_once_per_module(monkeypatch):
    """An MLP's gradient names a few tensor types thousands of times over; the model reads each through MLIR's
    bindings once per walk, and the totals are those of reading every use (and XLA's)."""
    from workbench.analysis.cost import model, tensors

    def loss(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.sum(x * x)

    ws = [jnp.ones((16, 16)) * 0.1 for _ in range(8)]
    text = lowered(jax.grad(loss), ws, jnp.ones((4, 16)))
    reads = []
    real = tensors._read_tensor
    monkeypatch.setattr(tensors, "_read_tensor", lambda t: reads.append(str(t)) or real(t))
    model._walk.cache_clear()
    remembered = module_cost(text)
    distinct, total = len(set(reads)), len(reads)
    assert total == distinct  # each type read once
    assert distinct <= 12  # f32 scalars, 4x16, 16x16, 16x4 and a few more
    reads.clear()
    monkeypatch.setattr(model, "tensors_remembered", contextlib.nullcontext)
    model._walk.cache_clear()
    every = module_cost(text)
    assert len(reads) > 20 * distinct  # without the memory, each use is read again
    assert remembered == every
    xla = xla_cost(text)
    assert (remembered.flops, remembered.transcendentals) == (xla["xla_flops"], xla["xla_transcendentals"])
    model._walk.cache_clear()
