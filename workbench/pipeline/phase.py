"""What a long piece of work on this thread is doing now, said by the code doing it: ``say_phase`` in
XLA's compile ("XLA compiling, ...", "reading XLA's 48 dump files"), read by whoever waits for it
(``CompileQueue.phase``, ``Exploration.xla_phase``). Outside such work, saying it does nothing."""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

__all__ = ["Phases", "say_phase", "saying_to"]

_here = threading.local()  # .target: the Phases that say_phase records into, on this thread


class Phases:
    """The steps one piece of work said it took, in order, each with when it began: ``now`` is the
    latest (``first`` until one is said), ``steps()`` each with its seconds so far."""

    def __init__(self, first: str = "starting"):
        self.first = first
        self.said: list[tuple[str, float]] = []  # a compile says a handful: bounded by the code saying them
        self.ended: float | None = None

    @property
    def now(self) -> str:
        return self.said[-1][0] if self.said else self.first

    def say(self, text: str) -> None:
        self.said.append((text, time.perf_counter()))

    def end(self) -> None:
        self.ended = time.perf_counter()

    def steps(self) -> list[tuple[str, float]]:
        """Each step said and the seconds it took (the last one: until the work ended, or until now)."""
        ends = [t for _, t in self.said[1:]] + [self.ended or time.perf_counter()]
        return [(text, end - began) for (text, began), end in zip(self.said, ends)]


def say_phase(text: str) -> None:
    """Say what the work this thread runs for someone is doing now."""
    target = getattr(_here, "target", None)
    if target is not None:
        target.say(text)


@contextlib.contextmanager
def saying_to(target: Phases) -> Iterator[None]:
    """While inside, ``say_phase`` on this thread records into ``target`` (nested: the innermost one)."""
    outer, _here.target = getattr(_here, "target", None), target
    try:
        yield
    finally:
        _here.target = outer
        target.end()
