"""The hlo-workbench command as the command-line tests run it: as a user types it, in a fresh process with no
terminal (``command``), on a corpus program written as a user's file (``corpus_target``), its --json document
read and validated against the schema the package ships (``document``), and a command that could not do its
work read as one line on stderr (``could_not``)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "CORPUS_TARGET", "NAN_FED", "command", "corpus_target", "could_not", "document", "user_module"]

ROOT = Path(__file__).resolve().parents[1]

# a corpus program as a command-line target: the function and its arguments as the corpus builds them
CORPUS_TARGET = """\
from tests.corpus import program

_inst = program({name!r}).build()
fn = _inst.fn


def args():
    return _inst.args
"""


# test_drift's planted miscompile, as a user's file: no_nan lets the patterns fold the jnp.where away, so the NaN
# fed in comes out (drift finds it, bisect blames no_nan_compare_simplify, run's check fails)
NAN_FED = """\
import jax.numpy as jnp


def fn(x, w):
    x = jnp.where(jnp.isnan(x), 0.0, x)
    h = jnp.tanh(x @ w)
    return (h * 2.0).sum(0)


def args():
    return jnp.arange(32.0).reshape(4, 8).at[1, 2].set(jnp.nan), jnp.ones((8, 3)) / 8
"""


def user_module(folder, name: str, text: str):
    """Write a user's file ``name``.py in ``folder`` and import it here as well: the same function from the same
    file, so the source lines the Python API reports are those the command reports."""
    import importlib.util

    path = Path(folder) / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"cli_user_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_target(folder, name: str, file: str | None = None) -> str:
    """Write corpus program ``name`` as a user's file in ``folder`` (``file``, default ``name.py``); its TARGET."""
    file = file or f"{name}.py"
    (Path(folder) / file).write_text(CORPUS_TARGET.format(name=name))
    return f"{file}:fn"


def command(*args, cwd=ROOT, installed: bool = False) -> subprocess.CompletedProcess:
    """``python -m workbench ARGS`` (``installed``: the console script beside this interpreter) in ``cwd``, stdin
    closed, no terminal; the checkout on PYTHONPATH, for a target that imports tests.corpus."""
    if installed:
        console = shutil.which("hlo-workbench", path=os.path.dirname(sys.executable))
        assert console, f"no hlo-workbench script beside {sys.executable}: scripts/setup.sh installs the package"
        argv = [console]
    else:
        argv = [sys.executable, "-m", "workbench"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600, stdin=subprocess.DEVNULL)


def document(r: subprocess.CompletedProcess, status: int) -> dict:
    """The one JSON document on stdout (nothing else there), valid for its command's schema, with exit ``status``."""
    from workbench.views.cli import validate_document

    assert r.returncode == status, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    validate_document(doc)
    assert doc["schema"] == 1 and doc["exit"] == status
    return doc


def could_not(r: subprocess.CompletedProcess, command_name: str | None = None) -> str:
    """Exit status 2 with one line on stderr saying why (no traceback); with ``command_name`` (a run with --json)
    the error document on stdout says the same. The line, without its ``hlo-workbench: `` prefix."""
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip()
    assert line.startswith("hlo-workbench: ") and "\n" not in line, r.stderr
    reason = line[len("hlo-workbench: "):]
    if command_name is not None:
        doc = document(r, 2)
        assert doc["command"] == command_name and doc["error"]["message"] == reason
    return reason
