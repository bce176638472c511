"""What the analytic cost model did to cost one module, counted as it does it.

The model must stay linear in the size of the module it reads: a chain of ``c = c * c`` constants or
a chain of functions each calling the next twice is a few hundred lines of text, and a model that
spelled out every constant's history or walked every call path would need more memory than the
machine has. The walk and the import rewrites increment a ``WorkCounter`` at the places where they
do work, and ``Work`` is its final count: tests check that it grows with the text, not with what the
text expands to.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Work", "WorkCounter"]


@dataclasses.dataclass(frozen=True)
class Work:
    """The work done to cost one module.

    ``ops_visited``: op visits of all the model's passes (the import rewrites, the call graph, the
    loop states and the costing walk: a few per op of the text); ``ops_costed``: calls of the per-op
    cost rules by the costing walk; ``constant_keys``: keys built for constant values
    (to tell which constants XLA would unify); ``constant_key_size``: their total size, in characters
    of text plus references to other keys; ``rows``: rows produced.
    """

    ops_visited: int
    ops_costed: int
    constant_keys: int
    constant_key_size: int
    rows: int


@dataclasses.dataclass
class WorkCounter:
    """The running count behind ``Work``: the code that does the work adds to it."""

    ops_visited: int = 0
    ops_costed: int = 0
    constant_keys: int = 0
    constant_key_size: int = 0
    rows: int = 0

    def done(self) -> Work:
        return Work(**dataclasses.asdict(self))  # by name: reordering either field list cannot swap two counts
