"""A Ctrl-C or a killed child never makes a later answer wrong.

A KeyboardInterrupt while the workbench waits for its pass worker used to leave that reply unread, so every
later request got the previous request's answer (a ``wb.opt`` of a small module came back as the interrupted
program's module, and that wrong step was cached). Requests and replies now carry an id; an interrupted
request's worker is replaced, and a reply to another request is never returned. A probe child killed by
SIGKILL (what the OOM killer does) is reported as killed, not as XLA refusing the disabled passes, and that
verdict is not kept.

The interrupts are real ones: SIGALRM's handler raises KeyboardInterrupt, as Ctrl-C's does, and SIGINT is
Ctrl-C's own signal. Most are placed by counting the requests sent to the workers (the k-th request under
way), not by time, so they land where they are aimed however loaded the machine is; tests count where they
landed and what came back.
"""
import os
import signal
import threading
import time
import traceback

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.children import Request
from workbench.pipeline import worker as worker_mod
from workbench.pipeline import xla_probe
from workbench.pipeline.runner import default_runner
from tests.processes import children_running

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def big(x, w):  # unrolled: a module of a few thousand lines, whose passes keep the worker busy a while
    for i in range(150):
        x = jnp.tanh(x @ w) * (1.0 + i / 150) + jnp.sin(x)
    return x.sum()


def small(x):
    return jnp.sin(x) * 2 + 1


BIG_ARGS = (jnp.ones((4, 4)), jnp.eye(4) * 0.5)
SMALL_ARG = jnp.arange(4.0)
SMALL_TEXT = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    %1 = stablehlo.add %0, %0 : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""


def _new_children(since: set[int]) -> set[int]:
    """The worker processes (and zombies) that appeared since ``since`` was taken: workers that earlier
    tests in this process still hold open are not this test's."""
    return set(children_running("workbench.pipeline.worker")) - since


def _alarm(seconds: float):
    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def _disarm(previous) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def _in_worker_call(tb) -> bool:  # waiting for the worker: one request, or a run of steps sent ahead
    return any(f.name in ("call", "call_ahead") and f.filename.endswith(os.path.join("pipeline", "worker.py"))
               for f in traceback.extract_tb(tb))


def _stages(ex) -> list[tuple[str, str]]:
    return [(s.name, s.text) for s in ex.pipeline_stages]


def _requests() -> int:
    """The pipeline requests sent so far to the pass worker and to the pool's workers."""
    n = default_runner().worker.executions
    return n + (sum(w.executions for w in worker_mod._POOL.workers) if worker_mod._POOL is not None else 0)


class _Interrupter:
    """Sends ``signum`` to this process once ``k`` more pipeline requests than now have gone to the workers: the
    main thread is then waiting for a worker's answer (a request of the big module takes tens of milliseconds,
    and the watch looks every half millisecond), so the interrupt lands inside that call whatever the load.
    ``k = 0``: at once, before any request (inside the tracing that comes first)."""

    def __init__(self, signum: int, k: int, armed: list["_Interrupter"]):
        self.signum, self.k, self.base = signum, k, _requests()
        self.armed = threading.Event()
        self.armed.set()
        armed[:] = [self]  # where the signal's handler looks, before the signal can come
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while self.armed.is_set() and _requests() < self.base + self.k:
            time.sleep(0.0005)
        if self.armed.is_set():
            os.kill(os.getpid(), self.signum)

    def stop(self) -> None:
        self.armed.clear()
        self.thread.join(60)


def _raising(signum: int, armed: list[_Interrupter]):
    """Install a handler of ``signum`` that raises KeyboardInterrupt, as Ctrl-C's does, only while the
    interrupter in ``armed`` is armed (a signal arriving after its call returned must not stop the test)."""
    def handler(sig, frame):
        if armed and armed[0].armed.is_set():
            armed[0].armed.clear()
            raise KeyboardInterrupt

    return signal.signal(signum, handler)


def test_an_interrupted_explore_leaves_every_later_answer_right():
    earlier = set(children_running("workbench.pipeline.worker"))
    runner = default_runner()
    want_opt = wb.opt(SMALL_TEXT, "canonicalize")
    want_small = wb.explore(small, SMALL_ARG)
    assert want_small.error is None
    want_stages, want_out = _stages(want_small), want_small.run(repeat=1).outputs
    whole_big = wb.explore(big, *BIG_ARGS)
    assert whole_big.error is None
    runner.clear()
    before = _requests()
    wb.explore(big, *BIG_ARGS)
    steps = _requests() - before  # the worker requests of one explore of the big program
    assert steps >= 4
    whole_big.run(repeat=3)  # compiled: the next run takes what each of the loop's runs takes
    t = time.perf_counter()
    whole_big.run(repeat=3)
    run_seconds = time.perf_counter() - t  # only to place the run's interrupt, never asserted

    # Ctrl-C in the tracing before any request, at the explore's first request, in the middle of its requests,
    # and in the middle of a run; after each, every answer is what it was before any interrupt
    landed_in_call = landed_elsewhere = 0
    armed: list[_Interrupter] = []
    previous = _raising(signal.SIGALRM, armed)
    try:
        for what, k in [("explore", 0), ("explore", 1), ("explore", steps // 2), ("run", None)]:
            runner.clear()  # every step runs in the worker again
            try:  # armed inside the try: an interrupt at once still lands in it
                _Interrupter(signal.SIGALRM, 10**9 if k is None else k, armed)
                if k is None:  # the run's: by time, wherever it lands
                    signal.setitimer(signal.ITIMER_REAL, run_seconds / 2)
                wb.explore(big, *BIG_ARGS) if what == "explore" else whole_big.run(repeat=3)
            except KeyboardInterrupt as e:
                if _in_worker_call(e.__traceback__):
                    landed_in_call += 1
                else:
                    landed_elsewhere += 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                for a in armed:
                    a.stop()
            runner.clear()
            before = default_runner().worker.executions
            assert wb.opt(SMALL_TEXT, "canonicalize") == want_opt
            ex = wb.explore(small, SMALL_ARG)
            assert default_runner().worker.executions > before  # the answers came from the worker, not a cache
            assert ex.error is None and _stages(ex) == want_stages
            got = ex.run(repeat=1).outputs
            assert len(got) == len(want_out) and all((a == b).all() for a, b in zip(got, want_out))
            allowed = {default_runner().worker.pid}
            if worker_mod._POOL is not None:
                allowed |= {w.pid for w in worker_mod._POOL.workers}
            assert _new_children(earlier) <= allowed
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert landed_in_call >= 2 and landed_elsewhere >= 1  # two hit requests waiting for the worker, one did not


def test_a_stale_reply_is_discarded():
    """A reply to a request nobody waits for any more (its caller was interrupted) is never the answer
    to the next request: a request is planted on the worker's connection with an id no call waits for."""
    w = worker_mod.Worker()
    try:
        want = w.call("run_pipeline", SMALL_TEXT, "canonicalize").value.text
        other = SMALL_TEXT.replace("@m", "@other").replace("stablehlo.add %0, %0", "stablehlo.multiply %0, %0")
        w._child._held.process.conn.send(Request(-1, "run_pipeline", (other, "canonicalize")))
        assert w.call("run_pipeline", SMALL_TEXT, "canonicalize").value.text == want
        assert w.call("run_pipeline", SMALL_TEXT, "canonicalize").value.text == want
        assert w.restarts == 0  # the stale reply was read and dropped, the worker kept
    finally:
        w.close()


def test_an_interrupted_request_leaves_no_process_behind():
    earlier = set(children_running("workbench.pipeline.worker"))
    w = worker_mod.Worker()
    text = wb.explore(big, *BIG_ARGS).stage("stablehlo").text_with_locations
    slow = ",".join(["canonicalize", "cse"] * 40)  # some tenths of a second on it
    try:
        w.call("parse_module", SMALL_TEXT)
        landed = 0
        for _ in range(3):
            previous = _alarm(0.05)
            try:
                w.call("run_pipeline", text, slow)
            except KeyboardInterrupt as e:
                landed += _in_worker_call(e.__traceback__)
            finally:
                _disarm(previous)
            out = w.call("run_pipeline", SMALL_TEXT, "canonicalize").value.text
            assert "@m" in out and "@main" in out and len(out) < 2000
            assert _new_children(earlier) <= {w.pid, default_runner().worker.pid}
        assert landed >= 1
    finally:
        w.close()


def noise(k):
    return jax.random.normal(k, (64,)) * 2.0


def _cpu_ticks(pid: int) -> int:
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(stat[11]) + int(stat[12])


def test_a_probe_child_killed_by_sigkill_is_not_a_verdict():
    ex = wb.explore(noise, jax.random.PRNGKey(0))
    assert ex.error is None
    assert ex.with_xla(disable=["algsimp"]).error is None  # the probe child is started and idle
    pid = xla_probe._PROBER.pid
    idle = _cpu_ticks(pid)
    killed = []

    def kill_when_busy():  # the child works only on a request: kill it as soon as it starts compiling
        while True:
            try:
                if _cpu_ticks(pid) > idle:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            except OSError:
                return

    watcher = threading.Thread(target=kill_when_busy, daemon=True)
    watcher.start()
    bad = ex.with_xla(disable=["cse"])
    watcher.join(60)
    assert killed == [pid]
    assert bad.error is not None and bad.error.stage == "xla:compile"
    message = str(bad.error)
    assert "killed" in message and "out of memory" in message, message
    assert "needs some of those passes" not in message and "aborts" not in message
    again = ex.with_xla(disable=["cse"])  # probed again, in a fresh child: it compiles
    assert again.error is None and "xla:optimized" in again.names
    assert xla_probe._PROBER.pid != pid


def test_a_pass_worker_killed_by_sigkill_is_said_to_be_killed_not_a_crashing_pass():
    from workbench.errors import StageError
    from workbench.pipeline.runner import StepRunner

    text = wb.explore(big, *BIG_ARGS).stage("stablehlo").text_with_locations
    w = worker_mod.Worker()
    runner = StepRunner(w)
    try:
        w.call("parse_module", SMALL_TEXT)  # started and idle
        pid = w.pid
        idle = _cpu_ticks(pid)
        killed = []

        def kill_when_busy():
            while True:
                try:
                    if _cpu_ticks(pid) > idle:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                        return
                except OSError:
                    return

        watcher = threading.Thread(target=kill_when_busy, daemon=True)
        watcher.start()
        with pytest.raises(StageError) as caught:
            runner.run("slow", text, ",".join(["canonicalize", "cse"] * 40))
        watcher.join(60)
        assert killed == [pid]
        assert "killed by signal 9 (SIGKILL): the out-of-memory killer or a user's kill -9" in str(caught.value)
        assert "crashed" not in str(caught.value)
        assert runner.run("small", SMALL_TEXT, "canonicalize").cached is False  # nothing of it was kept
        assert w.restarts == 1
    finally:
        w.close()


def test_an_interrupted_pool_scan_ends_its_busy_requests_and_the_pool_answers_right_after():
    """Ctrl-C reaches only the thread that waits on a pool's scan; the requests under way in its threads
    end with their worker processes, and each worker answers its next request with its own answer."""
    text = wb.explore(big, *BIG_ARGS).stage("stablehlo").text_with_locations
    slow = ",".join(["canonicalize", "cse"] * 40)
    earlier = set(children_running("workbench.pipeline.worker"))
    pool = worker_mod.WorkerPool(2)
    try:
        want = pool.workers[1].call("run_pipeline", SMALL_TEXT, "canonicalize").value.text
        restarts = sum(w.restarts for w in pool.workers)
        idle = _cpu_ticks(pool.workers[1].pid)
        scanning = threading.Event()

        def handler(signum, frame):
            if scanning.is_set():  # only inside the scan: a late signal must not interrupt the test itself
                raise KeyboardInterrupt

        def interrupt_when_busy():  # Ctrl-C once a pass is under way, however loaded the machine is
            while scanning.wait(60) and _cpu_ticks(pool.workers[1].pid) <= idle:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGALRM)

        previous = signal.signal(signal.SIGALRM, handler)
        watcher = threading.Thread(target=interrupt_when_busy, daemon=True)
        try:
            scanning.set()
            watcher.start()
            with pytest.raises(KeyboardInterrupt):
                pool.map("run_each", [[slow]] * 8, lambda chunk: (text, list(chunk), False))
        finally:
            scanning.clear()
            watcher.join(60)
            signal.signal(signal.SIGALRM, previous)
        for w in pool.workers:
            assert w.call("run_pipeline", SMALL_TEXT, "canonicalize").value.text == want
        assert sum(w.restarts for w in pool.workers) > restarts  # the requests under way were ended, not waited for
        assert _new_children(earlier) <= {w.pid for w in pool.workers}
    finally:
        pool.workers[1].close()


def chain(x, y):  # the patterns remove its transposes: a scan finds them, a bisect needs two of them
    for _ in range(40):
        x = jnp.tanh(jnp.dot(x.T, y.T).T) + jnp.sin(x)
    return x


CHAIN_ARGS = (jnp.ones((4, 4)), jnp.eye(4))
NO_TRANSPOSE = wb.op_count_at_most("stablehlo.transpose", 0)

_FRESH = """
import json, sys
import jax.numpy as jnp
import workbench as wb
from tests.test_interrupts import CHAIN_ARGS, NO_TRANSPOSE, SMALL_ARG, chain, small
ex = wb.explore(chain, *CHAIN_ARGS)
print(json.dumps({"applicable": ex.applicable(), "bisect": ex.bisect(NO_TRANSPOSE).patterns,
                  "small": [[s.name, s.text] for s in wb.explore(small, SMALL_ARG).pipeline_stages]}))
"""


def _fresh_answers() -> dict:
    """What a fresh Python process answers: the reference every interrupted session is held to."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ctrl_c_in_applicable_and_bisect_leaves_every_later_answer_as_a_fresh_process_gives_it():
    """A real SIGINT (Python's own handler raises KeyboardInterrupt in the main thread) a third and two thirds
    of the way through the worker requests of ``ex.applicable()`` and of ``ex.bisect(...)``: afterwards the
    scan, the bisect and a small exploration answer exactly what a fresh process answers, and no worker process
    is left over from the interrupted call."""
    fresh = _fresh_answers()
    earlier = set(children_running("workbench.pipeline.worker"))
    ex = wb.explore(chain, *CHAIN_ARGS)
    assert ex.applicable() == fresh["applicable"]  # the pool is up: what follows counts the work, not its start
    requests = {}
    for what in ("applicable", "bisect"):
        default_runner().clear()
        before = _requests()
        ex.applicable() if what == "applicable" else ex.bisect(NO_TRANSPOSE)
        requests[what] = _requests() - before
    assert min(requests.values()) >= 3, requests

    armed: list[_Interrupter] = []

    def on_sigint(signum, frame):
        if armed and armed[0].armed.is_set():  # a signal after the call returned must not stop the test
            armed[0].armed.clear()
            signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, on_sigint)
    interrupted = 0
    try:
        for what, third in [(w, k) for w in ("applicable", "bisect") for k in (1, 2)]:
            default_runner().clear()  # every request reaches the workers again
            try:
                _Interrupter(signal.SIGINT, max(1, requests[what] * third // 3), armed)
                ex.applicable() if what == "applicable" else ex.bisect(NO_TRANSPOSE)
            except KeyboardInterrupt:
                interrupted += 1
            finally:
                armed[0].stop()
            default_runner().clear()
            assert ex.applicable() == fresh["applicable"], (what, third)
            assert ex.bisect(NO_TRANSPOSE).patterns == fresh["bisect"], (what, third)
            assert [[s.name, s.text] for s in wb.explore(small, SMALL_ARG).pipeline_stages] == fresh["small"]
            allowed = {default_runner().worker.pid}
            if worker_mod._POOL is not None:
                allowed |= {w.pid for w in worker_mod._POOL.workers}
            assert _new_children(earlier) <= allowed, (what, third)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupted >= 3  # the signals landed inside the calls they were aimed at


def test_a_probe_that_gives_no_answer_in_time_is_ended_and_not_a_verdict():
    """A compile in the probe child that outlasts the timeout used to be kept as the verdict "no answer after
    0 s", and the compile then went ahead in this process unguarded; now it is said, and the next call
    tries again."""
    source = wb.explore(small, SMALL_ARG).stage("stablehlo").text_with_locations  # any module: none answers in 1 ms
    options = {"xla_disable_hlo_passes": "cse"}
    kept = dict(xla_probe._VERDICTS)
    earlier = set(children_running("workbench.pipeline.xla_probe"))
    with pytest.raises(xla_probe.XlaProbeDied, match="gave no answer within 0.001 s"):
        xla_probe.guard_compile(source, "cpu:0", options, timeout=0.001)
    assert xla_probe._VERDICTS == kept  # nothing was kept
    assert xla_probe._PROBER.pid is None and not set(children_running("workbench.pipeline.xla_probe")) - earlier
    xla_probe.guard_compile(source, "cpu:0", options)  # tried again with time enough: XLA compiles it
    assert len(xla_probe._VERDICTS) == len(kept) + 1
