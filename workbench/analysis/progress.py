"""Progress of the long calls (applicable, step, bisect, pattern_timing): one bar and a callback.

Where the bar goes:

- in a notebook kernel, a widget (``tqdm.auto``);
- on stderr when stderr is a terminal: one line, redrawn in place at most every half second and
  cleared at the end (``leave=False``);
- nowhere otherwise (a script whose stderr is a file, a pipe, a CI log). A text bar redraws with a
  carriage return after every batch the worker pool finishes, and every redraw becomes a line of its
  own wherever carriage returns are not honoured: a scan of ~580 patterns in batches of 24 wrote
  a dozen such lines.

``on_progress(done, total)`` hears the same counts wherever the bar goes (``total`` is None when
the call cannot know it in advance, as in a bisection): first ``(0, total)``, then after each
piece of work. The panel's status line uses it.
"""
from __future__ import annotations

import sys
from typing import Callable

__all__ = ["Progress", "OnProgress", "bar_place", "progress_bar"]

OnProgress = Callable[[int, "int | None"], None]

MININTERVAL = 0.5  # seconds between two redraws of a text bar


def bar_place() -> str | None:
    """Where a bar would be drawn now: "notebook", "terminal", or None (no bar)."""
    ipython = sys.modules.get("IPython")  # not imported: certainly not in a kernel
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        return "notebook"
    stream = sys.stderr
    try:
        return "terminal" if stream is not None and stream.isatty() else None
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return None


def progress_bar(total: int | None, desc: str, show: bool, unit: str = "it"):
    """A tqdm bar (``total=None`` counts without an end), or None when ``show`` is False, tqdm is
    absent, or there is neither a terminal nor a notebook to draw it in (see ``bar_place``).

    Callers test the returned bar with ``is not None``: a tqdm bar defines ``__len__`` from its
    total, so ``if bar:`` raises for a bar without a total and is False for a total of 0.
    """
    place = bar_place() if show else None
    if place is None:
        return None
    try:
        if place == "notebook":
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, leave=False, mininterval=MININTERVAL, file=sys.stderr)


class Progress:
    """One long call's progress: the bar (when ``show`` and there is a place for it) and the caller's
    ``on_progress(done, total)``. Use it as a context manager, and ``update(n)`` as work completes."""

    def __init__(self, total: int | None, desc: str, show: bool = True, on_progress: OnProgress | None = None,
                 unit: str = "it"):
        if on_progress is not None and not callable(on_progress):
            raise TypeError(f"on_progress must be a function (done, total) -> None; got {type(on_progress).__name__}")
        self.done, self.total = 0, total
        self._hook = on_progress
        self._bar = progress_bar(total, desc, show, unit)
        if on_progress is not None:
            on_progress(0, total)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        if self._hook is not None:
            self._hook(self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
