"""Progress of the long calls (applicable, step, bisect, pattern_timing): one bar and a callback.

Where the bar goes:

- in a notebook kernel, a widget (``tqdm.notebook``) in an output of its own, which the call replaces
  with a one-line summary when it ends ("patterns on stablehlo: 576/576 patterns in 12.3 s"): a
  saved notebook keeps that line, where it kept the widget's text form, a bar frozen at "0%| 0/576";
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
import time
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
    if place == "notebook":
        bar = _notebook_bar(total, desc, unit)
        if bar is not None:
            return bar
    try:
        if place == "notebook":
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, leave=False, mininterval=MININTERVAL, file=sys.stderr)


def _notebook_bar(total: int | None, desc: str, unit: str):
    """A tqdm widget shown in an output with a display id (``bar.display_handle``), which ``Progress``
    replaces with its summary at the end; None without ipywidgets (tqdm.auto then draws as it can)."""
    try:
        from IPython.display import display
        from tqdm.notebook import tqdm
    except ImportError:
        return None
    try:
        bar = tqdm(total=total, desc=desc, unit=unit, leave=False, mininterval=MININTERVAL, display=False)
    except ImportError:  # tqdm.notebook without ipywidgets: "IProgress not found"
        return None
    bar.display_handle = display(bar.container, display_id=True)
    bar.displayed = True
    return bar


class Progress:
    """One long call's progress: the bar (when ``show`` and there is a place for it) and the caller's
    ``on_progress(done, total)``. Use it as a context manager, and ``update(n)`` as work completes."""

    def __init__(self, total: int | None, desc: str, show: bool = True, on_progress: OnProgress | None = None,
                 unit: str = "it"):
        if on_progress is not None and not callable(on_progress):
            raise TypeError(f"on_progress must be a function (done, total) -> None; got {type(on_progress).__name__}")
        self.done, self.total, self.desc, self.unit = 0, total, desc, unit
        self._start = time.perf_counter()
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

    def summary(self) -> str:
        """One line: what was done, of how many, in how long ("bisect runs: 13 runs in 4.2 s"), or where
        it stopped short of its total."""
        unit = "" if self.unit == "it" else f" {self.unit}{'s' * (self.total != 1 if self.total else self.done != 1)}"
        seconds = time.perf_counter() - self._start
        if self.total is None:
            return f"{self.desc}: {self.done}{unit} in {seconds:.1f} s"
        if self.done < self.total:
            return f"{self.desc}: stopped at {self.done}/{self.total}{unit} after {seconds:.1f} s"
        return f"{self.desc}: {self.done}/{self.total}{unit} in {seconds:.1f} s"

    def close(self) -> None:
        if self._bar is not None:
            handle = getattr(self._bar, "display_handle", None)
            self._bar.close()
            if handle is not None:  # the widget's output becomes the summary, live and in the saved notebook
                handle.update({"text/plain": self.summary()}, raw=True)
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
