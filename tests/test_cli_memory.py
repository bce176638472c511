"""``hlo-workbench memory TARGET`` as a user types it: the installed script and ``python -m workbench`` in a
fresh process, no terminal. What it prints is ``Exploration.memory()`` of the same program explored in Python:
the same peak, to the byte, and the same top line."""
import json

import pytest

from tests.cli_runs import command, corpus_target

# a user's file: one big temporary (tanh of a [1024,1024] product: 4 MiB) between two small matmuls
BIG_TEMPORARY = """\
import jax.numpy as jnp


def f(x, w, v):
    h = jnp.tanh(x @ w)
    return h @ v
"""
BIG_ARGS = "f32[1024,64],f32[64,1024],f32[1024,64]"


@pytest.mark.subprocess
def test_json_of_a_corpus_program_is_its_memory_in_python_and_a_saved_exploration_keeps_it(tmp_path):
    from tests.corpus import program

    import workbench as wb

    corpus_target(tmp_path, "optax_chain", "step.py")
    saved = tmp_path / "step.hlox"
    r = command("memory", "step.py:fn", "--json", "--save", saved, cwd=tmp_path, installed=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # one JSON document, nothing else on stdout
    inst = program("optax_chain").build()
    m = wb.explore(inst.fn, *inst.args).memory()
    assert doc["schema"] == 1 and doc["command"] == "memory"
    assert doc["peak_bytes"] == m.peak_bytes > 0 and doc["peak_instruction"] == m.peak_instruction
    assert sum(b["bytes"] for b in doc["buffers"]) + doc["more_bytes"] == doc["peak_bytes"]
    assert doc["by_line"][0]["line"] == m.by_line()["line"].iloc[0]
    assert doc["summary"] == m.summary() and doc["reported"]["explained"] == m.reported()["explained"]
    # optax_chain donates nothing: the parameters and the optimizer's state could be donated
    assert [d["argument"] for d in doc["donation"]] == list(m.donation()["argument"]) != []

    again = command("memory", saved, "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["peak_bytes"] == m.peak_bytes


@pytest.mark.subprocess
def test_tables_put_the_big_temporary_first_under_the_users_line(tmp_path):
    src = tmp_path / "big.py"
    src.write_text(BIG_TEMPORARY)
    r = command("memory", f"{src}:f", "--args", BIG_ARGS, "--rows", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("# peak 5.0 MiB of host memory") and "Traceback" not in r.stderr
    heading, _, table = out.split("# Bytes live at the peak by line ")[1].split("\n# ")[0].partition("\n")
    lines = [ln for ln in table.splitlines() if ln.strip()]
    assert heading == "(5 lines)" and lines[0].split() == ["line", "bytes", "share", "buffers", "kinds", "largest"]
    top = lines[1].split()
    # tanh(x @ w): 1024 x 1024 float32, the only temporary live at the peak
    assert top[:4] == [f"{src}:5", "4,194,304", "80.0%", "1"] and "temporary" in top
    assert lines[-1].startswith("... 3 more lines") and "--rows N shows more" in lines[-1]
    assert "# Live at the peak: the 2 largest of 5 buffers" in out
    assert "# Donation: 1 argument, 262,144 bytes that donating would save" in out
    assert "# How the peak adds up\n\npeak 5,242,880 bytes = " in out
    assert "memory_analysis() gives the same 5,242,880 bytes" in out


@pytest.mark.subprocess
def test_a_target_that_cannot_be_read_is_exit_status_2_with_one_line_saying_why(tmp_path):
    r = command("memory", "no_such_example", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == ("hlo-workbench: no such built-in example: no_such_example (built-in examples: "
                                "attention, convnet, mlp, scan; or give PATH.py:FUNC)")
    r = command("memory", tmp_path / "missing.hlox", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == f"hlo-workbench: no such saved exploration: {tmp_path}/missing.hlox"


def test_an_mlir_file_is_explored_as_text_and_without_main_xla_compiled_nothing(cli, tmp_path):
    """An MLIR file is explored as ``wb.explore_text`` explores it; with no @main XLA compiles nothing, and the
    command says so."""
    import jax
    import jax.numpy as jnp

    import workbench as wb

    def f(x, w):
        return jnp.tanh(x @ w) @ w.T

    text = jax.jit(f).lower(jnp.ones((256, 32)), jnp.ones((32, 128))).as_text()
    (tmp_path / "f.mlir").write_text(text)
    r = cli("memory", tmp_path / "f.mlir", "--json", "--pipeline", "canonicalize")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["peak_bytes"] == wb.explore_text(text, pipeline="canonicalize").memory().peak_bytes

    path = tmp_path / "helper.mlir"
    path.write_text("func.func public @helper(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "  %y = stablehlo.add %x, %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n")
    r = cli("memory", path, "--pipeline", "canonicalize")
    assert r.returncode == 2, r.stdout
    assert "has no XLA stage at all: XLA compiles a module's public @main" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_rows_must_be_positive(cli):
    r = cli("memory", "mlp", "--rows", "0")
    assert r.returncode == 2 and "--rows 0: give a number of rows of at least 1" in r.stderr
