"""Peak memory of a process, as the benchmarks report it."""


def peak_rss_mib(pid: int | None) -> float | None:
    """The peak resident set of process ``pid`` (VmHWM), in MiB; None when it cannot be read. Not
    getrusage's ru_maxrss: Linux carries that across exec, so a child started by a large parent
    reports the parent's size."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
