"""Which rewrite patterns of one pattern pass made an op, or removed one: the ``pattern`` a drift names.

A stage made by an Enzyme-JaX pattern pass (``enzyme-hlo-generate-td{patterns=...}``) applies hundreds of
patterns at once. ``patterns_that(stage, parent, holds)`` runs that pass again on ``parent``'s text with
subsets of its own pattern list, and returns a 1-minimal set for which ``holds(text)`` -- "the op is there",
"the op is gone" -- is true of the output (Zeller's ddmin, as ``bisect`` uses: about 2 log2(n) runs of the
one pass for one culprit among n patterns, each on the worker). Nothing is guessed: where the stage was not
made by a pattern pass, where the whole list does not reproduce the answer, or past ``max_runs``, it
returns no pattern and says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import StageError, WorkbenchError
from ...ir.text import leading_td_patterns
from ...pipeline.catalog import pattern_name, patterns_pass
from ...pipeline.runner import default_runner
from ...stages import Stage
from .bisect import ddmin

__all__ = ["Blame", "patterns_that"]

MAX_RUNS = 300


@dataclass(frozen=True)
class Blame:
    """The patterns found (names; empty when none), the pass runs it took, and why there are none."""

    patterns: tuple[str, ...] = ()
    runs: int = 0
    why_not: str = ""


def patterns_that(stage: Stage, parent: Stage, holds: Callable[[str], bool], timeout: float = 120.0,
                  max_runs: int = MAX_RUNS) -> Blame:
    """A 1-minimal set of the patterns of ``stage``'s pass for which ``holds`` is true of that pass's output
    on ``parent`` (see the module's docstring)."""
    found = leading_td_patterns(stage.produced_by or "")
    if found is None:
        return Blame(why_not=f"{stage.name} is not an Enzyme-JaX pattern pass")
    specs = [s for s in found if s and not s.endswith("(0)")]  # (0): switched off
    runner, text = default_runner(), parent.text_with_locations or parent.text
    runs = 0

    def apply(subset: list[str]) -> bool:
        nonlocal runs
        if runs >= max_runs:
            raise _Spent
        runs += 1
        try:
            out = runner.run("blame", text, patterns_pass(tuple(subset)), timeout=timeout)
        except (StageError, WorkbenchError):
            return False
        return holds(out.text)

    try:
        if not apply(specs):
            return Blame(runs=runs, why_not=f"the pass's whole list, run again on {parent.name}, does not do it")
        culprits = ddmin(specs, apply)
    except _Spent:
        return Blame(runs=runs, why_not=f"no answer within {max_runs} runs of the pass")
    return Blame(tuple(pattern_name(s) for s in culprits), runs)


class _Spent(Exception):
    pass
