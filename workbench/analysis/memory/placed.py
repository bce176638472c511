"""The values of XLA's schedule as the memory view counts them: where each lives in its allocation and for how
long, the bytes an in-place op hands on, and what a tiled layout pads."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.buffers import Allocation, BufferValue
from ...ir.dtypes import element_bits
from ...ir.hlo import arrays, tuple_shapes

__all__ = ["Placed", "one_per_slot", "handed_on", "padding", "layout_of"]


@dataclass(frozen=True)
class Placed:
    """One value of the schedule with what the views need of it."""

    value: BufferValue
    allocation: Allocation
    start: int
    end: int
    handed_on: int = 0  # bytes that a value starting where this one ends takes over (an in-place op's output)

    def bytes_at(self, position: int) -> int:
        """The bytes this value holds at ``position`` of the schedule (0 where it is not live)."""
        if not self.start <= position <= self.end:
            return 0
        return self.value.size - (self.handed_on if position == self.end else 0)


def one_per_slot(placed: list[Placed]) -> list[Placed]:
    """Values that XLA put in the same bytes of one allocation (a loop's carried value and its phis, an in-place
    op's output) counted once: per slot (allocation, offset, size), each value holds the slot from its start until
    the next value's start, and the last one as long as any of them lives. n log n."""
    slots: dict[tuple[int, int, int], list[Placed]] = {}
    for p in placed:
        slots.setdefault((p.allocation.index, p.value.offset, p.value.size), []).append(p)
    out: list[Placed] = []
    for group in slots.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        group.sort(key=lambda p: (p.start, p.end, p.value.id))
        cur = group[0]
        for nxt in group[1:]:
            if nxt.start <= cur.end:  # overlapping or touching: the later value takes the slot over
                if nxt.start > cur.start:
                    out.append(Placed(cur.value, cur.allocation, cur.start, nxt.start - 1))
                cur = Placed(nxt.value, nxt.allocation, nxt.start, max(nxt.end, cur.end))
            else:
                out.append(cur)
                cur = nxt
        out.append(cur)
    return out


def handed_on(placed: list[Placed]) -> tuple[Placed, ...]:
    """``placed`` with ``handed_on`` set: where a value's last use is the instruction that defines another value in
    the same bytes of the same allocation (XLA shares the buffer with an in-place op's output), those bytes count
    once at that position, as XLA's own live-range peak counts them. One pass, by (allocation, position)."""
    starting: dict[tuple[int, int], list[Placed]] = {}
    for p in placed:
        starting.setdefault((p.allocation.index, p.start), []).append(p)
    out = []
    for p in placed:
        lo, hi = p.value.offset, p.value.offset + p.value.size
        spans = sorted((max(lo, q.value.offset), min(hi, q.value.offset + q.value.size))
                       for q in starting.get((p.allocation.index, p.end), ()) if q is not p and q.start == p.end)
        shared, reach = 0, lo
        for a, b in spans:  # the union of the overlaps, so bytes two later values share count once
            a = max(a, reach)
            if b > a:
                shared += b - a
                reach = b
        out.append(Placed(p.value, p.allocation, p.start, p.end, min(shared, p.value.size)) if shared else p)
    return tuple(out)


def layout_of(shape: str) -> str:
    """The layout part of a shape (``{1,0:T(8,128)S(1)}``), "" for none."""
    k = shape.find("]{")
    return shape[k + 1:] if k >= 0 and not tuple_shapes(shape) else ""


def padding(v: BufferValue) -> int:
    """Bytes a value takes beyond its elements (a tiled layout pads dimensions to its tiles); 0 for a tuple."""
    if tuple_shapes(v.shape):
        return 0
    arr = arrays(v.shape)
    if len(arr) != 1 or any(d is None for d in arr[0].sizes):
        return 0
    try:
        bits = element_bits(arr[0].dtype)
    except Exception:  # noqa: BLE001 -- a type XLA knows and the workbench does not: no padding claimed
        return 0
    logical = (math.prod(arr[0].sizes) * bits + 7) // 8
    return max(0, v.size - logical)
