"""The ``hlo-workbench`` commands that work on files rather than on a traced program:

    hlo-workbench diff before.mlir after.mlir      # structural diff of two MLIR (or two XLA HLO) modules
    hlo-workbench diff a.hlox b.hlox               # two saved explorations compared (views/cli_gates.py)
    hlo-workbench opt in.mlir --pass-pipeline='builtin.module(canonicalize,enzyme-hlo-opt)'
    hlo-workbench open attn.hlox --stage xla:optimized   # a saved exploration
    hlo-workbench course my-course/                # copy the course's notebooks to a folder of one's own

``cli.py`` registers them (``add_file_commands``) next to the commands that explore a function.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import LitFileError, StageError, WorkbenchError
from ..ir.lit import SPLIT_MARKER
from ..ir.text import input_kind, strip_locations
from .cli_common import command_parser, emit, read_text_file, records, say
from .cli_gates import COMPARISON_FIELDS
from .cli_schema import STAGE_FAILURE, STAGE_ROW, array, boolean, integer, maybe, record, rows, string
from .text import stage_table

__all__ = ["FILE_COMMANDS", "add_file_commands", "cmd_diff", "cmd_opt", "cmd_open", "cmd_course", "course_folder",
           "DIFF_SCHEMA", "OPT_SCHEMA", "OPEN_SCHEMA", "COURSE_SCHEMA"]

FILE_COMMANDS = ("diff", "opt", "open", "course")

# What each ``ir.text.input_kind`` is called in a message.
_KIND_NAMES = {"mlir": "MLIR", "hlo": "XLA HLO text", "jaxpr": "a jaxpr", "python": "Python source",
               "empty": "empty (or only comments)", "unknown": "neither MLIR nor XLA HLO text"}


def _label(path: str) -> str:
    return "<stdin>" if path == "-" else path


# -- diff -------------------------------------------------------------------------------------------------


def cmd_diff(ns) -> int:
    from ..analysis.diff import diff_texts

    if ns.before == "-" and ns.after == "-":
        raise WorkbenchError("only one of the two files can be '-' (standard input)")
    from .cli_gates import cmd_diff_explorations, is_saved_exploration

    saved = [is_saved_exploration(p) for p in (ns.before, ns.after)]
    if all(saved):
        return cmd_diff_explorations(ns)
    if any(saved):
        raise WorkbenchError("cannot diff a saved exploration (.hlox) with a module's text: give two .hlox files, "
                             "or two MLIR / XLA HLO files")
    if ns.run:
        raise WorkbenchError("--run compares two saved explorations (.hlox files); two modules' texts are not run")
    texts = [read_text_file(ns.before), read_text_file(ns.after)]
    names = [_label(ns.before), _label(ns.after)]
    kinds = [input_kind(t) for t in texts]
    if kinds[0] != kinds[1] or kinds[0] not in ("mlir", "hlo"):
        described = " and ".join(f"{n} is {_KIND_NAMES[k]}" for n, k in zip(names, kinds))
        raise WorkbenchError(f"cannot diff these files: {described}; diff compares two modules of one kind, "
                             "both MLIR (StableHLO and friends) or both XLA HLO text")
    d = diff_texts(texts[0], texts[1], names[0], names[1])
    html = None
    if ns.html:
        from ..artifacts.report import write_diff_page

        html = str(write_diff_page(texts[0], texts[1], names[0], names[1], ns.html))
        say(ns, f"wrote the diff viewer of {names[0]} -> {names[1]} to {html} (one file, opens offline)")
    status = 0 if d.is_empty else 1
    if ns.json:
        return emit(ns, {"kind": "modules", "before": names[0], "after": names[1], "same": d.is_empty,
                         "ops_delta": d.ops_delta_rows(), "lines": _line_counts(d),
                         "unified": d.unified(context=ns.context), "html": html}, status)
    if d.is_empty:
        print(f"{names[0]} and {names[1]} are the same module (up to value names, numbering and locations)")
        return status
    sys.stdout.write(d.unified(context=ns.context))
    print(_summary(d))
    return status


def _line_counts(d) -> dict[str, int]:
    """How many lines the diff deletes, inserts, changes and moves (a moved line counted once)."""
    kinds = [kind for _, _, kind in d.rows()]
    return {"deleted": kinds.count("deleted"), "inserted": kinds.count("inserted"), "changed": kinds.count("changed"),
            "moved": kinds.count("moved") // 2}


_SUMMARY_OPS = 12  # op kinds the summary line names, largest changes first


def _summary(d) -> str:
    """One line: how many ops the diff removes and adds (by op name), and how many lines."""
    delta = d.ops_delta()
    removed = int(-delta["delta"][delta["delta"] < 0].sum())
    added = int(delta["delta"][delta["delta"] > 0].sum())
    counts = _line_counts(d)
    n = counts["deleted"]
    lines = (f"{n} line{'s' * (n != 1)} deleted, {counts['inserted']} inserted, "
             f"{counts['changed']} changed, {counts['moved']} moved")
    if not len(delta):
        return f"summary: no op count changed; {lines}"
    rows = list(delta.itertuples(index=False))
    per_op = ", ".join(f"{op} {b} -> {a} ({dl:+d})" for op, b, a, dl in rows[:_SUMMARY_OPS])
    if len(rows) > _SUMMARY_OPS:
        per_op += f" and {len(rows) - _SUMMARY_OPS} more op kinds"
    return f"summary: {removed} op{'s' * (removed != 1)} removed, {added} added: {per_op}; {lines}"


# -- opt --------------------------------------------------------------------------------------------------


def cmd_opt(ns) -> int:
    from ..exploration import opt

    text = read_text_file(ns.input)
    kind = input_kind(text)
    if kind in ("hlo", "jaxpr", "python", "empty"):
        raise WorkbenchError(f"{_label(ns.input)} is {_KIND_NAMES[kind]}, not MLIR: opt runs MLIR passes on an "
                             "MLIR/StableHLO module, e.g. the text of jax.jit(f).lower(*args).as_text() or a stage "
                             "that hlo-workbench show prints")
    head = {"input": _label(ns.input), "pipeline": ns.pass_pipeline or ""}
    try:  # MlirSyntaxError (line:col) and PipelineSyntaxError go up: exit 2, as for the API
        result = opt(text, ns.pass_pipeline or "", timeout=ns.timeout,
                     split_input_file=True if ns.split_input_file else None)
    except StageError as e:
        print(f"hlo-workbench: {e.full if ns.full_errors else e}", file=sys.stderr)
        if ns.json:
            return emit(ns, {**head, "module": None, "chunks": None, "output": None,
                             "failure": {"stage": e.stage, "message": str(e)}}, 1)
        return 1
    except LitFileError as e:  # some chunks failed: the others' output, as mlir-opt prints it, and exit 1
        print(f"hlo-workbench: {e}", file=sys.stderr)
        outs = [None if r is None else _printed(r, ns) for r in e.results]
        if ns.json:
            chunks = _failed_chunks(e, outs)
            return emit(ns, {**head, "module": None, "chunks": chunks, "output": None,
                             "failure": {"stage": "", "message": str(e)}}, 1)
        sys.stdout.write(f"\n{SPLIT_MARKER}\n".join(o for o in outs if o is not None))
        return 1
    out = _printed(result, ns)
    if not out.endswith("\n"):
        out += "\n"
    written = None
    if ns.output not in (None, "-"):
        try:
            Path(ns.output).write_text(out, encoding="utf-8")
        except OSError as e:
            raise WorkbenchError(f"cannot write {ns.output}: {e.strerror or e}") from None
        written = ns.output
    if ns.json:
        split = ns.split_input_file or f"\n{SPLIT_MARKER}\n" in out  # or the file's RUN line split it
        chunks = [{"module": c if c.endswith("\n") else c + "\n", "error": None}
                  for c in out.split(f"\n{SPLIT_MARKER}\n")] if split else None
        return emit(ns, {**head, "module": out, "chunks": chunks, "output": written, "failure": None}, 0)
    if written is None:
        sys.stdout.write(out)
    return 0


def _failed_chunks(e: LitFileError, outs: list[str | None]) -> list[dict]:
    """Each chunk's module, or its error (``e.failed`` names the failed ones in order) where it failed."""
    failed = iter(e.failed)
    chunks = []
    for out in outs:
        if out is not None:
            chunks.append({"module": out, "error": None})
        else:
            label, error = next(failed, ("a chunk", "failed"))
            chunks.append({"module": None, "error": f"{label}: {str(error).strip()}"})
    return chunks


def _printed(module: str, ns) -> str:
    """A module as opt prints it: without its locations unless --mlir-print-debuginfo."""
    return module if ns.mlir_print_debuginfo else strip_locations(module)


# -- open -------------------------------------------------------------------------------------------------


def cmd_open(ns) -> int:
    import workbench

    ex = workbench.load(ns.path)
    if ns.stage is None:
        if ns.json:
            failure = None if ex.error is None else {"stage": ex.error.stage, "message": str(ex.error)}
            return emit(ns, {"path": ns.path, "stages": records(ex.table()), "failure": failure}, 0)
        print(stage_table(ex))
        if ex.error:
            print(f"\n(the saved exploration has a failed stage)\n{ex.error}", file=sys.stderr)
        return 0
    stage = ex.stage(ns.stage)  # UnknownNameError, with the closest names, for one that is not there
    status = 1 if stage.error else 0
    if stage.error:
        print(f"hlo-workbench: stage {stage.name!r} failed when the exploration was made:\n{stage.error}",
              file=sys.stderr)
    elif ns.output:
        Path(ns.output).write_text(stage.text)
        say(ns, f"wrote stage {stage.name!r} ({stage.lines} lines) to {ns.output}")
    if ns.json:
        return emit(ns, {"path": ns.path, "stage": {
            "name": stage.name, "group": stage.group, "produced_by": stage.produced_by or "", "changed": stage.changed,
            "lines": stage.lines, "text": stage.text, "error": stage.error or ""},
            "output": ns.output if ns.output and not stage.error else None}, status)
    if not stage.error and not ns.output:
        print(stage.text)
    return status


# -- the parsers ------------------------------------------------------------------------------------------

_DIFF_HELP = """\
Structural diff of two modules, both MLIR (StableHLO, Enzyme-JaX output) or both XLA HLO text (as
'hlo-workbench show TARGET --stage xla:optimized' prints it). Locations, HLO metadata and SSA value
names are ignored: values are matched by what they compute, so a pass that only renumbers shows no
change. Prints the unified diff of the normalized texts, then a summary line of the op counts that
changed. Two saved explorations (.hlox) are compared stage by stage (views/cli_gates.py).

It exits 0 when the modules (the explorations) are the same up to names and locations, 1 when they
differ, 2 for a missing file, files of different kinds, text that is neither MLIR nor HLO."""

_OPT_HELP = """\
Run an MLIR pass pipeline on a module, like mlir-opt / enzymexlamlir-opt, through the workbench's
worker process (the engine explore_text uses: Enzyme-JaX and upstream MLIR passes; a pass that
crashes is reported, the command survives). Only the resulting module goes to stdout, diagnostics
to stderr, so it fits lit/FileCheck:  hlo-workbench opt %s --pass-pipeline=canonicalize | filecheck %s
The module's public functions stay public (Enzyme's runner makes @main private while it works).

It exits 0 when the pipeline ran, 1 when a pass (or a --split-input-file chunk) failed, its diagnostics
on stderr, 2 for a missing file, a pipeline or module that does not parse, text that is not MLIR."""

_OPEN_HELP = """\
Read a saved exploration (a .hlox file from ex.save(path)) without running a pass or compiling:
print its stage table (as 'hlo-workbench stages' does), or with --stage one stage's text.

It exits 0 when it printed them, 1 when the --stage asked for failed when the exploration was made,
2 for a missing, corrupt, truncated or newer-version file, an unknown stage."""


# -- course ----------------------------------------------------------------------------------------------


def course_folder() -> Path:
    """Where the course's notebooks are: the checkout's notebooks/ when this is one, else the folder the
    wheel installed them to (share/hlo-workbench/notebooks under the environment or the user's base)."""
    import site
    import sysconfig

    here = Path(__file__).resolve().parents[2]
    places = [here / "notebooks"] if (here / "pyproject.toml").exists() else []
    places += [Path(base) / "share" / "hlo-workbench" / "notebooks"
               for base in dict.fromkeys([sysconfig.get_paths()["data"], sys.prefix, site.USER_BASE or ""]) if base]
    for place in places:
        if (place / "00_tour.ipynb").is_file():
            return place
    raise WorkbenchError("the course's notebooks are not installed here (looked in "
                         + ", ".join(map(str, places)) + "); install the hlo-workbench wheel, or run from a checkout")


def cmd_course(ns) -> int:
    source = course_folder()
    target = Path(ns.folder)
    if target.exists() and not target.is_dir():
        raise WorkbenchError(f"{target} is a file, not a folder")
    target.mkdir(parents=True, exist_ok=True)
    files = sorted(source.glob("*.ipynb")) + [p for p in [source / "README.md"] if p.is_file()]
    copied, same, kept = [], [], []
    for path in files:
        dest = target / path.name
        if dest.exists():
            # the student's own copy, perhaps with answers in it, is never overwritten
            (same if dest.read_bytes() == path.read_bytes() else kept).append(dest.name)
            continue
        dest.write_bytes(path.read_bytes())
        copied.append(dest.name)
    if ns.json:
        return emit(ns, {"folder": str(target), "source": str(source), "written": copied, "already_there": same,
                         "kept": kept}, 0)
    print(f"the course ({len(files)} files) from {source} to {target}/: {len(copied)} written"
          + (f", {len(same)} already there" if same else "")
          + (f", {len(kept)} kept as they were (yours differ: {', '.join(kept)})" if kept else ""))
    print(f"open it with: jupyter lab {target / '00_tour.ipynb'}   (the index: {target / 'README.md'})")
    return 0


_COURSE_HELP = """\
Copy the course -- the tour and lessons 1-12, with notebooks/README.md, their index -- to FOLDER, to work
in. A notebook already there that differs (your answers) is kept as it is.

It exits 0 when the course is in FOLDER, 2 where FOLDER is a file or the notebooks are not installed."""

_COUNTS = {"deleted": integer(minimum=0), "inserted": integer(minimum=0), "changed": integer(minimum=0),
           "moved": integer(minimum=0)}
DIFF_SCHEMA = record(
    {"kind": {"enum": ["modules", "explorations"], "description": "two modules' texts, or two saved explorations"},
     "before": string(), "after": string(),
     "same": boolean(description="the same up to value names, numbering and locations (explorations: identical)"),
     "html": maybe(string(description="the page --html wrote"))},
    {"ops_delta": rows({"op": string(), "before": integer(), "after": integer(), "delta": integer()},
                       description="modules: the op counts that differ (Diff.ops_delta()), largest change first"),
     "lines": record(_COUNTS, description="modules: lines deleted, inserted, changed and moved (once each)"),
     "unified": string(description="modules: the unified diff of the normalized texts (-U lines of context)"),
     **COMPARISON_FIELDS})
OPT_SCHEMA = record(
    {"input": string(), "pipeline": string(description="--pass-pipeline as given"),
     "module": maybe(string(description="the resulting module, as printed (null: a pass failed)")),
     "chunks": maybe(array(record({"module": maybe(string()), "error": maybe(string())}),
                           description="with --split-input-file: each chunk's module, or its error")),
     "output": maybe(string(description="the file -o wrote")),
     "failure": STAGE_FAILURE})
OPEN_SCHEMA = record(
    {"path": string()},
    {"stages": array(STAGE_ROW, description="the stage table (Exploration.table())"), "failure": STAGE_FAILURE,
     "stage": record({"name": string(), "group": string(), "produced_by": string(), "changed": boolean(),
                      "lines": integer(), "text": string(), "error": string()},
                     description="with --stage: that stage (its error where it failed)"),
     "output": maybe(string(description="the file -o wrote"))})
COURSE_SCHEMA = record({"folder": string(), "source": string(description="where the notebooks were copied from"),
                        "written": array(string()), "already_there": array(string(), description="the same file"),
                        "kept": array(string(), description="yours, which differ: never overwritten")})


def add_file_commands(sub) -> None:
    """Add the diff, opt, open and course commands to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "diff", "structural diff of two MLIR or two XLA HLO files, or two saved explorations "
                        "(.hlox) compared stage by stage (exit 0 same, 1 differ)", cmd_diff, description=_DIFF_HELP,
                        result=DIFF_SCHEMA)
    sp.add_argument("before", metavar="BEFORE", help="the first module's file (MLIR or XLA HLO text; - for stdin), "
                    "or a saved exploration (.hlox)")
    sp.add_argument("after", metavar="AFTER", help="the second module's file, of the same kind as BEFORE")
    sp.add_argument("-U", "--context", type=int, default=3, metavar="N",
                    help="unchanged lines to show around each change (default: 3)")
    sp.add_argument("--html", metavar="OUT.html", help="also write the diff as one self-contained HTML page "
                    "(the panel's diff viewer, side by side or unified; no network needed)")
    sp.add_argument("--run", action="store_true", help="with two .hlox files: also run each one's final MLIR stage "
                    "on its saved arguments (else seeded ones of their shapes) and compare the measured times")

    sp = command_parser(sub, "opt", "run a pass pipeline on an MLIR file and print the result (like mlir-opt)",
                        cmd_opt, description=_OPT_HELP, result=OPT_SCHEMA)
    sp.add_argument("input", metavar="INPUT", help="the MLIR/StableHLO module's file, or - for stdin")
    sp.add_argument("--pass-pipeline", metavar="PIPELINE", default="",
                    help="the passes to run: 'builtin.module(canonicalize,enzyme-hlo-opt)' or a bare list "
                         "'canonicalize,cse'; enzyme-hlo-patterns stands for Enzyme-JaX's default pattern list "
                         "(default: none, so the module is parsed, verified and printed)")
    sp.add_argument("--split-input-file", action="store_true", help="run each '// -----' chunk of the file on its "
                    "own and join the outputs with '// -----' lines, as mlir-opt's flag of that name (a lit file; "
                    "--pass-pipeline RUN takes the file's RUN line, this flag included)")
    sp.add_argument("-o", "--output", metavar="FILE", help="write the resulting module to FILE (default: stdout)")
    sp.add_argument("--mlir-print-debuginfo", action="store_true",
                    help="keep the locations (loc(...)) in the printed module, as mlir-opt's flag of that name")
    sp.add_argument("--full-errors", action="store_true", help="a failed pass's whole diagnostic: every frame "
                    "of each error, and what the pass runner printed (default: the short form)")
    sp.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                    help="stop the pipeline after this long, as a failed pass (default: 600)")

    sp = command_parser(sub, "open", "the stage table (or one stage) of a saved exploration (.hlox)", cmd_open,
                        description=_OPEN_HELP, result=OPEN_SCHEMA)
    sp.add_argument("path", metavar="FILE.hlox", help="a saved exploration, written by ex.save(path)")
    sp.add_argument("--stage", metavar="NAME", help="print this stage's text instead of the table, e.g. "
                    "stablehlo, enzyme-hlo-patterns#1, xla:optimized (the table lists the names)")
    sp.add_argument("-o", "--output", metavar="FILE", help="with --stage: write the stage's text to FILE "
                    "(e.g. to diff or opt it) instead of printing it")

    sp = command_parser(sub, "course", "copy the course's notebooks (lessons 0-12 and their index) to a folder",
                        cmd_course, description=_COURSE_HELP, result=COURSE_SCHEMA)
    sp.add_argument("folder", metavar="FOLDER", nargs="?", default="hlo-workbench-course",
                    help="where to put the notebooks (default: ./hlo-workbench-course)")
