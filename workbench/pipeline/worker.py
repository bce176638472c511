"""A warm worker process for Enzyme-JaX and MLIR pass pipelines.

Passes are C++ code that can abort or loop forever; running them in a separate process keeps the
notebook kernel alive. The worker is a ``children.Child`` (a fresh interpreter running this module,
``python -P -m workbench.pipeline.worker``) that serves ``worker_methods.METHODS``. It imports
enzyme-ad once, and is restarted transparently after a crash; the diagnostics a pass printed before
dying are read from its log and shown to the user. A ``WorkerPool`` spreads many independent requests
over a few workers; ``Pool`` is what a scan needs of any pool (``remote.ExecutorPool`` is the other).
"""
from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
from abc import ABC, abstractmethod
from collections import deque
from contextvars import ContextVar
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Literal, Sequence

from ..children import Child, ChildDied, ChildFailed, ChildTimeout, ended, serve
from .worker_methods import PassOutcome, enzyme_available

__all__ = ["Worker", "Pool", "WorkerPool", "WorkerCrash", "WorkerTimeout", "PassFailure", "PassOutcome",
           "ItemFailure", "PoolResult", "Reply", "Submit", "default_worker", "default_pool",
           "enzyme_available", "routed", "warm_soon"]


class PassFailure(Exception):
    """The pipeline raised inside the worker (parse error, failed verification, pattern error)."""

    def __init__(self, message: str, diagnostics: str):
        super().__init__(message)
        self.message, self.diagnostics = message, diagnostics

    def __reduce__(self):  # pickled back from a remote worker (an executor's) by its own arguments
        return type(self), (self.message, self.diagnostics)


class WorkerCrash(Exception):
    """The worker process died while running a request."""

    def __init__(self, exitcode: int | None, diagnostics: str):
        super().__init__(f"worker process {ended(exitcode)}")
        self.exitcode, self.diagnostics = exitcode, diagnostics

    @property
    def how(self) -> str:
        """How it ended, in words: a SIGKILL comes from outside (the OOM killer or a kill -9), a SIGABRT is the
        pass's own."""
        return ended(self.exitcode)

    def __reduce__(self):
        return type(self), (self.exitcode, self.diagnostics)


class WorkerTimeout(Exception):
    """The request ran past its time limit; the worker was killed and will be restarted."""

    def __init__(self, seconds: float, diagnostics: str):
        super().__init__(f"no answer after {seconds:.0f} s")
        self.seconds, self.diagnostics = seconds, diagnostics

    def __reduce__(self):
        return type(self), (self.seconds, self.diagnostics)


@dataclass(frozen=True)
class ItemFailure:
    """One item of a ``WorkerPool.map`` whose request, with that item alone, crashed its worker or ran
    past the time limit; ``diagnostics`` is what the worker printed meanwhile."""

    kind: Literal["crash", "timeout"]
    item: Any
    diagnostics: str


@dataclass(frozen=True)
class PoolResult:
    """What ``WorkerPool.map`` gave: the method's results for every chunk that succeeded (in the order
    the chunks finished) and the items that stood alone and still crashed or timed out."""

    results: tuple
    failures: tuple[ItemFailure, ...]


@dataclass(frozen=True)
class Reply:
    """A request's answer from the worker: the method's value and the seconds it took there."""

    value: Any
    seconds: float


# the requests that run a pipeline, which ``Worker.executions`` counts
_EXECUTING = ("run_pipeline", "run_step", "run_each", "check_pipeline")


# ---- the client side -------------------------------------------------------------------------

_ROUTE: ContextVar[Callable[[str, tuple, float], "Reply"] | None] = ContextVar("hlo_workbench_route", default=None)


@contextlib.contextmanager
def routed(send: Callable[[str, tuple, float], "Reply"] | None):
    """While the block runs, every ``Worker.call`` made in this thread (or context) is ``send(method,
    args, timeout)`` instead, which returns the Reply or raises as the call would: how the explorations
    that a bisection, a reduction or a comparison of pipelines builds run their passes on an executor
    (``remote.py``). ``None`` runs them here again. Threads started meanwhile do not inherit it."""
    token = _ROUTE.set(send)
    try:
        yield
    finally:
        _ROUTE.reset(token)


@contextlib.contextmanager
def _as_worker_errors():
    """A child's failure as the worker's: PassFailure (it lives on), WorkerCrash, WorkerTimeout."""
    try:
        yield
    except ChildFailed as e:
        raise PassFailure(e.message, e.log) from None
    except ChildDied as e:
        raise WorkerCrash(e.exitcode, e.log) from None
    except ChildTimeout as e:
        raise WorkerTimeout(e.seconds, e.log) from None


class Worker:
    """One worker process, started on first use, restarted after a crash or time-out.

    ``executions`` counts the requests that ran a pipeline, so tests and benchmarks can check that
    caching avoided work; ``stale`` the replies to other requests dropped (``channel.answer_to``). A call
    interrupted while it waits ends the process (its pass may run on for minutes); the next starts afresh.
    A Worker nobody references is collected, and its process ends with it.
    """

    def __init__(self, timeout: float = 600.0):
        self.timeout = timeout
        self._child = Child("workbench.pipeline.worker", "worker")

    @property
    def executions(self) -> int:
        return sum(self._child.sent[m] for m in _EXECUTING)

    @property
    def restarts(self) -> int:
        return self._child.restarts

    @property
    def stale(self) -> int:
        return self._child.stale

    @property
    def log_path(self) -> str | None:
        """The worker's log (its stderr: what passes print), while it has one."""
        return self._child.log_path

    def call(self, method: str, *args, timeout: float | None = None):
        """Run ``method(*args)`` in the worker; returns its Reply (the value and the seconds it took).

        Raises PassFailure (the worker survives), WorkerCrash or WorkerTimeout (the worker is
        replaced by a fresh one on the next call).
        """
        limit = self.timeout if timeout is None else timeout
        send = _ROUTE.get()
        if send is not None:  # routed (see ``routed``): the request runs on an executor's worker
            return send(method, args, limit)
        with _as_worker_errors():
            answer = self._child.call(method, args, limit)
        return Reply(answer.payload, answer.seconds)

    def call_ahead(self, method: str, args: Callable[[int], tuple | None], on_reply: Callable[[Reply], None],
                   timeout: float | None = None) -> bool:
        """``method`` on request after request, each sent before the worker answers the one before
        (``Child.call_ahead``): ``on_reply`` gets each Reply in order, and the first that failed raises as
        ``call`` does. False, having sent nothing, where calls are routed to an executor's worker
        (``routed``), which cannot keep a request's output for the next."""
        if _ROUTE.get() is not None:
            return False
        with _as_worker_errors():
            self._child.call_ahead(method, args, self.timeout if timeout is None else timeout,
                                   lambda answer: on_reply(Reply(answer.payload, answer.seconds)))
        return True

    def start_soon(self) -> None:
        """Start the process now, unless it runs, without waiting for its imports (the first request waits)."""
        self._child.start_soon()

    def interrupt(self) -> None:
        """End the process under another thread's waiting request (which raises WorkerCrash)."""
        self._child.interrupt()

    @property
    def pid(self) -> int | None:
        """The process id of the worker process while it runs (for benchmarks reading its memory); None
        before the first request and after a crash or ``close``."""
        return self._child.pid

    def close(self) -> None:
        """End the process and remove its log (a crash's tail is in its error); a later call writes it afresh."""
        self._child.close()


Submit = Callable[[str, tuple, "float | None"], "Future[Reply]"]


class Pool(ABC):
    """What a scan needs of a pool of workers: ``width`` requests at once, ``call`` for one request,
    and ``requests()`` to start many; ``map`` and ``work`` split and schedule on top of those, the same
    for the built-in ``WorkerPool`` and for ``remote.ExecutorPool`` (an executor's, a Dask cluster's)."""

    @property
    @abstractmethod
    def width(self) -> int:
        """How many requests run at once."""

    @property
    def depth(self) -> int:
        """How many requests ``work`` keeps in flight (an executor's pool queues more than it runs, so
        that a worker's next request is already there when it answers one)."""
        return self.width

    @abstractmethod
    def call(self, method: str, *args, timeout: float | None = None) -> Reply:
        """One request; its Reply, or the error it raised."""

    @abstractmethod
    def requests(self) -> ContextManager[Submit]:
        """A block in which ``submit(method, args, timeout)`` starts one request and returns the Future
        of its Reply."""

    def map(self, method: str, chunks: Sequence[Sequence], make_args: Callable[[Sequence], tuple],
            on_done: Callable[[int], None] | None = None, timeout: float | None = None) -> PoolResult:
        """Call ``method(*make_args(chunk))`` for each chunk on whichever worker is free; the method
        returns one result per item of its chunk.

        A chunk whose request crashes or times out its worker is run again as two halves, until the
        item that does it stands alone and is reported as an ItemFailure instead of losing the scan.
        ``on_done(n)`` hears of every ``n`` items finished, for progress bars.
        """
        results: list = []
        failures: list[ItemFailure] = []
        with self.requests() as submit:
            pending: dict[Future, Sequence] = {submit(method, make_args(c), timeout): c for c in chunks}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    chunk = pending.pop(future)
                    try:
                        results.extend(future.result().value)
                    except (WorkerCrash, WorkerTimeout) as e:
                        if len(chunk) > 1:
                            half = len(chunk) // 2
                            for part in (chunk[:half], chunk[half:]):
                                pending[submit(method, make_args(part), timeout)] = part
                            continue
                        kind = "crash" if isinstance(e, WorkerCrash) else "timeout"
                        failures.append(ItemFailure(kind, chunk[0], e.diagnostics))
                    except BaseException:
                        for f in pending:
                            f.cancel()
                        raise
                    if on_done:
                        on_done(len(chunk))
        return PoolResult(tuple(results), tuple(failures))

    def work(self, method: str, tasks: Sequence, make_args: Callable[[Any], tuple],
             on_result: Callable[[Any, Any, Exception | None], Sequence],
             timeout: Callable[[Any], float | None] | float | None = None) -> None:
        """Call ``method(*make_args(task))`` for each task on whichever worker is free, and for the
        tasks the answers ask for: ``on_result(task, value, error)`` hears each answer in the calling
        thread (``error`` is the PassFailure, WorkerCrash or WorkerTimeout the request raised, then
        ``value`` is None) and returns the tasks to run next, which go ahead of those still waiting
        (depth first). ``timeout`` is seconds, or a function of the task. Returns when no task is left.

        Unlike ``map``, nothing is split or retried here: the caller decides what a crash means.
        """
        waiting = deque(tasks)
        width = self.depth  # never more requests in flight than workers (and a queue, for an executor's)
        pending: dict[Future, Any] = {}
        with self.requests() as submit:
            try:
                while waiting or pending:
                    while waiting and len(pending) < width:
                        task = waiting.popleft()
                        limit = timeout(task) if callable(timeout) else timeout
                        pending[submit(method, make_args(task), limit)] = task
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        task = pending.pop(future)
                        try:
                            value, error = future.result().value, None
                        except (PassFailure, WorkerCrash, WorkerTimeout) as e:
                            value, error = None, e
                        waiting.extendleft(reversed(list(on_result(task, value, error) or ())))
            except BaseException:
                for f in pending:
                    f.cancel()
                raise


class WorkerPool(Pool):
    """A few workers (one per core by default, the first being the shared warm one) for scans that
    run many independent pass pipelines: "which patterns apply here", pattern timing."""

    def __init__(self, size: int | None = None):
        size = size or max(1, min(os.cpu_count() or 1, 4))
        self.workers = [default_worker()] + [Worker() for _ in range(size - 1)]

    @property
    def width(self) -> int:
        return len(self.workers)

    def call(self, method: str, *args, timeout: float | None = None) -> Reply:
        """One request, on the first (the shared warm) worker, here even in a ``routed`` block."""
        with routed(None):
            return self.workers[0].call(method, *args, timeout=timeout)

    @contextlib.contextmanager
    def requests(self):
        """Each request on whichever worker is free (one thread per worker)."""
        free: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        for w in self.workers:
            free.put(w)
        busy: set[Worker] = set()
        stopping = threading.Event()

        def request(method: str, args: tuple, timeout: float | None) -> Reply:
            worker = free.get()  # one thread per worker: there is always a free one
            busy.add(worker)
            try:
                if stopping.is_set():
                    raise WorkerCrash(None, "the scan was interrupted before this request started")
                return worker.call(method, *args, timeout=timeout)
            finally:
                busy.discard(worker)
                free.put(worker)

        executor = ThreadPoolExecutor(len(self.workers), thread_name_prefix="wb-pool")
        try:
            yield lambda method, args, timeout: executor.submit(request, method, args, timeout)
        except KeyboardInterrupt:
            # Ctrl-C reaches the calling thread only: the requests under way would run to the end of
            # their passes, so their processes end now (each worker starts afresh on its next request).
            stopping.set()
            executor.shutdown(wait=False, cancel_futures=True)
            for w in list(busy):
                w.interrupt()
            raise
        finally:
            executor.shutdown(wait=True)


_POOL: WorkerPool | None = None


def default_pool() -> WorkerPool:
    global _POOL
    if _POOL is None:
        _POOL = WorkerPool()
    return _POOL


@functools.cache
def default_worker() -> Worker:
    """The process-wide worker that explorations share (so its warm import is paid once)."""
    return Worker()


def warm_soon() -> bool:
    """Start the shared worker in the background, so that the first explore finds enzyme-ad imported:
    what ``%load_ext workbench`` and ``import workbench`` in a notebook kernel do. Never blocks on the
    worker's imports and never raises (the first explore starts it, or says why it cannot); True when
    a start is under way or done."""
    if not enzyme_available():
        return False
    try:
        default_worker().start_soon()
    except Exception:  # noqa: BLE001 -- no process could be spawned: the first request will say why
        return False
    return True


if __name__ == "__main__":
    # The methods come from their module imported by its name: results such as PassOutcome are pickled
    # by their module's name, which the client imports too.
    from workbench.pipeline import worker_methods

    serve(worker_methods.METHODS, worker_methods.warm_up)
