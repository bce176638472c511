"""The one way the workbench writes a number for people: the panel, its HTML and the report."""
from __future__ import annotations

import math

__all__ = ["num", "human_bytes", "signed_bytes"]


def num(x, digits: int = 3) -> str:
    """A number as the panel writes it: ``digits`` significant digits, scientific notation when
    |x| < 1e-3 or |x| >= 1e6 (so 3.06e-07 never reads 0.0), whole numbers without a fraction, exact 0 as 0."""
    if isinstance(x, bool):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return ""
    if x == 0:
        return "0"
    if math.isinf(x) or not 1e-3 <= abs(x) < 1e6:
        return f"{x:.{digits - 1}e}"
    if x.is_integer():
        return str(int(x))
    return f"{x:.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"


def human_bytes(n: int) -> str:
    """A count of bytes in the largest binary unit it reaches, one decimal: ``1.5 MiB``, ``512 B``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def signed_bytes(n: int) -> str:
    """A change in bytes with its sign: ``+512.0 KiB``, ``-16.0 MiB``."""
    return ("+" if n >= 0 else "-") + human_bytes(abs(n))
