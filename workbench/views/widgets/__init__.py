"""The notebook views of an Exploration: the pass-toggle panel and its parts.

    import workbench as wb
    p = wb.panel(ex)                  # or %%hlo in a notebook; p.ex is the Exploration shown now

Views only read an Exploration and call its public methods (``with_patterns``, ``with_xla``, ``run``,
``diff``, ``cost``, ...). Every action shows its line of Python.
"""
from .diffview import DiffView
from .graphview import GraphView
from .panel import Panel, panel

__all__ = ["panel", "Panel", "DiffView", "GraphView"]
