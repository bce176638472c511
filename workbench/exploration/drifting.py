"""The facade's drift search: ``drift`` (where in the program a stage's numbers first go wrong), with the one
cause its explanation names (a hand edit, or the patterns of the stage that changed the ops), and
``warm_drift`` (its modules compiled in the background, before it is asked). A mixin of ``Exploration``: calls
down into ``analysis.run.drift``, ``drift_values`` and ``analysis.search.blame``."""
from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import Future

from ..analysis.run.drift import Cause, Drift, find_drift
from ..analysis.run.drift_values import Probe, cache_of
from ..analysis.search.blame import patterns_that
from ..analysis.run.execute import runnable_source
from ..analysis.run.tapping import Side, op_present, side_of
from ..errors import StageError, WorkbenchError
from ..pipeline.runner import default_runner
from ..stages import Stage
from .running import refuse_shapes, refuse_unfaithful_hlo

__all__ = ["Drifting"]


class Drifting:
    def drift(self, stage=None, reference=None, device: str | None = None, args=None,
              reference_device: str | None = None) -> Drift:
        """The first op of ``stage`` (default: the last MLIR stage; a name, or a ``Stage`` such as a hand-edited
        copy of one) whose value drifts from its counterpart in ``reference`` (default: the program as lowered,
        "stablehlo"), run on ``device`` with ``args`` (default: the explored ones). ``reference_device``: run
        the reference there instead ("cpu": where do the TPU's numbers leave the CPU's?).

        Both modules are tapped (their ``@main`` also returns intermediate values), each op paired with the op
        of the reference that has its source position and type, and each pair compared with the numeric
        check's rule (against the reference promoted to float64, else its noise). The search bisects over
        the ops in the stage's order, tapping as many as fit a memory budget per run, so the runs grow with
        log(ops). The ``Drift`` names the op (its line here and its counterpart's), the user's line, the
        error against the tolerance, the op's inputs and whether they already differed (and where a value
        came in that one side computes otherwise: the op a pass removed), the stage that made the op, and
        the runs it took; ``table()`` lists every compared value (``workbench.analysis.run.drift``).

        XLA stages before layout assignment are searched as they run (turned back into StableHLO). A
        sharded program is refused: taps read one device's program."""
        st = stage if isinstance(stage, Stage) else (self.default_run_stage() if stage is None else self.stage(stage))
        ref = self.reference_stage() if reference is None else self.stage(reference)
        refuse_shapes(self.spec.traced, st, args)
        device = device or self.spec.device
        given = None if args is None else tuple(args)
        for s, on in ((st, device), (ref, reference_device or device)):
            refuse_unfaithful_hlo(self, s, on, given, self._refs)  # as run does, for XLA stages
        found = find_drift(self, self._tap_side(st), self._tap_side(ref), device, given,
                           reference_device=reference_device)
        return self._caused(found)

    def warm_drift(self, stage=None, reference=None, device: str | None = None,
                   reference_device: str | None = None, reference_only: bool = False) -> Future:
        """Start compiling, in a background thread, the tap modules that ``drift`` with the same arguments takes
        first, where it taps its sides whole (``analysis.run.drift_values``; ``reference_only``: the
        reference's, which every search of this trace shares); nothing runs, so no callback of the program
        fires. A ``drift`` that needs them meanwhile waits for them instead of compiling them again. The
        Future's result is None; a failure is dropped here (the search says it, if it meets it)."""
        done: Future = Future()
        cache = cache_of(self)
        if cache is None:  # a module given as text: its searches share no cache
            done.set_result(None)
            return done

        def work():
            try:
                st = stage if isinstance(stage, Stage) else (self.default_run_stage() if stage is None
                                                             else self.stage(stage))
                ref = self.reference_stage() if reference is None else self.stage(reference)
                Probe(self, self._tap_side(st), self._tap_side(ref), device or self.spec.device, None,
                      reference_device, cache).warm(here=not reference_only)
            except Exception:  # noqa: BLE001 -- speculative: the search itself says what fails
                pass
            done.set_result(None)

        threading.Thread(target=work, name="wb-drift-warm", daemon=True).start()
        return done

    def _caused(self, found: Drift) -> Drift:
        """``found`` with the one cause its explanation names (``Cause``): the hand edit where the stage that made
        or removed the op its values came through is edited by hand (``Stage.edit == "text"``), or where an
        earlier stage's hand edit changed ops at the source positions they came through (``_edit_behind``);
        else the patterns of the stage that changed them, found by running its pass again on its parent with
        subsets of its patterns (``analysis.search.blame``), or that stage alone, saying why no pattern."""
        op = found.op
        if op is None:
            return found
        cause = op.cause
        edit = None if cause is not None and cause.kind == "edit" else self._edit_behind(found)
        if edit is not None:
            cause = Cause("edit", edit, how="it changed ops at the source lines the values came through")
        elif cause is not None and cause.kind == "stage" and cause.stage in self.names:
            cause = self._patterns_of(cause, op)
        if cause is None:
            return found
        return dataclasses.replace(found, op=dataclasses.replace(
            op, cause=cause, changed_by=cause.stage, patterns=cause.patterns, blame_note=cause.how))

    def _patterns_of(self, cause: Cause, op) -> Cause:
        """``cause`` (a stage) as the patterns of its pass that made the change, where a pattern pass made it."""
        stage = self.stage(cause.stage)
        if not stage.parent or stage.parent not in self.names or not op.change:
            return cause
        kind, keys, removed = op.change
        blame = patterns_that(stage, self.stage(stage.parent),
                              (lambda text: not op_present(text, kind, keys)) if removed
                              else (lambda text: op_present(text, kind, keys)), self.spec.timeout)
        if blame.patterns:
            return Cause("patterns", stage.name, blame.patterns,
                         f"found in {blame.runs} runs of {stage.name}'s pass on {stage.parent}")
        return Cause("stage", stage.name, how=blame.why_not)

    def _edit_behind(self, found: Drift) -> str | None:
        """The first stage edited by hand on the way from the reference to the stage searched whose edit changed
        an op at the source positions the drift's values came through (the op found, its differing inputs on
        either side): its ops there against those its own pass makes of its parent (one pass run; for the
        module the pipeline starts from, against the program as lowered). None where no edit did."""
        op = found.op
        keys = set(op.key[0]) if op.key else set()
        for i in op.inputs:
            if i.differs:
                keys |= i.keys
        by_name = {s.name: s for s in self.stages}
        chain, current = [], by_name.get(found.stage)
        while keys and current is not None:  # the reference's own stage too: the start module edited by hand
            chain.append(current)
            if current.name == found.reference:
                break
            current = by_name.get(current.parent) if current.parent else None
        for st in reversed(chain):
            if st.edit == "text" and self._edit_touches(st, frozenset(keys)):
                return st.name
        return None

    def _edit_touches(self, st: Stage, keys: frozenset) -> bool:
        """Whether the hand edit of ``st`` changed an op at ``keys``: its kind, result types, value (a constant) or
        the constants it takes."""
        ref = self.reference_stage()
        try:
            if st.name == ref.name:  # the module the pipeline starts from, edited: against the program as lowered
                before = ref.text_with_locations or ref.text
            else:
                parent = self.stage(st.parent)
                before = default_runner().run("hand edit", parent.text_with_locations or parent.text,
                                              st.produced_by or "", timeout=self.spec.timeout).text

            def at(text: str) -> list:
                side = side_of(st, text)
                points = side.tap.points

                def constant(v) -> str:  # a constant has no source position of its own: read it where it is used
                    return points[v[1]].value if v[0] == "op" and points[v[1]].op == "stablehlo.constant" else ""

                return sorted(((p.op, p.types, p.value, tuple(constant(v) for v in p.operands))
                               for p in points if side.keys(p) & keys), key=repr)

            return at(before) != at(st.text_with_locations or st.text)
        except (WorkbenchError, StageError):  # a pass or a text that cannot be read again: no edit is named
            return False

    def _tap_side(self, stage: Stage) -> Side:
        """``stage`` read for tapping, once per text (the searches of one exploration share them)."""
        key = (stage.name, stage.text)
        cache = self._tap_sides
        if key not in cache:
            if len(cache) > 16:
                cache.clear()
            cache[key] = side_of(stage, runnable_source(self, stage), converted=stage.group == "xla")
        return cache[key]
