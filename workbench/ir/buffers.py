"""XLA's memory dumps, read: the buffer assignment and the live ranges XLA writes beside its optimized module.

XLA writes, for every compile with ``xla_dump_to``:

* ``*after_optimizations-buffer-assignment.txt``: each allocation (``allocation 3: size 2048, color 1,
  parameter 0, ... maybe-live-out:``) and the values it holds (``value: <48 fusion.2{1} @1> (size=262144,
  offset=524288): f32[128,512]{1,0:T(8,128)S(1)}``);
* ``*after_optimizations-live-range.txt``: the module's schedule flattened into one sequence
  (``InstructionSequence``), the span of that sequence each value is live in (``BufferLiveRange``, both ends
  included) and the values live where the sum of their sizes is largest (``Live ranges at 9 (peak)``).

``read_buffer_assignment`` and ``read_live_range`` turn them into values, each in one pass over the lines;
``input_output_alias`` reads an HLO module's header for the outputs that reuse an argument's buffer. A value is
named as the live ranges name it: its instruction and shape index, ``fusion.2{1}``, ``x.1{}``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Allocation", "BufferValue", "LiveRange", "read_buffer_assignment", "read_live_range",
           "read_usage_report", "input_output_alias", "value_key"]

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_COLOR = re.compile(r"\bcolor (\d+)")
_PARAMETER = re.compile(r"\bparameter (\d+)")
_VALUE = re.compile(r"^\s*value: <(\d+) (\S+?)(\{[^}]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_SEQUENCE = re.compile(r"^\s+(\d+):(\S+)\s*$")
_RANGE = re.compile(r"^\s+(\S+?\{[^}]*\}):(\d+)-(\d+)\s*$")
_PEAK_HEAD = re.compile(r"^\s*Live ranges at (\d+) \(peak\):")
_PEAK_ROW = re.compile(r"^\s+(\S+?\{[^}]*\}): (\d+) bytes")
_SPACE = re.compile(r"^Memory Space: .*\(color=(\d+)\)\s*$")
_TOTAL = re.compile(r"^Total bytes: (\d+)")
_ALIAS_ENTRY = re.compile(r"\{([\d,\s]*)\}:\s*\((\d+),\s*\{([\d,\s]*)\}(?:,\s*([\w-]+))?\)")


def value_key(instruction: str, index: str = "{}") -> str:
    """A value's name as the live ranges write it: ``fusion.2{1}``, ``x.1{}``."""
    return f"{instruction}{index or '{}'}"


@dataclass(frozen=True)
class BufferValue:
    """One value the buffer assignment placed: the instruction that defines it, its shape index (``{}``, ``{1}``),
    its bytes and offset in its allocation, and its shape as XLA prints it (layout, tiles, memory space)."""

    id: int
    instruction: str
    index: str
    size: int
    offset: int
    shape: str

    @property
    def key(self) -> str:
        return value_key(self.instruction, self.index)


@dataclass(frozen=True)
class Allocation:
    """One allocation of the buffer assignment: its number and bytes, its memory space (``color``: 0 the device's
    main memory, HBM on a TPU; 1 the TPU's VMEM), what it is for (``parameter`` the argument's number, or None;
    ``constant``, ``thread_local``, ``temp``: XLA's preallocated temporary buffer; ``live_out``: an output lives in
    it) and the values placed in it."""

    index: int
    size: int
    color: int
    parameter: int | None
    constant: bool
    thread_local: bool
    temp: bool
    live_out: bool
    values: tuple[BufferValue, ...]

    @property
    def kind(self) -> str:
        """What the allocation holds, in words: argument, aliased (an argument's buffer an output reuses: donated),
        output, constant, thread-local or temporary."""
        if self.parameter is not None:
            return "aliased" if self.live_out else "argument"
        if self.constant:
            return "constant"
        if self.thread_local:
            return "thread-local"
        if self.live_out:
            return "output"
        return "temporary"


def read_buffer_assignment(text: str) -> tuple[Allocation, ...]:
    """The allocations of a buffer-assignment dump, in its order; lines of any other kind are skipped."""
    out: list[Allocation] = []
    head: re.Match | None = None
    values: list[BufferValue] = []

    def close() -> None:
        if head is None:
            return
        rest = head.group(3)
        color = _COLOR.search(rest)
        param = _PARAMETER.search(rest)
        out.append(Allocation(int(head.group(1)), int(head.group(2)), int(color.group(1)) if color else 0,
                              int(param.group(1)) if param else None, ", constant" in rest, "thread-local" in rest,
                              "preallocated-temp" in rest, "maybe-live-out" in rest or "output shape is" in rest,
                              tuple(values)))

    for line in text.splitlines():
        if line.startswith("allocation "):
            m = _ALLOCATION.match(line)
            if m:
                close()
                head, values = m, []
                continue
        if head is not None and line.lstrip().startswith("value: <"):
            v = _VALUE.match(line)
            if v:
                values.append(BufferValue(int(v.group(1)), v.group(2), v.group(3) or "{}", int(v.group(4)),
                                          int(v.group(5)), v.group(6).strip()))
            continue
        if head is not None and line.strip() and not line.startswith(" "):
            close()  # the allocations end (the dump goes on with totals, values or the module)
            head, values = None, []
    close()
    return tuple(out)


@dataclass(frozen=True)
class LiveRange:
    """What a live-range dump says: ``sequence`` the flattened schedule (instruction names, in order),
    ``ranges`` each value's first and last position in it (both live), ``peak_at`` the position XLA names as the
    peak and ``peak`` the values it lists live there with their bytes (None and () where the dump names none)."""

    sequence: tuple[str, ...]
    ranges: dict[str, tuple[int, int]]
    peak_at: int | None
    peak: tuple[tuple[str, int], ...]

    @property
    def peak_bytes(self) -> int:
        """The bytes of the values XLA lists live at its peak."""
        return sum(b for _, b in self.peak)


def read_live_range(text: str) -> LiveRange:
    """A live-range dump read in one pass (see the module's text)."""
    sequence: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    peak: list[tuple[str, int]] = []
    peak_at: int | None = None
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "InstructionSequence:":
            section = "sequence"
            continue
        if stripped == "BufferLiveRange:":
            section = "ranges"
            continue
        m = _PEAK_HEAD.match(line)
        if m:
            section, peak_at = "peak", int(m.group(1))
            continue
        if stripped.startswith("Stack trace breakdown") or stripped.startswith("HloLiveRange"):
            section = ""
            continue
        if section == "sequence":
            s = _SEQUENCE.match(line)
            if s:
                sequence.append(s.group(2))
        elif section == "ranges":
            r = _RANGE.match(line)
            if r:
                ranges[r.group(1)] = (int(r.group(2)), int(r.group(3)))
        elif section == "peak":
            p = _PEAK_ROW.match(line)
            if p:
                peak.append((p.group(1), int(p.group(2))))
    return LiveRange(tuple(sequence), ranges, peak_at, tuple(peak))


def read_usage_report(text: str) -> dict[int, int]:
    """{memory space (color): total bytes} of XLA's memory-usage report (``Memory Space: default (color=0)`` then
    ``Total bytes: 229412 (224.0KiB)``), in one pass; {} for no report."""
    out: dict[int, int] = {}
    color: int | None = None
    for line in text.splitlines():
        m = _SPACE.match(line)
        if m:
            color = int(m.group(1))
            continue
        t = _TOTAL.match(line)
        if t and color is not None:
            out[color] = int(t.group(1))
            color = None
    return out


def input_output_alias(hlo_text: str) -> tuple[tuple[str, int, str, str], ...]:
    """The ``input_output_alias`` of an HLO module's header: (output index, parameter number, parameter index,
    kind: ``may-alias`` / ``must-alias``) for each output that XLA writes into an argument's buffer."""
    head = hlo_text[:hlo_text.find("\n")] if "\n" in hlo_text else hlo_text
    start = head.find("input_output_alias={")
    if start < 0:
        return ()
    depth, k = 0, start + len("input_output_alias=")
    end = k
    while end < len(head):
        depth += {"{": 1, "}": -1}.get(head[end], 0)
        end += 1
        if depth == 0:
            break
    found = []
    for out, param, pindex, kind in _ALIAS_ENTRY.findall(head[k:end]):
        found.append((f"{{{out.replace(' ', '')}}}", int(param), f"{{{pindex.replace(' ', '')}}}",
                      kind or "may-alias"))
    return tuple(found)
