"""Alignment: which lines of two normalized modules correspond, and which values.

Three rounds of keys (content, mapped, template; see the package docstring), each aligned with
patience diff and, where patience finds no anchor, Myers' O(ND) diff. The ``Aligner`` builds the
after -> before value map while it pairs lines.
"""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Hashable, Sequence

from .normalize import Module

__all__ = ["Aligner", "myers"]

_CONTENT, _MAPPED, _TEMPLATE = 1, 2, 3
# Myers is O((N+M)·D): cap D, and (N+M)·D, so that one pathological gap cannot stall the diff.
_MYERS_MAX_EDITS = 400
_MYERS_BUDGET = 2_000_000


def _unique_lcs(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Patience anchors: the longest increasing run of keys occurring once in ``a`` and ``b``."""
    ca, cb = Counter(a), Counter(b)
    unique = {k for k, c in ca.items() if c == 1 and cb.get(k) == 1}
    if not unique:
        return []
    pos_a = {k: i for i, k in enumerate(a) if k in unique}
    cand = [(pos_a[k], j) for j, k in enumerate(b) if k in unique]
    tails: list[int] = []  # smallest a-index ending an increasing run of each length
    tail_at: list[int] = []  # index into cand of that run's end
    back = [-1] * len(cand)
    for idx, (i, _) in enumerate(cand):
        p = bisect.bisect_left(tails, i)
        if p == len(tails):
            tails.append(i)
            tail_at.append(idx)
        else:
            tails[p] = i
            tail_at[p] = idx
        back[idx] = tail_at[p - 1] if p else -1
    out = []
    idx = tail_at[-1]
    while idx >= 0:
        out.append(cand[idx])
        idx = back[idx]
    out.reverse()
    return out


def myers(
    a: Sequence[Hashable], b: Sequence[Hashable], max_d: int
) -> list[tuple[int, int]] | None:
    """Matched index pairs of a shortest edit script; None if it takes more than ``max_d`` edits."""
    n, m = len(a), len(b)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    snapshots: list[list[int]] = []  # v after step d, diagonals -d..d
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[off + k] = x
            if x >= n and y >= m:
                return _myers_path(snapshots, d, k, x)
        snapshots.append(v[off - d : off + d + 1])
    return None


def _myers_path(snapshots: list[list[int]], d: int, k: int, x: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    while True:
        if d == 0:
            start = 0
        else:
            prev = snapshots[d - 1]  # index k' -> prev[k' + d - 1]
            if k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1]):
                k_prev = k + 1
                start = prev[k_prev + d - 1]
            else:
                k_prev = k - 1
                start = prev[k_prev + d - 1] + 1
        for xx in range(x - 1, start - 1, -1):
            pairs.append((xx, xx - k))
        if d == 0:
            break
        x = snapshots[d - 1][k_prev + d - 1]
        k = k_prev
        d -= 1
    pairs.reverse()
    return pairs


class Aligner:
    """Aligns the lines of two modules and builds the after -> before value map on the way."""

    def __init__(self, before: Module, after: Module) -> None:
        self.b, self.a = before, after
        self.amap = [-1] * len(after.v_name)
        self.taken = [False] * len(before.v_name)
        self.pairs: list[tuple[int, int]] = []
        self.scope_pair: dict[int, int] = {0: 0}
        self.scope_taken: set[int] = {0}
        self._pair_scopes()

    def _pair_scopes(self) -> None:
        """Pair functions by the majority of their lines with a unique, shared content key."""
        kb, ka = self.b.keys, self.a.keys
        cb, ca = Counter(kb), Counter(ka)
        where_b = {k: i for i, k in enumerate(kb) if cb[k] == 1 and ca.get(k) == 1}
        votes: Counter[tuple[int, int]] = Counter()
        for j, k in enumerate(ka):
            i = where_b.get(k)
            if i is not None:
                votes[(self.a.scopes[j], self.b.scopes[i])] += 1
        for (sa, sb), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if sa not in self.scope_pair and sb not in self.scope_taken:
                self.scope_pair[sa] = sb
                self.scope_taken.add(sb)

    def map_value(self, va: int, vb: int) -> None:
        a, b = self.a, self.b
        if self.amap[va] >= 0 or self.taken[vb] or a.v_line[va] < 0 or b.v_line[vb] < 0:
            return
        if a.v_prefix[va] != b.v_prefix[vb]:
            return  # keep names honest: an "add" is never printed under a "multiply"'s name
        sa, sb = a.v_scope[va], b.v_scope[vb]
        paired = self.scope_pair.get(sa)
        if paired is None:
            if sb in self.scope_taken:
                return
            self.scope_pair[sa] = sb
            self.scope_taken.add(sb)
        elif paired != sb:
            return
        self.amap[va] = vb
        self.taken[vb] = True

    def map_line(self, i: int, j: int, *, uses: bool) -> None:
        """Pair the values of aligned lines: always what they define, their operands if ``uses``."""
        a_line, b_line = self.a.v_line, self.b.v_line
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if uses or (a_line[va] == j and b_line[vb] == i):
                self.map_value(va, vb)

    def _consistent(self, i: int, j: int) -> bool:
        """False if the values the two lines define are already paired with other values."""
        a_line, b_line, amap, taken = self.a.v_line, self.b.v_line, self.amap, self.taken
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if a_line[va] == j and b_line[vb] == i:
                mapped = amap[va]
                if mapped != vb and (mapped >= 0 or taken[vb]):
                    return False
        return True

    def _match(self, level: int, i: int, j: int) -> bool:
        """Align lines ``i`` and ``j`` unless that contradicts the value pairing found so far."""
        if not self._consistent(i, j):
            return False
        self.pairs.append((i, j))
        self.map_line(i, j, uses=level != _TEMPLATE)
        return True

    def _keys(self, level: int, i0: int, i1: int, j0: int, j1: int) -> tuple[list, list]:
        b, a = self.b, self.a
        if level == _CONTENT:
            return b.keys[i0:i1], a.keys[j0:j1]
        if level == _TEMPLATE:
            return b.fmts[i0:i1], a.fmts[j0:j1]
        taken, amap = self.taken, self.amap
        kb = [
            (b.fmts[i], tuple([v if taken[v] else -1 for v in b.refs[i]]))
            if b.refs[i]
            else b.fmts[i]
            for i in range(i0, i1)
        ]
        ka = [
            (a.fmts[j], tuple([amap[v] for v in a.refs[j]])) if a.refs[j] else a.fmts[j]
            for j in range(j0, j1)
        ]
        return kb, ka

    def run(self) -> list[tuple[int, int]]:
        # A stack, popped left to right, so values are mapped roughly in definition order.
        stack = [(_CONTENT, 0, len(self.b.fmts), 0, len(self.a.fmts))]
        while stack:
            self._align_range(*stack.pop(), stack)
        self.pairs.sort()
        return self.pairs

    def _align_range(self, level: int, i0: int, i1: int, j0: int, j1: int, stack: list) -> None:
        kb, ka = self._keys(level, i0, i1, j0, j1)
        n, m = i1 - i0, j1 - j0
        p = 0
        while p < n and p < m and kb[p] == ka[p] and self._match(level, i0 + p, j0 + p):
            p += 1
        s = 0
        while s < n - p and s < m - p and kb[n - 1 - s] == ka[m - 1 - s]:
            if not self._consistent(i1 - 1 - s, j1 - 1 - s):
                break
            s += 1
        for t in range(s, 0, -1):
            self._match(level, i1 - t, j1 - t)
        i0, i1, j0, j1 = i0 + p, i1 - s, j0 + p, j1 - s
        if i0 == i1 or j0 == j1:
            return
        kb, ka = kb[p : n - s], ka[p : m - s]
        anchors = _unique_lcs(kb, ka)
        between = level  # the round that handles the gaps between anchors
        if not anchors and level != _CONTENT:
            # Myers' matches are final for this key; what lies between them goes one round down.
            max_d = min(_MYERS_MAX_EDITS, _MYERS_BUDGET // (len(kb) + len(ka)))
            anchors = myers(kb, ka, max_d) or []
            between = level + 1
        anchors = [(x, y) for x, y in anchors if self._match(level, i0 + x, j0 + y)]
        if not anchors:
            if level < _TEMPLATE:
                stack.append((level + 1, i0, i1, j0, j1))
            return
        gaps = []
        pi, pj = i0, j0
        for x, y in anchors + [(i1 - i0, j1 - j0)]:
            if pi < i0 + x and pj < j0 + y and between <= _TEMPLATE:
                gaps.append((between, pi, i0 + x, pj, j0 + y))
            pi, pj = i0 + x + 1, j0 + y + 1
        stack.extend(reversed(gaps))
