"""A module may declare shapes no machine holds: tensor<100000x100000xf32> is 40 GB. Exploring,
compiling and costing it allocates nothing and works; anything that would make arrays of those
shapes in this process (a run's example arguments and outputs, a reproducer's inputs.npz, the numeric
check's copies, processes='s inputs) is refused first with ArrayTooLargeError, naming the argument,
its shape, its bytes and the limit. Before the guard, ex.reproducer of this module ended the process
(XLA's "Check failed: buffer_.IsConcrete()", SIGABRT) and a zero-stride view of 40 GB was written to
inputs.npz until the disk or a limit stopped it. Bytes written are counted here; no test times anything."""
import gc
import os
import subprocess
import sys
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench.analysis.run import multiprocess
from workbench.analysis.run.reference import float64_reference, nudged_outputs
from workbench.errors import WorkbenchError
from workbench.pipeline import array_limit
from workbench.pipeline.array_limit import ArrayTooLargeError, array_limit as limit_now, write_npz

N = 100_000
HUGE_BYTES = N * N * 4
HUGE = f"""module @m {{
  func.func public @main(%arg0: tensor<{N}x{N}xf32>) -> tensor<{N}x{N}xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<{N}x{N}xf32>
    return %0 : tensor<{N}x{N}xf32>
  }}
}}
"""


def sine(x):
    return jnp.sin(x) * 2.0


@pytest.fixture(scope="module")
def huge():
    return wb.explore_text(HUGE, pipeline="canonicalize")


def folder_bytes(folder) -> dict:
    return {p.name: p.stat().st_size for p in folder.iterdir()}


def assert_names_the_array(e: ArrayTooLargeError, what: str):
    message = str(e)
    assert e.what == what and e.shape == (N, N) and e.dtype == "float32" and e.nbytes == HUGE_BYTES
    assert 0 < e.limit <= array_limit.ARRAY_BYTES_CAP
    assert f"{what}, float32[{N}, {N}], would take 40,000,000,000 bytes" in message
    assert f"limit of {e.limit:,} bytes" in message and "Nothing was allocated or written" in message


def test_exploring_compiling_and_costing_a_40_gb_module_allocate_nothing(huge):
    assert huge.error is None
    optimized = huge.stage("xla:optimized")
    assert not optimized.error and f"f32[{N},{N}]" in optimized.text
    table = huge.cost().set_index("stage")
    # XLA's memory analysis of the compiled executable: the 40 GB are planned, not made
    assert table.loc["xla:optimized", "argument_bytes"] == HUGE_BYTES
    assert table.loc["xla:optimized", "output_bytes"] == HUGE_BYTES
    assert table.loc["canonicalize#1", "bytes"] >= 2 * HUGE_BYTES
    assert list(huge.cost("canonicalize#1")["op"]) == ["stablehlo.add", "func.return"]


def test_running_it_is_refused_before_any_array_is_made(huge):
    live = len(jax.live_arrays())
    with pytest.raises(ArrayTooLargeError) as caught:
        huge.run(repeat=1)
    assert_names_the_array(caught.value, "argument 0")
    assert "seeded example arguments and the outputs of @main" in str(caught.value)
    assert "ex.run(args=...)" in str(caught.value)
    assert len(jax.live_arrays()) == live and huge.runs == []


def test_a_small_argument_with_a_huge_output_is_refused_by_its_output():
    broadcast = HUGE.replace(f"%arg0: tensor<{N}x{N}xf32>", "%arg0: tensor<f32>").replace(
        f"stablehlo.add %arg0, %arg0 : tensor<{N}x{N}xf32>",
        f"stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<{N}x{N}xf32>")
    ex = wb.explore_text(broadcast, pipeline="canonicalize")
    with pytest.raises(ArrayTooLargeError) as caught:
        ex.run(repeat=1)
    assert_names_the_array(caught.value, "output 0")
    assert caught.value.total == HUGE_BYTES + 4  # the scalar argument counted first


def test_the_reproducer_writes_its_folder_without_inputs_and_says_why(huge, tmp_path):
    folder = huge.reproducer(tmp_path / "huge")
    sizes = folder_bytes(folder)
    assert sorted(sizes) == ["README.md", "input.mlir", "pipeline.txt", "repro.py"]  # no inputs.npz, no part file
    assert sum(sizes.values()) < 100_000
    readme = (folder / "README.md").read_text()
    assert "**not written**" in readme and "argument 0 (%arg0 of @main), float32[100000, 100000]" in readme
    assert "40,000,000,000 bytes" in readme and "prints ERROR (exit 2)" in readme
    script = (folder / "repro.py").read_text()
    assert "inputs_not_written" in script and "40,000,000,000 bytes" in script


def test_repro_py_says_error_for_the_missing_inputs(huge, tmp_path):
    folder = huge.reproducer(tmp_path / "run")
    code = ("import sys; sys.modules['workbench'] = None; import runpy; sys.argv = ['repro.py']; "
            "runpy.run_path('repro.py', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=600)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 2, r.stdout + r.stderr[-2000:]
    assert lines[1].startswith("inputs.npz was not written: ") and "40,000,000,000 bytes" in lines[1]
    assert lines[-1].startswith("ERROR: inputs.npz was not written (why: above), so the modules cannot run")
    assert "arg0 float32[100000, 100000] stored as float32" in lines[-1]
    assert sorted(os.listdir(folder)) == ["README.md", "input.mlir", "pipeline.txt", "repro.py"]


def test_a_predicate_that_needs_no_run_still_gets_its_folder(huge, tmp_path):
    folder = huge.reproducer(tmp_path / "ops", predicate=wb.op_count_above("stablehlo.add", 0))
    assert "inputs.npz" not in os.listdir(folder)
    readme = (folder / "README.md").read_text()
    assert "**not written**" in readme and "prints ERROR (exit 2)" not in readme


def test_miscompiles_does_not_run_the_stages_of_a_huge_module(tmp_path):
    # canonicalize folds the multiplication by one: a changed stage, which miscompiles would run
    times_one = HUGE.replace("    return %0", f"""    %one = stablehlo.constant dense<1.0> : tensor<{N}x{N}xf32>
    %1 = stablehlo.multiply %0, %one : tensor<{N}x{N}xf32>
    return %1""")
    ex = wb.explore_text(times_one, pipeline="canonicalize")
    assert ex.stage("canonicalize#1").changed
    folder = ex.reproducer(tmp_path / "mis", predicate=wb.miscompiles("cpu:0"))
    readme = (folder / "README.md").read_text()
    assert "the stages were not run to find where the numbers go wrong" in readme and "40,000,000,000" in readme
    assert ex.runs == [] and "inputs.npz" not in os.listdir(folder)


def test_a_function_explored_with_a_40_gb_shape(tmp_path):
    ex = wb.explore(sine, jax.ShapeDtypeStruct((N, N), jnp.float32), pipeline="canonicalize")
    assert ex.error is None and not ex.stage("xla:optimized").error
    with pytest.raises(WorkbenchError, match=r"args\[0\]: float32\[100000,100000\] is a shape"):
        ex.run(repeat=1)
    folder = ex.reproducer(tmp_path / "shape")
    assert sorted(folder_bytes(folder)) == ["README.md", "input.mlir", "pipeline.txt", "repro.py"]
    assert "40,000,000,000 bytes" in (folder / "README.md").read_text()


def test_a_small_shape_without_values_is_not_written_either(tmp_path):
    ex = wb.explore(sine, jax.ShapeDtypeStruct((3,), jnp.float32), pipeline="canonicalize")
    folder = ex.reproducer(tmp_path / "small", predicate=wb.miscompiles("cpu:0"))
    readme = (folder / "README.md").read_text()
    assert "inputs.npz" not in os.listdir(folder)
    assert "shapes that have no values (jax.ShapeDtypeStruct): args[0]: float32[3]" in readme
    assert "no stage was run to find where the numbers go wrong" in readme


def test_a_40_gb_zero_stride_view_is_neither_copied_nor_written(tmp_path):
    view = np.broadcast_to(np.float32(1.5), (N, N))  # 4 bytes of memory, 40 GB logically
    ex = wb.explore(sine, view, pipeline="canonicalize")
    with pytest.raises(ArrayTooLargeError) as caught:
        ex.run(repeat=1)
    assert_names_the_array(caught.value, "numpy argument leaf 0")
    folder = ex.reproducer(tmp_path / "view")
    sizes = folder_bytes(folder)
    assert "inputs.npz" not in sizes and sum(sizes.values()) < 100_000
    assert "40,000,000,000 bytes" in (folder / "README.md").read_text()


def test_processes_refuses_to_write_a_huge_argument(tmp_path):
    exported = jax.export.export(jax.jit(sine))(jax.ShapeDtypeStruct((N, N), jnp.float32))
    with pytest.raises(ArrayTooLargeError) as caught:
        multiprocess._write_inputs(str(tmp_path), exported, (np.broadcast_to(np.float32(1.5), (N, N)),))
    assert_names_the_array(caught.value, "argument leaf 0")
    assert os.listdir(tmp_path) == []


def test_processes_writes_small_inputs_that_its_children_read(tmp_path):
    exported = jax.export.export(jax.jit(sine))(jax.ShapeDtypeStruct((4, 3), jnp.float32))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert multiprocess._write_inputs(str(tmp_path), exported, (x,)) == ["float32"]
    assert os.listdir(tmp_path) == ["inputs.npz"]
    with np.load(tmp_path / "inputs.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["a0"], x)


# ---- write_npz: streamed, bounded, never half written ---------------------------------------------


def test_a_zero_stride_view_under_the_limit_is_streamed(tmp_path):
    view = np.broadcast_to(np.float32(2.0), (4096, 16384))  # 256 MiB logically
    tracemalloc.start()
    try:
        written = write_npz(tmp_path / "v.npz", {"v": view}, "writing v")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == (tmp_path / "v.npz").stat().st_size and written >= view.nbytes
    assert peak < 64 * 2**20  # numpy's 16 MiB pieces, never the 256 MiB array
    with np.load(tmp_path / "v.npz", allow_pickle=False) as z:
        got = z["v"]
        assert got.shape == view.shape and got.dtype == np.float32 and float(got.min()) == float(got.max()) == 2.0
    assert os.listdir(tmp_path) == ["v.npz"]


def test_write_npz_refuses_over_the_limit_before_writing(tmp_path, monkeypatch):
    monkeypatch.setattr(array_limit, "ARRAY_BYTES_CAP", 1000)
    assert limit_now() == 1000
    with pytest.raises(ArrayTooLargeError) as caught:
        write_npz(tmp_path / "x.npz", {"small": np.zeros(10, np.float32), "big": np.zeros(300, np.float32)}, "writing x")
    e = caught.value
    assert (e.what, e.nbytes, e.total, e.limit) == ("array 'big'", 1200, 1240, 1000)
    assert "array 'big', float32[300], would take 1,200 bytes (1,240 bytes with the arrays before it)" in str(e)
    assert os.listdir(tmp_path) == []


def test_a_failed_write_leaves_no_file(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"the old file")
    with pytest.raises(ValueError, match="allow_pickle=False"):
        write_npz(tmp_path / "x.npz", {"a": np.ones(1000), "b": np.array([object()])}, "writing x")
    assert os.listdir(tmp_path) == ["x.npz"] and (tmp_path / "x.npz").read_bytes() == b"the old file"


# ---- the numeric check's own copies --------------------------------------------------------------


def test_the_checks_copies_are_bounded_too(monkeypatch):
    x = jnp.linspace(0.1, 1.0, 200, dtype=jnp.float32)  # 800 bytes; in float64 1,600
    ex = wb.explore(sine, x, pipeline="canonicalize")
    monkeypatch.setattr(array_limit, "ARRAY_BYTES_CAP", 1000)
    wide, why = float64_reference(ex.spec.traced, "cpu:0", ex.spec.traced.args)
    assert wide is None and "argument leaf 0 widened, float64[200], would take 1,600 bytes" in why
    nudged, why = nudged_outputs(ex, ex.stage("stablehlo"), "cpu:0", None)
    # the nudged copy of the input and its working arrays: 6 times 800 bytes
    assert nudged == () and "argument leaf 0 moved by one ulp, float32[200], would take 4,800 bytes as 6 arrays" in why
    monkeypatch.setattr(array_limit, "ARRAY_BYTES_CAP", 4 * 2**30)
    assert float64_reference(ex.spec.traced, "cpu:0", ex.spec.traced.args)[0] is not None
    assert len(nudged_outputs(ex, ex.stage("stablehlo"), "cpu:0", None)[0]) == 3


# ---- the command line's --args -------------------------------------------------------------------


def test_cli_args_of_a_huge_shape_are_refused_before_any_array_is_made(tmp_path, capsys):
    """``hlo-workbench report f.py:f --args 'f32[100000,100000]'`` used to ask jax.random for 40 GB."""
    from workbench.views.cli import main

    (tmp_path / "f.py").write_text("import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x)\n")
    gc.collect()  # earlier tests' garbage with arrays in it goes now, not while the command runs
    live = len(jax.live_arrays())
    assert main(["report", f"{tmp_path / 'f.py'}:f", "--args", "f32[8],f32[100000,100000]"]) == 2
    said = capsys.readouterr().err.removeprefix("hlo-workbench: ")
    assert said.startswith("--args asks for random arrays: array 1, float32[100000, 100000], would take "
                           "40,000,000,000 bytes") and "Nothing was allocated" in said
    assert len(jax.live_arrays()) <= live  # none made (one freed meanwhile is not one made)
