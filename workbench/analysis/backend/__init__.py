"""The backend's own code per kernel: on a TPU, libtpu's LLO and bundles (``kernels.Kernels``); the table a ``.hlox``
kept of them (``saved.SavedKernels``); two programs' kernels side by side (``compare.KernelsChange``)."""
from .compare import KernelsChange, KernelTotals, kernel_totals
from .kernels import KERNEL_COLUMNS, UNITS, Kernel, Kernels
from .saved import NoLloError, SavedKernels

__all__ = ["KERNEL_COLUMNS", "UNITS", "Kernel", "Kernels", "KernelsChange", "KernelTotals", "kernel_totals",
           "NoLloError", "SavedKernels"]
