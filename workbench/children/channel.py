"""The numbered request/answer exchange the workbench's child processes speak over their socket.

A ``Child`` (the pass worker, the XLA probe child) answers one request at a time over a
``multiprocessing.connection.Connection``. A reply that nobody read -- its caller was
interrupted while it waited -- would otherwise be taken as the answer to the next request, and every
later answer would be one behind. Each request carries a number, the answer repeats it, and the client
drops any answer that is not to the request it sent; a client interrupted mid-exchange ends the child
(the stream may be cut mid-message), so the next request goes to a fresh one.
"""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

__all__ = ["Request", "Response", "answer_to", "ended"]


@dataclass(frozen=True)
class Request:
    """``method(*args)``, numbered ``id`` by the client that sends it."""

    id: int
    method: str
    args: tuple


@dataclass(frozen=True)
class Response:
    """The answer to the request numbered ``id``: "ok" with its value, "error" with what went wrong (the
    message and the child's traceback), or "ready" (id 0, once, when the child has started); ``seconds``
    is how long the method ran in the child."""

    id: int
    status: Literal["ok", "error", "ready"]
    payload: Any
    seconds: float = 0.0


def answer_to(conn: Connection, wanted: int, limit: float) -> tuple[Response | None, int]:
    """Wait up to ``limit`` seconds for the Response to the request numbered ``wanted``, sent before: that
    Response (None when none came in time) and how many answers to earlier requests were read and dropped
    meanwhile (a child's "ready", read here when its start was not waited for, is not one of them). EOFError
    or a pipe error means the child died."""
    deadline = time.monotonic() + limit
    dropped = 0
    while conn.poll(max(0.0, deadline - time.monotonic())):
        answer = conn.recv()
        if isinstance(answer, Response) and answer.id == wanted:
            return answer, dropped
        if not (isinstance(answer, Response) and answer.status == "ready"):
            dropped += 1
    return None, dropped


KILLED = "was killed by signal 9 (SIGKILL): the out-of-memory killer or a user's kill -9"


def ended(code: int | None) -> str:
    """How a child with ``Popen.returncode`` ``code`` ended, in words. A SIGKILL comes from outside the
    child -- the kernel's out-of-memory killer, or someone's ``kill -9`` -- and says nothing about what it
    was doing; which of the two it was is not known here, so the words name both (``KILLED``)."""
    if code is None:
        return "died (its exit code is unknown)"
    if code == -signal.SIGKILL:
        return KILLED
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed ({name}, exit code {code})"
    return f"exited with code {code}"
