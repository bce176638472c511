"""``hlo-workbench backend``: the TPU's kernels of a program, on the command line."""
from __future__ import annotations

__all__ = ["add_commands"]


def add_commands(sub) -> None:
    """Add backend to the subparsers ``sub`` of the hlo-workbench parser."""
