"""The compile queue (pipeline/compile_queue.py) on its own, with plain Python jobs in place of XLA's
compiles: one run per key, a waited-for compile ahead of speculative ones, speculative ones superseded
by a newer one of the same program or beyond the limit, an outcome with no answer never cached, and a
request from the compile thread itself served there rather than waiting forever. Each test holds the
queue's one thread with a job that waits on an Event, so what is queued meanwhile is deterministic;
everything is counted (runs, order), never timed. XLA's own compiles through it: test_speculative.py."""
import threading
import pytest

from workbench.pipeline.compile_queue import CompileJob, CompileQueue


class Jobs:
    """Jobs that record the order they ran in; ``hold()`` gives one that blocks the thread until ``release()``."""

    def __init__(self):
        self.ran: list[str] = []
        self.gate, self.held = threading.Event(), threading.Event()

    def job(self, key: str, program: str | None = None, value=None, raises: BaseException | None = None):
        def run():
            self.ran.append(key)
            if raises is not None:
                raise raises
            return value if value is not None else f"compiled {key}"

        return CompileJob(key, program or key, run)

    def hold(self, queue: CompileQueue) -> None:
        def run():
            self.held.set()
            assert self.gate.wait(60), "the test never released the compile thread"
            return "held"

        queue.start(CompileJob("holder", "holder", run))
        assert self.held.wait(60), "the holder never ran on the compile thread"

    def release(self) -> None:
        self.gate.set()


@pytest.fixture
def q():
    queue = CompileQueue(keep=4, speculative_max=2, uncached=(ConnectionError,), thread_name="test-compile-queue")
    yield queue
    queue.close(timeout=60)


def test_a_started_compile_is_the_one_a_request_gets_and_runs_once(q):
    jobs = Jobs()
    owner, other = object(), object()
    q.start(jobs.job("a"), owner=owner)
    assert q.result(jobs.job("a"), owner=owner).value == "compiled a"
    first, again = q.result(jobs.job("a"), owner=owner), q.result(jobs.job("a"), owner=other)
    assert not first.cached and again.cached  # the owner's own compile; anyone else is served the cached one
    assert jobs.ran == ["a"] and q.runs == 1 and q.ready("a")


def test_a_compile_someone_waits_for_runs_before_the_speculative_ones_queued_earlier(q):
    jobs = Jobs()
    jobs.hold(q)
    q.start(jobs.job("spec"))
    wanted = q.watch(jobs.job("wanted"))  # watched: waited for, as a request for its result is
    assert not q.ready("wanted") and not q.ready("spec")
    jobs.release()
    assert wanted.result(60) is None and q.ready("wanted")
    assert q.result(jobs.job("spec")).cached  # asked first by the speculative start (owner None)
    assert jobs.ran == ["wanted", "spec"] and q.runs == 3


def test_a_newer_speculative_compile_of_the_same_program_supersedes_the_queued_one(q):
    jobs = Jobs()
    jobs.hold(q)
    old = q.watch(jobs.job("v1", program="f"))  # watched: never superseded while the watch is pending
    q.start(jobs.job("v2", program="f"))
    q.start(jobs.job("v3", program="f"))  # v2 nobody waits for: superseded by v3
    jobs.release()
    assert old.result(60) is None
    assert q.result(jobs.job("v3", program="f")).value == "compiled v3"
    assert jobs.ran == ["v1", "v3"] and not q.ready("v2")


def test_speculative_compiles_nobody_waits_for_are_at_most_speculative_max(q):
    jobs = Jobs()
    jobs.hold(q)
    for key in ("a", "b", "c"):
        q.start(jobs.job(key))
    jobs.release()
    q.result(jobs.job("b"))
    q.result(jobs.job("c"))
    assert sorted(jobs.ran) == ["b", "c"] and not q.ready("a")  # "a", the oldest idle one, went when "c" came


def test_withdrawing_the_only_watch_cancels_the_queued_compile(q):
    jobs = Jobs()
    jobs.hold(q)
    watch = q.watch(jobs.job("x"))
    watch.cancel()
    jobs.release()
    q.result(jobs.job("after"))
    assert jobs.ran == ["after"] and not q.ready("x")


def test_an_outcome_with_no_answer_is_never_cached_and_an_error_is(q):
    jobs = Jobs()
    with pytest.raises(ConnectionError):  # ``uncached``: asked again, it runs again
        q.result(jobs.job("killed", raises=ConnectionError("the child was killed")))
    with pytest.raises(ConnectionError):
        q.result(jobs.job("killed", raises=ConnectionError("the child was killed")))
    for _ in range(2):  # a refusal is the compile's answer: kept, run once
        with pytest.raises(ValueError):
            q.result(jobs.job("refused", raises=ValueError("XLA refused it")))
    assert jobs.ran == ["killed", "killed", "refused"]


def test_a_request_from_the_compile_thread_itself_runs_there_instead_of_waiting_forever(q):
    jobs = Jobs()
    inner = []

    def run_outer():
        inner.append(q.result(jobs.job("inner")).value)  # on the compile thread, like a watch's callback
        return "outer"

    outer = q.watch(CompileJob("outer", "outer", run_outer))
    outer.result(60)  # a compile thread waiting for itself would never get here (TimeoutError)
    assert inner == ["compiled inner"] and jobs.ran == ["inner"] and q.runs == 2


def test_finished_compiles_beyond_keep_are_forgotten_oldest_first(q):
    jobs = Jobs()
    for key in "abcde":
        q.result(jobs.job(key))
    assert [q.ready(k) for k in "abcde"] == [False, True, True, True, True]  # keep=4


def test_clear_cancels_what_nobody_waits_for_forgets_the_rest_and_waits_for_the_running_one(q):
    jobs = Jobs()
    q.result(jobs.job("done"))
    jobs.hold(q)
    q.start(jobs.job("queued"))

    def release_once_cleared():  # clear forgets "done" after cancelling the queue, then waits for the holder
        for _ in range(6000):
            if not q.ready("done"):
                break
            threading.Event().wait(0.01)
        jobs.release()

    releaser = threading.Thread(target=release_once_cleared)
    releaser.start()
    q.clear()
    releaser.join(60)
    assert jobs.ran == ["done"] and q.runs == 2  # the holder ran to its end; "queued" never ran
    assert not any(q.ready(k) for k in ("done", "holder", "queued"))


def test_phase_says_what_a_compile_waits_behind_then_what_its_job_says_it_does(q):
    from workbench.pipeline.phase import say_phase

    jobs, said, go = Jobs(), threading.Event(), threading.Event()

    def run():  # a compile that says its steps, as pipeline/build.py's does
        say_phase("compiling with per-pass dumps")
        said.set()
        assert go.wait(60)
        say_phase("reading 3 dump files")
        return "done"

    say_phase("outside any compile: said to nobody")  # no error, no effect
    jobs.hold(q)
    q.start(jobs.job("idle"))  # speculative, queued first
    q.start(CompileJob("mine", "mine", run))
    watch = q.watch(CompileJob("mine", "mine", run))  # someone waits for it: it goes before "idle"
    assert q.phase("holder") == "starting"  # its job says nothing
    assert q.phase("mine") == "queued behind 1 compile"  # the holder runs
    assert q.phase("idle") == "queued behind 2 compiles"  # the holder, then the one waited for
    assert q.phase("unknown") == ""
    jobs.release()
    assert said.wait(60) and q.phase("mine") == "compiling with per-pass dumps"
    assert q.phase("idle") == "queued behind 1 compile"
    go.set()
    watch.result(60)
    assert q.phase("mine") == ""  # ended: nothing to wait for
    assert [text for text, _ in q.steps("mine")] == ["compiling with per-pass dumps", "reading 3 dump files"]
    assert all(seconds >= 0 for _, seconds in q.steps("mine")) and q.steps("holder") == q.steps("unknown") == []


def test_when_idle_runs_after_the_last_compile_ends_and_watches_none(q):
    """Issue 28: work that must not compete with the compiles (the kernel's warm start of XLA's toggle
    child) waits until nothing is queued or running, and keeps the queue's choices: a compile nobody waits
    for is still superseded and dropped as before."""
    jobs, calls = Jobs(), []
    q.when_idle(lambda: calls.append(list(jobs.ran)))  # idle now: called at once, here
    assert calls == [[]]
    jobs.hold(q)
    q.start(jobs.job("a", "p"))
    q.when_idle(lambda: calls.append(list(jobs.ran)))
    q.when_idle(lambda: 1 / 0)  # an exception is dropped, the others still run
    q.when_idle(lambda: calls.append("again"))
    q.start(jobs.job("b", "p"))  # a newer compile of the same program: "a" is superseded, watched or not
    assert calls == [[]]
    jobs.release()
    done = threading.Event()
    q.when_idle(done.set)
    assert done.wait(60)
    assert jobs.ran == ["b"] and calls == [[], ["b"], "again"]  # after the last compile ("a" never ran)
