"""How many bytes of arrays the workbench may make, place or write for a module's shapes, and the
check that refuses more before anything is allocated.

A module declares its shapes in a few characters: ``tensor<100000x100000xf32>`` is 40 GB. Arrays the
workbench makes for such shapes in the notebook's process -- the seeded example arguments of a text
module, a run's outputs, the float64 copies of the numeric check, the inputs a reproducer or a
multi-process run writes -- can end that process: XLA's CPU client aborts on a buffer whose
allocation failed (``Check failed: buffer_.IsConcrete()``, measured through ``np.asarray`` of the
example arguments), and an allocation the kernel overcommits ends in the out-of-memory killer.
Neither can be caught, so the sizes are checked first, from shapes and dtypes alone, and
``ArrayTooLargeError`` says which array, its shape, its bytes and the limit.

The limit is the smaller of ``ARRAY_BYTES_CAP`` and ``MEMORY_FRACTION`` of the memory the operating
system says is available now (``/proc/meminfo``'s MemAvailable; the physical memory from
``os.sysconf`` where that file is missing), read at each check. Both are module constants a user may
change. Compiling for such shapes allocates nothing and is not limited here.

``write_npz`` writes arrays to an ``.npz`` file (numpy's format, no pickle) in 16 MiB pieces, after
checking their logical size against the limit and the disk's free space, under a temporary name that
becomes the file only when complete: an interrupted or failed write leaves no half file.
"""
from __future__ import annotations

import math
import os
import secrets
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import ArrayTooLargeError

__all__ = ["ARRAY_BYTES_CAP", "MEMORY_FRACTION", "ArrayTooLargeError", "Planned", "array_limit", "refuse_large",
           "nbytes", "write_npz"]

ARRAY_BYTES_CAP = 4 * 2**30  # 4 GiB: at most this many bytes of arrays for one action
MEMORY_FRACTION = 0.25  # at most this share of the memory available when the action starts




@dataclass(frozen=True)
class Planned:
    """An array about to be made, placed or written: what it is to the user, its shape and dtype."""

    what: str
    shape: tuple
    dtype: Any
    copies: int = 1  # arrays of this shape made at once (working copies, one per repeated run)

    @property
    def nbytes(self) -> int:
        return nbytes(self.shape, self.dtype) * self.copies


def nbytes(shape, dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype`` (Python integers: no overflow at any size). A
    dtype numpy does not know (JAX's PRNG key types) counts by its own ``itemsize``, else 8."""
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:
        itemsize = int(getattr(dtype, "itemsize", 8) or 8)
    return math.prod(int(d) for d in shape) * itemsize


def _available() -> tuple[int | None, str]:
    """(bytes of memory available now, where that number comes from); (None, "") when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "physical"
    except (ValueError, OSError, AttributeError):
        return None, ""


def _limit() -> tuple[int, str]:
    """(the limit now, how it was set), from one reading of the memory."""
    memory, kind = _available()
    cap = int(ARRAY_BYTES_CAP)
    limit = cap if memory is None else max(0, min(cap, int(memory * MEMORY_FRACTION)))
    share = f"{MEMORY_FRACTION:g} of the {memory:,} bytes of {kind} memory" if memory else "the memory (unknown)"
    return limit, (f"the workbench's limit of {limit:,} bytes (the smaller of {cap:,} bytes, "
                   f"workbench.pipeline.array_limit.ARRAY_BYTES_CAP, and {share})")


def array_limit() -> int:
    """The most bytes of arrays one action may make or write now (see the module's docstring)."""
    return _limit()[0]


def refuse_large(planned: Iterable[Planned], doing: str, hint: str = "", limit: int | None = None,
                 limit_said: str = "") -> int:
    """Raise ArrayTooLargeError when an array of ``planned``, or all of them up to it together, take
    more than ``limit`` bytes (default ``array_limit()``; ``limit_said`` describes another one); else
    return their total. ``doing`` says what would make them ("ex.run would make the seeded example
    arguments of @main"), ``hint`` what to do instead. Only shapes and dtypes are read: nothing is
    allocated."""
    limit, said = _limit() if limit is None else (int(limit), limit_said)
    total = 0
    for p in planned:
        size = p.nbytes
        total += size
        if total <= limit:
            continue
        dtype = str(np.dtype(p.dtype)) if _numpy_dtype(p.dtype) else str(p.dtype)
        shape = tuple(int(d) for d in p.shape)
        together = "" if total == size else f" ({total:,} bytes with the arrays before it)"
        copies = f" as {p.copies} arrays" if p.copies != 1 else ""
        raise ArrayTooLargeError(
            f"{doing}: {p.what}, {dtype}{list(shape)}, would take {size:,} bytes{copies}{together}, more than "
            f"{said}. Nothing was allocated or written." + (f" {hint}" if hint else ""),
            p.what, shape, dtype, size, total, limit)
    return total


def _numpy_dtype(dtype) -> bool:
    try:
        np.dtype(dtype)
        return True
    except TypeError:
        return False


def write_npz(path, arrays: dict[str, np.ndarray], doing: str, hint: str = "") -> int:
    """Write ``arrays`` (name -> numpy array) as an uncompressed ``.npz`` at ``path``, streamed in
    numpy's 16 MiB pieces (a zero-stride view is never expanded in memory), and return the bytes of
    the file. ArrayTooLargeError, before anything is written, when their logical size passes
    ``array_limit()`` or the free space of the disk; any failure while writing removes the
    partial file (it is written under a temporary name, renamed when complete)."""
    path = Path(path)
    planned = [Planned(f"array {name!r}", a.shape, a.dtype) for name, a in arrays.items()]
    total = refuse_large(planned, doing, hint)
    free = shutil.disk_usage(path.parent).free
    if total > free:
        refuse_large(planned, doing, hint, limit=free, limit_said=f"the {free:,} bytes free on the disk of {path.parent}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    try:
        with open(tmp, "xb") as f, zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            for name, a in arrays.items():
                with z.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path.stat().st_size
