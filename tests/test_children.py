"""workbench/children: the one way the workbench starts a child process and talks to it, the environment
every child gets, and the small interface a scan needs of a pool (an executor's included). The children
here are real ones (the pass worker's module); counts of processes and bytes, never seconds."""
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from workbench.children import Child, ChildDied, ChildFailed, DEVICE_COUNT_FLAG, child_env, leftovers
from workbench.children.env import ROOT
from tests.processes import children_running

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

EMPTY = "module {\n}\n"


def test_a_child_serves_its_method_table_restarts_and_ends_without_leftovers():
    before = children_running("workbench.pipeline.worker")
    child = Child("workbench.pipeline.worker", "worker")
    try:
        assert child.pid is None and child.log_path is None  # nothing before the first request
        assert child.call("parse_module", (EMPTY,), 120).payload == []
        with pytest.raises(ChildFailed, match="no method 'no_such_method'.*parse_module"):
            child.call("no_such_method", (), 120)
        first = child.pid
        assert first is not None and child.restarts == 0  # a method's error leaves the child alive
        child.restart()
        assert child.pid not in (None, first) and child.restarts == 1
        child.kill()
        assert not child.alive() and children_running("workbench.pipeline.worker") - before == set()
        assert child.call("parse_module", (EMPTY,), 120).payload == [] and child.restarts == 2
        assert child.sent == {"parse_module": 2, "no_such_method": 1}
        log = child.log_path
    finally:
        child.close()
    assert children_running("workbench.pipeline.worker") - before == set() and not os.path.exists(log)



def test_a_child_killed_by_kill_9_is_said_to_be_killed_by_signal_9_not_guessed_out_of_memory():
    """A SIGKILL comes from the out-of-memory killer or from someone's ``kill -9``; nothing here tells which,
    so the words say what is known and name both, instead of "probably the out-of-memory killer"."""
    import threading
    import time

    child = Child("workbench.pipeline.worker", "worker")
    try:
        child.call("parse_module", (EMPTY,), 120)
        # killed while a call waits on it (a child found dead between calls is started afresh without a word):
        # stopped first, so the call is surely sent to this process, then killed as a user's kill -9 does
        pid = child.pid
        os.kill(pid, signal.SIGSTOP)
        caught = {}

        def call():
            try:
                child.call("parse_module", (EMPTY,), 120)
            except ChildDied as e:
                caught["error"] = e

        waiting = threading.Thread(target=call)
        waiting.start()
        deadline = time.monotonic() + 60
        while child.sent["parse_module"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        waiting.join(120)
        died = caught.get("error")
        assert isinstance(died, ChildDied), died
        assert died.exitcode == -signal.SIGKILL
        assert str(died) == ("child process was killed by signal 9 (SIGKILL): the out-of-memory killer or "
                             "a user's kill -9")
        assert child.call("parse_module", (EMPTY,), 120).payload == [] and child.restarts == 1
    finally:
        child.close()

def test_a_child_started_soon_runs_its_imports_while_the_caller_goes_on_and_serves_the_first_request():
    child = Child("workbench.pipeline.worker", "worker")
    try:
        child.start_soon()  # returns at once: the process is spawned, its imports (enzyme-ad's) run there
        first = child.pid
        assert first is not None and child.sent == {}
        child.start_soon()  # one runs: nothing more
        assert child.pid == first
        assert child.call("parse_module", (EMPTY,), 120).payload == []  # waits for its word, then asks
        assert child.pid == first and child.restarts == 0 and child.sent == {"parse_module": 1}
        child.kill()
        child.start_soon()  # after a kill: a fresh one, counted as a restart
        assert child.pid not in (None, first) and child.restarts == 1
        assert child.call("parse_module", (EMPTY,), 120).payload == [] and child.stale == 0
    finally:
        child.close()


def test_the_pass_worker_runs_enzyme_ad_without_loading_jax():
    """The worker loads enzyme-ad's extension alone (workbench.pipeline.enzyme_runner): a pipeline run
    maps enzyme_call's library and none of jaxlib's (the package import would cost 2 s of CPU a start)."""
    from workbench.pipeline.worker import Worker

    w = Worker()
    try:
        out = w.call("run_pipeline", "module {\n}\n", "canonicalize", timeout=120).value
        assert out.text.startswith("module")
        with open(f"/proc/{w.pid}/maps") as f:
            mapped = {line.split()[-1] for line in f if "/" in line}
        assert any("enzyme_call" in m for m in mapped)
        assert not [m for m in mapped if "jaxlib" in m], "the worker loaded jaxlib"
    finally:
        w.close()


def test_loading_the_extension_starts_the_worker_without_waiting_for_it(monkeypatch):
    """``%load_ext workbench`` starts the shared worker in the background (its imports run beside the
    magics' imports and the user's next cell); ``warm_soon`` never raises."""
    from IPython.core.interactiveshell import InteractiveShell

    import workbench
    from workbench.pipeline import worker

    started = []
    monkeypatch.setattr(worker.Worker, "start_soon", lambda self: started.append(self))
    workbench.load_ipython_extension(InteractiveShell.instance())
    assert started == [worker.default_worker()]
    monkeypatch.setattr(worker.Worker, "start_soon", lambda self: (_ for _ in ()).throw(OSError("no fork")))
    assert worker.warm_soon() is False


def test_in_a_kernel_the_xla_toggle_child_starts_once_the_first_compile_is_done(monkeypatch):
    """Issue 28: in a notebook kernel an explore starts the child that compiles XLA pass toggles, after its own
    XLA compile (never slowing the compile the user waits for); in a script it does not."""
    import jax.numpy as jnp

    import workbench as wb
    from workbench import exploration
    from workbench.pipeline import xla_probe

    pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")
    seen, ready = [], threading.Event()

    def started():
        seen.append(ex.xla_ready())  # XLA's stages readable without waiting: the compile is over
        ready.set()

    monkeypatch.setattr(exploration, "warm_soon", started)
    monkeypatch.setattr(exploration, "in_a_kernel", lambda: False)
    ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(3))
    ex.xla_future().result(300)
    assert seen == []  # a script: no child started for toggles that may never come
    monkeypatch.setattr(exploration, "in_a_kernel", lambda: True)
    ex = wb.explore(lambda x: jnp.cos(x) * 3, jnp.ones(3))
    assert ready.wait(300) and seen == [True]
    monkeypatch.setattr(xla_probe._PROBER, "start_soon", lambda: (_ for _ in ()).throw(OSError("no fork")))
    xla_probe.warm_soon()  # never raises: the first toggle starts the child, or says why it cannot


def test_child_env_puts_this_workbench_first_and_rewrites_only_the_device_count():
    env = child_env(3, {"XLA_FLAGS": f"--xla_dump_to=/tmp/d  {DEVICE_COUNT_FLAG}=8", "PYTHONPATH": "/elsewhere"})
    assert env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/d {DEVICE_COUNT_FLAG}=3" and env["JAX_NUM_CPU_DEVICES"] == "3"
    assert env["PYTHONPATH"].split(os.pathsep) == [ROOT, "/elsewhere"]
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    plain = child_env(base={"XLA_FLAGS": "--xla_dump_to=/tmp/d"})
    assert plain["XLA_FLAGS"] == "--xla_dump_to=/tmp/d" and "JAX_NUM_CPU_DEVICES" not in plain
    assert "XLA_FLAGS" not in child_env(base={})


def test_no_child_opens_an_accelerator_unless_it_says_so():
    """A TPU allows one process: every child is CPU-only (JAX_PLATFORMS=cpu, whatever the parent's), except
    one that asks to keep the parent's (platforms=None: a GPU child compiling for its GPU)."""
    assert child_env(3, {"JAX_PLATFORMS": "tpu"})["JAX_PLATFORMS"] == "cpu"
    assert child_env(base={})["JAX_PLATFORMS"] == "cpu"
    assert child_env(base={"JAX_PLATFORMS": "cuda"}, platforms=None)["JAX_PLATFORMS"] == "cuda"
    assert "JAX_PLATFORMS" not in child_env(base={}, platforms=None)


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_a_log_tail_reads_a_bounded_end_of_the_file(tmp_path):
    path = tmp_path / "process0.err"
    with open(path, "wb") as f:
        for i in range(400_000):  # about 12 MB of output
            f.write(f"line {i} of a chatty process\n".encode())
    before = _bytes_read()
    tail = leftovers.tail(str(path), 3)
    read = _bytes_read() - before
    assert tail.splitlines() == [f"line {i} of a chatty process" for i in (399_997, 399_998, 399_999)]
    assert read < 4 * leftovers.TAIL_BYTES, read
    assert leftovers.tail(str(tmp_path / "missing.err"), 3) == ""


def test_an_executor_pool_is_a_pool_of_its_own_with_the_width_it_is_given():
    from workbench.pipeline.remote import ExecutorPool, resolve
    from workbench.pipeline.worker import Pool, WorkerPool, default_pool

    with ThreadPoolExecutor(2) as threads:
        pool = ExecutorPool(threads, width=2)
        assert isinstance(pool, Pool) and not isinstance(pool, WorkerPool)
        assert resolve(pool) is pool and pool.width == 2 and pool.depth == 4
        assert resolve(threads).width == (os.cpu_count() or 1)  # a bare executor does not say its width
        chunks = [["canonicalize"], ["cse"], ["canonicalize", "cse"]]
        there = pool.map("run_each", chunks, lambda c: (EMPTY, list(c), False))
        here = default_pool().map("run_each", chunks, lambda c: (EMPTY, list(c), False))
        assert sorted(o.pipeline for o in there.results) == sorted(o.pipeline for o in here.results)
        assert there.failures == () and len(there.results) == 4
        with pytest.raises(ValueError, match="width must be"):
            ExecutorPool(threads, width=0)


def test_only_ipykernels_shell_is_a_kernel(monkeypatch):
    """A test or a terminal with IPython's plain shell (and ipykernel merely imported) is no kernel: nothing
    is warmed there for toggles that may never come."""
    import IPython
    import ipykernel  # noqa: F401 -- imported, as a test process may have it
    from IPython.core.interactiveshell import InteractiveShell

    from workbench.children.env import in_a_kernel

    monkeypatch.setattr(IPython, "get_ipython", lambda: InteractiveShell.instance())
    assert not in_a_kernel()
    zmq = type("ZMQInteractiveShell", (), {"__module__": "ipykernel.zmqshell"})
    monkeypatch.setattr(IPython, "get_ipython", zmq)
    assert in_a_kernel()
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert not in_a_kernel()
