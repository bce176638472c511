"""The command line's regression gates:

    hlo-workbench diff a.hlox b.hlox [--html OUT]   # two saved explorations side by side
    hlo-workbench check GOLDEN.hlox [limits]        # the golden's program explored now, judged by limits

``check`` exits 0 when nothing regressed, 1 when a limit broke (a short table says which), 2 when it
could not check (a missing or corrupt file, a limit that needs what the golden does not hold).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import WorkbenchError
from .cli_common import command_parser, emit, is_saved_exploration, records, say
from .cli_schema import any_value, array, boolean, maybe, number, record, rows, string

__all__ = ["CHECK_SCHEMA", "COMPARISON_FIELDS", "GATE_COMMANDS", "add_gate_commands", "cmd_diff_explorations",
           "is_saved_exploration"]

GATE_COMMANDS = ("check",)

_CHECK_HELP = """\
Re-explore the program a golden .hlox holds with the jax, jaxlib and enzyme-ad installed now, and compare:
the stage lists aligned by pass, the first stage that differs, the final modules' ops, flops, bytes and
memory, and with the flags below their numbers and compile time. The golden needs its input module (every
.hlox has it) and, for --numbers, its arguments and a run's outputs: write it with
ex.save(path, arrays=True) after ex.run(), or wb.testing.write_golden(ex, path), or --update here.

Growth limits are percents ("5%") or fractions ("0.05"); "none" turns one off. By default each is 0%:
the check passes when nothing grew.

It exits 0 when nothing regressed (or --update wrote the golden), 1 when a limit broke (the table says
which), 2 when the check could not be made (a missing or corrupt golden, a limit it holds nothing for)."""

_VERSIONS = array(record({"package": string(), "a": maybe(string()), "b": maybe(string())}),
                  description="the versions that differ between the two sides (workbench, jax, jaxlib, ...)")
_FIRST = maybe(record({"stage": string(), "side": {"enum": ["both", "a", "b"]}, "words": string()},
                      description="the first aligned stage whose modules differ beyond renaming (null: none)"))
# the facts of compare_explorations (analysis.diff.explorations.Comparison): diff of two .hlox files
COMPARISON_FIELDS = {
    "identical": boolean(description="explorations: the same modules throughout (Comparison.identical)"),
    "labels": array(string(), minItems=2, maxItems=2),
    "first_difference": _FIRST,
    "stages": array(record({"stage": string(), "side": {"enum": ["both", "a", "b"]}, "same": boolean()},
                           closed=False, description="ops_a, ops_b, ops_delta and the same for flops, bytes, xla_flops, "
                           "xla_bytes, memory: each side's value and b - a (null where a side has none)"),
                    description="explorations: the aligned stages (Comparison.rows())"),
    "versions": _VERSIONS,
    "settings": array(string(), description="the settings that differ (pipeline, toggles, device)"),
    "same_input": boolean(description="the input modules are the same"),
    "final": {"type": "object", "additionalProperties": array(maybe(number()), minItems=2, maxItems=2),
              "description": "the final modules' measures (ops, xla_ops, flops, bytes, memory): [a, b]"},
    "kernels_note": string(description="why the TPU kernels were not compared ('' where they were or none exist)"),
    "run_median_s": maybe(array(number(), minItems=2, maxItems=2, description="--run: each side's median time")),
    "summary": array(string(), description="the comparison in words, a line each (what the text prints)")}
CHECK_SCHEMA = record(
    {"ok": boolean(description="no limit broke"), "golden": string(),
     "rows": rows({"what": string(), "golden": any_value(), "now": any_value(), "change": string(),
                   "limit": string(), "ok": boolean(), "note": string()},
                  description="one row per limit (Verdict.table())"),
     "first_difference": maybe(string(description="the first stage that differs, in words (null: none)")),
     "versions": _VERSIONS, "notes": array(string()), "html": maybe(string()),
     "updated": maybe(string(description="--update: the golden written"))})


def _comparison_fields(c, html) -> dict:
    """A Comparison's facts as diff's --json document's fields."""
    first = c.first_difference
    return {"identical": c.identical, "labels": list(c.labels),
            "first_difference": None if first is None else {"stage": first.name, "side": first.side,
                                                            "words": first.words(c.labels)},
            "stages": c.rows(), "versions": _versions(c), "settings": list(c.settings), "same_input": c.same_input,
            "final": {k: list(v) for k, v in c.final.items()}, "kernels_note": c.kernels_note,
            "run_median_s": None if c.times is None else [t.median for t in c.times], "summary": c.lines(),
            "html": None if html is None else str(html)}


def _versions(c) -> list[dict]:
    return [{"package": k, "a": va, "b": vb} for k, va, vb in c.versions]


def _rows(comparison) -> list[str]:
    """The aligned stage table, compactly: only the rows whose modules differ or that one side lacks."""
    a, b = comparison.labels
    out = []
    for p, row in zip(comparison.pairs, comparison.rows()):
        if p.same and p.side == "both":
            continue
        ops_a, ops_b = row["ops_a"], row["ops_b"]
        ops = f"ops {ops_a} → {ops_b}" if ops_a is not None and ops_b is not None else ""
        where = "" if p.side == "both" else f"only in {a if p.side == 'a' else b}"
        out.append(f"  {p.name:<40} {'same' if p.same else 'differs':<8} {where} {ops}".rstrip())
    return out


def cmd_diff_explorations(ns) -> int:
    """``hlo-workbench diff a.hlox b.hlox``: print the comparison, write it as a page with --html; exit 0 when
    the two have the same modules throughout, 1 when they differ."""
    from ..exploration import compare_explorations, load

    a, b = load(ns.before), load(ns.after)
    labels = (Path(ns.before).name, Path(ns.after).name)
    if labels[0] == labels[1]:
        labels = (ns.before, ns.after)
    c = compare_explorations(a, b, labels=labels, run=ns.run)
    status = 0 if c.identical else 1
    path = None
    if ns.html:
        from ..artifacts.comparison_page import write_comparison_page

        path = write_comparison_page(c, ns.html)
    wrote = f"wrote the comparison of {labels[0]} -> {labels[1]} to {path} (one file, opens offline)"
    if ns.json:
        if path is not None:
            say(ns, wrote)
        return emit(ns, {"kind": "explorations", "before": ns.before, "after": ns.after, "same": c.identical,
                         **_comparison_fields(c, path)}, status)
    print(c)
    rows = _rows(c)
    if rows:
        print("stages that differ or that one side lacks:")
        print("\n".join(rows))
    if path is not None:
        print(wrote)
    return status


def _limits(ns) -> dict:
    out = {k: getattr(ns, k) for k in ("max_ops_growth", "max_flops_growth", "max_bytes_growth",
                                         "max_memory_growth", "max_compile_time_growth", "max_bundles_growth")
           if getattr(ns, k) is not None}
    out.update(same_final_module=ns.same_final_module, numbers=ns.numbers, same_program=ns.same_program)
    return out


def _update(ns) -> int:
    """``check --update``: write the golden anew from the target (or from the golden's own program)."""
    from ..exploration import explore, load
    from ..exploration.golden import reexplored, write_golden

    golden = Path(ns.golden)
    if ns.target:
        fn, args, _ = ns.load_target(ns.target, ns.args)
        ex = explore(fn, *args, pipeline=ns.pipeline or "all", disable=ns.disable or (), enable=ns.enable or (),
                     xla_disable=ns.xla_disable or (), device=ns.device)
    elif golden.exists():
        ex = reexplored(load(golden), device=ns.device, pipeline=ns.pipeline, disable=ns.disable or (),
                        enable=ns.enable or (), xla_disable=ns.xla_disable or ())
    else:
        raise WorkbenchError(f"{golden} does not exist: give --target PATH.py:FUNC to write it")
    kernels = ns.max_bundles_growth is not None
    path = write_golden(ex, golden, compile_time=ns.max_compile_time_growth is not None, kernels=kernels)
    if ns.json:
        return emit(ns, {"ok": True, "golden": str(path), "rows": [], "first_difference": None, "versions": [],
                         "notes": [], "html": None, "updated": str(path)}, 0)
    print(f"wrote the golden {path} ({len(ex.stages)} stages, the arguments and a run's outputs"
          + (", its compile time" if ns.max_compile_time_growth is not None else "")
          + (", its kernel table" if kernels and ex.backend().available else "") + ")")
    return 0


def cmd_check(ns) -> int:
    from ..exploration.golden import check_golden

    if ns.update:
        return _update(ns)
    fn, args = None, ()
    if ns.target:
        fn, args, _ = ns.load_target(ns.target, ns.args)
    verdict = check_golden(ns.golden, fn, args, device=ns.device, html=ns.html, pipeline=ns.pipeline,
                           disable=ns.disable or (), enable=ns.enable or (), xla_disable=ns.xla_disable or (),
                           **_limits(ns))
    status = 0 if verdict.ok else 1
    if ns.json:
        c = verdict.comparison
        first = c.first_difference
        return emit(ns, {"ok": verdict.ok, "golden": ns.golden, "rows": records(verdict.table()),
                         "first_difference": None if first is None else first.words(c.labels),
                         "versions": _versions(c), "notes": list(verdict.notes), "html": verdict.html or None,
                         "updated": None}, status)
    print(verdict)
    return status


def add_gate_commands(sub, load_target) -> None:
    """Add ``check`` to the subparsers ``sub`` of the hlo-workbench parser (``diff`` of two .hlox files is
    the file command ``diff``'s, which hands them to ``cmd_diff_explorations``); ``load_target`` reads a
    ``--target`` as the other commands do (``cli.load_target``)."""
    sp = command_parser(sub, "check", "re-explore a golden .hlox with the versions installed now and fail on a "
                        "regression (exit 0 none, 1 one)", cmd_check, description=_CHECK_HELP, result=CHECK_SCHEMA)
    sp.add_argument("golden", metavar="GOLDEN.hlox", help="the golden exploration (ex.save(path, arrays=True))")
    sp.add_argument("--target", metavar="PATH.py:FUNC", help="trace this function anew instead of starting from "
                    "the module the golden saved (its args() or --args give the arguments)")
    sp.add_argument("--args", metavar="SHAPES", help="with --target: argument shapes, e.g. 'f32[64,64]'")
    for flag, what in (("--max-ops-growth", "the final MLIR module's ops and xla:optimized's instructions"),
                       ("--max-flops-growth", "xla:optimized's flops (XLA's analysis, loop bodies x trip count)"),
                       ("--max-bytes-growth", "xla:optimized's bytes accessed (XLA's analysis, loop bodies x trip count)"),
                       ("--max-memory-growth", "XLA's memory analysis (arguments + outputs + temporaries)")):
        sp.add_argument(flag, metavar="PCT", help=f"how much {what} may grow (default 0%%; 'none': no limit)")
    sp.add_argument("--max-compile-time-growth", metavar="PCT", help="how much the compile time over a bare "
                    "compile's, both measured in this run, may grow against the golden's (saved with "
                    "compile_time=True, or --update with this flag)")
    sp.add_argument("--max-bundles-growth", metavar="PCT", help="how much the TPU's bundles (issued per call, all "
                    "fusions; each kernel's bundles where a loop's trip count is unknown) may grow against the "
                    "golden's kernel table (saved after ex.backend(), or --update with this flag on the TPU); where "
                    "either side has no kernels the limit fails as not checked")
    sp.add_argument("--same-final-module", action="store_true", help="the final MLIR module and xla:optimized must "
                    "be the golden's, beyond renaming")
    sp.add_argument("--numbers", action="store_true", help="check the outputs against the golden's (noise-aware: "
                    "the numeric check's rule)")
    sp.add_argument("--same-program", action="store_true", help="with --target: the function is the golden's "
                    "program under another name or argument signature (by default a different name, argument tree, "
                    "shape or dtype fails the check)")
    sp.add_argument("-p", "--pipeline", help="check this pipeline instead of the golden's (a candidate setting)")
    sp.add_argument("--disable", action="append", metavar="P1,P2", help="also switch these patterns off")
    sp.add_argument("--enable", action="append", metavar="P1,P2", help="also switch these patterns on")
    sp.add_argument("--xla-disable", action="append", metavar="PASS", help="also switch these XLA passes off")
    sp.add_argument("-d", "--device", help="the device to explore for (default: the golden's)")
    sp.add_argument("--html", metavar="OUT.html", help="also write the comparison as one offline HTML page")
    sp.add_argument("--update", action="store_true", help="write (or refresh) the golden instead of checking it")
    sp.set_defaults(load_target=load_target)
