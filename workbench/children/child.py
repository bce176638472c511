"""One child interpreter that answers numbered requests over a socket: how the workbench runs the code
that may take a process down (Enzyme-JaX and MLIR passes, XLA compiles with options it aborts on).

A child is ``python -P -m <module> <fd>`` (``env.command``) with one end of a socketpair as ``fd`` and
``child_env()`` as its environment; its module serves a table of named methods with ``serve``. Its
stdout and stderr go to a log file of its own (``leftovers.log_file``), kept within
``leftovers.LOG_LIMIT``; what a request made it print is read from there when the request fails,
so the diagnostics of a pass that crashed can be shown. Requests are numbered (``channel.answer_to``):
an answer to another request is dropped, and a request interrupted while it waits ends the process,
so the next one goes to a fresh process and never reads the interrupted one's answer.

A ``Child`` that nobody references any more is collected, and its finalizer ends the process and
removes the log; at interpreter exit the finalizers of the live ones run.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Mapping

from . import leftovers
from .channel import Request, Response, answer_to, ended
from .env import child_env, command

__all__ = ["Child", "ChildDied", "ChildFailed", "ChildTimeout", "serve"]


class ChildFailed(Exception):
    """The method raised in the child, which lives on: its message, and what the child printed meanwhile."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.message, self.log = message, log


class ChildDied(Exception):
    """The child ended before it answered: its exit code (``Popen.returncode``; None when it is not
    known) and what it printed meanwhile."""

    def __init__(self, exitcode: int | None, log: str):
        super().__init__(f"child process {ended(exitcode)}")
        self.exitcode, self.log = exitcode, log


class ChildTimeout(Exception):
    """No answer within ``seconds``; the child was ended."""

    def __init__(self, seconds: float, log: str):
        super().__init__(f"no answer after {seconds:g} s")
        self.seconds, self.log = seconds, log


@dataclass
class _Process:
    popen: subprocess.Popen
    conn: Connection
    ready: bool = True  # False: started without waiting (``Child.start_soon``); the first request waits

    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_code(self, grace: float) -> int | None:
        """Its exit code once it has ended (None when it has not within ``grace`` seconds)."""
        try:
            return self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            return None

    def end(self, grace: float) -> None:
        if self.alive():
            self.popen.kill()
        self.exit_code(grace)  # reaped: no zombie left
        self.conn.close()


class _Held:
    """What a Child's finalizer ends: its process and its log. Not the Child itself, which a finalizer
    holding it would keep alive for ever."""

    def __init__(self, grace: float):
        self.grace = grace
        self.process: _Process | None = None
        self.log_path: str | None = None

    def end_process(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.end(self.grace)

    def release(self) -> None:
        self.end_process()
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.log_path)
            self.log_path = None


class Child:
    """One child process of ``module`` (``kind`` names its log), started on first use and again after
    it died or was ended.

    ``env`` makes its environment at each start. ``ready_within``: seconds a start waits for the child to
    say it is ready (its imports done); None starts it without waiting, and the first request's time
    limit covers the start. ``restarts`` counts the starts that replaced a process that died or was
    ended (not a ``close``), ``stale`` the answers to other requests dropped, ``sent`` the requests by
    method. One request at a time: a second caller waits for the first's answer.
    """

    def __init__(self, module: str, kind: str, env: Callable[[], dict] = child_env,
                 ready_within: float | None = 120.0, grace: float = 10.0):
        self.module, self.kind, self.ready_within = module, kind, ready_within
        self._env = env
        self.restarts = 0
        self.stale = 0
        self.sent: Counter[str] = Counter()
        self._next_id = 0
        self._lost = False  # the last process died or was ended: the next start is a restart
        self._lock = threading.Lock()
        self._held = _Held(grace)
        weakref.finalize(self, self._held.release)

    @property
    def log_path(self) -> str | None:
        """The log of its processes' output (made at the first start, removed by ``close``)."""
        return self._held.log_path

    @property
    def pid(self) -> int | None:
        """The process id while a process runs; None before the first start and after it ended."""
        process = self._held.process
        return process.popen.pid if process is not None and process.alive() else None

    def alive(self) -> bool:
        """Whether a process runs (perhaps still starting)."""
        return self.pid is not None

    def log_since(self, offset: int) -> str:
        """What the processes printed to the log past ``offset``."""
        return leftovers.read_from(self._held.log_path, offset) if self._held.log_path else ""

    def start(self) -> None:
        """Start a process unless one runs. Raises ChildDied or ChildTimeout when it does not get ready."""
        with self._lock:
            self._running()

    def start_soon(self) -> None:
        """Start a process unless one runs, without waiting for it to get ready: its imports run while the
        caller goes on, and the first request waits for the rest (and raises as ``start`` would)."""
        with self._lock:
            self._running(wait=False)

    def _running(self, wait: bool = True) -> _Process:
        process = self._held.process
        if process is not None and process.alive():
            if wait and not process.ready:
                self._await_ready(process)
            return process
        if process is not None or self._lost:
            self.restarts += 1
        self._held.end_process()  # reap a process that ended by itself
        self._lost = False
        self._held.process = self._spawn(wait)
        return self._held.process

    def _spawn(self, wait: bool = True) -> _Process:
        if self._held.log_path is None:
            self._held.log_path = leftovers.log_file(self.kind)
        parent, child = socket.socketpair()
        try:
            with open(self._held.log_path, "ab") as log:
                popen = subprocess.Popen(command(self.module, str(child.fileno())), pass_fds=(child.fileno(),),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self._env())
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        process = _Process(popen, Connection(parent.detach()), ready=False)
        if wait:
            self._await_ready(process)
        return process

    def _await_ready(self, process: _Process) -> None:
        """Wait for the child's word that its imports are done; end it and raise if it dies or stays silent."""
        if self.ready_within is None:
            process.ready = True
            return
        try:
            ready = process.conn.poll(self.ready_within)
            if ready:
                process.conn.recv()
        except EOFError:
            code = process.exit_code(self._held.grace)
            process.end(self._held.grace)
            self._lost = True
            raise ChildDied(code, self.log_since(0)) from None
        except BaseException:  # interrupted while it starts: it is nobody's, so it ends here
            process.end(self._held.grace)
            raise
        if not ready:
            process.end(self._held.grace)
            self._lost = True
            raise ChildTimeout(self.ready_within, self.log_since(0))
        process.ready = True

    def call(self, method: str, args: tuple, timeout: float) -> Response:
        """Run ``method(*args)`` in the child (started if none runs) and return its "ok" Response (the
        value and the seconds it took there).

        Raises ChildFailed when the method raised (the child lives on), ChildDied when the child ended
        before it answered, ChildTimeout when no answer came within ``timeout`` seconds (the child is
        ended); after either, the next call starts a fresh child. An interrupted wait ends the child too.
        """
        got: list[Response] = []
        self.call_ahead(method, lambda k: None if k else tuple(args), timeout, got.append)
        return got[0]

    def call_ahead(self, method: str, args: Callable[[int], tuple | None], timeout: float,
                   on_answer: Callable[[Response], None]) -> None:
        """Run ``method`` on one request after another, each sent while the child still works on the one
        before, so that it never waits for this process between them: ``args(k)`` gives request k's
        arguments (asked once request k-2's answer is in, before request k-1's may be), None ending the
        series; ``on_answer`` gets each "ok" Response in order, while the child works on the next. A request
        may take ``timeout`` seconds from the answer before it. Raises as ``call`` does for the first request
        that failed, once the answers to those sent after it are read (none is left for a later call to
        drop). An interrupt, or an error of ``on_answer`` or ``args``, ends the child, as an interrupted
        ``call`` does: an answer would be due."""
        with self._lock:
            process = self._running()
            offset = leftovers.bounded(self._held.log_path)
            due: list[int] = []  # ids sent and not answered yet, oldest first
            k, more, failed = 0, True, None
            try:
                while due or more:
                    while more and len(due) < 2:
                        request = args(k)
                        if request is None:
                            more = False
                            break
                        self.sent[method] += 1
                        self._next_id += 1
                        process.conn.send(Request(self._next_id, method, tuple(request)))
                        due.append(self._next_id)
                        k += 1
                    if not due:
                        break
                    answer = self._answer(process, due.pop(0), timeout, offset)
                    if answer.status == "error" and failed is None:
                        failed, more = ChildFailed(answer.payload[0], self.log_since(offset)), False
                    elif failed is None:
                        on_answer(answer)
            except (EOFError, BrokenPipeError, ConnectionResetError):
                code = process.exit_code(self._held.grace)
                self._lose()
                raise ChildDied(code, self.log_since(offset)) from None
            except ChildTimeout:
                raise
            except BaseException:
                self._lose()
                raise
            if failed is not None:
                raise failed

    def _answer(self, process: _Process, wanted: int, timeout: float, offset: int) -> Response:
        """The answer to request ``wanted``, read within ``timeout`` seconds (a ChildTimeout ends the child)."""
        answer, dropped = answer_to(process.conn, wanted, timeout)
        self.stale += dropped
        if answer is None:
            self._lose()
            raise ChildTimeout(timeout, self.log_since(offset))
        return answer

    def _lose(self) -> None:
        self._held.end_process()
        self._lost = True

    def interrupt(self) -> None:
        """End the process now, from any thread, without waiting for the request under way (which then
        raises ChildDied); the next call starts a fresh one."""
        process = self._held.process
        if process is not None and process.alive():
            process.popen.kill()

    def kill(self) -> None:
        """End the process (the next call starts a fresh one, counted as a restart)."""
        with self._lock:
            if self._held.process is not None:
                self._lose()

    def restart(self) -> None:
        """End the process and start a fresh one."""
        with self._lock:
            if self._held.process is not None:
                self._lose()
            self._running()

    def close(self) -> None:
        """End the process and remove its log; a later call starts afresh, with a new log."""
        with self._lock:
            self._held.release()
            self._lost = False


# ---- the child's side ---------------------------------------------------------------------------


def serve(methods: Mapping[str, Callable[..., Any]], setup: Callable[[], None] | None = None) -> None:
    """A child's loop (its module's ``__main__``): run ``setup`` (the imports worth paying once), say it
    is ready, then answer each request with ``methods[request.method](*request.args)`` until the parent
    closes the connection. A method that raises is answered with an "error" and the loop goes on."""
    conn = Connection(int(sys.argv[1]))
    # A Ctrl-C in a terminal reaches the whole process group; the parent decides what an interrupt ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if setup is not None:
        setup()
    conn.send(Response(0, "ready", None))
    while True:
        try:
            req: Request = conn.recv()
        except EOFError:
            return
        start = time.perf_counter()
        try:
            method = methods.get(req.method)
            if method is None:
                raise LookupError(f"this child has no method {req.method!r}; it has {', '.join(sorted(methods))}")
            result = method(*req.args)
            conn.send(Response(req.id, "ok", result, time.perf_counter() - start))
        except Exception as e:  # the method's own error: reported, and the child keeps serving
            sys.stderr.flush()
            conn.send(Response(req.id, "error", (f"{type(e).__name__}: {e}", traceback.format_exc(limit=2)),
                               time.perf_counter() - start))
