"""``hlo-workbench drift``, ``bisect`` and ``reduce``: the searches of a program, on the command line."""
from __future__ import annotations

__all__ = ["add_commands"]


def add_commands(sub) -> None:
    """Add drift, bisect and reduce to the subparsers ``sub`` of the hlo-workbench parser."""
