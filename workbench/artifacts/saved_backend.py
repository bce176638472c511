"""The kernel table a ``.hlox`` keeps when saved after ``ex.backend()``: the manifest's ``backend``
(``manifest.BACKEND``), read back by ``wb.load`` as a ``SavedKernels`` (``analysis/backend/saved.py``).

It holds ``Kernels.table()``'s rows (no LLO text: the dump is tens of MB, the table a few KB), the chip's figures
that the verdicts are made with (``device_kind``, ``clock_hz``, ``hbm_bytes_per_s``) and its own ``format``
(``FORMAT``). The writer checks it with the rest of the manifest. The reader checks it apart from the rest: a
damaged or newer table costs only itself -- the file loads, and ``ex.backend()`` says why it has no table
(``unreadable``: a ``Kernels`` with ``available`` False and ``why`` in words).
"""
from __future__ import annotations

import math
import warnings

from ..analysis.backend import KERNEL_COLUMNS, Kernels, SavedKernels
from .manifest import BACKEND, ManifestError, check

__all__ = ["FORMAT", "backend_json", "backend_from"]

FORMAT = 1  # the table's own format: a reader of this one refuses (only) the table of a newer one
_INTS = ("bundles", "issued", "dmas", "hbm_bytes", "estimated_cycles")
_STRS = ("fusion", "kernel", "opcode", "bound", "line")
_NUMBERS = tuple(c for c in KERNEL_COLUMNS if c not in _INTS and c not in _STRS)
_UNITS = ("MXU", "XLU", "VALU", "VPOP", "EUP", "VLOAD", "VSTORE", "SALU")  # a unit a kernel lacks: NaN, as Kernels has it


def _cell(column: str, v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if column in _INTS:
        return int(v)
    if column in _STRS:
        return str(v)
    return float(v)


def backend_json(kernels: Kernels | None) -> dict | None:
    """The manifest's ``backend`` of ``kernels`` (None where there are none to keep), checked as the reader checks
    it: a table that would not read back is not written (a warning says why), and the file is saved without it."""
    if kernels is None or not kernels.available:
        return None
    out = _table_json(kernels)
    try:
        check(BACKEND, out, "backend")
        _checked_rows(out["table"])
    except ManifestError as e:
        warnings.warn(f"the kernel table is not saved: it would not read back ({e})", stacklevel=3)
        return None
    return out


def _table_json(kernels: Kernels) -> dict:
    rows = kernels.table().to_dict("records")
    return {"format": FORMAT, "device_kind": kernels.device_kind or "",
            "clock_hz": None if kernels.clock_hz is None else float(kernels.clock_hz),
            "hbm_bytes_per_s": None if kernels.hbm_bytes_per_s is None else float(kernels.hbm_bytes_per_s),
            "table": {"columns": list(KERNEL_COLUMNS), "rows": [[_cell(c, r[c]) for c in KERNEL_COLUMNS] for r in rows]}}


def _checked_rows(table: dict) -> list[dict]:
    """The rows as dicts, each cell of the type its column has; ManifestError naming the first wrong one."""
    columns = table["columns"]
    missing = [c for c in KERNEL_COLUMNS if c not in columns]
    if missing:
        raise ManifestError("backend.table.columns", f"lacks {', '.join(missing)}")
    out = []
    for i, row in enumerate(table["rows"]):
        if len(row) != len(columns):
            raise ManifestError(f"backend.table.rows[{i}]", f"expected {len(columns)} cells, got {len(row)}")
        r = dict(zip(columns, row))
        for c in KERNEL_COLUMNS:
            v, at = r[c], f"backend.table.rows[{i}].{c}"
            if c in _STRS:
                if not isinstance(v, str) or (c in ("fusion", "kernel") and not v):
                    raise ManifestError(at, f"expected {'a name' if c in ('fusion', 'kernel') else 'a string'}, "
                                        f"got {v!r:.40}")
            elif v is None:
                if c == "bundles":
                    raise ManifestError(at, "expected a count of bundles, got null")
                r[c] = math.nan if c in _UNITS else None
            elif type(v) not in ((int,) if c in _INTS else (int, float)) or (c in _INTS and v < 0):
                raise ManifestError(at, f"expected {'a count' if c in _INTS else 'a number'}, got {v!r:.40}")
        out.append({c: r[c] for c in KERNEL_COLUMNS})
    names = [r["fusion"] for r in out]
    if len(set(names)) != len(names):
        raise ManifestError("backend.table.rows", "names a fusion twice")
    return out


def unreadable(source: str, why: str) -> Kernels:
    """The Kernels of a file whose table cannot be read: none, and why."""
    from ..ir.llo import LloIndex

    return Kernels(LloIndex(), None, why=f"{source} keeps a kernel table that cannot be read ({why}); the rest of the "
                   "file loaded. ex.backend(dump=folder) reads a dump of this program's LLO, or call ex.backend() on "
                   "the TPU")


def backend_from(saved, source: str) -> Kernels | None:
    """The kernels a file's manifest kept (``saved``: its ``backend``, unchecked; None where it has none):
    a ``SavedKernels``, or, where the table is damaged or of a newer format, an unavailable ``Kernels`` whose
    ``why`` says so. Never raises: nothing else of the file depends on it."""
    if saved is None:
        return None
    if isinstance(saved, dict) and type(saved.get("format")) is int and saved["format"] > FORMAT:
        return unreadable(source, f"its format is {saved['format']}, this hlo-workbench reads {FORMAT} and older: "
                          "upgrade hlo-workbench to read it")
    try:
        check(BACKEND, saved, "backend")
        rows = _checked_rows(saved["table"])
    except ManifestError as e:
        return unreadable(source, f"corrupt: {e}")
    return SavedKernels(rows, source=source, device_kind=saved["device_kind"], clock_hz=saved["clock_hz"],
                        hbm_bytes_per_s=saved["hbm_bytes_per_s"])
