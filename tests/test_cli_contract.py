"""What every hlo-workbench command promises, whichever it is: --json with a schema the package ships, the same
exit statuses (0 done, 1 found, 2 could not, with one line on stderr saying why), that status's meaning in its
--help, and ``python -m workbench`` being the installed script. Each command's own facts are tested in its file
(test_cli_search.py, test_cli_rewrite.py, test_cli_backend.py, test_cli_files_json.py, test_cli_json.py,
test_cli_memory.py)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from workbench.views.cli import build_parser, main
from workbench.views.cli import json_schema, validate_document

ROOT = Path(__file__).resolve().parents[1]

# every capability a user reaches in Python has its command (issue 50), and nothing else hides there
COMMANDS = {"stages", "report", "show", "profile", "patterns", "pipelines", "diff", "opt", "open", "course", "check",
            "memory", "drift", "bisect", "reduce", "applicable", "step", "edit", "backend", "schema",
            "run", "cost", "graph", "reproducer"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_is_there_and_takes_json():
    commands = _commands()
    assert set(commands) == COMMANDS
    lacking = [name for name, sp in commands.items()
               if not any("--json" in a.option_strings for a in sp._actions)]
    assert not lacking, f"commands without --json: {lacking}"


def test_every_command_has_a_valid_json_schema_that_main_prints():
    for name in sorted(COMMANDS):
        schema = json_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)  # a schema that is itself well formed
        done, trouble = schema["oneOf"]
        assert done["properties"]["command"] == {"const": name} and done["properties"]["schema"]["const"] == 1
        assert {"schema", "command", "exit"} <= set(done["required"]) and trouble["properties"]["exit"] == {"const": 2}
        # a document cannot be read as both forms: an error document never passes as a result
        jsonschema.validate({"schema": 1, "command": name, "exit": 2, "error": {"type": "X", "message": "m"}},
                            schema)


def test_every_help_says_what_the_exit_statuses_mean(capsys):
    for name in sorted(COMMANDS):
        with pytest.raises(SystemExit) as e:
            main([name, "--help"])
        assert e.value.code == 0
        text = capsys.readouterr().out
        assert "exit status (the same for every command):" in text, name
        assert "  1  found" in text and "  2  could not do it" in text, name
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "  0  done, nothing found" in capsys.readouterr().out


def test_schema_prints_one_commands_json_schema_and_an_unknown_one_is_status_2(cli):
    r = cli("schema", "drift")
    assert r.returncode == 0 and json.loads(r.stdout) == json_schema("drift")
    r = cli("schema")
    assert r.returncode == 0 and all(name in r.stdout for name in COMMANDS)
    r = cli("schema", "drfit", "--json")
    assert r.returncode == 2 and "unknown command with --json 'drfit'; did you mean 'drift'" in r.stderr
    doc = json.loads(r.stdout)
    validate_document(doc)
    assert doc["error"]["type"] == "UnknownNameError"


def test_a_target_that_does_not_load_is_status_2_with_one_line_and_an_error_document(cli, tmp_path):
    (tmp_path / "broken.py").write_text("import jax\n\ndef f(x):\n    return x\n\nraise RuntimeError('half written')\n")
    for args in (["stages", "broken.py:f", "--args", "f32[3]"], ["stages", "no_such_example"],
                 ["memory", "mlp", "--args", "f32[3,"], ["stages", "missing.hlox"]):
        r = cli(*args, "--json", cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("hlo-workbench: ") and "Traceback" not in r.stderr, args
        doc = json.loads(r.stdout)
        validate_document(doc)
        assert doc["command"] == args[0] and doc["error"]["message"] == r.stderr.strip()[len("hlo-workbench: "):]
    r = cli("stages", "broken.py:f", "--args", "f32[3]", cwd=tmp_path)
    assert "importing broken.py failed: RuntimeError: half written" in r.stderr and not r.stdout


def test_a_bug_of_ours_is_status_2_its_reason_first_then_the_traceback(cli, monkeypatch):
    """An exception no command meant to raise must not exit 1 (which says "found" to a CI job): it is status 2,
    one line saying what, and the traceback after it for a bug report."""
    import workbench.views.cli as cli_module

    def broken(ns):
        raise TypeError("an internal slip")

    monkeypatch.setattr(cli_module, "cmd_pipelines", broken)
    r = cli("pipelines", "--json")
    assert r.returncode == 2
    first, *rest = r.stderr.splitlines()
    assert first == "hlo-workbench: internal error: TypeError: an internal slip"
    assert "Traceback (most recent call last)" in "\n".join(rest)
    assert json.loads(r.stdout)["error"] == {"type": "InternalError",
                                             "message": "internal error: TypeError: an internal slip"}


@pytest.mark.subprocess
def test_python_dash_m_is_the_installed_script():
    console = shutil.which("hlo-workbench", path=os.path.dirname(sys.executable))
    assert console, f"no hlo-workbench script beside {sys.executable}: scripts/setup.sh installs the package"
    outs = []
    for argv in ([console], [sys.executable, "-m", "workbench"]):
        runs = [subprocess.run(argv + args, capture_output=True, text=True, cwd=ROOT, timeout=300,
                               stdin=subprocess.DEVNULL) for args in (["--help"], ["schema", "--json"],
                                                                      ["stages", "nope", "--json"])]
        outs.append([(r.returncode, r.stdout, r.stderr) for r in runs])
    assert outs[0] == outs[1]
    assert not any("\x1b[" in out + err for _, out, err in outs[0])  # no colour: neither stream is a terminal
    assert [code for code, _, _ in outs[0]] == [0, 0, 2]
    listing = json.loads(outs[0][1][1])
    validate_document(listing)
    assert set(listing["commands"]) == COMMANDS
