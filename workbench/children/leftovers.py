"""The workbench's files in the temporary folder: its children's logs and XLA's dump folders.

Each name carries the id of the process that made it (``hlo-workbench-<kind>-<pid>-<random>``), so that a
later process can tell a dead owner's files from a live one's: a process killed mid-compile (SIGKILL, the
kernel restarted) runs no clean-up, and its dump folder can hold hundreds of megabytes. ``sweep`` removes
the entries of owners that are no longer alive and runs when this module is first imported; at exit a
process removes whatever of its own is still there, and on a SIGTERM (``kill``, a container stopping) too:
a handler removes them, then ends the process as SIGTERM would have, or hands the signal to the handler
that was there before (which exits through ``atexit``, or keeps the process and its files alive). A
SIGTERM that arrives while the main thread is inside one long C call (an XLA compile) takes effect when
that call returns, as for every Python handler. SIGKILL cannot be handled: the next import's sweep
removes what a killed process left. Names without a process id (made by older versions)
are left alone: nothing tells whether their owner still runs.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import tempfile
import threading

__all__ = ["LOG_LIMIT", "TAIL_BYTES", "prefix", "log_file", "read_from", "bounded", "tail", "sweep", "remove_own",
           "on_sigterm"]

# a child's stderr is kept for the tail shown when it crashes; past this it starts afresh
LOG_LIMIT = 4 * 1024 * 1024
# what ``tail`` reads at most from the end of a log, whatever its size
TAIL_BYTES = 64 * 1024

_NAME = re.compile(r"hlo-workbench-[a-z]+(?:-[a-z]+)*-(\d+)-")


def prefix(kind: str) -> str:
    """The prefix for ``tempfile.mkstemp`` / ``mkdtemp`` of a ``kind`` ("worker", "xla", ...) entry
    owned by this process."""
    if not _sigterm["installed"]:  # the import ran outside the main thread: try again from here
        on_sigterm()
    return f"hlo-workbench-{kind}-{os.getpid()}-"


def log_file(kind: str) -> str:
    """A new, empty log file of this process for a ``kind`` of child; returns its path."""
    fd, path = tempfile.mkstemp(prefix=prefix(kind), suffix=".log")
    os.close(fd)
    return path


def read_from(path: str, offset: int) -> str:
    """What the log at ``path`` holds past ``offset`` ("" when it is gone)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def bounded(path: str) -> int:
    """The size of the log at ``path`` once it is within LOG_LIMIT (emptied when past it): the offset
    from which a request's output is read. The children open their logs for appending, so they write
    at the new end."""
    try:
        size = os.path.getsize(path)
        if size > LOG_LIMIT:
            os.truncate(path, 0)
            size = 0
        return size
    except OSError:
        return 0


def tail(path: str, lines: int) -> str:
    """The last ``lines`` lines of the log at ``path`` ("" when it is gone), read from its last
    TAIL_BYTES bytes only: a child that printed gigabytes costs no more to show than one that did not."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _remove(path: str) -> bool:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except OSError:
        return False


def _entries(folder: str):
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = _NAME.match(name)
        if match:
            yield name, int(match.group(1))


def sweep(folder: str | None = None) -> int:
    """Remove the workbench entries in ``folder`` (the temporary folder) whose owning process is no
    longer alive; returns how many. One listing of the folder, one liveness check per owner."""
    folder = folder or tempfile.gettempdir()
    me, verdicts, removed = os.getpid(), {}, 0
    for name, pid in _entries(folder):
        if pid == me:
            continue
        if pid not in verdicts:
            verdicts[pid] = _alive(pid)
        if not verdicts[pid]:
            removed += _remove(os.path.join(folder, name))
    return removed


def remove_own(folder: str | None = None) -> int:
    """Remove this process's entries (at exit: dump folders whose removal was still queued)."""
    folder = folder or tempfile.gettempdir()
    me = os.getpid()
    return sum(_remove(os.path.join(folder, name)) for name, pid in _entries(folder) if pid == me)


# the SIGTERM handler: whether it is installed, and the handler that was there before it
_sigterm: dict = {"installed": False, "previous": signal.SIG_DFL}


def _terminated(signum, frame) -> None:
    """SIGTERM: hand it to the handler that was there before, or remove this process's entries and end
    it as SIGTERM's default would (killed by the signal, the exit status its parent expects)."""
    previous = _sigterm["previous"]
    if callable(previous):
        previous(signum, frame)  # it decides: exiting runs atexit's remove_own, staying keeps the files in use
        return
    remove_own()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def on_sigterm() -> bool:
    """Install ``_terminated`` as the SIGTERM handler, once, keeping the one there before to hand the
    signal to; whether it is installed. Not where the signal is ignored (SIG_IGN), held by a handler
    that is not Python's (``getsignal`` gives None), or from a thread other than the main one (Python
    sets handlers only there)."""
    if _sigterm["installed"]:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    previous = signal.getsignal(signal.SIGTERM)
    if previous is None or previous == signal.SIG_IGN:
        return False
    try:
        signal.signal(signal.SIGTERM, _terminated)
    except (ValueError, OSError):  # not the main thread of the main interpreter
        return False
    _sigterm.update(installed=True, previous=previous)
    return True


sweep()
atexit.register(remove_own)
on_sigterm()
