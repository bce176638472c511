"""The workbench's files in the temporary folder: its children's logs and XLA's dump folders.

Each name carries the id of the process that made it (``hlo-workbench-<kind>-<pid>-<random>``), so that a
later process can tell a dead owner's files from a live one's: a process killed mid-compile (SIGKILL, the
kernel restarted) runs no clean-up, and its dump folder can hold hundreds of megabytes. ``sweep`` removes
the entries of owners that are no longer alive and runs when this module is first imported; at exit a
process removes whatever of its own is still there. Names without a process id (made by older versions)
are left alone: nothing tells whether their owner still runs.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile

__all__ = ["LOG_LIMIT", "TAIL_BYTES", "prefix", "log_file", "read_from", "bounded", "tail", "sweep", "remove_own"]

# a child's stderr is kept for the tail shown when it crashes; past this it starts afresh
LOG_LIMIT = 4 * 1024 * 1024
# what ``tail`` reads at most from the end of a log, whatever its size
TAIL_BYTES = 64 * 1024

_NAME = re.compile(r"hlo-workbench-[a-z]+(?:-[a-z]+)*-(\d+)-")


def prefix(kind: str) -> str:
    """The prefix for ``tempfile.mkstemp`` / ``mkdtemp`` of a ``kind`` ("worker", "xla", ...) entry
    owned by this process."""
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


sweep()
atexit.register(remove_own)
