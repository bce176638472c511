"""``hlo-workbench memory TARGET``: where the bytes go in XLA's compile of a program, in a terminal.

    hlo-workbench memory mlp                        # a built-in example
    hlo-workbench memory my_model.py:step --args "f32[512,512]" --rows 30
    hlo-workbench memory module.mlir                # MLIR/StableHLO text with a @main
    hlo-workbench memory attn.hlox --json           # a saved exploration; one JSON document on stdout

It prints ``Exploration.memory()``: the peak and where XLA's schedule reaches it, the bytes live at the peak
per user line, the largest buffers live there, the arguments that could be donated, and how the peak adds up
to XLA's own totals. ``cli.py`` registers it (``add_memory_command``) beside the commands that explore a
function; TARGET is read as theirs (``cli.load_target``), plus MLIR files and saved explorations.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import WorkbenchError
from .cli_common import command_parser, emit, explore_target, records
from .cli_schema import any_value, array, boolean, integer, maybe, number, record, string

__all__ = ["MEMORY_SCHEMA", "add_memory_command", "cmd_memory"]

_HELP = """\
Where the bytes go in XLA's compile of TARGET, read from XLA's own buffer assignment and live ranges
(ex.memory() in Python): the peak of the live bytes over XLA's schedule and the instruction where it is
reached, the bytes live at the peak by the user's line, the largest buffers live at the peak (kind, shape,
the instruction that defines it, the user's line), the arguments that could be donated and the bytes that
would save, and how the peak adds up to compiled.memory_analysis().

TARGET: PATH.py:FUNC (with --args, or the module's args()), a built-in example name, an MLIR/StableHLO
file with a @main (.mlir), or a saved exploration (.hlox, from ex.save or --save). It exits 2 where the
memory could not be read (a compile that failed, a module with no @main for XLA to compile)."""

_AT = maybe(record({"file": string(), "line": integer()}))
_LINE_ROW = record({"line": string(), "bytes": integer(), "share": number(), "buffers": integer(),
                    "kinds": string(), "largest": string(), "at": _AT}, closed=False)
_BUFFER_ROW = record({"buffer": any_value(), "bytes": integer(), "kind": string(), "shape": string(),
                      "instruction": string(), "line": string(), "at": _AT}, closed=False)
_DONATION_ROW = record({"argument": any_value(), "shape": string(), "bytes": integer(), "donated": boolean(),
                        "output": any_value(), "saves": integer(), "why": string()}, closed=False)
# Memory.to_json()'s fields, and every donation candidate
MEMORY_SCHEMA = record({
    "peak_bytes": integer(minimum=0), "peak_at": integer(minimum=0), "peak_instruction": string(),
    "peak_computation": string(), "space": string(), "platform": string(), "positions": integer(minimum=0),
    "timeline": array(array(any_value(), minItems=3, maxItems=3), description="[position, live bytes, instruction]"),
    "buffers": array(_BUFFER_ROW, description="the largest buffers live at the peak"),
    "more_buffers": integer(minimum=0), "more_bytes": integer(minimum=0),
    "by_line": array(_LINE_ROW, description="the bytes live at the peak by the user's line"),
    "donation": array(_DONATION_ROW, description="every argument, and what donating it would save"),
    "reported": record({"explained": string()}, closed=False), "summary": string()})


def _memory(ex, space: int):
    """``ex.memory(space=space)``; when it cannot be read because a stage failed, the failure says why."""
    try:
        return ex.memory(space=space)
    except WorkbenchError as e:
        if ex.error is not None:
            raise WorkbenchError(f"{e}; {str(ex.error).splitlines()[0]}") from None
        if not any(s.group == "xla" for s in ex.stages):
            raise WorkbenchError(f"{e}; this exploration has no XLA stage at all: XLA compiles a module's public "
                                 "@main, so give a module that has one") from None
        raise


def _bytes(n) -> str:
    return f"{int(n):,}"


def _table(df, columns, formats) -> str:
    import pandas as pd

    shown = df[list(columns)].copy()
    for col, f in formats.items():
        shown[col] = shown[col].map(f)
    with pd.option_context("display.width", 250, "display.max_colwidth", 70, "display.max_rows", None):
        return shown.to_string(index=False)


def _more(left: int, what: str, bytes_left: int) -> str:
    return f"... {left} more {what} ({bytes_left:,} bytes; --rows N shows more)"


def print_memory(m, rows: int) -> None:
    """The human form: the summary line, bytes by line, the live set at the peak, donation, the reconciliation."""
    print(f"# {m.summary()}")
    print(f"# peak {m.peak_bytes:,} bytes at position {m.peak_at} of {len(m.timeline())} in XLA's schedule "
          f"({m.platform}, {m.timeline().attrs['space']})\n")
    lines = m.by_line()
    print(f"# Bytes live at the peak by line ({len(lines)} lines)\n")
    print(_table(lines.head(rows), ("line", "bytes", "share", "buffers", "kinds", "largest"),
                 {"bytes": _bytes, "share": lambda s: f"{s:.1%}"}))
    if len(lines) > rows:
        print(_more(len(lines) - rows, "lines", int(lines["bytes"].iloc[rows:].sum())))
    peak = m.at_peak()
    print(f"\n# Live at the peak: the {min(rows, len(peak))} largest of {len(peak)} buffers\n")
    print(_table(peak.head(rows), ("buffer", "bytes", "kind", "shape", "instruction", "line"), {"bytes": _bytes}))
    if len(peak) > rows:
        print(_more(len(peak) - rows, "buffers", int(peak["bytes"].iloc[rows:].sum())))
    donation = m.donation()
    if len(donation):
        print(f"\n# Donation: {len(donation)} argument{'s' * (len(donation) != 1)}, "
              f"{donation.attrs['saves']:,} bytes that donating would save\n")
        print(_table(donation.head(rows), ("argument", "shape", "bytes", "donated", "output", "saves", "why"),
                     {"bytes": _bytes, "saves": _bytes}))
        if len(donation) > rows:
            print(_more(len(donation) - rows, "arguments", int(donation["bytes"].iloc[rows:].sum())))
    print(f"\n# How the peak adds up\n\n{m.reported()['explained']}")


def cmd_memory(ns) -> int:
    if ns.rows < 1:
        raise WorkbenchError(f"--rows {ns.rows}: give a number of rows of at least 1")
    ex = explore_target(ns)
    m = _memory(ex, ns.space)
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path} (hlo-workbench memory {path})", file=sys.stderr)
    if ns.json:
        return emit(ns, {**m.to_json(), "donation": records(m.donation())}, 0)
    print_memory(m, ns.rows)
    return 0


def add_memory_command(sub) -> None:
    """Add ``memory`` to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "memory", "where the bytes go: XLA's peak memory, what is live at it, by the user's "
                        "line, and donation candidates", cmd_memory, description=_HELP, result=MEMORY_SCHEMA,
                        explores=True, default_target=None)
    sp.add_argument("--rows", type=int, default=15, metavar="N", help="rows of each table to print (default 15)")
    sp.add_argument("--space", type=int, default=0, metavar="N", help="the memory space the tables describe "
                    "(default 0, the main one; 1 a TPU's VMEM)")
