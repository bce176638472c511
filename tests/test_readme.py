"""README.md as a user meets it: every Python block runs as written, with its defaults, in a fresh
process without a terminal; the notebook blocks run as cells of a real kernel; the command lines
run as typed, split as a shell splits them, through the command's main() in this process (the installed
script is run as a user runs it in tests/test_cli.py). A prelude defines only what the README leaves to
the reader (``mlir_text``, and the ``my.py`` that the CLI example names)."""
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("enzyme_ad.jax", reason="the README's examples use Enzyme-JaX patterns")

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()

PRELUDE = textwrap.dedent("""
    import jax, jax.numpy as jnp
    mlir_text = jax.jit(lambda a: jnp.exp(a) * 2.0 + jnp.exp(a)).lower(jnp.ones(4)).as_text()
""")

MY_PY = "import jax.numpy as jnp\n\n\ndef f(x, y):\n    return jnp.tanh((x @ y).T).sum(0)\n"


FOUND = {"diff", "bisect", "reduce", "reproducer"}  # the commands whose README line exits 1: they find what they seek


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, re.S | re.M)


def command_lines() -> list[str]:
    section = README.split("## On the command line", 1)[1].split("\n## ", 1)[0]
    lines = [ln.strip() for ln in section.splitlines() if ln.startswith("    hlo-workbench")]
    return [ln.split("  #", 1)[0].strip() for ln in lines]


def test_the_readme_has_the_blocks_this_test_runs():
    assert len(blocks("python")) >= 5 and len(blocks("ipython")) == 3 and len(command_lines()) >= 5


def own_script(block: str) -> str | None:
    """The file name of a block that is a script of its own (its first line is ``# NAME.py: ...``):
    one that must set up JAX before it starts (say, 8 CPU devices for a mesh) runs in a fresh process."""
    m = re.match(r"# ([\w-]+\.py)\b", block)
    return m.group(1) if m else None


@pytest.mark.subprocess  # a fresh interpreter, as a user's script
def test_every_python_block_runs_as_written(tmp_path):
    script = [PRELUDE]
    for k, block in enumerate(blocks("python")):
        if own_script(block):
            continue
        script.append(f"print('-- README block {k + 1}', flush=True)\n{block}")
    path = tmp_path / "readme_blocks.py"
    path.write_text("\n".join(script))
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
                       stdin=subprocess.DEVNULL, timeout=900, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    assert r.stdout.count("-- README block") == len([b for b in blocks("python") if not own_script(b)])


@pytest.mark.subprocess
def test_every_script_block_runs_as_its_own_script(tmp_path):
    scripts = [b for b in blocks("python") if own_script(b)]
    for block in scripts:
        path = tmp_path / own_script(block)
        path.write_text(block)
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
                           stdin=subprocess.DEVNULL, timeout=900, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
        assert r.returncode == 0, (path.name, r.stdout[-2000:], r.stderr[-4000:])


@pytest.mark.slow  # 30 commands: reports with runs, explorations, searches
def test_every_command_line_runs_as_typed(cli, tmp_path):
    import shutil

    from tests.tpu_recordings import LLO

    (tmp_path / "my.py").write_text(MY_PY)
    shutil.copy(LLO / "mlp_bf16.hlox", tmp_path / "step.hlox")  # 'backend step.hlox': a program saved on a TPU v5e
    for line in command_lines():
        argv = shlex.split(line)
        assert argv[0] == "hlo-workbench"
        r = cli(*argv[1:], cwd=tmp_path)
        # status 1 says "found", as the README explains: diff finds a difference (as diff(1) does), bisect the
        # patterns to blame, reduce a smaller module, reproducer a predicate that holds; the others find nothing
        # wrong with these programs
        assert r.returncode == (1 if argv[1] in FOUND else 0), (line, r.stderr[-3000:])
        assert r.stdout.strip(), line


@pytest.mark.slow
def test_the_notebook_blocks_run_in_a_kernel(run_notebook, tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(b.rstrip("\n")) for b in blocks("ipython")])
    run_notebook(nb, tmp_path)
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    for cell in nb.cells[1:]:  # %%hlo and %%mlir: a panel each, with the bundle a saved notebook keeps
        data = [o.get("data", {}) for o in cell.outputs]
        assert any("application/vnd.jupyter.widget-view+json" in d for d in data), cell.source
        assert any("application/vnd.hlo-workbench.exploration+json" in d for d in data), cell.source
    mlir = next(d for o in nb.cells[2].outputs if "application/vnd.hlo-workbench.exploration+json" in (d := o.get("data", {})))
    names = [row["stage"] for row in mlir["application/vnd.hlo-workbench.exploration+json"]["stages"]]
    assert names[0] == "input" and "enzyme-hlo-patterns#1" in names
