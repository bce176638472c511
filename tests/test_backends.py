"""What differs between backends, in one room (workbench/backends): found from a device or platform name, never
from a platform test elsewhere. TPU devices are described here by what JAX's TPU devices carry (device_kind,
coords); the TPU machine runs the rest (tests/test_tpu.py)."""
from types import SimpleNamespace

import jax

from workbench.backends import (CPU, GPU, TPU, Topology, backend_for, backend_of, default_device_id, float64_device,
                                topology_of)
from workbench.pipeline.trace import device_for_args
from workbench.pipeline.xla_probe import topology_for


def chips(kind: str, coords: list[tuple[int, int, int]]):
    return [SimpleNamespace(platform="tpu", device_kind=kind, coords=c, id=i) for i, c in enumerate(coords)]


def test_a_platform_or_device_finds_its_backend():
    assert backend_for("tpu") is TPU and backend_for("cuda") is GPU and backend_for("rocm") is GPU
    assert backend_of("tpu:0") is TPU and backend_of("cpu:0") is CPU and backend_of(jax.devices("cpu")[0]) is CPU
    other = backend_for("metal")
    assert other.platform == "metal" and other.dumps == CPU.dumps  # XLA's common file names


def test_the_default_device_is_jaxs_and_committed_arguments_choose_theirs():
    assert default_device_id() == f"{jax.devices()[0].platform}:{jax.devices()[0].id}"
    cpu = jax.devices("cpu")[0]
    assert device_for_args(None, (jax.device_put(jax.numpy.ones(3), cpu),)) == "cpu:0"
    assert device_for_args("cpu", ()) == "cpu:0"  # a platform alone is its first device


def test_a_compile_only_topology_is_named_from_the_chips_generation_and_extent():
    assert topology_of("tpu", chips("TPU v5 lite", [(0, 0, 0)])) == Topology("tpu", "v5e:1x1", (1, 1, 1))
    four = chips("TPU v6 lite", [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)])
    assert topology_of("tpu", four) == Topology("tpu", "v6e:2x2", (2, 2, 1))
    assert topology_of("tpu", chips("TPU v4", [(0, 0, 0), (1, 0, 0)])).name == "v4:2x1x1"
    assert topology_of("tpu", chips("TPU v9 future", [(0, 0, 0)])) is None  # not known here: said, not guessed
    assert topology_of("cpu", jax.devices("cpu")) is None and topology_for("cpu:0") is None


def test_float64_references_of_a_tpu_run_on_the_cpu():
    assert float64_device("tpu:0") == "cpu:0" and float64_device("cpu:0") == "cpu:0"
    assert float64_device("gpu:1") == "gpu:1"  # a GPU computes float64 itself


def test_each_backend_names_its_outputs_and_its_trace_layout():
    names = lambda b: [o.stage for o in b.dumps.outputs]  # noqa: E731
    assert "backend:llvm-ir" in names(CPU) and "backend:ptx" in names(GPU) and "backend:after-codegen" in names(TPU)
    assert all("backend:buffer-assignment" in names(b) for b in (CPU, GPU, TPU))
    assert CPU.trace.op_stat == "hlo_op" and TPU.trace.op_stat is None and TPU.trace.module_line == "XLA Modules"
    assert TPU.probe_platforms == "cpu" and GPU.probe_platforms is None
