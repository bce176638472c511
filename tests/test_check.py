"""The numeric check tells a miscompile from rounding on real programs: stages are measured against
the as-lowered module promoted to float64 (or the traced function evaluated in float64), next to the
as-lowered program's own error, at a tolerance that follows the narrowest type the program computes
in; where no wider evaluation exists, against the program's own noise (inputs moved by one ulp)."""
import dataclasses
import os
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.run.execute import compare_outputs

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def edited(stage, old: str, new: str):
    """``stage`` with one constant of its text changed: a planted miscompile run through ``ex.run``."""
    text = stage.text
    assert text.count(old) == 1, (old, text.count(old))
    broken = text.replace(old, new)
    return dataclasses.replace(stage, name=f"{stage.name} edited", text=broken, text_with_locations=broken)


# ---- real programs: no false alarm, a planted miscompile fails ---------------------------------------


def nnx_adamw_step():
    """A Flax NNX attention block stepped with optax.adamw, jitted as a pure function of its state.

    The key projection's bias cannot change the loss (softmax ignores a constant shift of its
    logits), so its gradient is zero up to float32 rounding, and Adam's first step turns that noise
    into an update of the size of the learning rate."""
    from flax import nnx
    import optax

    class Block(nnx.Module):
        def __init__(self, d, rngs):
            self.ln = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=d, qkv_features=d, decode=False, rngs=rngs)
            self.mlp = nnx.Linear(d, d, rngs=rngs)

        def __call__(self, x):
            h = x + self.attn(self.ln(x))
            return h + jax.nn.gelu(self.mlp(h))

    graphdef, params = nnx.split(Block(16, nnx.Rngs(0)), nnx.Param)
    tx = optax.adamw(1e-3)

    def train_step(params, opt_state, x, y):
        def loss(p):
            return jnp.mean((nnx.merge(graphdef, p)(x) - y) ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    kx, ky = jax.random.split(jax.random.PRNGKey(1))
    return train_step, (params, tx.init(params), jax.random.normal(kx, (2, 8, 16)), jax.random.normal(ky, (2, 8, 16)))


def bf16_scan():
    """A recurrence computed in bfloat16 whose outputs are float32."""
    def rnn(w, xs):
        w16 = w.astype(jnp.bfloat16)

        def body(h, x):
            h = jnp.tanh(h @ w16 + x.astype(jnp.bfloat16)) * jnp.bfloat16(0.5) + h * jnp.bfloat16(0.5)
            return h, (h.astype(jnp.float32) * 2.0).sum()

        h, ys = jax.lax.scan(body, jnp.zeros(32, jnp.bfloat16), xs)
        return h.astype(jnp.float32), ys

    return rnn, (jax.random.normal(jax.random.PRNGKey(0), (32, 32)) / 6, jax.random.normal(jax.random.PRNGKey(1), (10, 32)))


def equinox_mlp():
    """An Equinox MLP whose parameters and inputs are float32 by explicit dtype."""
    import equinox as eqx

    mlp = eqx.nn.MLP(8, 4, 32, 2, key=jax.random.PRNGKey(0), dtype=jnp.float32)
    params, static = eqx.partition(mlp, eqx.is_array)

    def forward(params, x):
        return jax.vmap(eqx.combine(params, static))(x.astype(jnp.float32))

    return forward, (params, jax.random.normal(jax.random.PRNGKey(1), (16, 8)))


def noisy_attention_scores():
    """Draws random numbers inside: jax.random.normal on a key argument."""
    def scores(key, x):
        return jnp.tanh(x @ x.T / 4.0 + jax.random.normal(key, (x.shape[0], x.shape[0]))).sum(0)

    return scores, (jax.random.PRNGKey(3), jax.random.normal(jax.random.PRNGKey(4), (8, 16)))


def branchy():
    """lax.cond whose branches compute in float32 by explicit dtype."""
    def pick(p, x):
        return jax.lax.cond(p > 0, lambda x: jnp.sin(x) * 2.0,
                            lambda x: jnp.cos(x).astype(jnp.float32) + 1.0, x)

    return pick, (jnp.float32(1.0), jnp.linspace(0, 1, 16, dtype=jnp.float32))


# program: (a constant of its last MLIR stage, the same constant changed, the outputs that change)
PROGRAMS = {
    "nnx_adamw_step": (nnx_adamw_step, "dense<-1.000000e-03> : tensor<16x16xf32>",  # the MLP kernel's learning rate
                       "dense<-1.100000e-03> : tensor<16x16xf32>", {"[0]['mlp']['kernel'].value"}),
    "bf16_scan": (bf16_scan, "dense<2.000000e+00> : tensor<1xf32>", "dense<2.500000e+00> : tensor<1xf32>", {"[1]"}),
    "equinox_mlp": (equinox_mlp, "dense<0.000000e+00> : tensor<16x32xf32>",  # relu's zero
                    "dense<-1.000000e-01> : tensor<16x32xf32>", {"output"}),
    "noisy_attention_scores": (noisy_attention_scores, "dense<1.41421354>",  # sqrt(2), in the normal sampler
                               "dense<1.500000e+00>", {"output"}),
    "branchy": (branchy, "dense<2.000000e+00> : tensor<16xf32>", "dense<2.500000e+00> : tensor<16xf32>", {"output"}),
}


@functools.cache
def explored(name: str):
    fn, args = PROGRAMS[name][0]()
    return wb.explore(fn, *args)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_real_program_passes_on_every_changed_stage_against_its_promoted_module(name):
    ex = explored(name)
    changed = [s for s in ex.changed() if s.group == "mlir"]
    assert changed
    checks = {s.name: ex.run(s.name, repeat=1).check for s in changed}
    alarms = {stage: check for stage, check in checks.items() if not check.passed}
    assert not alarms, "\n".join(f"{stage}:\n{check.table().to_string()}" for stage, check in alarms.items())
    for check in checks.values():
        assert check.kind == "float64" and check.source == "promoted" and not check.why_not_promoted, check.note
        assert check.reference == "stablehlo promoted to float64" and "promoted" in check.tolerance_from


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_constant_changed_in_a_real_program_fails(name):
    ex, (_, old, new, changed) = explored(name), PROGRAMS[name]
    check = ex.run(edited(ex.default_run_stage(), old, new), repeat=1).check
    assert check.source == "promoted" and not check.passed
    assert {leaf.path for leaf in check.leaves if not leaf.passed} == changed, check.table().to_string()


def test_the_nnx_key_bias_update_is_rounding_noise_and_passes():
    # on the CPU: the float32 rounding this test is about is the CPU's (a TPU rounds the step otherwise, and no
    # stage there moved the bias past the per-dtype rule: measured on the TPU machine)
    fn, args = PROGRAMS["nnx_adamw_step"][0]()
    ex = wb.explore(fn, *args, device="cpu")
    lowered = ex.run("stablehlo", repeat=1).outputs
    noisy = 0
    for s in (s for s in ex.changed() if s.group == "mlir"):
        r = ex.run(s.name, repeat=1)
        leaf = next(leaf for leaf in r.check.leaves if leaf.path == "[0]['attn']['key']['bias'].value")
        # the float32 program moves a bias whose true update is about zero by a good part of lr
        assert leaf.lowered_abs > 1e-5 and leaf.passed and leaf.rule == "float64"
        noisy += not compare_outputs(r.outputs, lowered).passed
    assert noisy, "no stage differs from the as-lowered program by more than the per-dtype rule allows"


def test_the_noise_rule_alone_tells_the_nnx_steps_rounding_from_its_planted_miscompile():
    """Where no float64 evaluation exists, the one-ulp noise is the yardstick: on the NNX step (whose
    key-bias update is pure rounding) it passes every changed stage and fails the learning rate 10% off."""
    from workbench.analysis.run.check import Reference, check_outputs
    from workbench.analysis.run.reference import nudged_outputs
    from workbench.ir.promote import computed_in

    ex = explored("nnx_adamw_step")
    ref = ex.reference_stage()
    nudged, why_not = nudged_outputs(ex, ref, "cpu:0", None)
    assert len(nudged) == 3 and not why_not
    noise_only = Reference("stablehlo", ex.run(ref.name, repeat=1).outputs, nudged=nudged,
                           computed=computed_in(ref.text_with_locations))
    for s in (s for s in ex.changed() if s.group == "mlir"):
        check = check_outputs(ex.run(s.name, repeat=1, check=False).outputs, noise_only)
        assert check.passed and {leaf.rule for leaf in check.leaves} == {"noise", "exact"}, check.table().to_string()
    _, old, new, changed = PROGRAMS["nnx_adamw_step"]
    broken = check_outputs(ex.run(edited(ex.default_run_stage(), old, new), repeat=1, check=False).outputs, noise_only)
    assert {leaf.path for leaf in broken.leaves if not leaf.passed} == changed


def test_a_bf16_program_is_held_to_bf16_precision_not_its_float32_outputs():
    ex = explored("bf16_scan")
    check = ex.run(repeat=1).check
    assert [leaf.dtype for leaf in check.leaves] == ["float32", "float32"]
    assert [leaf.computed for leaf in check.leaves] == ["bfloat16", "bfloat16"]
    assert "bfloat16" in check.tolerance_from


def test_a_nan_fed_to_a_no_nan_fold_fails():
    """no_nan lets Enzyme fold x * 0 to 0; fed an inf or a NaN, the program's NaN disappears."""
    def f(x, y):
        return jnp.sin(y) + x * 0.0

    x = jnp.array([1.0, jnp.inf, jnp.nan, 2.0])
    y = jnp.linspace(0.0, 1.0, 4)
    ex = wb.explore(f, x, y, no_nan=True)
    assert "stablehlo.multiply" not in ex.default_run_stage().text  # the fold was applied
    r = ex.run(repeat=1)
    assert r.check.source == "promoted" and not r.check.passed
    assert np.isinf(r.check.max_abs) and not np.isnan(np.asarray(r.outputs)[1:3]).any()
    assert wb.explore(f, x, y).run(repeat=1).check.passed


def test_a_lapack_call_is_checked_against_the_function_in_float64_and_says_why_not_promoted():
    def solve(a, b):
        return jnp.linalg.solve(a + 8 * jnp.eye(8), jnp.tanh(b))

    # on the CPU, whose solve is LAPACK's (a TPU's is its own LuDecomposition custom call)
    ex = wb.explore(solve, jax.random.normal(jax.random.PRNGKey(0), (8, 8)), jnp.ones((8, 3)), device="cpu")
    check = ex.run(repeat=1).check
    assert check.passed and check.kind == "float64" and check.source == "traced" and check.note == ""
    assert check.reference == "solve in float64" and "custom_call @lapack_sgetrf_ffi" in check.why_not_promoted


def test_without_a_wider_evaluation_the_tolerance_is_the_programs_own_noise():
    """LAPACK's sgetrf is compiled for float32 (no promotion), and the function pins float32 (no
    float64 trace): each stage is held to what moving the inputs by one ulp does to the program."""
    def solve(a, b):
        return jnp.linalg.solve(a.astype(jnp.float32) + 8 * jnp.eye(8, dtype=jnp.float32), jnp.tanh(b) * 3.0)

    a = jax.random.normal(jax.random.PRNGKey(0), (8, 8))
    b = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
    ex = wb.explore(solve, a, b, device="cpu")  # LAPACK's sgetrf: the CPU's
    r = ex.run(repeat=1)
    check = r.check
    assert check.kind == "stage" and check.source == "as-lowered" and check.passed, check
    assert "lapack" in check.note and "float32" in check.note and "lapack" in check.why_not_promoted
    assert [leaf.rule for leaf in check.leaves] == ["noise"] and "one ulp" in check.tolerance_from
    broken = ex.run(edited(ex.default_run_stage(), "dense<3.000000e+00>", "dense<3.010000e+00>"), repeat=1)
    assert not broken.check.passed and broken.check.leaves[0].rule == "noise"


def layer_norm(x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps)


def near_constant_loss(params, x):
    """The mean square of layer-normalized activations is 1 - eps/var for every input: its true
    gradient is almost zero, so a float32 gradient is mostly rounding noise."""
    h = x
    for w, b in params:
        h = jax.nn.relu(h @ w + b)
    return jnp.mean(layer_norm(h) ** 2)


def grad_fn(params, x):
    return jax.grad(near_constant_loss)(params, x)


@pytest.fixture(scope="module")
def ill_conditioned():
    k = jax.random.split(jax.random.PRNGKey(0), 8)
    params = [(jax.random.normal(k[i], (64, 64)) / 8, jax.random.normal(k[i + 4], (64,)) * 0.1) for i in range(3)]
    x = jax.random.normal(k[3], (32, 64))
    # on the CPU: how ill-conditioned the float32 program is, is the CPU's rounding (on a TPU no stage crossed
    # the per-dtype rule, so the rule this tests was not reached: measured on the TPU machine)
    return wb.explore(grad_fn, params, x, device="cpu")


def test_a_near_constant_loss_gradient_passes_on_every_changed_stage(ill_conditioned):
    ex = ill_conditioned
    lowered = ex.run("stablehlo", repeat=1).outputs
    changed = [s for s in ex.changed() if s.group == "mlir"]
    assert changed
    noisy = 0
    for s in changed:
        r = ex.run(s.name, repeat=1)
        assert r.check.source == "promoted" and r.check.reference == "stablehlo promoted to float64"
        assert r.check.passed, (s.name, r.check)
        assert r.check.lowered_abs > 0  # the float32 program itself is off by rounding
        # the per-dtype rule against the float32 program is what cried wolf: it fails some stage here
        noisy += not compare_outputs(r.outputs, lowered).passed
    assert noisy, "the program is not ill-conditioned enough to test the rule"
    assert not wb.miscompiles()(ex)


def test_a_changed_constant_still_fails_against_the_float64_reference():
    def f(x, w):
        return jnp.tanh(x @ w) * 2.0

    x = jax.random.normal(jax.random.PRNGKey(1), (16, 32))
    w = jax.random.normal(jax.random.PRNGKey(2), (32, 8)) / 6
    ex = wb.explore(f, x, w, pipeline="none")
    text = ex["stablehlo"].text
    assert text.count("2.000000e+00") == 1
    broken = wb.explore_text(text.replace("2.000000e+00", "2.500000e+00"), pipeline="canonicalize")
    r = broken.run(args=(x, w), reference=ex, repeat=1)
    assert r.check.kind == "float64" and not r.check.passed
    leaf = r.check.leaves[0]
    # a quarter of the output, not rounding: 1000x the tolerance on a CPU; on a TPU, whose float32 matmul is one
    # bfloat16 pass, the as-lowered error itself is ~1e-2 and the change still 12x the tolerance
    assert leaf.max_abs > 10 * leaf.tolerance and leaf.max_abs > 10 * leaf.lowered_abs
    same = wb.explore_text(text, pipeline="canonicalize").run(args=(x, w), reference=ex, repeat=1)
    assert same.check.passed and same.check.max_abs == pytest.approx(same.check.lowered_abs)


def test_text_random_numbers_and_pinned_dtypes_are_checked_against_a_promoted_module():
    """The cases that had no float64 reference before the promotion: a module given as text, a
    function that draws random numbers, a function that pins float32."""
    def f(x):
        return jnp.sin(x) * 3.0

    x = jnp.linspace(0.0, 1.0, 8)
    text = wb.explore(f, x, pipeline="none")["stablehlo"].text
    r = wb.explore_text(text, pipeline="canonicalize").run(repeat=1)
    assert r.check.passed and r.check.kind == "float64" and r.check.source == "promoted"
    assert r.check.reference == "input promoted to float64" and r.check.note == ""

    def noisy(key, x):
        return x + jax.random.normal(key, x.shape)

    r = wb.explore(noisy, jax.random.PRNGKey(0), x).run(repeat=1)
    assert r.check.passed and r.check.source == "promoted"

    def pinned(x):
        return jnp.sin(x.astype(jnp.float32)) * jnp.ones(8, jnp.float32)

    r = wb.explore(pinned, x).run(repeat=1)
    assert r.check.passed and r.check.source == "promoted"


def test_overflow_as_lowered_is_matched_not_excused():
    def f(x):
        return jnp.exp(x)

    x = jnp.array([1.0, 100.0], jnp.float32)  # exp(100) is inf in float32, finite in float64
    ex = wb.explore(f, x)
    r = ex.run(repeat=1)
    assert np.isinf(np.asarray(r.outputs)[1]) and r.check.kind == "float64" and r.check.passed


def test_a_nan_the_program_removes_is_a_miscompile_under_no_nan():
    """Reactant's no_nan lets patterns assume no NaNs; fed NaNs, the result changes, and bisect
    finds the pattern (an honest planted miscompile)."""
    def f(x):
        return jnp.where(jnp.isnan(x), 0.0, x) * 2.0

    x = jnp.array([1.0, jnp.nan, 3.0])
    ex = wb.explore(f, x, no_nan=True)
    r = ex.run()
    assert not r.check.passed and np.isnan(np.asarray(r.outputs)[1])
    assert wb.explore(f, x).run().check.passed
    b = ex.bisect(wb.miscompiles("cpu:0"))
    assert b.patterns and all(p.startswith("no_nan") for p in b.patterns)


def test_references_are_keyed_by_value_not_by_object_id():
    def f(x):
        return x * 2.0

    x = np.ones(4, np.float32)
    args = (x,)
    ex = wb.explore(f, x, pipeline="canonicalize")
    assert ex.run(args=args, repeat=1).check.passed
    x[:] = 5.0  # same tuple object, other values: a reference cached by id would be stale
    r = ex.run(args=args, repeat=1)
    assert r.check.passed and np.asarray(r.outputs)[0] == 10.0


def test_float64_outputs_have_no_wider_reference_and_say_so(tmp_path):
    import subprocess
    import sys

    code = ("import jax\njax.config.update('jax_enable_x64', True)\n"
            "import jax.numpy as jnp, workbench as wb\n"
            "ex = wb.explore(lambda x: jnp.tanh(x @ x.T).sum(0), jnp.ones((8, 8), jnp.float64))\n"
            "c = ex.run(repeat=1).check\nprint(c.kind, c.passed, c.leaves[0].dtype, c.leaves[0].rule, '|', c.note)\n")
    # on the CPU: the rule holds there everywhere (a TPU computes float64 only in part, and its chip is this
    # process's: a child would not get it)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("stage True float64 noise |") and "float64 throughout" in r.stdout


def test_a_stage_whose_outputs_are_all_nan_fails_without_numpy_warnings(tmp_path):
    """A stage that turns every output into NaN fails with an infinite error, against a saved
    exploration's promoted module and at the per-dtype rule alike, and numpy says nothing on the way."""
    import warnings

    def f(x):
        return jnp.where(jnp.isnan(x), 0.0, x).sum(0, keepdims=True) * 2.0

    x = jnp.array([[1.0, jnp.nan, 3.0]]).T
    saved = wb.load(wb.explore(f, x, no_nan=True).save(str(tmp_path / "nan.hlox"), arrays=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = saved.run()
        per_dtype = compare_outputs(r.outputs, saved.run("stablehlo").outputs)
    for check in (r.check, per_dtype):
        assert not check.passed and np.isinf(check.leaves[0].max_abs) and np.isinf(check.leaves[0].max_rel)
    assert r.check.source == "promoted"
