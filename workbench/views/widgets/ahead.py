"""Work the panel does ahead of the clicks that need it, on a thread of its own once its stages (XLA's
included) show: the reference the first Run is checked against (``exploration.running.warm_reference``: the
program as lowered and its float64 evaluation, compiled and run once, kept for every run of the trace; a Run
that comes meanwhile waits for it rather than making it again), and the import the Cost tab's first table
takes (pandas). bench/bench_panel.py measured the first Run of the tour's attention
example at 3.4 s where a later one took 0.9 s (3.3 CPU seconds against 0.9): the difference is that
reference. It is the only compile done ahead at open: XLA's compile of one module already keeps about two
cores busy, so more work ahead (the drift search's modules, 6 CPU seconds) made a toggle clicked meanwhile
twice as slow; "Find where it drifts" compiles its modules ahead once a check fails (``runtab``). Nothing
it does is shown, and a failure is dropped: the click that needs the work does it again and says why."""
from __future__ import annotations

import threading

from ...exploration.running import warm_reference

__all__ = ["ahead"]

_XLA_WAIT = 600.0  # seconds the work ahead waits for XLA's stages before it starts anyway


def ahead(ex, device: str) -> threading.Thread:
    """Start the work ahead for ``ex`` run on ``device``; the thread (a daemon) is returned."""

    def work():
        ex.xla_ready(wait=_XLA_WAIT)  # after XLA's compile of the stages: the panel's own work comes first
        try:
            warm_reference(ex, device)
        except Exception:  # noqa: BLE001 -- the Run makes it again and says why it fails
            pass
        try:
            import pandas  # noqa: F401 -- the Cost tab's table
        except ImportError:
            pass

    thread = threading.Thread(target=work, name="wb-panel-ahead", daemon=True)
    thread.start()
    return thread
