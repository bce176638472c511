"""The command line's regression gates:

    hlo-workbench diff a.hlox b.hlox [--html OUT]   # two saved explorations side by side
    hlo-workbench check GOLDEN.hlox [limits]        # the golden's program explored now, judged by limits

``check`` exits 0 when nothing regressed, 1 when a limit broke (a short table says which), 2 when it
could not check (a missing or corrupt file, a limit that needs what the golden does not hold).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli_common import is_saved_exploration

__all__ = ["GATE_COMMANDS", "add_gate_commands", "cmd_diff_explorations", "is_saved_exploration"]

GATE_COMMANDS = ("check",)

_CHECK_HELP = """\
Re-explore the program a golden .hlox holds with the jax, jaxlib and enzyme-ad installed now, and compare:
the stage lists aligned by pass, the first stage that differs, the final modules' ops, flops, bytes and
memory, and with the flags below their numbers and compile time. The golden needs its input module (every
.hlox has it) and, for --numbers, its arguments and a run's outputs: write it with
ex.save(path, arrays=True) after ex.run(), or wb.testing.write_golden(ex, path), or --update here.

Growth limits are percents ("5%") or fractions ("0.05"); "none" turns one off. By default each is 0%:
the check passes when nothing grew.

exit status: 0 nothing regressed, 1 a limit broke, 2 the check could not be made."""


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
    print(c)
    rows = _rows(c)
    if rows:
        print("stages that differ or that one side lacks:")
        print("\n".join(rows))
    if ns.html:
        from ..artifacts.comparison_page import write_comparison_page

        path = write_comparison_page(c, ns.html)
        print(f"wrote the comparison of {labels[0]} -> {labels[1]} to {path} (one file, opens offline)")
    return 0 if c.identical else 1


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
        print(f"hlo-workbench: {golden} does not exist: give --target PATH.py:FUNC to write it", file=sys.stderr)
        return 2
    kernels = ns.max_bundles_growth is not None
    path = write_golden(ex, golden, compile_time=ns.max_compile_time_growth is not None, kernels=kernels)
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
    print(verdict)
    return 0 if verdict.ok else 1


def add_gate_commands(sub, load_target) -> None:
    """Add ``check`` to the subparsers ``sub`` of the hlo-workbench parser (``diff`` of two .hlox files is
    the file command ``diff``'s, which hands them to ``cmd_diff_explorations``); ``load_target`` reads a
    ``--target`` as the other commands do (``cli.load_target``)."""
    sp = sub.add_parser("check", help="re-explore a golden .hlox with the versions installed now and fail on a "
                        "regression (exit 0 none, 1 one)", description=_CHECK_HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
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
    sp.set_defaults(func=cmd_check, load_target=load_target)
