"""``hlo-workbench graph`` and ``reproducer``: the artefacts a user hands on, a picture and a bug folder.

    hlo-workbench graph mlp -o mlp.svg                  # the last MLIR stage's dataflow, changed ops highlighted
    hlo-workbench graph mlp --stage xla:optimized --max-ops 100 -o opt.pdf
    hlo-workbench graph mlp | dot -Tpng > mlp.png       # without -o: the DOT source on stdout
    hlo-workbench reproducer step.py:fn bug             # bug/: input.mlir, pipeline.txt, inputs.npz, repro.py
    hlo-workbench reproducer step.py:fn --has-op stablehlo.transpose bug --json   # exit 1: it holds here

Each is one call of the Python API on the exploration of TARGET (``cli_common.explore_target``):
``ex.graph(stage, max_ops=..., group=...)``, drawn by graphviz's ``dot`` in the format the output's suffix
names (``StageGraph.pipe``, bounded in time), and ``ex.reproducer(folder, stage=..., predicate=...)``, whose
predicate is one of the built-in ones, chosen by the options bisect and reduce take (``cli_search``).
"""
from __future__ import annotations

import ast
import json
import shlex
import sys
from pathlib import Path

from ..errors import GraphTooLargeError, WorkbenchError
from .cli_common import EXIT_FOUND, EXIT_OK, command_parser, emit, explore_target
from .cli_schema import array, boolean, integer, maybe, record, string
from .cli_search import add_predicate_options, check_predicate_options, predicate_given, predicate_of

__all__ = ["GRAPH_SCHEMA", "REPRODUCER_SCHEMA", "add_commands", "cmd_graph", "cmd_reproducer"]

# the output's suffix -> graphviz's format (.dot and .gv: the DOT source itself, no layout)
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}

GRAPH_SCHEMA = record({
    "stage": string(description="the stage drawn"),
    "nodes": integer(minimum=0, description="the node statements drawn (ops, arguments, results; or groups)"),
    "edges": integer(minimum=0, description="the edge statements drawn"),
    "output": maybe(string(description="the file written (null: no -o, the DOT source is in 'dot')")),
    "format": {"enum": sorted(set(FORMATS.values()))},
    "dot": maybe(string(description="the DOT source, where no -o was given (null where it was)")),
    "summary": string()})

REPRODUCER_SCHEMA = record({
    "directory": string(description="the bug folder, as given"),
    "files": array(record({"name": string(), "bytes": integer(minimum=0), "what": string()}),
                   description="the files written into it (inputs.npz only where @main's arguments could be)"),
    "stage": string(description="the MLIR stage the reproducer starts at: pipeline.txt's first pass made it"),
    "parent": string(description="the stage whose module is input.mlir"),
    "predicate": maybe(string(description="the built-in predicate, as Python writes it (null: none given)")),
    "recipe": maybe(record({"kind": string()}, closed=False, description="what repro.py decides, and its arguments")),
    "holds": maybe(boolean(description="the predicate holds on TARGET as explored (exit 1); null: none given")),
    "run": string(description="the command line that runs it, as its README says"),
    "summary": string()})


def _save(ns, ex) -> None:
    if getattr(ns, "save", None):
        path = ex.save(ns.save)
        print(f"hlo-workbench: saved the exploration to {path}", file=sys.stderr)


def _writable(path: str) -> None:
    """WorkbenchError where ``path``'s folder is not there: said before exploring, not after."""
    if not Path(path).resolve().parent.is_dir():
        raise WorkbenchError(f"cannot write {path}: no such folder {Path(path).parent}")


# -- graph ---------------------------------------------------------------------------------------------------


def _format(output: str | None) -> str:
    if output is None:
        return "dot"
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        raise WorkbenchError(f"-o {output}: the format comes from the suffix; give a file ending .svg, .png, .pdf "
                             "or .dot")
    return fmt


def _drawn(g, fmt: str) -> bytes:
    """The graph laid out by ``dot`` in ``fmt`` (the DOT source itself for "dot"), within its time limit."""
    import graphviz

    if fmt == "dot":
        return g.source.encode("utf-8")
    try:
        return g.pipe(format=fmt)
    except GraphTooLargeError as e:
        raise WorkbenchError(f"{e}. On the command line: a --max-ops below the stage's op count draws the top level "
                             "of JAX's name stack, --group G one group of it, --layout-seconds S gives dot longer, "
                             "and -o OUT.dot writes the DOT source without laying it out") from None
    except graphviz.ExecutableNotFound:
        raise WorkbenchError("graphviz's dot program is not installed (apt-get install graphviz; scripts/setup.sh "
                             "does it); -o OUT.dot, or no -o, writes the DOT source without it") from None
    except graphviz.CalledProcessError as e:
        said = (e.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise WorkbenchError(f"graphviz's dot failed (exit {e.returncode})" + (f": {said[-1]}" if said else "")) \
            from None


def cmd_graph(ns) -> int:
    fmt = _format(ns.output)
    if ns.output:
        _writable(ns.output)
    if ns.max_ops < 0:
        raise WorkbenchError(f"--max-ops {ns.max_ops}: give a number of ops of at least 0")
    if ns.layout_seconds is not None and ns.layout_seconds <= 0:
        raise WorkbenchError(f"--layout-seconds {ns.layout_seconds}: give a time in seconds above 0")
    ex = explore_target(ns)
    _save(ns, ex)
    st = ex.stage(ns.stage) if ns.stage else ex.default_run_stage()
    g = ex.graph(st, max_ops=ns.max_ops, group=ns.group)
    if ns.layout_seconds is not None:
        g.layout_seconds = ns.layout_seconds
    data = _drawn(g, fmt)
    if ns.output:
        try:
            Path(ns.output).write_bytes(data)
        except OSError as e:
            raise WorkbenchError(f"cannot write {ns.output}: {e.strerror or e}") from None
    where = ns.output if ns.output else "stdout (DOT)"
    summary = (f"{st.name}: {g.nodes} node{'s' * (g.nodes != 1)}, {g.edges} edge{'s' * (g.edges != 1)} drawn "
               f"-> {where}")
    if ns.json:
        return emit(ns, {"stage": st.name, "nodes": g.nodes, "edges": g.edges, "output": ns.output, "format": fmt,
                         "dot": None if ns.output else g.source, "summary": summary}, EXIT_OK)
    if ns.output:
        print(summary)
    else:  # stdout is the DOT source alone, for a pipe into dot; the line goes to stderr
        print(g.source, end="" if g.source.endswith("\n") else "\n")
        print(f"# {summary}", file=sys.stderr)
    return EXIT_OK


_GRAPH_HELP = """\
The dataflow of a stage (ex.graph(stage) in Python), ops that changed since the parent stage highlighted:
every op up to --max-ops; above, the top level of the stage's hierarchy by JAX's name stack (one box per group,
its op count, the values between groups), and --group G draws one group's level. -o OUT writes it in the format
its suffix names (.svg, .png, .pdf: laid out by graphviz's dot, within --layout-seconds; .dot: the source),
and one line says the stage, the nodes and edges drawn and the file; without -o the DOT source goes to stdout
(hlo-workbench graph mlp | dot -Tsvg > g.svg).

exit 0: drawn; exit 2 also where it cannot be (a stage with no module, such as jaxpr; a graph dot cannot lay
out in time: the reason, and --max-ops or --group to draw less)."""


# -- reproducer ------------------------------------------------------------------------------------------------


def _settings(folder: Path) -> dict:
    """The folder's settings as repro.py holds them: its ``CONFIG = json.loads(<a JSON string literal>)``."""
    tree = ast.parse((folder / "repro.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["CONFIG"]
                and isinstance(node.value, ast.Call) and node.value.args
                and isinstance(node.value.args[0], ast.Constant)):
            return json.loads(node.value.args[0].value)
    raise WorkbenchError(f"{folder / 'repro.py'} holds no CONFIG: the installed workbench is damaged; reinstall it")


def _files(folder: Path, config: dict) -> list[dict]:
    """The files the reproducer wrote, in the order its README lists them, each with what it is."""
    stage, parent = config["stage"], config["parent"]
    what = {"input.mlir": f"the module before {stage!r} (stage {parent!r})",
            "pipeline.txt": f"the pass strings from {stage!r} on, joined with commas",
            "inputs.npz": "the arguments of @main, in its order",
            "repro.py": "decides the predicate with jax and enzyme-ad alone (no workbench)",
            "README.md": "what was written and why, how to run it, the versions"}
    return [{"name": name, "bytes": (folder / name).stat().st_size, "what": text}
            for name, text in what.items() if (folder / name).is_file()]


def _run_line(directory: str) -> str:
    return f"cd {shlex.quote(directory)} && python repro.py"


def cmd_reproducer(ns) -> int:
    check_predicate_options(ns)
    if ns.drifts:  # drifts_at pins an op of this process's run: repro.py has no standalone form of it
        raise WorkbenchError("--drifts: repro.py cannot decide drifts_at without the workbench; give --miscompiles, "
                             "--crashes, --slower-than, --op-count-above, --op-count-at-most, --has-op, --lacks-op, "
                             "--differs-from, or no predicate (repro.py then prints the outputs' differences)")
    if Path(ns.directory).exists() and not Path(ns.directory).is_dir():
        raise WorkbenchError(f"{ns.directory} is a file, not a folder: give a folder to write the reproducer into")
    ex = explore_target(ns)
    _save(ns, ex)
    pred = predicate_of(ns, ex) if predicate_given(ns) else None
    folder = ex.reproducer(ns.directory, stage=ns.stage, predicate=pred)
    config = _settings(folder)
    holds = None if pred is None else bool(pred(ex))
    files = _files(folder, config)
    run = _run_line(ns.directory)
    title = ex.spec.title
    verdict = ("no predicate: repro.py prints each output's largest difference" if pred is None else
               f"{pred!r} holds on {title} as explored, so repro.py should print FAIL" if holds else
               f"{pred!r} does not hold on {title} as explored, so repro.py should print PASS")
    summary = (f"wrote {ns.directory}: a reproducer of {title} from stage {config['stage']!r} on "
               f"(input.mlir is stage {config['parent']!r}); {verdict}")
    status = EXIT_FOUND if holds else EXIT_OK
    if ns.json:
        return emit(ns, {"directory": ns.directory, "files": files, "stage": config["stage"],
                         "parent": config["parent"], "predicate": None if pred is None else repr(pred),
                         "recipe": config["predicate"], "holds": holds, "run": run,
                         "summary": summary}, status)
    print(f"# {summary}\n")
    width = max(len(f["name"]) for f in files)
    for f in files:
        print(f"{f['name']:<{width}}  {f['bytes']:>9,} B  {f['what']}")
    print(f"\n# run it: {run}\n# its last line: FAIL (exit 1, the bug reproduces), PASS (0), ERROR (2: it could not "
          "decide); README.md has the enzymexlamlir-opt line")
    return status


_REPRODUCER_HELP = """\
A folder to attach to a bug report (ex.reproducer(folder) in Python): input.mlir (the module before --stage),
pipeline.txt (the passes from --stage on), inputs.npz (@main's arguments), repro.py (runs them with jax and
enzyme-ad alone, no workbench, and prints PASS or FAIL for the predicate) and README.md. --stage: an MLIR
stage (default: where the predicate starts to hold when that is cheap to find, else the first MLIR stage).

the predicate (at most one; default none: repro.py prints the outputs' differences): --miscompiles,
--crashes [--include-xla], --slower-than S, --op-count-above OP N, --op-count-at-most OP N, --has-op OP /
--lacks-op OP [--op-stage xla:optimized], --differs-from STAGE [--numbers]; the built-in predicates of the same
name (wb.miscompiles(), wb.has_op(...), ...). --drifts has no standalone form and is refused.

exit 0: written (no predicate, or it does not hold on TARGET as explored: repro.py should print PASS);
exit 1: written, and the predicate holds on TARGET (the bug is there: repro.py should print FAIL)."""


# -- the commands ----------------------------------------------------------------------------------------------


def add_commands(sub) -> None:
    """Add graph and reproducer to the subparsers ``sub`` of the hlo-workbench parser."""
    sp = command_parser(sub, "graph", "a stage's dataflow drawn by graphviz (.svg, .png, .pdf) or as DOT",
                        cmd_graph, description=_GRAPH_HELP, result=GRAPH_SCHEMA, explores=True, default_target=None)
    sp.add_argument("--stage", metavar="S", help="the stage to draw (default: the last MLIR stage)")
    sp.add_argument("--max-ops", type=int, default=400, metavar="N", help="draw every op up to N; above, the top "
                    "level of JAX's name stack (default 400; at most 1,000 ops are drawn one by one)")
    sp.add_argument("--group", metavar="G", help="draw that group's level, e.g. 'block_0/attn' (a box's tooltip "
                    "names its group)")
    sp.add_argument("-o", "--output", metavar="OUT", help="write it there: .svg, .png, .pdf or .dot, by the suffix "
                    "(default: the DOT source on stdout)")
    sp.add_argument("--layout-seconds", type=float, metavar="S", help="how long dot may lay the graph out "
                    "(default 30)")

    sp = command_parser(sub, "reproducer", "a bug folder: the module, its passes, its inputs and a repro.py that "
                        "runs without the workbench", cmd_reproducer, description=_REPRODUCER_HELP,
                        result=REPRODUCER_SCHEMA, explores=True, default_target=None)
    sp.add_argument("directory", metavar="DIR", help="the folder to write (made if needed; its files replaced)")
    sp.add_argument("--stage", metavar="S", help="the MLIR stage the reproducer starts at (default: where the "
                    "predicate starts to hold, when cheap to find; else the first MLIR stage)")
    add_predicate_options(sp, default=False)
