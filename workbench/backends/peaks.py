"""Published peaks of accelerators: the spec sheets the roofline holds a measured or counted time against.

The GPU peaks are NVIDIA's datasheets (NVLink bandwidth per direction); the TPU peaks are Google's Cloud TPU
pages per generation (one chip). The CPU's are not published: ``analysis.cost.peaks.cpu_peak`` measures them.
``spec_peak(platform, device_kind)`` finds a device's sheet from JAX's ``Device.device_kind``.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType

from .topology import tpu_generation

__all__ = ["DevicePeak", "GPU_PEAKS", "TPU_CLOCKS", "TPU_PEAKS", "spec_peak", "tpu_clock"]


@dataclasses.dataclass(frozen=True)
class DevicePeak:
    """Peak arithmetic rates (flop/s, dense, per dtype), memory bandwidth (bytes/s) and interconnect
    bandwidth of a device.

    ``interconnect_bytes_per_s`` is what one device can send to its peers per second *in one direction*
    (NVLink's spec sheets give the sum of both directions: half of that), the rate at which the ring
    estimates of ``analysis/sharding/collectives.py`` (bytes each device sends, and receives as many) go. NaN
    where it is not known -- the CPU: the "devices" of one host share its memory, and no figure of a
    link between hosts applies -- and then a roofline's collective time is NaN too.
    """

    device: str
    flops_per_s: Mapping[str, float]
    bytes_per_s: float
    source: str
    interconnect_bytes_per_s: float = math.nan


_VENDOR = "vendor spec sheet"
# Interconnect: NVIDIA's datasheets give NVLink's total bandwidth per GPU, both directions summed:
# H100 SXM5 and H200 SXM "NVLink: 900GB/s" (NVLink 4, 18 links x 50 GB/s, i.e. 25 GB/s each way per
# link: 450 GB/s per direction), A100 80GB SXM "NVLink: 600GB/s" (NVLink 3, 12 links: 300 GB/s per
# direction). The peaks hold the one-direction figure: what a device can send while it receives as much.
GPU_PEAKS = {
    # Dense (no structured sparsity) tensor-core rates; fp32 is the non-tensor-core FP32 rate.
    "H100": DevicePeak(
        "H100",
        MappingProxyType({"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12}),
        3.35e12,
        f"{_VENDOR}: NVIDIA H100 SXM5 datasheet (FP32 67 TFLOPS, dense TF32 494.7 / BF16 989.4 "
        "TFLOPS, HBM3 3.35 TB/s, NVLink 900 GB/s bidirectional = 450 GB/s per direction)",
        450e9,
    ),
    "H200": DevicePeak(
        "H200",
        MappingProxyType({"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12}),
        4.8e12,
        f"{_VENDOR}: NVIDIA H200 SXM datasheet (FP32 67 TFLOPS, dense TF32 494.7 / BF16 989.4 "
        "TFLOPS, HBM3e 4.8 TB/s, NVLink 900 GB/s bidirectional = 450 GB/s per direction)",
        450e9,
    ),
    "A100": DevicePeak(
        "A100",
        MappingProxyType({"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12}),
        2.039e12,
        f"{_VENDOR}: NVIDIA A100 80GB SXM datasheet (FP32 19.5 TFLOPS, dense TF32 156 / BF16 312 "
        "TFLOPS, HBM2e 2,039 GB/s, NVLink 600 GB/s bidirectional = 300 GB/s per direction)",
        300e9,
    ),
}


_GOOGLE = "Google Cloud TPU documentation"
# Google gives bf16 and int8 per chip; a float32 matmul at JAX's default precision runs on the MXUs as one
# bfloat16 pass (that is why the TPU's float32 matmuls agree with float64 to about 3 digits), so its peak is
# the bf16 rate: a float32 program's roofline on a TPU is the default precision's (precision="highest" is
# several passes, slower). ICI: Google gives the bidirectional total of a chip's links; per direction, half.
TPU_PEAKS = {
    "TPU v4": DevicePeak(
        "TPU v4", MappingProxyType({"fp32": 275e12, "bf16": 275e12, "int8": 275e12}), 1200e9,
        f"{_GOOGLE}: TPU v4 (275 TFLOPs bf16 and int8 per chip, 32 GiB HBM2 at 1,200 GBps; fp32 at the default "
        "matmul precision runs as bf16)"),
    "TPU v5e": DevicePeak(
        "TPU v5e", MappingProxyType({"fp32": 197e12, "bf16": 197e12, "int8": 393e12}), 819e9,
        f"{_GOOGLE}: TPU v5e (197 TFLOPs bf16, 393 TOPs int8 per chip, 16 GB HBM2 at 819 GBps, ICI 1,600 Gbps "
        "= 100 GB/s per direction; fp32 at the default matmul precision runs as bf16)", 100e9),
    "TPU v5p": DevicePeak(
        "TPU v5p", MappingProxyType({"fp32": 459e12, "bf16": 459e12, "int8": 918e12}), 2765e9,
        f"{_GOOGLE}: TPU v5p (459 TFLOPs bf16, 918 TOPs int8 per chip, 95 GB HBM2e at 2,765 GBps, ICI 4,800 Gbps "
        "= 300 GB/s per direction; fp32 at the default matmul precision runs as bf16)", 300e9),
    "TPU v6e": DevicePeak(
        "TPU v6e", MappingProxyType({"fp32": 918e12, "bf16": 918e12, "int8": 1836e12}), 1640e9,
        f"{_GOOGLE}: TPU v6e Trillium (918 TFLOPs bf16, 1,836 TOPs int8 per chip, 32 GB HBM at 1,640 GBps, ICI "
        "3,584 Gbps = 224 GB/s per direction; fp32 at the default matmul precision runs as bf16)", 224e9),
}


# A TensorCore issues one VLIW bundle per cycle: its clock turns bundle counts and libtpu's cycle estimates into
# seconds. v4: 1,050 MHz (Jouppi et al., "TPU v4", ISCA 2023). v5e: Google gives no clock; its bf16 peak over its
# four 128x128 MXUs (one multiply-add, two flops, per cell per cycle) gives 197e12 / (4 * 128 * 128 * 2) = 1.50 GHz,
# and libtpu's estimate of a bf16 8192^3 matmul (9,557,312 cycles) against its measured 6.54 ms agrees (1.46 GHz).
TPU_CLOCKS = {"TPU v4": 1.05e9, "TPU v5e": 1.5e9}


def tpu_clock(device_kind: str) -> float | None:
    """The clock (Hz) of a TPU whose JAX ``device_kind`` is given, None where it is not known here."""
    found = tpu_generation(device_kind)
    return TPU_CLOCKS.get(f"TPU {found[0]}") if found else None


def spec_peak(platform: str, device_kind: str) -> DevicePeak | None:
    """The published peaks of a device of ``platform`` whose JAX ``device_kind`` is given ("TPU v5 lite",
    "NVIDIA H100 80GB HBM3"); None where no sheet is known (the CPU: measured instead)."""
    if platform == "tpu":
        found = tpu_generation(device_kind)
        return TPU_PEAKS.get(f"TPU {found[0]}") if found else None
    if platform in ("gpu", "cuda", "rocm"):
        return next((GPU_PEAKS[k] for k in GPU_PEAKS if k in device_kind), None)
    return None
