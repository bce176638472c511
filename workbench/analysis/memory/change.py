"""What a change did to the peak: two peaks and the buffers that appeared at it or left it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..numbers import human_bytes, signed_bytes

if TYPE_CHECKING:
    from .view import Memory

__all__ = ["MemoryChange"]


@dataclass(frozen=True)
class MemoryChange:
    """Two peaks and the buffers that differ at them (``appeared``: live at the second peak, not at the first;
    ``went``: the other way), each a list of (line, shape, kind, bytes)."""

    before: int
    after: int
    appeared: tuple[tuple[str, str, str, int], ...]
    went: tuple[tuple[str, str, str, int], ...]

    @property
    def delta(self) -> int:
        return self.after - self.before

    @staticmethod
    def between(a: Memory, b: Memory) -> "MemoryChange":
        def items(m: Memory) -> Counter:
            return Counter((r["line"], r["shape"], r["kind"], int(r["bytes"])) for r in m.at_peak().to_dict("records"))

        x, y = items(a), items(b)
        appeared = tuple(sorted((y - x).elements(), key=lambda t: -t[3]))
        went = tuple(sorted((x - y).elements(), key=lambda t: -t[3]))
        return MemoryChange(a.peak_bytes, b.peak_bytes, appeared, went)

    def words(self, most: int = 3) -> str:
        """The change in one sentence: the peak's change and the largest buffers that appeared or went."""
        if self.delta == 0 and not self.appeared and not self.went:
            return f"memory: the peak is unchanged ({human_bytes(self.after)})"
        out = f"memory: the peak went from {human_bytes(self.before)} to {human_bytes(self.after)} ({signed_bytes(self.delta)})"
        if self.went:
            out += "; gone from it: " + ", ".join(f"{s} from {ln} ({human_bytes(b)})" for ln, s, _, b in self.went[:most])
        if self.appeared:
            out += "; new at it: " + ", ".join(f"{s} from {ln} ({human_bytes(b)})" for ln, s, _, b in self.appeared[:most])
        return out

    def __str__(self) -> str:
        return self.words()
