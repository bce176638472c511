"""Work the panel does ahead of the clicks that need it, on a thread of its own once its stages (XLA's
included) show: the reference the first Run is checked against (``exploration.running.warm_reference``: the
program as lowered and its float64 evaluation, compiled and run once, kept for every run of the trace; a Run
that comes meanwhile waits for it rather than making it again), and the import the Cost tab's first table
takes (pandas). bench/bench_panel.py measured the first Run of the tour's attention
example at 3.4 s where a later one took 0.9 s (3.3 CPU seconds against 0.9): the difference is that
reference. Then the drift search's reference modules (``ex.warm_drift(reference_only=True)``: the program as
lowered tapped whole and its float64 promotion, compiled, kept for every search of the trace), so that "Find
where it drifts" has only its stage's module left to compile (ahead too, once a check fails: ``runtab``): its
first click on the tour's attention example went from 10 CPU seconds to 3 (with the float64 module compiled
for speed of compiling, ``analysis.run.reference.WIDE_OPTIONS``). Nothing it does is shown, and a failure is
dropped: the click that needs the work does it again and says why."""
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
        ex.warm_drift(device=device, reference_only=True).result()  # a failure is dropped there

    thread = threading.Thread(target=work, name="wb-panel-ahead", daemon=True)
    thread.start()
    return thread
