"""``Module``: a module's lines as %-formats, and its values, which the aligner works on."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

__all__ = ["Module", "Value"]

# A value while parsing: (name, scope, defining line, prefix, family, number); see Module.
Value = tuple[str, int, int, str, str, int]


@dataclass
class Module:
    """A normalized module: each line as a %-format with one ``%s`` per value reference.

    Value ids index the ``v_*`` lists. ``v_line`` is the defining line, -1 for a name that is
    used but never defined (kept as printed). Fresh names are ``v_prefix + str(number)`` with the
    number drawn from the counter ``(scope, v_family)``. ``keys`` are the lines' content keys and
    ``v_key`` the values' (see the package docstring). ``hlo`` says whether it was read from XLA
    HLO text. Nothing changes a ``Module`` once it is read.
    """

    fmts: list[str]
    refs: list[tuple[int, ...]]
    scopes: list[int]
    keys: list[int]
    v_name: list[str]
    v_scope: list[int]
    v_line: list[int]
    v_prefix: list[str]
    v_family: list[str]
    v_number: list[int]
    v_key: list[int]
    hlo: bool = False
    flat_refs: list[int] | None = None  # ``refs`` in one list, where the reader has it

    @classmethod
    def build(
        cls,
        fmts: list[str],
        refs: list[tuple[int, ...]],
        scopes: list[int],
        keys: list[int],
        values: list[Value],
        v_key: list[int],
        *,
        hlo: bool = False,
    ) -> Module:
        columns = [list(c) for c in zip(*values)] if values else [[] for _ in range(6)]
        return cls(fmts, refs, scopes, keys, *columns, v_key, hlo)

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """The normalized lines: each value under its canonical name (``v_name``)."""
        return tuple(self.render(self.v_name))

    def render(self, names: Sequence[str]) -> list[str]:
        """The lines with value ``v`` named ``names[v]`` (one %-formatting of the whole text)."""
        if not self.fmts:
            return []
        flat = self.flat_refs if self.flat_refs is not None else chain.from_iterable(self.refs)
        named = tuple(map(names.__getitem__, flat))
        return ("\n".join(self.fmts) % named).split("\n")  # no format holds a line break
