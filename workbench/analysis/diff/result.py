"""The diff of two modules as a value, and what it shows: changes, rows, a unified patch,
side-by-side HTML and the op counts that differ. ``compare.diff_texts`` builds it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import TYPE_CHECKING, Literal

from markupsafe import Markup, escape

from ...ir.ops import op_counts

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Change", "ChangeKind", "Diff", "ops_delta_rows", "EQUAL", "CHANGED", "DELETED", "INSERTED", "MOVED_OUT", "MOVED_IN", "RUNS",
           "rows_of_runs"]

ChangeKind = Literal["delete", "insert", "replace", "move"]


@dataclass(frozen=True)
class Change:
    """One change between the normalized lines of ``Diff.before`` and ``Diff.after``.

    Ranges are 0-based, half-open line indices. A ``"delete"`` has an empty ``after`` range (and an
    ``"insert"`` an empty ``before`` range) placed where the lines were removed (added). A
    ``"move"`` gives where the lines were (``before``) and where they are now (``after``).
    """

    kind: ChangeKind
    before: range
    after: range



# Script step tags: aligned and equal / aligned but changed / deleted / inserted / moved away from
# here / moved to here.
EQUAL, CHANGED, DELETED, INSERTED, MOVED_OUT, MOVED_IN = "=", "~", "-", "+", "<", ">"
_TOKEN = re.compile(r"%?[\w.$#\-]+|\s+|.")
_NOT_EQUAL = re.compile(f"[^{EQUAL}]+")
_SAME_TAG = re.compile(r"(.)\1*")
RUNS = r"(?:[-=~+<>][1-9][0-9]{0,8})*"
"""What ``Diff.runs()`` writes, as a regular expression (a saved form's description checks it)."""
_RUN = re.compile(r"([-=~+<>])([1-9][0-9]{0,8})")

_CSS = """
.wb-diff table{border-collapse:collapse;font-family:monospace;font-size:12px}
.wb-diff th{text-align:left;padding:2px 6px;border-bottom:1px solid #999}
.wb-diff td{padding:0 6px;white-space:pre;vertical-align:top}
.wb-diff td.wb-diff-ln{color:#888;text-align:right;user-select:none}
.wb-diff tr.wb-diff-deleted td.wb-diff-code{background:#fdd}
.wb-diff tr.wb-diff-inserted td.wb-diff-code{background:#dfd}
.wb-diff tr.wb-diff-changed td.wb-diff-code{background:#ffc}
.wb-diff tr.wb-diff-moved td.wb-diff-code{background:#def}
.wb-diff tr.wb-diff-skip td{color:#888;font-style:italic}
.wb-diff span.wb-diff-tok{background:#fb6}
"""


def _unified_range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


@dataclass(frozen=True)
class Diff:
    """The aligned, normalized difference between two versions of a module.

    ``before`` is ``normalize(before_text)``; ``after`` is the after text normalized onto the
    before module's value names (values with no counterpart get fresh numbers), so equal lines
    are equal text. ``hlo`` says whether the texts are XLA HLO. Build it with :func:`diff_texts`.
    """

    before_name: str
    after_name: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    hlo: bool
    _script: tuple[tuple[str, int, int], ...] = field(repr=False)
    _moves: tuple[tuple[int, int], ...] = field(repr=False)

    @property
    def is_empty(self) -> bool:
        """True when every line aligns with an equal line."""
        return not _NOT_EQUAL.search(self._tags)

    @cached_property
    def _changes(self) -> tuple[Change, ...]:
        changes: list[Change] = []
        run: list[tuple[str, int, int]] = []

        def close_run() -> None:
            if not run:
                return
            bi = [i for tag, i, _ in run if tag != INSERTED]
            aj = [j for tag, _, j in run if tag != DELETED]
            i_at, j_at = run[0][1], run[0][2]
            before = range(bi[0], bi[-1] + 1) if bi else range(i_at, i_at)
            after = range(aj[0], aj[-1] + 1) if aj else range(j_at, j_at)
            kind: ChangeKind = "replace" if bi and aj else ("delete" if bi else "insert")
            changes.append(Change(kind, before, after))
            run.clear()

        for step in self._script:
            if step[0] in (CHANGED, DELETED, INSERTED):
                run.append(step)
            else:
                close_run()
        close_run()
        # Consecutive moved lines that stay consecutive are one move.
        start = 0
        moves = self._moves
        for k in range(1, len(moves) + 1):
            if k == len(moves) or moves[k] != (moves[k - 1][0] + 1, moves[k - 1][1] + 1):
                (i0, j0), (i1, j1) = moves[start], moves[k - 1]
                changes.append(Change("move", range(i0, i1 + 1), range(j0, j1 + 1)))
                start = k
        changes.sort(key=lambda c: (c.before.start, c.after.start))
        return tuple(changes)

    @property
    def changes(self) -> list[Change]:
        """Each change, in before-line order; see :class:`Change`."""
        return list(self._changes)

    def rows(self) -> list[tuple[int, int, str]]:
        """The alignment, one row per displayed line: ``(before line, after line, kind)``, 0-based,
        -1 where a side has no line; kind is equal, changed, deleted, inserted or moved (a moved
        line appears twice: where it left and where it arrived)."""
        kinds = {EQUAL: "equal", CHANGED: "changed", DELETED: "deleted", INSERTED: "inserted",
                 MOVED_OUT: "moved", MOVED_IN: "moved"}
        return [(-1 if tag in (INSERTED, MOVED_IN) else i, -1 if tag in (DELETED, MOVED_OUT) else j, kinds[tag])
                for tag, i, j in self._script]

    def runs(self) -> str:
        """``rows()`` as runs of one kind, each its tag and how many rows it holds, e.g. ``"=12~1-3+2=40"``:
        ``=`` equal, ``~`` changed, ``-`` deleted, ``+`` inserted, ``<`` moved away, ``>`` moved here. Each
        before line is in exactly one row, in order, and so is each after line, so the tags alone say
        which lines a row shows: ``rows_of_runs`` reads the rows back. What a saved form carries."""
        return "".join(f"{m[1]}{m.end() - m.start()}" for m in _SAME_TAG.finditer(self._tags))

    @staticmethod
    def _hunk_lines(steps: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """(tag, before cursor, after cursor) per printed line, "-" lines before "+" lines."""
        out: list[tuple[str, int, int]] = []
        minus: list[tuple[str, int, int]] = []
        plus: list[tuple[str, int, int]] = []
        for tag, i, j in steps:
            if tag == EQUAL:
                out.extend(minus)
                out.extend(plus)
                minus.clear()
                plus.clear()
                out.append((" ", i, j))
                continue
            if tag in (CHANGED, DELETED, MOVED_OUT):
                minus.append(("-", i, j))
            if tag in (CHANGED, INSERTED, MOVED_IN):
                plus.append(("+", i if tag != CHANGED else i + 1, j))
        out.extend(minus)
        out.extend(plus)
        return out

    @cached_property
    def _tags(self) -> str:
        """The script's step tags as one string."""
        return "".join(map(itemgetter(0), self._script))

    def unified(self, context: int = 3) -> str:
        """``diff -u`` of the normalized texts (moves show as a deletion and an insertion).

        Empty when there is no change.
        """
        # Printed lines: one per equal step, and per run of other steps its "-" lines, then its
        # "+" lines (a changed step is one of each). Only the runs and their context are printed.
        tags = self._tags
        runs = [m.span() for m in _NOT_EQUAL.finditer(tags)]
        if not runs:
            return ""
        if context < 1:
            return self._unified_by_lines(context)
        groups: list[list[int]] = []  # [first line, last line, first step, end step]
        doubled = 0  # changed steps so far: each prints two lines
        for start, end in runs:
            first = start + doubled
            doubled += tags.count(CHANGED, start, end)
            last = end + doubled - 1
            if groups and first - groups[-1][1] <= 2 * context:
                groups[-1][1], groups[-1][3] = last, end
            else:
                groups.append([first, last, start, end])
        n_lines = len(tags) + doubled
        hunks = []
        for first, last, start, end in groups:
            lo, hi = max(0, first - context), min(n_lines, last + context + 1)
            # Its context lines are equal steps: the next run is more than 2 * context lines away.
            hunks.append(self._hunk_lines(self._script[start - (first - lo) : end + (hi - last - 1)]))
        return self._patch(hunks)

    def _unified_by_lines(self, context: int) -> str:
        """``unified`` with hunks of printed lines rather than of runs (for ``context < 1``)."""
        lines = self._hunk_lines(self._script)
        changed = [k for k, (tag, _, _) in enumerate(lines) if tag != " "]
        if not changed:
            return ""
        groups: list[list[int]] = [[changed[0], changed[0]]]
        for k in changed[1:]:
            if k - groups[-1][1] > 2 * context:
                groups.append([k, k])
            else:
                groups[-1][1] = k
        hunks = []
        for first, last in groups:
            lo, hi = max(0, first - context), min(len(lines), last + context + 1)
            hunks.append(lines[lo:hi])
        return self._patch(hunks)

    def _patch(self, hunks: list[list[tuple[str, int, int]]]) -> str:
        out = [f"--- {self.before_name}\n", f"+++ {self.after_name}\n"]
        before, after = self.before, self.after
        for hunk in hunks:
            n_before = sum(1 for tag, _, _ in hunk if tag != "+")
            n_after = sum(1 for tag, _, _ in hunk if tag != "-")
            i_start, j_start = hunk[0][1], hunk[0][2]
            out.append(
                f"@@ -{_unified_range(i_start, i_start + n_before)}"
                f" +{_unified_range(j_start, j_start + n_after)} @@\n"
            )
            for tag, i, j in hunk:
                text = after[j] if tag == "+" else before[i]
                out.append(f"{tag}{text}\n")
        return "".join(out)

    def side_by_side(self, context: int | None = 3) -> str:
        """HTML table of the two texts in aligned columns.

        Rows are classed ``wb-diff-equal``, ``-changed``, ``-deleted``, ``-inserted`` and
        ``-moved``; in changed rows the differing tokens are marked. Unchanged runs longer than
        ``2 * context`` lines are folded (``context=None`` shows everything). All text is escaped.
        """
        rows = _side_rows(self._script)
        keep = _near_changes(rows, context) if context is not None else [True] * len(rows)
        moved_to = {i: j for i, j in self._moves}
        moved_from = {j: i for i, j in self._moves}
        out = [Markup('<div class="wb-diff"><style>{}</style><table><thead><tr><th colspan="2">{}</th>'
                      '<th colspan="2">{}</th></tr></thead><tbody>').format(Markup(_CSS), self.before_name,
                                                                           self.after_name)]
        if self.is_empty:
            out.append(Markup('<tr class="wb-diff-skip"><td colspan="4">no changes</td></tr>'))
        skipped = 0
        for k, (cls, i, j) in enumerate(rows):
            if not keep[k]:
                skipped += 1
                continue
            if skipped:
                out.append(_skip_row(skipped))
                skipped = 0
            out.append(self._row_html(cls, i, j, moved_to, moved_from))
        if skipped:
            out.append(_skip_row(skipped))
        out.append(Markup("</tbody></table></div>"))
        return str(Markup("").join(out))

    def _row_html(self, cls: str, i: int, j: int, moved_to: dict[int, int], moved_from: dict[int, int]) -> Markup:
        """One row of ``side_by_side``: before line ``i`` and after line ``j`` (-1: none) with their
        numbers, the differing tokens marked in a changed row, where a moved line went or came from."""
        left = self.before[i] if i >= 0 else ""
        right = self.after[j] if j >= 0 else ""
        if cls == "changed":
            left, right = _mark_tokens(self.before[i], self.after[j])
        title = ""
        if cls == "moved":
            title = Markup(' title="moved {} line {}"').format(*(("to", moved_to[i] + 1) if i >= 0
                                                                 else ("from", moved_from[j] + 1)))
        return Markup('<tr class="wb-diff-{}"{}><td class="wb-diff-ln">{}</td><td class="wb-diff-code">{}</td>'
                      '<td class="wb-diff-ln">{}</td><td class="wb-diff-code">{}</td></tr>').format(
            cls, title, i + 1 if i >= 0 else "", left, j + 1 if j >= 0 else "", right)

    def _repr_html_(self) -> str:
        return self.side_by_side()

    def ops_delta(self) -> pd.DataFrame:
        """Op counts that differ: columns op, before, after, delta (after - before).

        ``op`` is the MLIR op name (``stablehlo.add``, ``func.return``) or the HLO opcode
        (``fusion``), counted as ``workbench.ir.ops.op_counts`` counts them. Sorted by ``|delta|``
        descending, then name.
        """
        import pandas as pd

        rows = [(r["op"], r["before"], r["after"], r["delta"]) for r in self.ops_delta_rows()]
        return pd.DataFrame(rows, columns=["op", "before", "after", "delta"]).astype(
            {"before": "int64", "after": "int64", "delta": "int64"}
        )

    def ops_delta_rows(self) -> list[dict]:
        """``ops_delta()``'s rows as dicts (op, before, after, delta), made without pandas (a view's, whose
        first cell would otherwise import it)."""
        return ops_delta_rows("\n".join(self.before), "\n".join(self.after))


def ops_delta_rows(before: str, after: str) -> list[dict]:
    """The ops whose count differs from the text ``before`` to ``after`` (``ir.ops.op_counts``), as dicts: op,
    before, after, delta (after - before); sorted by ``|delta|`` descending, then name."""
    count_b, count_a = op_counts(before), op_counts(after)
    rows = [{"op": op, "before": count_b[op], "after": count_a[op], "delta": count_a[op] - count_b[op]}
            for op in sorted(count_b.keys() | count_a.keys()) if count_a[op] != count_b[op]]
    rows.sort(key=lambda r: (-abs(r["delta"]), r["op"]))
    return rows


def _skip_row(count: int) -> Markup:
    return Markup('<tr class="wb-diff-skip"><td colspan="4">… {} unchanged lines …</td></tr>').format(count)


# A script step's row in ``side_by_side``: its class, and whether it shows its before and after line.
_ROW_OF = {EQUAL: ("equal", True, True), CHANGED: ("changed", True, True), DELETED: ("deleted", True, False),
           INSERTED: ("inserted", False, True), MOVED_OUT: ("moved", True, False), MOVED_IN: ("moved", False, True)}


def rows_of_runs(runs: str) -> list[tuple[int, int, str]]:
    """The rows (as ``Diff.rows()`` gives them) of ``Diff.runs()``; ValueError for a string that is not runs."""
    if not re.fullmatch(RUNS, runs):
        raise ValueError(f"not runs of a diff's rows: {runs[:80]!r}")
    out: list[tuple[int, int, str]] = []
    i = j = 0
    for tag, count in _RUN.findall(runs):
        kind, left, right = _ROW_OF[tag]
        for _ in range(int(count)):
            out.append((i if left else -1, j if right else -1, kind))
            i, j = i + left, j + right
    return out


def _side_rows(script: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The rows of ``side_by_side``, one per script step: (class, before line or -1, after line or -1)."""
    rows = []
    for tag, i, j in script:
        cls, left, right = _ROW_OF[tag]
        rows.append((cls, i if left else -1, j if right else -1))
    return rows


def _near_changes(rows: list[tuple[str, int, int]], context: int) -> list[bool]:
    """Which rows ``side_by_side`` shows: those within ``context`` rows of one that is not equal."""
    near = [False] * len(rows)
    for k, row in enumerate(rows):
        if row[0] != "equal":
            for t in range(max(0, k - context), min(len(rows), k + context + 1)):
                near[t] = True
    return near


def _mark_tokens(old: str, new: str) -> tuple[Markup, Markup]:
    """Escaped ``old`` and ``new`` with the tokens that differ wrapped in ``wb-diff-tok`` spans."""
    ta, tb = _TOKEN.findall(old), _TOKEN.findall(new)
    sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    token = Markup('<span class="wb-diff-tok">{}</span>')
    left: list[Markup] = []
    right: list[Markup] = []
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        la, lb = "".join(ta[a0:a1]), "".join(tb[b0:b1])
        if la:
            left.append(escape(la) if op == "equal" else token.format(la))
        if lb:
            right.append(escape(lb) if op == "equal" else token.format(lb))
    return Markup("").join(left), Markup("").join(right)
