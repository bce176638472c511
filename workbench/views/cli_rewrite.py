"""``hlo-workbench applicable``, ``step`` and ``edit``: the patterns one at a time, and a hand edit re-explored.

    hlo-workbench applicable mlp                        # the patterns that change 'stablehlo' applied alone
    hlo-workbench applicable model.mlir --stage cse#1 --details --json
    hlo-workbench step mlp --save steps.hlox            # one pattern a step; exit 1: not where a greedy run ends
    hlo-workbench edit mlp --remove cse#1 --insert-after canonicalize#1=cse --text inline#1=fixed.mlir --save e.hlox

Each is one call of the Python API on the exploration of TARGET (``cli_common.explore_target``):
``ex.applicable(stage, details=True)``, ``ex.step(stage)`` (a ``Stepwise``), and ``ex.with_text`` /
``with_pass`` / ``without_pass`` in the order the edits are given, then ``changes_since`` the unedited one.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import MlirSyntaxError, PipelineSyntaxError, WorkbenchError
from .cli_common import EXIT_FOUND, EXIT_OK, TargetError, command_parser, emit, explore_target, records
from .cli_schema import STAGE_FAILURE, STAGE_ROW, array, boolean, integer, maybe, number, record, rows, string
from .text import short_pass

__all__ = ["APPLICABLE_SCHEMA", "EDIT_SCHEMA", "STEP_SCHEMA", "add_commands", "cmd_applicable", "cmd_edit",
           "cmd_step"]

START = "stablehlo"

_OPS = rows({"op": string(), "before": integer(), "after": integer(), "delta": integer()})

APPLICABLE_SCHEMA = record({
    "stage": string(description="the stage the patterns were applied to, each alone"),
    "exact": boolean(description="one run per pattern (else group testing; both give the same answer)"),
    "patterns": array(string(), description="the patterns that change the stage applied alone, in catalog order"),
    "rows": rows({"name": string(), "group": string(), "changed": boolean(), "seconds": number(),
                  "error": string(), "batch": integer()},
                 "every pattern of the catalog (ex.applicable(stage, details=True)); seconds null: decided by an "
                 "unchanged batch of `batch` patterns, never run alone"),
    "summary": string()})

STEP_SCHEMA = record({
    "stage": string(description="the stage stepping starts from"),
    "applied": array(string(), description="the pattern each step applied, in order (Stepwise.applied())"),
    "matches_reference": boolean(description="stepping ended where one greedy run of all the patterns ends"),
    "reference": string(description="the stage of that greedy run"),
    "stages": array(STAGE_ROW, description="the stepwise stages: the start, then pattern:<name>#k"),
    "skipped": array(string(), description="patterns that raised and were skipped from then on"),
    "difference": maybe(record({"stepped": string(), "reference": string(), "changes": integer(),
                                "ops": _OPS, "summary": string()},
                               description="how the end of stepping differs from the greedy run's (null: it does "
                                           "not)")),
    "summary": string()})

_EDIT = record({"kind": {"enum": ["text", "insert", "remove"]}, "stage": string(), "at": integer(),
                "pass": string(), "text": string()})
_MODULE_CHANGE = maybe(record({"before": string(), "after": string(), "changed": boolean(), "ops": _OPS},
                              description="a module of the unedited exploration against the edited one's, and the "
                                          "op counts that differ (null: no pair to compare)"))
EDIT_SCHEMA = record({
    "edits": array(_EDIT, description="the edits of the edited exploration, in order (ex.edits)"),
    "stages": array(STAGE_ROW, description="the edited exploration's stage table (ex.table())"),
    "failed": STAGE_FAILURE,
    "first_difference": maybe(string(description="the first stage whose module is not the unedited pipeline's at "
                                                 "the same point (null: none differs)")),
    "final_mlir": _MODULE_CHANGE, "xla_optimized": _MODULE_CHANGE,
    "summary": string(description="what changed against the unedited exploration (Changes.summary)")})


# -- applicable --------------------------------------------------------------------------------------------


def _table(df) -> str:
    import pandas as pd

    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 80):
        return df.to_string(index=False, na_rep="")


def cmd_applicable(ns) -> int:
    ex = explore_target(ns)
    stage = ex.stage(ns.stage).name
    df = ex.applicable(stage, details=True, exact=ns.exact)
    names = list(df[df.changed].name)
    raised = df[df.error.notna() & (df.error != "")]
    how = "one run per pattern" if ns.exact else "group testing"
    summary = (f"{len(names)} of {len(df)} patterns change {stage!r} when applied alone ({how})"
               + (f"; {len(raised)} raised alone" if len(raised) else ""))
    if ns.json:
        doc = {"stage": stage, "exact": ns.exact, "patterns": names,
               "rows": records(df, ["name", "group", "changed", "seconds", "error", "batch"]), "summary": summary}
        return emit(ns, doc, EXIT_OK)
    print(f"# {summary}\n")
    if ns.details:
        shown = df[["name", "group", "changed", "seconds", "error", "batch"]].copy()
        shown["changed"] = ["yes" if c else "" for c in shown.changed]
        shown["error"] = [(e or "").splitlines()[0][:80] if isinstance(e, str) else "" for e in shown.error]
        print(_table(shown))
    elif names:
        print(_table(df[df.changed][["name", "group"]]))
    if len(raised) and not ns.details:
        print(f"\n# Raised when applied alone ({len(raised)})\n")
        print(_table(raised[["name", "group"]].assign(error=[e.splitlines()[0][:100] for e in raised.error])))
    return EXIT_OK


# -- step --------------------------------------------------------------------------------------------------


def _difference(s) -> dict | None:
    if s.matches_reference:
        return None
    d = s.difference
    ops = d.ops_delta_rows()
    counts: dict[str, int] = {}
    for c in d.changes:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    done = {"replace": "replaced", "insert": "inserted", "delete": "deleted", "move": "moved"}
    changes = (f"{len(d.changes)} change{'s' * (len(d.changes) != 1)} ("
               + ", ".join(f"{n} {done.get(kind, kind)}" for kind, n in counts.items()) + ")")
    moved = ", ".join(f"{r['op']} {r['delta']:+d}" for r in ops) or "the same op counts"
    summary = (f"{d.before_name} ({len(d.before)} lines) vs {d.after_name} ({len(d.after)} lines): "
               f"{changes}; {moved}")
    return {"stepped": d.before_name, "reference": d.after_name, "changes": len(d.changes), "ops": ops,
            "summary": summary}


def cmd_step(ns) -> int:
    if ns.max_steps < 0:
        raise WorkbenchError(f"--max-steps {ns.max_steps}: give a number of steps of at least 0")
    ex = explore_target(ns)
    stage = ex.stage(ns.stage).name
    s = ex.step(stage, max_steps=ns.max_steps, exact=ns.exact)
    status = EXIT_OK if s.matches_reference else EXIT_FOUND
    difference = _difference(s)
    if getattr(ns, "save", None):
        path = s.save(ns.save)
        print(f"hlo-workbench: saved the stepwise exploration to {path} (hlo-workbench open {path})",
              file=sys.stderr)
    if ns.json:
        doc = {"stage": stage, "applied": s.applied(), "matches_reference": s.matches_reference,
               "reference": s.reference.name, "stages": records(s.table()), "skipped": list(s.skipped),
               "difference": difference, "summary": s.summary}
        return emit(ns, doc, status)
    print(f"# {s.summary.replace('(see .difference)', '(below)')}\n")
    print(_table(s.table()[["stage", "group", "lines", "ms"]]))  # the stage names say the patterns
    if difference is not None:
        print(f"\n# The end differs from one greedy run of all the patterns\n\n{difference['summary']}")
        if s.reference.error:
            print(f"the greedy run failed: {s.reference.error.splitlines()[0]}")
    return status


# -- edit --------------------------------------------------------------------------------------------------


class _EditAction(argparse.Action):
    """Appends ``(kind, value)`` to ``ns.edits``: the edits, in the order they are given on the command line."""

    def __call__(self, parser, ns, values, option_string=None):
        ns.edits = [*(getattr(ns, "edits", None) or []), (self.const, values)]


def _pair(option: str, value: str, what: str) -> tuple[str, str]:
    stage, eq, rest = value.partition("=")
    if not eq or not stage.strip() or not rest.strip():
        raise WorkbenchError(f"{option} {value!r}: expected STAGE={what}, e.g. {option} cse#1="
                             + ("fixed.mlir" if what == "FILE" else "canonicalize"))
    return stage.strip(), rest.strip()


def _planned(edits) -> list[tuple[str, str, str, str]]:
    """The command line's edits as (kind, stage, payload, option) -- a text edit's file read now, before any
    exploring, so that a missing file says so at once."""
    from .cli_common import read_text_file

    out = []
    for kind, value in edits:
        if kind == "text":
            stage, path = _pair("--text", value, "FILE")
            try:
                out.append(("text", stage, read_text_file(path), f"--text {stage}={path}"))
            except WorkbenchError as e:
                raise TargetError(f"--text {stage}={path}: {e}") from None
        elif kind == "insert":
            stage, pass_ = _pair("--insert-after", value, "PASS")
            out.append(("insert", stage, pass_, f"--insert-after {stage}={pass_}"))
        else:
            out.append(("remove", value.strip(), "", f"--remove {value.strip()}"))
    return out


def _one_line(option: str, e: WorkbenchError, path: str = "") -> str:
    """What could not be edited, in one line: where MLIR refused a text (FILE:LINE:COL), the pass string's error."""
    if isinstance(e, MlirSyntaxError) and e.diagnostics:
        first = e.diagnostics[0]
        return f"{option}: {path}:{first}" if path else f"{option}: {first}"
    if isinstance(e, PipelineSyntaxError):
        said = [ln.split("error:", 1)[1].strip() for ln in str(e).splitlines() if "error:" in ln]
        return f"{option}: {said[0] if said else str(e).splitlines()[0]}"
    said = " ".join(str(e).split())
    for python, flag in _IN_FLAGS:  # the API's advice, in this command's words
        said = said.replace(python, flag)
    return f"{option}: {said}"


# what the Python API's messages advise, as this command's options say it
_IN_FLAGS = (("edit its text with with_text", "edit its text with --text STAGE=FILE"),
             ("toggle XLA's passes with with_xla", "switch XLA's passes off with --xla-disable PASS"))


def _apply(ex, planned):
    for kind, stage, payload, option in planned:
        try:
            if kind == "text":
                ex = ex.with_text(stage, payload)
            elif kind == "insert":
                ex = ex.with_pass(stage, payload)
            else:
                ex = ex.without_pass(stage)
        except WorkbenchError as e:  # its kind kept (the --json error's type), its message one line naming the edit
            e.args = (_one_line(option, e, option.partition("=")[2] if kind == "text" else ""),)
            raise e from None
    return ex


def _edited_table(ex) -> str:
    """The stage table with what the edits did to each stage ("text", "inserted", "after-removed")."""
    df = ex.table()
    df.insert(1, "edit", [s.edit for s in ex.stages])
    df["produced_by"] = [short_pass(p) for p in df["produced_by"]]
    for col in ("changed", "cached"):
        df[col] = ["yes" if c else "" for c in df[col]]
    return _table(df.drop(columns=["error"]))  # a failed stage's error follows on stderr


def _first_difference(before, after) -> str | None:
    """The first stage of ``after`` (``before`` edited) whose module is not the one ``before`` has at the same point
    of its pipeline: the start compared with the start, each MLIR step with the step it was before the edits
    (a step the edits inserted with the module before it); compared without locations. None: no module differs."""
    start_b, start_a = before.pipeline_stages, after.pipeline_stages
    old = [s for s in start_b if s.group == "mlir"]
    steps: list[int | None] = list(range(len(old)))  # each step of the edited pipeline: its step before the edits
    for e in after.edits[len(before.edits):]:
        if e.kind == "insert":
            steps.insert(e.at, None)
        elif e.kind == "remove":
            del steps[e.at]
    first_b = next(s for s in start_b if s.is_module)
    first_a = next(s for s in start_a if s.is_module)
    if first_a.text != first_b.text:
        return first_a.name
    was = first_b.text  # the unedited module at this point of the pipeline
    for k, s in enumerate(x for x in start_a if x.group == "mlir"):
        j = steps[k] if k < len(steps) else None
        if j is not None and j < len(old):
            was = old[j].text
        if s.error or s.text != was:
            return s.name
    return None


def _module_change(m) -> dict | None:
    if m is None:
        return None
    return {"before": m.before.name, "after": m.after.name, "changed": m.changed,
            "ops": [{"op": op, "before": b, "after": a, "delta": d} for op, b, a, d in m.ops]}


def _edit_doc(edited, changes, first) -> dict:
    err = edited.error
    return {"edits": [{"kind": e.kind, "stage": e.stage, "at": e.at, "pass": e.pass_, "text": e.text}
                      for e in edited.edits],
            "stages": records(edited.table()),
            "failed": None if err is None else {"stage": err.stage, "message": str(err)},
            "first_difference": first, "final_mlir": _module_change(changes.mlir),
            "xla_optimized": _module_change(changes.xla), "summary": changes.summary}


def cmd_edit(ns) -> int:
    if not ns.edits:
        raise WorkbenchError("give at least one edit: --text STAGE=FILE, --insert-after STAGE=PASS or --remove STAGE")
    planned = _planned(ns.edits)
    ex = explore_target(ns)
    edited = _apply(ex, planned)
    changes = edited.changes_since(ex)
    first = _first_difference(ex, edited)
    if getattr(ns, "save", None):
        path = edited.save(ns.save)
        print(f"hlo-workbench: saved the edited exploration to {path} (hlo-workbench open {path})", file=sys.stderr)
    if ns.html:
        path = edited.report(ns.html)
        print(f"hlo-workbench: wrote the edited exploration's report to {path}", file=sys.stderr)
    err = edited.error
    status = EXIT_FOUND if err is not None else EXIT_OK
    if err is not None:
        print(err.full if ns.full_errors else err, file=sys.stderr)
    if ns.json:
        return emit(ns, _edit_doc(edited, changes, first), status)
    print(f"# {changes.summary}")
    if err is not None:
        print(f"# {str(err).splitlines()[0]} (its whole error is on stderr)")
    print(f"# first stage whose module differs: {first}" if first else
          "# every stage's module is as in the unedited pipeline")
    print()
    print(_edited_table(edited))
    for what, m in (("final MLIR module", changes.mlir), ("xla:optimized", changes.xla)):
        if m is None or not m.changed:
            continue
        names = m.after.name if m.before.name == m.after.name else f"{m.before.name} -> {m.after.name}"
        print(f"\n# {what} ({names}): op counts before and after the edit\n")
        import pandas as pd

        ops = pd.DataFrame(list(m.ops), columns=["op", "before", "after", "delta"])
        print(_table(ops) if len(ops) else "(the same op counts: ops rewired or with other attributes)")
    return status


# -- the parsers ---------------------------------------------------------------------------------------------

_APPLICABLE_HELP = """\
The Enzyme-JaX patterns that change a stage of TARGET when applied alone (ex.applicable(stage) in Python),
in catalog order: every pattern of the catalog is asked, by group testing (batches of patterns in one run,
split only where they change the module), or with --exact one run per pattern; both give the same answer.
Exit status 0: the listing was made (whether or not a pattern applies)."""

_STEP_HELP = """\
Apply the enabled patterns one at a time to a stage of TARGET (ex.step(stage) in Python): each step the first
pattern of the list that changes the module, a stage pattern:<name>#k each, until none applies; then compare
the end with one greedy run of all the patterns from the same start.
Exit status 0: stepping ends where the greedy run ends; 1: it ends elsewhere (the difference is printed)."""

_EDIT_HELP = """\
Edit TARGET's pipeline or a stage's module by hand and re-explore from there (ex.with_text, ex.with_pass,
ex.without_pass in Python), the edits applied in the order given; each names a stage as the exploration has
it after the edits before it. Prints the edited exploration's stage table and what changed against the
unedited one: the final module's op counts before and after, the first stage whose module differs.
Exit status 0: edited and explored; 1: a stage failed after the edit (its error on stderr, the stages before
it printed); 2: an edit that cannot be made (a text that does not parse: its FILE:LINE:COL; an unknown stage
or pass)."""


def _save_help(sp, text: str) -> None:
    """Say what --save keeps for this command (explore_args' text is about the exploration of TARGET)."""
    for action in sp._actions:
        if action.dest == "save":
            action.help = text


def add_commands(sub) -> None:
    """Add applicable, step and edit to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "applicable", "the patterns that change a stage when applied alone", cmd_applicable,
                        description=_APPLICABLE_HELP, result=APPLICABLE_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--stage", default=START, metavar="NAME", help=f"the stage to apply them to (default {START}; "
                    "an MLIR stage such as cse#1)")
    sp.add_argument("--exact", action="store_true", help="one run per pattern instead of group testing")
    sp.add_argument("--details", action="store_true", help="every pattern's row: changed, seconds, error, and the "
                    "batch that decided it")

    sp = command_parser(sub, "step", "apply the patterns one at a time; exit 1 where the end is not a greedy run's",
                        cmd_step, description=_STEP_HELP, result=STEP_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--stage", default=START, metavar="NAME", help=f"the stage to start from (default {START})")
    sp.add_argument("--max-steps", type=int, default=200, metavar="N", help="stop after N steps (default 200)")
    sp.add_argument("--exact", action="store_true", help="find each step's pattern by running the patterns alone")
    _save_help(sp, "save the stepwise exploration (its stages pattern:<name>#k; wb.load reads it)")

    sp = command_parser(sub, "edit", "edit a stage's text or the pipeline's passes and re-explore", cmd_edit,
                        description=_EDIT_HELP, result=EDIT_SCHEMA, explores=True, default_target=None)
    sp.set_defaults(edits=None)
    sp.add_argument("--text", action=_EditAction, const="text", metavar="STAGE=FILE", help="STAGE's module becomes "
                    "FILE's text (MLIR; '-': stdin), and the pipeline resumes from it")
    sp.add_argument("--insert-after", action=_EditAction, const="insert", metavar="STAGE=PASS",
                    help="run PASS (a pass or pipeline string, e.g. canonicalize or 'func.func(cse)') right after "
                    "STAGE")
    sp.add_argument("--remove", action=_EditAction, const="remove", metavar="STAGE",
                    help="leave out the pass that made STAGE")
    sp.add_argument("--html", metavar="OUT.html", help="also write the edited exploration's HTML report")
    _save_help(sp, "save the edited exploration, its edits with it (wb.load reads them back as ex.edits)")
