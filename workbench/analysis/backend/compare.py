"""What a change did to the TPU's kernels: two ``Kernels`` of one program (before a toggle and after, a golden and
now) side by side, fusion by fusion.

``KernelsChange(before, after)`` pairs the two tables' rows by instruction name (``Kernels.compare``): a fusion XLA
renamed counts as one gone and one new. It gives the table (``table()``: bundles, bundles issued per call and MXU
occupancy before and after), the totals a regression gate holds to (``totals``) and the change in words
(``words()``: "bundles 6,828 → 7,120 (+4.3%) in fusion.3, MXU 89% → 71%"). It reads the tables only, never the LLO:
a table saved in a ``.hlox`` (``SavedKernels``) compares as a dump's does.

The totals: ``bundles`` counts each kernel's bundles once (the code libtpu made; instructions that share a kernel
share its bundles), ``issued`` sums each instruction's bundles issued per call (what the TensorCore issues per run
of the program if it never waited), None where a loop's trip count is unknown on a side.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .kernels import Kernels

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KernelsChange", "KernelTotals", "kernel_totals"]

SHOWN = 3  # the fusions the words name before "and N more"


@dataclass(frozen=True)
class KernelTotals:
    """One side's totals (see the module's docstring): ``bundles`` (each kernel once), ``issued`` (per call, None
    where a trip count is unknown), ``fusions`` (instructions that run a kernel), ``kernels``."""

    bundles: int
    issued: int | None
    fusions: int
    kernels: int


def kernel_totals(k: Kernels) -> KernelTotals:
    """The totals of one side's table."""
    rows = k.table().to_dict("records")
    per_kernel = {r["kernel"]: int(r["bundles"]) for r in rows}
    issued = [r["issued"] for r in rows]
    known = all(_present(i) for i in issued)
    return KernelTotals(sum(per_kernel.values()), int(sum(issued)) if known else None, len(rows), len(per_kernel))


def _present(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _pct(v) -> str:
    return f"{v:.0%}" if _present(v) else "-"


def _growth(a: float, b: float) -> str:
    if a == b:
        return "0%"
    if not a:
        return "new"
    return f"{(b / a - 1) * 100:+.1f}%"


@dataclass(frozen=True)
class KernelsChange:
    """The kernels ``before`` and ``after`` (see the module's docstring)."""

    before: Kernels = field(repr=False)
    after: Kernels = field(repr=False)

    def table(self) -> "pd.DataFrame":
        """``Kernels.compare``: per instruction (present on either side) ``bundles_before/after``,
        ``issued_before/after``, ``mxu_before/after`` (None on the side without it)."""
        return self._table.copy()

    @cached_property
    def _table(self) -> "pd.DataFrame":
        return self.before.compare(self.after)

    @cached_property
    def totals(self) -> tuple[KernelTotals, KernelTotals]:
        """Each side's ``KernelTotals``."""
        return kernel_totals(self.before), kernel_totals(self.after)

    @cached_property
    def changed(self) -> list[dict]:
        """The rows of ``table()`` whose bundles, bundles issued or MXU occupancy (to the percent) differ, or that
        one side lacks; those on both sides first, the largest change in bundles first."""
        out = []
        for r in self._table.to_dict("records"):
            ba, bb = r["bundles_before"], r["bundles_after"]
            if not _present(ba) or not _present(bb):
                out.append(r)
                continue
            same_mxu = _pct(r["mxu_before"]) == _pct(r["mxu_after"])
            same_issued = (r["issued_before"] == r["issued_after"]
                           or not (_present(r["issued_before"]) or _present(r["issued_after"])))
            if ba != bb or not same_mxu or not same_issued:
                out.append(r)

        def size(r: dict) -> tuple[bool, float]:  # a fusion on both sides first: what the change did to it
            ba, bb = r["bundles_before"], r["bundles_after"]
            both = _present(ba) and _present(bb)
            return both, abs((bb if _present(bb) else 0) - (ba if _present(ba) else 0))

        return sorted(out, key=size, reverse=True)

    @property
    def unchanged(self) -> bool:
        return not self.changed

    def _fusion_words(self, r: dict) -> str:
        f, ba, bb = r["fusion"], r["bundles_before"], r["bundles_after"]
        if not _present(ba):
            return f"{f} new ({int(bb):,} bundles, MXU {_pct(r['mxu_after'])})"
        if not _present(bb):
            return f"{f} gone ({int(ba):,} bundles)"
        parts = []
        if ba != bb:
            parts.append(f"bundles {int(ba):,} → {int(bb):,} ({_growth(ba, bb)}) in {f}")
        else:
            parts.append(f"{f}")
        if _pct(r["mxu_before"]) != _pct(r["mxu_after"]):
            parts.append(f"MXU {_pct(r['mxu_before'])} → {_pct(r['mxu_after'])}")
        ia, ib = r["issued_before"], r["issued_after"]
        if ba == bb and ia != ib:
            parts.append(f"issued per call {_count(ia)} → {_count(ib)}")
        return ", ".join(parts)

    def words(self) -> str:
        """The change in one phrase: the totals, then the fusions that changed most."""
        ta, tb = self.totals
        if self.unchanged:
            return f"kernels unchanged ({ta.fusions} fusions, {ta.bundles:,} bundles)"
        head = f"kernels: bundles {ta.bundles:,} → {tb.bundles:,} ({_growth(ta.bundles, tb.bundles)})"
        if ta.issued is not None and tb.issued is not None and ta.issued != tb.issued:
            head += f", issued per call {ta.issued:,} → {tb.issued:,} ({_growth(ta.issued, tb.issued)})"
        if ta.fusions != tb.fusions:
            head += f", fusions {ta.fusions} → {tb.fusions}"
        shown = [self._fusion_words(r) for r in self.changed[:SHOWN]]
        more = len(self.changed) - SHOWN
        return head + "; " + "; ".join(shown) + (f" and {more} more fusion{'s' * (more != 1)} changed" if more > 0 else "")

    def __str__(self) -> str:
        return self.words()


def _count(v) -> str:
    return f"{int(v):,}" if _present(v) else "?"
