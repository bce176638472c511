"""``hlo-workbench backend TARGET``: the TPU's kernels of a program, in a terminal.

    hlo-workbench backend step.py:fn -d tpu:0 --save step.hlox   # on a TPU host: compiles for the LLO (seconds)
    hlo-workbench backend step.hlox                               # anywhere: the kernel table the file kept
    hlo-workbench backend step.hlox --dump llo/ --fusion fusion.3 # one kernel, read from a dump libtpu wrote
    hlo-workbench backend step.hlox --json                        # one JSON document on stdout

It prints ``Exploration.backend()`` (``analysis/backend``): one row per fusion, the most issued bundles first, as
``Kernels.table()`` sorts them, or with ``--fusion`` that fusion's row and its kernel (``Kernel``: occupancy per
unit, DMAs, the user's lines, its LLO passes, its first bundles). Where there are no kernels (a CPU or GPU
exploration, a TPU file without a kept table and no ``--dump``) it exits 2 with the API's reason and how to get them.
"""
from __future__ import annotations

import sys

from ..analysis.backend import KERNEL_COLUMNS, UNITS, NoLloError, SavedKernels
from ..backends import backend_of
from ..errors import WorkbenchError
from ..exploration.backend_change import explored_device
from .cli_common import command_parser, emit, explore_target, records
from .cli_schema import any_value, array, boolean, integer, maybe, number, record, string

__all__ = ["BACKEND_SCHEMA", "add_commands", "cmd_backend"]

_HELP = """\
The TPU's kernels of TARGET, read from libtpu's LLO (ex.backend() in Python): one row per fusion of the
optimized module with its bundles, the bundles it issues per call (a loop body once per trip), each unit's slot
occupancy (MXU, XLU, VALU, VPOP, EUP, VLOAD, VSTORE, SALU), its DMAs and HBM bytes, libtpu's estimate and the
measured time (where a profile was taken), the verdict (MXU-, issue-, DMA- or latency-bound) and the user's line
it came from; the most issued bundles first. --fusion NAME: that fusion's row and its kernel.

On a TPU host the first call compiles TARGET again in a child whose libtpu dumps its LLO (seconds). Elsewhere a
.hlox saved after the kernels were read (--save here, on the TPU) keeps the table, and --dump FOLDER reads a dump
libtpu wrote (LIBTPU_INIT_ARGS="--xla_jf_dump_to=DIR --xla_jf_dump_llo_text=true"). It exits 0 when it printed
the kernels, 2 where there are none (a CPU or GPU target: the one-line reason says how to get them)."""

_ROW = record({c: maybe(string() if c in ("fusion", "kernel", "opcode", "bound", "line") else
                        integer() if c in ("bundles", "issued", "dmas", "hbm_bytes", "estimated_cycles") else number())
               for c in KERNEL_COLUMNS}, description="a row of Kernels.table() (units: share of their slots used)")
_KERNEL = record({
    "name": string(description="libtpu's kernel (equal fusions share one)"),
    "fusions": array(string(), description="the entry instructions that run it"),
    "bundles": integer(), "issued": maybe(integer()),
    "occupancy": record({}, description="unit -> share of its slots used over the bundles issued", closed=False),
    "static_occupancy": record({}, description="unit -> share of its slots used, each bundle once", closed=False),
    "dmas": record({}, description="direction -> DMAs", closed=False),
    "lines": array(string(), description="the user's lines its fusions came from, most instructions first"),
    "passes": array(record({"stage": string(), "changed": boolean()}),
                    description="its LLO after each pass, in libtpu's order (ex[stage] reads one)"),
    "bundle_rows": array(record({"address": any_value(), "loops": any_value(), "runs": any_value()}, closed=False),
                         description="its first bundles (--rows): loops, runs per call, slots per unit, ops"),
    "more_bundles": integer(minimum=0)})
BACKEND_SCHEMA = record(
    {"available": boolean(), "device_kind": string(description="the chip, e.g. 'TPU v5 lite' ('' unknown)"),
     "source": string(description="where the kernels were read: a compile, a dump folder, a saved table")},
    {"fusions": integer(minimum=0), "kernels": integer(minimum=0),
     "rows": array(_ROW, description="the kernel table, as Kernels.table() sorts it (the top --rows rows)"),
     "more_rows": integer(minimum=0),
     "fusion": _ROW, "kernel": maybe(_KERNEL),
     "note": string(description="why the kernel's LLO is not there (a saved table keeps none); '' when it is")})


def _no_kernels(ex, why: str) -> WorkbenchError:
    """The reason there are no kernels, and what gives them on the command line."""
    device = explored_device(ex)
    if backend_of(device).llo_flags:
        how = "to read them here, give --dump FOLDER (a dump libtpu wrote for this program), or run on a host with the chip"
    else:
        how = ("to get them, on a TPU host: hlo-workbench backend TARGET -d tpu:0 (--save FILE.hlox keeps the table "
               "for any machine), or give a .hlox saved there after its kernels were read")
    return WorkbenchError(f"no TPU kernels: {why.rstrip('.')}; {how}")


def _source(k, ns) -> str:
    if isinstance(k, SavedKernels):
        return f"the table {k.source} kept"
    if ns.dump:
        return f"the dump in {ns.dump}"
    return f"a compile of its LLO ({k.seconds:.1f} s)"


def _pct(v) -> str:
    return "" if v is None or v != v else f"{v:.0%}"


def _us(v) -> str:
    return "" if v is None or v != v else f"{v:,.2f}"


def _count(v) -> str:
    return "" if v is None or v != v else f"{int(v):,}"


def _left(values):
    """Strings padded to one width, so that a right-aligning table shows them aligned on the left."""
    values = ["" if v is None else str(v) for v in values]
    width = max(map(len, values), default=0)
    return [v.ljust(width) for v in values]


def _shown(df):
    """The table as printed: occupancies in percent, times in us, counts with commas; the kernel column only
    where libtpu compiled equal fusions once."""
    import pandas as pd

    cols = [c for c in KERNEL_COLUMNS if c not in ("opcode", "issue_us", "estimated_cycles")]
    if (df["kernel"] == df["fusion"]).all():
        cols.remove("kernel")
    shown = df[cols].copy()
    for c in cols:
        if c in UNITS:
            shown[c] = shown[c].map(_pct)
        elif c in ("estimated_us", "measured_us"):
            shown[c] = shown[c].map(_us)
        elif c in ("bundles", "issued", "dmas", "hbm_bytes"):
            shown[c] = shown[c].map(_count)
        elif c in ("fusion", "kernel", "bound", "line"):
            shown[c] = _left(shown[c])
    with pd.option_context("display.width", 300, "display.max_colwidth", 80, "display.max_rows", None):
        return shown.to_string(index=False)


def _summary(k, table, ns) -> str:
    kernels = table["kernel"].nunique()
    issued = table["issued"]
    total = f"{int(issued.sum()):,} bundles issued per call" + (" (where known)" if issued.isna().any() else "")
    bounds = table["bound"].map(lambda b: b.split(" (")[0]).value_counts()
    verdicts = ", ".join(f"{n} {b}" for b, n in bounds.items())
    on = f" on a {k.device_kind}" if k.device_kind else ""
    return (f"# {len(table)} fusions in {kernels} kernels{on}, from {_source(k, ns)}: {total}; {verdicts}")


def _kernel_detail(k, name: str, rows: int) -> tuple[dict | None, str]:
    """The fusion's kernel as JSON (None where the LLO is not there) and why not ("")."""
    try:
        kernel = k.kernel(name)
    except NoLloError as e:
        return None, str(e)
    table = kernel.bundle_table(limit=rows)
    detail = {"name": kernel.name, "fusions": kernel.fusions, "bundles": kernel.bundles, "issued": kernel.issued,
              "occupancy": kernel.occupancy, "static_occupancy": kernel.static_occupancy, "dmas": kernel.dmas,
              "lines": kernel.lines(), "passes": [{"stage": s, "changed": c} for s, c in kernel.passes()],
              "bundle_rows": records(table), "more_bundles": max(kernel.bundles - len(table), 0)}
    return detail, ""


def _print_fusion(row: dict, detail: dict | None, note: str, k, ns, rows: int) -> None:
    import pandas as pd

    on = f" on a {k.device_kind}" if k.device_kind else ""
    print(f"# {row['fusion']}{on} ({_source(k, ns)}): kernel {row['kernel']}, {_count(row['bundles'])} bundles, "
          f"{_count(row['issued']) or 'unknown'} issued per call; {row['bound']}")
    print(f"# line: {row['line'] or '(none of yours)'}\n")
    print(_shown(pd.DataFrame([row], columns=list(KERNEL_COLUMNS))))
    if detail is None:
        print(f"\n({note}; here: --dump FOLDER)", file=sys.stderr)
        return
    units = list(detail["occupancy"])
    occ = pd.DataFrame({"unit": _left(units), "issued": [_pct(detail["occupancy"][u]) for u in units],
                        "each bundle once": [_pct(detail["static_occupancy"].get(u)) for u in units],
                        "what": _left(UNITS.get(u, "") for u in units)})
    print(f"\n# Slot occupancy per unit\n\n{occ.to_string(index=False)}")
    dmas = ", ".join(f"{d} {n}" for d, n in detail["dmas"].items()) or "none"
    print(f"\n# DMAs: {dmas}")
    if len(detail["fusions"]) > 1:
        print(f"# the same kernel runs for {len(detail['fusions'])} fusions: {', '.join(detail['fusions'])}")
    if detail["lines"]:
        print(f"# your lines: {', '.join(detail['lines'])}")
    changed = [p["stage"] for p in detail["passes"] if p["changed"]]
    print(f"\n# LLO passes: {len(changed)} of {len(detail['passes'])} changed it (ex[stage] reads one)")
    for stage in changed:
        print(f"  {stage}")
    bundles = pd.DataFrame(detail["bundle_rows"])
    for c in ("ops", "calls"):
        if c in bundles:
            bundles[c] = _left(bundles[c])
    print(f"\n# The first {len(bundles)} of {detail['bundles']:,} bundles\n")
    with pd.option_context("display.width", 300, "display.max_colwidth", 100, "display.max_rows", None):
        print(bundles.to_string(index=False, na_rep=""))
    if detail["more_bundles"]:
        print(f"... {detail['more_bundles']:,} more bundles (--rows N shows more)")


def cmd_backend(ns) -> int:
    if ns.rows is not None and ns.rows < 1:
        raise WorkbenchError(f"--rows {ns.rows}: give a number of rows of at least 1")
    ex = explore_target(ns)
    k = ex.backend(dump=ns.dump, timeout=ns.timeout)
    if not k.available:
        raise _no_kernels(ex, k.why)
    if getattr(ns, "save", None):
        path = ex.save(ns.save)  # after ex.backend(): the file keeps the kernel table
        print(f"hlo-workbench: saved the exploration with its kernel table to {path} (hlo-workbench backend {path})",
              file=sys.stderr)
    head = {"available": True, "device_kind": k.device_kind or "", "source": _source(k, ns)}
    if ns.fusion is not None:
        import pandas as pd

        row = k.row(ns.fusion)  # UnknownNameError, with the closest names, for one that is not there
        detail, note = _kernel_detail(k, row["fusion"], ns.rows or 20)
        if ns.json:
            one = records(pd.DataFrame([row], columns=list(KERNEL_COLUMNS)))[0]
            return emit(ns, {**head, "fusion": one, "kernel": detail, "note": note}, 0)
        _print_fusion(row, detail, note, k, ns, ns.rows or 20)
        return 0
    table = k.table()
    rows = ns.rows if ns.rows is not None else (len(table) if ns.json else 20)
    if ns.json:
        return emit(ns, {**head, "fusions": len(table), "kernels": int(table["kernel"].nunique()),
                         "rows": records(table.head(rows)), "more_rows": max(len(table) - rows, 0)}, 0)
    print(_summary(k, table, ns) + "\n")
    print(_shown(table.head(rows)))
    if len(table) > rows:
        print(f"... {len(table) - rows} more fusions (--rows N shows more)")
    return 0


def add_commands(sub) -> None:
    """Add backend to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "backend", "the TPU's kernels: per fusion its bundles, slot occupancy, DMAs and verdict",
                        cmd_backend, description=_HELP, result=BACKEND_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--fusion", metavar="NAME", help="one fusion's row and its kernel: occupancy per unit, DMAs, "
                    "your lines, its LLO passes, its first bundles (e.g. fusion.3; the table lists them)")
    sp.add_argument("--dump", metavar="FOLDER", help="read the LLO libtpu dumped for this program into FOLDER "
                    "(--xla_jf_dump_to) instead of compiling for it; any machine reads one")
    sp.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="stop the LLO compile after this long (default: the exploration's timeout, else 600)")
    sp.add_argument("--rows", type=int, default=None, metavar="N", help="rows of the table (default 20; with --json "
                    "every row), or with --fusion bundles of its kernel (default 20)")
