"""Element types by name: one table of the array element types the compilers use, spelled three ways.

A type has numpy's name ("float32", "bfloat16", "float8_e4m3fn", "int4", "bool"; ml_dtypes adds the
narrow ones), MLIR's ("f32", "bf16", "f8E4M3FN", "i4", "i1", "ui8", "complex<f32>") and XLA HLO's
("f32", "bf16", "f8e4m3fn", "s4", "pred", "u8", "c64"). No spelling means two different types, so one
lookup takes any of them: ``element_dtype``, ``element_bytes``, ``element_bits``, ``mantissa_bits``,
``machine_eps``, ``mlir_spelling``; each raises TypeError naming a type it does not know.

Only the list of numpy names is written here: the MLIR and HLO spellings follow from the name by the
rules those projects use (tests/test_dtypes.py checks them against jaxlib's MLIR and JAX's HLO), and
sizes and mantissas come from ml_dtypes. The one type without a numpy dtype is MLIR's ``tf32``, a
compute format (float32's exponent, float16's mantissa) that no array is stored in.

numpy's ``.npy`` format keeps an ml_dtypes array as raw bytes (a void dtype such as ``|V2``), so an
array read back from a file needs its type's name to be itself again: ``with_dtype``.
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["ElementType", "element_bits", "element_bytes", "element_dtype", "element_type_named", "float_with_mantissa",
           "machine_eps", "mantissa_bits", "mlir_spelling", "numpy_dtype", "with_dtype"]

# The element types JAX and XLA have, by numpy's name, in the order a type is chosen by its mantissa
# alone (``float_with_mantissa``): the common ones first. ml_dtypes' int1/uint1 are left out: MLIR's
# i1 is numpy's bool.
_NUMPY_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "int2", "int4", "uint2", "uint4",
                "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                "float8_e4m3", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "float8_e3m4",
                "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
                "complex64", "complex128")
_MINIFLOAT = re.compile(r"float(\d+)_(e\d+m\d+)(\w*)")  # ml_dtypes' float8_e4m3fn: MLIR's f8E4M3FN


@dataclass(frozen=True)
class ElementType:
    """One element type: its three spellings (None where a project has none), its width in bits, and
    for a floating type (or a complex one's parts) the mantissa bits it stores."""

    numpy: str | None
    mlir: str
    hlo: str | None
    bits: int
    mantissa: int | None = None

    @property
    def dtype(self) -> np.dtype:
        if self.numpy is None:
            raise TypeError(f"{self.mlir} is a compute format with no numpy dtype (arrays are not stored in it)")
        return numpy_dtype(self.numpy)


def _spellings(name: str) -> tuple[str, str]:
    """(MLIR's, XLA HLO's) spelling of the type numpy names ``name``."""
    if name == "bool":
        return "i1", "pred"
    if name == "bfloat16":
        return "bf16", "bf16"
    if m := re.fullmatch(r"(u?)int(\d+)", name):
        return f"{m[1]}i{m[2]}", f"{m[1] or 's'}{m[2]}"
    if m := re.fullmatch(r"float(\d+)", name):
        return f"f{m[1]}", f"f{m[1]}"
    if m := re.fullmatch(r"complex(\d+)", name):
        return f"complex<f{int(m[1]) // 2}>", f"c{m[1]}"
    m = _MINIFLOAT.fullmatch(name)
    mlir = f"f{m[1]}{m[2].upper()}{m[3].upper()}"
    return mlir, mlir.lower()


def _described(name: str) -> ElementType:
    import ml_dtypes

    mlir, hlo = _spellings(name)
    dt = numpy_dtype(name)
    if name == "bool":
        return ElementType(name, mlir, hlo, 1)
    if name.startswith(("int", "uint")):
        return ElementType(name, mlir, hlo, ml_dtypes.iinfo(dt).bits)
    return ElementType(name, mlir, hlo, 8 * dt.itemsize if name.startswith("complex") else ml_dtypes.finfo(dt).bits,
                       ml_dtypes.finfo(dt).nmant)


@functools.cache
def _by_spelling() -> dict[str, ElementType]:
    tf32 = ElementType(None, "tf32", None, 19, 10)  # MLIR's TF32Type: 1 sign, 8 exponent, 10 mantissa bits
    types = [_described(n) for n in _NUMPY_NAMES] + [tf32]
    return {s: t for t in types for s in (t.numpy, t.mlir, t.hlo) if s is not None}


def element_type_named(name: str) -> ElementType:
    """The element type spelled ``name`` by MLIR, XLA HLO or numpy; TypeError naming it when none is."""
    known = _by_spelling()
    if isinstance(name, str) and name in known:
        return known[name]
    close = difflib.get_close_matches(str(name), known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise TypeError(f"no element type is spelled {name!r} in MLIR, XLA HLO or numpy{hint}")


def element_dtype(name: str) -> np.dtype:
    """The numpy dtype of the element type ``name`` ("f32", "bf16", "f8E4M3FN", "pred", "s32", "ui8",
    "complex<f32>", "c64", "float32"); TypeError for an unknown name or for tf32, which has none."""
    return element_type_named(name).dtype


def element_bytes(name: str) -> int:
    """Bytes one element of ``name`` takes in an array: numpy's itemsize, so a sub-byte type (int4,
    float4_e2m1fn, pred) counts one byte, as XLA stores it unpacked; TypeError as ``element_dtype``."""
    return element_dtype(name).itemsize


def element_bits(name: str) -> int:
    """The width of ``name`` in bits: 4 for int4 and float4_e2m1fn, 1 for pred (i1), 19 for tf32."""
    return element_type_named(name).bits


def mantissa_bits(name: str) -> int:
    """The explicit mantissa bits of a floating type (23 for f32, 7 for bf16; a complex type's parts');
    TypeError for an integer or boolean type."""
    t = element_type_named(name)
    if t.mantissa is None:
        raise TypeError(f"{name} is not a floating-point type: it has no mantissa")
    return t.mantissa


def machine_eps(name: str) -> float:
    """The gap between 1 and the next value of a floating type: 2**-mantissa_bits(name)."""
    return 2.0 ** -mantissa_bits(name)


def mlir_spelling(name: str) -> str:
    """How MLIR writes the element type ``name`` ("float32" -> "f32", "bool" -> "i1", "s8" -> "i8")."""
    return element_type_named(name).mlir


def float_with_mantissa(bits: int) -> str | None:
    """numpy's name of the first floating type in the table (float64, float32, float16, bfloat16,
    float8_e4m3fn, float8_e5m2, ...) that stores ``bits`` mantissa bits; None when none does."""
    floats = (n for n in _NUMPY_NAMES if not n.startswith("complex"))
    return next((n for n in floats if element_type_named(n).mantissa == bits), None)


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
