"""``hlo-workbench drift``, ``bisect`` and ``reduce``: the searches of a program, on the command line.

    hlo-workbench drift train.py:step --no-nan          # where the numbers first go wrong (exit 1: a drift)
    hlo-workbench drift train.py:step --json            # the Drift as one JSON document, for a CI job
    hlo-workbench bisect train.py:step --no-nan         # the patterns that make it miscompile (the default)
    hlo-workbench bisect sgd.py:update --lacks-op stablehlo.transpose --over all
    hlo-workbench reduce sgd.py:update --has-op stablehlo.dot_general -o small.mlir

Each is one call of the Python API on the Exploration of TARGET (``cli_common.explore_target``):
``ex.drift(...)``, ``ex.bisect(predicate, over=...)``, ``ex.reduce(predicate, stage=...)``. The predicate of
bisect and reduce is one of the built-in ones (``wb.miscompiles``, ``crashes``, ``slower_than``,
``op_count_above``/``_at_most``, ``has_op``/``lacks_op``, ``differs_from``, ``drifts_at``), chosen by one
option (``predicate_options``), so what a command line finds a script can ask again with the same object. A
search whose predicate does not hold where it starts has nothing to search (``NothingToSearchError``): exit 0,
and the reason on stdout; a search that cannot run at all exits 2.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import NothingToSearchError, WorkbenchError
from .cli_common import EXIT_FOUND, EXIT_OK, command_parser, emit, explore_target, records
from .cli_schema import array, boolean, integer, maybe, number, record, rows, string

__all__ = ["BISECT_SCHEMA", "DRIFT_SCHEMA", "REDUCE_SCHEMA", "add_commands", "add_predicate_options",
           "check_predicate_options", "cmd_bisect", "cmd_drift", "cmd_reduce", "drift_document", "predicate_given",
           "predicate_of"]


# -- what the documents hold ------------------------------------------------------------------------------------

_ERROR = maybe(number(description="null where it is not finite (inf, nan): max_abs_text says which"))
_CHECK = {"max_abs": _ERROR, "max_abs_text": string(description="the error as printed, e.g. '0.0031', 'inf', 'nan'"),
          "tolerance": maybe(number()), "rule": string(description="which reference decided: float64, noise, exact")}
_COUNTERPART = record({"result": string(), "op": string(), "line": maybe(integer(minimum=1)), "text": string(),
                       "source": string()}, description="the op's counterpart in the reference (line: 1-based)")
_INPUT = record({"position": integer(minimum=0), "here": string(), "reference": string(),
                 "differs": maybe(boolean(description="null: not compared, their types differ")),
                 "max_abs": _ERROR, "tolerance": maybe(number()), "note": string(),
                 "source": string(description="the user's line of the value that came in otherwise"),
                 "changed_by": maybe(string())})
_CAUSE = maybe(record({"kind": {"enum": ["edit", "patterns", "stage"]}, "stage": string(),
                       "patterns": array(string()), "how": string()},
                      description="the one cause the explanation names (null: no stage changed these ops)"))
_OP = maybe(record({
    "stage": string(), "result": string(), "op": string(),
    "line": integer(minimum=1, description="1-based, in the stage's text"), "text": string(),
    "source": string(description="the user's line that made the op (file:line; '' where none)"),
    "reference": _COUNTERPART, **_CHECK, "shape": array(integer()), "dtype": string(),
    "inputs": array(_INPUT, description="the op's operands next to its counterpart's"),
    "made_by": maybe(string()), "changed_by": maybe(string()), "patterns": array(string()), "cause": _CAUSE,
    "in_region": boolean(description="the drift is inside the op's region (a loop, a branch)")},
    description="the first op whose value drifts (null: none does)"))
_DRIFT_ROW = {"order": integer(), "result": string(), "op": string(), "line": integer(), "reference_result": string(),
              "reference_op": string(), "reference_line": integer(), "source": string(), "max_abs": number(),
              "tolerance": number(), "rule": string(), "drifts": boolean(), "probe": integer()}

# Drift's facts (analysis/run/drift.py), and its table()
DRIFT_SCHEMA = record({
    "found": boolean(description="a value drifts (exit 1)"), "stage": string(), "reference": string(),
    "device": string(), "reference_device": maybe(string(description="where the reference ran, when not on device")),
    "op": _OP, "line": string(description="the user's line where the values first go wrong ('' where none)"),
    "outputs_drift": boolean(description="the program's outputs drift in the tapped runs"),
    "runs": integer(minimum=0), "probes": integer(minimum=0), "ops": integer(minimum=0),
    "compared": integer(minimum=0), "rule": string(), "summary": string(), "note": string(),
    "table": rows(_DRIFT_ROW, description="every compared value, in the stage's order (Drift.table())")})

_PREDICATE = {"predicate": string(description="the built-in predicate, as Python writes it, e.g. miscompiles()"),
              "recipe": record({"kind": string()}, closed=False, description="its kind and arguments")}

# BisectResult's facts, its table() and its diff's op counts
BISECT_SCHEMA = record({
    "found": boolean(description="the predicate holds and a 1-minimal set was found (exit 1)"), **_PREDICATE,
    "over": {"enum": ["patterns", "xla", "all"]},
    "patterns": array(string()), "xla_passes": array(string()),
    "always_needed": array(string(), description="XLA passes the compile cannot do without: never culprits"),
    "always_needed_how": string(), "runs": maybe(integer(minimum=0)), "compiles": maybe(integer(minimum=0)),
    "probe_compiles": maybe(integer(minimum=0)), "seconds": maybe(number(minimum=0)),
    "table": rows({"kind": string(), "name": string(), "changes": string()},
                  description="one row per culprit: what removing it from the set changes"),
    "diff_ops": rows({"op": string(), "before": integer(), "after": integer(), "delta": integer()},
                     description="op counts without the culprits (before) and with them (after): BisectResult.diff"),
    "summary": string()})

# ReduceResult's facts and the module
REDUCE_SCHEMA = record({
    "found": boolean(description="the predicate holds and the reduced module was found (exit 1)"), **_PREDICATE,
    "stage": string(description="the stage whose module was reduced"),
    "ops_before": maybe(integer(minimum=0)), "ops_after": maybe(integer(minimum=0)),
    "runs": maybe(integer(minimum=0)), "skipped": maybe(integer(minimum=0)), "errors": maybe(integer(minimum=0)),
    "interrupted": boolean(description="Ctrl-C stopped it: the smallest module found so far"),
    "seconds": maybe(number(minimum=0)),
    "module": maybe(string(description="the reduced module's text, without locations")),
    "output": maybe(string(description="the file -o wrote it to")), "summary": string()})


# -- the predicate of bisect and reduce -----------------------------------------------------------------------

_PREDICATE_HELP = """\
the predicate (one of; default --miscompiles): --miscompiles, --crashes [--include-xla], --slower-than S,
--op-count-above OP N, --op-count-at-most OP N, --has-op OP / --lacks-op OP [--op-stage STAGE],
--differs-from STAGE [--numbers], --drifts; each is the built-in predicate of the same name (wb.miscompiles(),
wb.has_op(...), ...; --drifts: wb.drifts_at(ex.drift()))."""


def add_predicate_options(sp, default: bool = True) -> None:
    """The options that choose the built-in predicate of ``bisect`` and ``reduce`` (``predicate_of`` reads them).
    ``default``: --miscompiles where none is given; False where none is a choice of its own (``reproducer``:
    ``predicate_given`` says whether one was)."""
    g = sp.add_argument_group("the predicate (one of them; default --miscompiles)" if default else
                              "the predicate (at most one; default: none)")
    one = g.add_mutually_exclusive_group()
    one.add_argument("--miscompiles", action="store_true", help="the last MLIR stage fails the numeric check "
                     "against the program as lowered (wb.miscompiles()" + ("; the default)" if default else ")"))
    one.add_argument("--crashes", action="store_true", help="an MLIR pass crashes, fails verification or raises "
                     "(wb.crashes(); --include-xla: XLA's compile too)")
    one.add_argument("--slower-than", type=float, metavar="SECONDS",
                     help="the MLIR pipeline's passes take longer than SECONDS in all (wb.slower_than)")
    one.add_argument("--op-count-above", nargs=2, metavar=("OP", "N"),
                     help="the last MLIR stage has more than N ops OP, e.g. stablehlo.transpose 0 (wb.op_count_above)")
    one.add_argument("--op-count-at-most", nargs=2, metavar=("OP", "N"),
                     help="the last MLIR stage has at most N ops OP (wb.op_count_at_most)")
    one.add_argument("--has-op", metavar="OP", help="the last MLIR stage (or --op-stage) holds an op OP "
                     "(wb.has_op; an XLA stage's opcodes count too)")
    one.add_argument("--lacks-op", metavar="OP", help="the last MLIR stage (or --op-stage) holds no op OP "
                     "(wb.lacks_op)")
    one.add_argument("--differs-from", metavar="STAGE", help="the last MLIR stage differs from STAGE, by text "
                     "(names and locations ignored; --numbers: by its outputs) (wb.differs_from)")
    one.add_argument("--drifts", action="store_true", help="the op where the values first drift (what "
                     "'hlo-workbench drift' finds on TARGET) still drifts (wb.drifts_at(ex.drift()))")
    g.add_argument("--include-xla", action="store_true", help="with --crashes: a failed XLA compile counts too")
    g.add_argument("--op-stage", metavar="STAGE", help="with --has-op/--lacks-op: the stage to read, e.g. "
                   "xla:optimized (default: the last MLIR stage)")
    g.add_argument("--numbers", action="store_true", help="with --differs-from: compare the outputs, not the text")


def _count(option: str, pair: list[str]) -> tuple[str, int]:
    op, n = pair
    try:
        return op, int(n)
    except ValueError:
        raise WorkbenchError(f"{option} {op} {n}: N is a whole number of ops, e.g. {option} {op} 0") from None


def check_predicate_options(ns) -> None:
    """WorkbenchError for a modifier without its predicate, before anything is explored."""
    for flag, given, goes_with in (("--include-xla", ns.include_xla, ns.crashes),
                                   ("--op-stage", ns.op_stage, ns.has_op or ns.lacks_op),
                                   ("--numbers", ns.numbers, ns.differs_from)):
        if given and not goes_with:
            wanted = {"--include-xla": "--crashes", "--op-stage": "--has-op or --lacks-op",
                      "--numbers": "--differs-from"}[flag]
            raise WorkbenchError(f"{flag} goes with {wanted}")
    for option in ("op_count_above", "op_count_at_most"):
        if getattr(ns, option):
            _count("--" + option.replace("_", "-"), getattr(ns, option))


def predicate_given(ns) -> bool:
    """Whether an option of ``add_predicate_options`` chooses the predicate (else ``predicate_of``'s default)."""
    return bool(ns.miscompiles or ns.crashes or ns.slower_than is not None or ns.op_count_above
                or ns.op_count_at_most or ns.has_op or ns.lacks_op or ns.differs_from or ns.drifts)


def predicate_of(ns, ex):
    """The built-in predicate the options of ``add_predicate_options`` choose (``ex``: for --drifts, the
    Exploration whose drift it pins). NothingToSearchError where --drifts finds no drift."""
    from ..analysis.search import bisect as b

    check_predicate_options(ns)
    if ns.crashes:
        return b.crashes(include_xla=ns.include_xla)
    if ns.slower_than is not None:
        return b.slower_than(ns.slower_than)
    if ns.op_count_above:
        return b.op_count_above(*_count("--op-count-above", ns.op_count_above))
    if ns.op_count_at_most:
        return b.op_count_at_most(*_count("--op-count-at-most", ns.op_count_at_most))
    if ns.has_op:
        return b.has_op(ns.has_op, stage=ns.op_stage)
    if ns.lacks_op:
        return b.lacks_op(ns.lacks_op, stage=ns.op_stage)
    if ns.differs_from:
        return b.differs_from(ns.differs_from, numbers=ns.numbers)
    if ns.drifts:
        from ..analysis.search.drifts import drifts_at

        d = ex.drift()
        if not d.found:
            raise NothingToSearchError(f"--drifts: {d.summary()}; no op drifts, so there is nothing to pin")
        print(f"# {d.summary()}", file=sys.stderr)
        return drifts_at(d)
    return b.miscompiles()


def _predicate_fields(pred) -> dict:
    from ..artifacts.jsonout import plain_json

    return {"predicate": repr(pred), "recipe": plain_json(pred.recipe, "recipe")}


# --drifts where nothing drifts: no op to pin, so no predicate was made
_NO_DRIFT = {"predicate": "drifts_at()", "recipe": {"kind": "drifts_at"}}


def _save(ns, ex) -> None:
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path}", file=sys.stderr)


def _table(df, rows: int | None = None) -> str:
    import pandas as pd

    shown = df if rows is None else df.head(rows)
    with pd.option_context("display.width", 250, "display.max_colwidth", 80, "display.max_rows", None):
        return shown.to_string(index=False)


# -- drift ---------------------------------------------------------------------------------------------------


def _finite(x):
    return float(x) if x is not None and math.isfinite(x) else None


def _text(x) -> str:
    return "" if x is None else f"{x:.6g}"


def _line(n: int):
    return n + 1 if n is not None and n >= 0 else None


def _op_json(o) -> dict | None:
    if o is None:
        return None
    c, ref = o.check, o.reference
    cause = None if o.cause is None else {"kind": o.cause.kind, "stage": o.cause.stage,
                                          "patterns": list(o.cause.patterns), "how": o.cause.how}
    inputs = [{"position": i.position, "here": i.here, "reference": i.reference, "differs": i.differs,
               "max_abs": _finite(i.max_abs), "tolerance": _finite(i.tolerance), "note": i.note, "source": i.source,
               "changed_by": i.changed_by} for i in o.inputs]
    return {"stage": o.stage, "result": o.result, "op": o.op, "line": o.line + 1, "text": o.text, "source": o.source,
            "reference": {"result": ref["result"], "op": ref["op"], "line": _line(ref["line"]), "text": ref["text"],
                          "source": ref["source"]},
            "max_abs": _finite(c.max_abs), "max_abs_text": _text(c.max_abs), "tolerance": _finite(c.tolerance),
            "rule": c.rule, "shape": list(c.shape), "dtype": c.dtype, "inputs": inputs, "made_by": o.made_by,
            "changed_by": o.changed_by, "patterns": list(o.patterns), "cause": cause, "in_region": o.in_region}


def drift_document(d, reference_device: str | None) -> dict:
    """The --json fields of a Drift: its facts and its table()."""
    return {"found": d.found, "stage": d.stage, "reference": d.reference, "device": d.device,
            "reference_device": reference_device, "op": _op_json(d.op), "line": d.line,
            "outputs_drift": d.outputs_drift, "runs": d.runs, "probes": d.probes, "ops": d.ops,
            "compared": d.compared, "rule": d.rule, "summary": d.summary(), "note": d.note,
            "table": records(_drift_table(d))}


def _drift_table(d):
    """``d.table()`` with its lines as whole numbers (an output of @main has none)."""
    return d.table().astype({"line": "Int64", "reference_line": "Int64"})


def print_drift(d, rows: int) -> None:
    """The human form: the summary, the op here and in the reference, the user's line, its inputs, the table."""
    print(f"# {d.summary()}")
    o = d.op
    if o is not None:
        ref = o.reference
        facts = [("op", f"{o.text}  (line {o.line + 1} of {d.stage})"),
                 ("reference", f"{ref['text']}  (line {ref['line'] + 1} of {d.reference})" if ref["text"]
                  else ref["result"]),
                 ("op's line", o.source or "(none of yours)"),
                 ("your line", f"{d.line or '(none of yours)'}  (where the values first go wrong)"),
                 ("error", f"{o.check.max_abs:.3g} over a tolerance of {o.check.tolerance:.3g} ({o.check.rule}, "
                           f"{o.check.dtype}{list(o.check.shape)})")]
        if o.cause is not None:
            facts.append(("cause", o.cause.words().removeprefix("the cause: ")))
        width = max(len(k) for k, _ in facts)
        print()
        print("\n".join(f"{k:<{width}}  {v}" for k, v in facts))
        if o.inputs:
            print("\n# The op's inputs: here / in the reference\n")
            for i in o.inputs:
                verdict = {True: f"differs ({_text(i.max_abs)})", False: "agrees", None: "not compared"}[i.differs]
                print(f"input {i.position}  {i.here}  /  {i.reference}  {verdict}")
                if i.what or i.note:
                    print(f"{'':9}{i.what or i.note}")
    import pandas as pd

    table = _drift_table(d)
    drifting = int(table["drifts"].sum()) if len(table) else 0
    print(f"\n# {len(table)} values compared, {drifting} drift\n")
    if len(table):
        shown = table.drop(columns=["order"])
        for col in ("line", "reference_line"):
            shown[col] = shown[col].map(lambda v: "" if v is None or v is pd.NA else str(v))
        for col in ("max_abs", "tolerance"):
            shown[col] = shown[col].map(lambda v: "" if v is None else f"{v:.3g}")
        print(_table(shown, rows))
        if len(table) > rows:
            print(f"... {len(table) - rows} more (--rows N shows more)")


def cmd_drift(ns) -> int:
    if ns.rows < 1:
        raise WorkbenchError(f"--rows {ns.rows}: give a number of rows of at least 1")
    ex = explore_target(ns)
    _save(ns, ex)
    d = ex.drift(stage=ns.stage, reference=ns.reference, reference_device=ns.reference_device)
    status = EXIT_FOUND if d.found else EXIT_OK
    if ns.json:
        return emit(ns, drift_document(d, ns.reference_device), status)
    print_drift(d, ns.rows)
    return status


_DRIFT_HELP = """\
Where the numbers drift (ex.drift() in Python): the first op of --stage (default: the last MLIR stage) whose
value leaves its counterpart's in --reference (default: the program as lowered, stablehlo), each pair compared
by the numeric check's rule. It prints the summary, the op here and in the reference, the user's line where the
values first go wrong, the error against the tolerance, the op's inputs, the cause (a hand edit, or the patterns
that made or removed the op) and every value compared.

exit 0: no value drifts; exit 1: a value drifts (a CI job: hlo-workbench drift TARGET --json)."""


# -- bisect --------------------------------------------------------------------------------------------------


def _nothing(ns, doc: dict, why: Exception) -> int:
    """Exit 0: the predicate does not hold where the search starts."""
    if ns.json:
        return emit(ns, {**doc, "summary": str(why)}, EXIT_OK)
    print(f"# {why}")
    return EXIT_OK


def _bisect_summary(b, pred) -> str:
    names = [*b.patterns, *(f"XLA pass {p}" for p in b.xla_passes)]
    what = {"patterns": "patterns", "xla": "XLA passes", "all": "patterns and XLA passes"}[b.over]
    return (f"{pred!r} holds with {', '.join(names)} alone of the {what} enabled, and no longer without any "
            f"one of them ({b.runs} runs, {b.compiles} XLA compiles)")


def cmd_bisect(ns) -> int:
    check_predicate_options(ns)
    ex = explore_target(ns)
    _save(ns, ex)
    empty = {"over": ns.over, "patterns": [], "xla_passes": [], "always_needed": [],
             "always_needed_how": "", "runs": None, "compiles": None, "probe_compiles": None, "seconds": None,
             "table": [], "diff_ops": []}
    try:
        pred = predicate_of(ns, ex)
    except NothingToSearchError as e:
        return _nothing(ns, {"found": False, **_NO_DRIFT, **empty}, e)
    try:
        b = ex.bisect(pred, over=ns.over)
    except NothingToSearchError as e:
        return _nothing(ns, {"found": False, **_predicate_fields(pred), **empty}, e)
    table = b.table()
    ops = b.diff.ops_delta()
    summary = _bisect_summary(b, pred)
    if ns.json:
        return emit(ns, {"found": True, **_predicate_fields(pred), "over": b.over, "patterns": list(b.patterns),
                         "xla_passes": list(b.xla_passes), "always_needed": list(b.always_needed),
                         "always_needed_how": b.always_needed_how, "runs": b.runs, "compiles": b.compiles,
                         "probe_compiles": b.probe_compiles, "seconds": b.seconds, "table": records(table),
                         "diff_ops": records(ops), "summary": summary}, EXIT_FOUND)
    print(f"# {summary}\n")
    print(_table(table))
    if b.always_needed:
        print(f"\n# XLA passes that stay enabled (never culprits): {', '.join(b.always_needed)}\n"
              f"# {b.always_needed_how}")
    if len(ops):
        where = "xla:optimized" if not b.patterns else "the last MLIR stage"
        print(f"\n# Op counts of {where}: without the culprits (before), with them (after)\n\n{_table(ops)}")
    return EXIT_FOUND


_BISECT_HELP = """\
Which patterns (or XLA passes, --over) to blame (ex.bisect(predicate) in Python): a 1-minimal set of them with
which alone enabled the predicate holds, and without any one of which it no longer does (delta debugging:
about log2(n) runs a culprit). It prints the set and what removing each one changes.

""" + _PREDICATE_HELP + """

exit 0: the predicate does not hold on TARGET as explored (nothing to bisect; it says so);
exit 1: it holds, and the set is printed; exit 2 also where it holds with none of them enabled (the cause is
elsewhere: try --over xla or all)."""


# -- reduce --------------------------------------------------------------------------------------------------


def _ops(n: int) -> str:
    return f"{n} op{'s' * (n != 1)}"


def cmd_reduce(ns) -> int:
    check_predicate_options(ns)
    if ns.output and not Path(ns.output).resolve().parent.is_dir():  # before the search, not after it
        raise WorkbenchError(f"cannot write {ns.output}: no such folder {Path(ns.output).parent}")
    ex = explore_target(ns)
    _save(ns, ex)
    empty = {"stage": ns.stage, "ops_before": None, "ops_after": None, "runs": None,
             "skipped": None, "errors": None, "interrupted": False, "seconds": None, "module": None, "output": None}
    try:
        pred = predicate_of(ns, ex)
    except NothingToSearchError as e:
        return _nothing(ns, {"found": False, **_NO_DRIFT, **empty}, e)
    try:
        r = ex.reduce(pred, stage=ns.stage)
    except NothingToSearchError as e:
        return _nothing(ns, {"found": False, **_predicate_fields(pred), **empty}, e)
    summary = (f"{pred!r} holds on a module of {_ops(r.ops_after)}, reduced from {_ops(r.ops_before)} of {r.stage!r} "
               f"({r.runs} runs, {r.skipped} candidates that did not verify skipped"
               + (f", {r.errors} where the predicate raised" if r.errors else "") + ")"
               + ("; INTERRUPTED: the smallest module found so far" if r.interrupted else ""))
    if ns.output:
        try:
            Path(ns.output).write_text(r.text if r.text.endswith("\n") else r.text + "\n", encoding="utf-8")
        except OSError as e:
            raise WorkbenchError(f"cannot write {ns.output}: {e.strerror or e}") from None
    if ns.json:
        return emit(ns, {"found": True, **_predicate_fields(pred), "stage": r.stage, "ops_before": r.ops_before,
                         "ops_after": r.ops_after, "runs": r.runs, "skipped": r.skipped, "errors": r.errors,
                         "interrupted": r.interrupted, "seconds": r.seconds, "module": r.text,
                         "output": ns.output, "summary": summary}, EXIT_FOUND)
    print(f"# {summary}")
    if ns.output:
        print(f"# the reduced module: {ns.output}")
    else:
        print(f"\n{r.text.rstrip()}")
    return EXIT_FOUND


_REDUCE_HELP = """\
The smallest module on which the predicate still holds (ex.reduce(predicate) in Python): --stage's module
(default: stablehlo, the program as lowered) shrunk by deleting and cutting ops (outputs dropped, ops replaced
by new arguments or zeros, dead code removed), each candidate verified and explored as text through the same
pipeline, until no single such move keeps the predicate holding. A candidate runs on seeded random inputs.

""" + _PREDICATE_HELP + """

exit 0: the predicate does not hold on --stage's module explored as text (nothing to reduce; it says so);
exit 1: it holds, and the reduced module is printed (or written to -o)."""


# -- the commands ----------------------------------------------------------------------------------------------


def add_commands(sub) -> None:
    """Add drift, bisect and reduce to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "drift", "where the numbers drift: the first op whose value leaves the program as "
                        "lowered, and the user's line", cmd_drift, description=_DRIFT_HELP, result=DRIFT_SCHEMA,
                        explores=True, default_target=None)
    sp.add_argument("--stage", metavar="S", help="the stage to search (default: the last MLIR stage)")
    sp.add_argument("--reference", metavar="R", help="the stage to compare with (default: stablehlo, as lowered)")
    sp.add_argument("--reference-device", metavar="D", help="run the reference there instead (e.g. cpu: where "
                    "do a TPU's numbers leave the CPU's?)")
    sp.add_argument("--rows", type=int, default=30, metavar="N", help="rows of the table of compared values to "
                    "print (default 30)")

    sp = command_parser(sub, "bisect", "which patterns or XLA passes to blame: a 1-minimal set for which a "
                        "predicate holds", cmd_bisect, description=_BISECT_HELP, result=BISECT_SCHEMA,
                        explores=True, default_target=None)
    add_predicate_options(sp)
    sp.add_argument("--over", choices=("patterns", "xla", "all"), default="patterns",
                    help="what to bisect: the enabled patterns (default), the XLA passes the compile ran, or both")

    sp = command_parser(sub, "reduce", "the smallest module on which a predicate still holds", cmd_reduce,
                        description=_REDUCE_HELP, result=REDUCE_SCHEMA, explores=True, default_target=None)
    add_predicate_options(sp)
    sp.add_argument("--stage", default="stablehlo", metavar="S", help="the MLIR stage whose module to reduce "
                    "(default: stablehlo, the program as lowered)")
    sp.add_argument("-o", "--output", metavar="OUT.mlir", help="write the reduced module there instead of "
                    "printing it")
