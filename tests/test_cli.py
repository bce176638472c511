"""The hlo-workbench command on real programs: its behaviour through ``workbench.views.cli.main`` in this
process (tests/conftest.py's ``cli``), and the installed ``hlo-workbench`` script, ``python -m workbench``
and a lit RUN line each run once as a user runs them."""
import argparse
import glob
import importlib.util
import json
import os
import pathlib
import shlex
import shutil
import re
import subprocess
import sys

import pytest

from workbench.views.cli import build_parser, main

from tests.test_cli_contract import COMMANDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = [sys.executable, "-m", "workbench"]


@pytest.fixture
def run(cli):
    """run(*args, input=None): the command in this process, from the checkout's root."""
    return lambda *args, input=None: cli(*args, input=input, cwd=ROOT)


def test_stages_with_shapes(run, tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.tanh(x @ y).sum(0)\n")
    r = run("stages", f"{src}:f", "--args", "f32[64,64],f32[64,32]", "--pipeline", "only_enzyme",
            "--disable", "transpose_transpose")
    assert r.returncode == 0, r.stderr
    for name in ("jaxpr", "stablehlo", "enzyme-batch#1", "enzyme#1", "xla:optimized", "backend:llvm-ir"):
        assert name in r.stdout


@pytest.mark.slow  # a report: the attention gradient run 10 times and checked in float64
def test_default_is_a_report_on_a_builtin_example(run):
    r = run()
    assert r.returncode == 0, r.stderr
    assert "enzyme-hlo-patterns#1" in r.stdout and "Final MLIR stage" in r.stdout
    assert "stablehlo.dot_general" in r.stdout
    # the header counts the stages the table below it shows
    header = re.match(r"# Exploration\('fn', pipeline='all', device='\w+:\d+', (\d+) stages: (\d+) trace/MLIR \+ (\d+) XLA/backend\)\n\n",
                      r.stdout)
    assert header, r.stdout[:300]
    total, early, late = map(int, header.groups())
    rows = r.stdout[header.end():].split("\n\n")[0].splitlines()[1:]  # the table, less its column names
    assert total == early + late == len(rows) and late == sum(" xla " in l or " backend " in l for l in rows)


def test_bad_input_is_a_clear_message(run):
    r = run("stages", "mlp", "--disable", "dot_transpos")
    assert r.returncode == 2 and "did you mean 'dot_transpose'" in r.stderr and "Traceback" not in r.stderr
    r = run("stages", "workbench/examples/mlp.py:nope")
    assert r.returncode != 0 and "has no function 'nope'" in r.stderr
    r = run("stages", "mlp", "--args", "f32[3,", )
    assert r.returncode != 0 and "DTYPE[DIMS]" in r.stderr


@pytest.mark.parametrize("command", ["stages", "report"])
def test_a_failing_pass_is_exit_status_1_with_its_error_and_the_exploration_still_saved(run, tmp_path, command):
    saved = tmp_path / "failed.hlox"
    r = run(command, "mlp", "--pipeline", "canonicalize,one-shot-bufferize", "--save", str(saved))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "\nstage 'one-shot-bufferize#1' failed: op was not bufferized\n" in r.stderr and "one-shot-bufferize#1" in r.stdout
    assert saved.is_file() and f"saved the exploration to {saved}" in r.stderr


def test_a_failing_pass_prints_the_short_form_the_api_gives_and_full_errors_the_rest(run, tmp_path):
    """The CLI's error is the API's short form (the op, its stage line, the user's line; no tool's frame),
    the same lines but the callers, which differ; --full-errors prints every frame and the runner's words."""
    import jax.numpy as jnp

    import workbench as wb

    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.tanh(x @ y)\n")
    args = ("stages", f"{src}:f", "--args", "f32[4,8],f32[8,3]", "--pipeline", "canonicalize,one-shot-bufferize")
    r = run(*args)
    assert r.returncode == 1, r.stderr
    printed = r.stderr.strip()
    assert printed.startswith("stage 'one-shot-bufferize#1' failed: op was not bufferized\n  pass: one-shot-bufferize"
                              "\n  op:   stablehlo.dot_general, line ")
    assert f"\n  from: {src}:4, in f\n          return jnp.tanh(x @ y)\n" in printed
    assert "loc(" not in printed and "Failed to parse pipeline" not in printed and "workbench/" not in printed
    spec = importlib.util.spec_from_file_location("m_cli_errors", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ex = wb.explore(module.f, jnp.ones((4, 8)), jnp.ones((8, 3)), pipeline="canonicalize,one-shot-bufferize")
    own = [ln for ln in str(ex.error).splitlines() if "called from" not in ln]
    assert [ln for ln in printed.splitlines() if "called from" not in ln] == own
    full = run(*args, "--full-errors").stderr
    assert own[0] in full and "Failed to parse pipeline" in full and "workbench/views/cli.py" in full


def test_patterns_and_pipelines_listings(run):
    r = run("patterns", "--search", "transpose_transpose")
    assert r.returncode == 0 and "transpose_transpose" in r.stdout
    r = run("pipelines")
    assert r.returncode == 0 and "only_enzyme" in r.stdout and "just_batch" in r.stdout


def test_a_misspelled_xla_pass_is_a_warning_that_names_the_closest(run):
    r = run("stages", "mlp", "--pipeline", "none", "--xla-disable", "algsimpp")  # XLA's passes alone matter here
    assert r.returncode == 0, r.stderr
    assert "hlo-workbench: warning: XLA did not report running a pass named 'algsimpp'" in r.stderr
    assert "Closest passes it reported: algsimp" in r.stderr and "build.py" not in r.stderr


@pytest.mark.subprocess
def test_python_dash_m_workbench_is_the_command_and_a_closed_pipe_is_quiet():
    r = subprocess.run(f"{sys.executable} -m workbench pipelines | head -1", shell=True, capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "name" in r.stdout and "Traceback" not in r.stderr, r.stderr


def test_the_panel_module_keeps_its_earlier_name():
    import workbench as wb
    import workbench.widgets

    assert wb.widgets.panel is wb.views.widgets.panel and wb.widgets.Panel is wb.views.widgets.Panel


def test_every_option_of_every_command_has_a_help_line():
    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            yield path, action

    missing = [(" ".join(path) or "hlo-workbench", action.option_strings or [action.dest])
               for path, action in walk(build_parser(), []) if not action.help or action.help == argparse.SUPPRESS]
    assert not missing, f"options without a help line: {missing}"
    commands = {p[0] for p, _ in walk(build_parser(), []) if p}
    assert commands == COMMANDS  # test_cli_contract.py's: every capability has its command


def test_patterns_groups_lists_the_groups_with_counts(capsys):
    import workbench as wb

    assert main(["patterns", "--groups"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["group", "patterns", "enabled_by_default"]
    counts = wb.patterns()["group"].value_counts()
    listed = {re.match(r"\s*(.+?)\s+(\d+)\s+\d+$", line).groups() for line in out[1:]}
    assert listed == {(g, str(n)) for g, n in counts.items()}
    with pytest.raises(SystemExit):
        main(["patterns", "--help"])
    assert "--groups" in capsys.readouterr().out


def test_patterns_that_match_nothing_say_so(capsys):
    assert main(["patterns", "--search", "zzzz"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no pattern matches --search 'zzzz'") and "Empty DataFrame" not in out
    assert main(["patterns", "--search", "zzzz", "--group", "pad"]) == 0
    assert capsys.readouterr().out.startswith("no pattern of group 'pad' matches --search 'zzzz'")
    assert main(["patterns", "--search", "TRANSPOSE_TRANSPOSE"]) == 0  # in any case
    assert "transpose_transpose" in capsys.readouterr().out


def test_an_unknown_pattern_group_lists_the_groups(capsys):
    import workbench as wb

    assert main(["patterns", "--group", "nosuchgroup"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Empty DataFrame" not in captured.err
    assert captured.err.startswith("hlo-workbench: unknown pattern group 'nosuchgroup': the groups (with their "
                                   "pattern counts) are 'base' (")
    for group, n in wb.patterns()["group"].value_counts().items():
        assert f"{group!r} ({n})" in captured.err
    assert main(["patterns", "--group", "transpose"]) == 2
    assert "did you mean 'transpose up', 'transpose down'?" in capsys.readouterr().err


def test_show_an_unknown_stage_lists_the_stages(run):
    r = run("show", "mlp", "--stage", "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    message = r.stderr.strip()
    assert message.startswith("hlo-workbench: unknown stage 'nope': the stages are jaxpr, stablehlo, "), message
    assert "enzyme-hlo-patterns#1" in message and "xla:optimized" in message
    r = run("show", "mlp", "--stage", "enzyme-hlo-patterns#9")
    assert r.returncode == 2 and "; did you mean 'enzyme-hlo-patterns#3'" in r.stderr


# -- diff, opt and open: the commands that work on files ------------------------------------------------


@pytest.fixture(scope="module")
def attention_files(tmp_path_factory, attention_ex):
    """The built-in attention example (tests/conftest.py's exploration): some of its stages written to files,
    and the exploration saved as a .hlox."""
    ex = attention_ex
    d = tmp_path_factory.mktemp("attention")
    files = {"dir": d, "ex": ex}
    for key, stage, with_locations in (("stablehlo", "stablehlo", False), ("stablehlo_loc", "stablehlo", True),
                                       ("inline", "inline#1", False), ("patterns", "enzyme-hlo-patterns#1", False),
                                       ("hlo_before", "xla:before_optimizations", False),
                                       ("hlo_optimized", "xla:optimized", False), ("jaxpr", "jaxpr", False)):
        s = ex[stage]
        path = d / f"{key}.{'hlo' if s.group == 'xla' else 'txt' if key == 'jaxpr' else 'mlir'}"
        path.write_text(s.text_with_locations if with_locations else s.text)
        files[key] = str(path)
    files["hlox"] = str(d / "attn.hlox")
    ex.save(files["hlox"])
    return files


def _summary_ops(stdout: str) -> dict[str, tuple[int, int]]:
    line = stdout.rstrip("\n").splitlines()[-1]
    assert line.startswith("summary: "), line
    return {op: (int(b), int(a)) for op, b, a in re.findall(r"([\w.-]+) (\d+) -> (\d+) \([+-]\d+\)", line)}


def test_diff_of_two_mlir_stages_shows_what_the_pass_did(run, attention_files):
    f, ex = attention_files, attention_files["ex"]
    r = run("diff", f["stablehlo"], f["inline"])
    assert r.returncode == 1 and r.stderr == "", r.stderr  # like diff(1): 1 when the modules differ
    lines = r.stdout.splitlines()
    assert lines[0] == f"--- {f['stablehlo']}" and lines[1] == f"+++ {f['inline']}" and lines[2].startswith("@@ ")
    # inline#1 inlined the calls: the call sites and the callees' definitions are deleted, no call added
    assert any(l.startswith("-") and "call @" in l for l in lines)
    assert any(l.startswith("-") and re.match(r"-\s*func\.func (private )?@", l) for l in lines)
    assert not any(l.startswith("+") and "call @" in l for l in lines)
    expected = ex.diff("stablehlo", "inline#1").ops_delta()
    ops = _summary_ops(r.stdout)
    assert ops["func.call"][1] == 0 and ops["func.call"][0] > 0
    assert ops == {op: (b, a) for op, b, a, _ in expected.itertuples(index=False)}
    removed = -expected["delta"][expected["delta"] < 0].sum()
    assert f"summary: {removed} ops removed" in r.stdout
    # a later stage: the Enzyme-JaX patterns removed broadcasts
    r = run("diff", f["inline"], f["patterns"], "-U", "0")
    assert r.returncode == 1, r.stderr
    b, a = _summary_ops(r.stdout)["stablehlo.broadcast_in_dim"]
    assert a < b and not any(l.startswith(" ") for l in r.stdout.splitlines())  # no context lines with -U 0


def test_diff_ignores_locations_and_value_names(run, attention_files, tmp_path):
    f = attention_files
    r = run("diff", f["stablehlo"], f["stablehlo_loc"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == (f"{f['stablehlo']} and {f['stablehlo_loc']} are the same module "
                                "(up to value names, numbering and locations)")
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(FOLDABLE)
    b.write_text(FOLDABLE.replace("%c ", "%lhs ").replace("%c,", "%lhs,").replace("%0", "%sum").replace("%1", "%7"))
    assert b.read_text() != a.read_text()
    assert run("diff", str(a), str(b)).returncode == 0
    b.write_text(FOLDABLE.replace("arith.addf", "arith.mulf"))
    r = run("diff", str(a), str(b))
    assert r.returncode == 1 and "\n-    %2 = arith.addf %0, %1 : tensor<2xf32>\n" in r.stdout  # names normalized
    assert "\n+    %2 = arith.mulf %0, %1 : tensor<2xf32>\n" in r.stdout
    assert r.stdout.endswith("\nsummary: 1 op removed, 1 added: arith.addf 1 -> 0 (-1), arith.mulf 0 -> 1 (+1); "
                             "1 line deleted, 1 inserted, 0 changed, 0 moved\n")


def test_diff_of_two_hlo_files(run, attention_files):
    f = attention_files
    r = run("diff", f["hlo_before"], f["hlo_optimized"])
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"--- {f['hlo_before']}" and lines[1] == f"+++ {f['hlo_optimized']}"
    assert any(l.startswith("+") and " fusion(" in l for l in lines)
    assert not any("metadata=" in l for l in lines)  # HLO metadata is ignored
    ops = _summary_ops(r.stdout)
    assert ops["fusion"][0] == 0 and ops["fusion"][1] > 0
    delta = f["ex"].diff("xla:before_optimizations", "xla:optimized").ops_delta()
    assert ops == {op: (b, a) for op, b, a, _ in delta.head(12).itertuples(index=False)}


def test_diff_of_different_kinds_or_missing_files_is_trouble(run, attention_files, tmp_path):
    f = attention_files
    r = run("diff", f["stablehlo"], f["hlo_optimized"])
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("hlo-workbench: cannot diff these files: ")
    assert f"{f['stablehlo']} is MLIR" in r.stderr and f"{f['hlo_optimized']} is XLA HLO text" in r.stderr
    py = tmp_path / "m.py"
    py.write_text("import jax\n\ndef f(x):\n    return x\n")
    r = run("diff", f["jaxpr"], str(py))
    assert r.returncode == 2 and f"{f['jaxpr']} is a jaxpr" in r.stderr and f"{py} is Python source" in r.stderr
    r = run("diff", f["stablehlo"], str(tmp_path / "missing.mlir"))
    assert r.returncode == 2 and r.stderr.strip() == f"hlo-workbench: no such file: {tmp_path / 'missing.mlir'}"


FOLDABLE = """\
module {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %c = arith.constant dense<1.0> : tensor<2xf32>
    %d = arith.constant dense<2.0> : tensor<2xf32>
    %0 = arith.addf %c, %d : tensor<2xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}
"""

# A lit-style test: its RUN line is what the test runs (with %s the file itself), its CHECK lines what FileCheck checks.
FILECHECK_TEST = """\
// RUN: hlo-workbench opt %s --pass-pipeline='builtin.module(canonicalize)' | filecheck %s
// CHECK-LABEL: func.func @main(
// CHECK-NOT: arith.addf
// CHECK: %[[SUM:.+]] = arith.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK-NEXT: %[[OUT:.+]] = stablehlo.multiply %arg0, %[[SUM]] : tensor<2xf32>
// CHECK-NEXT: return %[[OUT]] : tensor<2xf32>
// CHECK-NOT: loc(
""" + FOLDABLE


def _filecheck() -> str:
    """The FileCheck to run: the filecheck package (a FileCheck port) if installed, else LLVM's own
    (Debian's llvm-*-tools); neither is on PyPI's offline mirror here, so the test skips without them."""
    if importlib.util.find_spec("filecheck") is not None:
        return f"{shlex.quote(sys.executable)} -m filecheck"
    llvm = shutil.which("FileCheck") or next(iter(sorted(glob.glob("/usr/bin/FileCheck-*"), reverse=True)), None)
    if llvm is None:
        pytest.skip("no FileCheck: install the filecheck package or Debian's llvm-14-tools")
    return llvm


@pytest.mark.subprocess  # the RUN line, as lit's shell runs it: two commands and FileCheck
def test_opt_canonicalize_in_a_lit_filecheck_pipeline(tmp_path):
    test = tmp_path / "fold.mlir"
    test.write_text(FILECHECK_TEST)
    run_line = FILECHECK_TEST.splitlines()[0].removeprefix("// RUN: ")
    command = (run_line.replace("%s", shlex.quote(str(test))).replace("hlo-workbench", " ".join(map(shlex.quote, CLI)))
               .replace("filecheck", _filecheck()))
    r = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    # the same checks fail on the module as given (no pass run): the CHECK lines do check something
    unfolded = command.replace("--pass-pipeline='builtin.module(canonicalize)'", "")
    r = subprocess.run(["bash", "-o", "pipefail", "-c", unfolded], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr


def test_opt_prints_only_the_module_reads_stdin_and_writes_files(run, tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(FOLDABLE)
    r = run("opt", str(src), "--pass-pipeline=canonicalize,cse")  # a bare list
    assert r.returncode == 0, r.stderr
    # public again as the input wrote it: with no keyword, as mlir-opt prints it (Enzyme's runner made it private)
    assert r.stdout.startswith("module {\n  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n")
    assert "arith.addf" not in r.stdout and "arith.constant dense<3.000000e+00>" in r.stdout
    assert "loc(" not in r.stdout and "private" not in r.stdout
    r2 = run("opt", "-", "--pass-pipeline", "builtin.module(canonicalize,cse)", input=FOLDABLE)
    assert r2.returncode == 0 and r2.stdout == r.stdout, r2.stderr
    r = run("opt", "-", "--pass-pipeline=canonicalize", "--mlir-print-debuginfo", input=FOLDABLE)
    assert r.returncode == 0 and 'loc("-":5:10)' in r.stdout and "#loc" in r.stdout, r.stderr
    out = tmp_path / "out.mlir"
    r = run("opt", str(src), "--pass-pipeline=canonicalize", "-o", str(out))
    assert r.returncode == 0 and r.stdout == "" and "arith.constant dense<3.000000e+00>" in out.read_text()
    r = run("opt", str(src))  # no pipeline: parsed, verified and printed as it is
    assert r.returncode == 0 and "arith.addf" in r.stdout and "func.func @main" in r.stdout


@pytest.mark.parametrize("pipeline", ["builtin.module(canonicalize,no-such-pass)", "canonicalize,(cse",
                                      "canonicalize{max-iterations=x}"])
def test_opt_with_a_bad_pipeline_says_what_the_api_says(run, tmp_path, pipeline):
    import workbench as wb

    with pytest.raises(wb.PipelineSyntaxError) as api:
        wb.explore_text(FOLDABLE, pipeline=pipeline)
    src = tmp_path / "in.mlir"
    src.write_text(FOLDABLE)
    r = run("opt", str(src), f"--pass-pipeline={pipeline}")
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr == f"hlo-workbench: {api.value}\n"


def test_opt_refuses_a_module_that_does_not_parse_and_reports_a_failing_pass(run, attention_files, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(FOLDABLE.replace("arith.addf", "stablehlo.bogus"))
    r = run("opt", str(bad), "--pass-pipeline=canonicalize")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("hlo-workbench: the text does not parse as MLIR:\n  5:10: error: ") and "line 5:" in r.stderr
    r = run("opt", str(bad.with_name("missing.mlir")))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run("opt", attention_files["hlo_optimized"], "--pass-pipeline=canonicalize")
    assert r.returncode == 2 and "is XLA HLO text, not MLIR" in r.stderr
    # a pass that fails on this module (it has no @__transform_main): exit 1, its diagnostics on stderr
    r = run("opt", "-", "--pass-pipeline=transform-interpreter", input=FOLDABLE)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("hlo-workbench: stage 'opt' failed: could not find a nested named sequence")
    assert "__transform_main" in r.stderr and "\n  at:   line 1, column 1 of the module text as given" in r.stderr
    assert "Failed to parse pipeline" not in r.stderr  # enzyme-ad's wrapper of every failure: in --full-errors
    r = run("opt", "-", "--pass-pipeline=transform-interpreter", "--full-errors", input=FOLDABLE)
    assert r.returncode == 1 and "Failed to parse pipeline" in r.stderr and "the pipeline parsed" in r.stderr


def test_opt_runs_enzyme_passes(run, tmp_path):
    from workbench.pipeline.worker import enzyme_available

    if not enzyme_available():
        pytest.skip("enzyme-ad is not installed")
    src = tmp_path / "in.mlir"
    src.write_text(FOLDABLE.replace("arith.constant", "stablehlo.constant").replace("arith.addf", "stablehlo.add"))
    r = run("opt", str(src), "--pass-pipeline=builtin.module(canonicalize)")
    assert r.returncode == 0 and "stablehlo.add" in r.stdout  # canonicalize does not fold StableHLO's add here
    r = run("opt", str(src), "--pass-pipeline=builtin.module(canonicalize,enzyme-hlo-opt)")
    assert r.returncode == 0, r.stderr
    assert "stablehlo.add" not in r.stdout and "stablehlo.constant dense<3.000000e+00> : tensor<2xf32>" in r.stdout
    assert "func.func @main" in r.stdout and "private" not in r.stdout
    # the workbench's own step name: Enzyme-JaX's default pattern list, applied once
    r = run("opt", str(src), "--pass-pipeline=enzyme-hlo-patterns")
    assert r.returncode == 0 and "stablehlo.add" not in r.stdout and "dense<3.000000e+00>" in r.stdout, r.stderr


def test_open_prints_the_stage_table_and_stages_of_a_saved_exploration(run, attention_files, tmp_path):
    import workbench as wb
    from workbench.views.text import stage_table

    path = attention_files["hlox"]
    r = run("open", path)
    assert r.returncode == 0, r.stderr
    saved = wb.load(path)
    assert r.stdout == stage_table(saved) + "\n"
    rows = r.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == attention_files["ex"].names
    r = run("open", path, "--stage", "enzyme-hlo-patterns#1")
    assert r.returncode == 0 and r.stdout == attention_files["ex"]["enzyme-hlo-patterns#1"].text + "\n"
    r = run("open", path, "--stage", "enzyme-hlo-patterns#9")
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("hlo-workbench: unknown stage 'enzyme-hlo-patterns#9'; did you mean "
                               "'enzyme-hlo-patterns#3'")


def test_open_a_missing_or_broken_file_is_a_clear_message(run, attention_files, tmp_path):
    r = run("open", str(tmp_path / "nope.hlox"))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"hlo-workbench: {tmp_path / 'nope.hlox'}: ")
    cut = tmp_path / "cut.hlox"
    data = open(attention_files["hlox"], "rb").read()
    cut.write_bytes(data[: len(data) // 2])
    r = run("open", str(cut))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"hlo-workbench: {cut}: ")


def test_save_open_write_a_stage_diff_and_html_as_a_user_chains_them(run, tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.tanh((x @ y).T).sum(0)\n")
    saved = tmp_path / "f.hlox"
    r = run("stages", f"{src}:f", "--args", "f32[64,64],f32[64,32]", "--save", str(saved))
    assert r.returncode == 0 and saved.is_file() and f"saved the exploration to {saved}" in r.stderr, r.stderr
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    r = run("open", str(saved), "--stage", "stablehlo", "-o", str(a))
    assert r.returncode == 0 and f"to {a}" in r.stdout and "stablehlo.dot_general" in a.read_text()
    r = run("open", str(saved), "--stage", "enzyme-hlo-patterns#1", "-o", str(b))
    assert r.returncode == 0, r.stderr
    page = tmp_path / "d.html"
    r = run("diff", str(a), str(b), "--html", str(page))
    assert r.returncode == 1 and "summary:" in r.stdout and f"to {page}" in r.stdout, r.stderr
    text = page.read_text()
    assert 'id="wb-model"' in text and "stablehlo.transpose" in text and "https://" not in text
    import workbench as wb

    ex = wb.load(saved)
    assert ex.stage("stablehlo").text == a.read_text()


@pytest.mark.slow  # a report, its run and the HTML page
def test_report_html_writes_the_offline_report(run, tmp_path):
    out = tmp_path / "r.html"
    r = run("report", "mlp", "--html", str(out), "--save", str(tmp_path / "m.hlox"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"# HTML report: {out}" in r.stdout
    page = out.read_text()
    model = json.loads(re.search(r'<script type="application/json" id="wb-model">(.*?)</script>', page).group(1))
    assert "hlo-workbench report" in page and "xla:optimized" in [s["stage"] for s in model["stages"]]
    assert len(model["runs"]) == 1  # the report's components draw the view model it carries
    import workbench as wb

    assert wb.load(tmp_path / "m.hlox").runs  # the report command's run is saved with it


def test_opt_is_wb_opt_and_takes_a_lone_pass_name(run, tmp_path):
    import workbench as wb
    from workbench.ir.text import strip_locations

    src = tmp_path / "fold.mlir"
    src.write_text(FOLDABLE)
    api = strip_locations(wb.opt(FOLDABLE, "sccp"))
    assert "dense<3.000000e+00>" in api and "arith.addf" not in api  # sccp folds 1 + 2
    r = run("opt", str(src), "--pass-pipeline=sccp")
    assert r.returncode == 0 and r.stdout.strip() == api.strip(), r.stderr
    with pytest.raises(wb.PipelineSyntaxError, match="sccpp"):
        wb.opt(FOLDABLE, "sccpp")


def test_course_copies_the_notebooks_to_a_folder_and_never_overwrites_a_students_copy(cli, tmp_path):
    folder = tmp_path / "my-course"
    r = cli("course", folder, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    shipped = sorted(p.name for p in (pathlib.Path(ROOT) / "notebooks").iterdir() if p.suffix in (".ipynb", ".md"))
    assert sorted(p.name for p in folder.iterdir()) == shipped and "00_tour.ipynb" in shipped
    assert "jupyter lab" in r.stdout and f"{len(shipped)} written" in r.stdout
    mine = folder / "03_rewrite_patterns.ipynb"
    mine.write_text(mine.read_text().replace('"cells": [', '"cells": [{"cell_type": "markdown", "metadata": {}, '
                                                           '"source": ["my answer"]}, ', 1))
    again = cli("course", folder, cwd=tmp_path)
    assert again.returncode == 0 and "kept as they were" in again.stdout and "03_rewrite_patterns" in again.stdout
    assert "my answer" in mine.read_text()
    (tmp_path / "afile").write_text("")
    bad = cli("course", tmp_path / "afile")
    assert bad.returncode == 2 and "is a file, not a folder" in bad.stderr
    plain = cli("course", cwd=tmp_path)  # no folder given: ./hlo-workbench-course
    assert plain.returncode == 0, plain.stderr
    assert sorted(p.name for p in (tmp_path / "hlo-workbench-course").iterdir()) == shipped


@pytest.mark.subprocess
def test_the_installed_script_runs_as_a_user_runs_it(tmp_path):
    """`hlo-workbench` as installed in the environment's bin/ (the console script of pyproject.toml), from a
    folder that is not the checkout: its argv reaches main(), the stage table goes to stdout, and a warning
    goes to stderr in the command's own words (the in-process tests print warnings as Python would)."""
    console = shutil.which("hlo-workbench", path=os.path.dirname(sys.executable))
    assert console, f"no hlo-workbench script beside {sys.executable}: scripts/setup.sh installs the package"
    r = subprocess.run([console, "stages", "mlp", "--pipeline", "none", "--xla-disable", "algsimpp"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "stage" and "xla:optimized" in r.stdout and "stablehlo" in r.stdout
    assert "hlo-workbench: warning: XLA did not report running a pass named 'algsimpp'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
