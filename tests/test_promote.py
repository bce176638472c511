"""ir.promote: a module's floating-point arithmetic promoted to float64 (the numeric check's reference),
and the narrowest floating type each result was computed through."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workbench.ir import promote
from workbench.ir.promote import computed_in, promote_to_f64
from workbench.pipeline.exported import exported_for_text


def lowered_text(fn, *args) -> str:
    return jax.jit(fn).lower(*args).as_text()


def run_text(text: str, *args):
    return jax.jit(exported_for_text(text).call)(*args)


def test_a_float32_program_computes_in_float64_and_keeps_its_signature():
    def f(x):
        return jnp.sum(x * 0.1) + 1e-8

    x = np.full(1000, 0.3, np.float32)
    text = lowered_text(f, x)
    p = promote_to_f64(text)
    assert p.ok and not p.refused
    head = next(line for line in p.text.splitlines() if "func.func public @main" in line)
    assert "tensor<1000xf32>" in head and "-> (tensor<f32>" in head  # called as the original is
    body = p.text[p.text.index(head) + len(head):]
    # f32 only where it must be: the literal constants, and the conversions at @main's boundary
    narrow = [line.strip() for line in body.splitlines() if "f32" in line]
    assert narrow and all(re.match(r"(%\w+ = stablehlo\.(constant|convert)|return) ", line) for line in narrow), narrow
    assert "stablehlo.multiply" in body and re.search(r"stablehlo\.multiply .*f64", body)
    got = float(run_text(p.text, x))
    exact = float(np.float32(np.sum(np.float64(x) * np.float64(np.float32(0.1))) + np.float64(np.float32(1e-8))))
    assert got == exact  # the float64 result, rounded once to float32
    assert float(run_text(text, x)) != exact  # the float32 program rounds 1000 times


def test_random_bits_stay_bits_and_draw_the_same_numbers():
    """JAX builds uniform floats from integer bits with bitcast_convert: the bitcast stays float32 and
    is widened after, so the promoted module draws exactly the numbers the program draws."""
    def draw(key):
        return jax.random.uniform(key, (64,))

    key = jax.random.PRNGKey(7)
    text = lowered_text(draw, key)
    p = promote_to_f64(text)
    assert p.ok
    assert re.search(r"stablehlo\.bitcast_convert .*-> tensor<64xf32>", p.text)
    np.testing.assert_array_equal(np.asarray(run_text(p.text, key)), np.asarray(run_text(text, key)))


def test_a_float_read_as_bits_is_narrowed_before_the_bitcast():
    def bits(x):
        return jax.lax.bitcast_convert_type(x * 3.0, jnp.int32)

    x = jnp.linspace(-2.0, 2.0, 16, dtype=jnp.float32)
    text = lowered_text(bits, x)
    p = promote_to_f64(text)
    assert p.ok
    narrowed = re.search(r"(%\w+) = stablehlo\.convert %\w+ : \(tensor<16xf64>\) -> tensor<16xf32>", p.text)
    assert narrowed and f"stablehlo.bitcast_convert {narrowed.group(1)} : (tensor<16xf32>) -> tensor<16xi32>" in p.text
    np.testing.assert_array_equal(np.asarray(run_text(p.text, x)), np.asarray(run_text(text, x)))


def test_bfloat16_and_branches_and_loops_promote():
    def f(p, w, xs):
        def body(h, x):
            h = jnp.tanh(h @ w.astype(jnp.bfloat16) + x.astype(jnp.bfloat16))
            return h, h.astype(jnp.float32).sum()

        h, ys = jax.lax.scan(body, jnp.zeros(8, jnp.bfloat16), xs)
        return jax.lax.cond(p > 0, lambda y: y * 2.0, lambda y: y - 1.0, ys)

    args = (jnp.float32(1.0), jax.random.normal(jax.random.PRNGKey(0), (8, 8)) / 3,
            jax.random.normal(jax.random.PRNGKey(1), (5, 8)))
    text = lowered_text(f, *args)
    p = promote_to_f64(text)
    assert p.ok, p.refused
    assert "bf16" not in re.sub(r".*stablehlo\.(constant|convert).*", "", p.text)
    wide = np.asarray(run_text(p.text, *args))
    narrow = np.asarray(run_text(text, *args))
    assert wide.dtype == np.float32 and not np.array_equal(wide, narrow)
    assert np.max(np.abs(wide - narrow)) < 0.05 * np.max(np.abs(wide))  # bfloat16 rounding, not another program


@pytest.mark.parametrize("fn, args, why", [
    (lambda x: jax.pure_callback(lambda a: np.cos(a), jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2,
     (jnp.ones(3),), "calls back into Python (custom_call @xla_ffi_python_cpu_callback"),
    (lambda a, b: jnp.linalg.solve(a, b), (jnp.eye(3) * 2, jnp.ones(3)), "custom_call @lapack_sgetrf_ffi"),
    (lambda a: jax.lax.rng_uniform(a, a + 1.0, (4,)), (jnp.float32(0),), "stablehlo.rng"),
    (lambda n: jnp.arange(4) * n, (jnp.int32(3),), "float64 throughout (or in no floating type)"),
])
def test_what_cannot_be_promoted_faithfully_is_refused_with_a_reason(fn, args, why):
    p = promote_to_f64(lowered_text(fn, *args))
    assert not p.ok and not p.text and why in p.refused


def test_a_module_that_does_not_parse_is_refused():
    p = promote_to_f64("func.func @main(%x: tensor<f32>) -> tensor<f32> { nonsense }")
    assert not p.ok and "cannot parse" in p.refused


def test_computed_in_follows_each_result_back_to_its_narrowest_rounding():
    def f(x, w):
        low = (x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)).astype(jnp.float32)
        return jnp.tanh(x @ w), low * 2.0, x, x.astype(jnp.bfloat16).astype(jnp.float32)

    x, w = jnp.ones((4, 8)), jnp.ones((8, 2))
    # an argument passed through rounds nothing; narrowing it to bfloat16 rounds
    assert computed_in(lowered_text(f, x, w)) == ("float32", "bfloat16", None, "bfloat16")
    # so does rounding to bfloat16's mantissa inside a float32 value
    rounded = lowered_text(lambda x: jax.lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7), x)
    assert computed_in(rounded) == ("bfloat16",)


def test_computed_in_visits_each_op_once_through_shared_callees(monkeypatch):
    """A chain of 30 functions, each calling the one below twice, would be 2^30 visits if callees were
    not read once: the reader visits each op once."""
    lines = ["func.func private @f0(%a: tensor<f32>) -> tensor<f32> {",
             "  %0 = stablehlo.convert %a : (tensor<f32>) -> tensor<bf16>",
             "  %1 = stablehlo.convert %0 : (tensor<bf16>) -> tensor<f32>", "  return %1 : tensor<f32>", "}"]
    for k in range(1, 31):
        lines += [f"func.func private @f{k}(%a: tensor<f32>) -> tensor<f32> {{",
                  f"  %0 = func.call @f{k - 1}(%a) : (tensor<f32>) -> tensor<f32>",
                  f"  %1 = func.call @f{k - 1}(%0) : (tensor<f32>) -> tensor<f32>", "  return %1 : tensor<f32>", "}"]
    lines += ["func.func @main(%a: tensor<f32>) -> (tensor<f32>, tensor<f32>) {",
              "  %0 = func.call @f30(%a) : (tensor<f32>) -> tensor<f32>", "  %1 = stablehlo.add %a, %a : tensor<f32>",
              "  return %0, %1 : tensor<f32>, tensor<f32>", "}"]
    visits = []
    original = promote._Reader.op
    monkeypatch.setattr(promote._Reader, "op", lambda self, op: visits.append(1) or original(self, op))
    assert computed_in("\n".join(lines)) == ("bfloat16", "float32")
    assert len(visits) == 3 + 30 * 3 + 3  # every op of every function, once
