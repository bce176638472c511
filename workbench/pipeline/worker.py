"""A warm worker process for Enzyme-JaX and MLIR pass pipelines.

Passes are C++ code that can abort or loop forever; running them in a separate process keeps the
notebook kernel alive. The worker is a ``children.Child`` (a fresh interpreter running this module,
``python -P -m workbench.pipeline.worker``) that serves the method table ``METHODS``. It imports
enzyme-ad once, and is restarted transparently after a crash; the diagnostics a pass printed before
dying are read from its log and shown to the user. A ``WorkerPool`` spreads many independent requests
over a few workers; ``Pool`` is what a scan needs of any pool (``remote.ExecutorPool`` is the other).
"""
from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from contextvars import ContextVar
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Literal, Sequence

from ..children import Child, ChildDied, ChildFailed, ChildTimeout, ended, serve
from .enzyme_runner import enzyme_call

__all__ = ["Worker", "Pool", "WorkerPool", "WorkerCrash", "WorkerTimeout", "PassFailure", "PassOutcome",
           "ItemFailure", "PoolResult", "Reply", "Submit", "METHODS", "default_worker", "default_pool",
           "enzyme_available", "routed", "warm_soon"]


def enzyme_available() -> bool:
    """True when enzyme-ad can be imported (CPython 3.11 on x86-64 Linux).

    ``HLO_WORKBENCH_NO_ENZYME=1`` makes the workbench behave as if it were absent, to check that
    path on machines that have it.
    """
    import importlib.util

    if os.environ.get("HLO_WORKBENCH_NO_ENZYME"):
        return False
    return importlib.util.find_spec("enzyme_ad") is not None


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
class PassOutcome:
    """One pipeline run alone by ``run_each``: whether it changed the module (compared without
    locations), how long it took, and the error it raised, if any (then ``changed`` is False)."""

    pipeline: str
    changed: bool
    seconds: float
    error: str | None


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


@dataclass(frozen=True)
class PipelineOutput:
    """A pipeline's output: the entry function's name (enzyme-ad's runner makes it private while it
    works) and the module's text, with locations."""

    entry: str
    text: str


@dataclass(frozen=True)
class PatternLists:
    """enzyme-ad's pattern lists for one set of options: the main list and the lowering list, each
    as its ``;``-separated text."""

    main: str
    lower: str


# ---- the worker side -------------------------------------------------------------------------


def jaxlib_pipeline(pipeline: str) -> bool:
    """True when every pass of ``pipeline`` is one of Shardy's (``sdy-...``), which enzyme-ad 0.0.16
    does not register but jaxlib's pass manager does: such a pipeline runs there."""
    from ..ir.text import pass_names

    if "sdy-" not in pipeline:  # every run asks: most are Enzyme-JaX pattern lists of thousands of characters
        return False
    try:
        names = pass_names(pipeline)
    except ValueError:  # not a pipeline: the runner that parses it says why
        return False
    return bool(names) and all(n.startswith("sdy-") for n in names)


def _anchored(pipeline: str) -> str:
    """``pipeline`` as jaxlib's pass manager parses it: anchored on ``builtin.module``."""
    inner = pipeline.strip()
    return inner if inner.startswith("builtin.module(") else f"builtin.module({inner})"


def _jaxlib_run(text: str, pipeline: str, allow_unregistered: bool) -> PipelineOutput:
    """``pipeline`` run by jaxlib's own pass manager in JAX's MLIR context; with ``allow_unregistered``,
    Enzyme-JaX's ops and attributes parse as opaque ones and print back as they were."""
    from jaxlib.mlir import passmanager

    from ..ir.mlir import parse_module

    module = parse_module(text, allow_unregistered=allow_unregistered)
    with module.context:
        passmanager.PassManager.parse(_anchored(pipeline)).run(module.operation)
        return PipelineOutput("main", module.operation.get_asm(enable_debug_info=True))


def _run_pipeline(text: str, pipeline: str) -> PipelineOutput:
    """Run ``pipeline`` on ``text``: enzyme-ad's runner, or jaxlib's pass manager without enzyme-ad
    and for Shardy's passes (``jaxlib_pipeline``)."""
    if not enzyme_available():
        return _jaxlib_run(text, pipeline, allow_unregistered=False)
    if jaxlib_pipeline(pipeline):
        return _jaxlib_run(text, pipeline, allow_unregistered=True)
    return PipelineOutput(*enzyme_call().run_pass_pipeline([], text, pipeline))


_EMPTY_MODULE = "module {\n}\n"


def _check_pipeline(pipeline: str) -> None:
    """Raise if ``pipeline`` does not parse (an unregistered pass, a bad option, a bracket).

    enzyme-ad parses a pipeline only on the way to running it, so it runs on an empty module; a
    pipeline that parses but then fails there ("Pipeline failed", e.g. ``transform-interpreter``,
    which needs the module's own ``@__transform_main``) is accepted: on the real module it may well
    work, and if not its stage says why.
    """
    if enzyme_available() and not jaxlib_pipeline(pipeline):
        try:
            enzyme_call().run_pass_pipeline([], _EMPTY_MODULE, pipeline)
        except Exception as e:
            if "Pipeline failed" not in str(e):
                raise
        return
    from jax._src.interpreters import mlir as jmlir
    from jaxlib.mlir import passmanager

    with jmlir.make_ir_context():
        passmanager.PassManager.parse(_anchored(pipeline))


def _parse_module(text: str) -> list[str]:
    """Parse (and verify) ``text`` with the parser the passes will use; raise with its diagnostics.
    With enzyme-ad, an empty pipeline through its runner: the cheapest call it has that parses (its
    diagnostics go to the worker log as ``loc("-":line:col): error: ...``). Returns the names of the
    modules the text holds side by side (``ir.mlir.side_by_side_modules``): empty for one module."""
    from ..ir.mlir import parse_module, side_by_side_modules

    if enzyme_available():
        enzyme_call().run_pass_pipeline([], text, "")
    else:
        parse_module(text, allow_unregistered=False)
    return side_by_side_modules(text)


def _transform_passes(args: tuple) -> PatternLists:
    return PatternLists(*enzyme_call().get_transform_passes_list(*args))


def _crash(kind: str) -> None:
    """Deliberately die, for tests of crash recovery: 'abort' like a failed C++ CHECK, or 'segv'."""
    os.kill(os.getpid(), signal.SIGABRT if kind == "abort" else signal.SIGSEGV)


_INPUT_FACTS: dict[str, tuple[str, set[str], set[str], set[str]]] = {}  # the last input of run_each only


def _input_facts(text: str) -> tuple[str, set[str], set[str], set[str]]:
    """``text`` without locations, its public functions, the raw outputs known to equal it, and its functions
    written without a visibility keyword (made public again as the runner does: with none)."""
    facts = _INPUT_FACTS.get(text)
    if facts is None:
        from ..ir.text import public_functions, strip_locations, unmarked_functions

        _INPUT_FACTS.clear()
        facts = _INPUT_FACTS[text] = (strip_locations(text), public_functions(text), set(), unmarked_functions(text))
    return facts


def _run_each(text: str, pipelines: list[str], stop_at_first: bool) -> list[PassOutcome]:
    """Run each pipeline alone on ``text``: a PassOutcome for each (up to the first change, with
    ``stop_at_first``).

    Done inside the worker so that one request covers many pipelines (no round trip each).
    ``changed`` compares the outputs without locations, with the input's public functions public.
    What is known of the input (its text without locations, its public functions, the raw outputs
    already found equal to it) is kept for the next request on the same text: a group-tested scan
    sends the same module with one batch at a time, and most batches give the same raw output.
    """
    from ..ir.text import publish_functions, strip_locations

    base, public, same_as_input, unmarked = _input_facts(text)
    out = []
    for pipeline in pipelines:
        t = time.perf_counter()
        try:
            res = _run_pipeline(text, pipeline).text
            changed, err = res not in same_as_input and strip_locations(publish_functions(res, public, unmarked)) != base, None
            if not changed and len(same_as_input) < 16:
                same_as_input.add(res)
        except Exception as e:
            changed, err = False, f"{type(e).__name__}: {e}"
        out.append(PassOutcome(pipeline, changed, time.perf_counter() - t, err))
        if stop_at_first and changed:
            break
    return out


def _hlo_costs(items: list[tuple[Any, str]]) -> list[tuple[Any, dict | str]]:
    """XLA's HloCostAnalysis (on the CPU client) of each ``(key, HLO text)``, its metadata and debug sections
    stripped first (XLA's parser reads neither): ``(key, its dict)``, or
    ``(key, the error)`` for a text XLA's HLO parser or the analysis refuses. In the worker, because a
    module put together by the workbench (one instruction with its operands as parameters) can hit a
    failed CHECK in XLA, which ends the process."""
    import jax
    from jax._src.lib import _jax
    from jaxlib import _hlo

    from ..ir.hlo import strip_debug_info

    client = jax.devices("cpu")[0].client
    out: list[tuple[Any, dict | str]] = []
    for key, text in items:
        try:
            module = _hlo.hlo_module_from_text(strip_debug_info(text))
            out.append((key, dict(_jax.hlo_module_cost_analysis(client, module))))
        except Exception as e:  # XLA's parser and analysis raise several types
            out.append((key, f"{type(e).__name__}: {str(e).strip()}"))
    return out


METHODS = {"run_pipeline": _run_pipeline, "hlo_costs": _hlo_costs, "transform_passes": _transform_passes,
           "crash": _crash, "run_each": _run_each, "check_pipeline": _check_pipeline, "parse_module": _parse_module}
# the requests that run a pipeline, which ``Worker.executions`` counts
_EXECUTING = ("run_pipeline", "run_each", "check_pipeline")


def _warm_up() -> None:
    """The worker's start: load enzyme-ad's pass runner once, before the first request."""
    if enzyme_available():
        enzyme_call()


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


class Worker:
    """One worker process, started on first use, restarted after a crash or time-out.

    ``executions`` counts the requests that ran a pipeline, so tests and benchmarks can check that
    caching avoided work; ``stale`` the replies to other requests dropped (``channel.exchange``). A call
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
        try:
            answer = self._child.call(method, args, limit)
        except ChildFailed as e:
            raise PassFailure(e.message, e.log) from None
        except ChildDied as e:
            raise WorkerCrash(e.exitcode, e.log) from None
        except ChildTimeout as e:
            raise WorkerTimeout(e.seconds, e.log) from None
        return Reply(answer.payload, answer.seconds)

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
    # Serve from the module under its own name, not as __main__: results such as PassOutcome are
    # pickled by their module's name, and the client knows them as workbench.pipeline.worker's.
    from workbench.pipeline import worker

    serve(worker.METHODS, worker._warm_up)
