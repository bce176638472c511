"""The layout holds: layers import only downwards (import-linter's contract in pyproject.toml), no
import cycles, no private name imported across modules, modules of one job and modest size (600 lines),
functions of one job (60 lines)."""
import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"
MAX_LINES = 600
MAX_FUNCTION_LINES = 60  # a function's whole def, docstring included


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def test_layers_import_only_downwards():
    from importlinter.cli import lint_imports

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0
    finally:
        os.chdir(cwd)


def test_no_import_cycles():
    import grimp

    graph = grimp.build_graph("workbench", exclude_type_checking_imports=True, cache_dir=None)
    cycles = []
    for importer in sorted(graph.modules):
        if importer == "workbench":
            continue  # the package root re-exports the public API: it sits above everything
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported in ("workbench", importer):  # the worker's __main__ serves from its own module
                continue
            if graph.chain_exists(imported=importer, importer=imported):
                cycles.append((importer, imported))
    assert not cycles, cycles


def test_no_private_name_is_imported_across_modules():
    found = []
    known = modules()
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("workbench"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name} imports {base}.{alias.name}")
    assert not found, found


@pytest.mark.parametrize("name", sorted(modules()))
def test_modules_stay_small(name):
    lines = modules()[name].read_text().count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by job"


@pytest.mark.parametrize("name", sorted(modules()))
def test_functions_stay_short(name):
    """No function or method over 60 lines: a longer one does several jobs, and each gets a name."""
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines, from line {node.lineno})"
            for node in ast.walk(ast.parse(modules()[name].read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{name}: {long}: split by job"


def test_no_layer_below_the_facade_names_it_even_for_type_checking():
    """Analysis, pipeline and ir code are written against declared Protocols (analysis.search.explored.Explored,
    pipeline.build.XlaSource), never against the facade's classes, not even under TYPE_CHECKING."""
    found = []
    for name, path in modules().items():
        if name.split(".")[1:2] not in (["analysis"], ["pipeline"], ["children"], ["ir"]):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("exploration") and node.level:
                found.append(f"{name}:{node.lineno}")
    assert not found, found


def test_the_exploration_is_what_the_searches_declare_they_need():
    from typing_extensions import get_protocol_members  # typing's own from Python 3.13

    from workbench.analysis.search.explored import Explored
    from workbench.exploration import Exploration

    declared = get_protocol_members(Explored)  # its own and those of the Protocols it extends (stages.Staged)
    assert {"spec", "stages", "pipeline_error", "xla_passes", "run"} <= declared
    assert declared and declared <= set(dir(Exploration)), declared - set(dir(Exploration))
    for name in declared:  # the same signature, so a caller written against the Protocol can call the real one
        want, got = inspect.signature(getattr(Explored, name).fget if isinstance(getattr(Explored, name), property)
                                      else getattr(Explored, name)), None
        real = getattr(Exploration, name)
        got = inspect.signature(real.fget if isinstance(real, property) else real)
        named = [n for n, p in want.parameters.items() if p.kind is not p.VAR_KEYWORD]
        assert list(got.parameters)[:len(named)] == named, (name, want, got)  # **kwargs: the real one's others


def test_the_exploration_is_what_saving_declares_it_reads():
    """``save_exploration`` is written against artifacts.saved.Saveable, never the facade: the Exploration has
    each member it declares, as the same kind of member (a property where it declares a property)."""
    from typing_extensions import get_protocol_members

    from workbench.artifacts.saved import Saveable
    from workbench.exploration import Exploration

    declared = get_protocol_members(Saveable)
    assert {"spec", "stages", "pipeline_error", "xla_result", "runs"} <= declared
    assert declared and declared <= set(dir(Exploration)), declared - set(dir(Exploration))
    for name in declared:
        assert isinstance(getattr(Exploration, name), property) == isinstance(getattr(Saveable, name), property), name


# Modules outside workbench/ir/ that use regular expressions, each with what its expressions read. None of them
# reads IR text: reading a module's text is ir/'s job (ir/text.py the lexer, ir/hlo.py XLA's instructions,
# ir/sdy.py Shardy's shardings, ir/locations.py and ir/hlo_locations.py locations, ir/lines/ the diff's lines).
# A module that starts using `re` must be added here with what it reads, so a reviewer sees it.
REGEX_READS = {
    "workbench.views.cli_common": "the --args spelling of arrays, f32[2,3]",
    "workbench.course.lesson10": "a reproducer's printed verdict: FAIL: miscompiles ... differ from input.mlir",
    "workbench.views.magics": "Python tracebacks, to point their lines into the cell; a cell's %%hlo options line",
    "workbench.views.widgets.graphview": "graphviz's SVG output: the node groups and their titles",
    "workbench.views.widgets.source": "Python source: where a def starts",
    "workbench.pipeline.trace": "JAX's error message, for the argument names it cites",
    "workbench.pipeline.xla": "XLA's dump file names (module number, pass, pipeline)",
    "workbench.pipeline.xla_probe": "glog's line prefix in the XLA child's log",
    "workbench.pipeline.runner": "MLIR's diagnostics (loc(...): error: message), the pass manager's report",
    "workbench.pipeline.catalog": "enzyme-ad's pattern specs: name<benefit>(params)",
    "workbench.options": "XLA option names, for their short forms",
    "workbench.children.leftovers": "the workbench's own temporary file names",
    "workbench.analysis.graph.render": "graphviz dot statements the workbench wrote",
    "workbench.analysis.graph.levels": "the workbench's own group labels, [3-5]",
    "workbench.analysis.graph.scopes": "JAX's name stack, jit(f)/...",
    "workbench.analysis.diff.compare": "whether a line has a word character at all",
    "workbench.analysis.diff.result": "words of two already aligned lines, for the highlight inside a changed line",
    "workbench.artifacts.archive": "zip member names and the .npy header",
    "workbench.artifacts.manifest": "the manifest's own string patterns and JSON strings",
    "workbench.artifacts.report": "the report's own HTML and SVG, to clean what it inlines",
    "workbench.artifacts.repro_script": "a bug folder's module, in repro.py, which runs without the workbench "
                                        "installed and so cannot import ir/",
    "workbench.course.exercises": "exercise ids, l3.q2",
    "workbench.course.lesson05": "a student's answer, spelled as XLA writes a shape",
    "workbench.course.lesson08": "XLA's buffer-assignment report (a dump, not a stage), as the lesson teaches to read it",
    "workbench.course.lesson09": "replica groups as a student writes them, {0,1},{2,3}",
}


def _uses_re(path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "re":
            return True
    return False


def test_no_regex_reads_ir_outside_ir():
    """Regular expressions outside workbench/ir/ are only those REGEX_READS lists, each with what it reads."""
    using = {name for name, path in modules().items() if not name.startswith("workbench.ir") and _uses_re(path)}
    assert using <= set(REGEX_READS), sorted(using - set(REGEX_READS))
    assert set(REGEX_READS) <= using, f"listed but no longer using re: {sorted(set(REGEX_READS) - using)}"


def test_a_first_hlo_cell_imports_no_pandas_until_its_panel_works_ahead():
    """A fresh kernel's first %%hlo cell draws its panel and saved view without pandas (0.4 s of import there):
    only the panel's work ahead (its thread starts after XLA's stages) may import it."""
    code = ("import builtins, sys, threading\n"
            "from ipykernel.inprocess.manager import InProcessKernelManager\n"
            "km = InProcessKernelManager(); km.start_kernel(); shell = km.kernel.shell\n"
            "shell.run_line_magic('load_ext', 'workbench')\n"
            "import jax.numpy as jnp\n"
            "who = []\n"
            "real = builtins.__import__\n"
            "def spy(name, *a, **k):\n"
            "    if name == 'pandas' and 'pandas' not in sys.modules and not who:\n"
            "        who.append(threading.current_thread().name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = spy\n"
            "shell.user_ns.update(jnp=jnp)\n"
            "r = shell.run_cell('%%hlo -o ex\\nf = lambda x: jnp.tanh(x @ x.T).sum()\\nf(jnp.ones((4, 3)))')\n"
            "assert r.success, r.error_in_exec\n"
            "print('pandas' in sys.modules and not who[0].startswith('wb-panel-ahead'), who, flush=True)\n"
            "import os; os._exit(0)  # the kernel's threads are not torn down: the answer is printed\n")
    out = _printed_by(code)
    assert out.split()[0] == "False", out


def test_a_first_explore_imports_no_pandas():
    """pandas (0.1-0.2 s of the workbench's own import) comes in where a table is made -- cost(), source_map(), a
    scan's DataFrame -- not with ``import workbench`` or a first explore, which a script or the CLI waits for."""
    code = ("import sys, jax.numpy as jnp, workbench as wb\n"
            "ex = wb.explore(lambda x: jnp.tanh(x.T @ x), jnp.ones((4, 3)))\n"
            "assert len(ex.stages) > 5 and not [s.name for s in ex.stages if s.error], ex.names\n"
            "print('pandas' in sys.modules)\n"
            "print(type(ex.cost()).__name__, 'pandas' in sys.modules)\n")
    out = _printed_by(code)
    assert out.split() == ["False", "DataFrame", "True"], out


def _printed_by(code: str) -> str:
    """What ``python -c code`` prints in a fresh interpreter, from the repository root; it must exit 0."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout
