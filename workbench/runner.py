"""Run a pipeline step by step in the worker, caching each step by (hash of its input, pass string).

After a toggle, every step whose input text and pass string are unchanged is a cache hit, so only
the stages from the first affected one are recomputed.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .errors import PipelineSyntaxError, StageError
from .irtext import public_functions, publish_functions, text_hash
from .worker import PassFailure, Worker, WorkerCrash, WorkerTimeout, default_worker

__all__ = ["StepResult", "StepRunner", "default_runner"]


@dataclass(frozen=True)
class StepResult:
    text: str  # output with locations, entry functions public again
    seconds: float
    cached: bool


class StepRunner:
    def __init__(self, worker: Worker | None = None, max_entries: int = 4096):
        self.worker = worker or default_worker()
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self._checked: set[str] = set()
        self.hits = 0
        self.misses = 0

    def check_pipeline(self, pipeline: str) -> None:
        """Ask the real pass registry whether ``pipeline`` parses, on an empty module."""
        if pipeline in self._checked:
            return
        try:
            self.worker.call("run_pipeline", "module {\n}\n", pipeline)
        except PassFailure as e:
            detail = e.message.split(":", 1)[-1].strip()
            raise PipelineSyntaxError(f"the pipeline does not parse: {detail}") from None
        self._checked.add(pipeline)

    def run(self, stage: str, text: str, pipeline: str, timeout: float | None = None) -> StepResult:
        key = (text_hash(text), pipeline)
        if key in self._cache:
            self._cache.move_to_end(key)
            self.hits += 1
            out, seconds = self._cache[key]
            return StepResult(out, seconds, True)
        self.misses += 1
        public = public_functions(text)
        try:
            (_, out), seconds = self.worker.call("run_pipeline", text, pipeline, timeout=timeout)
        except PassFailure as e:
            raise StageError(stage, pipeline, e.message.splitlines()[0], e.message + "\n" + e.diagnostics) from None
        except WorkerCrash as e:
            raise StageError(stage, pipeline, f"the pass crashed its worker process (exit code {e.exitcode}); "
                             "the worker was restarted", e.diagnostics) from None
        except WorkerTimeout as e:
            raise StageError(stage, pipeline, f"the pass ran for more than {e.seconds:.0f} s and was stopped",
                             e.diagnostics) from None
        out = publish_functions(out, public)
        self._cache[key] = (out, seconds)
        if len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return StepResult(out, seconds, False)


_DEFAULT: StepRunner | None = None


def default_runner() -> StepRunner:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = StepRunner()
    return _DEFAULT
