"""The facade's drift search: ``drift`` (where in the program a stage's numbers first go wrong). A mixin of
``Exploration``: one call down into ``analysis.run.drift``."""
from __future__ import annotations

import dataclasses

from ..analysis.run.drift import Drift, find_drift
from ..analysis.search.blame import patterns_that
from ..analysis.run.execute import runnable_source
from ..analysis.run.tapping import Side, op_present, side_of
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
        return self._blamed(found)

    def _blamed(self, found: Drift) -> Drift:
        """``found`` with the patterns that made the change its op came from, where a pattern pass made it:
        that pass run again on its parent with subsets of its patterns (``analysis.search.blame``)."""
        op = found.op
        if op is None or not op.changed_by or op.changed_by not in self.names:
            return found
        stage = self.stage(op.changed_by)
        if not stage.parent or stage.parent not in self.names:
            return found
        kind, keys, removed = op.change
        blame = patterns_that(stage, self.stage(stage.parent),
                              (lambda text: not op_present(text, kind, keys)) if removed
                              else (lambda text: op_present(text, kind, keys)), self.spec.timeout)
        note = (f"found in {blame.runs} runs of {stage.name}'s pass on {stage.parent}" if blame.patterns
                else blame.why_not)
        return dataclasses.replace(found, op=dataclasses.replace(op, patterns=blame.patterns, blame_note=note))

    def _tap_side(self, stage: Stage) -> Side:
        """``stage`` read for tapping, once per text (the searches of one exploration share them)."""
        key = (stage.name, stage.text)
        cache = self._tap_sides
        if key not in cache:
            if len(cache) > 16:
                cache.clear()
            cache[key] = side_of(stage, runnable_source(self, stage), converted=stage.group == "xla")
        return cache[key]
