"""scripts/run_lessons_inline.py, as it runs lessons on the TPU machine (no Jupyter kernel there): a lesson's cells in
one process, in order, its seconds and device printed; a failing cell named with its notebook and number."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.subprocess
def test_a_lesson_runs_inline_and_a_failing_cell_is_named(tmp_path):
    pytest.importorskip("enzyme_ad.jax", reason="the lessons use Enzyme-JaX patterns")
    script = ROOT / "scripts" / "run_lessons_inline.py"
    r = subprocess.run([sys.executable, str(script), "notebooks/12_a_real_model.ipynb"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "notebooks/12_a_real_model.ipynb: ran in" in r.stdout and "cpu" in r.stdout.lower()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("1 / 0")])
    bad = tmp_path / "bad.ipynb"
    nbformat.write(nb, bad)
    r = subprocess.run([sys.executable, str(script), str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and f"{bad} cell 1: ZeroDivisionError" in r.stdout
