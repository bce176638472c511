"""The kinds of a diff's rows (``Diff.rows()``) and the codes the diff viewer reads them by.

A row's code is its kind's index in ``ROW_KINDS``: the view components read a diff's runs into rows of
codes (extensions/hlo-workbench-lab/src/components/rows.ts) and the viewer (``assets/diffview.js``, its
``KINDS``) names them back; tests/test_widgets.py checks that the script's list is this one.
"""
from __future__ import annotations

__all__ = ["ROW_KINDS"]

ROW_KINDS = ("equal", "changed", "deleted", "inserted", "moved")
