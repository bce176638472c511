"""A TPU's XLA dumps, read on any machine: every stage the CPU's dumps give, from a TPU v5e's names.

``tests/fixtures/tpu/dumps.tar.xz`` is the dump folder of one real compile on a TPU v5e (recorded by
``scripts/record_tpu.py``: ``small(x, w, b)``, a dense layer with ``tanh``, a softmax and a sum; ``costs.json``
holds the chip's own cost and memory analyses of that executable). Its names differ from the CPU's
(``module_0012.jit_small.cl_933746096.after_optimizations.txt``, a dump named only ``before_tiling_rewriter``),
and its text carries tiled layouts and memory spaces (``f32[256,512]{1,0:T(8,128)S(1)}``, ``u32[]{:S(2)}``):
these read as stages, shapes, costs and diffs with the layouts kept and shown.
"""
from __future__ import annotations

import collections
import json
import os
import re
import tarfile
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from workbench.analysis.cost import hlo_module_cost
from workbench.analysis.diff import diff_texts
from workbench.backends import backend_for
from workbench.ir.dtypes import element_bytes
from workbench.ir.hlo import arrays, read_hlo, without_layout
from workbench.ir.ops import op_counts
from workbench.pipeline.hlo_stage import first_after_layout
from workbench.pipeline.xla import compile_lowered_with_dumps, platform_of_lowered, read_dumps

FIXTURES = Path(__file__).parent / "fixtures" / "tpu"
MODULE = "module_0012.jit_small.cl_933746096."
# measured on the fixture: each pass whose dump differs from the dump before it, in XLA's order
PASS_STAGES = ["xla:cse#1", "xla:algsimp#1", "xla:algsimp#2", "xla:layout-assignment#1", "xla:dot_canonicalizer#1",
               "xla:tpu_fusion#1", "xla:tpu_multi_output_fusion#1", "xla:tpu_fusion#2", "xla:tpu_fusion#3",
               "xla:hlo-memory-scheduler-with-brkga-fallback#1"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    into = tmp_path_factory.mktemp("tpu_dumps")
    with tarfile.open(FIXTURES / "dumps.tar.xz") as tar:
        tar.extractall(into, filter="data")
    return str(into / "dumps")


@pytest.fixture(scope="module")
def read(folder):
    return read_dumps(folder, backend_for("tpu").dumps)


@pytest.fixture(scope="module")
def stages(read) -> dict:
    return {s.name: s for s in read.stages}


def _file(folder: str, ending: str) -> str:
    return Path(folder, MODULE + ending).read_text()


def _per_pass_files(folder: str) -> list[str]:
    return sorted(f for f in os.listdir(folder) if re.match(re.escape(MODULE) + r"\d{4}\.", f))


def test_a_tpu_compile_gives_every_stage_the_cpus_does_in_xlas_order(read):
    assert [s.name for s in read.stages] == [
        "xla:before_optimizations", *PASS_STAGES, "xla:optimized",
        "backend:buffer-assignment", "backend:memory-usage", "backend:live-range", "backend:after-codegen"]
    assert [s.group for s in read.stages] == ["xla"] * 12 + ["backend"] * 4


def test_the_optimized_module_and_the_backend_outputs_are_the_tpus_own_files(folder, stages):
    assert stages["xla:before_optimizations"].text == _file(folder, "before_optimizations.txt")
    assert stages["xla:optimized"].text == _file(folder, "after_optimizations.txt")
    assert stages["backend:buffer-assignment"].text == _file(folder, "after_optimizations-buffer-assignment.txt")
    assert stages["backend:memory-usage"].text == _file(folder, "after_optimizations-memory-usage-report.txt")
    assert stages["backend:after-codegen"].text == _file(folder, "after_codegen.txt")
    # what they hold: the weights' buffer (parameter 1, 256x512 f32) and the memory in use
    assert "allocation 1: size 524288, parameter 1, shape |f32[256,512]|" in stages["backend:buffer-assignment"].text
    assert stages["backend:memory-usage"].text.startswith("Memory Space: default (color=0)\nTotal bytes: 680960")
    # the module after code generation is the optimized one with the code generator's choices written in
    assert '"estimated_cycles":"2578"' in stages["backend:after-codegen"].text
    assert "estimated_cycles" not in stages["xla:optimized"].text


def test_runs_hold_one_entry_per_per_pass_dump_and_name_the_stages_made(folder, read):
    files = _per_pass_files(folder)
    assert len(files) == len(read.runs) == 65
    for f, (pipeline, after, nxt, _made) in zip(files, read.runs):
        # "NNNN.<pipeline>.after_<pass>[.before_<next>].txt", or "NNNN.<pipeline>.before_<next>.txt"
        named = pipeline + (f".after_{after}" if after else "") + (f".before_{nxt}" if nxt else "")
        assert f == f"{MODULE}{f[len(MODULE):len(MODULE) + 4]}.{named}.txt", (f, pipeline, after, nxt)
    assert [made for *_, made in read.runs if made] == PASS_STAGES
    assert read.runs[21] == ("tpu-tiling-rewriter", "", "tiling_rewriter", "xla:layout-assignment#1")
    assert read.runs[34] == ("Main_fusion", "tpu_fusion", "pipeline-end", "xla:tpu_fusion#1")
    assert {"tpu_fusion", "tiling_propagation", "tiling_rewriter", "layout-assignment", "copy-insertion",
            "rename-tensor-core-fusion-ops"} <= set(read.passes)
    assert "pipeline-start" not in read.passes and "pipeline-end" not in read.passes


def test_layout_assignment_is_the_stage_that_tiled_the_module_and_the_tiling_steps_that_changed_nothing_are_none(
        folder, read, stages):
    """On the TPU, layout assignment hands the module to its tiling rewriter: the dump before the rewriter is
    the first with tiles, and the rewriter's own steps leave it as it is."""
    tiled = stages["xla:layout-assignment#1"]
    assert tiled.text == _file(folder, "0021.tpu-tiling-rewriter.before_tiling_rewriter.txt")
    untiled, tiles = ([i.shape for c in read_hlo(stages[name].text).computations for i in c.instructions]
                      for name in ("xla:algsimp#2", "xla:layout-assignment#1"))
    assert [without_layout(s) for s in tiles] == [without_layout(s) for s in untiled]
    assert sum("T(" in s for s in untiled) == 0 and sum("T(" in s for s in tiles) == len(untiled) == 26
    assert "layout-assignment" in tiled.produced_by and "tiling_rewriter" in tiled.produced_by
    assert not [s for s in read.stages if "tiling" in s.name]
    # the first stage that cannot go back to StableHLO, with and without the compile's runs
    assert first_after_layout(read.stages, read.runs) == "xla:layout-assignment#1"
    assert first_after_layout(read.stages) == "xla:layout-assignment#1"


def test_tiled_shapes_read_as_arrays_ops_and_bytes(stages):
    optimized = stages["xla:optimized"].text
    entry = read_hlo(optimized).entry
    assert [i.opcode for i in entry.instructions] == [
        "parameter", "copy-start", "parameter", "parameter", "copy-done", "fusion", "get-tuple-element",
        "get-tuple-element", "fusion", "fusion"]
    copy = entry.instructions[1]
    assert copy.shape == "(f32[256,512]{1,0:T(8,128)S(1)}, f32[256,512]{1,0:T(8,128)}, u32[]{:S(2)})"
    assert [(a.dtype, a.sizes) for a in arrays(copy.shape)] == [("f32", (256, 512)), ("f32", (256, 512)), ("u32", ())]
    assert without_layout(copy.shape) == "(f32[256,512], f32[256,512], u32[])"
    assert copy.operand_names == ("w.1",)
    facts = json.loads((FIXTURES / "costs.json").read_text())["memory_analysis"]
    params = [a for i in entry.instructions if i.opcode == "parameter" for a in arrays(i.shape)]
    assert sum(element_bytes(a.dtype) * a.sizes[0] * (a.sizes[1] if len(a.sizes) > 1 else 1)
               for a in params) == facts["argument_size_in_bytes"] == 657408
    root = next(i for i in entry.instructions if i.root)
    assert [(a.dtype, a.sizes) for a in arrays(root.shape)] == [("f32", (512,))]
    assert facts["output_size_in_bytes"] == 512 * element_bytes("f32")
    counts = op_counts(optimized)
    assert (counts["fusion"], counts["copy-start"], counts["copy-done"], counts["convolution"]) == (5, 1, 1, 1)
    assert sum(counts.values()) == 52


def test_xlas_cost_analysis_of_the_tpu_text_gives_the_chips_own_flops(stages):
    """XLA's HloCostAnalysis, run here on the TPU's optimized text (tiles, memory spaces, copy-start), counts
    the flops and transcendentals the chip's compile reported; its bytes are the arrays' own, without the
    tiles' padding the chip counts (0.13% fewer)."""
    chip = json.loads((FIXTURES / "costs.json").read_text())["cost_analysis"]
    here = hlo_module_cost(stages["xla:optimized"].text)
    assert here["flops"] == chip["flops"] == 34012416
    assert here["transcendentals"] == chip["transcendentals"] == 196608
    assert 0.998 * chip["bytes accessed"] < here["bytes accessed"] <= chip["bytes accessed"]
    before = hlo_module_cost(stages["xla:algsimp#2"].text)
    tiled = hlo_module_cost(stages["xla:layout-assignment#1"].text)
    assert before["flops"] == tiled["flops"]  # tiling changes where the numbers sit, not the work


def test_a_stage_that_only_tiled_the_module_diffs_as_changed_lines_that_differ_by_their_layouts_alone(stages):
    d = diff_texts(stages["xla:algsimp#2"].text, stages["xla:layout-assignment#1"].text)
    assert not d.is_empty
    assert collections.Counter(c.kind for c in d.changes) == {"replace": 4}
    assert [without_layout(line) for line in d.after] == [without_layout(line) for line in d.before]
    assert {kind for _, _, kind in d.rows()} == {"equal", "changed"}
    changed = [(d.before[i], d.after[j]) for i, j, kind in d.rows() if kind == "changed"]
    assert len(changed) == 26 and all(old != new for old, new in changed)
    assert ("  %parameter.1 = f32[256,512]{1,0} parameter(1)",
            "  %parameter.1 = f32[256,512]{1,0:T(8,128)} parameter(1)") in changed
    assert ("  %parameter.0 = f32[] parameter(0)", "  %parameter.0 = f32[]{:T(128)} parameter(0)") in changed
    assert "T(8,128)</span>" in d._repr_html_()  # the tile is what the view marks


def test_memory_space_assignment_diffs_as_the_lines_it_moved_into_another_memory(folder):
    """The TPU's module before buffer assignment and the optimized one differ by memory-space assignment:
    values placed in memory space 1 (``S(1)``) show as changed lines with their own names, not as a
    deleted and an inserted line that rename everything after them."""
    d = diff_texts(_file(folder, "after_optimizations_before_buffer_assignment.txt"),
                   _file(folder, "after_optimizations.txt"))
    rows = d.rows()
    assert collections.Counter(kind for *_, kind in rows) == {"equal": 49, "changed": 13, "inserted": 8, "deleted": 6,
                                                             "moved": 2}
    changed = [(d.before[i], d.after[j]) for i, j, kind in rows if kind == "changed"]
    assert all("S(1)" in new and "S(1)" not in old for old, new in changed)
    # all but the two that read the fusion memory-space assignment rewrote differ by their memory space alone
    spaced = [(old, new) for old, new in changed if without_layout(old) == without_layout(new)]
    assert len(spaced) == 11 and {old.split(" = ")[0] for old, new in changed if (old, new) not in spaced} == {
        "  %get-tuple-element.4", "  %get-tuple-element.5"}
    assert ("  %parameter.0 = f32[256,512]{1,0:T(8,128)} parameter(0)",
            "  %parameter.0 = f32[256,512]{1,0:T(8,128)S(1)} parameter(0)") in spaced
    inserted = [d.after[j] for _, j, kind in rows if kind == "inserted"]
    assert any(" copy-start(" in line and "u32[]{:S(2)}" in line for line in inserted)


def test_a_cpu_compile_keeps_the_cpus_names_and_stages():
    with jax.default_device(jax.devices("cpu")[0]):  # the CPU's, also on an accelerator host
        lowered = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(0)).lower(jnp.ones((8, 16)), jnp.ones((16, 4)))
    assert platform_of_lowered(lowered) == "cpu"
    result = compile_lowered_with_dumps(lowered)
    names = [s.name for s in result.stages]
    assert names[0] == "xla:before_optimizations" and "xla:optimized" in names
    assert names[names.index("xla:optimized") + 1:] == [
        "backend:llvm-ir", "backend:llvm-ir-opt", "backend:buffer-assignment", "backend:memory-usage",
        "backend:live-range"]
    assert [made for *_, made in result.runs if made] == names[1:names.index("xla:optimized")]
    assert "ENTRY" in result.stages[names.index("xla:optimized")].text


def test_dumps_read_while_a_tpu_compile_writes_them_give_the_stages_of_the_folder(folder, read, tmp_path):
    """The recorded compile's dumps written again one by one in XLA's order (the module before its passes, each
    pass's dump, then the rest) while a DumpWatch looks after each: with the TPU's names it reads a dump once a
    later one of its module has begun, and what it read gives the stages the whole folder gives."""
    import shutil

    from workbench.pipeline.xla import DumpWatch

    names = sorted(os.listdir(folder))
    per_pass = _per_pass_files(folder)
    order = ([n for n in names if n.endswith(".before_optimizations.txt")] + per_pass
             + [n for n in names if n not in per_pass and not n.endswith(".before_optimizations.txt")])
    watch = DumpWatch(str(tmp_path))
    try:
        for name in order:
            shutil.copy(Path(folder, name), tmp_path / name)
            watch.read_written()
            if name in per_pass:  # every pass dump before this one is read, this one not yet
                assert set(per_pass[:per_pass.index(name)]) <= set(watch.texts) and name not in watch.texts
    finally:
        texts = watch.stop()
    assert set(texts) == set(per_pass[:-1]) | {n for n in names if n.endswith(".before_optimizations.txt")}
    assert read_dumps(str(tmp_path), backend_for("tpu").dumps, texts) == read


def test_a_tpu_compile_that_goes_on_under_a_later_module_number_gives_all_its_stages(tmp_path):
    """Recorded on the v5e (``renumbered.tar.xz``): a program with an FFT, a ``jax.debug.print`` and a
    ``fori_loop`` starts as ``module_0007.jit_loss`` (the module before its passes, the first few passes) and
    goes on as ``module_0010.jit_loss`` (the rest, the optimized module, the buffer assignment). Both are the
    one compile's: every pass stage in XLA's order, then ``xla:optimized`` and the backend's."""
    with tarfile.open(FIXTURES / "renumbered.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "dumps"
    files = sorted(os.listdir(folder))
    assert {f.split(".", 1)[0] for f in files} == {"module_0007", "module_0010"}
    dumps = read_dumps(str(folder), backend_for("tpu").dumps)
    names = [s.name for s in dumps.stages]
    assert names[0] == "xla:before_optimizations" and "xla:fft_expander#1" in names
    assert "xla:tpu_fusion#1" in names and "xla:copy-insertion#1" in names  # module_0010's passes
    assert names.index("xla:fft_expander#1") < names.index("xla:tpu_fusion#1") < names.index("xla:optimized")
    assert any(s.group == "backend" for s in dumps.stages)
    optimized = next(s for s in dumps.stages if s.name == "xla:optimized")
    assert optimized.text == (folder / "module_0010.jit_loss.cl_933746096.after_optimizations.txt").read_text()
    # the pass dumps of both modules, in XLA's order: module_0007's, then module_0010's
    per_pass = [f for f in files if re.search(r"\.\d{4}\.", f)]
    assert len(dumps.runs) == len(per_pass) and len({f.split(".", 1)[0] for f in per_pass}) == 2
    # the same compile as module 9999 going on as module 10000 (XLA writes five digits from there): read by
    # number, not by name, it gives the same stages
    crossed = tmp_path / "crossed"
    crossed.mkdir()
    for f in files:
        renamed = f.replace("module_0007.", "module_9999.").replace("module_0010.", "module_10000.")
        (crossed / renamed).write_bytes((folder / f).read_bytes())
    again = read_dumps(str(crossed), backend_for("tpu").dumps)
    assert [(s.name, s.text) for s in again.stages] == [(s.name, s.text) for s in dumps.stages]
    assert again.runs == dumps.runs
