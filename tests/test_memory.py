"""Where the bytes go (issue 47): ``ex.memory()`` read from XLA's own buffer assignment and live ranges.

Known answers: a temporary of a size the test chooses is at the peak with the test's own line; a scanned MLP's
peak loses its stacked residuals under ``jax.checkpoint`` and the comparison names them; an Optax step without
donation is told which arguments to donate and how many bytes that saves, and with donation nothing; on every
corpus program the live set at the peak sums to the peak and the peak reconciles with ``memory_analysis()`` to the
byte; a TPU v5e's dumps (a recorded fixture) read as HBM and VMEM apart, HBM equal to the chip's own analysis.
"""
from __future__ import annotations

import inspect
import json
import tarfile
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
import pytest

import workbench as wb
from workbench.analysis.memory import BUFFER_COLUMNS, Memory, memory_of
from workbench.backends import backend_for
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.ir.buffers import read_buffer_assignment, read_live_range
from workbench.pipeline.xla import read_dumps
from workbench.stages import Stage
from tests.corpus import PROGRAMS, program

HERE = Path(__file__).resolve()
TPU = HERE.parent / "fixtures" / "tpu"


def _line_of(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source that holds ``text``."""
    lines, first = inspect.getsourcelines(fn)
    k = next(i for i, ln in enumerate(lines) if text in ln)
    return f"{inspect.getsourcefile(fn)}:{first + k}"


def chosen_temporaries(x, w):
    big = jnp.sort(x @ w, axis=1)  # f32[256, 1024]: 1 MiB, made here (no fusion takes a sort in)
    other = jax.lax.optimization_barrier(jnp.sin(x[:, :128]))  # f32[256, 128]: 128 KiB
    return (jnp.tanh(big) @ w.T).sum() + other.sum()


@pytest.fixture(scope="module")
def chosen():
    return wb.explore(chosen_temporaries, jnp.ones((256, 512)), jnp.ones((512, 1024))).memory()


def test_a_temporary_of_a_chosen_size_is_at_the_peak_with_the_users_line(chosen):
    peak = chosen.at_peak()
    assert list(peak.columns) == list(BUFFER_COLUMNS)
    assert int(peak["bytes"].sum()) == chosen.peak_bytes  # the live set sums to the peak
    big = peak[peak["bytes"] == 256 * 1024 * 4]
    assert len(big) >= 1 and set(big["kind"]) <= {"temporary"}
    assert _line_of(chosen_temporaries, "big = ") in set(big["line"])
    small = peak[peak["bytes"] == 256 * 128 * 4]
    assert _line_of(chosen_temporaries, "other = ") in set(small["line"])
    args = peak[peak["kind"] == "argument"]
    assert sorted(args["argument"]) == ["w", "x"] and int(args["bytes"].sum()) == (256 * 512 + 512 * 1024) * 4
    # the peak is the arguments and the two chosen temporaries, and a few scalars
    assert 0 <= chosen.peak_bytes - (256 * 512 + 512 * 1024 + 256 * 1024 + 256 * 128) * 4 <= 16
    # the peak is the arguments plus what is live besides, and the timeline's highest point
    tl = chosen.timeline()
    assert int(tl["live_bytes"].max()) == chosen.peak_bytes == tl.attrs["peak_bytes"]
    assert tl["instruction"][tl.attrs["peak_at"]] == chosen.peak_instruction
    assert chosen.peak_computation.startswith("main")


def test_by_line_sums_to_the_peak_and_puts_the_users_line_first_after_the_arguments(chosen):
    lines = chosen.by_line()
    assert int(lines["bytes"].sum()) == chosen.peak_bytes
    assert abs(float(lines["share"].sum()) - 1.0) < 1e-9
    mine = lines[lines["line"] == _line_of(chosen_temporaries, "big = ")]
    assert len(mine) == 1 and int(mine["bytes"].iloc[0]) >= 256 * 1024 * 4
    assert "(argument w)" in set(lines["line"]) and "(argument x)" in set(lines["line"])


def test_the_peak_reconciles_with_memory_analysis_to_the_byte(chosen):
    r = chosen.reported()
    assert r["exact"] and r["peak_bytes"] == r["allocated"] - r["idle_at_peak"] + r["constants_at_peak"]
    assert r["memory_analysis"] == r["allocated"]  # XLA's own total is the allocations the dump lists
    assert r["usage_report"] == r["all_allocations"]  # and its memory-usage report every allocation
    assert "memory_analysis()" in r["explained"] and "memory-usage report" in r["explained"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_every_corpus_program_reconciles_its_peak_to_the_byte(name):
    inst = program(name).build()
    m = wb.explore(inst.fn, *inst.args).memory()
    r = m.reported()
    assert r["exact"] and r["memory_analysis"] == r["allocated"], r["explained"]
    assert r["usage_report"] == r["all_allocations"], r["explained"]
    assert int(m.at_peak()["bytes"].sum()) == m.peak_bytes == int(m.by_line()["bytes"].sum())


def _scan_mlp(remat: bool):
    def block(h, w):
        wide = jnp.tanh(h @ w[0])  # f32[256, 2048]: the residual the backward pass needs
        return h + wide @ w[1], None

    body = jax.checkpoint(block) if remat else block

    def loss(ws, x):
        h, _ = jax.lax.scan(body, x, ws)
        return (h ** 2).sum()

    return jax.jit(jax.grad(loss))


def test_checkpoint_takes_the_stacked_residuals_off_the_peak_and_the_comparison_names_them():
    ws = (jnp.ones((8, 128, 2048)) * 0.01, jnp.ones((8, 2048, 128)) * 0.01)
    x = jnp.ones((256, 128))
    plain = wb.explore(_scan_mlp(False), ws, x).memory()
    remat = wb.explore(_scan_mlp(True), ws, x).memory()
    stacked = 8 * 256 * 2048 * 4  # one residual per layer, stacked by the scan: 16 MiB
    plain_shapes = list(plain.at_peak()["shape"])
    assert plain_shapes.count("f32[8,256,2048]") >= 1 and "f32[8,256,2048]" not in list(remat.at_peak()["shape"])
    change = plain.compare(remat)
    assert change.delta <= -stacked
    gone = [t for t in change.went if t[1] == "f32[8,256,2048]"]
    assert gone and all(b == stacked for *_, b in gone)
    assert sum(b for *_, b in change.appeared) - sum(b for *_, b in change.went) == change.delta
    words = change.words()
    assert "f32[8,256,2048]" in words and "gone from it" in words


def _optax_step():
    opt = optax.adam(1e-3)

    def step(params, state, x):
        grads = jax.grad(lambda p: ((x @ p["w"] + p["b"]) ** 2).mean())(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params = {"w": jnp.ones((256, 256)), "b": jnp.zeros(256)}
    return step, params, opt.init(params), jnp.ones((8, 256))


def test_donation_names_the_parameters_and_optimizer_state_and_the_bytes_it_saves():
    step, params, state, x = _optax_step()
    d = wb.explore(jax.jit(step), params, state, x).memory().donation()
    names = set(d["argument"])
    assert {"params['w']", "params['b']"} <= names
    assert {"state[0].mu['w']", "state[0].nu['w']", "state[0].count"} <= names
    assert "x" not in names  # no output has the batch's shape
    assert not d["donated"].any() and d.attrs["saves"] == int(d["saves"].sum())
    assert d.attrs["saves"] == 3 * (256 * 256 + 256) * 4 + 4  # params, mu, nu and the step count
    assert len(set(d["output"])) == len(d)  # each output is offered to one argument
    donated = wb.explore(jax.jit(step, donate_argnums=(0, 1)), params, state, x).memory()
    assert donated.donation().empty
    assert "aliased argument" in set(donated.at_peak()["kind"]) | set(
        donated.live_at(0)["kind"])  # the donated buffers are the outputs' now


def test_by_line_on_the_flax_nnx_step_names_the_users_own_lines():
    inst = program("nnx_transformer").build()
    m = wb.explore(inst.fn, *inst.args).memory()
    lines = m.by_line()
    top = [ln for ln in lines["line"].head(6) if not ln.startswith("(")]
    assert top and all(ln.startswith(str(Path("tests/corpus/flax_programs.py").resolve())) for ln in top)
    src = Path("tests/corpus/flax_programs.py").read_text().splitlines()
    said = {src[int(ln.rsplit(":", 1)[1]) - 1].strip() for ln in top}
    assert "x = x + self.attn(self.ln1(x))" in said  # the attention block's line
    assert "return x + self.down(nnx.gelu(self.up(self.ln2(x))))" in said  # the MLP's
    assert all("site-packages" not in ln for ln in lines["line"])  # libraries stand beside, not instead
    assert m.at_peak()["library_line"].str.contains("optax").any()


def test_the_memory_view_is_json_and_bounded():
    m = wb.explore(chosen_temporaries, jnp.ones((256, 512)), jnp.ones((512, 1024))).memory()
    doc = json.loads(json.dumps(m.to_json(rows=2)))
    assert doc["peak_bytes"] == m.peak_bytes and len(doc["buffers"]) == 2
    assert sum(b["bytes"] for b in doc["buffers"]) + doc["more_bytes"] == m.peak_bytes
    assert any(p[0] == m.peak_at and p[1] == m.peak_bytes for p in doc["timeline"])


def test_reading_the_dumps_is_linear_in_their_size():
    """The work (lines read, values placed, positions summed, rows made) per line of XLA's dumps stays the same
    when the module grows 8x: no step of the view is quadratic."""
    def chain(n):
        def f(x):
            for _ in range(n):
                x = jnp.sin(x @ x)
            return x
        return f

    per_line = []
    for n in (8, 64):
        ex = wb.explore(chain(n), jnp.ones((16, 16)), pipeline="none")
        m = ex.memory()
        m.at_peak(), m.by_line(), m.timeline(), m.donation(), m.reported(), m.to_json()
        lines = ex["backend:buffer-assignment"].text.count("\n") + ex["backend:live-range"].text.count("\n")
        per_line.append(m.work / lines)
    assert per_line[1] <= 1.2 * per_line[0] and per_line[1] < 3


def test_only_xla_optimized_has_buffers_and_another_device_is_refused_with_a_reason():
    ex = wb.explore(chosen_temporaries, jnp.ones((4, 8)), jnp.ones((8, 16)))
    with pytest.raises(UnknownNameError, match="xla:optimized"):
        ex.memory("stablehlo")
    with pytest.raises(WorkbenchError, match="explore with device="):
        ex.memory(device="gpu:0")
    with pytest.raises(WorkbenchError, match="cannot be read"):
        wb.explore_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }").memory()


def test_a_saved_exploration_keeps_its_memory(tmp_path, chosen):
    ex = wb.explore(chosen_temporaries, jnp.ones((256, 512)), jnp.ones((512, 1024)))
    path = tmp_path / "m.hlox"
    ex.save(path)
    back = wb.load(path).memory()
    assert back.peak_bytes == ex.memory().peak_bytes
    assert back.by_line()["line"].tolist() == ex.memory().by_line()["line"].tolist()


# -- a TPU v5e's dumps, recorded (tests/fixtures/tpu: scripts/record_tpu.py) --------------------------------


@pytest.fixture(scope="module")
def tpu_memory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tpu")
    with tarfile.open(TPU / "dumps.tar.xz") as tar:
        tar.extractall(folder, filter="data")
    (sub,) = [p for p in folder.iterdir() if p.is_dir()] or [folder]
    read = read_dumps(str(sub), backend_for("tpu").dumps)
    stages = [Stage(s.name, s.group, s.text, s.produced_by, True, None, None) for s in read.stages]
    ma = json.loads((TPU / "costs.json").read_text())["memory_analysis"]
    analysis = {"argument_bytes": ma["argument_size_in_bytes"], "output_bytes": ma["output_size_in_bytes"],
                "temp_bytes": ma["temp_size_in_bytes"], "alias_bytes": ma["alias_size_in_bytes"]}
    return stages, analysis, read.passes


def test_a_tpus_hbm_peak_is_the_chips_own_memory_analysis_and_vmem_stands_apart(tpu_memory):
    stages, analysis, passes = tpu_memory
    hbm = memory_of(stages, "tpu", analysis)
    assert hbm.peak_bytes == 657408 + 2048 == analysis["argument_bytes"] + analysis["output_bytes"]
    assert set(hbm.at_peak()["space"]) == {"HBM"}
    assert hbm.reported()["exact"]
    vmem = memory_of(stages, "tpu", analysis, space=1)
    peak = vmem.at_peak()
    assert set(peak["space"]) == {"VMEM"} and vmem.peak_bytes == int(peak["bytes"].sum())
    assert peak["layout"].str.contains("S(1)", regex=False).all()  # VMEM's memory space, as XLA writes it in the layout
    remat = memory_of(stages, "tpu", analysis, xla_passes=passes).rematerialization()
    assert remat.empty and remat.attrs["ran"] == ["rematerialization_with_stats"]  # it ran on the chip, changed nothing
    assert "changed nothing" in remat.attrs["words"]
    spaces = hbm.spaces()
    assert list(spaces["space"][:2]) == ["HBM", "VMEM"]
    # XLA's own live-range estimate adds every memory space together: the workbench keeps them apart
    assert hbm.reported()["live_range_peak"] == 922624 > hbm.peak_bytes


def test_tiled_layouts_pad_and_the_padding_is_counted(tpu_memory):
    stages, analysis, passes = tpu_memory
    ba = next(s for s in stages if s.name == "backend:buffer-assignment").text
    scalar = next(v for a in read_buffer_assignment(ba) for v in a.values if v.shape == "f32[]{:T(128)}")
    from workbench.analysis.memory.placed import padding

    assert scalar.size == 512 and padding(scalar) == 508  # one float in a 128-lane tile
    live = read_live_range(next(s for s in stages if s.name == "backend:live-range").text)
    assert live.sequence[0] == "w.1" and live.ranges["fusion.2{1}"] == (5, 9) and live.peak_at == 9


def test_memory_is_a_value_built_from_text(tpu_memory):
    stages, analysis, passes = tpu_memory
    by = {s.name: s for s in stages}
    m = Memory(by["xla:optimized"], by["backend:buffer-assignment"].text, by["backend:live-range"].text, "tpu",
               analysis)
    assert "HBM" in repr(m) and m.peak_instruction == "divide_reduce_fusion"
    assert "no rematerialization pass" in memory_of(stages, "cpu", xla_passes=["cse"]).rematerialization().attrs["words"]


def test_compare_explorations_and_a_toggles_summary_name_the_memory_change():
    ws = (jnp.ones((8, 128, 2048)) * 0.01, jnp.ones((8, 2048, 128)) * 0.01)
    x = jnp.ones((256, 128))
    plain, remat = wb.explore(_scan_mlp(False), ws, x), wb.explore(_scan_mlp(True), ws, x)
    comparison = wb.compare_explorations(plain, remat)
    said = str(comparison)
    assert comparison.memory is not None and comparison.memory.delta < 0
    assert "memory: the peak went from" in said and "f32[8,256,2048]" in said
    toggled = plain.with_xla(disable=["algsimp"])
    changes = toggled.changes_since(plain)
    assert changes.memory_peaks == (plain.memory().peak_bytes, toggled.memory().peak_bytes)
    assert ("peak memory" in changes.summary) == (changes.memory_peaks[0] != changes.memory_peaks[1])
    assert changes.memory().before == plain.memory().peak_bytes and changes.memory().after == toggled.memory().peak_bytes


# -- the examples and the NNX step compiled on a TPU v5e (bench/memory_check.py --record, through ../shared/device) --


def _recorded(name: str) -> Memory:
    import lzma

    with lzma.open(TPU / "memory" / f"{name}.json.xz", "rt") as f:
        doc = json.load(f)
    stages = [Stage(n, "xla" if n.startswith("xla:") else "backend", t, "recorded on a TPU v5e", True, None, None)
              for n, t in doc["stages"].items()]
    assert doc["platform"] == "tpu" and doc["device_kind"] == "TPU v5 lite"
    mlir = Stage("mlir", "mlir", doc["mlir"], "recorded", True, None, None, text_with_locations=doc["mlir"])
    return memory_of(stages, "tpu", doc["memory_analysis"], mlir=mlir), doc["memory_analysis"]


@pytest.mark.parametrize("name", ["nnx_transformer", "mlp", "optax_chain", "scan"])
def test_on_a_tpu_the_hbm_live_set_sums_to_the_peak_and_reconciles_with_the_chips_analysis(name):
    m, analysis = _recorded(name)
    peak = m.at_peak()
    assert set(peak["space"]) == {"HBM"} and int(peak["bytes"].sum()) == m.peak_bytes
    r = m.reported()
    assert r["exact"]
    if name == "scan":  # this compile's temporary bytes (258,048) lie outside HBM's schedule: the peak is the
        # arguments and outputs, which the memory_analysis() total counts besides (recorded fact of the chip)
        assert m.peak_bytes == analysis["argument_bytes"] + analysis["output_bytes"]
        assert not r["matches_memory_analysis"] and "memory_analysis() gives 361,472" in r["explained"]
    else:
        assert r["matches_memory_analysis"], r["explained"]
    assert "VMEM" in set(m.spaces()["space"])


def test_on_a_tpu_the_nnx_steps_peak_names_the_attention_line_and_vmem_stands_apart():
    m, _ = _recorded("nnx_transformer")
    top = list(m.by_line()["line"].head(5))
    assert any(ln.endswith("tests/corpus/flax_programs.py:34") for ln in top)  # x = x + self.attn(self.ln1(x))
    assert int(m.by_line()["bytes"].sum()) == m.peak_bytes
    peak = m.at_peak()
    arrays = peak[(peak["dtype"] != "tuple") & (peak["bytes"] >= 512)]
    assert arrays["layout"].str.contains("T(", regex=False).all()  # the TPU tiles every array in HBM
    top = list(m.by_line()["line"].head(3))
    assert [ln.rsplit("/", 1)[-1] for ln in top] == ["flax_programs.py:34", "flax_programs.py:35",
                                                      "flax_programs.py:56"]  # attention, MLP, optimizer update


def test_a_library_file_of_another_machine_is_a_library_here():
    """A recording or a saved exploration made elsewhere names that machine's install folders: a file that is
    one of this environment's installed packages is still library code, and shown from its package on."""
    from workbench.ir.attribution import is_library, short_path

    assert is_library("/tmp/wbdev/site/optax/_src/update.py")
    assert short_path("/tmp/wbdev/site/flax/nnx/nn/linear.py") == "flax/nnx/nn/linear.py"
    assert not is_library("/home/someone/project/optax_step.py")
    assert not is_library("/tmp/wbdev/site/optax/not_a_file_of_optax.py")


@pytest.mark.parametrize("name", ["nnx_transformer", "mlp", "attention", "convnet"])
def test_on_a_tpu_every_spaces_peak_together_is_the_chips_peak_memory_within_smems_block(name):
    """The chip's own ``peak_memory_in_bytes`` is HBM's, VMEM's and the small spaces' peaks together: recorded on
    a TPU v5e, the chip's figure is larger by 500 bytes for the examples (SMEM's 12 bytes in a 512-byte block there)
    and by 2,032 for the NNX step (496 of them SMEM's block; the other 1,536 are the size of its sixth memory space,
    which the chip seems to count once more: not explained by the dumps)."""
    m, analysis = _recorded(name)
    r = m.reported()
    assert r["peak_memory_bytes"] == analysis["peak_memory_bytes"]
    assert 0 <= r["peak_memory_bytes"] - r["spaces_peak"] <= 2048
    assert "peak_memory_in_bytes" in r["explained"]
    assert r["usage_report"] == r["all_allocations"]  # the chip's memory-usage report is every HBM allocation
