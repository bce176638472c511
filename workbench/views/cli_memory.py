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
from .cli_gates import is_saved_exploration

__all__ = ["MEMORY_COMMANDS", "add_memory_command", "cmd_memory", "explore_target"]

MEMORY_COMMANDS = ("memory",)
JSON_SCHEMA = 1  # the version of the --json document; a reader checks it before it reads the rest

_HELP = """\
Where the bytes go in XLA's compile of TARGET, read from XLA's own buffer assignment and live ranges
(ex.memory() in Python): the peak of the live bytes over XLA's schedule and the instruction where it is
reached, the bytes live at the peak by the user's line, the largest buffers live at the peak (kind, shape,
the instruction that defines it, the user's line), the arguments that could be donated and the bytes that
would save, and how the peak adds up to compiled.memory_analysis().

TARGET: PATH.py:FUNC (with --args, or the module's args()), a built-in example name, an MLIR/StableHLO
file with a @main (.mlir), or a saved exploration (.hlox, from ex.save or --save).

exit status: 0 done, 2 the memory could not be read (a target that does not load, a compile that failed,
a module with no @main for XLA to compile)."""


def explore_target(ns, load_target):
    """The Exploration TARGET names: a saved exploration, an MLIR file, else ``load_target``'s PATH.py:FUNC or
    built-in example, explored with the command's options. A target that does not load is a WorkbenchError
    (``load_target`` says why with SystemExit; here that is exit status 2, as every other thing that could not
    be done)."""
    from ..exploration import explore, explore_text, load

    target = ns.target
    if target is not None and is_saved_exploration(target):
        if not Path(target).is_file():
            raise WorkbenchError(f"no such saved exploration: {target}")
        return load(target)
    if target is not None and ":" not in target and not target.endswith(".py") and Path(target).is_file():
        from .cli_files import read_text_file

        return explore_text(read_text_file(target), pipeline=ns.pipeline, disable=ns.disable or (), enable=ns.enable or (),
                            device=ns.device, xla_disable=ns.xla_disable or (), title=Path(target).name,
                            **({"no_nan": True} if ns.no_nan else {}))
    try:
        fn, args, _ = load_target(target, ns.args)
    except SystemExit as e:
        if isinstance(e.code, str):
            raise WorkbenchError(e.code) from None
        raise
    return explore(fn, *args, pipeline=ns.pipeline, disable=ns.disable or (), enable=ns.enable or (),
                   device=ns.device, xla_disable=ns.xla_disable or (), **({"no_nan": True} if ns.no_nan else {}))


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


def memory_json(m) -> str:
    """The --json document: ``{"schema": 1, "command": "memory", **m.to_json(), "donation": [...]}``."""
    from ..artifacts.jsonout import json_text

    doc = {"schema": JSON_SCHEMA, "command": "memory", **m.to_json(), "donation": m.donation().to_dict("records")}
    return json_text(doc, "memory", allow_nan=False, indent=1)


def cmd_memory(ns) -> int:
    if ns.rows < 1:
        raise WorkbenchError(f"--rows {ns.rows}: give a number of rows of at least 1")
    ex = explore_target(ns, ns.load_target)
    m = _memory(ex, ns.space)
    if ns.json:
        print(memory_json(m))
    else:
        print_memory(m, ns.rows)
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path} (hlo-workbench memory {path})", file=sys.stderr)
    return 0


def add_memory_command(sub, explore_args, load_target) -> None:
    """Add ``memory`` to the subparsers ``sub`` of the hlo-workbench parser: ``explore_args(sp)`` adds the
    options every exploring command takes, ``load_target`` reads a PATH.py:FUNC or example (``cli.load_target``)."""
    sp = sub.add_parser("memory", help="where the bytes go: XLA's peak memory, what is live at it, by the user's "
                        "line, and donation candidates", description=_HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    explore_args(sp)
    sp.add_argument("--rows", type=int, default=15, metavar="N", help="rows of each table to print (default 15)")
    sp.add_argument("--space", type=int, default=0, metavar="N", help="the memory space the tables describe "
                    "(default 0, the main one; 1 a TPU's VMEM)")
    sp.add_argument("--json", action="store_true", help="print one JSON document instead of tables (schema 1: "
                    "the peak, the timeline, the buffers at the peak, the bytes by line, donation)")
    sp.set_defaults(func=cmd_memory, load_target=load_target)
