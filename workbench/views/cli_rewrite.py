"""``hlo-workbench applicable``, ``step`` and ``edit``: the patterns one at a time, and a hand edit re-explored."""
from __future__ import annotations

__all__ = ["add_commands"]


def add_commands(sub) -> None:
    """Add applicable, step and edit to the subparsers ``sub`` of the hlo-workbench parser."""
