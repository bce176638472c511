"""Element types by name: numpy's own and those ml_dtypes adds (bfloat16, the float8 and int4 kinds).

numpy's ``.npy`` format keeps an ml_dtypes array as raw bytes (a void dtype such as ``|V2``), so an
array read back from a file needs its type's name to be itself again: ``with_dtype``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["numpy_dtype", "with_dtype"]


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype named ``name`` ("float32", "bfloat16", "float8_e4m3fn", "int4", "bool"); TypeError
    for a name neither numpy nor ml_dtypes knows."""
    import ml_dtypes

    extra = getattr(ml_dtypes, name, None)
    try:
        return np.dtype(extra if isinstance(extra, type) else name)
    except TypeError:
        raise TypeError(f"no element type is named {name!r}") from None


def with_dtype(a: np.ndarray, name: str) -> np.ndarray:
    """``a`` as the type named ``name``: viewed, without a copy, when ``a`` holds that type's raw bytes
    (numpy's files keep bfloat16 and float8 as void); TypeError when it holds anything else."""
    if str(a.dtype) == name:
        return a
    wanted = numpy_dtype(name)
    if a.dtype.kind == "V" and a.dtype.itemsize == wanted.itemsize:
        return a.view(wanted)
    raise TypeError(f"an array of {a.dtype} is not one of {name}")
