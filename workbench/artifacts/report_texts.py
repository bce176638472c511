"""The stage texts and structural diffs an offline report carries (``report.py``), within its limits.

The texts are the normalized ones the diff shows (``analysis.diff.normalize``), each distinct text once,
as runs over a pool of distinct lines, so a 54-stage pipeline whose stages mostly repeat their parents'
lines stays small. The workbench's structural diff is precomputed for every stage against its parent
and for a few other pairs, each as the view model's ``diff`` entry holds it (``Diff.runs()``, the two
normalized texts by their ids); the page's components ask for a pair by name (``assets/reporthost.js``)
and a pair not precomputed says so: no diff is made in the page.

``ReportLimits`` bound what is listed, read, embedded and diffed: past ``stages`` stages, only the
first and last half of that many (and those the diff and the graph open on) are listed, their texts
read, costed and diffed, and each run of the others is one line naming its first and last and how many
it holds (``shown_stages``); a stage text over ``text_chars`` is embedded cut (as printed, not
normalized: a module cut in two does not read) and is not diffed; past
``total_chars`` of distinct texts in all, a text is cut to what is left, then replaced by one line saying
so; a structural diff is precomputed only for stages of at most ``diff_lines`` lines, ``diff_budget``
lines in all. A cut or missing text ends with, or is, a line saying where the whole text is. So the
work and the size grow with the program up to those caps and no further, whatever the number and
size of its stages.
"""
from __future__ import annotations

import base64
import gzip
from dataclasses import dataclass, field

from ..analysis.diff import diff_texts, normalize
from .jsonout import json_text
from ..stages import STABLEHLO

__all__ = ["LIMITS", "REFERENCE", "Gap", "PackedTexts", "ReportLimits", "TextUsage", "limits_note", "pack_texts",
           "pairs_note", "shown_stages"]

REFERENCE = STABLEHLO  # the stage every MLIR stage is also diffed with


@dataclass(frozen=True)
class ReportLimits:
    """What one report may list, read, embed and compute (see the module docstring); its header states them.

    ``stages``: the most stages listed one by one (the first and last half of them, and the pair the diff
    opens on and the graph's), whose texts are read, costed and diffed -- a pipeline of 10,000 passes
    costs the report what 200 do; ``text_chars``: the most characters of one stage's text read and
    embedded whole; ``total_chars``: of all distinct stage texts together; ``diff_lines``: the most
    lines of either stage of a precomputed structural diff; ``diff_budget``: lines (both sides) of all
    precomputed diffs together; ``graph_seconds``: the time graphviz may take to lay the graph out.
    """

    text_chars: int = 4_000_000
    total_chars: int = 16_000_000
    diff_lines: int = 60_000
    diff_budget: int = 600_000
    graph_seconds: float = 20.0
    stages: int = 200


LIMITS = ReportLimits()


@dataclass
class TextUsage:
    """What the limits left out of one report, and what it spent."""

    read_chars: int = 0  # characters of the texts read, whole or cut
    embedded_chars: int = 0  # characters of the distinct lines embedded
    diff_lines: int = 0
    cut: list[str] = field(default_factory=list)  # stages whose text is embedded cut
    left_out: list[str] = field(default_factory=list)  # stages whose text is not embedded
    diffs_left: int = 0  # pairs not precomputed for the limits
    stages_left: int = 0  # stages not listed (ReportLimits.stages)


@dataclass(frozen=True)
class PackedTexts:
    """``data``: the texts and diffs as the page reads them (JSON, gzip, base64): ``stages`` (names),
    ``pool`` (distinct lines), ``texts`` (each runs [first, count] into the pool), ``stage_text`` (each
    stage's text, -1 for a failed one), ``pairs`` ([before stage, after stage, before text, after text,
    ``Diff.runs()``]), ``note`` (the pairs besides each stage against its parent, in words); ``whole``:
    the texts read whole, with their normalized lines; ``usage``: what the limits left out."""

    data: str
    whole: dict
    usage: TextUsage


class _Texts:
    """Distinct texts, each a list of runs (first, count) of consecutive indices into a pool of lines."""

    def __init__(self):
        self.pool: dict[str, int] = {}
        self.runs: list[list[int]] = []
        self.ids: dict[str, int] = {}

    def add(self, lines) -> int:
        key = "\n".join(lines)
        known = self.ids.get(key)
        if known is not None:
            return known
        runs: list[int] = []
        pool = self.pool
        for line in lines:
            k = pool.setdefault(line, len(pool))
            if runs and runs[-2] + runs[-1] == k:
                runs[-1] += 1
            else:
                runs += [k, 1]
        self.ids[key] = len(self.runs)
        self.runs.append(runs)
        return self.ids[key]


def _lines(text: str) -> list[str]:
    try:
        return normalize(text)
    except Exception:  # a text the diff's reader cannot read is shown as it is
        return text.splitlines()


def _cut(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, ended at the last whole line among them (if any)."""
    head = text[:chars]
    end = head.rfind("\n")
    return head[:end] if end > 0 else head


def _embedded(text: str, name: str, limits: ReportLimits, usage: TextUsage) -> tuple[list[str], bool]:
    """The lines embedded for a stage text first seen at stage ``name``, and whether it was read whole:
    normalized within the limits; else cut, or only a line saying why it is not there."""
    size = len(text)
    room = limits.total_chars - usage.read_chars
    where = f"ex.stage({name!r}).text has all of it"
    if size <= limits.text_chars and size <= room:
        usage.read_chars += size
        return _lines(text), True
    if room > 0:
        allowed = min(limits.text_chars, room)
        head = _cut(text, allowed)
        usage.read_chars += allowed
        usage.cut.append(name)
        why = "text_chars" if size > limits.text_chars else "total_chars, nearly spent on the stages before it"
        return head.splitlines() + [
            f"[hlo-workbench report: this text is {size:,} characters; only its first {len(head):,} are embedded "
            f"(ReportLimits.{why}), as printed, not normalized; {where}]"], False
    usage.left_out.append(name)
    return [f"[hlo-workbench report: this text ({size:,} characters) is not embedded: the report reads at most "
            f"{limits.total_chars:,} characters of stage texts in all (ReportLimits.total_chars), spent on the "
            f"stages before it; {where}]"], False


def pack_texts(stages, first: tuple[str, str], limits: ReportLimits = LIMITS) -> PackedTexts:
    """The stage texts of ``stages`` and their precomputed diffs, within ``limits`` (see ``PackedTexts``);
    ``first`` is the pair the page shows first.

    Each stage is diffed with its parent right after it is read, while the diff's reader still holds
    both modules (``normalize.read_module`` keeps the last few)."""
    packer = _Packer(stages, limits)
    for s in stages:
        packer.read(s)
    extra = _extra_pairs(stages, first, packer.by_name)
    for a, b in extra:
        packer.diff(a, b)
    return packer.packed(extra)


def _extra_pairs(stages, first, by_name) -> list[tuple[str, str]]:
    """The pairs diffed besides each stage against its parent: the first pair, the reference against each
    distinct MLIR text, and XLA's module before against after its optimizations."""
    ref = next((s.name for s in stages if s.name == REFERENCE and not s.error), None)
    distinct_mlir = {s.text: s.name for s in reversed(stages) if s.group == "mlir" and not s.error}
    extra = [tuple(first)] + [(ref, n) for n in reversed(distinct_mlir.values()) if ref is not None]
    extra += [p for p in [("xla:before_optimizations", "xla:optimized")] if all(n in by_name for n in p)]
    wanted = {(s.parent, s.name) for s in stages if s.parent in by_name}
    return [p for p in dict.fromkeys(extra) if p not in wanted and p[0] != p[1]]


class _Packer:
    """One ``pack_texts``: the texts embedded so far, the pairs diffed, and what the limits left out."""

    def __init__(self, stages, limits: ReportLimits):
        self.stages, self.limits = stages, limits
        self.by_name = {s.name: k for k, s in enumerate(stages)}
        self.texts = _Texts()
        self.embedded: dict[str, list[str]] = {}  # stage text -> the lines embedded for it
        self.whole: dict[str, list[str]] = {}  # the texts read whole -> their normalized lines
        self.usage = TextUsage()
        self.stage_text: list[int] = []  # each stage's text id, -1 for a failed stage
        self.pairs: list[list] = []
        self.done: set[tuple[str, str]] = set()

    def read(self, s) -> None:
        """Embed stage ``s``'s text (each distinct text once) and diff it with its parent."""
        if s.error:
            self.stage_text.append(-1)
            return
        if s.text not in self.embedded:
            lines, read = _embedded(s.text, s.name, self.limits, self.usage)
            self.embedded[s.text] = lines
            if read:
                self.whole[s.text] = lines
        self.stage_text.append(self.texts.add(self.embedded[s.text]))
        if s.parent in self.by_name:
            self.diff(s.parent, s.name)

    def diff(self, a: str, b: str) -> None:
        """Precompute the diff of stage ``a`` against ``b`` if both were read whole and it is within the
        limits."""
        sa, sb = self.stages[self.by_name[a]], self.stages[self.by_name[b]]
        if sa.error or sb.error or (a, b) in self.done:
            return
        la, lb = self.whole.get(sa.text), self.whole.get(sb.text)
        if la is not None and la == lb:
            t = self.texts.add(la)
            self._pair(a, b, t, t, f"={len(la)}" if la else "")
            return
        limits, usage = self.limits, self.usage
        if (la is None or lb is None or max(len(la), len(lb)) > limits.diff_lines
                or usage.diff_lines + len(la) + len(lb) > limits.diff_budget):
            usage.diffs_left += 1  # not precomputed: the page says so
            return
        usage.diff_lines += len(la) + len(lb)
        try:
            d = diff_texts(sa.text, sb.text, a, b)
        except Exception:  # a text the diff cannot read: not precomputed, the page says so
            return
        self._pair(a, b, self.texts.add(d.before), self.texts.add(d.after), d.runs())

    def _pair(self, a: str, b: str, before: int, after: int, runs: str) -> None:
        self.pairs.append([self.by_name[a], self.by_name[b], before, after, runs])
        self.done.add((a, b))

    def packed(self, extra) -> PackedTexts:
        """Everything packed: the texts and pairs as JSON, gzip, base64, and what the report shows of them."""
        self.usage.embedded_chars = sum(map(len, self.texts.pool))
        data = {"stages": [s.name for s in self.stages], "pool": list(self.texts.pool), "texts": self.texts.runs,
                "stage_text": self.stage_text, "pairs": self.pairs,
                "note": pairs_note([p for p in extra if p in self.done])}
        raw = json_text(data, "the report's texts", separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        packed = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
        return PackedTexts(packed, self.whole, self.usage)


def limits_note(limits: ReportLimits, usage: TextUsage) -> str:
    """The report's limits, and what they left out of it."""
    caps = (f"at most {limits.stages:,} stages are listed one by one; "
            f"at most {limits.text_chars:,} characters of one stage's text and {limits.total_chars:,} of all are "
            f"read and embedded; structural diffs are precomputed for stages of at most {limits.diff_lines:,} lines, "
            f"{limits.diff_budget:,} lines in all; the graph is laid out within {limits.graph_seconds:g} s")
    left = []
    if usage.stages_left:
        left.append(f"{usage.stages_left:,} stage{'s' if usage.stages_left > 1 else ''} not listed, read or costed "
                    "(see the stage table)")
    if usage.cut:
        left.append(f"embedded cut, and not diffed, costed or drawn: {', '.join(usage.cut)}")
    if usage.left_out:
        left.append(f"not embedded: {', '.join(usage.left_out)}")
    if usage.diffs_left:
        left.append(f"{usage.diffs_left} pair{'s' if usage.diffs_left > 1 else ''} not precomputed (ex.diff has them)")
    return caps + (". Here: " + "; ".join(left) if left else ". Here: every stage is embedded whole") + "."


@dataclass(frozen=True)
class Gap:
    """A run of consecutive stages a report does not list: ``start`` and ``end`` their indices in
    ``ex.stages`` (both included), ``first`` and ``last`` their names."""

    start: int
    end: int
    first: str
    last: str

    @property
    def count(self) -> int:
        return self.end - self.start + 1


def shown_stages(stages, most: int, keep=()) -> tuple[list[tuple[int, object]], list[Gap]]:
    """The stages a report lists, as (index in ``stages``, stage), and the runs of those it leaves out:
    all of them when there are at most ``most``, else the first ``most // 2``, the last ``most - most // 2``
    and the stages named in ``keep`` (the pair the diff opens on, the graph's), in their order. The work
    and size of everything a report does per stage are then bounded by ``most`` plus ``len(keep)``."""
    n = len(stages)
    if n <= most:
        return list(enumerate(stages)), []
    head = most // 2
    wanted = set(range(head)) | set(range(n - (most - head), n))
    wanted |= {k for k, s in enumerate(stages) if s.name in set(keep)}
    shown, gaps, start = [], [], None
    for k, s in enumerate(stages):
        if k in wanted:
            if start is not None:
                gaps.append(Gap(start, k - 1, stages[start].name, stages[k - 1].name))
                start = None
            shown.append((k, s))
        elif start is None:
            start = k
    if start is not None:
        gaps.append(Gap(start, n - 1, stages[start].name, stages[n - 1].name))
    return shown, gaps


def pairs_note(pairs) -> str:
    with_ref = [b for a, b in pairs if a == REFERENCE]
    parts = [f"{a} \u2192 {b}" for a, b in pairs if a != REFERENCE or len(with_ref) < 3]
    if len(with_ref) >= 3:
        parts.insert(0, f"{REFERENCE} against each MLIR stage")
    return "and for " + " and ".join(parts) if parts else "and for no other pair"
