"""The numeric check tells a miscompile from rounding: stages are measured against the traced
function evaluated in float64, next to the as-lowered program's own error."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.execute import compare_outputs

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


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
    return wb.explore(grad_fn, params, x)


def test_a_near_constant_loss_gradient_passes_on_every_changed_stage(ill_conditioned):
    ex = ill_conditioned
    lowered = ex.run("stablehlo", repeat=1).outputs
    changed = [s for s in ex.changed() if s.group == "mlir"]
    assert changed
    noisy = 0
    for s in changed:
        r = ex.run(s.name, repeat=1)
        assert r.check.kind == "float64" and r.check.reference == "grad_fn in float64"
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
    assert leaf.max_abs > 1000 * leaf.tolerance  # a quarter of the output, not rounding
    same = wb.explore_text(text, pipeline="canonicalize").run(args=(x, w), reference=ex, repeat=1)
    assert same.check.passed and same.check.max_abs == pytest.approx(same.check.lowered_abs)


def test_without_a_float64_reference_the_check_says_why():
    def f(x):
        return jnp.sin(x) * 3.0

    x = jnp.linspace(0.0, 1.0, 8)
    text = wb.explore(f, x, pipeline="none")["stablehlo"].text
    r = wb.explore_text(text, pipeline="canonicalize").run(repeat=1)
    assert r.check.kind == "stage" and r.check.reference == "input" and "given as text" in r.check.note

    def noisy(key, x):
        return x + jax.random.normal(key, x.shape)

    r = wb.explore(noisy, jax.random.PRNGKey(0), x).run(repeat=1)
    assert r.check.kind == "stage" and r.check.passed and "random numbers" in r.check.note

    def pinned(x):
        return jnp.sin(x.astype(jnp.float32)) * jnp.ones(8, jnp.float32)

    r = wb.explore(pinned, x).run(repeat=1)
    assert r.check.kind == "stage" and r.check.passed and "float32" in r.check.note


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
            "c = ex.run(repeat=1).check\nprint(c.kind, c.passed, c.leaves[0].dtype, '|', c.note)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("stage True float64 |") and "no wider dtype" in r.stdout


def test_a_stage_whose_outputs_are_all_nan_fails_without_numpy_warnings(tmp_path):
    """Checked against "stablehlo" (a loaded exploration has no float64 reference), a stage that turns
    every output into NaN fails with an infinite error, and numpy says nothing on the way."""
    import warnings

    def f(x):
        return jnp.where(jnp.isnan(x), 0.0, x).sum(0, keepdims=True) * 2.0

    x = jnp.array([[1.0, jnp.nan, 3.0]]).T
    saved = wb.load(wb.explore(f, x, no_nan=True).save(str(tmp_path / "nan.hlox"), arrays=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check = saved.run().check
    assert check.kind == "stage" and not check.passed
    assert np.isinf(check.leaves[0].max_abs) and np.isinf(check.leaves[0].max_rel)
