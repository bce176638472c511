"""The backend's own code per kernel: on a TPU, libtpu's LLO and bundles (``kernels.Kernels``)."""
from .kernels import KERNEL_COLUMNS, UNITS, Kernel, Kernels

__all__ = ["KERNEL_COLUMNS", "UNITS", "Kernel", "Kernels"]
