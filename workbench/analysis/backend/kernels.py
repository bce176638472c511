"""The TPU's kernels of one compile, read from libtpu's LLO dump: what each fusion became, bundle by bundle.

``Kernels`` (``Exploration.backend()``) holds the dump's index and reads files only when asked, each in one pass:

* ``table()``: one row per HLO instruction of the entry computation that calls a kernel (libtpu compiles equal
  instructions once: ``kernel`` names the one it runs), with its bundles, the bundles it issues per call
  (loop bodies counted once per trip), each unit's slot occupancy over those, its DMAs, the bytes of its
  operands and results in HBM, libtpu's own estimate of its cycles, its measured time where a profile of the
  exploration was taken, and a verdict: ``bound``. Reading it opens each kernel's final bundles and slot usage
  (a few per cent of a dump), never the LLO of its passes;
* ``kernel(name)`` -> ``Kernel``: its LLO after each pass that changed it, as Stages (``stages()``, ``stage(pass)``),
  its bundles (``bundle_table()``, ``bundles_text``), and the user's lines it came from;
* ``for_line(line)``: the rows of the kernels a user's line put instructions into (the vertical slice).

The verdict ("bundle roofline"): a TensorCore issues one bundle per cycle, so the bundles a kernel issues per
call are its time if it never waited. Against its time -- measured, else libtpu's estimate -- a kernel that
issues for most of it is bound by its busiest unit ("MXU-bound" where the matrix units' slots are mostly
full, else "issue-bound"); one that mostly waits is "DMA-bound" where moving its HBM bytes at the chip's
bandwidth accounts for the wait, else "latency-bound" (small transfers and fixed costs).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from ...errors import UnknownNameError
from ...ir.hlo import read_hlo
from ...ir.llo import (TOP_LEVEL, Bundles, LloIndex, Utilization, llo_passes, main_memory_bytes, read_bundles,
                       read_dedup_map, read_estimates, read_fingerprints, read_utilization)
from ...stages import Stage
from ..numbers import human_bytes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Kernel", "Kernels", "KERNEL_COLUMNS", "UNITS"]

# the units of a TPU v5e's bundles, as libtpu's slot-usage files name them, with what each is
UNITS = {"MXU": "matrix units (matmuls)", "XLU": "transpose and cross-lane units", "VALU": "vector ALUs (the VPU)",
         "VPOP": "vector result pops (from the MXU and XLU)", "EUP": "transcendental unit (exp, rsqrt ...)",
         "VLOAD": "vector loads from VMEM", "VLOAD:FILL": "vector loads refilling spilled registers",
         "VSTORE": "vector stores to VMEM", "VSTORE:SPILL": "vector stores spilling registers",
         "SALU": "scalar ALUs (addresses, loop counters)"}
KERNEL_COLUMNS = ("fusion", "kernel", "opcode", "bundles", "issued", "MXU", "XLU", "VALU", "VPOP", "EUP", "VLOAD",
                  "VSTORE", "SALU", "dmas", "hbm_bytes", "estimated_cycles", "issue_us", "estimated_us",
                  "measured_us", "bound", "line")
_CACHE = 8  # kernels whose bundles are kept parsed at once
_CALLS_KERNEL = ("fusion", "custom-call", "convolution", "dot", "reduce", "sort", "scatter", "gather")


class Kernel:
    """One kernel of the dump: ``name`` (libtpu's, an HLO instruction's), the ``fusions`` that run it, its bundles
    (``bundles``: how many; ``issued``: per call, loop bodies once per trip, None where a trip count is not
    a constant), ``occupancy`` (unit -> share of its slots used over the issued bundles; over the bundles once
    each where trips are unknown) and ``static_occupancy`` (each bundle once), ``dmas`` ({direction: count}),
    its passes (``stages()``) and its bundles as a table (``bundle_table()``)."""

    def __init__(self, kernels: "Kernels", name: str):
        self._k = kernels
        self.name = name

    def __repr__(self) -> str:
        occ = ", ".join(f"{u} {v:.0%}" for u, v in self.occupancy.items() if v >= 0.05)
        return f"<Kernel {self.name}: {len(self._bundles.bundles):,} bundles, {self.issued or '?'} issued per call; {occ}>"

    @property
    def fusions(self) -> list[str]:
        return [f for f, k in self._k._kernel_of.items() if k == self.name]

    @property
    def _bundles(self) -> Bundles:
        return self._k._parsed(self.name)[0]

    @property
    def _utilization(self) -> Utilization:
        return self._k._parsed(self.name)[1]

    @property
    def _summary(self) -> dict:
        return self._k._summary(self.name)

    @property
    def bundles(self) -> int:
        return self._summary["bundles"]

    @property
    def issued(self) -> int | None:
        return self._summary["issued"]

    @property
    def occupancy(self) -> dict[str, float]:
        return self._summary["occupancy"]

    @property
    def static_occupancy(self) -> dict[str, float]:
        return self._summary["static_occupancy"]

    @property
    def dmas(self) -> dict[str, int]:
        return self._summary["dmas"]

    @property
    def bundles_text(self) -> str:
        """The final bundles as libtpu printed them."""
        f = self._k.index.find(self.name, "final_bundles")
        return self._k._read(f.name) if f else ""

    def passes(self) -> list[tuple[str, bool]]:
        """``[(stage name, changed)]``: every LLO pass file of the kernel in order, with whether the pass changed
        the LLO (by libtpu's fingerprints; a file the fingerprints do not cover counts as changed)."""
        return [(name, changed) for name, _, changed in self._passes]

    @cached_property
    def _passes(self) -> list[tuple[str, str, bool]]:
        files = self._k.index.components.get(self.name, ())
        fp = self._k.index.find(self.name, "fingerprints")
        prints = read_fingerprints(self._k._read(fp.name)) if fp else None
        seen: dict[str, int] = {}
        out = []
        for f, changed in llo_passes(files, prints):
            seen[f.what] = seen.get(f.what, 0) + 1
            label = f.what if seen[f.what] == 1 else f"{f.what}#{seen[f.what]}"
            out.append((f"backend:llo:{self.name}:{label}", f.name, changed))
        return out

    def stages(self, changed_only: bool = True) -> list[Stage]:
        """The kernel's LLO after each pass (``changed_only``: those that changed it) and its final bundles, as
        Stages in libtpu's order (group "backend"; each text read when the Stage is made)."""
        out: list[Stage] = []
        parent = "xla:optimized"
        for name, file, changed in self._passes:
            if changed_only and not changed and not file.endswith("final_bundles.txt"):
                continue
            what = name.rsplit(":", 1)[1]
            out.append(Stage(name, "backend", self._k._read(file), f"libtpu LLO pass {what.split('#')[0]}",
                             changed, None, parent))
            parent = name
        return out

    def stage(self, name: str) -> Stage:
        """The Stage of one pass (``post-GVN``, ``post-cssa#2``, ``final_bundles``, or the whole stage name)."""
        for full, file, changed in self._passes:
            if name in (full, full.rsplit(":", 1)[1]):
                at = [p[0] for p in self._passes].index(full)
                parent = self._passes[at - 1][0] if at else "xla:optimized"
                what = full.rsplit(":", 1)[1]
                return Stage(full, "backend", self._k._read(file), f"libtpu LLO pass {what.split('#')[0]}", changed,
                             None, parent)
        raise UnknownNameError("LLO pass", name, [p[0].rsplit(":", 1)[1] for p in self._passes])

    def bundle_table(self, limit: int | None = None) -> "pd.DataFrame":
        """One row per bundle: ``address``, ``loops`` (how many it is in), ``runs`` (per call, None unknown), the
        slots it uses per unit, ``ops`` (its opcodes) and ``calls`` (the HLO instruction a top-level bundle
        calls)."""
        import pandas as pd

        b, u = self._bundles, self._utilization
        rows = []
        for i, bundle in enumerate(b.bundles[:limit]):
            row = {"address": bundle.address, "loops": bundle.depth, "runs": b.trips[i]}
            used = u.rows[i] if i < len(u.rows) else ()
            for j, unit in enumerate(u.units):
                row[unit] = used[j] if j < len(used) else 0
            row["ops"] = " ".join(bundle.ops)
            row["calls"] = bundle.calls
            rows.append(row)
        return pd.DataFrame(rows)

    def lines(self) -> list[str]:
        """The user's lines its fusions' instructions came from, most instructions first."""
        return self._k._lines_of_kernel(self.name)


class Kernels:
    """The kernels of one compile's LLO dump (see the module's docstring). ``available``: whether there is a
    dump; ``why``: why not, in words; ``files_read``: the dump's files read so far (names), ``bytes_read``."""

    def __init__(self, index: LloIndex, read: Callable[[str], str] | None, *, why: str = "", device_kind: str = "",
                 clock_hz: float | None = None, hbm_bytes_per_s: float | None = None, measured: dict | None = None,
                 mlir: Stage | None = None, seconds: float = 0.0, folder: str | None = None):
        self.index = index
        self._reader = read
        self.why = why if not index else ""
        self.device_kind = device_kind
        self.clock_hz = clock_hz
        self.hbm_bytes_per_s = hbm_bytes_per_s
        self.measured = dict(measured or {})  # {HLO instruction: measured us per call}
        self.mlir = mlir
        self.seconds = seconds
        self.folder = folder
        self.files_read: list[str] = []
        self.bytes_read = 0
        self._cache: OrderedDict[str, tuple[Bundles, Utilization]] = OrderedDict()
        self._summaries: dict[str, dict] = {}

    @property
    def available(self) -> bool:
        return bool(self.index)

    def __repr__(self) -> str:
        if not self.available:
            return f"<Kernels: none ({self.why})>"
        return (f"<Kernels: {len(self.index.kernels)} kernels for {len(self._kernel_of)} instructions, "
                f"{self.index.files:,} files ({human_bytes(self.index.total_bytes)}) in the dump>")

    def _repr_html_(self) -> str:
        import html

        if not self.available:
            return f"<p><b>No TPU kernels</b>: {html.escape(self.why)}</p>"
        cols = ["fusion", "kernel", "bundles", "issued", "MXU", "VALU", "XLU", "measured_us", "estimated_us", "bound",
                "line"]
        table = self.table()[cols].head(40)
        fmt = {u: "{:.0%}".format for u in ("MXU", "VALU", "XLU")}
        head = (f"<p><b>{len(self._kernel_of)} fusions</b> in {len(self.index.kernels)} kernels"
                f"{' on a ' + html.escape(self.device_kind) if self.device_kind else ''}; the busiest first"
                f"{' (of ' + str(len(self._kernel_of)) + ')' if len(self._kernel_of) > 40 else ''}</p>")
        return head + table.to_html(index=False, formatters=fmt, na_rep="")

    def _read(self, name: str) -> str:
        if self._reader is None:
            return ""
        text = self._reader(name)
        self.files_read.append(name)
        self.bytes_read += len(text)
        return text

    def _summary(self, kernel: str) -> dict:
        """A kernel's numbers (bundles, issued, occupancies, DMAs), kept once computed: the table needs them for
        every kernel, the parsed bundles only for the one opened."""
        if kernel not in self._summaries:
            b, u = self._parsed(kernel)
            dmas: dict[str, int] = {}
            for direction, _ in b.dmas:
                dmas[direction] = dmas.get(direction, 0) + 1
            self._summaries[kernel] = {"bundles": len(b.bundles), "issued": b.executed,
                                       "occupancy": _occupancy(b, u, True), "static_occupancy": _occupancy(b, u, False),
                                       "dmas": dmas}
        return self._summaries[kernel]

    def _parsed(self, kernel: str) -> tuple[Bundles, Utilization]:
        if kernel in self._cache:
            self._cache.move_to_end(kernel)
            return self._cache[kernel]
        fb = self.index.find(kernel, "final_bundles")
        fu = self.index.find(kernel, "final_hlo-static-per-bundle-utilization")
        bundles = read_bundles(self._read(fb.name)) if fb else Bundles((), (), ())
        util = read_utilization(self._read(fu.name)) if fu else Utilization((), (), ())
        self._cache[kernel] = (bundles, util)
        while len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return bundles, util

    # -- the top-level program: which instruction runs which kernel --------------------------------------
    @cached_property
    def _module(self):
        return read_hlo(self._read(self.index.hlo)) if self.index.hlo else None

    @cached_property
    def module_stage(self) -> Stage | None:
        """The HLO module libtpu made the kernels from, as a Stage (its lines are the kernels' lines)."""
        if not self.index.hlo:
            return None
        text = self._read(self.index.hlo)
        return Stage("backend:llo-module", "backend", text, "libtpu's HLO module for its LLO", False, None,
                     "xla:optimized")

    @cached_property
    def _kernel_of(self) -> dict[str, str]:
        """{entry instruction: the kernel it runs}, by the deduplication map, in the entry's order."""
        kernels = set(self.index.kernels)
        f = self.index.find(TOP_LEVEL, "deduplication-map")
        dedup = read_dedup_map(self._read(f.name)) if f else {}
        out: dict[str, str] = {}
        module = self._module
        names = ([ins.name for ins in module.entry.instructions] if module is not None and module.entry is not None
                 else list(kernels))
        for name in names:
            k = dedup.get(name, name)
            if k in kernels:
                out[name] = k
        for k in kernels:  # a kernel no entry instruction names (a nested computation's): itself
            if k not in out.values():
                out.setdefault(k, k)
        return out

    @cached_property
    def _estimates(self) -> dict[str, dict]:
        f = self.index.find(TOP_LEVEL, "hlo-static-bundle-profile")
        return read_estimates(self._read(f.name)) if f else {}

    @cached_property
    def _instructions(self) -> dict:
        module = self._module
        return {ins.name: ins for c in module.computations for ins in c.instructions} if module is not None else {}

    def _hbm_bytes(self, name: str) -> int:
        ins = self._instructions.get(name)
        if ins is None:
            return 0
        total = main_memory_bytes(ins.shape)
        for operand in ins.operand_names:
            src = self._instructions.get(operand)
            if src is not None:
                total += main_memory_bytes(src.shape)
        return total

    @cached_property
    def _located(self) -> dict[str, list[str]]:
        """{fusion instruction: the user's lines of its instructions (its own and its fused computation's)}."""
        from ..provenance import located_ops, source_words

        stage = self.module_stage
        if stage is None:
            return {}
        out: dict[str, list[str]] = {}
        for x in located_ops(stage, self.mlir):
            owner = (x.op.fusion or x.op.result).lstrip("%")
            words = source_words(x.frame, x.yours) if x.frame is not None else ""
            if words and x.yours is not None:
                words = f"{x.yours.file}:{x.yours.line}"
            if owner and words:
                out.setdefault(owner, []).append(words)
        return out

    def _lines_of(self, fusion: str) -> list[str]:
        from collections import Counter

        return [line for line, _ in Counter(self._located.get(fusion, ())).most_common()]

    def _lines_of_kernel(self, kernel: str) -> list[str]:
        from collections import Counter

        c: Counter = Counter()
        for f, k in self._kernel_of.items():
            if k == kernel:
                c.update(self._located.get(f, ()))
        return [line for line, _ in c.most_common()]

    # -- the user's view ----------------------------------------------------------------------------------
    def kernel(self, name: str) -> Kernel:
        """The Kernel an HLO instruction runs (``fusion.3``, ``%fusion.3``) or a kernel by its own name."""
        name = name.lstrip("%")
        if not self.available:
            raise UnknownNameError("kernel", name, [], known_note=self.why)
        k = self._kernel_of.get(name, name if name in self.index.components else None)
        if k is None:
            raise UnknownNameError("kernel", name, list(self._kernel_of))
        return Kernel(self, k)

    def row(self, fusion: str) -> dict:
        """The table's row of one entry instruction, as a dict."""
        k = self.kernel(fusion)
        est = (self._estimates.get(fusion) or self._estimates.get(k.name) or {}).get("estimated_cycles")
        occ = k.occupancy
        issued = k.issued
        ins = self._instructions.get(fusion)
        row = {"fusion": fusion, "kernel": k.name, "opcode": ins.opcode if ins is not None else "",
               "bundles": k.bundles, "issued": issued}
        for unit in ("MXU", "XLU", "VALU", "VPOP", "EUP", "VLOAD", "VSTORE", "SALU"):
            row[unit] = occ.get(unit, math.nan)
        row["dmas"] = sum(k.dmas.values())
        row["hbm_bytes"] = self._hbm_bytes(fusion)
        row["estimated_cycles"] = est
        clock = self.clock_hz
        row["issue_us"] = issued / clock * 1e6 if clock and issued is not None else None
        row["estimated_us"] = est / clock * 1e6 if clock and est is not None else None
        row["measured_us"] = self.measured.get(fusion)
        row["bound"] = self._bound(row)
        lines = self._lines_of(fusion)
        row["line"] = lines[0] if lines else ""
        return row

    def _bound(self, row: dict) -> str:
        issued = row["issued"]
        if issued is None:
            return "unknown (a loop's trip count is not a constant)"
        if row["measured_us"] is not None and row["issue_us"] is not None:
            time_us, issue_us = row["measured_us"], row["issue_us"]
        elif row["estimated_cycles"]:
            time_us, issue_us = float(row["estimated_cycles"]), float(issued)  # both in cycles: the ratio holds
        else:
            return "unknown (no time: neither measured nor estimated by libtpu)"
        if time_us <= 0:
            return "unknown"
        if issue_us >= 0.5 * time_us:
            mxu = row.get("MXU")
            if mxu is not None and not math.isnan(mxu) and mxu >= 0.5:
                return "MXU-bound"
            busiest = max(("XLU", "VALU", "EUP", "VLOAD", "VSTORE", "SALU"),
                          key=lambda u: -1 if row.get(u) is None or math.isnan(row.get(u)) else row[u])
            return f"issue-bound ({busiest} busiest)"
        waiting_s = (time_us - issue_us) * (1e-6 if row["measured_us"] is not None else 1 / (self.clock_hz or math.inf))
        bw = self.hbm_bytes_per_s
        if bw and row["hbm_bytes"] and row["hbm_bytes"] / bw >= 0.5 * waiting_s > 0:
            return "DMA-bound"
        if bw and self.clock_hz is None and row["measured_us"] is None:
            return "waiting (DMA or latency)"
        return "latency-bound"

    def table(self) -> "pd.DataFrame":
        """One row per entry instruction that runs a kernel (``KERNEL_COLUMNS``), the most issued bundles
        first."""
        import pandas as pd

        if not self.available:
            return pd.DataFrame(columns=list(KERNEL_COLUMNS))
        rows = [self.row(f) for f in self._kernel_of]
        df = pd.DataFrame(rows, columns=list(KERNEL_COLUMNS))
        key = df["measured_us"].where(df["measured_us"].notna(), df["issued"].fillna(0) / 1e6)
        return df.assign(_key=key).sort_values("_key", ascending=False, kind="stable").drop(columns="_key").reset_index(drop=True)

    def for_line(self, line: str) -> list[str]:
        """The entry instructions whose kernels hold instructions of a user's ``line`` (``file.py:42``, or a
        tail of it such as ``model.py:42``)."""
        line = line.strip()
        out = []
        for fusion in self._kernel_of:
            if any(x == line or x.endswith("/" + line) for x in self._located.get(fusion, ())):
                out.append(fusion)
        return out

    def stage(self, name: str) -> Stage:
        """A Stage by its whole name, ``backend:llo:<kernel>:<pass>``."""
        kernel, _, what = name.removeprefix("backend:llo:").rpartition(":")
        if not name.startswith("backend:llo:") or not kernel:
            raise UnknownNameError("LLO stage", name, [], known_note="an LLO stage is named backend:llo:<kernel>:<pass>")
        return self.kernel(kernel).stage(what)

    def compare(self, other: "Kernels") -> "pd.DataFrame":
        """How each entry instruction's kernel changed from ``self`` to ``other``: bundles and MXU occupancy
        before and after, for instructions present in either (matched by name)."""
        import pandas as pd

        a = {r["fusion"]: r for r in self.table().to_dict("records")} if self.available else {}
        b = {r["fusion"]: r for r in other.table().to_dict("records")} if other.available else {}
        rows = []
        for f in list(a) + [f for f in b if f not in a]:
            ra, rb = a.get(f), b.get(f)
            rows.append({"fusion": f, "bundles_before": ra["bundles"] if ra else None,
                         "bundles_after": rb["bundles"] if rb else None,
                         "issued_before": ra["issued"] if ra else None, "issued_after": rb["issued"] if rb else None,
                         "mxu_before": ra["MXU"] if ra else None, "mxu_after": rb["MXU"] if rb else None})
        return pd.DataFrame(rows)


def _occupancy(b: Bundles, u: Utilization, weighted: bool) -> dict[str, float]:
    """Each unit's share of its slots used: over the bundles issued per call (``weighted``, where every trip count
    is known), else over the bundles once each."""
    if not u.rows:
        return {}
    weights = b.trips if weighted and len(b.trips) == len(u.rows) and None not in b.trips else [1] * len(u.rows)
    total = sum(weights)  # type: ignore[arg-type]
    out = {}
    for j, unit in enumerate(u.units):
        used = sum(row[j] * w for row, w in zip(u.rows, weights) if j < len(row))  # type: ignore[operator]
        out[unit] = used / (u.capacity[j] * total) if total and j < len(u.capacity) and u.capacity[j] else 0.0
    return out
