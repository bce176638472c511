"""``workbench.widgets``, as earlier releases named the panel's module: the same objects as
``workbench.views.widgets`` (the tour used ``wb.widgets.panel(ex)``; ``wb.panel(ex)`` is the same)."""
from .views.widgets import DiffView, GraphView, Panel, panel

__all__ = ["panel", "Panel", "DiffView", "GraphView"]
