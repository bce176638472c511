"""Shrink a module while a predicate holds: delta debugging over its operations, as XLA's
``hlo_bisect`` does for HLO.

``reduce(ex, predicate, make)`` starts from one MLIR stage of ``ex`` and applies *moves* to it, each
one a small rewrite of the module through jaxlib's MLIR bindings (``reduce_moves.py`` says what each
move does): @main returns fewer values or an inner op's results, loses an unused argument, an op
becomes new arguments of @main or zero constants, an unused op or private function goes, a call is
inlined. After the moves of a candidate the dead code they leave goes; a candidate that then fails
jaxlib's verifier is skipped, never shown to the predicate, and so is one that is not strictly smaller
than the module it came from (``module_size``): the search cannot cycle, and ends.

The search: chunks of the move list are applied together, half of the list first, then halves of
halves, as ddmin does; when a pass with chunks of one move changes nothing, no single move keeps the
predicate true (the result is 1-minimal with respect to these moves). Every candidate becomes an
Exploration through ``make(text)`` (the facade passes one that keeps the original's spec), so the
whole pipeline runs on it; a module given as text runs on seeded random inputs of its argument types.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import ModuleParseError, NothingToSearchError, UnknownNameError, WorkbenchError
from ...ir.mlir import parse_module
from ...ir.text import publish_functions, strip_locations
from ...pipeline.remote import Prefetch, resolve
from ..progress import OnProgress, Progress

from .explored import Explored  # what the facade hands down (analysis never imports the facade)
from .reduce_moves import Move, apply_moves, candidate, count_ops, module_size, moves

__all__ = ["Move", "ReduceResult", "apply_moves", "count_ops", "module_size", "moves", "reduce"]

Predicate = Callable[["Explored"], bool]


# ---- the search ------------------------------------------------------------------------------------


@dataclass
class ReduceResult:
    """The smallest module found: ``text`` (without locations), its ``exploration`` (the same spec as
    the original), ``ops_before``/``ops_after`` (``count_ops``: every op but func.func and func.return),
    ``runs`` (predicate evaluations, the first on the start module included), ``skipped`` (candidates
    that did not verify), ``errors`` (candidates on which the predicate raised: counted as not
    holding), ``interrupted`` (Ctrl-C stopped the search: the module is the smallest found so far)."""

    stage: str
    text: str
    ops_before: int
    ops_after: int
    runs: int
    skipped: int
    errors: int
    interrupted: bool
    seconds: float
    predicate: Predicate = field(repr=False)
    source: str = field(repr=False, default="")  # the reduced module with locations, as explored
    _ex: Explored | None = field(default=None, repr=False)
    _make: Callable[[str], Explored] | None = field(default=None, repr=False)

    @property
    def exploration(self) -> Explored:
        """The Exploration of the reduced module (its first stage is "input")."""
        if self._ex is None:
            self._ex = self._make(self.source)
        return self._ex

    def moves(self) -> list[Move]:
        """The moves that apply to the reduced module (each one was tried: none keeps the predicate,
        unless ``interrupted``)."""
        return moves(self.source)

    def reproducer(self, directory, stage=None):
        """The reduced exploration's reproducer folder for the predicate (``ex.reproducer``): the
        predicate must be a built-in one (``wb.miscompiles``, ``wb.op_count_above``, ...)."""
        return self.exploration.reproducer(directory, stage=stage, predicate=self.predicate)

    def __repr__(self) -> str:
        name = getattr(self.predicate, "__name__", type(self.predicate).__name__)
        state = ", INTERRUPTED (the smallest module found so far)" if self.interrupted else ""
        extra = f", {self.errors} where the predicate raised" if self.errors else ""
        return (f"ReduceResult({name} on {self.stage!r}: {self.ops_before} -> {self.ops_after} ops in {self.runs} runs, "
                f"{self.skipped} candidates skipped (did not verify){extra}, {self.seconds:.1f} s{state})")


class _Search:
    def __init__(self, predicate, make, bar, prefetch: Prefetch):
        self.predicate, self.make, self.bar, self.prefetch = predicate, make, bar, prefetch
        self.verdicts: dict[str, bool] = {}
        self.skipped: set[tuple[int, tuple[Move, ...]]] = set()
        self.errors, self.start = 0, None
        self.explorations: dict[str, Explored] = {}  # the start module's and the latest one that held

    @property
    def runs(self) -> int:
        return len(self.verdicts)

    def holds(self, text: str, first: bool = False) -> bool:
        if text in self.verdicts:
            return self.verdicts[text]
        try:
            ex = self.prefetch.take(text, lambda: self.make(text))
            if first:
                self.start, self.explorations[text] = text, ex
            verdict = bool(self.predicate(ex))
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception:
            if first:
                raise
            self.errors += 1
            verdict = False
        self.verdicts[text] = verdict
        if verdict and not first:
            self.explorations = {k: v for k, v in self.explorations.items() if k == self.start} | {text: ex}
        self.bar.update(1)
        return verdict

    def search(self, current: str, progress: Callable[[str], None]) -> None:
        """Chunks of the move list (half of it first, then halves), to a pass of single moves that
        changes nothing; ``progress(text)`` hears each module that holds."""
        found, measure = moves(current), module_size(current)
        step = max(1, len(found) // 2)
        made_at: dict[tuple, tuple | None] = {}  # with an executor: candidates made ahead, of this module
        while found:
            changed, i = False, 0
            while i < len(found):
                chunk = tuple(found[i:i + step])
                made = made_at.pop(chunk) if chunk in made_at else candidate(current, chunk)
                if self.prefetch.remote:
                    self._ahead(current, measure, found, i + step, step, made_at)
                if made is None:
                    self.skipped.add((hash(current), chunk))
                elif made[1] < measure and self.holds(made[0]):
                    (current, measure), changed = made, True
                    progress(current)
                    found = moves(current)
                    made_at.clear()
                    self.prefetch.drop()
                    continue  # the same position in the new list
                i += step
            if not changed:
                if step == 1:
                    return
                step = max(1, step // 2)
            step = min(step, max(1, len(found) // 2))
            made_at.clear()
            self.prefetch.drop()

    def _ahead(self, current: str, measure, found: list[Move], i: int, step: int, made_at: dict) -> None:
        """Build the explorations of the candidates after position ``i`` that the search may try next
        (as many as run at once), so that their MLIR pipelines run on the executor meanwhile."""
        for k in range(i, min(len(found), i + step * self.prefetch.width), step):
            chunk = tuple(found[k:k + step])
            if chunk not in made_at:
                made_at[chunk] = candidate(current, chunk)
            made = made_at[chunk]
            if made is not None and made[1] < measure and made[0] not in self.verdicts:
                self.prefetch.want(made[0], lambda text=made[0]: self.make(text))


def reduce(ex: Explored, predicate: Predicate, make: Callable[[str], Explored], stage: str = "stablehlo",
           progress: bool = True, on_progress: OnProgress | None = None, executor=None) -> ReduceResult:
    """The smallest module reachable from ``stage``'s by the moves, on which ``predicate`` holds; each
    candidate is explored with ``make(text)`` (the whole pipeline of the spec runs on it, whichever
    stage it came from; "stablehlo" of an Exploration of text is its "input"). ``on_progress(runs,
    None)`` hears each predicate run. Ctrl-C stops the search and returns the smallest module found so
    far (``interrupted``); before the first run on the start module has answered, that is the start.
    With ``executor`` (``workbench.pipeline.remote``), the candidates' MLIR pipeline runs go there, the
    next few candidates' built at once; the predicate runs here, in the search's order: same answer."""
    start_time = time.perf_counter()
    early = [s.name for s in ex.pipeline_stages]
    st = ex.reference_stage() if stage == "stablehlo" and stage not in early else ex.stage(stage)  # text: "input"
    if not st.is_module:
        modules = [s.name for s in ex.pipeline_stages if s.is_module]
        what = "failed" if st.error else "a jaxpr" if st.name == "jaxpr" else f"a {st.group} stage"
        raise WorkbenchError(f"stage {st.name!r} is {what}, not an MLIR module: reduce works on the MLIR modules "
                             f"{', '.join(modules[:4])}{', ...' if len(modules) > 4 else ''}")
    if not callable(predicate):
        raise TypeError(f"the predicate must be a function of an Exploration; got {type(predicate).__name__}")
    start = _normalized(st)
    best = [start]
    bar = Progress(None, "reduce runs", progress, on_progress, unit="run")
    prefetch = Prefetch(resolve(executor))
    search = _Search(predicate, make, bar, prefetch)
    interrupted = False
    with prefetch:
        try:
            try:
                held = search.holds(start, first=True)
            except UnknownNameError as e:
                if e.kind != "stage":
                    raise
                raise WorkbenchError(
                    f"the predicate asks for stage {e.name!r}, which reduce's candidates do not have: each is a "
                    f"module explored as text, whose first stage is 'input' (the module as given), then the "
                    f"pipeline's stages; name the stage by what it is -- e.reference_stage() is the program as "
                    f"given in any exploration, and wb.has_op/lacks_op without stage= read the last MLIR "
                    f"stage") from None
            if not held:
                raise NothingToSearchError(
                    f"the predicate does not hold on stage {st.name!r} explored as text (its module run through "
                    f"the pipeline {ex.spec.pipeline!r}, on seeded random inputs when it runs): nothing to reduce")
            search.search(start, best.append)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            bar.close()
    text = best[-1]
    return ReduceResult(st.name, strip_locations(text), count_ops(start), count_ops(text), search.runs,
                        len(search.skipped), search.errors, interrupted, time.perf_counter() - start_time,
                        predicate, text, search.explorations.get(text), make)


def _normalized(st) -> str:
    """The stage's module with locations, @main public (symbol-dce would remove a private one),
    printed by jaxlib; WorkbenchError when it does not parse or verify."""
    from jaxlib.mlir import ir

    text = publish_functions(st.text_with_locations or st.text, {"main"})
    try:
        module = parse_module(text)
        with module.context:
            module.operation.verify()
            return module.operation.get_asm(enable_debug_info=True)
    except (ModuleParseError, ir.MLIRError) as e:
        raise WorkbenchError(f"stage {st.name!r} is not a module jaxlib's MLIR can parse and verify, so it cannot be "
                             f"reduced: {str(e).splitlines()[0]}") from None
