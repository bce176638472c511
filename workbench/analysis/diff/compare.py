"""``diff_texts``: normalize two modules, align them, name the after values after their
counterparts, find the moves, and write the edit script a ``Diff`` shows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import ne, sub

from .align import Aligner
from ...ir.collector import collector_paused
from .normalize import read_module
from .result import CHANGED, DELETED, EQUAL, INSERTED, MOVED_IN, MOVED_OUT, Diff

__all__ = ["diff_texts"]

_HAS_WORD = re.compile(r"\w")
_UNPAIRED = (-1).__eq__
_TAG = {True: EQUAL, False: CHANGED}


def _after_names(aligner: Aligner) -> list[str]:
    """After-values' names: their before counterpart's, else a number past the before module's."""
    b, a = aligner.b, aligner.a
    amap = aligner.amap
    names = list(map([*b.v_name, ""].__getitem__, amap))  # -1 reads the ""
    fresh: list[tuple[int, tuple[int, str]]] = []
    for va in compress(range(len(amap)), map(_UNPAIRED, amap)):
        names[va] = a.v_name[va]
        if a.v_line[va] < 0:
            continue  # never defined: keeps its printed name
        sb = aligner.scope_pair.get(a.v_scope[va])
        if sb is None:
            continue  # a function with no counterpart keeps its own numbering
        fresh.append((va, (sb, a.v_family[va])))
    if not fresh:
        return names
    wanted = {key for _, key in fresh}
    next_number = dict.fromkeys(wanted, 0)
    for key, number in zip(zip(b.v_scope, b.v_family), b.v_number):
        if key in wanted and next_number[key] <= number:
            next_number[key] = number + 1
    for va, key in fresh:
        number = next_number[key]
        next_number[key] = number + 1
        names[va] = f"{a.v_prefix[va]}{number}"
    return names


def diff_texts(
    before_text: str, after_text: str, before_name: str = "before", after_name: str = "after"
) -> Diff:
    """Diff two versions of an MLIR or HLO module (see the package docstring for how)."""
    with collector_paused():
        return _diff(before_text, after_text, before_name, after_name)


def _unmatched(n: int, pairs_side: list[int]) -> list[int]:
    """The indices below ``n`` that are not in ``pairs_side``, in order."""
    return sorted(set(range(n)).difference(pairs_side))


def _diff(before_text: str, after_text: str, before_name: str, after_name: str) -> Diff:
    b, a = read_module(before_text), read_module(after_text)
    aligner = Aligner(b, a)
    pairs = aligner.run()
    nb, na = len(b.fmts), len(a.fmts)
    bi, aj = (list(side) for side in zip(*pairs)) if pairs else ([], [])
    free_b, free_a = _unmatched(nb, bi), _unmatched(na, aj)
    # Moved ops: same content key; pairing them also pairs their values before naming.
    waiting: dict[int, list[int]] = {}
    for i in reversed(free_b):
        if _HAS_WORD.search(b.fmts[i]):
            waiting.setdefault(b.keys[i], []).append(i)
    candidates: list[tuple[int, int]] = []
    for j in free_a:
        if stack := waiting.get(a.keys[j]):
            i = stack.pop()
            candidates.append((i, j))
            aligner.map_line(i, j, uses=True)
    before = b.lines
    after = a.render(_after_names(aligner))
    moves = [(i, j) for i, j in candidates if before[i] == after[j]]
    moved_b = {i for i, _ in moves}
    moved_a = {j for _, j in moves}
    by_text: dict[str, list[int]] = {}
    for i in reversed(free_b):
        if i not in moved_b and _HAS_WORD.search(before[i]):
            by_text.setdefault(before[i], []).append(i)
    for j in free_a:
        if j not in moved_a and (stack := by_text.get(after[j])):
            i = stack.pop()
            moves.append((i, j))
            moved_b.add(i)
            moved_a.add(j)
    moves.sort()
    return Diff(
        before_name=before_name,
        after_name=after_name,
        before=before,
        after=tuple(after),
        hlo=b.hlo or a.hlo,
        _script=_script(before, after, bi, aj, moved_b, moved_a),
        _moves=tuple(moves),
    )


def _script(
    before: Sequence[str], after: Sequence[str], bi: list[int], aj: list[int], moved_b: set[int], moved_a: set[int]
) -> tuple[tuple[str, int, int], ...]:
    """The edit script: per aligned pair an equal or changed step, and before each pair the
    deleted (or moved away) lines and inserted (or moved in) lines since the previous pair."""
    aligned = list(zip(map(_TAG.__getitem__, map(str.__eq__, map(before.__getitem__, bi), map(after.__getitem__, aj))), bi, aj))
    # The pairs that do not follow their predecessor on both sides have lines before them.
    jumps = compress(range(len(bi)), map(ne, map(sub, bi, chain((-1,), bi)), repeat(1)))
    jumps_a = compress(range(len(aj)), map(ne, map(sub, aj, chain((-1,), aj)), repeat(1)))
    script: list[tuple[str, int, int]] = []
    done = 0  # steps of ``aligned`` copied so far
    i = j = 0
    for k in [*sorted({*jumps, *jumps_a}), len(bi)]:
        script += aligned[done:k]
        if k:
            i, j = bi[k - 1] + 1, aj[k - 1] + 1
        pi, pj = (bi[k], aj[k]) if k < len(bi) else (len(before), len(after))
        script += [(MOVED_OUT if ii in moved_b else DELETED, ii, j) for ii in range(i, pi)]
        script += [(MOVED_IN if jj in moved_a else INSERTED, pi, jj) for jj in range(j, pj)]
        done = k
    return tuple(script)
