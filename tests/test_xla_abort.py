"""An XLA option that would abort the process never takes the kernel down: disabling passes a module cannot
compile without (copy-insertion, for a program with random numbers) makes XLA fail a CHECK and abort;
the compile is tried in a child process first (pipeline/xla_probe.py), and the stage fails with XLA's
message while this process, and every stage before, lives on."""
import re
import subprocess
import sys

import jax
import pytest

import workbench as wb

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def noise(k):
    return jax.random.normal(k, (4,))


def test_disabling_every_xla_pass_is_a_failed_stage_not_a_dead_kernel():
    ex = wb.explore(noise, jax.random.PRNGKey(0))
    assert ex.error is None and len(ex.xla_passes) > 10
    bad = ex.with_xla(disable=ex.xla_passes)
    assert bad.error is not None and bad.error.stage == "xla:compile"
    message = str(bad.error)
    assert "XLA aborts the process compiling this module" in message and "Check failed" in message
    assert "tried in a child process" in message
    assert [s.name for s in bad.pipeline_stages] == [s.name for s in ex.pipeline_stages]  # nothing before is lost
    ok = ex.with_xla(disable=["algsimp"])  # a pass it can do without: compiles, and runs
    assert ok.error is None and "xla:optimized" in ok.names and ok.run().check.passed


def test_what_the_child_saw_would_have_killed_this_process():
    """The guard is not crying wolf: the same compile in a plain subprocess dies of SIGABRT."""
    code = ("import jax, workbench as wb\n"
            "from workbench.pipeline.build import _compile_exported\n"
            "import workbench.pipeline.build as b\n"
            "b.guard_compile = b.compile_guarded = lambda *a, **k: None\n"
            "f = lambda k: jax.random.normal(k, (4,))\n"
            "ex = wb.explore(f, jax.random.PRNGKey(0))\n"
            "bad = ex.with_xla(disable=ex.xla_passes)\n"
            "print(bad.error)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode < 0 or p.returncode == 134, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])


def test_a_run_follows_the_xla_toggles():
    """ex.run compiles with the Exploration's XLA options (a run of a toggled Exploration is the toggled
    program): the options XLA aborts on are refused by the run as well, and harmless ones run and check."""
    ex = wb.explore(noise, jax.random.PRNGKey(0))
    bad = ex.with_xla(disable=ex.xla_passes)
    with pytest.raises(wb.WorkbenchError, match="XLA aborts the process"):
        bad.run(repeat=1)
    ok = ex.with_xla(disable=["algsimp", "cse"])
    r = ok.run(repeat=2)
    assert r.check.passed and len(r.timing.times) == 2
    assert ex.run(repeat=1).check.passed  # the untoggled one runs as before


def test_a_toggle_compiles_once_in_the_child_and_gets_the_stages_a_compile_here_gets(monkeypatch):
    """Issue 28: a compile with disabled passes is not tried in the child and then done again here; the child's
    compile writes the dumps, with the settings JAX uses here (the user's donation and host callback kept),
    so its stages are exactly those of the same compile in this process, and this process compiles nothing."""
    import jax.numpy as jnp

    from workbench.pipeline import build, xla_probe
    from workbench.pipeline.compile_queue import XLA_QUEUE

    def step(p, x):
        jax.debug.print("sum {s}", s=x.sum())
        return jnp.tanh(x @ p["w"]) + p["b"], p["w"] * 2.0

    fn = jax.jit(step, donate_argnums=0)
    args = ({"w": jnp.ones((8, 8)), "b": jnp.zeros((8,))}, jnp.ones((4, 8)))
    ex = wb.explore(fn, *args)
    assert ex.error is None and "xla:optimized" in ex.names
    here, there = [], []
    real_compile, real_child = jax.stages.Lowered.compile, xla_probe._PROBER.compile
    monkeypatch.setattr(jax.stages.Lowered, "compile", lambda *a, **k: here.append(1) or real_compile(*a, **k))
    monkeypatch.setattr(xla_probe._PROBER, "compile", lambda method, *a, **k: there.append(method) or real_child(method, *a, **k))
    off = ex.with_xla(disable=["algsimp"])
    assert off.error is None and "xla:optimized" in off.names
    assert there == ["compile_module"] and here == []  # one compile, in the child
    assert "input_output_alias" in off["xla:before_optimizations"].text  # the donation reached XLA
    assert off.run(repeat=1).check.passed  # the verdict is kept: the run compiles here without a probe
    assert there == ["compile_module"]

    # the same compile in this process (the child's road closed): the same stages, text for text
    XLA_QUEUE.clear()
    xla_probe._VERDICTS.clear()
    monkeypatch.setattr(build, "compile_guarded", lambda *a, **k: None)
    again = ex.with_xla(disable=["algsimp"])
    assert again.error is None and "xla:optimized" in again.names  # waits for XLA's stages
    assert there == ["compile_module", "compile"] and here  # guarded by a probe, then compiled here
    def xla(e):  # the backend's files are named by the process's count of compiles (module_0002...): not content
        return [(s.name, re.sub(r"module_\d+\.", "module_N.", s.text)) for s in e.stages if s.group in ("xla", "backend")]

    assert len(xla(off)) > 5 and xla(off) == xla(again)
    assert off.xla_result.cost == again.xla_result.cost and off.xla_result.memory == again.xla_result.memory
