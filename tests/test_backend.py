"""The TPU's kernels (issue 48): ``ex.backend()`` read from libtpu's LLO dumps, tested on a CPU with dumps recorded
on a TPU v5e (``bench/tpu_backend.py --record``: a bf16 MLP and attention, a Flax NNX transformer step).

Known answers: the recorded bundles and slot-usage files agree bundle for bundle; loop bodies issue once per trip of
their exit test; libtpu's fingerprints say which passes changed a kernel; equal fusions share the kernel libtpu's
deduplication map names; a user's line of the NNX step selects the fusions it went into; the table reads the
kernels' summaries only, and a kernel's passes only when that kernel is opened; the verdicts of the matmul and the
elementwise chain measured on the chip are MXU- and DMA-bound.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import workbench as wb
from workbench.analysis.backend import KERNEL_COLUMNS, Kernels
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.ir.llo import (index_llo, llo_passes, main_memory_bytes, read_bundles, read_dedup_map,
                              read_estimates, read_fingerprints, read_utilization)
from workbench.pipeline.llo import llo_folder_index

from tests.tpu_recordings import LLO, RECORDED, extract_llo


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{name: (the loaded Exploration, its dump folder)} of the recorded programs."""
    root = tmp_path_factory.mktemp("llo")
    out = {}
    for name in RECORDED:
        out[name] = (wb.load(str(LLO / f"{name}.hlox")), extract_llo(name, root))
    return out


def _read(folder: Path, name: str) -> str:
    return (folder / name).read_text()


def test_the_index_groups_the_dump_by_kernel_from_the_names_alone(recorded):
    _, folder = recorded["mlp_bf16"]
    index = llo_folder_index(str(folder))
    assert index and index.hlo.endswith("-TLP-hlo.txt")
    assert "TLP" in index.components and index.kernels
    assert not any(k.startswith("<") for k in index.kernels)  # libtpu's glue is no kernel
    for comp, files in index.components.items():
        assert [f.step for f in files] == sorted(f.step for f in files)
    assert not index_llo([("module_0001.jit_f.after_optimizations.txt", 10), ("notes.txt", 3)])  # none of libtpu's


def test_bundles_and_slot_usage_agree_bundle_for_bundle(recorded):
    _, folder = recorded["nnx_transformer"]
    index = llo_folder_index(str(folder))
    checked = 0
    for kernel in index.kernels:
        fb, fu = index.find(kernel, "final_bundles"), index.find(kernel, "final_hlo-static-per-bundle-utilization")
        if not (fb and fu):
            continue
        b, u = read_bundles(_read(folder, fb.name)), read_utilization(_read(folder, fu.name))
        assert len(b.bundles) == len(u.rows) > 0, kernel
        assert u.units[:3] == ("MXU", "XLU", "VALU") and u.capacity[0] == 4  # a v5e's four matrix units
        assert all(all(used <= cap for used, cap in zip(row, u.capacity)) for row in u.rows)
        checked += 1
    assert checked >= 40


def test_a_loop_body_issues_once_per_trip_of_its_exit_test():
    # the shape of libtpu's own printing (a v5e's elementwise kernel, shortened): a loop body marked LB and '>',
    # an empty bundle printed without its marks inside the loop, the exit test against a constant
    text = "\n".join([
        "     0   :  { %s1 = smov 0 }",
        "   0x1 LB: > { %s2 = sadd.s32 1, %s1  ;;  %v3 = vld [vmem:[#allocation0]] }",
        "   0x2   : > { %v4 = vadd.f32 %v3, %v3 }",
        "   0x3   :  {}",
        "   0x4   : > { %5 = vst [vmem:[#allocation1]] %v4  ;;  %p6 = scmp.ge.s32.totalorder %s2, 74 /* loop exit test */ }",
        "   0x5   :  { %7 = sbr.rel (!%p6) target = $region3 }",
        "   0x6   :  { %8 = dma.vmem_to_hbm [thread:$0]  %s9, /*size_in_granules=*/512, %s10 }",
    ])
    b = read_bundles(text)
    assert [x.depth for x in b.bundles] == [0, 1, 1, 1, 1, 0, 0]
    assert b.trips == (1, 74, 74, 74, 74, 1, 1) and b.executed == 3 + 4 * 74
    assert b.dmas == (("vmem_to_hbm", 512),)
    assert b.bundles[1].ops == ("sadd.s32", "vld")


def test_a_loop_bounded_by_a_register_has_no_trip_count():
    b = read_bundles("   0x1 LB: > { %p6 = scmp.ge.s32.totalorder %s2, %s7 /* loop exit test */ }")
    assert b.trips == (None,) and b.executed is None


def test_fingerprints_say_which_passes_changed_a_kernel(recorded):
    _, folder = recorded["mlp_bf16"]
    index = llo_folder_index(str(folder))
    with_passes = [k for k in index.kernels if sum(f.is_pass for f in index.components[k]) > 10]
    assert with_passes  # the recording keeps the passes of its largest kernels
    k = with_passes[0]
    prints = read_fingerprints(_read(folder, index.find(k, "fingerprints").name))
    passes = llo_passes(index.components[k], prints)
    changed = [f.what for f, c in passes if c]
    unchanged = [f.what for f, c in passes if not c]
    assert changed[0] == passes[0][0].what  # where the LLO starts
    assert unchanged, "some of libtpu's passes leave a kernel as it was"
    # the fingerprints themselves: a pass whose fingerprint equals the one before it changed nothing
    by_order = {name: fp for name, fp in prints}
    assert len(set(by_order.values())) < len(prints)


def test_the_dedup_map_and_estimates_are_read_from_the_top_level_program(recorded):
    _, folder = recorded["nnx_transformer"]
    index = llo_folder_index(str(folder))
    dedup = read_dedup_map(_read(folder, index.find("TLP", "deduplication-map").name))
    shared = {h: k for h, k in dedup.items() if h != k and k in index.kernels}
    assert shared, "equal fusions share one kernel"
    estimates = read_estimates(_read(folder, index.find("TLP", "hlo-static-bundle-profile").name))
    assert estimates and all(e["estimated_cycles"] > 0 for e in estimates.values())


def test_hbm_bytes_leave_out_what_lives_in_vmem():
    assert main_memory_bytes("bf16[1024,1024]{1,0:T(8,128)(2,1)}") == 2 * 1024 * 1024
    assert main_memory_bytes("(f32[8,128]{1,0:T(8,128)}, bf16[64]{0:T(256)(128)(2,1)S(1)})") == 8 * 128 * 4
    assert main_memory_bytes("pred[32,32]{0,1:T(8,128)(4,1)S(1)}") == 0


@pytest.fixture(scope="module")
def nnx(recorded):
    ex, folder = recorded["nnx_transformer"]
    return ex, ex.backend(dump=str(folder))


def test_every_fusion_of_the_nnx_step_has_its_kernel_bundles_and_occupancy(nnx):
    ex, kernels = nnx
    assert kernels.available and kernels.device_kind == "" or kernels.available
    table = kernels.table()
    assert list(table.columns) == list(KERNEL_COLUMNS)
    assert len(table) >= 60 and (table["bundles"] > 0).all()
    assert ((table["MXU"] >= 0) & (table["MXU"] <= 1)).all() and (table["MXU"] > 0.2).any()
    assert (table["kernel"] != table["fusion"]).any()  # libtpu compiled equal fusions once
    # the fusions are the optimized module's: each names an instruction of the module libtpu compiled
    module = kernels.module_stage.text
    assert all(f"%{f} = " in module for f in table["fusion"])


def test_a_user_line_of_the_nnx_step_selects_its_fusions_and_back(nnx):
    ex, kernels = nnx
    table = kernels.table()
    line = table["line"].iloc[0]
    assert line.startswith("/") and ".py:" in line
    short = line.rsplit("/", 1)[1]  # "flax_programs.py:56"
    chosen = kernels.for_line(short)
    assert table["fusion"].iloc[0] in chosen
    for fusion in chosen[:5]:  # and back: each selected fusion's kernel lists the line among its own
        assert any(x.endswith(short) for x in kernels.kernel(fusion).lines())
    assert kernels.for_line("no_such_file.py:1") == []


def test_the_table_reads_summaries_only_and_a_kernel_its_own_passes(recorded, tmp_path):
    ex, folder = recorded["nnx_transformer"]
    fresh = wb.load(str(LLO / "nnx_transformer.hlox"))
    kernels = fresh.backend(dump=str(folder))
    kernels.table()
    summaries = {"final_bundles", "final_hlo-static-per-bundle-utilization", "deduplication-map",
                 "hlo-static-bundle-profile", "hlo"}
    assert kernels.files_read and all(any(name.endswith(s + ".txt") for s in summaries) for name in kernels.files_read)
    before = len(kernels.files_read)
    opened = kernels.table()["kernel"].iloc[0]
    stages = kernels.kernel(opened).stages()
    new = kernels.files_read[before:]
    assert stages and all(f"-{opened}-" in name for name in new)  # nothing of another kernel's
    assert kernels.bytes_read < kernels.index.total_bytes


def test_a_kernels_passes_are_stages_that_diff_and_look_up_by_name(recorded):
    ex, folder = recorded["mlp_bf16"]
    kernels = ex.backend(dump=str(folder))
    k = max(kernels.index.kernels, key=lambda n: len(kernels.index.components[n]))
    kernel = kernels.kernel(k)
    stages = kernel.stages()
    assert stages[0].name.startswith(f"backend:llo:{k}:") and stages[-1].name.endswith("final_bundles")
    assert all(s.group == "backend" for s in stages)
    assert len(stages) < len(kernel.passes())  # unchanged passes are left out
    assert ex[stages[1].name].text == stages[1].text  # ex[...] finds them once ex.backend() has them
    d = ex.diff(stages[0], stages[1])
    assert d is not None
    with pytest.raises(UnknownNameError):
        kernel.stage("no-such-pass")


def test_the_bundle_table_has_one_row_per_bundle_with_its_slots(recorded):
    ex, folder = recorded["attention_bf16"]
    kernels = ex.backend(dump=str(folder))
    fusion = kernels.table()["fusion"].iloc[0]
    k = kernels.kernel(fusion)
    rows = k.bundle_table()
    assert len(rows) == k.bundles and {"address", "loops", "runs", "MXU", "VALU", "ops"} <= set(rows.columns)
    assert int(rows["MXU"].sum()) > 0 or int(rows["VALU"].sum()) > 0


def _row(**kw):
    base = {"issued": 1, "measured_us": None, "issue_us": None, "estimated_cycles": None, "MXU": 0.0, "XLU": 0.0,
            "VALU": 0.0, "EUP": 0.0, "VLOAD": 0.0, "VSTORE": 0.0, "SALU": 0.0, "hbm_bytes": 0}
    return {**base, **kw}


def test_the_verdicts_of_kernels_measured_on_the_chip():
    # measured on the v5e (bench/tpu_backend.py): a bf16 8192^3 matmul's kernel issues 6,987,078 bundles (4,658 us at
    # 1.5 GHz) in 5,880 us with its MXU slots 89 % used; an elementwise chain over f32[8192, 8192] issues 106,945
    # bundles (71 us) in 803 us while moving 537 MB to and from HBM (656 us at 819 GB/s)
    k = Kernels(index_llo([]), None, clock_hz=1.5e9, hbm_bytes_per_s=819e9)
    assert k._bound(_row(issued=6987078, issue_us=4658.1, measured_us=5880.0, MXU=0.89, hbm_bytes=402653184)) == "MXU-bound"
    assert k._bound(_row(issued=106945, issue_us=71.3, measured_us=803.0, VALU=0.95, hbm_bytes=536870912)) == "DMA-bound"
    # a small kernel: 76 bundles issued in 0.05 us of a 0.83 us call, 33 KB moved: latency, not bandwidth
    assert k._bound(_row(issued=76, issue_us=0.05, measured_us=0.83, hbm_bytes=33284)) == "latency-bound"
    assert k._bound(_row(issued=1000, issue_us=0.67, measured_us=0.7, VALU=0.8)).startswith("issue-bound (VALU")
    # without a measurement, libtpu's estimate in cycles stands in
    assert k._bound(_row(issued=6987078, estimated_cycles=9557312, MXU=0.89)) == "MXU-bound"
    assert k._bound(_row(issued=None)).startswith("unknown")


def test_on_a_cpu_the_backend_says_why_there_are_no_kernels_and_nothing_else_breaks():
    import jax.numpy as jnp

    ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(8))
    kernels = ex.backend()
    assert not kernels.available and "cpu:0" in kernels.why and "LLVM IR" in kernels.why
    assert kernels.table().empty
    with pytest.raises(UnknownNameError, match="LLVM IR"):
        ex.backend(fusion="fusion")
    assert ex["xla:optimized"].text  # the other stages are there as ever


def test_a_folder_that_is_no_dump_is_said_in_words(tmp_path):
    import jax.numpy as jnp

    ex = wb.explore(lambda x: x + 1, jnp.ones(4))
    with pytest.raises(WorkbenchError, match="no folder"):
        ex.backend(dump=str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    kernels = ex.backend(dump=str(tmp_path / "empty"))
    assert not kernels.available and "no LLO files" in kernels.why
