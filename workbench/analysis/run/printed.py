"""What a program prints while it runs, caught: its host callbacks (``jax.debug.print``, a ``print`` inside
``jax.pure_callback`` or ``io_callback``), the Python warnings raised meanwhile, and whatever reaches the
process's standard output or error at the file-descriptor level (a C library's ``printf`` in a callback).

A run calls a program many times (a warm-up, the timed repeats, the reference and its float64 evaluation);
the user asked for one call, so ``captured`` keeps what the first call printed (``RunResult.printed``) and
drops the rest. Host callbacks print from XLA's runtime threads, where Jupyter's own streams would send
them to the kernel's log rather than to the cell: here ``sys.stdout``, ``sys.stderr`` and file descriptors
1 and 2 all point at one temporary file while the call runs, and ``jax.effects_barrier()`` waits for
every callback to have printed before they are put back.

While a capture is on, the whole process's output goes to it, other threads' too (a progress bar drawn
meanwhile by another thread is caught with the program's output); captures in several threads take
turns (one lock), and a capture inside another keeps its own text from the outer one.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
import tempfile
import threading
import warnings
from typing import Iterator

import jax

__all__ = ["captured", "may_print", "captured_if_printing"]

_TURN = threading.RLock()  # the process has one stdout: one capture at a time, nesting in one thread allowed


def may_print(text: str) -> bool:
    """Whether a program of this text (MLIR or HLO) can print while it runs: only through a host callback (a custom
    call to one, by any of its names; on a TPU, transfers with the host). A conservative test on the text: a
    capture takes the whole process's output, so a program that cannot print is run without one."""
    return "callback" in text or "_xla_host_transfer" in text


def captured_if_printing(text: str, into: list[str] | None = None, echo: bool = False):
    """``captured(into, echo)`` where a program of ``text`` can print (``may_print``); else a block that catches
    nothing, so other threads' output is left alone."""
    return captured(into, echo) if may_print(text) else contextlib.nullcontext()


@contextlib.contextmanager
def captured(into: list[str] | None = None, echo: bool = False) -> Iterator[None]:
    """Catch everything printed inside the ``with`` block: its lines (each with its line end) are appended
    to ``into`` (None: dropped), and with ``echo`` written to ``sys.stdout`` as it was before, once the
    streams are back, so the user sees them as their own call would print them. Python warnings are shown
    in the caught ``sys.stderr`` (Python's format, whatever ``warnings.showwarning`` was), once per place in the block whatever was shown before it. The
    streams are put back, and ``into`` and the echo get what was printed, when the block raises too."""
    with _TURN:
        with tempfile.TemporaryFile() as sink:
            for stream in (sys.stdout, sys.stderr):
                _flush(stream)
            _flush_c()
            saved_fds = _redirect_fds(sink.fileno())
            python = io.TextIOWrapper(io.FileIO(os.dup(sink.fileno()), "wb"), encoding="utf-8", errors="replace",
                                      line_buffering=True, write_through=True)
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = python
            try:
                with warnings.catch_warnings():  # entering resets the shown-once registries
                    warnings.showwarning = _shown_to(python)
                    try:
                        yield
                    finally:
                        _barrier()
            finally:
                sys.stdout, sys.stderr = saved
                _flush(python)
                _flush_c()
                _restore_fds(saved_fds)
                python.close()
                sink.seek(0)
                text = sink.read().decode("utf-8", errors="replace")
                if into is not None:
                    into.extend(text.splitlines(keepends=True))
                if echo and text:
                    sys.stdout.write(text)
                    _flush(sys.stdout)


def _shown_to(stream):
    """``warnings.showwarning`` writing to ``stream`` (the caught stderr) as Python's own would, so a warning
    is in the run's output wherever the user's session sends warnings otherwise (a test runner's list)."""
    def show(message, category, filename, lineno, file=None, line=None):
        stream.write(warnings.formatwarning(message, category, filename, lineno, line))
    return show


def _barrier() -> None:
    """Wait until every host callback of the calls made so far has run (their prints are made)."""
    try:
        jax.effects_barrier()
    except Exception:  # noqa: BLE001 -- a failed callback already failed the call; its output is kept
        pass


def _flush(stream) -> None:
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):  # a closed or odd stream: nothing of ours is lost
        pass


def _flush_c() -> None:
    """C's stdio buffers (``printf``), emptied to where they point now."""
    if _LIBC is not None:
        _LIBC.fflush(None)


def _libc():
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


_LIBC = _libc()


def _redirect_fds(target: int) -> dict[int, int]:
    """File descriptors 1 and 2 pointed at ``target``; returns copies of what they were (those that are open)."""
    saved = {}
    for fd in (1, 2):
        try:
            saved[fd] = os.dup(fd)
        except OSError:  # closed (a daemon): nothing printed there reaches anyone anyway
            continue
        os.dup2(target, fd)
    return saved


def _restore_fds(saved: dict[int, int]) -> None:
    for fd, copy in saved.items():
        os.dup2(copy, fd)
        os.close(copy)
