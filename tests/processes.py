"""Counting the processes a test leaves: this process's children by the module they run."""
import os


def children_running(module: str) -> set[int]:
    """This process's children that run ``python -m module``, and any zombie child (ended, never reaped)."""
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and (module.encode() in argv or stat[0] == "Z"):
            out.add(int(d))
    return out
