"""Text renderings that more than one view prints (the CLI, the magics outside a notebook)."""
from __future__ import annotations

from ..ir.text import short_pass

__all__ = ["stage_table", "short_pass"]


def stage_table(ex) -> str:
    """The stage table of an Exploration as plain text."""
    import pandas as pd

    df = ex.table()
    df["produced_by"] = [short_pass(p) for p in df["produced_by"]]
    df["changed"] = ["yes" if c else "" for c in df["changed"]]
    df["cached"] = ["yes" if c else "" for c in df["cached"]]  # ms then is the first run's time
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        return df.to_string(index=False, na_rep="")  # ms: blank for XLA's passes (timed as one compile)
