"""The %%hlo and %hlo magics in a real IPython shell: real jax programs in, stages and texts out,
and every kind of mistake answered with a short message while the shell carries on."""
import re

import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench as wb
from workbench.views.magics import HloMagics

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

MATMUL = """\
def f(x, y):
    return jnp.tanh(x @ y).sum(0)
f(jnp.ones((64, 64)), jnp.ones((64, 32)))
"""

# Two transposes that cancel: the Enzyme-JaX patterns remove them, so the first pattern stage differs.
TRANSPOSES = """\
def t(x):
    return jnp.transpose(jnp.transpose(x)) + 1
t(jnp.ones((4, 8)))
"""


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    ip.run_cell("import jax.numpy as jnp\nx = jnp.ones((64, 64))\ny = jnp.ones((64, 32))")
    return ip


def run(shell, src):
    """Run one cell; return (the ExecutionResult, stdout + stderr)."""
    with capture_output() as cap:
        result = shell.run_cell(src)
    return result, re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout + cap.stderr)  # the traceback's colours


def assert_shell_still_works(shell):
    result, _ = run(shell, "still_alive = 40 + 2")
    assert result.success and shell.user_ns["still_alive"] == 42


def test_load_ext_registers_hlo_as_cell_and_line_magic(shell):
    magics = shell.magics_manager.magics
    assert "hlo" in magics["cell"] and "hlo" in magics["line"]
    # the usage is generated from the options
    for option in ("-p PIPELINE", "--disable", "--xla-disable", "-o NAME", "--stage", "--vs", "--no-panel"):
        assert option in HloMagics.hlo.__doc__
    _, out = run(shell, "%%hlo?")
    assert "--xla-disable" in out


def test_a_cell_defines_its_function_and_traces_its_last_line(shell):
    shell.user_ns.pop("f", None)
    result, out = run(shell, "%%hlo -o ex1\n" + MATMUL)
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert isinstance(ex, wb.Exploration) and shell.user_ns["ex1"] is ex
    assert callable(shell.user_ns["f"])  # the definition stays in the user's namespace
    assert ex.spec.title == "f" and ex.spec.pipeline == "all" and ex.error is None
    for name in ("stablehlo", "enzyme-hlo-patterns#1", "xla:optimized"):
        assert name in out
    # the stages are those of the core API on the same call
    direct = wb.explore(shell.user_ns["f"], jnp.ones((64, 64)), jnp.ones((64, 32)))
    assert ex.names == direct.names
    last = [s for s in ex.stages if s.group == "mlir"][-1]
    assert f"# {last.name} (the last MLIR stage)" in out and last.text.strip() in out
    assert "stablehlo.dot_general" in last.text


def test_options_reach_the_exploration(shell):
    result, out = run(shell, "%%hlo -p only_enzyme --disable transpose_transpose,dot_transpose "
                             "--disable merge_consecutive_reshapes --xla-disable algsimp\n" + MATMUL)
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex.spec.pipeline == "only_enzyme"
    assert ex.spec.selection.disabled == {"transpose_transpose", "dot_transpose", "merge_consecutive_reshapes"}
    assert dict(ex.spec.xla_options)["xla_disable_hlo_passes"] == "algsimp"
    assert "enzyme#1" in out and "enzyme-hlo-patterns#1" not in ex.names


def test_a_quoted_pipeline_string(shell):
    result, out = run(shell, "%%hlo -p 'canonicalize,cse' --no-panel\n" + MATMUL)
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex.spec.pipeline == "canonicalize,cse"
    assert [s.name for s in ex.stages if s.group == "mlir"] == ["canonicalize#1", "cse#1"]


def test_pipeline_none_shows_stablehlo_as_the_last_mlir_text(shell):
    result, out = run(shell, "%%hlo -p none\n" + MATMUL)
    assert result.success, out
    assert "# stablehlo (the module as lowered)" in out
    assert shell.user_ns["_hlo"]["stablehlo"].text.strip() in out


def test_stage_vs_prints_the_diff_between_two_stages(shell):
    result, out = run(shell, "%%hlo --stage stablehlo --vs enzyme-hlo-patterns#1\n" + TRANSPOSES)
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex["stablehlo"].text.count("stablehlo.transpose") == 2
    assert "stablehlo.transpose" not in ex["enzyme-hlo-patterns#1"].text
    assert "# diff stablehlo -> enzyme-hlo-patterns#1" in out
    assert "--- stablehlo\n+++ enzyme-hlo-patterns#1\n@@ " in out
    removed = [l for l in out.splitlines() if l.startswith("-") and "stablehlo.transpose" in l]
    assert len(removed) == 2
    # the diff replaces the final stage's text
    assert "(the last MLIR stage)" not in out


def test_stage_alone_shows_that_stage(shell):
    result, out = run(shell, "%%hlo --stage xla:optimized\n" + TRANSPOSES)
    assert result.success, out
    assert "# xla:optimized\n" in out and "HloModule" in out


def test_the_line_magic(shell):
    shell.run_cell(MATMUL.rsplit("f(", 1)[0])  # f defined in a cell of its own (not by an earlier test's cell)
    result, out = run(shell, "%hlo -p only_enzyme -o ex2 f(x, y)")
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex.spec.pipeline == "only_enzyme" and shell.user_ns["ex2"] is ex and ex.spec.title == "f"
    assert "enzyme#1" in out and "xla:optimized" in out


def test_keyword_arguments_are_traced_or_static_like_positional_ones(shell):
    shell.run_cell("def g(a, *, b, mode):\n    return (a * b).sum(0) if mode == 'sum' else a * b")
    result, out = run(shell, "%hlo -p none g(x, b=x, mode='sum')")
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex.spec.title == "g"
    main = next(l for l in ex["stablehlo"].text.splitlines() if "func.func public @main" in l)
    assert main.count("tensor<64x64xf32>") == 2 and "-> (tensor<64xf32>" in main  # b is an input, mode static
    # a failure inside the function shows the user's frame, not the magic's wrapper
    result, out = run(shell, "%hlo g(x, b=jnp.ones((3,)), mode='sum')")
    assert not result.success and "return (a * b).sum(0)" in out and "Incompatible shapes" in out
    assert "workbench/" not in out


def test_a_failing_pass_keeps_the_stages_before_it(shell):
    result, out = run(shell, "%%hlo -p 'canonicalize,cse,one-shot-bufferize,canonicalize'\n" + MATMUL)
    assert result.success, out
    ex = shell.user_ns["_hlo"]
    assert ex.error.stage == "one-shot-bufferize#1"
    assert "stage 'one-shot-bufferize#1' failed" in out
    assert "# cse#1 (the last MLIR stage)" in out and ex["cse#1"].text.strip() in out


# -- mistakes ------------------------------------------------------------------------------------------
def test_a_last_line_that_is_not_a_call(shell):
    result, out = run(shell, "%%hlo\ndef h(x):\n    return x\nz = h(x)\n")
    assert not result.success
    assert "last statement must be a call" in out and "'z = h(x)'" in out
    assert "Traceback" not in out and "workbench/" not in out
    result, out = run(shell, "%hlo -p none")
    assert not result.success and "needs a call to trace" in out
    assert_shell_still_works(shell)


def test_a_function_that_fails_to_trace_shows_the_users_frames(shell):
    result, out = run(shell, "%%hlo\ndef bad(x):\n    return jnp.sum(x, axis=(1, 2, 3))\nbad(jnp.ones((3, 4)))\n")
    assert not result.success
    assert "hlo-workbench: tracing failed: bad(float32[3, 4]) raised ValueError" in out
    assert "return jnp.sum(x, axis=(1, 2, 3))" in out  # the user's own line
    assert "out of bounds" in out
    assert "workbench/" not in out and "jax/_src" not in out
    assert_shell_still_works(shell)


def test_a_trace_failure_is_not_a_usage_error_and_numbers_lines_as_the_cell_shows_them(shell):
    # line 1 is the %%hlo line; the failing line is line 5 of the cell, the def on line 4
    cell = "%%hlo -p none\nimport math\n\ndef bad2(x, n):\n    return x.reshape(n)\nbad2(jnp.ones((3, 4)), 5)\n"
    result, out = run(shell, cell)
    assert not result.success and isinstance(result.error_in_exec, UsageError)  # still one, for code catching it
    assert out.startswith("hlo-workbench: tracing failed: bad2(float32[3, 4], int) raised TypeError\n"), out
    assert "UsageError" not in out
    frame = re.search(r"Cell In\[\d+\], line (\d+), in bad2\n +return x.reshape\(n\)", out)
    assert frame and frame.group(1) == "5", out
    assert re.search(r"tracing the function bad2 at Cell In\[\d+\], line 4\b", out), out  # JAX's own message
    assert "ipython-input" not in out and "static_argnums=(1,)" in out and "--static 1" in out
    # the cell's own code: the traceback's line numbers and the lines it quotes are the cell's
    result, out = run(shell, "%%hlo\nq = 1\nq = undefined_name + 1\nf(q)\n")
    assert not result.success
    assert re.search(r"Cell In\[\d+\], line 3\n +1 %%hlo\n +2 q = 1\n-+> 3 q = undefined_name \+ 1", out), out
    # a syntax error is located on the line the cell shows it
    result, out = run(shell, "%%hlo\nx1 = 1\nx2 = )\nf(x1)\n")
    assert not result.success and re.search(r"Cell In\[\d+\], line 3\n +x2 = \)", out), out
    assert_shell_still_works(shell)


def test_an_error_in_the_cells_own_code_shows_its_traceback(shell):
    result, out = run(shell, "%%hlo\nq = undefined_name + 1\nf(q)\n")
    assert not result.success
    assert "NameError" in out and "q = undefined_name + 1" in out and "nothing was traced" in out
    assert "hlo-workbench: the cell's code raised NameError" in out and "UsageError" not in out
    assert "workbench/" not in out
    result, out = run(shell, "%hlo f(x, undefined_arg)")
    assert not result.success and "undefined_arg" in out and "workbench/" not in out
    assert_shell_still_works(shell)


def test_an_unknown_pattern_or_preset_suggests_the_closest_names(shell):
    result, out = run(shell, "%%hlo --disable dot_transpos\n" + MATMUL)
    assert not result.success
    assert "unknown pattern 'dot_transpos'; did you mean 'dot_transpose'" in out
    assert "Traceback" not in out
    result, out = run(shell, "%hlo -p allx f(x, y)")
    assert not result.success and "did you mean 'all'" in out
    result, out = run(shell, "%hlo --stage stablehlo --vs canonicalize#99 f(x, y)")
    assert not result.success and "unknown stage 'canonicalize#99'" in out
    result, out = run(shell, "%hlo -d cpu:7 f(x, y)")
    assert not result.success and "unknown device 'cpu:7'; did you mean 'cpu:0'" in out
    assert_shell_still_works(shell)


def test_bad_options_are_short_messages(shell):
    for cell, message in [("%hlo --bogus f(x, y)", "unrecognized arguments: --bogus"),
                          ("%%hlo --vs stablehlo\n" + MATMUL, "--vs B needs --stage A"),
                          ("%%hlo -o 'not a name'\n" + MATMUL, "is not a Python name"),
                          ("%%hlo f(x, y)\n" + MATMUL, "the call on the cell's last line")]:
        result, out = run(shell, cell)
        assert not result.success and message in out, out
        assert "Traceback" not in out
    assert_shell_still_works(shell)


# -- %%mlir: the cell is the module ------------------------------------------------------------------
MODULE = """\
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %2 = stablehlo.add %1, %x : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
"""


def test_mlir_cell_magic_explores_the_cells_text_with_the_same_options(shell):
    assert "mlir" in shell.magics_manager.magics["cell"]
    for option in ("-p PIPELINE", "--disable", "--xla-disable", "-o NAME", "--stage", "--vs", "--no-panel"):
        assert option in HloMagics.mlir.__doc__
    result, out = run(shell, "%%mlir -p all -o m --no-panel\n" + MODULE)
    assert result.success, out
    ex = shell.user_ns["m"]
    assert shell.user_ns["_hlo"] is ex and ex.names[0] == "input" and ex["input"].text.count("transpose") == 2
    last = [s for s in ex.stages if s.group == "mlir"][-1]
    assert "stablehlo.transpose" not in last.text  # the patterns cancel the two transposes
    assert "xla:optimized" in ex.names and "# " + last.name in out
    # the same toggles as %%hlo reach explore_text: with the pattern that cancels them off, they stay
    off = [p for p in wb.explore_text(MODULE).applicable("input") if "transpose" in p]
    result, out = run(shell, f"%%mlir -p all --disable {','.join(off)} -o kept --no-panel\n" + MODULE)
    assert result.success, out
    kept = [s for s in shell.user_ns["kept"].stages if s.group == "mlir"][-1]
    assert "stablehlo.transpose" in kept.text
    result, out = run(shell, "%%mlir -p none --stage input --no-panel\n" + MODULE)
    assert result.success and "# input" in out and "stablehlo.transpose" in out


def test_mlir_cell_magic_answers_bad_text_and_keeps_the_shell(shell):
    shell.user_ns.pop("_hlo", None)
    result, out = run(shell, "%%mlir --no-panel\nHloModule m\nENTRY e { ROOT p = f32[] parameter(0) }\n")
    assert not result.success and "hlo-workbench: %%mlir:" in out and "XLA HLO text" in out
    result, out = run(shell, "%%mlir --no-panel\nfunc.func @main() {\n  %0 = stablehlo.bogus\n}\n")
    assert not result.success and "2:8: error" in out and "line 2 of the module is line 3 of the cell" in out
    assert "_hlo" not in shell.user_ns
    assert_shell_still_works(shell)


def test_the_shardy_options_reach_explore(shell):
    # a program on one device refuses a Shardy mode rather than dropping it without a word
    result, out = run(shell, "%%hlo -p none --shardy post_sdy_propagation\n" + MATMUL)
    assert not result.success and "applies to a sharded program, and this one is not" in out, out
    result, out = run(shell, "%%hlo -p none --shardy none --no-optimize-communications -o unsharded --no-panel\n" + MATMUL)
    assert result.success, out
    assert shell.user_ns["unsharded"].spec.shardy == "none"
    assert shell.user_ns["unsharded"].spec.optimize_communications is False
    assert_shell_still_works(shell)
