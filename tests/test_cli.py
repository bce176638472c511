"""The hlo-workbench command on real programs."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = [sys.executable, "-m", "workbench"]


def run(*args):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_stages_with_shapes(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.tanh(x @ y).sum(0)\n")
    r = run("stages", f"{src}:f", "--args", "f32[64,64],f32[64,32]", "--pipeline", "only_enzyme",
            "--disable", "transpose_transpose")
    assert r.returncode == 0, r.stderr
    for name in ("jaxpr", "stablehlo", "enzyme-batch#1", "enzyme#1", "xla:optimized", "backend:llvm-ir"):
        assert name in r.stdout


def test_default_is_a_report_on_a_builtin_example():
    r = run()
    assert r.returncode == 0, r.stderr
    assert "enzyme-hlo-patterns#1" in r.stdout and "Final MLIR stage" in r.stdout
    assert "stablehlo.dot_general" in r.stdout


def test_bad_input_is_a_clear_message():
    r = run("stages", "mlp", "--disable", "dot_transpos")
    assert r.returncode == 2 and "did you mean 'dot_transpose'" in r.stderr and "Traceback" not in r.stderr
    r = run("stages", "workbench/examples/mlp.py:nope")
    assert r.returncode != 0 and "has no function 'nope'" in r.stderr
    r = run("stages", "mlp", "--args", "f32[3,", )
    assert r.returncode != 0 and "DTYPE[DIMS]" in r.stderr


def test_patterns_and_pipelines_listings():
    r = run("patterns", "--search", "transpose_transpose")
    assert r.returncode == 0 and "transpose_transpose" in r.stdout
    r = run("pipelines")
    assert r.returncode == 0 and "only_enzyme" in r.stdout and "just_batch" in r.stdout


def test_a_misspelled_xla_pass_is_a_warning_that_names_the_closest():
    r = run("stages", "mlp", "--xla-disable", "algsimpp")
    assert r.returncode == 0, r.stderr
    assert "hlo-workbench: warning: XLA did not report running a pass named 'algsimpp'" in r.stderr
    assert "Closest passes it reported: algsimp" in r.stderr and "build.py" not in r.stderr


def test_python_dash_m_workbench_is_the_command_and_a_closed_pipe_is_quiet():
    r = subprocess.run(f"{sys.executable} -m workbench pipelines | head -1", shell=True, capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "name" in r.stdout and "Traceback" not in r.stderr, r.stderr


def test_the_panel_module_keeps_its_earlier_name():
    import workbench as wb
    import workbench.widgets

    assert wb.widgets.panel is wb.views.widgets.panel and wb.widgets.Panel is wb.views.widgets.Panel
