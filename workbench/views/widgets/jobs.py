"""The panel's background jobs: one worker thread that runs them in order, and a status line that
says what runs, for how long, and how it ended.

A rebuild, a run or a scan can take seconds to minutes; on the worker thread the notebook stays
responsive meanwhile. A job that raises is shown in the status line and kept in ``last_error``,
never raised into the kernel: a notebook view must not break the cell that made it.

Work that waits for something outside the panel (XLA's compile in the background) is the second
kind: ``after(future, label, work)`` holds no place in the queue while it waits; the status line
says what it waits for whenever no job runs, and ``work`` joins the queue once the future is done.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait as wait_futures
from dataclasses import dataclass, field
from typing import Callable

import ipywidgets as W

from . import html

__all__ = ["Jobs"]


@dataclass(eq=False)
class _Awaiting:
    future: Future
    says: Callable[[], str]  # the status line's words, asked anew at each tick (what is waited for now)
    started: float
    handled: threading.Event = field(default_factory=threading.Event)  # its work queued, or dropped


def _message(e: BaseException) -> str:
    return str(e).strip() or type(e).__name__


class Jobs:
    """Runs the panel's work one job at a time and reports on it in ``status``.

    ``on_busy(busy)`` hears when the first job marked ``busy`` is queued and when the last one ends
    (the panel disables its action buttons in between); ``on_ended()`` when any job has ended (the panel's
    saved view then looks for what changed). Without ``background`` every job runs at once on the caller's
    thread, which scripts and tests use to read the result right after.
    """

    def __init__(self, status: W.HTML, on_busy: Callable[[bool], None], background: bool = True,
                 on_ended: Callable[[], None] = lambda: None):
        self.status = status
        self._on_ended = on_ended
        self.label = ""  # what the running job says it does
        self.note = ""  # what the running job has said of its progress, shown after the time
        self.done: int | None = None  # how much of the running job's work is done, of ``total``
        self.total: int | None = None  # (None: the job has not said, or cannot know)
        self.last_error: str | None = None  # the last job's failure, None when it succeeded
        self._on_busy = on_busy
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="wb-panel") if background else None
        self._futures: list[Future] = []
        self._busy = 0  # queued or running busy jobs
        self._busy_lock = threading.Lock()
        self._started = time.perf_counter()  # when the running job started
        self._running = False
        self._awaiting: _Awaiting | None = None  # what after() waits for
        self._last_status = ""  # how the last job ended (markup), kept in the status line while awaiting
        # held while the status line is written by a ticker or for a job's start and end, so that no
        # tick lands after the word it should have come before
        self._status_lock = threading.RLock()

    @property
    def background(self) -> bool:
        """Whether the jobs run on the worker thread (else at once, on the caller's thread)."""
        return self._executor is not None

    @property
    def awaiting(self) -> str:
        """What the panel waits for outside the queue (``after``), "" when nothing."""
        a = self._awaiting
        return a.says() if a is not None else ""

    def after(self, future: Future, label: str | Callable[[], str], work: Callable[[], None], then: str = "",
              ended: Callable[[float, float], str] | None = None) -> None:
        """Queue ``work`` (not busy, labelled ``then``) once ``future`` is done, holding no place in the
        queue meanwhile; until then the status line says ``label`` (or what ``label()`` gives, asked at
        each tick: what is waited for now) and for how long, whenever no job runs. When it ends, the line
        says how long the wait was and the work took (or ``ended(waited, took)``, with the seconds of
        both). A newer ``after`` replaces this one (its work is then dropped), and so does a cancelled
        ``future``. Without ``background``, wait for ``future`` here and run ``work`` at once."""
        says = label if callable(label) else (lambda: label)
        if ended is None:
            def ended(waited: float, took: float) -> str:
                return f"{then or says()}: ready after {waited:.1f} s, shown in {took:.2f} s"
        if self._executor is None:
            wait_futures([future])
            if not future.cancelled():
                self._run(then or says(), work, False)
            return
        a = _Awaiting(future, says, time.perf_counter())
        with self._busy_lock:
            old, self._awaiting = self._awaiting, a
        if old is not None:
            old.handled.set()
        if not self._running:
            self._show_awaiting(a)
        threading.Thread(target=self._tick_awaiting, args=(a,), daemon=True).start()

        def arrived(f: Future) -> None:
            try:
                if self._awaiting is a and not f.cancelled():
                    waited = time.perf_counter() - a.started
                    self.submit(then or says(), work, busy=False, ended=lambda took: ended(waited, took))
            except RuntimeError:  # shut down meanwhile: the panel is closed
                pass
            finally:
                with self._busy_lock:
                    if self._awaiting is a:
                        self._awaiting = None
                a.handled.set()

        future.add_done_callback(arrived)

    def submit(self, label: str, work: Callable[[], None], *, busy: bool,
               ended: Callable[[float], str] | None = None) -> None:
        """Queue ``work``; ``busy`` work counts as busy from now until it ends. The status line then says
        ``ended(seconds)``, else the label and the seconds."""
        if busy:
            self._count_busy(+1)
        if self._executor is None:
            self._run(label, work, busy, ended)
            return
        with self._busy_lock:  # after()'s work is submitted from another thread
            self._futures = [f for f in self._futures if not f.done()]
            self._futures.append(self._executor.submit(self._run, label, work, busy, ended))

    def relabel(self, label: str) -> None:
        """What the running job does, once it knows (a rebuild learns its action only when it starts)."""
        self.label = label
        self.status.value = html.running(label, 0.0, self.note, self.done, self.total)

    def progress(self, done: int, total: int | None) -> None:
        """The running job's ``on_progress(done, total)``: the status line shows a determinate bar and
        "done/total" when ``total`` is known (the next tick redraws it with the time)."""
        self.done, self.total = done, total
        self.status.value = html.running(self.label, time.perf_counter() - self._started, self.note, done, total)

    def wait(self, timeout: float | None = 600, awaiting: bool = True) -> None:
        """Block until every queued job has ended, and with ``awaiting`` what ``after`` waits for and
        the work it queues then (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pending = [f for f in self._futures if not f.done()]
            outside = self._awaiting if awaiting else None
            if not pending and outside is None:
                return
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if pending:
                pending[0].result(timeout=left)
            elif not outside.handled.wait(left):  # its work is queued before it counts as handled
                raise TimeoutError(f"still waiting: {outside.label}")

    def shutdown(self) -> None:
        """Drop the queued jobs and what ``after`` waits for; the worker thread ends after the running job."""
        a, self._awaiting = self._awaiting, None
        if a is not None:
            a.handled.set()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, label: str, work: Callable[[], None], busy: bool,
             ended: Callable[[float], str] | None = None) -> None:
        stop = threading.Event()
        with self._status_lock:
            started = self._started = time.perf_counter()
            self.done = self.total = None
            self._running = True
        self.relabel(label)
        if self._executor is not None:
            threading.Thread(target=self._tick, args=(started, stop), daemon=True).start()
        final = None
        try:
            work()
        except Exception as e:  # shown in the panel: a notebook view never raises into the kernel
            self.last_error = f"{self.label} failed: {_message(e)}"
            final = self._last_status = html.failed(self.last_error)
        else:
            self.last_error = None
            took = time.perf_counter() - started
            final = html.done(ended(took) if ended else f"{self.label}: {took:.2f} s")
            self._last_status = ""  # a wait shown after it stands alone: only a failure stays beside it
        finally:
            # the ticker stops before the last word is written, under the lock it writes under: a tick
            # that woke just before the end can no longer put "running" back over how the job ended
            with self._status_lock:
                stop.set()
                if final is not None:
                    self.status.value = final
                self._running = False
            if self._awaiting is not None:
                self._show_awaiting(self._awaiting)
            self.note = ""
            self.done = self.total = None
            if busy:
                self._count_busy(-1)
            self._on_ended()

    def _tick(self, started: float, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            with self._status_lock:
                if not stop.is_set():
                    self.status.value = html.running(self.label, time.perf_counter() - started, self.note,
                                                     self.done, self.total)

    def _show_awaiting(self, a: "_Awaiting") -> None:
        with self._status_lock:  # checked and written at once: a job that starts meanwhile writes after
            if self._awaiting is a and not self._running:
                self.status.value = html.awaiting(a.says(), time.perf_counter() - a.started, self._last_status)

    def _tick_awaiting(self, a: "_Awaiting") -> None:
        while not a.handled.wait(0.5):
            self._show_awaiting(a)

    def _count_busy(self, step: int) -> None:
        with self._busy_lock:
            self._busy += step
            self._on_busy(self._busy > 0)
