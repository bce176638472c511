"""explore_text on the texts users paste: modules reach the passes exactly as given, and every stage is
what enzyme-ad's own runner makes of its parent; text that is not MLIR, or MLIR that does not parse, is
refused at once with what it looks like, where it breaks and what to pass instead."""
import re

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.ir.text import input_kind, public_functions, publish_functions, strip_locations, unmarked_functions
from workbench.pipeline.runner import default_runner

# (a) a module carrying its own transform script: the payload's transpose that only moves a unit
# dimension becomes a reshape (an Enzyme-JaX pattern), alongside MLIR's canonicalization patterns.
TRANSFORM_SCRIPT = """\
module attributes {transform.with_named_sequence} {
  func.func @main(%arg0: tensor<1x4xf32>) -> tensor<4x1xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<1x4xf32>) -> tensor<4x1xf32>
    %1 = stablehlo.add %0, %0 : tensor<4x1xf32>
    %2 = stablehlo.add %0, %0 : tensor<4x1xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<4x1xf32>
    return %3 : tensor<4x1xf32>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.enzyme_hlo.transpose_is_reshape
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"""

# (b) a library: two public functions (one spelled without a keyword), a private helper, no @main.
LIBRARY = """\
module {
  func.func @scale(%x: tensor<3xf32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<2.0> : tensor<3xf32>
    %y = stablehlo.multiply %x, %c : tensor<3xf32>
    %z = stablehlo.multiply %x, %c : tensor<3xf32>
    %w = stablehlo.add %y, %z : tensor<3xf32>
    return %w : tensor<3xf32>
  }
  func.func public @twice_negated(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = call @negate(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %1 = call @negate(%0) : (tensor<3xf32>) -> tensor<3xf32>
    return %1 : tensor<3xf32>
  }
  func.func private @negate(%x: tensor<3xf32>) -> tensor<3xf32> {
    %n = stablehlo.negate %x : tensor<3xf32>
    return %n : tensor<3xf32>
  }
}
"""

# (c) a named module with attributes of its own, as jax prints them plus one a user added.
ATTRIBUTED = """\
module @my_prog attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32, some.attr = "x"} {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<3x2xf32> {jax.result_info = "out"}) {
    %0 = stablehlo.add %a, %b : tensor<2x3xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    return %3 : tensor<3x2xf32>
  }
}
"""

# (d) a Shardy-sharded module: a 2x2 mesh, shardings on the arguments and the result.
SHARDED = """\
module @sharded attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<8x4xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<8x4xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x4xf32>
    %3 = stablehlo.negate %2 : tensor<8x4xf32>
    %4 = stablehlo.negate %3 : tensor<8x4xf32>
    return %4 : tensor<8x4xf32>
  }
}
"""

NO_SCRIPT = "could not find a nested named sequence"


def agrees_with_enzyme_ad(text: str, pipeline: str, **options) -> wb.Exploration:
    """Explore ``text`` and check every MLIR stage against enzyme-ad run directly on its parent's text.

    The normalisation is the one the workbench documents: locations stripped from ``text``, and the
    entry function that enzyme-ad's runner makes private is public again if it was public in the input.
    Where enzyme-ad fails, the workbench must fail at that same stage with enzyme-ad's own error.
    """
    from enzyme_ad.jax import enzyme_call

    ex = wb.explore_text(text, pipeline=pipeline, **options)
    stages = ex.pipeline_stages
    first = stages[0]
    assert first.name == "input" and first.text_with_locations == text and first.text == strip_locations(text)
    public = public_functions(text)
    by_name = {s.name: s for s in stages}
    for s in stages[1:]:
        parent = by_name[s.parent]
        try:
            entry, out = enzyme_call.run_pass_pipeline([], parent.text_with_locations, s.produced_by)
        except ValueError as e:
            assert s is stages[-1] and s.error and ex.pipeline_error.stage == s.name, (pipeline, s.name)
            assert str(e) in ex.pipeline_error.diagnostics
            return ex
        # the entry public again, with no keyword where its input wrote none (as MLIR prints it)
        out = publish_functions(out, public & {entry}, unmarked_functions(parent.text_with_locations))
        assert s.error is None and s.text_with_locations == out, (pipeline, s.name)
        assert s.text == strip_locations(out)
    assert ex.pipeline_error is None
    return ex


enzyme_only = pytest.mark.skipif(not __import__("workbench.pipeline.worker").pipeline.worker.enzyme_available(),
                                 reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@enzyme_only
def test_a_module_with_its_own_transform_script_runs_under_transform_interpreter():
    for pipeline in ["transform-interpreter", "canonicalize,transform-interpreter,cse"]:
        ex = agrees_with_enzyme_ad(TRANSFORM_SCRIPT, pipeline)
        after = ex["transform-interpreter#1"]
        assert after.changed and "stablehlo.transpose" not in after.text and "stablehlo.reshape" in after.text
        assert "transform.named_sequence @__transform_main" in after.text  # the script stays until removed
    # once the script is removed, XLA compiles the payload
    ex = agrees_with_enzyme_ad(TRANSFORM_SCRIPT, "transform-interpreter,enzyme-hlo-remove-transform")
    assert "transform." not in ex["enzyme-hlo-remove-transform#1"].text
    assert ex.error is None and "xla:optimized" in ex.names


@enzyme_only
def test_a_library_without_main_keeps_the_visibility_the_passes_give():
    for pipeline in ["all", "canonicalize,cse", "inline,symbol-dce"]:
        ex = agrees_with_enzyme_ad(LIBRARY, pipeline)
        assert {"scale", "twice_negated"} <= public_functions(ex.pipeline_stages[-1].text)
    assert "func.func private @negate" not in agrees_with_enzyme_ad(LIBRARY, "inline,symbol-dce").pipeline_stages[-1].text
    # a pass that makes functions private is shown doing so: only enzyme-ad's entry is re-published
    last = agrees_with_enzyme_ad(LIBRARY, "symbol-privatize").pipeline_stages[-1]
    assert "func.func private @scale" in last.text and "func.func private @twice_negated" in last.text
    # a module without a script: the pass fails at its stage, as enzyme-ad does, not as a pipeline typo
    ex = agrees_with_enzyme_ad(LIBRARY, "cse,transform-interpreter")
    assert ex.pipeline_error.stage == "transform-interpreter#1" and NO_SCRIPT in ex.pipeline_error.reason
    assert ex["cse#1"].changed


@enzyme_only
def test_module_attributes_survive_every_stage():
    for pipeline in ["all", "canonicalize,cse", "transform-interpreter"]:
        ex = agrees_with_enzyme_ad(ATTRIBUTED, pipeline)
        for s in ex.pipeline_stages:
            assert s.error or ('module @my_prog attributes {' in s.text and 'some.attr = "x"' in s.text)
    ex = wb.explore_text(ATTRIBUTED, pipeline="all")
    assert ex.pipeline_stages[-1].text.count("stablehlo.transpose") < ATTRIBUTED.count("stablehlo.transpose")
    assert ex.error is None and "xla:optimized" in ex.names


@enzyme_only
def test_shardy_meshes_and_shardings_survive_every_stage():
    for pipeline in ["all", "canonicalize,cse", "transform-interpreter"]:
        ex = agrees_with_enzyme_ad(SHARDED, pipeline, shardy_passes="none")  # Shardy's own stages: test_shardy.py
        for s in ex.pipeline_stages:
            assert s.error or ('sdy.mesh @mesh = <["x"=2, "y"=2]>' in s.text
                               and s.text.count("#sdy.sharding<@mesh") == 3)
    last = agrees_with_enzyme_ad(SHARDED, "canonicalize,cse", shardy_passes="none").pipeline_stages[-1]
    assert last.text.count("stablehlo.multiply") == 1


# ---- refusals -----------------------------------------------------------------------------------------


def _f(x):
    return jnp.sin(x) * 2.0


@pytest.fixture(scope="module")
def texts():
    x = jnp.ones((3,))
    return {
        "lowered": jax.jit(_f).lower(x).as_text(),
        "lowered_with_locations": jax.jit(_f).lower(x).as_text(debug_info=True),
        "hlo": jax.jit(_f).lower(x).compile().as_text(),
        "jaxpr": str(jax.make_jaxpr(_f)(x)),
    }


def test_input_kind_names_what_was_pasted(texts):
    assert input_kind(texts["lowered"]) == input_kind(texts["lowered_with_locations"]) == "mlir"
    assert input_kind(texts["hlo"]) == "hlo" and texts["hlo"].startswith("HloModule")
    assert input_kind(texts["hlo"][texts["hlo"].index("\nENTRY") + 1:]) == "hlo"  # the entry computation alone
    assert input_kind(texts["jaxpr"]) == "jaxpr"
    for text in (TRANSFORM_SCRIPT, LIBRARY, ATTRIBUTED, SHARDED, "func.func @f() {\n  return\n}\n",
                 "// a comment first\n#map = affine_map<(d0) -> (d0)>\nmodule {\n}\n", '"builtin.module"() ({\n}) : () -> ()'):
        assert input_kind(text) == "mlir", text
    assert input_kind("") == input_kind(" \n\t\n") == input_kind("// nothing but a comment\n") == "empty"
    assert input_kind("import jax\n") == input_kind("# my model\n@jax.jit\ndef f(x):\n    return x\n") == "python"
    assert input_kind("hello world") == "unknown"


@pytest.mark.parametrize("key,kind,fragments", [
    ("empty", "empty", ["empty", "lower(*args).as_text()"]),
    ("whitespace", "empty", ["whitespace only", "lower(*args).as_text()"]),
    ("hlo", "hlo", ["HLO", "HloModule", "jaxlib cannot parse HLO text", "wb.explore(f, *args)", "lower(*args).as_text()"]),
    ("jaxpr", "jaxpr", ["jaxpr", "{ lambda", "wb.explore(f, *args)"]),
    ("python", "python", ["Python source", "wb.explore(f, *args)"]),
])
def test_text_that_is_not_mlir_is_refused_at_once(texts, key, kind, fragments):
    text = {"empty": "", "whitespace": "  \n\t \n", "python": "def f(x):\n    return jnp.sin(x)\n", **texts}[key]
    runner = default_runner()
    executions, misses = runner.worker.executions, runner.misses
    with pytest.raises(wb.InputKindError) as e:
        wb.explore_text(text, pipeline="all")
    assert e.value.kind == kind and isinstance(e.value, ValueError)
    for fragment in fragments:
        assert fragment in str(e.value)
    assert (runner.worker.executions, runner.misses) == (executions, misses)  # no stage was made


BROKEN = """\
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %x, %x : tensor<3xf32
    return %0 : tensor<3xf32>
  }
}
"""

ILL_TYPED = """\
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<4xf32> {
    return %x : tensor<3xf32>
  }
}
"""


@pytest.mark.parametrize("text,line,column,fragment", [
    (BROKEN, 3, 45, "tensor type"),
    (ILL_TYPED, 3, 5, "doesn't match function result type"),
])
def test_mlir_that_does_not_parse_is_refused_with_line_and_column(text, line, column, fragment):
    runner = default_runner()
    executions, misses = runner.worker.executions, runner.misses
    with pytest.raises(wb.MlirSyntaxError) as e:
        wb.explore_text(text, pipeline="canonicalize,cse")
    err = e.value
    assert (err.line, err.column) == (line, column) and isinstance(err, ValueError)
    assert f"{line}:{column}: error:" in str(err) and fragment in str(err)
    assert text.splitlines()[line - 1] in str(err)  # the offending line, quoted under the diagnostic
    assert (runner.worker.executions, runner.misses) == (executions, misses)
    with pytest.raises(wb.MlirSyntaxError, match="does not look like MLIR"):
        wb.explore_text("hello world")


def test_refusals_without_enzyme_use_jaxlibs_parser(tmp_path, texts):
    import os
    import subprocess
    import sys

    (tmp_path / "broken.mlir").write_text(BROKEN)
    (tmp_path / "hlo.txt").write_text(texts["hlo"])
    script = tmp_path / "no_enzyme.py"
    script.write_text(
        "import sys, workbench as wb\n"
        "for name in ('broken.mlir', 'hlo.txt'):\n"
        "    try:\n"
        "        wb.explore_text(open(sys.argv[1] + '/' + name).read(), pipeline='canonicalize')\n"
        "    except (wb.MlirSyntaxError, wb.InputKindError) as e:\n"
        "        print(type(e).__name__, getattr(e, 'line', None), getattr(e, 'column', None), getattr(e, 'kind', None))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's workbench, worker too
    env = {**os.environ, "HLO_WORKBENCH_NO_ENZYME": "1", "PYTHONPATH": root}
    out = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=300, cwd=root).stdout
    assert "MlirSyntaxError 3 45 None" in out and "InputKindError None None hlo" in out


ONE = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


@pytest.mark.parametrize("entry", ["explore_text", "opt"])
def test_a_lone_surrogate_is_refused_with_where_it_is(entry):
    """A str that no UTF-8 can hold (a file read with surrogateescape) used to end in UnicodeEncodeError
    from deep inside; it is refused before the worker is asked, with its line and column."""
    text = ONE.replace("%0 = stablehlo.add", "%0 = stablehlo.add\udce9", 1)
    runner = default_runner()
    executions = runner.worker.executions
    with pytest.raises(wb.InputKindError, match="line 3, column 23: a lone surrogate") as e:
        wb.explore_text(text) if entry == "explore_text" else wb.opt(text, "canonicalize")
    assert e.value.kind == "not-utf-8" and runner.worker.executions == executions


@pytest.mark.parametrize("text, names", [
    (ONE + ONE.replace("@m", "@n"), "(@m, @n)"),
    (ONE.replace("module @m", "module") * 3, "((unnamed), (unnamed), (unnamed))"),
])
def test_modules_pasted_one_after_another_are_read_as_mlir_reads_them_and_said_so(text, names):
    """MLIR reads modules in a row as one unnamed module around them: the stages hold them all (as a lit file's
    opt tool runs them), the title says so, and what needs one @main (XLA, run) says why it has none and what
    to do, where it once said only "the module has no @main function" though each module has one."""
    n = text.count("module")
    ex = wb.explore_text(text, pipeline="canonicalize")
    assert ex.spec.title == f"text: {n} modules read as one" and ex.pipeline_error is None
    assert ex.pipeline_stages[-1].text.count("module") == n + 1
    said = rf"holds {n} modules one after another.*XLA compiles and runs one module; wb\.explore_texts"
    assert re.search(said, str(ex.error)), ex.error  # XLA's compile: no @main at the top, and why
    with pytest.raises(wb.WorkbenchError, match=said):
        ex.run()
    assert len(wb.explore_texts(text, pipeline="canonicalize")) == n
    assert strip_locations(wb.opt(text, "canonicalize")).count("module") == n + 1
    edited = wb.explore_text(ONE, pipeline="canonicalize")
    with pytest.raises(wb.InputKindError, match=rf"holds \d modules one after another {re.escape(names)}") as e:
        edited.with_text("input", text)  # a hand edit replaces one module: still refused, by name
    assert e.value.kind == "modules"


def test_a_module_nested_in_a_named_one_is_not_taken_for_two():
    ex = wb.explore_text("module @outer {\n" + ONE + "}\n", pipeline="canonicalize")
    assert [s.name for s in ex.pipeline_stages][:2] == ["input", "canonicalize#1"]
    ex = wb.explore_text(ONE, pipeline="canonicalize")
    assert ex.error is None and ex.run(repeat=1).check.passed
