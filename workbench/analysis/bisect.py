"""Find the patterns to blame: delta debugging over the enabled pattern list.

``bisect(ex, predicate)`` returns a 1-minimal set of patterns for which ``predicate`` holds: it holds
with that set alone enabled, and fails when any one of them is removed. The search is Zeller's ddmin,
so one culprit among n patterns costs O(log n) pipeline runs, k culprits O(k log n) in typical cases.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, TYPE_CHECKING

from ..ir.ops import op_counts
from ..pipeline.catalog import pattern_list, pattern_name
from ..errors import WorkbenchError
from .progress import OnProgress, Progress

if TYPE_CHECKING:  # the facade hands itself down; analysis never imports it
    from ..exploration import Exploration

__all__ = ["BisectResult", "bisect", "ddmin", "miscompiles", "crashes", "slower_than", "op_count_above",
           "op_count_at_most"]

Predicate = Callable[["Exploration"], bool]


def ddmin(items: list[str], holds: Callable[[list[str]], bool]) -> list[str]:
    """A 1-minimal sublist of ``items`` for which ``holds`` is True (``holds(items)`` must be True)."""
    current, n = list(items), 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[i * size // n:(i + 1) * size // n] for i in range(n)]
        chunks = [c for c in chunks if c]
        for c in chunks:
            if holds(c):
                current, n = c, 2
                break
        else:
            for c in chunks:
                dropped = set(c)
                rest = [x for x in current if x not in dropped]
                if len(chunks) > 2 and holds(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= size:
                    break
                n = min(size, 2 * n)
    return current


@dataclass
class BisectResult:
    """The culprit patterns, the pipeline runs the search needed, and what the culprits change."""

    patterns: list[str]
    runs: int
    seconds: float
    log: list[tuple[int, bool]] = field(default_factory=list, repr=False)  # (set size, predicate held)
    _ex: Exploration | None = field(default=None, repr=False)

    @property
    def diff(self):
        """Final MLIR stage with every pattern vs. with every pattern but the culprits."""
        from .diff import diff_texts

        ex = self._ex
        names = {pattern_name(p) for p in pattern_list(ex.spec.selection)}
        without = ex.with_only_patterns(names - set(self.patterns))
        a = [s for s in without.stages if s.group == "mlir"][-1]
        b = [s for s in ex.stages if s.group == "mlir"][-1]
        return diff_texts(a.text, b.text, f"without {', '.join(self.patterns)}", "with all patterns")


def bisect(ex: Exploration, predicate: Predicate, candidates=None, progress: bool = True,
           on_progress: OnProgress | None = None) -> BisectResult:
    """ddmin over ``candidates`` (default: the enabled patterns), one pipeline run per subset tried.
    How many runs a search takes is not known in advance: ``on_progress(runs, None)`` hears each."""
    start = time.perf_counter()
    names = list(candidates) if candidates is not None else [
        pattern_name(p) for p in pattern_list(ex.spec.selection)]
    cache: dict[frozenset, bool] = {}
    log: list[tuple[int, bool]] = []
    bar = Progress(None, "bisect runs", progress, on_progress, unit="run")

    def holds(subset: list[str]) -> bool:
        key = frozenset(subset)
        if key not in cache:
            cache[key] = bool(predicate(ex.with_only_patterns(key)))
            log.append((len(key), cache[key]))
            bar.update(1)
        return cache[key]

    try:
        if not holds(names):
            raise WorkbenchError("the predicate does not hold with all candidate patterns enabled: nothing to bisect")
        if holds([]):
            raise WorkbenchError("the predicate holds with no pattern enabled: the cause is not a pattern "
                                 "(look at the upstream passes or XLA)")
        culprits = ddmin(names, holds)
    finally:
        bar.close()
    return BisectResult(sorted(culprits), len(cache), time.perf_counter() - start, log, ex)


# ---- built-in predicates ---------------------------------------------------------------------
#
# Each carries ``recipe``: a JSON-able description of what it checks (its ``kind`` and arguments),
# from which ``ex.reproducer`` writes a standalone script that decides the same question.


def miscompiles(device: str | None = None, repeat: int = 1) -> Predicate:
    """Holds when the last MLIR stage's outputs fail the check against "stablehlo" on ``device``."""

    def pred(ex: Exploration) -> bool:
        if ex.error and ex.error.stage != "xla:compile":
            return False
        return not ex.run(device=device, repeat=repeat).check.passed

    pred.__name__ = f"miscompiles({device!r})"
    pred.recipe = {"kind": "miscompiles", "device": device, "repeat": repeat}
    return pred


def crashes(include_xla: bool = False) -> Predicate:
    """Holds when a pass crashes its worker, fails verification or raises (MLIR stages; XLA too on request)."""

    def pred(ex: Exploration) -> bool:
        return ex.pipeline_error is not None or (include_xla and ex.error is not None)

    pred.__name__ = "crashes()"
    pred.recipe = {"kind": "crashes", "include_xla": bool(include_xla)}
    return pred


def slower_than(seconds: float) -> Predicate:
    """Holds when the MLIR pipeline's passes take longer than ``seconds`` in total."""

    def pred(ex: Exploration) -> bool:
        return sum(s.seconds or 0.0 for s in ex.pipeline_stages if s.group == "mlir") > seconds

    pred.__name__ = f"slower_than({seconds})"
    pred.recipe = {"kind": "slower_than", "seconds": float(seconds)}
    return pred


def op_count_above(name: str, n: int) -> Predicate:
    """Holds when the last MLIR stage has more than ``n`` ops called ``name`` (e.g. "stablehlo.transpose"),
    counted by ``workbench.ir.ops.op_counts``: a name in a string or an attribute is not an op."""

    def pred(ex: Exploration) -> bool:
        return op_counts(ex.default_run_stage().text)[name] > n

    pred.__name__ = f"op_count_above({name!r}, {n})"
    pred.recipe = {"kind": "op_count_above", "name": name, "n": n}
    return pred


def op_count_at_most(name: str, n: int) -> Predicate:
    """Holds when the last MLIR stage has at most ``n`` ops called ``name``: which patterns remove an op
    (the opposite of ``op_count_above``)."""
    above = op_count_above(name, n)

    def pred(ex: Exploration) -> bool:
        return not above(ex)

    pred.__name__ = f"op_count_at_most({name!r}, {n})"
    pred.recipe = {"kind": "op_count_at_most", "name": name, "n": n}
    return pred
