"""``diff_texts``: normalize two modules, align them, name the after values after their
counterparts, find the moves, and write the edit script a ``Diff`` shows."""

from __future__ import annotations

import re

from ...ir.text import input_kind
from .align import Aligner
from .normalize import collector_paused, read_module
from .result import CHANGED, DELETED, EQUAL, INSERTED, MOVED_IN, MOVED_OUT, Diff

__all__ = ["diff_texts"]

_HAS_WORD = re.compile(r"\w")


def _after_names(aligner: Aligner) -> list[str]:
    """After-values' names: their before counterpart's, else a number past the before module's."""
    b, a = aligner.b, aligner.a
    next_number: dict[tuple[int, str], int] = {}
    for scope, family, number in zip(b.v_scope, b.v_family, b.v_number):
        key = (scope, family)
        if next_number.get(key, 0) <= number:
            next_number[key] = number + 1
    names = list(a.v_name)
    for va, vb in enumerate(aligner.amap):
        if vb >= 0:
            names[va] = b.v_name[vb]
            continue
        if a.v_line[va] < 0:
            continue  # never defined: keeps its printed name
        sb = aligner.scope_pair.get(a.v_scope[va])
        if sb is None:
            continue  # a function with no counterpart keeps its own numbering
        key = (sb, a.v_family[va])
        number = next_number.get(key, 0)
        next_number[key] = number + 1
        names[va] = f"{a.v_prefix[va]}{number}"
    return names


def diff_texts(
    before_text: str, after_text: str, before_name: str = "before", after_name: str = "after"
) -> Diff:
    """Diff two versions of an MLIR or HLO module (see the package docstring for how)."""
    with collector_paused():
        return _diff(before_text, after_text, before_name, after_name)


def _diff(before_text: str, after_text: str, before_name: str, after_name: str) -> Diff:
    b, a = read_module(before_text), read_module(after_text)
    aligner = Aligner(b, a)
    pairs = aligner.run()
    matched_b = [False] * len(b.fmts)
    matched_a = [False] * len(a.fmts)
    for i, j in pairs:
        matched_b[i] = matched_a[j] = True
    # Moved ops: same content key; pairing them also pairs their values before naming.
    waiting: dict[int, list[int]] = {}
    for i in range(len(b.fmts) - 1, -1, -1):
        if not matched_b[i] and _HAS_WORD.search(b.fmts[i]):
            waiting.setdefault(b.keys[i], []).append(i)
    candidates: list[tuple[int, int]] = []
    for j in range(len(a.fmts)):
        if not matched_a[j] and (stack := waiting.get(a.keys[j])):
            i = stack.pop()
            candidates.append((i, j))
            aligner.map_line(i, j, uses=True)
    before = b.render(b.v_name)
    after = a.render(_after_names(aligner))
    moves = [(i, j) for i, j in candidates if before[i] == after[j]]
    moved_b = {i for i, _ in moves}
    moved_a = {j for _, j in moves}
    by_text: dict[str, list[int]] = {}
    for i in range(len(before) - 1, -1, -1):
        if not matched_b[i] and i not in moved_b and _HAS_WORD.search(before[i]):
            by_text.setdefault(before[i], []).append(i)
    for j in range(len(after)):
        if not matched_a[j] and j not in moved_a and (stack := by_text.get(after[j])):
            i = stack.pop()
            moves.append((i, j))
            moved_b.add(i)
            moved_a.add(j)
    moves.sort()

    script: list[tuple[str, int, int]] = []
    i = j = 0
    for pi, pj in pairs + [(len(before), len(after))]:
        for ii in range(i, pi):
            script.append((MOVED_OUT if ii in moved_b else DELETED, ii, j))
        for jj in range(j, pj):
            script.append((MOVED_IN if jj in moved_a else INSERTED, pi, jj))
        if pi < len(before):
            script.append((EQUAL if before[pi] == after[pj] else CHANGED, pi, pj))
        i, j = pi + 1, pj + 1
    return Diff(
        before_name=before_name,
        after_name=after_name,
        before=tuple(before),
        after=tuple(after),
        hlo="hlo" in (input_kind(before_text), input_kind(after_text)),
        _script=tuple(script),
        _moves=tuple(moves),
    )