"""The ``hlo-workbench`` command: the workbench's views in a terminal.

    hlo-workbench stages my_model.py:fn --args "f32[64,64],f32[64,32]" --pipeline all --disable dot_transpose
    hlo-workbench show attention --stage enzyme-hlo-patterns#1   # a built-in example: attention, convnet, mlp, scan
    hlo-workbench report                # the default: a report on the built-in attention example
    hlo-workbench patterns --search transpose
    hlo-workbench pipelines
    hlo-workbench diff before.mlir after.mlir   # structural diff of two MLIR (or two XLA HLO) files: exit 0 same, 1 differ
    hlo-workbench opt in.mlir --pass-pipeline='builtin.module(canonicalize,enzyme-hlo-opt)'   # like mlir-opt
    hlo-workbench open attn.hlox --stage xla:optimized   # a saved exploration (ex.save): its stage table, or a stage
    hlo-workbench memory mlp --rows 20   # where the bytes go: XLA's peak, what is live at it, by line; --json
"""
from __future__ import annotations

import argparse
import os
import sys

from .cli_common import (EXIT_HELP, EXIT_TROUBLE, builtin_examples, command_parser, error_document, explore_target,
                         load_target, parse_args_spec)
from . import cli_backend, cli_rewrite, cli_search
from .cli_files import add_file_commands
from .cli_gates import add_gate_commands
from .cli_memory import add_memory_command
from .text import stage_table

__all__ = ["build_parser", "builtin_examples", "load_target", "main", "parse_args_spec"]

def _explore(ns):
    return explore_target(ns)


def _saved(ns, ex) -> None:
    """With ``--save FILE.hlox``, write the exploration (after the command's own work: its runs too)."""
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path} (hlo-workbench open {path})", file=sys.stderr)


def _finished(ns, ex) -> int:
    """The end of a command that explores a program: save it if asked (``_saved``), then the exit status,
    1 with the failed stage's error on stderr when the pipeline failed (the output above shows the
    stages up to it), else 0."""
    _saved(ns, ex)
    if ex.error:
        print(f"\n{ex.error.full if ns.full_errors else ex.error}", file=sys.stderr)
        return 1
    return 0


def cmd_stages(ns) -> int:
    ex = _explore(ns)
    print(stage_table(ex))
    return _finished(ns, ex)


def cmd_show(ns) -> int:
    ex = _explore(ns)
    stage = ex.stage(ns.stage)
    failed = ex.error if ex.error is not None and ex.error.stage == stage.name else None
    print((failed.full if ns.full_errors and failed is not None else stage.error) or stage.text)
    _saved(ns, ex)
    return 0


def cmd_report(ns) -> int:
    import pandas as pd

    ex = _explore(ns)
    table = stage_table(ex)  # first: it computes every stage, so the header counts the table's rows
    print(f"# {ex!r}\n")
    print(table)
    mlir = [s for s in ex.stages if s.group == "mlir" and not s.error]
    if mlir:
        first, last = ex.reference_stage(), mlir[-1]
        print(f"\n# What the MLIR pipeline did: ops in {first.name} vs {last.name}\n")
        delta = ex.diff(first, last).ops_delta()
        print(delta.to_string(index=False) if len(delta) else "(no op count changed)")
        cost = ex.cost()
        keep = cost[cost.stage.isin([first.name, last.name, "xla:optimized"])]
        cols = ["stage", "ops", "flops", "transcendentals", "bytes", "xla_flops", "xla_bytes", "temp_bytes"]
        print("\n# Cost\n")
        with pd.option_context("display.width", 200):
            print(keep[cols].to_string(index=False))
        r = ex.run(last, repeat=10)
        print(f"\n# Run on {r.device}: {r.timing!r}\n  {r.check!r}")
        if r.check.note:
            print(f"  (no float64 reference: {r.check.note})")
        print(f"\n# Final MLIR stage ({last.name}):\n")
        print(last.text)
    if ns.html:
        if ns.profile and not ex.error:
            ex.profile(repeat=10)
            ex.compile_profile()
        print(f"\n# HTML report: {ex.report(ns.html)}")
    return _finished(ns, ex)


def cmd_profile(ns) -> int:
    """Where the time goes: measured run time per HLO instruction of a stage (JAX's profiler), then compile
    time per step of both pipelines (the trace, each MLIR pass, each XLA pass and backend step)."""
    import pandas as pd

    from ..analysis.profile import COMPILE_SUMMARY, RUN_SUMMARY

    ex = _explore(ns)
    ex.stages  # noqa: B018 -- every stage first: the compile profile compares with the exploration's clocks
    if ex.error:
        return _finished(ns, ex)
    prof = ex.profile(ns.stage, repeat=ns.repeat, keep=ns.keep)
    print(f"# Run time per instruction: {prof!r}\n")
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(prof.table[list(RUN_SUMMARY)].head(ns.top).to_string(index=False))
        if len(prof.table) > ns.top:
            print(f"... {len(prof.table) - ns.top} more instructions (--top N shows more)")
        cp = ex.compile_profile()
        print(f"\n# Compile time per step: {cp!r}\n")
        t = cp.table
        shown = t[(t.kind != "xla pass") | (t.seconds >= t[t.kind == "xla pass"].seconds.nlargest(ns.top).min())]
        print(shown[list(COMPILE_SUMMARY)].to_string(index=False))
        print(f"\n({len(t[t.kind == 'xla pass'])} XLA pass runs in all; the {ns.top} longest shown. The exploration's "
              f"own clocks measured {cp.explore_s:.3f} s for the same work; this table adds up to {cp.total_s:.3f} s.)")
    if ns.keep:
        print(f"\n# The profiler's trace is in {ns.keep} (TensorBoard/XProf read it)")
    return _finished(ns, ex)


def cmd_patterns(ns) -> int:
    import pandas as pd

    from ..pipeline.catalog import patterns

    df = patterns()
    if ns.groups:
        print(_group_counts(df).to_string(index=False))
        return 0
    if ns.group is not None and ns.group not in set(df["group"]):
        raise _unknown_group(ns.group, df)
    if ns.group is not None:
        df = df[df["group"] == ns.group]
    if ns.search:
        df = df[df["name"].str.contains(ns.search, case=False, regex=False)]
    if not len(df):
        where = f"of group {ns.group!r} " if ns.group is not None else ""
        print(f"no pattern {where}matches --search {ns.search!r} (a part of a pattern's name, in any case; "
              "hlo-workbench patterns lists them all, --groups the groups)")
        return 0
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(df[["name", "group", "default_enabled", "benefit", "parameters"]].to_string(index=False))
    return 0


def _group_counts(df):
    """One row per pattern group: how many patterns it has and how many are on by default."""
    counts = df.groupby("group").agg(patterns=("name", "size"), enabled_by_default=("default_enabled", "sum"))
    return counts.reset_index().sort_values(["patterns", "group"], ascending=[False, True], ignore_index=True)


def _unknown_group(name: str, df):
    import difflib

    from ..errors import UnknownNameError

    counts = _group_counts(df)
    close = difflib.get_close_matches(name, list(counts["group"]), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    listed = ", ".join(f"{g!r} ({n})" for g, n in zip(counts["group"], counts["patterns"]))
    return UnknownNameError("pattern group", name, [], known_note=f"{hint}the groups (with their pattern counts) "
                            f"are {listed}")


def cmd_pipelines(ns) -> int:
    import pandas as pd

    from ..pipeline.presets import pipelines

    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(pipelines()[["name", "steps", "description"]].to_string(index=False))
    return 0


def _add_list_commands(sub) -> None:
    """The commands that list what the workbench knows: patterns, pipelines."""
    sp = sub.add_parser("patterns", help="list the Enzyme-JaX patterns (or their groups)")
    sp.add_argument("--search", metavar="TEXT", help="only the patterns whose name contains TEXT (in any case)")
    sp.add_argument("--group", metavar="NAME", help="only the patterns of one group, e.g. base, const-prop, "
                    "'transpose up' (quote a name with a space); --groups lists the groups")
    sp.add_argument("--groups", action="store_true", help="list the pattern groups, with how many patterns each "
                    "has and how many of those are on by default")
    sp.set_defaults(func=cmd_patterns)
    sp = sub.add_parser("pipelines", help="list the pipeline presets")
    sp.set_defaults(func=cmd_pipelines)


class UsageError(Exception):
    """A command line argparse cannot read; main() makes it status 2 as any other thing that could not be done."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print its usage and exit itself; main() says it in one line
        raise UsageError(f"{message} ({self.prog} --help says what it takes)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hlo-workbench", description="Look inside array compilers, stage by stage.",
                epilog="hlo-workbench COMMAND --help says what each command takes.\n\n" + EXIT_HELP,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", help="what to do (default: report)",
                           parser_class=_Parser)
    for name, fn, help_ in (("stages", cmd_stages, "print the stage table"),
                            ("report", cmd_report, "stage table and final module (the default command)"),
                            ("show", cmd_show, "print one stage's text"),
                            ("profile", cmd_profile, "measured run time per HLO instruction and compile time per "
                             "pass (JAX's profiler)")):
        sp = command_parser(sub, name, help_, fn, explores=True)
        if name == "report":
            sp.add_argument("--html", metavar="OUT.html", help="also write the report as one self-contained HTML "
                            "file (no network needed: the stage table, the diff viewer, costs, a graph, the run)")
            sp.add_argument("--profile", action="store_true", help="with --html: measure where the time goes "
                            "first (run time per instruction, compile time per pass) and put it in the report")
        if name == "profile":
            sp.add_argument("--stage", metavar="NAME", help="the stage to run and profile (default: the last MLIR "
                            "stage, the one XLA compiles)")
            sp.add_argument("--repeat", type=int, default=10, help="calls profiled after a warm-up (default 10)")
            sp.add_argument("--top", type=int, default=15, help="rows of each table to print (default 15)")
            sp.add_argument("--keep", metavar="DIR", help="keep the profiler's run trace in DIR")
        if name == "show":
            sp.add_argument("--stage", required=True, metavar="NAME", help="the stage to print, by name: "
                            "jaxpr, stablehlo, an MLIR pass such as enzyme-hlo-patterns#1, an XLA pass such as "
                            "xla:optimized (hlo-workbench stages TARGET lists them)")
    _add_list_commands(sub)
    add_file_commands(sub)
    add_gate_commands(sub, load_target)
    add_memory_command(sub)
    for module in (cli_search, cli_rewrite, cli_backend):
        module.add_commands(sub)
    from .cli_schema import add_schema_command

    add_schema_command(sub)
    p.set_defaults(commands=tuple(sub.choices))
    return p


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"hlo-workbench: warning: {message}\n"


def _trouble(ns, argv: list[str], error: BaseException | str) -> int:
    """Exit status 2: the reason on stderr (its first line leads), and with --json the error document on stdout."""
    message = str(error)
    print(f"hlo-workbench: {message}", file=sys.stderr)
    if getattr(ns, "json", False) or (ns is None and "--json" in argv):
        command = getattr(ns, "command_name", None) or next((a for a in argv if not a.startswith("-")), "report")
        print(error_document(command, error))
    return EXIT_TROUBLE


def main(argv: list[str] | None = None) -> int:
    import warnings

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    warnings.formatwarning = _format_warning
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in {*parser.get_default("commands"), "-h", "--help"}:
        argv = ["report"] + argv
    try:
        ns = parser.parse_args(argv)
    except UsageError as e:  # the top parser's words name no command: the one typed has the --help to read
        return _trouble(None, argv, str(e).replace("(hlo-workbench --help", f"(hlo-workbench {argv[0]} --help"))
    from ..errors import WorkbenchError

    try:
        return ns.func(ns)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except WorkbenchError as e:
        return _trouble(ns, argv, e)
    except SystemExit as e:  # a message (a string) is something that could not be done: status 2, not Python's 1
        if isinstance(e.code, int) or e.code is None:
            raise
        return _trouble(ns, argv, e.code)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 -- a bug of ours: status 2 (not 1, which says "found"), the reason first
        import traceback

        status = _trouble(ns, argv, f"internal error: {type(e).__name__}: {e}")
        print("(a bug in hlo-workbench; its traceback follows, for a report)", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
