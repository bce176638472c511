"""The suite's tiers: the markers pyproject.toml declares are the ones tests/conftest.py puts on, the fast
tier's -m expression is the same in conftest, scripts/test.sh and the README, and conftest marks a test
from the fixtures it asks for and from its code, and fails a test that starts a process without a marker
(a small suite of its own, run by a pytest of its own)."""
import ast
import os
import pathlib
import subprocess
import sys
import textwrap
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def conftest(request):
    return request.config.pluginmanager.get_plugin(str(ROOT / "tests" / "conftest.py"))


def test_the_markers_and_the_fast_tier_are_named_alike_everywhere(conftest):
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert [m.split(":")[0] for m in options["markers"]] == ["slow", *conftest.RESOURCES]
    assert conftest.FAST == "not (browser or notebook or subprocess or cluster or wheel or gpu or tpu or slow)"
    script = (ROOT / "scripts" / "test.sh").read_text()
    runs = [line for line in script.splitlines() if line.lstrip().startswith("exec .venv/bin/python -m pytest")]
    assert f'FAST="{conftest.FAST}"' in script and len(runs) == 3 and all("--durations=25" in r for r in runs)
    readme = (ROOT / "README.md").read_text()
    assert "    scripts/test.sh\n" in readme and f'scripts/test.sh --fast      # = pytest -m "{conftest.FAST}"' in readme


def test_the_names_a_test_uses_include_those_of_the_test_folders_functions_it_calls(conftest):
    from tests import devices

    here = globals()  # the functions below are looked up by name, so that this test's own code names none
    assert "subprocess" in conftest.names_used(devices.run_on_cpu_devices)
    assert "subprocess" in conftest.names_used(here["_calls_a_starter"])  # through a function of this file
    assert "subprocess" not in conftest.names_used(here["_names_a_module_attribute"])
    assert conftest.names_used(os.getcwd) == set()  # not a function of the test folder


def test_every_long_test_conftest_names_is_a_test_of_its_file(conftest):
    for file in conftest.MINUTES:  # the order of the files: each still a file of the suite
        assert (ROOT / "tests" / file).is_file(), f"tests/conftest.py's MINUTES names {file}, which is gone"
    for file in set(conftest.SLOW) | set(conftest.SLOW_FIXTURES):
        path = ROOT / "tests" / file
        assert path.is_file(), f"tests/conftest.py's SLOW or SLOW_FIXTURES names {file}, which is gone"
        functions = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
        gone = sorted(n for n in conftest.SLOW.get(file, ()) if n != "*" and n.split("[")[0] not in functions)
        gone += sorted(n for n in conftest.SLOW_FIXTURES.get(file, ()) if n not in functions)
        assert not gone, f"tests/conftest.py names tests or fixtures that {file} no longer has: {gone}"


def _starts_one():
    return subprocess.run([sys.executable, "-c", "pass"], check=True)


def _calls_a_starter():
    return _starts_one()


def _names_a_module_attribute():
    from tests import devices

    return devices.run_on_cpu_devices  # an attribute of a module: the function is not followed


SAMPLE = '''
import subprocess
import sys

import pytest


def test_plain():
    pass


def test_on_8_devices(cpu_devices):
    pass


def test_in_the_browser(lab):
    pass


def helper():
    return subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_through_a_helper():
    helper()


@pytest.mark.subprocess
def test_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_hidden():  # names no "subprocess": only the audit hook sees the process it starts
    getattr(__import__("sub" + "process"), "run")([sys.executable, "-c", "pass"], check=True)


def test_the_workbench_starts_its_own():  # its pass worker: the workbench's process, not the test's
    import workbench as wb

    module = "module {\\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\\n    return %a : tensor<2xf32>\\n  }\\n}\\n"
    assert "func.func" in wb.opt(module, "canonicalize")
'''


@pytest.mark.subprocess  # a pytest of its own, in a fresh interpreter
def test_a_small_suite_is_marked_from_fixtures_and_code_and_an_unmarked_process_fails(conftest, tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "browser_pages.py"):
        (tests / name).write_text((ROOT / "tests" / name).read_text())
    (tests / "test_sample.py").write_text(textwrap.dedent(SAMPLE))
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n" + "".join(f"    {m}\n" for m in markers))

    def pytest_(*args):
        env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "400"}  # -r's lines in full
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "tests"],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)

    listed = pytest_("--collect-only", "-m", "subprocess")
    assert sorted(l.split("::")[1] for l in listed.stdout.splitlines() if "::" in l) == [
        "test_marked", "test_on_8_devices", "test_through_a_helper"], listed.stdout + listed.stderr
    listed = pytest_("--collect-only", "-m", "browser")
    assert [l.split("::")[1] for l in listed.stdout.splitlines() if "::" in l] == ["test_in_the_browser"]
    fast = pytest_("-m", conftest.FAST, "-rf")
    assert "1 failed, 2 passed, 4 deselected" in fast.stdout, fast.stdout + fast.stderr
    assert ("FAILED tests/test_sample.py::test_hidden - Failed: this test started a process itself "
            f"({sys.executable} -c pass) but has no resource marker") in fast.stdout, fast.stdout
