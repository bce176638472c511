"""The XLA stages of a loaded ``.hlox`` (``Built.late`` of ``load_exploration``): as saved, never compiled."""
from __future__ import annotations

from concurrent.futures import Future

from ..errors import StageError
from ..pipeline.build import XlaStages
from ..pipeline.xla import XlaResult
from ..stages import Stage

__all__ = ["SavedXla"]


class SavedXla:
    """The XLA stages of a saved exploration, as they were saved (``Built.late``): never compiles."""

    def __init__(self, stages: tuple[Stage, ...], error: StageError | None, result: XlaResult | None):
        self.value = XlaStages(stages, error, result)

    def __call__(self) -> XlaStages:
        return self.value

    def start(self) -> None:  # nothing to compile
        pass

    def ready(self) -> bool:
        return True

    def phase(self) -> str:  # never waited for
        return ""

    def steps(self) -> list[tuple[str, float]]:  # no compile: the stages were read from the file
        return []

    def watch(self) -> Future:
        done: Future = Future()
        done.set_result(None)
        return done
