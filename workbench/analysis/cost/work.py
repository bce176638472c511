"""What the analytic cost model did to cost one module, counted as it does it.

The model must stay linear in the size of the module it reads: a chain of ``c = c * c`` constants or
a chain of functions each calling the next twice is a few hundred lines of text, and a model that
spelled out every constant's history or walked every call path would need more memory than the
machine has. The walk and the import rewrites increment a ``WorkCounter`` at the places where they
do work, and ``Work`` is its final count: tests check that it grows with the text, not with what the
text expands to. ``counter`` makes the running count of any such record (``hlo.HloWork`` has one too).
"""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["Work", "WorkCounter", "counter"]

R = TypeVar("R")


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


def counter(record: type[R], *counted: str) -> type:
    """The class of a running count behind ``record``, a frozen dataclass of counts: its instances hold the
    fields ``counted`` (all of ``record``'s when none are named), each from 0, that the code doing the work
    adds to (``c.rows += 1``); ``c.done(**rest)`` is the ``record`` of them and of ``rest``, the fields read
    at the end. The record lists its fields once; the counts reach it by name, so no order can swap two."""
    fields = [f.name for f in dataclasses.fields(record)]
    if not set(counted) <= set(fields):
        raise TypeError(f"{record.__name__} has no field {sorted(set(counted) - set(fields))[0]!r}")

    def done(self, **rest: Any) -> R:
        return record(**dataclasses.asdict(self), **rest)

    return dataclasses.make_dataclass(
        f"{record.__name__}Counter", [(name, int, 0) for name in counted or fields],
        namespace={"done": done, "__module__": record.__module__,
                   "__doc__": f"The running count behind ``{record.__name__}``: the code that does the work adds to it."})


WorkCounter = counter(Work)
