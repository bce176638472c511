"""The kernels a ``.hlox`` kept: the table of ``Kernels.table()`` as it was when the file was saved, without the LLO.

``ex.save(path)`` after ``ex.backend()`` keeps each fusion's row (its bundles, bundles issued per call, slot
occupancy per unit, DMAs, HBM bytes, libtpu's estimate, the measured time, the verdict, the user's line) and the
chip's figures (device kind, clock, HBM bandwidth): a few KB, where the dump they came from is tens of MB. Loaded on
a machine without that TPU, ``ex.backend()`` gives a ``SavedKernels``: ``table()``, ``row()``, ``compare()`` and
``for_line()`` answer from the kept rows; ``kernel(name)`` and ``stage(name)`` say that the file keeps the table,
not the LLO, and how to read a dump (``ex.backend(dump=folder)``).

What it does not promise: ``for_line`` knows only each fusion's first line (the table's ``line``), not every line
whose instructions went into it; a measured time taken after loading (``ex.profile()`` on the TPU) replaces the
saved one and the verdict is made again, a saved row is otherwise as it was written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UnknownNameError, WorkbenchError
from ...ir.llo import LloIndex
from .kernels import KERNEL_COLUMNS, Kernels

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SavedKernels", "NoLloError"]


class NoLloError(WorkbenchError):
    """What a saved kernel table cannot give: a kernel's LLO, its passes or its bundles."""


class SavedKernels(Kernels):
    """The kernel table a ``.hlox`` kept (see the module's docstring): ``available`` True, ``source`` the file it
    was read from; ``rows`` the saved rows (dicts with ``KERNEL_COLUMNS``) in the table's order."""

    def __init__(self, rows: list[dict], *, source: str, device_kind: str = "", clock_hz: float | None = None,
                 hbm_bytes_per_s: float | None = None):
        super().__init__(LloIndex(), None, device_kind=device_kind, clock_hz=clock_hz,
                         hbm_bytes_per_s=hbm_bytes_per_s)
        self.why = ""
        self.source = source
        self.rows = [{c: r.get(c) for c in KERNEL_COLUMNS} for r in rows]
        self._by_fusion = {r["fusion"]: r for r in self.rows}

    @property
    def available(self) -> bool:
        return True

    def __repr__(self) -> str:
        kernels = len({r["kernel"] for r in self.rows})
        return (f"<Kernels (the table saved in {self.source}): {kernels} kernels for {len(self.rows)} instructions"
                f"{', ' + self.device_kind if self.device_kind else ''}; no LLO>")

    def _no_llo(self, what: str) -> NoLloError:
        return NoLloError(f"{what}: {self.source} keeps the kernel table (bundles, occupancy, DMAs per fusion), not "
                          "the LLO. Read the dump libtpu wrote for this program with ex.backend(dump=folder), or "
                          "call ex.backend() on the TPU")

    def kernel(self, name: str):
        """Not kept: a NoLloError says so (the table's rows are ``row(name)``)."""
        name = name.lstrip("%")
        if name not in self._by_fusion and name not in {r["kernel"] for r in self.rows}:
            raise UnknownNameError("kernel", name, list(self._by_fusion))
        raise self._no_llo(f"the LLO and bundles of {name}")

    def stage(self, name: str):
        """Not kept: a NoLloError says so."""
        raise self._no_llo(f"the LLO stage {name}")

    def row(self, fusion: str) -> dict:
        """The saved row of one entry instruction, with the measured time of a profile taken since, if any."""
        fusion = fusion.lstrip("%")
        saved = self._by_fusion.get(fusion)
        if saved is None:
            raise UnknownNameError("fusion", fusion, list(self._by_fusion))
        row = dict(saved)
        if fusion in self.measured:
            row["measured_us"] = self.measured[fusion]
            row["bound"] = self._bound(row)
        return row

    def table(self) -> "pd.DataFrame":
        """The saved rows (``KERNEL_COLUMNS``), the most issued bundles first (the measured time first where a
        profile gave one), as ``Kernels.table()`` orders them."""
        import pandas as pd

        df = pd.DataFrame([self.row(f) for f in self._by_fusion], columns=list(KERNEL_COLUMNS))
        if df.empty:
            return df
        key = df["measured_us"].where(df["measured_us"].notna(), df["issued"].fillna(0) / 1e6)
        return df.assign(_key=key).sort_values("_key", ascending=False, kind="stable").drop(columns="_key").reset_index(drop=True)

    def for_line(self, line: str) -> list[str]:
        """The entry instructions whose first line (the table's ``line``) is ``line`` or ends with it: a saved table
        keeps one line per fusion, not all of them."""
        line = line.strip()
        return [f for f, r in self._by_fusion.items() if r["line"] and (r["line"] == line or r["line"].endswith(line))]
