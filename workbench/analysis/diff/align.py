"""Alignment: which lines of two normalized modules correspond, and which values.

Three rounds of keys (content, mapped, template; see the package docstring), each aligned with
patience diff and, where patience finds no anchor, Myers' O(ND) diff. The ``Aligner`` builds the
after -> before value map while it pairs lines.
"""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from itertools import compress, islice
from operator import lt, ne

from ...ir.hlo import without_layout
from ...ir.sdy import without_shardings
from ...ir.lines.model import Module

__all__ = ["Aligner", "myers"]

_CONTENT, _MAPPED, _TEMPLATE, _LOOSE = 1, 2, 3, 4
# Myers is O((N+M)·D): cap D, and (N+M)·D, so that one pathological gap cannot stall the diff.
_MYERS_MAX_EDITS = 400
_MYERS_BUDGET = 2_000_000
_ONE = (1).__eq__
_SHARDING_MARK = "sdy.sharding"


def _unique(keys: Sequence[Hashable]) -> set[Hashable]:
    """The keys that occur exactly once."""
    counts = Counter(keys)
    return set(compress(counts, map(_ONE, counts.values())))


def _scope_ranges(scopes: list[int]) -> dict[int, tuple[int, int]] | None:
    """Each function's lines as a range ``(start, stop)``, or None if a function's lines are not
    one run (the readers make runs; this does not count on it)."""
    n = len(scopes)
    starts = [0, *compress(range(1, n), map(ne, islice(scopes, 1, None), scopes))] if n else []
    ranges = {scopes[k]: (k, stop) for k, stop in zip(starts, [*starts[1:], n])}
    return ranges if len(ranges) == len(starts) else None


def _unique_lcs(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Patience anchors: the longest increasing run of keys occurring once in ``a`` and ``b``."""
    unique = _unique(a) & _unique(b)
    if not unique:
        return []
    pos_a = dict(zip(a, range(len(a))))  # the last position of each key: the only one of a unique key
    js = list(compress(range(len(b)), map(unique.__contains__, b)))
    xs = list(map(pos_a.__getitem__, map(b.__getitem__, js)))
    if all(map(lt, xs, islice(xs, 1, None))):
        return list(zip(xs, js))  # already increasing: the run is all of them
    tails: list[int] = []  # smallest a-index ending an increasing run of each length
    tail_at: list[int] = []  # index into xs of that run's end
    back = [-1] * len(xs)
    for idx, i in enumerate(xs):
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
        out.append((xs[idx], js[idx]))
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
        self._match = self._matcher()

    def _pair_scopes(self) -> None:
        """Pair functions by the majority of their lines with a unique, shared content key."""
        kb, ka = self.b.keys, self.a.keys
        shared = _unique(kb) & _unique(ka)
        in_b, in_a = _scope_ranges(self.b.scopes), _scope_ranges(self.a.scopes)
        if in_b is not None and in_a is not None and len(in_b) * len(in_a) <= 64:
            # A few functions, each a run of lines: count the shared keys of each pair of them.
            keys_b = {sb: shared.intersection(kb[i0:i1]) for sb, (i0, i1) in in_b.items()}
            keys_a = {sa: shared.intersection(ka[j0:j1]) for sa, (j0, j1) in in_a.items()}
            votes = Counter({(sa, sb): n for sa, ks in keys_a.items() for sb, kt in keys_b.items()
                             if (n := len(ks & kt))})
        else:
            scope_b = dict(zip(kb, self.b.scopes))  # a unique key's function
            scope_a = dict(zip(ka, self.a.scopes))
            votes = Counter(zip(map(scope_a.__getitem__, shared), map(scope_b.__getitem__, shared)))
        for (sa, sb), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if sa not in self.scope_pair and sb not in self.scope_taken:
                self.scope_pair[sa] = sb
                self.scope_taken.add(sb)

    def map_line(self, i: int, j: int, *, uses: bool) -> None:
        """Pair the values of aligned lines: always what they define, their operands if ``uses``."""
        self._match(i, j, uses, False)

    def _matcher(self) -> Callable[[int, int, bool, bool], bool]:
        """``match(i, j, uses, align)`` pairs the values of line ``i`` (before) and line ``j``
        (after): those they define, and those they use too if ``uses``; a value is left alone if it
        is paired already, is defined nowhere, has another kind of name or lives in a function
        paired otherwise. With ``align`` it first checks the lines against the pairing found so far
        (as ``consistent`` does): if they agree it aligns them, else it does nothing and says False.
        """
        a, b = self.a, self.b
        a_refs, b_refs, a_line, b_line = a.refs, b.refs, a.v_line, b.v_line
        a_prefix, b_prefix, a_scope, b_scope = a.v_prefix, b.v_prefix, a.v_scope, b.v_scope
        amap, taken, scope_pair, scope_taken = self.amap, self.taken, self.scope_pair, self.scope_taken
        add_pair = self.pairs.append

        def match(i: int, j: int, uses: bool, align: bool) -> bool:
            ra, rb = a_refs[j], b_refs[i]
            if align:
                for va, vb in zip(ra, rb):  # consistent(i, j)
                    if a_line[va] == j and b_line[vb] == i:
                        mapped = amap[va]
                        if mapped != vb and (mapped >= 0 or taken[vb]):
                            return False
                add_pair((i, j))
            for va, vb in zip(ra, rb):
                if amap[va] >= 0 or taken[vb]:
                    continue
                la, lb = a_line[va], b_line[vb]
                if la < 0 or lb < 0 or not (uses or (la == j and lb == i)):
                    continue
                if a_prefix[va] != b_prefix[vb]:
                    continue  # keep names honest: an "add" is never printed under a "multiply"'s name
                sa, sb = a_scope[va], b_scope[vb]
                paired = scope_pair.get(sa)
                if paired is None:
                    if sb in scope_taken:
                        continue
                    scope_pair[sa] = sb
                    scope_taken.add(sb)
                elif paired != sb:
                    continue
                amap[va] = vb
                taken[vb] = True
            return True

        return match

    def _checker(self) -> Callable[[int, int], bool]:
        """``consistent(i, j)``: False if the values that line ``i`` (before) and line ``j`` (after)
        define are already paired with other values."""
        a_refs, b_refs, a_line, b_line = self.a.refs, self.b.refs, self.a.v_line, self.b.v_line
        amap, taken = self.amap, self.taken

        def consistent(i: int, j: int) -> bool:
            for va, vb in zip(a_refs[j], b_refs[i]):
                if a_line[va] == j and b_line[vb] == i:
                    mapped = amap[va]
                    if mapped != vb and (mapped >= 0 or taken[vb]):
                        return False
            return True

        return consistent

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
        """The aligned line pairs ``(before line, after line)``, in order.

        Ranges are worked on from a stack, popped left to right, so values are mapped roughly in
        definition order. In a range, the lines whose keys agree from the start, then from the
        end, are aligned; in what is left, the patience anchors (from the second round on, if
        there are none, Myers' matches), and the gaps between them go on the stack: for the same
        round after patience anchors, for the next one after Myers'.
        """
        consistent = self._checker()
        fixed, last = self._round_keys()
        stack = [(_CONTENT, 0, len(self.b.fmts), 0, len(self.a.fmts))]
        while stack:
            stack.extend(reversed(self._step(stack.pop(), fixed, last, consistent)))
        self.pairs.sort()
        return self.pairs

    def _round_keys(self) -> tuple[dict, int]:
        """The keys of the rounds that do not change as values pair (content, template, and the
        templates without what a pass writes on every line: made when a range first gets that far),
        and the last round."""
        fixed: dict = {_CONTENT: (self.b.keys, self.a.keys), _TEMPLATE: (self.b.fmts, self.a.fmts)}
        loose = self._loose()
        if loose is None:
            return fixed, _TEMPLATE
        # a last round for lines that differ by that alone: the templates without it, so such lines pair
        # as changed ones (the difference shown) rather than as a deleted and an inserted line
        fixed[_LOOSE] = lambda: ([loose(f) for f in self.b.fmts], [loose(f) for f in self.a.fmts])
        return fixed, _LOOSE

    def _loose(self) -> Callable[[str], str] | None:
        """What the last round drops from a line: HLO's layouts (layout assignment writes one on every
        instruction; a TPU's carry tiles and memory spaces, ``{1,0:T(8,128)S(1)}``, that later passes change),
        MLIR's Shardy shardings (what propagation writes on every op); None where neither applies."""
        if self.b.hlo and self.a.hlo:
            return without_layout
        if any(_SHARDING_MARK in f for f in self.a.fmts) or any(_SHARDING_MARK in f for f in self.b.fmts):
            return without_shardings
        return None

    def _step(self, work: tuple[int, int, int, int, int], fixed: dict, last: int,
              consistent: Callable[[int, int], bool]) -> list[tuple[int, int, int, int, int]]:
        """Align what one range ``(round, i0, i1, j0, j1)`` of the stack can: its ends, then its
        anchors; the ranges still to do, left to right."""
        level, i0, i1, j0, j1 = work
        uses = level < _TEMPLATE
        if level == _MAPPED:  # keys of the value pairing as it stands now, for this range
            kb, ka = self._keys(level, i0, i1, j0, j1)
            ob, oa = i0, j0
        else:
            if callable(fixed[level]):
                fixed[level] = fixed[level]()
            kb, ka = fixed[level]
            ob = oa = 0
        i, e, j, f = self._align_ends(kb, ka, ob, oa, (i0, i1, j0, j1), uses, consistent)
        if i == e or j == f:
            return []
        anchors, between = self._anchors(level, kb[i - ob : e - ob], ka[j - oa : f - oa], i, j, uses)
        if not anchors:
            return [(level + 1, i, e, j, f)] if level < last else []
        if between > last:
            return []
        return _gaps(anchors, between, i, e, j, f)

    def _align_ends(self, kb: Sequence, ka: Sequence, ob: int, oa: int, bounds: tuple[int, int, int, int],
                    uses: bool, consistent: Callable[[int, int], bool]) -> tuple[int, int, int, int]:
        """Align the lines of the range ``bounds`` whose keys (``kb``, ``ka``, from lines ``ob``,
        ``oa``) agree from the start, then from the end (those consistent with the pairing so far):
        the range left between them, ``(i, e, j, f)``."""
        match = self._match
        i0, i1, j0, j1 = bounds
        i, j = i0, j0
        while i < i1 and j < j1 and kb[i - ob] == ka[j - oa] and match(i, j, uses, True):
            i += 1
            j += 1
        e, f = i1, j1
        while e > i and f > j and kb[e - 1 - ob] == ka[f - 1 - oa] and consistent(e - 1, f - 1):
            e -= 1
            f -= 1
        for t in range(e, i1):
            match(t, f + t - e, uses, True)
        return i, e, j, f

    def _anchors(self, level: int, kb: Sequence, ka: Sequence, i0: int, j0: int, uses: bool
                 ) -> tuple[list[tuple[int, int]], int]:
        """The anchors of a range's keys that align, as offsets from ``(i0, j0)``: patience's, or from
        the second round on, if there are none, Myers' matches (final for this key: what lies
        between them goes one round down); and the round that handles the gaps between them."""
        anchors = _unique_lcs(kb, ka)
        between = level
        if not anchors and level != _CONTENT:
            max_d = min(_MYERS_MAX_EDITS, _MYERS_BUDGET // (len(kb) + len(ka)))
            anchors = myers(kb, ka, max_d) or []
            between = level + 1
        return [(x, y) for x, y in anchors if self._match(i0 + x, j0 + y, uses, True)], between


def _gaps(anchors: list[tuple[int, int]], level: int, i0: int, i1: int, j0: int, j1: int
          ) -> list[tuple[int, int, int, int, int]]:
    """The ranges of round ``level`` between the ``anchors`` (offsets from ``(i0, j0)``) of the range
    ``i0:i1``, ``j0:j1``, and after the last one, left to right."""
    gaps = []
    pi, pj = i0, j0
    for x, y in anchors:
        x += i0
        y += j0
        if pi < x and pj < y:
            gaps.append((level, pi, x, pj, y))
        pi, pj = x + 1, y + 1
    if pi < i1 and pj < j1:
        gaps.append((level, pi, i1, pj, j1))
    return gaps
