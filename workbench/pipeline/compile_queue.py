"""XLA's compiles, one at a time on one background thread, each one cached by what it compiles.

A compile is an entry whose Future the thread fulfils. A speculative ``start`` (``LateXla.start``,
after each explore and toggle) and a request for the result (``result``, when the XLA stages are
read) find the same entry by its key, so a module is never compiled twice. Entries nobody waits for
are cancelled while queued when a newer compile of the same program supersedes them, or when more
than ``speculative_max`` of them queue up. A running XLA compile cannot be interrupted: a superseded
one runs to its end and is cached like any. One thread, so compiles never overlap (each one switches
JAX's persistent cache off and on again); it takes the oldest compile someone waits for first.

The queue knows nothing of XLA: a ``CompileJob`` is a key, the program it compiles and a callable
that does the work; ``pipeline/build.py`` makes them. ``XLA_QUEUE`` is the process's one queue.
"""
from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from concurrent.futures import Future, InvalidStateError, wait as futures_wait
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from .phase import Phases, saying_to
from .xla_probe import XlaProbeDied

__all__ = ["CompileJob", "CompileQueue", "Served", "XLA_QUEUE"]


@dataclass(frozen=True)
class CompileJob:
    """One compile to queue. ``key`` says which compile it is (one entry, one run per key while it is
    cached); ``program`` which program it compiles (a newer speculative compile of the same program
    supersedes queued ones); ``run`` does the work: what it returns or raises is the outcome."""

    key: Hashable
    program: Hashable
    run: Callable[[], Any]


@dataclass(frozen=True)
class Served:
    """A compile's result, and whether someone other than the asker asked for it first (so it was
    served from the cache rather than compiled for this asker)."""

    value: Any
    cached: bool


@dataclass(eq=False)
class _Entry:
    job: CompileJob
    owner: Any  # who asked first: any other asker is served from the cache
    future: Future = field(default_factory=Future)
    waiters: int = 0  # threads waiting for it and Futures watching it (``watch``): never cancelled
    phases: Phases = field(default_factory=Phases)  # what its job said it did (``phase.say_phase``)


class CompileQueue:
    """Compiles run one at a time on a thread of their own, cached by key: ``start`` queues one
    speculatively, ``result`` waits for it (ahead of those nobody waits for), ``ready`` says whether
    it is done, ``watch`` gives a Future done when it is. ``keep`` finished compiles are kept; an
    outcome that is an exception of a type in ``uncached`` (no answer, e.g. a killed child) never is."""

    def __init__(self, *, keep: int = 16, speculative_max: int = 2,
                 uncached: tuple[type[BaseException], ...] = (), thread_name: str = "wb-xla"):
        self.keep, self.speculative_max, self.uncached, self.thread_name = keep, speculative_max, uncached, thread_name
        self._lock = threading.Condition()  # guards everything below (an RLock inside: callbacks may re-enter)
        self._cache: OrderedDict[Hashable, _Entry] = OrderedDict()  # queued, running and finished compiles
        self._queue: list[_Entry] = []
        self._running: list[_Entry] = []
        self._thread: threading.Thread | None = None
        self._runs = 0
        self._idle: list[Callable[[], None]] = []  # when_idle's calls, waiting for the last compile to end

    @property
    def runs(self) -> int:
        """How many compiles this queue has run (each job run once, cached or not)."""
        return self._runs

    def start(self, job: CompileJob, owner: Any = None) -> None:
        """Queue ``job`` unless it is cached or queued already; older queued compiles of the same
        program that nobody waits for are cancelled (superseded), and the oldest idle others beyond
        ``speculative_max``."""
        with self._lock:
            self._entry(job, owner, speculative=True)

    def when_idle(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once no compile is queued or running: now, in this thread, when none is; else on
        the compile thread, after the last one ends. It watches no compile (none is kept from cancelling),
        and its exception is dropped. For work that must not compete with the compiles a user waits for."""
        with self._lock:
            if self._queue or self._running:
                self._idle.append(fn)
                return
        _quietly(fn)

    def ready(self, key: Hashable) -> bool:
        """Whether the compile ``key`` has ended (also when it failed): its result needs no wait."""
        with self._lock:
            e = self._cache.get(key)
            return e is not None and e.future.done()

    def phase(self, key: Hashable) -> str:
        """What the compile ``key`` is doing now, in words: "queued behind 2 compiles" while others run
        or go first, then what its job says it does (``phase.say_phase``); "" when it has ended or is unknown."""
        with self._lock:
            e = self._cache.get(key)
            if e is None or e.future.done():
                return ""
            if e in self._running:
                return e.phases.now
            if e not in self._queue:
                return "starting"
            # the order the compile thread takes them in: those someone waits for first, then the rest
            order = [q for q in self._queue if q.waiters] + [q for q in self._queue if not q.waiters]
            ahead = len(self._running) + order.index(e)
            return f"queued behind {ahead} compile{'s' * (ahead != 1)}" if ahead else "starting"

    def steps(self, key: Hashable) -> list[tuple[str, float]]:
        """The steps the compile ``key`` said it took (``phase.say_phase``), each with its seconds; [] when
        it is unknown (never queued, or forgotten) or has said none yet."""
        with self._lock:
            e = self._cache.get(key)
            return e.phases.steps() if e is not None else []

    def result(self, job: CompileJob, owner: Any = None) -> Served:
        """``job``'s outcome, waiting for it when it is queued or running (ahead of the compiles nobody
        waits for), queued anew when it is not cached; the job's exception is raised here."""
        with self._lock:
            e = self._entry(job, owner)
            e.waiters += 1
            # asked on the compile thread itself (in a callback): waiting would wait forever, so run it here
            inline = threading.current_thread() is self._thread and self._take(e)
        try:
            if inline:
                self._run(e)
            value = e.future.result()
        finally:
            with self._lock:
                e.waiters -= 1
        return Served(value, owner is None or e.owner is not owner)

    def watch(self, job: CompileJob, owner: Any = None) -> Future:
        """A new Future, done (result None) when ``job``'s outcome can be had without waiting. While it
        is pending the compile is never cancelled for a newer one; ``cancel()`` it when the outcome is
        no longer wanted (a queued compile that nobody else waits for is then cancelled too). Its
        callbacks run on the compile thread: they should hand work on, not wait for compiles there."""
        mine: Future = Future()
        with self._lock:
            e = self._entry(job, owner)
            e.waiters += 1
        held = [True]

        def release() -> bool:  # under the lock: the first of arrival and withdrawal lets go
            if held[0]:
                held[0] = False
                e.waiters -= 1
                return True
            return False

        def arrived(f: Future) -> None:
            with self._lock:
                release()
            try:
                mine.cancel() if f.cancelled() else mine.set_result(None)
            except InvalidStateError:  # withdrawn meanwhile
                pass

        def withdrawn(f: Future) -> None:
            if f.cancelled():
                with self._lock:
                    if release() and e.waiters == 0 and e in self._queue:
                        self._cancel(e)

        mine.add_done_callback(withdrawn)
        e.future.add_done_callback(arrived)
        return mine

    def clear(self) -> None:
        """Forget every compile: queued ones that nobody waits for are cancelled, and a running one is
        waited for, so none runs on afterwards."""
        with self._lock:
            for e in [e for e in self._queue if e.waiters == 0]:
                self._cancel(e)
            self._cache.clear()
            running = [e.future for e in self._running]
        futures_wait(running)

    def close(self, timeout: float = 600) -> None:
        """Leave no compile queued, and let the running one end (XLA cannot be stopped mid-compile)."""
        with self._lock:
            for e in list(self._queue):
                self._cancel(e)
            running = [e.future for e in self._running]
        futures_wait(running, timeout=timeout)

    # -- under the lock --------------------------------------------------------------------------------
    def _entry(self, job: CompileJob, owner: Any, speculative: bool = False) -> _Entry:
        """The live entry of ``job``'s key, queued anew if there is none. A speculative new one cancels
        the queued compiles of the same program that nobody waits for, and the oldest idle others
        beyond ``speculative_max``."""
        e = self._cache.get(job.key)
        if e is not None:
            self._cache.move_to_end(job.key)
            return e
        e = _Entry(job, owner)
        if speculative:
            for q in [q for q in self._queue if q.waiters == 0 and q.job.program == job.program]:
                self._cancel(q)
            idle = [q for q in self._queue if q.waiters == 0]
            for q in idle[: max(0, len(idle) + 1 - self.speculative_max)]:
                self._cancel(q)
        self._cache[job.key] = e
        self._queue.append(e)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self.thread_name, daemon=True)
            self._thread.start()
        self._lock.notify_all()
        return e

    def _cancel(self, e: _Entry) -> None:
        """Drop a queued compile: out of the queue and the cache, its Future cancelled."""
        self._queue.remove(e)
        if self._cache.get(e.job.key) is e:
            del self._cache[e.job.key]
        e.future.cancel()

    def _take(self, e: _Entry) -> bool:
        """Take a queued compile to run it now; False when it is not queued."""
        if e not in self._queue:
            return False
        self._queue.remove(e)
        if not e.future.set_running_or_notify_cancel():
            return False
        self._running.append(e)
        return True

    # -- running -----------------------------------------------------------------------------------------
    def _work(self) -> None:
        """The compile thread: the first queued compile that someone waits for, else the oldest queued one."""
        while True:
            with self._lock:
                while not self._queue:
                    self._lock.wait()
                e = next((q for q in self._queue if q.waiters), self._queue[0])
                if not self._take(e):
                    continue
            self._run(e)

    def _run(self, e: _Entry) -> None:
        """Run a taken compile; an exception is its outcome too (whoever asks sees it)."""
        self._runs += 1
        try:
            with saying_to(e.phases):  # the job's say_phase calls go there
                value, error = e.job.run(), None
        except BaseException as exc:  # noqa: BLE001 -- handed to whoever asks, as the compile's outcome
            value, error = None, exc
        with self._lock:
            self._running.remove(e)
            if isinstance(error, self.uncached) and self._cache.get(e.job.key) is e:  # no answer: never kept
                del self._cache[e.job.key]
            done = [k for k, q in self._cache.items() if q.future.done()]  # forget the oldest finished ones
            for k in done[: max(0, len(done) + 1 - self.keep)]:
                del self._cache[k]
        if error is not None:
            e.future.set_exception(error)
        else:
            e.future.set_result(value)
        with self._lock:
            idle: list[Callable[[], None]] = []
            if not (self._queue or self._running):  # the last compile ended: when_idle's calls are due
                idle, self._idle = self._idle, []
        for fn in idle:
            _quietly(fn)


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 -- see CompileQueue.when_idle
        pass


# the process's one queue of XLA compiles; a compile whose probe child was killed gave no answer, so it is not kept
XLA_QUEUE = CompileQueue(keep=16, speculative_max=2, uncached=(XlaProbeDied,))
atexit.register(XLA_QUEUE.close)
