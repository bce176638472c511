"""The GPU paths: running a stage on a GPU, XLA's GPU stages with the PTX the backend emits, and the
roofline of a known GPU against the time measured on it. They run where JAX sees a GPU (the device
machine some tasks are lent: Python 3.12, where enzyme-ad has no build, so the MLIR pipeline is the
upstream one there) and are skipped elsewhere, saying why: each asks for tests/conftest.py's ``gpu``
fixture, which marks it ``gpu``."""
import math

import jax
import pytest

import workbench as wb
from workbench import examples
from workbench.pipeline.worker import enzyme_available

PIPELINE = "all" if enzyme_available() else "upstream"  # enzyme-ad ships for CPython 3.11 only


def _peak_name(gpu) -> str | None:
    return next((n for n in ("H200", "H100", "A100") if n in gpu.device_kind), None)


def test_a_stage_runs_on_the_gpu_and_its_numbers_are_checked(gpu):
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, pipeline=PIPELINE, device="gpu:0")
    r = ex.run(device="gpu:0", repeat=5)
    assert r.device.startswith("gpu") and r.check.passed, r.check
    leaf = jax.tree_util.tree_leaves(r.outputs)[0]
    assert next(iter(leaf.devices())).platform == "gpu"


def test_xla_gpu_stages_end_in_ptx(gpu):
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args, pipeline=PIPELINE, device="gpu:0")
    names = ex.names
    assert "xla:optimized" in names and "backend:ptx" in names, names
    assert ".entry" in ex["backend:ptx"].text and ".version" in ex["backend:ptx"].text
    assert any(n.startswith("xla:") and "fusion" in n for n in names)  # GPU fusion passes are stages


def test_the_roofline_of_the_gpu_bounds_the_measured_time(gpu):
    if _peak_name(gpu) is None:
        pytest.skip(f"the GPU here ({gpu.device_kind}) is not one whose peaks the cost model knows")
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args, pipeline=PIPELINE, device="gpu:0")
    table = ex.cost(device=_peak_name(gpu))
    row = table[table["stage"] == "xla:optimized"].iloc[0]
    bound = max(float(row["roofline_flops_s"]), float(row["roofline_bytes_s"]))  # the roofline's time bound
    measured = ex.run(device="gpu:0", repeat=20).timing.median
    print(f"roofline bound {bound * 1e6:.1f} us, measured {measured * 1e6:.1f} us, ratio {measured / bound:.1f}")
    assert math.isfinite(bound) and 0 < bound <= measured * 1.05  # no program beats its roofline


def test_the_gpus_kernels_are_measured_per_instruction_beside_the_roofline(gpu):
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args, pipeline=PIPELINE, device="gpu:0")
    prof = ex.profile(device="gpu:0", repeat=5)
    t = prof.table
    assert len(t) >= 3 and prof.call_us > 0 and 0 < prof.coverage <= 1.0 + 1e-6, prof
    assert all(name in prof.hlo for name in t["instruction"])  # kernels named by the executable's instructions
    if _peak_name(jax.devices("gpu")[0]):
        costed = t[t["roofline_us"].notna() & (t["roofline_us"] > 0)]
        assert len(costed) and prof.peak == _peak_name(jax.devices("gpu")[0])
    cp = ex.compile_profile()
    assert (cp.table["kind"] == "xla pass").sum() > 50 and cp.xla_wall_s > 0
    assert cp.total_s > 0 and cp.explore_s > 0
