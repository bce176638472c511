"""Scans on a cluster: the worker requests of the workbench's long calls on any executor.

``applicable``, ``step``, ``pattern_timing``, ``bisect``, ``reduce`` and ``compare_pipelines`` take
``executor=``: a ``concurrent.futures.Executor``, a ``dask.distributed.Client`` (its
``get_executor()``), a scheduler's address (``"tcp://host:port"``: a Client is made for it, once
per address) or a ``Pool`` (an ``ExecutorPool`` that names its executor's width); ``None`` is the
process-wide default that ``config(executor=...)`` sets, and with none set, the built-in
``WorkerPool``. ``"local"`` (or a WorkerPool) is the built-in pool whatever the default. The
workbench never runs a scheduler of its own.

The unit of remote work is one worker request, ``(method, args, timeout)``, as ``Worker.call``
takes it. The function submitted, ``run_request``, runs it in the remote process through a warm
``Worker`` subprocess of that process (one per request running at once there), so a pass that aborts
kills only that subprocess, never the Dask worker, and comes back as the same WorkerCrash or
WorkerTimeout (they pickle by their arguments); ``Pool.map``'s splitting then isolates the item
that does it exactly as it does here. Values are the same dataclasses as here (PassOutcome, ...);
the seconds in them are measured over there. The remote processes need this workbench and enzyme-ad
installed (the same versions); for a Dask cluster, ``pip install 'hlo-workbench[cluster]'``.

Pattern scans send every request to the executor. A bisection, a reduction and a comparison of
pipelines build whole Explorations; there the MLIR pipeline runs of each (the runner's worker
requests, ``worker.routed``) go to the executor, ``Prefetch`` building the candidates the search will
ask about next a few at a time, and tracing, XLA's compiles, running the program and the predicates
stay in this process (the device is here), so the answers are those of the built-in pool.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from concurrent.futures import Executor, Future, InvalidStateError, ThreadPoolExecutor
from typing import Any, Callable

from .worker import PassFailure, Pool, Reply, Worker, WorkerCrash, WorkerTimeout, default_pool, default_worker, routed

__all__ = ["ExecutorPool", "Prefetch", "config", "requests_served", "resolve", "run_request"]

LOCAL = "local"
_CONFIG: dict[str, Any] = {"executor": None}
_UNSET = object()
_CLIENTS: dict[str, Any] = {}  # scheduler address -> the Client made for it
_LOCK = threading.Lock()
_IDLE: list[Worker] = []  # this process's warm workers that no request is using
# requests run here; whether this process's default worker was taken; the process they are counted in
_HERE = {"served": 0, "own": False, "pid": os.getpid()}


# ---- the remote side ----------------------------------------------------------------------------


def run_request(method: str, args: tuple, timeout: float | None) -> Reply | Exception:
    """Run one worker request in this process's warm worker subprocess (a free one, or a new one when
    every one is busy): the Reply, or the PassFailure, WorkerCrash or WorkerTimeout that ``Worker.call``
    raised, returned rather than raised (they are answers; an executor's worker would log each as a
    failed task). What an executor runs: in a Dask worker, a ProcessPoolExecutor's child, a thread here."""
    with _LOCK:
        if _HERE["pid"] != os.getpid():  # a forked child (ProcessPoolExecutor's default): the parent's are not ours
            _IDLE.clear()
            _HERE.update(served=0, own=True, pid=os.getpid())
        if _IDLE:
            worker = _IDLE.pop()
        elif not _HERE["own"]:  # the first: this process's own shared worker
            worker, _HERE["own"] = default_worker(), True
        else:
            worker = Worker()
    try:
        with routed(None):  # here, whatever the thread that submitted it was doing
            return worker.call(method, *args, timeout=timeout)
    except (PassFailure, WorkerCrash, WorkerTimeout) as e:
        e.__traceback__ = None  # it pickles by its arguments; the frames stay here
        return e
    finally:
        with _LOCK:
            _IDLE.append(worker)
            _HERE["served"] += 1


def requests_served() -> int:
    """How many requests ``run_request`` has run in this process (tests count a cluster's with
    ``client.run(requests_served)``)."""
    return _HERE["served"]


# ---- the client side ----------------------------------------------------------------------------


class ExecutorPool(Pool):
    """``Pool``'s ``map``, ``work`` and ``call`` with every request sent to ``executor``: ``run_request``
    there.

    ``width``, how many requests it runs at once, is ``width`` when given; else, with a Dask ``client``,
    that cluster's threads (``Client.nthreads()``, asked each time: a cluster can grow); else this
    machine's cores (``concurrent.futures`` executors do not say how many workers they have:
    ``ExecutorPool(ThreadPoolExecutor(n), width=n)`` says it for them, and is itself an ``executor=``)."""

    def __init__(self, executor: Executor, client: Any = None, name: str = "", width: int | None = None):
        if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
            raise ValueError(f"width must be a whole number of requests at once, 1 or more, not {width!r}")
        self.executor, self.client, self.name = executor, client, name or type(executor).__name__
        self._width = width

    @property
    def width(self) -> int:
        if self._width is not None:
            return self._width
        if self.client is not None:
            return max(1, sum(self.client.nthreads().values()))
        return max(1, os.cpu_count() or 1)

    @property
    def depth(self) -> int:
        return 2 * self.width

    def submit(self, method: str, args: tuple, timeout: float | None) -> Future:
        """The Future of one request's Reply (or of the error it raised there); cancelling it cancels
        the executor's task."""
        inner = self.executor.submit(run_request, method, tuple(args), timeout)
        outer: Future = Future()
        task = weakref.ref(inner)  # no cycle: a Dask future held by one would keep its result on the cluster
        outer.add_done_callback(lambda f: f.cancelled() and (t := task()) is not None and t.cancel())

        def settle(f: Future) -> None:
            try:
                value = f.result()
                if isinstance(value, Exception):
                    outer.set_exception(value)
                else:
                    outer.set_result(value)
            except InvalidStateError:  # cancelled meanwhile
                pass
            except BaseException as e:  # the executor's own failure (a lost Dask worker, a cancelled task)
                try:
                    outer.set_exception(e)
                except InvalidStateError:
                    pass

        inner.add_done_callback(settle)
        return outer

    def send(self, method: str, args: tuple, timeout: float | None) -> Reply:
        """``Worker.call``'s answer from the executor (what ``worker.routed`` takes). Each request has a
        Future of its own, so no answer can be another's; an interrupted wait cancels the task, which
        then neither runs nor holds its result on the cluster for nobody."""
        future = self.submit(method, args, timeout)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def call(self, method: str, *args, timeout: float | None = None) -> Reply:
        return self.send(method, args, timeout)

    @contextlib.contextmanager
    def requests(self):
        yield self.submit

    def __repr__(self) -> str:
        return f"ExecutorPool({self.name})"


def _needs_dask(what: str):
    try:
        import distributed
    except ImportError:
        raise ImportError(f"executor={what!r} needs dask.distributed: pip install 'hlo-workbench[cluster]'") from None
    return distributed


def _local(obj) -> bool:
    return isinstance(obj, str) and obj == LOCAL


def _is_client(obj) -> bool:
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(obj, distributed.Client)


def _client(address: str):
    distributed = _needs_dask(address)
    with _LOCK:
        client = _CLIENTS.get(address)
        if client is None or client.status not in ("running", "connecting"):
            client = _CLIENTS[address] = distributed.Client(address, set_as_default=False)
    return client


def _check(executor) -> None:
    """Raise TypeError (or ImportError, for an address without Dask) for what cannot be an executor."""
    if executor is None or _local(executor) or isinstance(executor, (Pool, Executor)) or _is_client(executor):
        return
    if isinstance(executor, str):
        if "://" not in executor:
            raise ValueError(f"executor={executor!r}: a scheduler address is 'tcp://host:port' ('local': the "
                             "built-in worker pool)")
        _needs_dask(executor)
        return
    raise TypeError(f"executor= takes a concurrent.futures.Executor, a dask.distributed.Client, a scheduler "
                    f"address 'tcp://host:port', 'local' or None; got {type(executor).__name__}")


def config(executor=_UNSET) -> dict:
    """Set the process-wide defaults and return the settings now in force, ``{"executor": ...}``.

    ``executor`` is what the long calls (``applicable``, ``step``, ``pattern_timing``, ``bisect``,
    ``reduce``, ``compare_pipelines``) run their worker requests on when they are not given one:
    a ``concurrent.futures.Executor``, a ``dask.distributed.Client``, a scheduler address
    ``"tcp://scheduler:8786"``, or None (the built-in worker pool). ``config()`` changes nothing."""
    if executor is not _UNSET:
        _check(executor)
        _CONFIG["executor"] = executor
    return dict(_CONFIG)


def resolve(executor=None) -> Pool:
    """The pool that runs a call's requests: ``executor`` (see ``config``), else the configured
    default, else the built-in pool."""
    if executor is None:
        executor = _CONFIG["executor"]
    _check(executor)
    if executor is None or _local(executor):
        return default_pool()
    if isinstance(executor, Pool):
        return executor
    if isinstance(executor, str):
        client = _client(executor)
        return ExecutorPool(client.get_executor(pure=False), client, executor)
    if _is_client(executor):
        return ExecutorPool(executor.get_executor(pure=False), executor, f"Client({executor.scheduler.address})")
    return ExecutorPool(executor)


def route(pool: Pool):
    """A block in which this thread's worker requests go to ``pool``'s executor (nothing changes for
    the built-in pool)."""
    return routed(pool.send) if isinstance(pool, ExecutorPool) else contextlib.nullcontext()


class Prefetch:
    """Results built ahead on ``width`` threads (``pool.width``, at most 32) whose worker requests go
    to ``pool``'s executor, for a search that knows which candidates it may ask about next;
    ``take(key, make)`` hands one over (building it now, in this thread, if it was not wanted). Used
    as a context manager, the block's own requests go there too. With the built-in pool it builds
    nothing ahead: ``take`` calls ``make``. Whatever it built ahead, taken or not, is built the same
    way ``make`` builds it, so the search's answers, and the order it asks in, do not change."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.remote = isinstance(pool, ExecutorPool)
        self.width = min(pool.width, 32) if self.remote else 1  # builds at once (a cluster's width is asked once)
        self._threads = ThreadPoolExecutor(self.width, thread_name_prefix="wb-prefetch") if self.remote else None
        self._ahead: dict[Any, Future] = {}
        self._route = None

    def _made(self, make: Callable[[], Any]):
        with route(self.pool):
            return make()

    def want(self, key, make: Callable[[], Any]) -> None:
        """Start building ``key`` with ``make()`` (when remote and not under way)."""
        if self.remote and key not in self._ahead:
            self._ahead[key] = self._threads.submit(self._made, make)

    def take(self, key, make: Callable[[], Any]):
        """``make()``'s result for ``key`` (or the exception it raised)."""
        future = self._ahead.pop(key, None)
        if future is None:
            return self._made(make)
        return future.result()

    def drop(self) -> None:
        """Forget what was wanted and not taken; builds not started yet are not started."""
        for future in self._ahead.values():
            future.cancel()
        self._ahead.clear()

    def __enter__(self) -> Prefetch:
        self._route = route(self.pool)
        self._route.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.drop()
        if self._threads is not None:
            self._threads.shutdown(wait=True)
        self._route.__exit__(*exc)
