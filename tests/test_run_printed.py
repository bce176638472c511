"""What a run prints: a program's host callbacks (``jax.debug.print``, a ``print`` in a ``pure_callback``) and
the warnings raised meanwhile are printed once per ``ex.run`` the user asked for -- not once per timing
repeat, nor by the reference's and the float64 evaluation's calls --, kept as ``RunResult.printed``, saved
with the run, and shown by the panel's Run tab under the run, beside the check leaf by leaf (every leaf
of the program's outputs: through ``nnx.jit`` and ``eqx.filter_jit`` more than the user's), a failing
leaf named."""
import os
import re
import sys
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import workbench as wb
from workbench.analysis.run.printed import captured
from workbench.errors import WorkbenchError
from workbench.artifacts.viewmodel import PRINTED_CHARS, run_entry
from workbench.views.widgets import Panel


def loud(x):
    jax.debug.print("the sum is {s}", s=x.sum())
    return jnp.sin(x) * 2.0


def leaf_rows(run: dict) -> dict[str, bool]:
    """A run's check as the Run tab draws it (the view model's run, ``run_entry``): leaf path -> passed (drawn as
    [data-hwb="leaf"] with data-path and data-passed)."""
    return {leaf["path"]: leaf["passed"] for leaf in run["check"]["leaves"]}


def test_a_run_prints_its_call_once_not_per_repeat(capfd):
    ex = wb.explore(loud, jnp.ones(4))  # the last MLIR stage runs: the reference and float64 evaluation run too
    assert ex.default_run_stage().name != "stablehlo"
    capfd.readouterr()
    r = ex.run(repeat=20)
    out, err = capfd.readouterr()
    assert out.count("the sum is 4.0") == 1 and "the sum is" not in err
    assert r.printed == ("the sum is 4.0\n",) and r.check.passed
    ex.run(repeat=3)  # each call the user asks for prints once
    assert capfd.readouterr().out.count("the sum is 4.0") == 1


def test_print_and_warnings_inside_a_callback_are_caught_from_xla_threads(capsys):
    def host(x):
        print("host saw", int(x.sum()))
        warnings.warn("a host warning")
        return x * 3

    def f(x):
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.0

    ex = wb.explore(f, jnp.ones(2), pipeline="none")
    capsys.readouterr()
    r = ex.run(repeat=5)
    out = capsys.readouterr().out
    # the warning once, in whichever form the process's warnings.formatwarning writes it (the workbench's magics
    # install a shorter one: "hlo-workbench: warning: ...")
    assert out.count("host saw 2") == 1 and out.count("warning: a host warning") + out.count("Warning: a host warning") == 1
    assert "".join(r.printed) == out
    np.testing.assert_allclose(r.outputs, [4.0, 4.0])


def test_a_call_that_raises_still_prints_once_and_gives_the_streams_back(capfd):
    def host(x):
        print("about to fail")
        raise ValueError("the host refuses")

    def f(x):
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    ex = wb.explore(f, jnp.ones(2), pipeline="none")
    stdout, fds = sys.stdout, [os.fstat(fd).st_ino for fd in (1, 2)]
    capfd.readouterr()
    with pytest.raises(WorkbenchError, match="did not run"):
        ex.run(repeat=5)
    assert capfd.readouterr().out.count("about to fail") == 1
    assert sys.stdout is stdout and [os.fstat(fd).st_ino for fd in (1, 2)] == fds
    print("mine again")
    assert capfd.readouterr().out == "mine again\n"


def test_a_capture_inside_another_keeps_its_own_lines():
    outer, inner = [], []
    with captured(outer):
        print("outer before")
        with captured(inner):
            print("inner")
            os.write(1, b"inner fd\n")
        print("outer after")
    assert inner == ["inner\n", "inner fd\n"] and outer == ["outer before\n", "outer after\n"]


# -- a training step through a library's jit ---------------------------------------------------------------
class Net(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(4, 8, rngs=rngs)
        self.b = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.b(jax.nn.relu(self.a(x)))


@nnx.jit
def nnx_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
    jax.debug.print("nnx loss {l:.4f}", l=loss)
    optimizer.update(model, grads)
    return loss


LR = 0.125  # -1.250000e-01 in the module: the planted change edits it


@pytest.fixture(scope="module")
def nnx_ex():
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(LR), wrt=nnx.Param)
    return wb.explore(nnx_step, model, optimizer, jnp.ones((3, 4)), jnp.zeros((3, 2)), pipeline="none")


def test_the_run_tab_shows_the_printed_output_once_and_every_checked_leaf(nnx_ex, capfd):
    p = Panel(nnx_ex, background=False)
    try:
        capfd.readouterr()
        p.run(stage="stablehlo", device=nnx_ex.spec.device, repeat=20)
        assert p.last_error is None, p.last_error
        out = capfd.readouterr().out
        assert len(re.findall(r"nnx loss \d", out)) == 1
        r = p.ex.history[-1]
        assert len(r.printed) == 1 and r.printed[0].startswith("nnx loss ")
        shown = p.run_tab.data["runs"][-1]  # what the Run tab draws (the view model's run)
        assert len(re.findall(r"nnx loss \d", shown["printed"])) == 1 and not shown["printed_cut"]
        # the user's function returns the loss; the program also returns the model's and optimizer's state
        assert len(r.check.leaves) == 6 and len(jax.tree_util.tree_leaves(r.outputs)) == 1
        assert leaf_rows(shown) == {c.path: True for c in r.check.leaves}
        tolerances = [c.tolerance for c in r.check.leaves if c.tolerance > 0]
        assert tolerances and [l["tolerance"] for l in shown["check"]["leaves"]] == \
            pytest.approx([float(c.tolerance) for c in r.check.leaves])
        assert all(l["dtype"] and l["max_abs"] is not None for l in shown["check"]["leaves"])  # no blank check row
    finally:
        p.close()


def test_a_planted_learning_rate_names_the_failing_leaves(nnx_ex):
    st = nnx_ex.stage("stablehlo")
    text = st.text_with_locations or st.text
    assert text.count("-1.250000e-01") == 1
    planted = nnx_ex.with_text("stablehlo", text.replace("-1.250000e-01", "-5.000000e-01"))
    r = planted.run(repeat=2)
    assert not r.check.passed
    failed = {c.path for c in r.check.leaves if not c.passed}
    assert failed and all(p.startswith("[0][0]") for p in failed)  # the model's parameters, not the loss
    shown = run_entry(r)
    rows = leaf_rows(shown)
    assert {p for p, v in rows.items() if not v} == failed and rows["[2]"]
    assert shown["check"]["passed"] is False


def test_an_equinox_step_prints_once_and_checks_every_leaf(capfd):
    model = eqx.nn.MLP(3, 2, 8, 1, key=jax.random.PRNGKey(0))
    tx = optax.adam(1e-2)
    state = tx.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, state, x, y):
        loss, grads = eqx.filter_value_and_grad(lambda m: ((jax.vmap(m)(x) - y) ** 2).mean())(model)
        jax.debug.print("eqx loss {l:.4f}", l=loss)
        updates, state = tx.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, loss

    ex = wb.explore(step, model, state, jnp.ones((5, 3)), jnp.zeros((5, 2)), pipeline="none")
    capfd.readouterr()
    r = ex.run(repeat=20)
    assert len(re.findall(r"eqx loss \d", capfd.readouterr().out)) == 1 and len(r.printed) == 1
    assert r.check.passed and len(r.check.leaves) > 6
    assert leaf_rows(run_entry(r)) == {c.path: True for c in r.check.leaves}


def test_the_printed_output_is_saved_and_loaded_and_old_files_load_without_it(tmp_path):
    import json
    import zipfile

    ex = wb.explore(loud, jnp.ones(4), pipeline="none")
    ex.run(repeat=2)
    path = ex.save(tmp_path / "a.hlox")
    assert wb.load(path).history[0].printed == ("the sum is 4.0\n",)
    old = tmp_path / "old.hlox"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                for run in manifest["runs"]:
                    del run["printed"]
                data = json.dumps(manifest).encode()
            dst.writestr(info, data)
    assert wb.load(old).history[0].printed == ()


def test_the_run_tab_cuts_a_long_output_with_a_note():
    ex = wb.explore(loud, jnp.ones(4), pipeline="none")
    r = ex.run(repeat=1)
    import dataclasses

    long = dataclasses.replace(r, printed=tuple(f"<line {i}>\n" for i in range(2000)))
    shown = run_entry(long)  # as the Run tab gets it (drawn as text, "printed (the first part)")
    assert shown["printed"].startswith("<line 0>\n") and len(shown["printed"]) == PRINTED_CHARS
    assert shown["printed_cut"] and "".join(long.printed).startswith(shown["printed"])


def test_a_run_in_the_background_leaves_what_other_threads_print_alone(capfd):
    """A panel runs in the background while the user's next cell prints: a program that cannot print (no host
    callback) runs without a capture, which would take the whole process's output, the cell's too."""
    import threading

    ex = wb.explore(lambda x: jnp.sin(x) @ x.T, jnp.ones((64, 64)))
    ex.run(repeat=1)  # compiled once: the background run below is mostly calls
    capfd.readouterr()
    started, done = threading.Event(), threading.Event()

    def work():
        started.set()
        ex.run(repeat=400)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    said = 0
    while not done.is_set() or said == 0:
        print(f"user line {said}", flush=True)
        said += 1
    t.join()
    out = capfd.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("user line")] == [f"user line {k}" for k in range(said)]
