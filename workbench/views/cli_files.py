"""The ``hlo-workbench`` commands that work on files rather than on a traced program:

    hlo-workbench diff before.mlir after.mlir      # structural diff of two MLIR (or two XLA HLO) modules
    hlo-workbench diff a.hlox b.hlox               # two saved explorations compared (views/cli_gates.py)
    hlo-workbench opt in.mlir --pass-pipeline='builtin.module(canonicalize,enzyme-hlo-opt)'
    hlo-workbench open attn.hlox --stage xla:optimized   # a saved exploration
    hlo-workbench course my-course/                # copy the course's notebooks to a folder of one's own

``cli.py`` registers them (``add_file_commands``) next to the commands that explore a function.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import LitFileError, StageError, WorkbenchError
from ..ir.lit import SPLIT_MARKER
from ..ir.text import input_kind, strip_locations
from .text import stage_table

__all__ = ["FILE_COMMANDS", "add_file_commands", "cmd_diff", "cmd_opt", "cmd_open", "cmd_course", "course_folder",
           "read_text_file"]

FILE_COMMANDS = ("diff", "opt", "open", "course")

# What each ``ir.text.input_kind`` is called in a message.
_KIND_NAMES = {"mlir": "MLIR", "hlo": "XLA HLO text", "jaxpr": "a jaxpr", "python": "Python source",
               "empty": "empty (or only comments)", "unknown": "neither MLIR nor XLA HLO text"}


def read_text_file(path: str) -> str:
    """The text of ``path`` (``-``: standard input); a WorkbenchError that says why it cannot be read."""
    if path == "-":
        return sys.stdin.read()
    p = Path(path)
    if not p.exists():
        raise WorkbenchError(f"no such file: {path}")
    if p.is_dir():
        raise WorkbenchError(f"{path} is a folder, not a file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WorkbenchError(f"{path} is not a text file (it is not UTF-8): give MLIR or XLA HLO text") from None
    except OSError as e:
        raise WorkbenchError(f"cannot read {path}: {e.strerror or e}") from None


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
    if ns.html:
        from ..artifacts.report import write_diff_page

        path = write_diff_page(texts[0], texts[1], names[0], names[1], ns.html)
        print(f"wrote the diff viewer of {names[0]} -> {names[1]} to {path} (one file, opens offline)")
    if d.is_empty:
        print(f"{names[0]} and {names[1]} are the same module (up to value names, numbering and locations)")
        return 0
    sys.stdout.write(d.unified(context=ns.context))
    print(_summary(d))
    return 1


_SUMMARY_OPS = 12  # op kinds the summary line names, largest changes first


def _summary(d) -> str:
    """One line: how many ops the diff removes and adds (by op name), and how many lines."""
    delta = d.ops_delta()
    removed = int(-delta["delta"][delta["delta"] < 0].sum())
    added = int(delta["delta"][delta["delta"] > 0].sum())
    kinds = [kind for _, _, kind in d.rows()]
    n = kinds.count("deleted")
    lines = (f"{n} line{'s' * (n != 1)} deleted, {kinds.count('inserted')} inserted, "
             f"{kinds.count('changed')} changed, {kinds.count('moved') // 2} moved")
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
    try:  # MlirSyntaxError (line:col) and PipelineSyntaxError go up: exit 2, as for the API
        result = opt(text, ns.pass_pipeline or "", timeout=ns.timeout,
                     split_input_file=True if ns.split_input_file else None)
    except StageError as e:
        print(f"hlo-workbench: {e.full if ns.full_errors else e}", file=sys.stderr)
        return 1
    except LitFileError as e:  # some chunks failed: the others' output, as mlir-opt prints it, and exit 1
        print(f"hlo-workbench: {e}", file=sys.stderr)
        result = f"\n{SPLIT_MARKER}\n".join(r for r in e.results if r is not None)
        sys.stdout.write(result if ns.mlir_print_debuginfo else strip_locations(result))
        return 1
    out = result if ns.mlir_print_debuginfo else strip_locations(result)
    if not out.endswith("\n"):
        out += "\n"
    if ns.output in (None, "-"):
        sys.stdout.write(out)
    else:
        try:
            Path(ns.output).write_text(out, encoding="utf-8")
        except OSError as e:
            raise WorkbenchError(f"cannot write {ns.output}: {e.strerror or e}") from None
    return 0


# -- open -------------------------------------------------------------------------------------------------


def cmd_open(ns) -> int:
    import workbench

    ex = workbench.load(ns.path)
    if ns.stage is None:
        print(stage_table(ex))
        if ex.error:
            print(f"\n(the saved exploration has a failed stage)\n{ex.error}", file=sys.stderr)
        return 0
    stage = ex.stage(ns.stage)  # UnknownNameError, with the closest names, for one that is not there
    if stage.error:
        print(f"hlo-workbench: stage {stage.name!r} failed when the exploration was made:\n{stage.error}",
              file=sys.stderr)
        return 1
    if ns.output:
        Path(ns.output).write_text(stage.text)
        print(f"wrote stage {stage.name!r} ({stage.lines} lines) to {ns.output}")
        return 0
    print(stage.text)
    return 0


# -- the parsers ------------------------------------------------------------------------------------------

_DIFF_HELP = """\
Structural diff of two modules, both MLIR (StableHLO, Enzyme-JaX output) or both XLA HLO text (as
'hlo-workbench show TARGET --stage xla:optimized' prints it). Locations, HLO metadata and SSA value
names are ignored: values are matched by what they compute, so a pass that only renumbers shows no
change. Prints the unified diff of the normalized texts, then a summary line of the op counts that
changed.

exit status: 0 the modules are the same (up to names and locations), 1 they differ,
2 trouble (a missing file, files of different kinds, text that is neither MLIR nor HLO)."""

_OPT_HELP = """\
Run an MLIR pass pipeline on a module, like mlir-opt / enzymexlamlir-opt, through the workbench's
worker process (the engine explore_text uses: Enzyme-JaX and upstream MLIR passes; a pass that
crashes is reported, the command survives). Only the resulting module goes to stdout, diagnostics
to stderr, so it fits lit/FileCheck:  hlo-workbench opt %s --pass-pipeline=canonicalize | filecheck %s
The module's public functions stay public (Enzyme's runner makes @main private while it works).

exit status: 0 the pipeline ran, 1 a pass failed (its diagnostics on stderr),
2 trouble (a missing file, a pipeline or module that does not parse, text that is not MLIR)."""

_OPEN_HELP = """\
Read a saved exploration (a .hlox file from ex.save(path)) without running a pass or compiling:
print its stage table (as 'hlo-workbench stages' does), or with --stage one stage's text.

exit status: 0 done, 1 the --stage asked for failed when the exploration was made,
2 trouble (a missing, corrupt, truncated or newer-version file, an unknown stage)."""


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
    print(f"the course ({len(files)} files) from {source} to {target}/: {len(copied)} written"
          + (f", {len(same)} already there" if same else "")
          + (f", {len(kept)} kept as they were (yours differ: {', '.join(kept)})" if kept else ""))
    print(f"open it with: jupyter lab {target / '00_tour.ipynb'}   (the index: {target / 'README.md'})")
    return 0


def add_file_commands(sub) -> None:
    """Add the diff, opt, open and course commands to the subparsers ``sub`` of the hlo-workbench parser."""
    raw = argparse.RawDescriptionHelpFormatter
    sp = sub.add_parser("diff", help="structural diff of two MLIR or two XLA HLO files, or two saved explorations "
                        "(.hlox) compared stage by stage (exit 0 same, 1 differ)",
                        description=_DIFF_HELP, formatter_class=raw)
    sp.add_argument("before", metavar="BEFORE", help="the first module's file (MLIR or XLA HLO text; - for stdin), "
                    "or a saved exploration (.hlox)")
    sp.add_argument("after", metavar="AFTER", help="the second module's file, of the same kind as BEFORE")
    sp.add_argument("-U", "--context", type=int, default=3, metavar="N",
                    help="unchanged lines to show around each change (default: 3)")
    sp.add_argument("--html", metavar="OUT.html", help="also write the diff as one self-contained HTML page "
                    "(the panel's diff viewer, side by side or unified; no network needed)")
    sp.add_argument("--run", action="store_true", help="with two .hlox files: also run each one's final MLIR stage "
                    "on its saved arguments (else seeded ones of their shapes) and compare the measured times")
    sp.set_defaults(func=cmd_diff)

    sp = sub.add_parser("opt", help="run a pass pipeline on an MLIR file and print the result (like mlir-opt)",
                        description=_OPT_HELP, formatter_class=raw)
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
    sp.set_defaults(func=cmd_opt)

    sp = sub.add_parser("open", help="the stage table (or one stage) of a saved exploration (.hlox)",
                        description=_OPEN_HELP, formatter_class=raw)
    sp.add_argument("path", metavar="FILE.hlox", help="a saved exploration, written by ex.save(path)")
    sp.add_argument("--stage", metavar="NAME", help="print this stage's text instead of the table, e.g. "
                    "stablehlo, enzyme-hlo-patterns#1, xla:optimized (the table lists the names)")
    sp.add_argument("-o", "--output", metavar="FILE", help="with --stage: write the stage's text to FILE "
                    "(e.g. to diff or opt it) instead of printing it")
    sp.set_defaults(func=cmd_open)

    sp = sub.add_parser("course", help="copy the course's notebooks (lessons 0-12 and their index) to a folder",
                        description="Copy the course -- the tour and lessons 1-12, with notebooks/README.md, "
                        "their index -- to FOLDER, to work in. A notebook already there that differs (your "
                        "answers) is kept as it is.")
    sp.add_argument("folder", metavar="FOLDER", nargs="?", default="hlo-workbench-course",
                    help="where to put the notebooks (default: ./hlo-workbench-course)")
    sp.set_defaults(func=cmd_course)
