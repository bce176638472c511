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

The commands of each capability live beside this module: cli_files (diff, opt, open, course), cli_gates
(check), cli_memory (memory), cli_search (drift, bisect, reduce), cli_rewrite (applicable, step, edit),
cli_backend (backend), cli_run (run, cost), cli_artifacts (graph, reproducer); cli_common is what they share
(the target, exit statuses, --json documents) and cli_schema the helpers their documents' JSON Schemas are
written with. Here: the exploring commands, the
listings, ``schema``, the parser and main(), which turns every failure into status 2 with one line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import WorkbenchError
from .cli_common import (EXIT_FOUND, EXIT_HELP, EXIT_OK, EXIT_TROUBLE, builtin_examples, command_parser, emit,
                         error_document, explore_target, load_target, parse_args_spec, records)
from .cli_schema import (STAGE_FAILURE, STAGE_ROW, array, boolean, check_document, document_schema, integer, maybe,
                         number, record, rows, string)
from . import cli_artifacts, cli_backend, cli_rewrite, cli_run, cli_search
from .cli_run import RUN_ROW, run_document
from .cli_files import add_file_commands
from .cli_gates import add_gate_commands
from .cli_memory import add_memory_command
from .text import stage_table

__all__ = ["build_parser", "builtin_examples", "json_schema", "load_target", "main", "parse_args_spec",
           "validate_document"]

def _explore(ns):
    return explore_target(ns)


def _nothing(*_args, **_kwargs) -> None:
    pass


def _text(ns):
    """What prints the human text: ``print``, or nothing when the command prints its --json document."""
    return _nothing if ns.json else print


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


# -- the --json documents of the commands that explore a program ---------------------------------------------

_EXPLORATION = record({"title": string(description="the explored function's name, or the text's title"),
                       "device": maybe(string(description="the device explored for, e.g. cpu:0")),
                       "pipeline": string(description="the pipeline as given: a preset's name or a pass string"),
                       "pipeline_string": string(description="the MLIR passes that ran, as one --pass-pipeline "
                                                 "string")})
_STAGES = {"exploration": _EXPLORATION, "stages": array(STAGE_ROW, description="Exploration.table(), a row a stage"),
           "failed": STAGE_FAILURE,
           "warnings": array(string(), description="what was noticed without failing (ex.warnings)")}
STAGES_SCHEMA = record(_STAGES)
SHOW_SCHEMA = record({"stage": string(), "group": string(), "produced_by": string(),
                      "text": string(description="the stage's text (\"\" for a stage that failed)"),
                      "error": maybe(string(description="the stage's error (with --full-errors, every frame)"))})
REPORT_COST = ("stage", "ops", "flops", "transcendentals", "bytes", "xla_flops", "xla_bytes", "temp_bytes")
REPORT_SCHEMA = record({
    **_STAGES,
    "ops": maybe(record({"before": string(), "after": string(),
                         "delta": rows({"op": string(), "before": integer(), "after": integer(), "delta": integer()},
                                       description="ex.diff(before, after).ops_delta()")},
                        description="what the MLIR pipeline did: op counts in the program as lowered vs the last "
                        "MLIR stage (null: no MLIR stage succeeded)")),
    "cost": maybe(rows({"stage": string(), "ops": integer(), "flops": integer(), "transcendentals": integer(),
                        "bytes": integer(), "xla_flops": number(), "xla_bytes": number(), "temp_bytes": number()},
                       description="ex.cost()'s rows of those two stages and xla:optimized")),
    "run": maybe(RUN_ROW),
    "final": maybe(record({"stage": string(), "text": string()}, description="the last MLIR stage, which XLA compiles")),
    "html": maybe(string(description="the HTML report written (--html)"))})


def _columns(names, **types) -> dict:
    return {c: types.get(c, number()) for c in names}


def _profile_schema() -> dict:
    from ..analysis.profile import COMPILE_SUMMARY, RUN_SUMMARY

    text = string()
    run = record({"stage": string(), "device": string(), "calls": integer(), "call_us": number(),
                  "untraced_call_us": maybe(number()), "coverage": number(), "said": string(),
                  "instructions": rows(_columns(RUN_SUMMARY, instruction=text, op=text, flops=integer(),
                                                bytes=integer(), your_lines=text, mlir_ops=text),
                                       description="ex.profile().table, every instruction (--top limits only the text)")},
                 description="measured run time per HLO instruction of one stage (ex.profile())")
    compile_ = record({"explore_s": number(description="what the exploration's own clocks measured"),
                       "total_s": number(description="the steps' seconds added up"),
                       "steps": rows(_columns(COMPILE_SUMMARY, kind=text, name=text, pipeline=text, stage=text,
                                              changed=boolean()), description="ex.compile_profile().table")},
                      description="compile time per step of both pipelines (ex.compile_profile())")
    return record({"exploration": _EXPLORATION, "failed": STAGE_FAILURE, "run": maybe(run), "compile": maybe(compile_),
                   "trace": maybe(string(description="the folder that keeps the profiler's run trace (--keep)"))})


def _exploration_doc(ex) -> dict:
    spec = ex.spec
    return {"title": spec.title, "device": spec.device, "pipeline": spec.pipeline,
            "pipeline_string": ex.pipeline_string}


def _failure(ex) -> dict | None:
    return None if ex.error is None else {"stage": ex.error.stage, "message": str(ex.error)}


def _stages_doc(ex) -> dict:
    return {"exploration": _exploration_doc(ex), "stages": records(ex.table()), "failed": _failure(ex),
            "warnings": list(ex.warnings)}


# -- the commands ----------------------------------------------------------------------------------------


def cmd_stages(ns) -> int:
    ex = _explore(ns)
    doc = _stages_doc(ex) if ns.json else None
    _text(ns)(stage_table(ex))
    status = _finished(ns, ex)
    return emit(ns, doc, status) if ns.json else status


def cmd_show(ns) -> int:
    ex = _explore(ns)
    stage = ex.stage(ns.stage)
    failed = ex.error if ex.error is not None and ex.error.stage == stage.name else None
    error = (failed.full if ns.full_errors and failed is not None else stage.error) or None
    _text(ns)(error or stage.text)
    _saved(ns, ex)
    status = EXIT_FOUND if stage.error else EXIT_OK
    if ns.json:
        return emit(ns, {"stage": stage.name, "group": stage.group, "produced_by": stage.produced_by,
                         "text": stage.text, "error": error}, status)
    return status


def cmd_report(ns) -> int:
    import pandas as pd

    text = _text(ns)
    ex = _explore(ns)
    table = stage_table(ex)  # first: it computes every stage, so the header counts the table's rows
    doc = {**_stages_doc(ex), "ops": None, "cost": None, "run": None, "final": None, "html": None}
    text(f"# {ex!r}\n")
    text(table)
    mlir = [s for s in ex.stages if s.group == "mlir" and not s.error]
    r = None
    if mlir:
        first, last = ex.reference_stage(), mlir[-1]
        text(f"\n# What the MLIR pipeline did: ops in {first.name} vs {last.name}\n")
        delta = ex.diff(first, last).ops_delta()
        text(delta.to_string(index=False) if len(delta) else "(no op count changed)")
        cost = ex.cost()
        keep = cost[cost.stage.isin([first.name, last.name, "xla:optimized"])]
        text("\n# Cost\n")
        with pd.option_context("display.width", 200):
            text(keep[list(REPORT_COST)].to_string(index=False))
        r = ex.run(last, repeat=ns.repeat)
        text(f"\n# Run on {r.device}: {r.timing!r}\n  {r.check!r}")
        if r.check.note:
            text(f"  (no float64 reference: {r.check.note})")
        text(f"\n# Final MLIR stage ({last.name}):\n")
        text(last.text)
        doc.update(ops={"before": first.name, "after": last.name, "delta": records(delta)},
                   cost=records(keep, REPORT_COST), run=run_document(r), final={"stage": last.name, "text": last.text})
    if ns.html:
        if ns.profile and not ex.error:
            ex.profile(repeat=ns.repeat)
            ex.compile_profile()
        doc["html"] = str(ex.report(ns.html))
        text(f"\n# HTML report: {doc['html']}")
    status = _finished(ns, ex)
    if status == EXIT_OK and r is not None and r.check is not None and not r.check.passed:
        status = EXIT_FOUND  # the check above says which outputs
    return emit(ns, doc, status) if ns.json else status


def cmd_profile(ns) -> int:
    """Where the time goes: measured run time per HLO instruction of a stage (JAX's profiler), then compile
    time per step of both pipelines (the trace, each MLIR pass, each XLA pass and backend step)."""
    import pandas as pd

    from ..analysis.profile import COMPILE_SUMMARY, RUN_SUMMARY

    if ns.top < 1 or ns.repeat < 1:
        raise WorkbenchError(f"--top {ns.top} --repeat {ns.repeat}: give numbers of at least 1")
    text = _text(ns)
    ex = _explore(ns)
    ex.stages  # noqa: B018 -- every stage first: the compile profile compares with the exploration's clocks
    doc = {"exploration": _exploration_doc(ex), "failed": _failure(ex), "run": None, "compile": None,
           "trace": ns.keep}
    if not ex.error:
        prof = ex.profile(ns.stage, repeat=ns.repeat, keep=ns.keep)
        cp = ex.compile_profile()
    if ex.error:  # nothing past the failed stage to run
        status = _finished(ns, ex)
        return emit(ns, doc, status) if ns.json else status
    text(f"# Run time per instruction: {prof!r}\n")
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        text(prof.table[list(RUN_SUMMARY)].head(ns.top).to_string(index=False))
        if len(prof.table) > ns.top:
            text(f"... {len(prof.table) - ns.top} more instructions (--top N shows more)")
        text(f"\n# Compile time per step: {cp!r}\n")
        t = cp.table
        shown = t[(t.kind != "xla pass") | (t.seconds >= t[t.kind == "xla pass"].seconds.nlargest(ns.top).min())]
        text(shown[list(COMPILE_SUMMARY)].to_string(index=False))
        text(f"\n({len(t[t.kind == 'xla pass'])} XLA pass runs in all; the {ns.top} longest shown. The exploration's "
             f"own clocks measured {cp.explore_s:.3f} s for the same work; this table adds up to {cp.total_s:.3f} s.)")
    if ns.keep:
        text(f"\n# The profiler's trace is in {ns.keep} (TensorBoard/XProf read it)")
    doc.update(run={"stage": prof.stage, "device": prof.device, "calls": prof.calls, "call_us": prof.call_us,
                    "untraced_call_us": prof.untraced_call_us, "coverage": prof.coverage, "said": prof.call_said(),
                    "instructions": records(prof.table, RUN_SUMMARY)},
               compile={"explore_s": cp.explore_s, "total_s": cp.total_s, "steps": records(cp.table, COMPILE_SUMMARY)})
    status = _finished(ns, ex)
    return emit(ns, doc, status) if ns.json else status


_PATTERN_COLUMNS = ("name", "group", "default_enabled", "benefit", "parameters")
PATTERNS_SCHEMA = record({}, {
    "patterns": rows({"name": string(), "group": string(), "default_enabled": boolean(), "benefit": number(),
                      "parameters": string()}, description="the patterns shown (--search, --group), in the "
                     "catalog's order"),
    "groups": rows({"group": string(), "patterns": integer(), "enabled_by_default": integer()},
                   description="with --groups: one row per group, the largest first")},
    description="'patterns' (the listing) or, with --groups, 'groups'")
PIPELINES_SCHEMA = record({"pipelines": rows({"name": string(), "description": string(), "steps": integer(),
                                              "passes": string(), "needs_enzyme": boolean()},
                                             description="wb.pipelines(): one row per preset")})


def cmd_patterns(ns) -> int:
    import pandas as pd

    from ..pipeline.catalog import patterns

    text = _text(ns)
    df = patterns()
    if ns.groups:
        counts = _group_counts(df)
        text(counts.to_string(index=False))
        return emit(ns, {"groups": records(counts)}, EXIT_OK) if ns.json else EXIT_OK
    if ns.group is not None and ns.group not in set(df["group"]):
        raise _unknown_group(ns.group, df)
    if ns.group is not None:
        df = df[df["group"] == ns.group]
    if ns.search:
        df = df[df["name"].str.contains(ns.search, case=False, regex=False)]
    if ns.json:
        return emit(ns, {"patterns": records(df, _PATTERN_COLUMNS)}, EXIT_OK)
    if not len(df):
        where = f"of group {ns.group!r} " if ns.group is not None else ""
        print(f"no pattern {where}matches --search {ns.search!r} (a part of a pattern's name, in any case; "
              "hlo-workbench patterns lists them all, --groups the groups)")
        return EXIT_OK
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(df[list(_PATTERN_COLUMNS)].to_string(index=False))
    return EXIT_OK


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

    df = pipelines()
    if ns.json:
        return emit(ns, {"pipelines": records(df, ("name", "description", "steps", "passes", "needs_enzyme"))},
                    EXIT_OK)
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(df[["name", "steps", "description"]].to_string(index=False))
    return EXIT_OK


_STAGES_HELP = """\
Print the stage table of TARGET: every stage the trace, the MLIR pipeline and XLA made, with its group,
whether it changed the program, its lines, its milliseconds and the pass that made it (ex.table()).
Exit 0: every stage was made; 1: a stage failed (its error on stderr; the table shows the stages up to it)."""
_SHOW_HELP = """\
Print one stage's text, or the error of a stage that failed.
Exit 0: the stage's text; 1: the stage failed (its error is what is printed)."""
_REPORT_HELP = """\
The stage table, the op counts the MLIR pipeline changed (the program as lowered vs the last MLIR stage),
their cost (the analytic model's and XLA's), a run of the last MLIR stage on the device with its check
against the program as lowered, and that stage's text; --html also writes it all as one HTML file.
Exit 0: every stage made and the check passed; 1: a stage failed, or the run's outputs failed the check."""
_PROFILE_HELP = """\
Where the time goes: measured run time per HLO instruction of a stage (JAX's profiler), then compile time
per step of both pipelines (the trace, each MLIR pass, each XLA pass and backend step).
Exit 0: profiled; 1: a stage failed (its error on stderr; nothing past it to profile)."""
_PATTERNS_HELP = """\
List the Enzyme-JaX rewrite patterns (name, group, on by default, benefit, parameters), or their groups.
Exit 0: listed (a --search that matches nothing lists none); 2: an unknown --group."""
_PIPELINES_HELP = """\
List the pipeline presets a -p/--pipeline takes: their names, steps and what each is for. Exit 0."""


def _add_exploring_commands(sub) -> None:
    """The commands that explore a program and print what it went through: stages, report, show, profile."""
    command_parser(sub, "stages", "print the stage table", cmd_stages, description=_STAGES_HELP,
                   result=STAGES_SCHEMA, explores=True)
    sp = command_parser(sub, "report", "stage table and final module (the default command)", cmd_report,
                        description=_REPORT_HELP, result=REPORT_SCHEMA, explores=True)
    sp.add_argument("--repeat", type=int, default=10, help="calls timed after a warm-up (default 10)")
    sp.add_argument("--html", metavar="OUT.html", help="also write the report as one self-contained HTML "
                    "file (no network needed: the stage table, the diff viewer, costs, a graph, the run)")
    sp.add_argument("--profile", action="store_true", help="with --html: measure where the time goes "
                    "first (run time per instruction, compile time per pass) and put it in the report")
    sp = command_parser(sub, "show", "print one stage's text", cmd_show, description=_SHOW_HELP,
                        result=SHOW_SCHEMA, explores=True)
    sp.add_argument("--stage", required=True, metavar="NAME", help="the stage to print, by name: "
                    "jaxpr, stablehlo, an MLIR pass such as enzyme-hlo-patterns#1, an XLA pass such as "
                    "xla:optimized (hlo-workbench stages TARGET lists them)")
    sp = command_parser(sub, "profile", "measured run time per HLO instruction and compile time per pass "
                        "(JAX's profiler)", cmd_profile, description=_PROFILE_HELP, result=_profile_schema(),
                        explores=True)
    sp.add_argument("--stage", metavar="NAME", help="the stage to run and profile (default: the last MLIR "
                    "stage, the one XLA compiles)")
    sp.add_argument("--repeat", type=int, default=10, help="calls profiled after a warm-up (default 10)")
    sp.add_argument("--top", type=int, default=15, help="rows of each table to print (default 15; --json has "
                    "every row)")
    sp.add_argument("--keep", metavar="DIR", help="keep the profiler's run trace in DIR")


def _add_list_commands(sub) -> None:
    """The commands that list what the workbench knows: patterns, pipelines."""
    sp = command_parser(sub, "patterns", "list the Enzyme-JaX patterns (or their groups)", cmd_patterns,
                        description=_PATTERNS_HELP, result=PATTERNS_SCHEMA)
    sp.add_argument("--search", metavar="TEXT", help="only the patterns whose name contains TEXT (in any case)")
    sp.add_argument("--group", metavar="NAME", help="only the patterns of one group, e.g. base, const-prop, "
                    "'transpose up' (quote a name with a space); --groups lists the groups")
    sp.add_argument("--groups", action="store_true", help="list the pattern groups, with how many patterns each "
                    "has and how many of those are on by default")
    command_parser(sub, "pipelines", "list the pipeline presets", cmd_pipelines, description=_PIPELINES_HELP,
                   result=PIPELINES_SCHEMA)


# -- the JSON Schemas of the --json documents -----------------------------------------------------------------


def json_schema(command: str) -> dict:
    """The JSON Schema (draft 2020-12) of ``hlo-workbench COMMAND --json``'s document (what ``hlo-workbench schema
    COMMAND`` prints); UnknownNameError for a command that has none."""
    from ..errors import UnknownNameError
    from .cli_common import RESULTS

    build_parser()  # each command registers its document's fields as it is added
    if command not in RESULTS:
        raise UnknownNameError("command with --json", command, sorted(RESULTS),
                               known_note="these print JSON: " + ", ".join(sorted(RESULTS)))
    return document_schema(command, RESULTS[command])


def validate_document(doc, command: str | None = None) -> None:
    """ValueError naming the field where ``doc`` (a parsed --json document) breaks its command's JSON Schema
    (``command``: that command's; default the one the document names)."""
    command = command or (doc.get("command") if isinstance(doc, dict) else None)
    if not isinstance(command, str):
        raise ValueError("not an hlo-workbench --json document: it has no 'command'")
    check_document(doc, json_schema(command))


def cmd_schema(ns) -> int:
    from .cli_common import RESULTS

    if ns.name is None:
        if ns.json:
            return emit(ns, {"commands": sorted(RESULTS)}, EXIT_OK)
        print("commands with --json (hlo-workbench schema COMMAND prints one's JSON Schema):")
        print("  " + " ".join(sorted(RESULTS)))
        return EXIT_OK
    schema = json_schema(ns.name)
    if ns.json:
        return emit(ns, {"commands": sorted(RESULTS), "json_schema": schema}, EXIT_OK)
    print(json.dumps(schema, indent=1))
    return EXIT_OK


_SCHEMA_HELP = """\
Print the JSON Schema (draft 2020-12) of a command's --json document, e.g. to validate it in a CI job
(check-jsonschema, ajv, Python's jsonschema; in Python, workbench.views.cli.validate_document). Every
document has "schema" (its version, 1), "command" and "exit" (the command's exit status); one with exit 2
has "error" ({"type", "message"}) and nothing else. Without COMMAND: the commands that print JSON. With
--json, the schema (or the list) inside a document of its own, as every command prints."""


def _add_schema_command(sub) -> None:
    sp = command_parser(sub, "schema", "print the JSON Schema of a command's --json document", cmd_schema,
                        description=_SCHEMA_HELP, result=record({"commands": array(string())},
                                                                {"json_schema": record({}, closed=False)}))
    sp.add_argument("name", nargs="?", metavar="COMMAND", help="the command (default: list those with --json)")


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
    _add_exploring_commands(sub)
    _add_list_commands(sub)
    add_file_commands(sub)
    add_gate_commands(sub, load_target)
    add_memory_command(sub)
    for module in (cli_search, cli_rewrite, cli_backend, cli_run, cli_artifacts):
        module.add_commands(sub)
    _add_schema_command(sub)
    p.set_defaults(commands=tuple(sub.choices))
    return p


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"hlo-workbench: warning: {message}\n"


def _trouble(ns, argv: list[str], error: BaseException | str, kind: str | None = None) -> int:
    """Exit status 2: the reason on stderr (its first line leads), and with --json the error document on stdout
    (``kind``: its type, default the error's class)."""
    message = str(error)
    print(f"hlo-workbench: {message}", file=sys.stderr)
    if getattr(ns, "json", False) or (ns is None and "--json" in argv):
        command = getattr(ns, "command_name", None) or next((a for a in argv if not a.startswith("-")), "report")
        print(error_document(command, error, kind))
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
        if not getattr(ns, "json", False):
            return ns.func(ns)
        import contextlib

        # stdout holds the document alone: what the program prints (at trace time, jax.debug.print in a run)
        # and any note go to stderr while the command works; emit() writes to the stdout kept here
        ns.document_stream = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            return ns.func(ns)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except WorkbenchError as e:
        return _trouble(ns, argv, e)
    except SystemExit as e:  # a message (a string) is something that could not be done: status 2, not Python's 1
        if isinstance(e.code, int) or e.code is None:
            raise
        return _trouble(ns, argv, e.code, kind="WorkbenchError")
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 -- a bug of ours: status 2 (not 1, which says "found"), the reason first
        import traceback

        status = _trouble(ns, argv, f"internal error: {type(e).__name__}: {e}", kind="InternalError")
        print("(a bug in hlo-workbench; its traceback follows, for a report)", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
