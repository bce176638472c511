"""Run a pipeline step by step in the worker, caching each step by (hash of its input, pass string).

After a toggle, every step whose input text and pass string are unchanged is a cache hit, so only
the stages from the first affected one are recomputed.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import InputKindError, MlirSyntaxError, PipelineSyntaxError, StageError
from ..ir.text import public_functions, publish_functions, text_hash, unmarked_functions
from .diagnose import pass_error
from .worker import PassFailure, Reply, Worker, WorkerCrash, WorkerTimeout, default_worker

__all__ = ["StepResult", "StepRunner", "default_runner"]


@dataclass(frozen=True)
class StepResult:
    """One pipeline step's output: its text with locations (entry functions public again), the
    seconds the pass took when it ran, and whether this answer came from the cache."""

    text: str
    seconds: float
    cached: bool


class StepRunner:
    def __init__(self, worker: Worker | None = None, max_entries: int = 4096):
        self.worker = worker or default_worker()
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[str, str], StepResult] = OrderedDict()
        self._checked: set[str] = set()
        self._parsed: dict[str, tuple[str, ...]] = {}  # hashes of texts that parsed: the modules side by side
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        """Forget every cached step (the worker stays warm)."""
        self._cache.clear()

    def check_pipeline(self, pipeline: str) -> None:
        """Ask the real pass registry whether ``pipeline`` parses (see ``worker_methods._check_pipeline``)."""
        if pipeline in self._checked:
            return
        try:
            self.worker.call("check_pipeline", pipeline)
        except PassFailure as e:
            detail = e.message.split(":", 1)[-1].strip()
            raise PipelineSyntaxError(f"the pipeline does not parse: {detail}") from None
        self._checked.add(pipeline)

    def check_module(self, text: str, several: bool = False) -> list[str]:
        """Parse ``text`` once with the parser the passes use; MlirSyntaxError with its line:col if it fails.
        Returns the names of the modules it holds side by side (``ir.mlir.side_by_side_modules``: a lit file's
        modules one after another, which MLIR reads as one module around them; [] for one module); unless
        ``several``, such a text is refused (InputKindError: a hand edit replaces one module)."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate (e.g. from bytes decoded with surrogateescape)
            line = text.count("\n", 0, e.start) + 1
            column = e.start - text.rfind("\n", 0, e.start)
            raise InputKindError("not-utf-8", f"the text holds {text[e.start]!r} at line {line}, column {column}: "
                                 "a lone surrogate, which no UTF-8 text can hold and the MLIR parser cannot read; "
                                 "remove it, or read the file as UTF-8") from None
        key = text_hash(text)
        if key in self._parsed:
            several_names = self._parsed[key]
            if several_names and not several:
                raise _several_modules(several_names)
            return list(several_names)
        try:
            names = self.worker.call("parse_module", text).value
        except PassFailure as e:
            raise _syntax_error(e.message + "\n" + e.diagnostics, text) from None
        except (WorkerCrash, WorkerTimeout) as e:
            raise MlirSyntaxError(f"parsing the module stopped its worker process ({e}); the worker was "
                                  "restarted", tuple(e.diagnostics.strip().splitlines()[-30:])) from None
        if len(self._parsed) >= self.max_entries:
            self._parsed.clear()
        self._parsed[key] = tuple(names)
        if names and not several:
            raise _several_modules(names)
        return list(names)

    def run(self, stage: str, text: str, pipeline: str, timeout: float | None = None, source: str = "") -> StepResult:
        """``pipeline`` run on ``text`` (with locations), the stage ``source``: a StageError for ``stage``
        says where it failed (``diagnose.pass_error``: the op, its line in ``source``, the user's line)."""
        key = (text_hash(text), pipeline)
        if key in self._cache:
            return self._hit(key)
        self.misses += 1
        public = public_functions(text)
        started = time.perf_counter()
        try:
            reply = self.worker.call("run_pipeline", text, pipeline, timeout=timeout)
        except PassFailure as e:
            limit = 5.0 + 3 * (time.perf_counter() - started)  # the run again to tell ops apart: as long, or so
            rerun = functools.partial(self._diagnostics, pipeline, limit if timeout is None else min(timeout, limit))
            raise pass_error(stage, pipeline, source, text, e.message, e.diagnostics, rerun) from None
        except WorkerCrash as e:
            if e.exitcode == -9:  # SIGKILL comes from outside (the OOM killer or a kill -9), not from the pass
                why = f"the worker process running the pass {e.how}; the pass may need more memory than is free"
            else:
                why = f"the pass crashed its worker process ({e.how})"
            raise StageError(stage, pipeline, f"{why}; the worker was restarted", e.diagnostics) from None
        except WorkerTimeout as e:
            raise StageError(stage, pipeline, f"the pass ran for more than {e.seconds:.0f} s and was stopped",
                             e.diagnostics) from None
        # Only the entry, which enzyme-ad's runner itself made private: any other visibility is the passes' doing.
        out, entry = reply.value.text, reply.value.entry
        out = publish_functions(out, public & {entry}, unmarked_functions(text))
        if out == text:  # the pass changed nothing: hand back the input itself, which its stage then shares
            out = text
        result = StepResult(out, reply.seconds, False)
        self._remember(key, result)
        return result

    def run_steps(self, text: str, steps: Sequence[tuple[str, str, str]], timeout: float | None = None,
                  each: Callable[[StepResult], None] = lambda result: None) -> list[StepResult]:
        """Each step, ``(stage, pipeline, source)``, run on the one before's output (the first on ``text``),
        as ``run`` runs one: the StepResults in order, each also handed to ``each`` as it comes, and a
        StageError for the first step that fails. Steps the cache holds are served from it. The others go to
        the worker one after another without a round trip each: the worker keeps each output as the next
        step's input and has the next request before it answers (``Worker.call_ahead``), so it never waits
        while ``each`` works on an answer. A step that fails there is run again alone by ``run``, whose
        error says where, as it would have."""
        results: list[StepResult] = []

        def give(result: StepResult) -> None:
            results.append(result)
            each(result)

        while len(results) < len(steps):
            key = (text_hash(text), steps[len(results)][1])
            if key in self._cache:
                give(self._hit(key))
            elif len(steps) - len(results) == 1 or self._run_ahead(text, key[0], steps[len(results):], timeout, give):
                text = results[-1].text if results else text  # the step the series stopped at, alone
                stage, pipeline, source = steps[len(results)]
                give(self.run(stage, text, pipeline, timeout=timeout, source=source))
            text = results[-1].text if results else text
        return results

    def _run_ahead(self, text: str, hashed: str, steps: Sequence[tuple[str, str, str]], timeout: float | None,
                   give: Callable[[StepResult], None]) -> bool:
        """``run_steps``' steps from ``steps[0]`` (on ``text``, whose hash is ``hashed``) sent to the worker
        ahead, each result given as it comes; True where a step failed there (the next to give, alone). It
        stops sending once the step after an answer is one this cache holds from before (a toggle whose step
        then changed nothing finds the rest cached): that step is already sent, and what follows is served
        from the cache."""
        done = [0, text, hashed]  # steps given, the last output and its hash (each text is hashed once)
        mine: set[tuple[str, str]] = set()  # what this series put in the cache (the worker knows those too)

        def request(k: int) -> tuple | None:
            if k >= len(steps):
                return None
            if k == 0:
                return (text, steps[0][1])
            if k >= 2 and done[0] == k - 1:  # the answer to request k-2 is in: is step k-1, on its output, cached?
                key = (done[2], steps[k - 1][1])
                if key in self._cache and key not in mine:
                    return None
            return (None, steps[k][1])

        def answered(reply: Reply) -> None:
            out, _, seconds, same = reply.value
            key = (done[2], steps[done[0]][1])
            if key in self._cache and (same or key not in mine):  # as this cache would have answered
                result = self._hit(key)
            else:
                self.misses += 1
                result = StepResult(done[1] if out is None else out, seconds, False)
                self._remember(key, result)
                mine.add(key)
            done[:] = [done[0] + 1, result.text, done[2] if result.text is done[1] else text_hash(result.text)]
            give(result)

        try:
            if self.worker.call_ahead("run_step", request, answered, timeout):
                return False
        except WorkerTimeout as e:
            stage, pipeline, _ = steps[done[0]]
            raise StageError(stage, pipeline, f"the pass ran for more than {e.seconds:.0f} s and was stopped",
                             e.diagnostics) from None
        except (PassFailure, WorkerCrash):
            return True
        for stage, pipeline, source in steps:  # routed to an executor's worker: one request per step
            result = self.run(stage, done[1], pipeline, timeout=timeout, source=source)
            done[1] = result.text
            give(result)
        return False

    def _hit(self, key: tuple[str, str]) -> StepResult:
        """The cache's answer for ``key``, counted as a hit and kept as the most recently used."""
        self._cache.move_to_end(key)
        self.hits += 1
        return dataclasses.replace(self._cache[key], cached=True)

    def _remember(self, key: tuple[str, str], result: StepResult) -> None:
        self._cache[key] = result
        if len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    def seconds(self, text: str, pipeline: str, timeout: float | None = None) -> float:
        """The seconds ``pipeline`` takes on ``text`` in the worker, as the worker measures it, never served
        from the cache (a compile-time measure must run it); a failing pass raises StageError("timing", ...)."""
        try:
            return float(self.worker.call("run_pipeline", text, pipeline, timeout=timeout).seconds)
        except (PassFailure, WorkerCrash, WorkerTimeout) as e:
            raise StageError("timing", pipeline, f"the pipeline did not run again to be timed: {e}") from None

    def _diagnostics(self, pipeline: str, timeout: float, text: str) -> str:
        """What ``pipeline`` printed failing on ``text`` ("" if it did not fail, or crashed, or ran too long)."""
        try:
            self.worker.call("run_pipeline", text, pipeline, timeout=timeout)
        except PassFailure as e:
            return f"{e.message}\n{e.diagnostics}"
        except (WorkerCrash, WorkerTimeout):
            return ""
        return ""


def _several_modules(names) -> InputKindError:
    return InputKindError("modules", f"the text holds {len(names)} modules one after another ({', '.join(names)}), "
                          "which MLIR reads as one unnamed module around them; this takes one module")


# A parser diagnostic as enzyme-ad's runner logs it, ``loc("-":2:15): error: msg``, or as jaxlib's
# MLIRError words it, ``error: "-":2:15: msg``.
_DIAGNOSTIC = re.compile(r'^\s*(?:loc\("[^"]*":(\d+):(\d+)\):\s*(error|warning|note)|(error|warning|note):\s*"[^"]*":(\d+):(\d+)):\s*(.*)$',
                         re.M)


def _syntax_error(report: str, text: str) -> MlirSyntaxError:
    """The MlirSyntaxError for a parser's ``report``: its diagnostics as ``line:col: severity: message``,
    and the first error's source line with a caret under its column."""
    seen: list[str] = []
    first: tuple[int, int] | None = None
    for m in _DIAGNOSTIC.finditer(report):
        line, col, sev = (int(m[1]), int(m[2]), m[3]) if m[1] else (int(m[5]), int(m[6]), m[4])
        d = f"{line}:{col}: {sev}: {m[7].strip()}"
        if d not in seen:
            seen.append(d)
        if first is None and sev == "error":
            first = (line, col)
    if not seen:
        last = next((l for l in reversed(report.strip().splitlines()) if l.strip()), "no diagnostics")
        return MlirSyntaxError(f"the text does not parse as MLIR: {last.strip()}", (last.strip(),))
    msg = "the text does not parse as MLIR:\n  " + "\n  ".join(seen[:10])
    if first is not None:
        lines = text.splitlines()
        if 1 <= first[0] <= len(lines):
            src = lines[first[0] - 1].expandtabs(1)
            msg += f"\n  line {first[0]}:\n    {src}\n    {' ' * (first[1] - 1)}^"
    return MlirSyntaxError(msg, tuple(seen), *(first or (None, None)))


@functools.cache
def default_runner() -> StepRunner:
    """The process-wide runner, so every Exploration of a session shares its cache and warm worker."""
    return StepRunner()
