"""Whatever jit the user applied is what the workbench explores, runs and checks: host callbacks,
donated arguments, Flax NNX's and Equinox's own jits, Equinox modules as arguments."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.errors import WorkbenchError


def _counted_loop(x):
    def body(i, c):
        jax.debug.print("step {i}: {s}", i=i, s=c.sum())
        return c * 1.5

    return jax.lax.fori_loop(0, 3, body, x)


def test_debug_print_in_a_loop_explores_every_stage_runs_fires_and_checks(capfd):
    ex = wb.explore(_counted_loop, jnp.ones(3))
    assert ex.error is None and ex.pipeline_error is None
    assert "xla_ffi_python_cpu_callback" in ex["stablehlo"].text
    assert {"stablehlo", "xla:optimized"} <= {s.name for s in ex.stages}
    assert all(not s.error for s in ex.stages)
    capfd.readouterr()
    r = ex.run(repeat=1)
    printed = capfd.readouterr().out
    assert "step 2: 6.75" in printed  # the callback fired, with the loop's values
    np.testing.assert_allclose(np.asarray(r.outputs), np.full(3, 1.5 ** 3), rtol=1e-6)
    assert r.check.passed


def test_pure_and_io_callbacks_run_on_the_chosen_device_and_processes_refuse_them_by_name():
    from jax.experimental import io_callback

    seen = []

    def f(x):
        y = jax.pure_callback(lambda a: np.sin(a), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        io_callback(lambda a: seen.append(np.asarray(a).copy()), None, y, ordered=True)
        return y * 2.0

    ex = wb.explore(f, jnp.arange(4.0))
    r = ex.run(device="cpu:0", repeat=1)
    np.testing.assert_allclose(np.asarray(r.outputs), 2 * np.sin(np.arange(4.0)), rtol=1e-6)
    assert seen and np.allclose(seen[-1], np.sin(np.arange(4.0)))
    with pytest.raises(WorkbenchError, match=r"processes=N.*host callback"):
        ex.run(processes=2)


def test_eqx_error_if_explores_and_runs():
    import equinox as eqx

    def f(x):
        x = eqx.error_if(x, x < 0, "negative input")
        return jnp.sqrt(x)

    ex = wb.explore(f, jnp.arange(1.0, 5.0))
    assert ex.error is None
    assert ex.run(repeat=1).check.passed


def test_donated_argument_is_kept_in_every_stage_and_in_memory_analysis_and_the_users_array_lives():
    def step(p, g):
        return p - 0.1 * g

    p, g = jnp.ones(128), jnp.ones(128)
    ex = wb.explore(jax.jit(step, donate_argnums=(0,)), p, g)
    modules = [s for s in ex.stages if s.is_module]
    assert modules and all("tf.aliasing_output" in s.text for s in modules)
    cost = ex.cost().set_index("stage")
    assert cost.loc["xla:optimized", "alias_bytes"] == 512  # 128 float32 reused for the output
    r = ex.run(repeat=3)
    assert not p.is_deleted()
    np.testing.assert_allclose(np.asarray(r.outputs), np.full(128, 0.9), rtol=1e-6)


def _nnx_step():
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(8, 16, rngs=rngs)
            self.l2 = nnx.Linear(16, 4, rngs=rngs)

        def __call__(self, x):
            return self.l2(jax.nn.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, batch):
        def loss(m):
            return ((m(batch) - 1.0) ** 2).mean()

        value, grads = nnx.value_and_grad(loss)(model)
        optimizer.update(model, grads)
        return value

    return train_step, model, optimizer, jnp.linspace(-1.0, 1.0, 16).reshape(2, 8)


def test_nnx_jit_explores_the_program_it_compiles_and_leaves_the_model_alone():
    train_step, model, optimizer, batch = _nnx_step()
    own = train_step.lower(model, optimizer, batch).as_text()
    kernel = np.asarray(model.l1.kernel[...]).copy()
    ex = wb.explore(train_step, model, optimizer, batch)
    text = ex["stablehlo"].text
    # the backward pass and Adam's update are there, as in nnx.jit's own lowering
    assert text.count("stablehlo.dot_general") == own.count("stablehlo.dot_general") == 5  # 2 forward, 3 backward
    assert "stablehlo.sqrt" in text and "stablehlo.sqrt" in own
    r = ex.run(repeat=2)
    assert r.check.passed
    np.testing.assert_array_equal(np.asarray(model.l1.kernel[...]), kernel)  # explore and run changed nothing
    # what the compiled program returns includes the updated parameters: the real step ran
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(r.program_outputs)]
    assert any(x.shape == kernel.shape and not np.array_equal(x, kernel) for x in leaves)


def test_the_copies_a_library_jit_is_traced_on_share_the_arrays_and_keep_nnx_references():
    """Each trace, lowering and stand-in call of a library's jit gets its own copy of the arguments: new
    Python objects (nnx.jit writes its Variables back), the same immutable arrays (no copy kernel runs),
    and the references between nnx objects as they were (one module passed twice is one module)."""
    from flax import nnx

    from workbench.pipeline.trace import fresh_copy

    _, model, optimizer, batch = _nnx_step()
    copied = fresh_copy((model, optimizer, batch, model, {"m": model}))
    new_model, new_optimizer, new_batch, again, holder = copied
    assert new_model is not model and new_optimizer is not optimizer and again is new_model
    assert holder["m"] is new_model  # a reference inside another argument reaches the same copy
    leaves = lambda x: jax.tree_util.tree_leaves(nnx.state(x))  # noqa: E731
    assert all(a is b for a, b in zip(leaves(new_model), leaves(model), strict=True))
    assert all(a is b for a, b in zip(leaves(new_optimizer), leaves(optimizer), strict=True))
    assert all(a is b for a, b in zip(jax.tree_util.tree_leaves(new_batch), jax.tree_util.tree_leaves(batch)))
    new_model.l1.kernel[...] = new_model.l1.kernel[...] + 1  # what nnx.jit's write-back does to the copy
    assert not np.array_equal(np.asarray(model.l1.kernel[...]), np.asarray(new_model.l1.kernel[...]))


def test_eqx_filter_jit_and_an_equinox_module_as_an_argument():
    import equinox as eqx

    mlp = eqx.nn.MLP(4, 3, 8, 2, key=jax.random.PRNGKey(0))
    x = jnp.linspace(0.0, 1.0, 4)
    want = np.asarray(mlp(x))

    @eqx.filter_jit
    def forward(model, x):
        return model(x)

    def plain(model, x):
        return model(x)

    for fn in (forward, plain):
        ex = wb.explore(fn, mlp, x)
        assert ex.error is None
        assert ex["stablehlo"].text.count("stablehlo.dot_general") == 3
        r = ex.run(repeat=1)
        assert r.check.passed
        np.testing.assert_allclose(np.asarray(jax.tree_util.tree_leaves(r.outputs)[-1]), want, rtol=1e-5)


def test_eqx_filter_jits_jaxpr_is_the_program_its_inner_jit_lowers_traced_once():
    """Equinox's jit has no ``.trace``: the jaxpr is that of the trace its ``.lower`` made (the program, without a
    wrapping call equation), and the user's Python runs once for both."""
    import equinox as eqx

    calls = []
    mlp = eqx.nn.MLP(4, 3, 8, 2, key=jax.random.PRNGKey(1))

    @eqx.filter_jit
    def forward(model, x):
        calls.append(1)
        return model(x)

    ex = wb.explore(forward, mlp, jnp.linspace(0.0, 1.0, 4), pipeline="none")
    text = ex["jaxpr"].text
    assert len(calls) == 1 and text.count("dot_general") == 3 and "name=forward" not in text
    assert ex.spec.traced.seconds_jaxpr > 0 and ex.spec.traced.seconds_lower > 0
    assert ex.run(repeat=1).check.passed


class _LoweredAhead:
    """A library's jit that lowers ahead of time: its ``.lower`` hands back a ``jax.stages.Lowered`` made before."""

    def __init__(self, f, *args):
        self.jitted = jax.jit(f)
        self.made = self.jitted.lower(*args)

    def __call__(self, *args):
        return self.jitted(*args)

    def lower(self, *args):
        return self.made


def test_a_library_jit_that_lowers_no_trace_during_the_call_gets_the_jaxpr_of_its_call():
    def f(x):
        return jnp.cos(x) * 2.0

    ex = wb.explore(_LoweredAhead(f, jnp.ones(3)), jnp.ones(3), pipeline="none")
    assert "cos" in ex["jaxpr"].text and "name=f" in ex["jaxpr"].text  # its call, as one equation holding f
    assert "stablehlo.cosine" in ex["stablehlo"].text and ex["xla:optimized"].text


def test_an_argument_without_arrays_that_cannot_be_hashed_is_refused_with_the_reason():
    def f(x, options):
        return x * options["scale"]

    with pytest.raises(WorkbenchError, match="no array"):
        wb.explore(f, jnp.ones(3), {"scale": "big", "fn": [print]})


def test_a_module_with_callbacks_given_as_text_or_loaded_is_refused_to_run_and_its_reproducer_does_not_crash(tmp_path):
    import subprocess
    import sys

    ex = wb.explore(_counted_loop, jnp.ones(3))
    for other in (wb.explore_text(ex["stablehlo"].text), wb.load(ex.save(tmp_path / "loop.hlox"))):
        with pytest.raises(WorkbenchError, match="host callback"):
            other.run(repeat=1)
    folder = ex.reproducer(tmp_path / "repro")
    done = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr  # it died of a segmentation fault before
    assert "host callback" in done.stdout


def test_a_library_jits_run_returns_what_the_function_returns_and_checks_all_the_program_returns():
    train_step, model, optimizer, batch = _nnx_step()
    want = float(train_step(*__import__("copy").deepcopy((model, optimizer, batch))))
    ex = wb.explore(train_step, model, optimizer, batch)
    r = ex.run(repeat=1)
    assert np.ndim(r.outputs) == 0 and float(r.outputs) == pytest.approx(want, rel=1e-5)  # the loss, as nnx.jit returns it
    n_program = len(jax.tree_util.tree_leaves(r.program_outputs))
    assert n_program > 10 and len(r.check.leaves) == n_program  # the new parameters and Adam's state are checked


def test_a_step_that_returns_its_next_prng_key_runs_checks_and_saves_with_its_arrays(tmp_path):
    def step(x, key):
        key, sub = jax.random.split(key)
        return x * jax.random.normal(sub, x.shape), key

    ex = wb.explore(step, jnp.ones(4), jax.random.key(0))
    r = ex.run(repeat=1)
    assert r.check.passed
    assert jax.dtypes.issubdtype(r.outputs[1].dtype, jax.dtypes.prng_key)  # the key, as the function returns it
    loaded = wb.load(ex.save(tmp_path / "step.hlox", arrays=True))
    assert loaded.runs and loaded.runs[0].check.passed


def test_an_eqx_filter_jit_step_that_returns_the_updated_module_explores_and_runs():
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(3, 1, 16, 2, key=jax.random.PRNGKey(1))
    opt = optax.adam(1e-2)
    state = opt.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, state, x, y):
        loss, grads = eqx.filter_value_and_grad(lambda m: ((jax.vmap(m)(x) - y) ** 2).mean())(model)
        updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, loss

    ex = wb.explore(step, model, state, jnp.ones((4, 3)), jnp.zeros((4, 1)))  # its jaxpr failed: a module out
    assert ex.error is None
    r = ex.run(repeat=1)
    assert r.check.passed and isinstance(r.outputs[0], eqx.nn.MLP)
