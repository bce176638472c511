"""The long calls (applicable, step, bisect, pattern_timing) with their defaults, progress bars
included, in a process without a terminal and in a notebook kernel: the user's road."""
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Transposes that Enzyme's patterns fold away: a predicate that holds with every pattern and not
# with none, so bisect has something to find.
PROGRAM = textwrap.dedent("""
    import jax, jax.numpy as jnp
    import workbench as wb

    def f(x, y):
        return (x.T @ y.T).T + 1.0

    ex = wb.explore(f, jnp.ones((8, 4)), jnp.ones((6, 8)))
    print("applicable", len(ex.applicable()))
    print("step", len(ex.step().applied()))
    b = ex.bisect(lambda e: "stablehlo.transpose" not in e.default_run_stage().text)
    print("bisect", b.patterns, b.runs)
    print("timing", len(ex.pattern_timing()), len(ex.pattern_timing(per_pattern=True)))
""")


def test_defaults_in_a_process_without_a_terminal(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                       stdin=subprocess.DEVNULL, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert int(lines["applicable"]) > 0 and int(lines["step"]) > 0
    assert lines["bisect"].startswith("['") and "bisect runs" in r.stderr  # the bar was drawn on stderr


@pytest.mark.slow
def test_defaults_in_a_notebook_kernel():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRAM)])
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": ROOT}}).execute()
    outputs = nb.cells[0].outputs
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "bisect ['" in text and "timing" in text
    # tqdm.auto draws a widget in a kernel
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
