"""The panel's background jobs: one worker thread that runs them in order, and a status line that
says what runs, for how long, and how it ended.

A rebuild, a run or a scan can take seconds to minutes; on the worker thread the notebook stays
responsive meanwhile. A job that raises is shown in the status line and kept in ``last_error``,
never raised into the kernel: a notebook view must not break the cell that made it.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import ipywidgets as W

from . import html

__all__ = ["Jobs"]


def _message(e: BaseException) -> str:
    return str(e).strip() or type(e).__name__


class Jobs:
    """Runs the panel's work one job at a time and reports on it in ``status``.

    ``on_busy(busy)`` hears when the first job marked ``busy`` is queued and when the last one ends
    (the panel disables its action buttons in between). Without ``background`` every job runs at
    once on the caller's thread, which scripts and tests use to read the result right after.
    """

    def __init__(self, status: W.HTML, on_busy: Callable[[bool], None], background: bool = True):
        self.status = status
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

    def submit(self, label: str, work: Callable[[], None], *, busy: bool) -> None:
        """Queue ``work``; ``busy`` work counts as busy from now until it ends."""
        if busy:
            self._count_busy(+1)
        if self._executor is None:
            self._run(label, work, busy)
            return
        self._futures = [f for f in self._futures if not f.done()]
        self._futures.append(self._executor.submit(self._run, label, work, busy))

    def relabel(self, label: str) -> None:
        """What the running job does, once it knows (a rebuild learns its action only when it starts)."""
        self.label = label
        self.status.value = html.running(label, 0.0, self.note, self.done, self.total)

    def progress(self, done: int, total: int | None) -> None:
        """The running job's ``on_progress(done, total)``: the status line shows a determinate bar and
        "done/total" when ``total`` is known (the next tick redraws it with the time)."""
        self.done, self.total = done, total
        self.status.value = html.running(self.label, time.perf_counter() - self._started, self.note, done, total)

    def show_error(self, e: BaseException) -> None:
        """An error outside any job (a click on a stage that is gone), shown the same way."""
        self.status.value = html.failed(_message(e))

    def wait(self, timeout: float | None = 600) -> None:
        """Block until every queued job has ended (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pending = [f for f in self._futures if not f.done()]
            if not pending:
                return
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            pending[0].result(timeout=left)

    def shutdown(self) -> None:
        """Drop the queued jobs and let the worker thread end after the running one."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, label: str, work: Callable[[], None], busy: bool) -> None:
        stop = threading.Event()
        started = self._started = time.perf_counter()
        self.done = self.total = None
        self.relabel(label)
        if self._executor is not None:
            threading.Thread(target=self._tick, args=(started, stop), daemon=True).start()
        try:
            work()
        except Exception as e:  # shown in the panel: a notebook view never raises into the kernel
            self.last_error = f"{self.label} failed: {_message(e)}"
            self.status.value = html.failed(self.last_error)
        else:
            self.last_error = None
            self.status.value = html.done(f"{self.label}: {time.perf_counter() - started:.2f} s")
        finally:
            stop.set()
            self.note = ""
            self.done = self.total = None
            if busy:
                self._count_busy(-1)

    def _tick(self, started: float, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            self.status.value = html.running(self.label, time.perf_counter() - started, self.note, self.done,
                                             self.total)

    def _count_busy(self, step: int) -> None:
        with self._busy_lock:
            self._busy += step
            self._on_busy(self._busy > 0)
