"""A pass that fails reads as a compiler's error: the pass, the op with its line in the pass's input stage,
the user's line that made it (a notebook cell as IPython names it, a file as path:line), the message MLIR
gave -- and none of the frames of the tools around the user's code. The whole diagnostic stays one step
away (``StageError.full``, the panel's folded block, the CLI's --full-errors). The Source tab names a cell
the same way."""
import importlib.util
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.ir.diagnostics import enzyme_failure, read_diagnostics
from workbench.ir.locations import mlir_op_locations, op_tag, ops_at, tag_ops
from workbench.ir.mlir import parse_module
from workbench.ir.text import strip_locations
from workbench.pipeline.worker import enzyme_available

ROOT = Path(__file__).resolve().parents[1]
enzyme_only = pytest.mark.skipif(not enzyme_available(), reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

# What enzyme-ad's runner raises for a failed pass (its message) and what MLIR printed meanwhile (its log),
# with the two other forms a diagnostic takes: jaxlib's MLIRError, and a location MLIR does not know.
LOG = """ValueError: INTERNAL: Failed to parse pipeline
Pipeline failed:
op was not bufferized

loc("jit(f)/add"(callsite("f"("/u/m.py":3:8 to 4:20) at "<module>"("/u/run.py":9:4 to :30)))): error: op was not bufferized
error: loc("x.py":3:4): 'stablehlo.add' op requires the same type for all operands
error: an op with no location
"""
# Never in the short form: the frames of the tools around the user's code, and the runner's wrapper.
TOOLS = ("tornado", "kernelbase", "ipykernel/", "asyncio", "interactiveshell.py", "site-packages", "workbench/pipeline",
         "Failed to parse pipeline", "loc(")


def test_diagnostics_are_read_in_each_form_mlir_prints_them():
    ds = read_diagnostics(LOG)
    assert [(d.severity, d.message) for d in ds] == [
        ("error", "op was not bufferized"), ("error", "'stablehlo.add' op requires the same type for all operands"),
        ("error", "an op with no location")]
    (o,) = ds[0].origins
    # a range that ends on another line ("to 4:20") keeps the frames after it
    assert o.name == "jit(f)/add" and [(f.file, f.line, f.function) for f in o.frames] == [
        ("/u/m.py", 3, "f"), ("/u/run.py", 9, "<module>")]
    assert ds[1].location == 'loc("x.py":3:4)' and ds[2].location == "" and ds[2].origins == ()
    assert enzyme_failure(LOG.split("\n\n")[0]) == ("op was not bufferized",)
    assert enzyme_failure("ValueError: Failed to parse pipeline\nunknown pass 'nope'") is None  # a real parse error


def body(x, y):
    z = x @ y
    return jnp.tanh(z) + 1.0


def test_numbered_locations_name_each_op_and_leave_the_program_as_it_was():
    """tag_ops numbers every op's location (aliases moved above the module, where a location may name
    them); jaxlib's parser reads the result, the program is the same, and op_tag reads each number back."""
    text = jax.jit(body).lower(jnp.ones((4, 8)), jnp.ones((8, 3))).as_text(debug_info=True)
    assert "#loc" in text  # aliases, as JAX prints them
    tagged = tag_ops(text)
    assert strip_locations(tagged) == strip_locations(text)
    ops, numbered = mlir_op_locations(text), mlir_op_locations(tagged)
    assert [(o.op, o.line) for o in numbered] == [(o.op, o.line) for o in ops]
    tags: list = []

    def walk(op):  # every op jaxlib read, in text order, with the number its location carries
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    tags.append(op_tag(str(inner.location)))
                    walk(inner.operation)

    walk(parse_module(tagged, allow_unregistered=False).operation)
    assert tags == list(range(len(ops)))
    # an op's own location finds it, and only the ops that share it
    dot = next(o for o in ops if o.op == "stablehlo.dot_general")
    loc = next(ln for ln in text.splitlines() if "stablehlo.dot_general" in ln)
    alias = re.search(r"loc\((#loc\d+)\)", loc).group(1)
    whole = next(ln for ln in text.splitlines() if ln.startswith(alias + " "))
    found = ops_at(text, expand(whole.split(" = ", 1)[1], text))
    assert dot in found and all(o.origins == dot.origins for o in found)


def expand(location: str, text: str) -> str:
    """``location`` with its aliases spelled out, as a diagnostic prints it."""
    aliases = dict(ln.split(" = ", 1) for ln in text.splitlines() if ln.startswith("#loc"))
    while (m := re.search(r"#loc\d+", location)) is not None:
        location = location.replace(m.group(), aliases[m.group()][4:-1], 1)
    return location


def _short_form_checks(error, source: str) -> tuple[str, int, str]:
    """What every short form holds: the pass, one op with its line and text in the input stage ``source``;
    none of the tools' frames; .full adds the rest. Returns the op's name, line and the line shown."""
    short = str(error)
    assert not [t for t in TOOLS if t in short], short
    m = re.search(rf"\n  op:   (\S+), line (\d+) of stage '{re.escape(source)}', the pass's input[^\n]*\n +(.+)", short)
    assert m, short
    assert short.startswith(f"stage {error.stage!r} failed: {error.reason}\n  pass: ")
    assert "Failed to parse pipeline" in error.full and "the pipeline parsed" in error.full
    return m.group(1), int(m.group(2)), m.group(3)


@enzyme_only
def test_a_program_in_a_file_names_the_op_its_stage_line_and_the_file_line(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import jax.numpy as jnp\n\n\ndef f(x, y):\n    z = x @ y\n    return jnp.tanh(z)\n")
    spec = importlib.util.spec_from_file_location("model_27", path)
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    ex = wb.explore(model.f, jnp.ones((4, 8)), jnp.ones((8, 3)), pipeline="canonicalize,one-shot-bufferize")
    err = ex.error
    assert err.stage == "one-shot-bufferize#1" and err.reason == "op was not bufferized"
    op, line, shown = _short_form_checks(err, "canonicalize#1")
    source = ex["canonicalize#1"].text.splitlines()
    assert op == "stablehlo.dot_general" and shown == source[line - 1].strip()
    assert f"\n  from: {path}:5, in f\n          z = x @ y\n" in str(err), str(err)
    assert "jax:  jit(f)/dot_general" in str(err)
    assert ex["one-shot-bufferize#1"].error == str(err)
    # .full: every frame, the workbench's too, and what the runner printed, its wrapper explained
    assert "workbench/pipeline/trace.py" in err.full and f"> {path}:5:" in err.full
    assert 'loc("jit(f)/dot_general"' in err.full


TOUR_SETUP = "import jax, jax.numpy as jnp\nimport workbench as wb\nimport workbench.examples.attention as attention\n" \
             "params, x = attention.args()"


@enzyme_only
def test_the_tours_failing_cell_names_the_cell_as_ipython_does(kernel_shell):
    from IPython.utils.capture import capture_output

    from workbench.views.widgets.coreview import CoreView

    nb = json.loads((ROOT / "notebooks" / "00_tour.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "one-shot-bufferize" in "".join(c["source"]))
    with capture_output() as cap:
        assert kernel_shell.run_cell(TOUR_SETUP).success
        result = kernel_shell.run_cell(cell)
    assert result.success, cap.stdout + cap.stderr
    bad = kernel_shell.user_ns["bad"]
    err, n = bad.error, result.execution_count
    assert str(err) in cap.stdout  # print(bad.error): the short form
    op, line, shown = _short_form_checks(err, "cse#1")
    assert shown == bad["cse#1"].text.splitlines()[line - 1].strip()
    call = cell.splitlines()[0]
    assert f"\n  from: Cell In[{n}], line 1\n          {call.strip()}\n" in str(err), str(err)
    # the op the pass names, among the several that JAX gave the same location (the function's boundary)
    diagnostic = next(d for d in read_diagnostics(err.diagnostics) if d.severity == "error")
    assert len(ops_at(bad["cse#1"].text_with_locations, diagnostic.location)) > 1
    assert (op, line) == ("stablehlo.constant", 3)
    # everything else, one step away: the kernel's frames, the cell's file, the runner's words
    assert "interactiveshell.py" in err.full and re.search(r"> /\S*ipykernel_\d+/\d+\.py:1:", err.full)
    core = CoreView(lambda left, right: None)  # the panel's header: the short form, the whole one folded under it
    core.show(bad, "", "", pending=False)
    error = core.model["error"]
    assert error["stage"] == "one-shot-bufferize#1" and f"Cell In[{n}], line 1" in error["message"]
    assert "interactiveshell.py" in error["full"] and "interactiveshell.py" not in error["message"]


@enzyme_only
@pytest.mark.parametrize("name", ["debug_print_loop", "eqx_filter_jit"])
def test_library_programs_fail_with_the_short_form(name):
    """jax.debug.print in a loop (a host callback) and an Equinox model: the op is found though MLIR's
    error has no location (JAX gave the op none), and the short form says where its line is not known."""
    from tests.corpus import program

    inst = program(name).build()
    ex = wb.explore(inst.fn, *inst.args, pipeline="canonicalize,cse,one-shot-bufferize")
    op, line, shown = _short_form_checks(ex.error, "cse#1")
    assert shown == ex["cse#1"].text.splitlines()[line - 1].strip() and op.startswith("stablehlo.")
    assert "\n  from: " in str(ex.error)


def test_the_source_tab_names_a_cell_as_ipython_does(kernel_shell):
    """The Source tab heads a cell's lines with the name IPython's tracebacks give it (``Cell In[n]``),
    not the file ipykernel compiled it as; the file stays in the row, for the clicks."""
    from IPython.utils.capture import capture_output

    from workbench.views.widgets.source import listing_rows

    with capture_output() as cap:
        assert kernel_shell.run_cell("import jax.numpy as jnp\nimport workbench as wb").success
        result = kernel_shell.run_cell("def g(x):\n    return jnp.sin(x) @ x.T\n\n"
                                       "ex_cell = wb.explore(g, jnp.ones((4, 4)), pipeline='canonicalize')")
    assert result.success, cap.stdout + cap.stderr
    rows = listing_rows(kernel_shell.user_ns["ex_cell"].source_map(stage="canonicalize#1"))
    (head,) = [r for r in rows if r["k"] == "file"]
    assert re.search(r"/ipykernel_\d+/\d+\.py$", head["file"]) and head["code"] == f"Cell In[{result.execution_count}]"
    assert any(r["k"] == "line" and r["code"] == "    return jnp.sin(x) @ x.T" and r["ops"] for r in rows)
