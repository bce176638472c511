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
import importlib
import importlib.util
import os
import re
import sys
from importlib import resources
from pathlib import Path

from ..ir.dtypes import element_dtype
from .cli_files import FILE_COMMANDS, add_file_commands
from .cli_gates import GATE_COMMANDS, add_gate_commands
from .cli_memory import MEMORY_COMMANDS, add_memory_command
from .text import stage_table

EXAMPLES = "workbench.examples"  # the built-in programs live inside the package, so a wheel has them
# the --args spellings offered (the jaxpr's, and HLO's pred); ir/dtypes.py says which type each one is
_DTYPES = ("f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "u32", "pred", "bool")


def parse_args_spec(spec: str) -> tuple:
    """``"f32[64,64],f32[64,32]"`` -> two random arrays of those shapes (seeded, reproducible)."""
    import jax
    import jax.numpy as jnp

    items = re.findall(r"\s*([a-z0-9]+)\[([0-9,\s]*)\]\s*(?:,|$)", spec)
    rebuilt = ",".join(f"{d}[{s}]" for d, s in items).replace(" ", "")
    if rebuilt != spec.replace(" ", ""):
        raise SystemExit(f"--args {spec!r}: expected comma-separated DTYPE[DIMS], e.g. 'f32[64,64],i32[8]'")
    from ..errors import ArrayTooLargeError
    from ..pipeline.array_limit import Planned, refuse_large

    for dtype, _ in items:
        if dtype not in _DTYPES:
            raise SystemExit(f"--args: unknown dtype {dtype!r}; use one of {', '.join(_DTYPES)}")
    shapes = [tuple(int(d) for d in dims.split(",") if d.strip()) for _, dims in items]
    try:  # sized before any is made: a typo'd extra zero must not take the machine's memory
        refuse_large([Planned(f"array {k}", shape, element_dtype(d).name) for k, ((d, _), shape)
                      in enumerate(zip(items, shapes))], "--args asks for random arrays")
    except ArrayTooLargeError as e:
        raise SystemExit(str(e)) from None
    key = jax.random.PRNGKey(0)
    out = []
    for (dtype, _), shape in zip(items, shapes):
        key, sub = jax.random.split(key)
        dt = jnp.dtype(element_dtype(dtype))
        if jnp.issubdtype(dt, jnp.floating):
            out.append(jax.random.normal(sub, shape, dt))
        elif dt == jnp.bool_:
            out.append(jax.random.bernoulli(sub, 0.5, shape))
        else:
            out.append(jax.random.randint(sub, shape, 0, 8).astype(dt))
    return tuple(out)


def builtin_examples() -> list[str]:
    """The names of the built-in examples: the modules of ``workbench.examples``."""
    return sorted(f.name[:-3] for f in resources.files(EXAMPLES).iterdir()
                  if f.name.endswith(".py") and not f.name.startswith("_"))


def load_target(target: str | None, args_spec: str | None):
    """``PATH.py:FUNC`` (or an example name) -> (fn, args, title)."""
    if target is None:
        target = "attention"
    if ":" not in target and not target.endswith(".py"):
        if target not in builtin_examples():
            raise SystemExit(f"no such built-in example: {target} (built-in examples: {', '.join(builtin_examples())}"
                             "; or give PATH.py:FUNC)")
        mod, func, where, stem = importlib.import_module(f"{EXAMPLES}.{target}"), "fn", target, target
    else:
        path_s, _, func = target.partition(":")
        path, func = Path(path_s), func or "fn"
        if not path.exists():
            raise SystemExit(f"no such file: {path} (built-in examples: {', '.join(builtin_examples())})")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(str(path.parent))
        where, stem = str(path), path.stem
    if not callable(getattr(mod, func, None)):
        names = [n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")]
        raise SystemExit(f"{where} has no function {func!r}; it defines: {', '.join(names)}")
    if args_spec:
        args = parse_args_spec(args_spec)
    elif callable(getattr(mod, "args", None)):
        args = mod.args()
    else:
        raise SystemExit(f"give --args for {where}:{func} (e.g. --args 'f32[64,64],f32[64,32]')")
    return getattr(mod, func), args, f"{stem}:{func}"


def _explore(ns):
    from ..exploration import explore

    fn, args, _ = load_target(ns.target, ns.args)
    opts = {}
    if ns.no_nan:
        opts["no_nan"] = True
    return explore(fn, *args, pipeline=ns.pipeline, disable=ns.disable or (), enable=ns.enable or (),
                      device=ns.device, xla_disable=ns.xla_disable or (), **opts)


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlo-workbench", description="Look inside array compilers, stage by stage.",
                                epilog="hlo-workbench COMMAND --help says what each command takes.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", help="what to do (default: report)")

    def explore_args(sp):
        sp.add_argument("target", nargs="?", help="PATH.py:FUNC, or a built-in example name (default: attention)")
        sp.add_argument("--args", metavar="SHAPES", help="argument shapes, e.g. 'f32[64,64],f32[64,32]', as "
                        "random arrays (dtypes: " + ", ".join(_DTYPES) + "; default: the module's args())")
        sp.add_argument("-p", "--pipeline", default="all", help="a preset (hlo-workbench pipelines lists them) "
                        "or a pass pipeline string; default: all")
        sp.add_argument("--disable", action="append", metavar="P1,P2", help="Enzyme-JaX patterns to switch off "
                        "(comma-separated, repeatable; hlo-workbench patterns lists them)")
        sp.add_argument("--enable", action="append", metavar="P1,P2",
                        help="Enzyme-JaX patterns to switch on (comma-separated, repeatable)")
        sp.add_argument("--xla-disable", action="append", metavar="PASS",
                        help="XLA HLO passes to switch off (comma-separated, repeatable)")
        sp.add_argument("-d", "--device", default=None, help="the device to lower, compile and run for "
                        "(cpu:0, tpu:0, gpu:0, ...); default: where jax.jit computes (JAX's default device)")
        sp.add_argument("--no-nan", action="store_true", help="assume no NaNs (Reactant's no_nan)")
        sp.add_argument("--save", metavar="FILE.hlox", help="also save the exploration (every stage, the "
                        "settings; 'hlo-workbench open FILE.hlox' and wb.load read it)")
        sp.add_argument("--full-errors", action="store_true", help="a failed pass's whole diagnostic: every "
                        "frame of each error, and what the pass runner printed (default: the short form)")

    for name, fn, help_ in (("stages", cmd_stages, "print the stage table"),
                            ("report", cmd_report, "stage table and final module (the default command)"),
                            ("show", cmd_show, "print one stage's text"),
                            ("profile", cmd_profile, "measured run time per HLO instruction and compile time per "
                             "pass (JAX's profiler)")):
        sp = sub.add_parser(name, help=help_)
        explore_args(sp)
        sp.set_defaults(func=fn)
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
    add_memory_command(sub, explore_args, load_target)
    return p


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"hlo-workbench: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    import warnings

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    warnings.formatwarning = _format_warning
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in {"stages", "report", "show", "profile", "patterns", "pipelines", *FILE_COMMANDS, *GATE_COMMANDS, *MEMORY_COMMANDS, "-h", "--help"}:
        argv = ["report"] + argv
    ns = parser.parse_args(argv)
    from ..errors import WorkbenchError

    try:
        return ns.func(ns)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except WorkbenchError as e:
        print(f"hlo-workbench: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
