"""scripts/start.sh as a user runs it where it used to stop short: without a terminal (nohup, an IDE, a
background job) it says in one line why it prints the report, and prints it; ``--lab`` starts JupyterLab
there anyway, with the user's own arguments passed through, and as root (a container) with the
``--allow-root`` JupyterLab refuses to start without. Set-up has run (the suite's command runs it first),
so start.sh's own set-up call finds everything in place."""
import os
import pathlib
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
START = str(ROOT / "scripts" / "start.sh")

pytestmark = pytest.mark.subprocess


def _ready():
    if not (ROOT / ".venv" / ".hlo-workbench-installed").exists():
        pytest.skip("scripts/setup.sh has not run in this checkout (start.sh would install everything first)")


def test_without_a_terminal_it_says_why_and_prints_the_report():
    _ready()
    out = subprocess.run(["bash", START], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
                         cwd="/")
    assert out.returncode == 0, out.stderr[-3000:]
    first = out.stdout.splitlines()[0]
    assert first == "[start] no terminal: printing the report; `scripts/start.sh --lab` starts JupyterLab"
    assert "# Exploration(" in out.stdout and "Final MLIR stage" in out.stdout, out.stdout[-2000:]
    assert "Editable installation" not in out.stdout + out.stderr  # set-up's noise stays hidden


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_answers(args: list[str], port: int, token: str) -> str:
    """Run ``start.sh --lab ARGS``, wait until JupyterLab answers on 127.0.0.1:``port``, stop it; its output."""
    proc = subprocess.Popen(["bash", START, "--lab", *args, f"--IdentityProvider.token={token}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline, answer = time.monotonic() + 300, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab/api/settings?token={token}", timeout=5) as r:
                    answer = r.status
                    break
            except OSError:
                time.sleep(1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        log = proc.communicate(timeout=60)[0]
    assert answer == 200, f"JupyterLab did not answer on port {port} (exit {proc.poll()}):\n{log[-3000:]}"
    return log


def test_lab_starts_jupyterlab_without_a_terminal_with_the_users_arguments_and_as_root():
    _ready()
    port = _free_port()
    log = _lab_answers([f"--port={port}"], port, "start-sh-test")
    assert "no terminal" not in log  # --lab was asked for: no report
    if os.geteuid() == 0:
        assert "[start] running as root: JupyterLab gets --allow-root" in log


@pytest.mark.parametrize("form", ["--ip=ADDR --port=PORT", "--ip ADDR --port PORT"])
def test_the_users_ip_replaces_the_default_in_either_form(form):
    """The README's ``scripts/start.sh --lab --ip=0.0.0.0 --port=8899``: the user's address is the one
    JupyterLab gets (it refused two: "ip only accepts one value, got 2"), written with ``=`` or not."""
    _ready()
    port = _free_port()
    args = form.replace("ADDR", "127.0.0.1").replace("PORT", str(port)).split()
    log = _lab_answers(args, port, "start-sh-ip")
    assert "only accepts one value" not in log


def test_help_prints_the_usage_and_sets_nothing_up(tmp_path):
    """``--help`` (and ``-h``) print the script's header and exit 0 before any set-up: run from a copy of the
    script in a folder with no scripts/setup.sh and no .venv, set-up would fail, and nothing is started."""
    (tmp_path / "scripts").mkdir()
    copy = tmp_path / "scripts" / "start.sh"
    copy.write_text(pathlib.Path(START).read_text())
    for flag in ("--help", "-h"):
        out = subprocess.run(["bash", str(copy), "--lab", flag], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("Set up, then run the main job"), out.stdout
        assert "scripts/start.sh --lab [ARGS]" in out.stdout and "--ip" in out.stdout
        assert "#" not in out.stdout.splitlines()[0] and "set -euo" not in out.stdout
        assert "[setup]" not in out.stdout + out.stderr and "[start]" not in out.stdout + out.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["scripts", "start.sh"]  # nothing was made
