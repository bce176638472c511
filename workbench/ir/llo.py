"""Reading what libtpu writes about the TPU's own code: the LLO of each kernel after each of its passes, and
the final VLIW bundles.

With its start-up flags ``--xla_jf_dump_to=DIR --xla_jf_dump_llo_text=true`` (``backends.TPU.llo_flags``) libtpu
writes, for every kernel of a compile, one file per LLO pass and a few about the result, named
``<stamp>-<component>-<NN>-<what>.txt``: the component is an HLO instruction of the optimized module (a fusion,
or an instruction compiled alone, such as ``neg.0``), ``TLP`` (the top-level program: the entry computation's
sequence of kernel calls and DMAs), or libtpu's glue (``<late-initialization>``, ``<late-finalization>``). The
top-level program also has ``<stamp>-TLP-hlo.txt``, the HLO module the kernels were made from.

Per component, what is read here (each file by itself, when asked, in one pass):

* ``NN-fingerprints``: one fingerprint of the LLO after each pass, in order: the passes that changed it;
* ``NN-final_bundles``: the bundles, one VLIW instruction word each (``0x2a LB: > { op ;; op ;; ... }``):
  ``LB`` marks a loop body's first bundle and each ``>`` one loop the bundle is in; a scalar compare marked
  ``/* loop exit test */`` bounds its loop; ``dma.<from>_to_<to>`` moves data between memories; the
  top-level program's ``inlined_call ... /* %fusion.3 = fusion(...) */`` calls a kernel;
* ``NN-final_hlo-static-per-bundle-utilization``: the capacity of each unit per bundle (``MXU 4, XLU 3,
  VALU 4 ...``) and, for each bundle in order, the slots it uses;
* ``NN-schedule-analysis_final_bundles`` (the top-level program's): bundles per HLO instruction;
* ``NN-deduplication-map`` (the top-level program's): kernels libtpu compiled once for several equal HLO
  instructions;
* ``TLP-hlo.txt``: the module, whose instructions' ``backend_config`` holds libtpu's own estimate of each
  kernel's cycles (``estimated_cycles``) and the grid it iterates (``iteration_bounds``).

The flags are libtpu's own and undocumented; nothing here assumes they worked: ``index_llo`` of a folder
without such files is empty, and callers say so in words.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

__all__ = ["LloFile", "LloIndex", "Bundle", "Bundles", "Utilization", "TOP_LEVEL", "GLUE", "index_llo", "llo_passes", "main_memory_bytes",
           "read_bundles", "read_dedup_map", "read_estimates", "read_fingerprints", "read_schedule_analysis",
           "read_utilization"]

TOP_LEVEL = "TLP"
GLUE = ("<late-initialization>", "<late-finalization>")
_FILE = re.compile(r"^(?P<stamp>\d+)-(?P<component>.+?)-(?P<step>\d{2,})-(?P<what>[^/]+)\.(?:txt|html)$")
_HLO_FILE = re.compile(r"^(?P<stamp>\d+)-(?P<component>.+)-hlo\.txt$")
# files that are not the LLO after a pass: kept out of the pass stages
_NOT_A_PASS = ("fingerprints", "deduplication-map", "schedule-analysis", "utilization", "critical-path",
               "register-pressure", "hlo-static-bundle-profile", "trace-markers", "heap_sizes", "all-fingerprints",
               "overlay-graph", "vmem_report", "memory-space-assignment")


@dataclass(frozen=True)
class LloFile:
    """One file of an LLO dump: its ``name`` in the folder, the ``component`` (kernel) it is about, its
    ``step`` (libtpu's order), ``what`` (a pass name, ``final_bundles`` ...) and ``size`` in bytes."""

    name: str
    component: str
    step: int
    what: str
    size: int = 0

    @property
    def is_pass(self) -> bool:
        """Whether the file is the LLO after (or before) one pass, not a report about it."""
        return not any(k in self.what for k in _NOT_A_PASS)


@dataclass(frozen=True)
class LloIndex:
    """The files of one compile's LLO dump by component, each component's in libtpu's order; read from the
    names alone (no file is opened). ``hlo``: the name of the top-level program's HLO module file, "" if none.
    Empty where libtpu wrote nothing (``bool(index)`` is False)."""

    components: Mapping[str, tuple[LloFile, ...]] = field(default_factory=dict)
    hlo: str = ""

    def __bool__(self) -> bool:
        return bool(self.components)

    @property
    def kernels(self) -> list[str]:
        """The components that are kernels of HLO instructions (not the top-level program, not libtpu's glue)."""
        return [c for c in self.components if c != TOP_LEVEL and c not in GLUE]

    def find(self, component: str, what: str) -> LloFile | None:
        """The last file of ``component`` whose ``what`` ends with ``what`` (``final_bundles``), or None."""
        return next((f for f in reversed(self.components.get(component, ())) if f.what.endswith(what)), None)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for files in self.components.values() for f in files)

    @property
    def files(self) -> int:
        return sum(len(files) for files in self.components.values()) + bool(self.hlo)


def index_llo(entries: Iterable[tuple[str, int]]) -> LloIndex:
    """The LloIndex of a dump's ``(file name, size)`` pairs. Where several compiles wrote into one folder, each
    component keeps the files of its latest stamp."""
    by: dict[str, dict[int, list[LloFile]]] = {}
    hlo: tuple[int, str] = (-1, "")
    for name, size in entries:
        m = _HLO_FILE.match(name)
        if m and m.group("component") == TOP_LEVEL:
            hlo = max(hlo, (int(m.group("stamp")), name))
            continue
        m = _FILE.match(name)
        if not m:
            continue
        f = LloFile(name, m.group("component"), int(m.group("step")), m.group("what"), int(size))
        by.setdefault(f.component, {}).setdefault(int(m.group("stamp")), []).append(f)
    components = {}
    for comp, stamps in by.items():
        latest = stamps[max(stamps)]
        components[comp] = tuple(sorted(latest, key=lambda f: f.step))
    order = sorted(components, key=lambda c: (c != TOP_LEVEL, c in GLUE, c))
    return LloIndex({c: components[c] for c in order}, hlo[1])


def read_fingerprints(text: str) -> list[tuple[str, str]]:
    """``[(pass, fingerprint)]`` of a ``fingerprints`` file, in order: one line per pass, the fingerprint of the
    LLO after it first."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append((parts[-1], parts[0]))
    return out


def llo_passes(files: Iterable[LloFile], fingerprints: list[tuple[str, str]] | None) -> list[tuple[LloFile, bool]]:
    """The pass files of one component, each with whether the pass changed the LLO: by its fingerprint against
    the one before (``read_fingerprints``, matched to the files in order by pass name), True where the
    fingerprints do not say (a file with no fingerprint line: a step of the bundle packer). The first is
    always a change (where the LLO starts)."""
    out: list[tuple[LloFile, bool]] = []
    queue = list(fingerprints or ())
    last = None
    for f in files:
        if not f.is_pass:
            continue
        k = next((i for i, (name, _) in enumerate(queue[:4]) if name == f.what), None)
        if k is None:
            out.append((f, True))
            continue
        fp = queue[k][1]
        del queue[:k + 1]
        out.append((f, fp != last))
        last = fp
    return out


@dataclass(frozen=True)
class Utilization:
    """A ``per-bundle-utilization`` file: the ``units`` (MXU, XLU, VALU ...), each one's ``capacity`` (slots per
    bundle) and ``rows``: the slots each bundle uses, one tuple per bundle in order."""

    units: tuple[str, ...]
    capacity: tuple[int, ...]
    rows: tuple[tuple[int, ...], ...]


def read_utilization(text: str) -> Utilization:
    """The units, capacities and per-bundle slots of a ``per-bundle-utilization`` file (its header names the
    units, the next line their capacity, then one line per bundle after ``== UTILIZATION``)."""
    units: tuple[str, ...] = ()
    capacity: tuple[int, ...] = ()
    rows = []
    state = ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("=="):
            state = "capacity" if "CAPAC" in s.upper() else "rows" if "UTILIZATION" in s.upper() else ""
            continue
        if not s:
            continue
        if state == "capacity":
            if not units:
                units = tuple(u.strip() for u in s.split(","))
            else:
                capacity = tuple(int(x) for x in s.split())
        elif state == "rows":
            rows.append(tuple(int(x) for x in s.split()))
    return Utilization(units, capacity, tuple(rows))


@dataclass(frozen=True)
class Bundle:
    """One bundle: its ``address`` (as printed), ``mark`` (``LB`` a loop body's start, ``PF`` ...), ``depth``
    (the loops it is in), ``ops`` (the opcodes of its slots, in order) and ``text`` (the line(s) as printed);
    ``calls``: the HLO instruction a top-level bundle calls or marks (``%fusion.3``), else ""."""

    address: str
    mark: str
    depth: int
    ops: tuple[str, ...]
    text: str
    calls: str = ""


@dataclass(frozen=True)
class Bundles:
    """A ``final_bundles`` file read: ``bundles`` (``Bundle`` each, in order); ``trips``: for each bundle, how many
    times it runs per call (the product of the trip counts of its loops, read from their exit tests), None
    where a loop's bound is not a constant; ``dmas``: ``(direction, granules or None)`` per DMA instruction
    (``hbm_to_vmem`` ...), granules where the size is a constant."""

    bundles: tuple[Bundle, ...]
    trips: tuple[int | None, ...]
    dmas: tuple[tuple[str, int | None], ...]

    @property
    def executed(self) -> int | None:
        """Bundles issued in one call of the kernel (a loop body's once per trip); None where a trip count is
        not known."""
        if any(t is None for t in self.trips):
            return None
        return sum(self.trips)  # type: ignore[arg-type]


_BUNDLE = re.compile(r"^\s*(0x[0-9a-f]+|0)\s+([A-Z]{2})?\s*:\s*(>*)\s*\{")
_OPCODE = re.compile(r"(?:%[\w.]+\s*=\s*)?([a-z_][\w.]*)")
_EXIT_TEST = re.compile(r"scmp\.\w+(?:\.\w+)*\s+%[\w]+,\s*(\d+)\s*/\*\s*loop exit test")
_CALL_NOTE = re.compile(r"/\*\s*(?:(?:entry|exit) bundle:\s*)?(%[\w.\-]+)\s*=")
_GRANULES = re.compile(r"/\*size_in_granules=\*/(\d+)")


def _ops(body: str) -> tuple[str, ...]:
    out = []
    for part in body.split(";;"):
        part = part.strip()
        if not part:
            continue
        m = _OPCODE.match(part)
        if m:
            out.append(m.group(1))
    return tuple(out)


def read_bundles(text: str) -> Bundles:
    """The bundles of a ``final_bundles`` file, in one pass over its lines (a bundle may span several: a DMA's
    descriptor is printed below it)."""
    bundles: list[Bundle] = []
    lines: list[str] = []
    head = None

    def close():
        if head is None:
            return
        address, mark, depth = head
        whole = "\n".join(lines)
        start, end = whole.find("{"), whole.rfind("}")
        body = whole[start + 1:end] if start >= 0 and end > start else ""
        # comments hold descriptors and notes, not ops: keep them out of the slots
        ops = _ops(re.sub(r"/\*.*?\*/", "", body, flags=re.S))
        note = _CALL_NOTE.search(whole)
        bundles.append(Bundle(address, mark, depth, ops, whole, note.group(1).lstrip("%") if note else ""))

    for line in text.splitlines():
        m = _BUNDLE.match(line)
        if m:
            close()
            head = (m.group(1), m.group(2) or "", len(m.group(3)))
            lines = [line]
        elif head is not None:
            lines.append(line)
    close()
    bundles = _empty_in_loops(bundles)
    return Bundles(tuple(bundles), _trips(bundles), tuple(_dmas(bundles)))


def _empty_in_loops(bundles: list[Bundle]) -> list[Bundle]:
    """libtpu prints an empty bundle (``0x2a : {}``) without its loop marks: it gets the loops of the bundles on
    both sides (the shallower), so an empty bundle inside a loop body runs as often as the body."""
    depth_before = [0] * len(bundles)
    last = 0
    for i, b in enumerate(bundles):
        depth_before[i] = last
        if b.ops:
            last = b.depth
    after = 0
    out = list(bundles)
    for i in range(len(bundles) - 1, -1, -1):
        b = bundles[i]
        if b.ops:
            after = b.depth
        elif b.depth == 0 and not b.mark:
            out[i] = Bundle(b.address, b.mark, min(depth_before[i], after), b.ops, b.text, b.calls)
    return out


def _trips(bundles: list[Bundle]) -> tuple[int | None, ...]:
    """How often each bundle runs per call: loops are runs of bundles one ``>`` deeper than what surrounds them,
    each begun by an ``LB`` bundle (or by the depth rising); a loop runs as often as the constant of its exit
    test (``scmp.ge %i, N /* loop exit test */``, the induction variable counting from 0), nested loops
    multiply."""
    # loops as [start, end, depth, bound]; found with a stack, one pass
    loops: list[list] = []
    stack: list[list] = []
    for i, b in enumerate(bundles):
        while stack and (stack[-1][2] > b.depth or (b.mark == "LB" and stack[-1][2] == b.depth)):
            stack.pop()[1] = i
        while len(stack) < b.depth:
            loop = [i, len(bundles), len(stack) + 1, None]
            loops.append(loop)
            stack.append(loop)
        m = _EXIT_TEST.search(b.text) if "loop exit test" in b.text else None
        if m and stack:
            stack[-1][3] = int(m.group(1))
    trips: list[int | None] = [1] * len(bundles)
    for start, end, _, bound in loops:
        for i in range(start, end):
            if trips[i] is not None:
                trips[i] = None if bound is None else trips[i] * bound
    return tuple(trips)


def _dmas(bundles: list[Bundle]):
    for b in bundles:
        for op in b.ops:
            if op.startswith("dma.") and not op.startswith("dma.done"):
                m = _GRANULES.search(b.text)
                yield op.split(".", 1)[1], int(m.group(1)) if m else None


def read_schedule_analysis(text: str) -> list[tuple[str, float]]:
    """``[(HLO instruction, bundles)]`` of a ``schedule-analysis`` file: the bundles it gives each instruction
    (``<no hlo>`` for the program's own glue)."""
    out = []
    for m in re.finditer(r"^\s*([\d.]+) scheduled bundles \(\s*[\d.]+%\): (?:(<no hlo>)|%([\w.\-]+) =)", text, re.M):
        out.append((m.group(2) or m.group(3), float(m.group(1))))
    return out


def read_dedup_map(text: str) -> dict[str, str]:
    """{HLO instruction: the kernel compiled for it} of a ``deduplication-map`` file: libtpu compiles one kernel
    for equal instructions and names it after one of them (the ``key``)."""
    out: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("key:"):
            key = s[4:].strip()
            if not key.startswith("<"):
                out[key] = key
        elif key and s and not s.startswith(("ordinal:", "equivalent_hlos")) and not key.startswith("<"):
            out[s.lstrip("%")] = key
    return out


_CONFIGURED = re.compile(r"^\s*(?:HLO:\s*)?(?:[\d.]+ scheduled bundles \([^)]*\):\s*)?(?:ROOT\s+)?%([\w.\-]+)\s*=")


def read_estimates(text: str) -> dict[str, dict]:
    """{HLO instruction: ``{"estimated_cycles": int, "iteration_bounds": [...]}``} for every instruction whose
    ``backend_config`` carries libtpu's estimate (its ``window_config``), read from the top-level program's
    ``hlo-static-bundle-profile`` (``HLO: %fusion.3 = ... backend_config={...}``) or any text printing such
    instructions one per line."""
    out: dict[str, dict] = {}
    decoder = json.JSONDecoder()
    for line in text.splitlines():
        if "estimated_cycles" not in line:
            continue
        m = _CONFIGURED.match(line)
        at = line.find("backend_config=")
        if not m or at < 0:
            continue
        try:
            config, _ = decoder.raw_decode(line, at + len("backend_config="))
        except ValueError:
            continue
        window = config.get("window_config") or {} if isinstance(config, dict) else {}
        cycles = window.get("estimated_cycles")
        if cycles is None:
            continue
        out[m.group(1)] = {"estimated_cycles": int(cycles),
                           "iteration_bounds": [int(x) for x in window.get("iteration_bounds", [])]}
    return out


_SHAPED = re.compile(r"\b([a-z]\w*)\[([^\]]*)\](\{[^}]*\})?")
_SPACE = re.compile(r"S\((\d+)\)")


def main_memory_bytes(shape: str) -> int:
    """The bytes of the arrays of an HLO ``shape`` (``bf16[64,128]{1,0:T(8,128)(2,1)}``, a tuple's) that live in
    the device's main memory (HBM on a TPU): those whose layout names no other memory space (``S(1)``, the
    TPU's VMEM, is not). What a kernel's DMAs must move at least once, for its operands and results."""
    from .dtypes import element_bytes

    total = 0
    for m in _SHAPED.finditer(shape):
        dtype, dims, layout = m.group(1), m.group(2), m.group(3) or ""
        space = _SPACE.search(layout)
        if space and space.group(1) != "0":
            continue
        try:
            size = element_bytes(dtype)
        except (KeyError, ValueError, TypeError):
            continue
        n = 1
        for d in dims.split(","):
            d = d.strip().removeprefix("<=")
            if d:
                n *= int(d) if d.isdigit() else 0
        total += n * size
    return total
