"""Files the workbench leaves in the temporary folder: a worker's log goes when the worker ends, and the
XLA dump folder of a process killed mid-compile is removed by the next process's start -- never a live
process's. Each test runs in its own temporary folder (TMPDIR), so the counts are of its files only."""
from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref

import pytest

from tests.processes import children_running

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

# a compile an earlier test began would make its dump folder in the temporary folder a test points tempfile at
pytestmark = pytest.mark.usefixtures("xla_idle")

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A 300-layer MLP: XLA compiles it for seconds, so the dump folder is there long enough to catch.
_COMPILE_FOREVER = """
import jax, jax.numpy as jnp
from workbench.pipeline import xla

def mlp(x, w):
    for _ in range(300):
        x = jnp.tanh(x @ w + 1.0)
    return x

lowered = jax.jit(mlp).lower(jnp.ones((8, 16)), jnp.ones((16, 16)))
while True:
    xla.compile_lowered_with_dumps(lowered)
"""


def _python(code: str, tmp) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": _ROOT}
    return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _dump_folders(tmp) -> list[str]:
    return sorted(p for p in os.listdir(tmp) if p.startswith("hlo-workbench-xla-") and os.path.isdir(tmp / p))


def _files(folder) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:  # removed meanwhile: that compile finished
        return []


def test_a_worker_started_and_closed_leaves_no_log(tmp_path, monkeypatch):
    from workbench.pipeline.worker import Worker

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    worker = Worker()
    worker.call("parse_module", "module {\n}\n")
    assert worker.pid is not None
    assert len(os.listdir(tmp_path)) == 1  # its log, while it runs
    worker.close()
    assert os.listdir(tmp_path) == []


def test_a_worker_nobody_references_is_collected_with_its_process_and_log(tmp_path, monkeypatch):
    """Nothing (an atexit hook, say) keeps a Worker alive: once the last reference goes, so do its process
    (reaped, not a zombie) and its log."""
    from workbench.pipeline.worker import Worker

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = children_running("workbench.pipeline.worker")
    worker = Worker()
    worker.call("parse_module", "module {\n}\n")
    assert len(children_running("workbench.pipeline.worker") - before) == 1 and len(os.listdir(tmp_path)) == 1
    gone = weakref.ref(worker)
    del worker
    gc.collect()
    assert gone() is None
    assert children_running("workbench.pipeline.worker") - before == set()
    assert os.listdir(tmp_path) == []


def test_a_worker_log_stays_bounded(tmp_path, monkeypatch):
    from workbench.children import leftovers
    from workbench.pipeline.worker import Worker

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    worker = Worker()
    try:
        worker.call("parse_module", "module {\n}\n")
        with open(worker.log_path, "ab") as log:  # as a chatty pass would have written
            log.write(b"x" * (leftovers.LOG_LIMIT + 1))
        worker.call("parse_module", "module {\n}\n")
        assert os.path.getsize(worker.log_path) <= leftovers.LOG_LIMIT
    finally:
        worker.close()


def test_a_process_killed_mid_compile_leaves_a_folder_the_next_start_removes(tmp_path):
    child = _python(_COMPILE_FOREVER, tmp_path)
    try:
        for _ in range(600):  # until XLA has written dumps (or the child failed)
            if any(_files(tmp_path / d) for d in _dump_folders(tmp_path)) or child.poll() is not None:
                break
            time.sleep(0.1)
        assert child.poll() is None, child.stderr.read().decode()
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    left = _dump_folders(tmp_path)
    assert len(left) == 1 and _files(tmp_path / left[0])  # XLA's dumps, left behind by the kill

    nxt = _python("import workbench.pipeline.xla", tmp_path)
    assert nxt.wait(120) == 0, nxt.stderr.read().decode()
    assert _dump_folders(tmp_path) == []


def test_a_live_process_folders_are_kept_and_dead_ones_removed(tmp_path):
    from workbench.children import leftovers

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        for pid in (live.pid, dead.pid):
            (tmp_path / f"hlo-workbench-xla-{pid}-abc").mkdir()
            (tmp_path / f"hlo-workbench-xla-{pid}-abc" / "module.txt").write_text("HloModule m")
            (tmp_path / f"hlo-workbench-worker-{pid}-abc.log").write_text("log")
        (tmp_path / "someone-elses-123-file").write_text("not ours")
        removed = leftovers.sweep(str(tmp_path))
        assert removed == 2
        assert sorted(os.listdir(tmp_path)) == sorted(
            [f"hlo-workbench-xla-{live.pid}-abc", f"hlo-workbench-worker-{live.pid}-abc.log", "someone-elses-123-file"])
    finally:
        live.kill()
        live.wait()


_WORKER_THEN_WAIT = """
import os, signal, sys, time
{before}
from workbench.pipeline.worker import Worker
w = Worker()
w.call("parse_module", "module {{\\n}}\\n")
print("ready", len([n for n in os.listdir(os.environ["TMPDIR"]) if n.startswith("hlo-workbench-")]), flush=True)
{wait}
"""


def _ours(tmp) -> list[str]:
    return sorted(n for n in os.listdir(tmp) if n.startswith("hlo-workbench-"))


def _started(code: str, tmp) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": _ROOT}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("ready"), proc.stderr.read()
    return proc, int(line.split()[1])


def test_a_process_ended_by_sigterm_removes_its_logs_and_dies_of_the_signal(tmp_path):
    """``kill PID`` (a container stopping, a job scheduler): the worker's log goes with the process, which
    still ends as SIGTERM ends a process (its parent sees -SIGTERM), not by the next import's sweep."""
    proc, made = _started(_WORKER_THEN_WAIT.format(before="", wait="time.sleep(600)"), tmp_path)
    try:
        assert made >= 1 and _ours(tmp_path)  # the worker's log, while the process runs
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == -signal.SIGTERM, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    assert _ours(tmp_path) == []


def test_sigterm_goes_to_the_handler_that_was_there_first_and_a_live_process_keeps_its_files(tmp_path):
    """A program's own SIGTERM handler (installed before the workbench was imported) still gets the signal;
    while it keeps the process alive, the files in use stay, and its exit removes them."""
    before = "got = []\nsignal.signal(signal.SIGTERM, lambda s, f: got.append(s))"
    wait = ("while not got:\n    time.sleep(0.05)\n"
            "print('handled', len([n for n in os.listdir(os.environ['TMPDIR']) if n.startswith('hlo-workbench-')]),"
            " flush=True)\nsys.exit(7)")
    proc, made = _started(_WORKER_THEN_WAIT.format(before=before, wait=wait), tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 7, proc.stderr.read()
        assert proc.stdout.read().split() == ["handled", str(made)]  # its own handler ran; nothing was removed
    finally:
        proc.kill()
        proc.wait()
    assert _ours(tmp_path) == []  # the exit's clean-up
