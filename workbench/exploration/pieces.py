"""``Explorations``: one Exploration per piece of a compiler test file (``wb.explore_texts``).

A lit file holds several modules one after another, or chunks split with ``// -----`` lines
(``ir/lit.py`` says how each is cut, as ``enzymexlamlir-opt`` cuts them). ``wb.explore_texts(text)``
explores each piece on its own and hands back this list-like value: ``exs[1]`` is the second piece's
Exploration (its title names the piece and the file line it starts at), ``exs.pieces`` the pieces, and
its ``repr`` says what was cut and how.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..ir.lit import Piece

__all__ = ["Explorations"]

_FORMS = {"modules": "modules one after another in the text, each explored on its own",
          "chunks": "`// -----` chunks, each explored on its own (as --split-input-file reads them)",
          "one": "module: the text is one piece"}


class Explorations(Sequence):
    """The Explorations of a test file's pieces, in the file's order (``form``: "modules", "chunks", or
    "one" for a text of one piece). Indexing, ``len`` and iteration are a list's."""

    def __init__(self, explorations: Sequence, pieces: Sequence[Piece], form: str):
        self._items, self._pieces, self.form = tuple(explorations), tuple(pieces), form

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """Each piece as cut from the file (``Piece``: kind, index, the line it starts at, its text)."""
        return self._pieces

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return list(self._items[k])
        return self._items[k]

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def words(self) -> str:
        """``3 modules one after another in the text, ...``: what was cut, in words."""
        n = len(self._items)
        what = _FORMS[self.form]
        return f"1 {what}" if self.form == "one" else f"{n} {what}"

    def __repr__(self) -> str:
        rows = [f"  {piece.label}: {ex!r}" for piece, ex in zip(self._pieces, self._items)]
        return f"Explorations: {self.words()}\n" + "\n".join(rows)
