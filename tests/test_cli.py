"""The hlo-workbench command on real programs."""
import argparse
import os
import re
import subprocess
import sys

import pytest

from workbench.views.cli import build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = [sys.executable, "-m", "workbench"]


def run(*args):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_stages_with_shapes(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.tanh(x @ y).sum(0)\n")
    r = run("stages", f"{src}:f", "--args", "f32[64,64],f32[64,32]", "--pipeline", "only_enzyme",
            "--disable", "transpose_transpose")
    assert r.returncode == 0, r.stderr
    for name in ("jaxpr", "stablehlo", "enzyme-batch#1", "enzyme#1", "xla:optimized", "backend:llvm-ir"):
        assert name in r.stdout


def test_default_is_a_report_on_a_builtin_example():
    r = run()
    assert r.returncode == 0, r.stderr
    assert "enzyme-hlo-patterns#1" in r.stdout and "Final MLIR stage" in r.stdout
    assert "stablehlo.dot_general" in r.stdout
    # the header counts the stages the table below it shows
    header = re.match(r"# Exploration\('fn', pipeline='all', (\d+) stages: (\d+) trace/MLIR \+ (\d+) XLA/backend\)\n\n",
                      r.stdout)
    assert header, r.stdout[:300]
    total, early, late = map(int, header.groups())
    rows = r.stdout[header.end():].split("\n\n")[0].splitlines()[1:]  # the table, less its column names
    assert total == early + late == len(rows) and late == sum(" xla " in l or " backend " in l for l in rows)


def test_bad_input_is_a_clear_message():
    r = run("stages", "mlp", "--disable", "dot_transpos")
    assert r.returncode == 2 and "did you mean 'dot_transpose'" in r.stderr and "Traceback" not in r.stderr
    r = run("stages", "workbench/examples/mlp.py:nope")
    assert r.returncode != 0 and "has no function 'nope'" in r.stderr
    r = run("stages", "mlp", "--args", "f32[3,", )
    assert r.returncode != 0 and "DTYPE[DIMS]" in r.stderr


def test_patterns_and_pipelines_listings():
    r = run("patterns", "--search", "transpose_transpose")
    assert r.returncode == 0 and "transpose_transpose" in r.stdout
    r = run("pipelines")
    assert r.returncode == 0 and "only_enzyme" in r.stdout and "just_batch" in r.stdout


def test_a_misspelled_xla_pass_is_a_warning_that_names_the_closest():
    r = run("stages", "mlp", "--xla-disable", "algsimpp")
    assert r.returncode == 0, r.stderr
    assert "hlo-workbench: warning: XLA did not report running a pass named 'algsimpp'" in r.stderr
    assert "Closest passes it reported: algsimp" in r.stderr and "build.py" not in r.stderr


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
    assert commands == {"stages", "report", "show", "patterns", "pipelines"}


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


def test_show_an_unknown_stage_lists_the_stages():
    r = run("show", "mlp", "--stage", "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    message = r.stderr.strip()
    assert message.startswith("hlo-workbench: unknown stage 'nope': the stages are jaxpr, stablehlo, "), message
    assert "enzyme-hlo-patterns#1" in message and "xla:optimized" in message
    r = run("show", "mlp", "--stage", "enzyme-hlo-patterns#9")
    assert r.returncode == 2 and "; did you mean 'enzyme-hlo-patterns#3'" in r.stderr
