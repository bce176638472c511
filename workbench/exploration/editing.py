"""The facade's edits: ``with_text`` (a stage's module replaced by hand), ``with_pass`` (a pass inserted after a
stage) and ``without_pass`` (a stage's pass left out), each a new Exploration whose pipeline resumes from the
edit -- the later MLIR passes, then XLA -- and ``edits``, what was edited. A mixin of ``Exploration``: an edit
is an ``Edit`` in the spec (``stages.Edit``), applied in order whenever the pipeline is built
(``pipeline.steps.edited_steps``), so toggles, bisect and the searches keep it, and a saved file holds it."""
from __future__ import annotations

import dataclasses
import warnings

from ..errors import WorkbenchError
from ..ir.text import relocated
from ..pipeline.steps import check_pass
from ..pipeline.runner import default_runner
from ..stages import Edit, Stage

__all__ = ["Editing"]


class Editing:
    @property
    def edits(self) -> tuple[Edit, ...]:
        """The hand edits of this Exploration's pipeline and texts, in the order they were made."""
        return self.spec.edits

    def with_text(self, stage, text: str):
        """A new Exploration in which ``stage``'s module (an MLIR stage, or the one the pipeline starts from) is
        ``text``, and the pipeline resumes from it: the MLIR passes after it, then XLA. The text is parsed
        and verified first: MlirSyntaxError with the line and column MLIR names where it does not (this
        Exploration is untouched). A text without locations (the stage's ``text``, changed) gets back those of
        the lines it kept as they were (``ir.text.relocated``): their ops keep their source lines."""
        st = self._editable(stage)
        default_runner().check_module(text)  # the user's own text: an error names their line and column
        if "loc(" not in text and st.text_with_locations:  # edited from the text shown: its lines keep their places
            text = relocated(text, st.text_with_locations)
        return self._with_edit(Edit("text", self._step_of(st), st.name, text=text))

    def with_pass(self, after, pass_: str):
        """A new Exploration with ``pass_`` (a pass or pipeline string, e.g. "canonicalize" or "func.func(cse)")
        run right after stage ``after``; the stages after it are made anew. PipelineSyntaxError where the
        string names no registered pass."""
        st = self._editable(after)
        check_pass(pass_)
        return self._with_edit(Edit("insert", self._step_of(st) + 1, st.name, pass_=pass_.strip()))

    def without_pass(self, stage):
        """A new Exploration whose pipeline leaves out the pass that made ``stage`` (an MLIR pipeline stage);
        the stages after it are made anew from its parent."""
        st = self._editable(stage)
        if st.group != "mlir":
            raise WorkbenchError(f"stage {st.name!r} is the module the pipeline starts from, not a pass's: there "
                                 "is no pass to leave out (edit its text with with_text)")
        return self._with_edit(Edit("remove", self._step_of(st), st.name, pass_=st.produced_by))

    def with_pipeline(self, pipeline: str) -> "Editing":
        """A new Exploration with another MLIR pipeline (a preset name or a pipeline string); the traced
        program, pattern toggles, XLA options and device stay. Steps that match earlier ones are cache hits."""
        kept = tuple(e for e in self._spec.edits if e.kind == "text" and e.at == -1)  # the module it starts from
        if len(kept) < len(self._spec.edits):
            warnings.warn(f"with_pipeline leaves out {len(self._spec.edits) - len(kept)} edit(s) of the old pipeline's "
                          "steps (a step of one pipeline is not a step of another); an edit of the module it starts "
                          "from is kept", stacklevel=2)
        return self._derived(dataclasses.replace(self._spec, pipeline=pipeline, edits=kept))

    def _editable(self, stage) -> Stage:
        st = self.stage(stage)
        if st.group in ("xla", "backend"):
            raise WorkbenchError(f"stage {st.name!r} is XLA's: its passes cannot be resumed part way, so it cannot "
                                 "be edited. Edit the last MLIR stage (what XLA compiles), or toggle XLA's passes "
                                 "with with_xla")
        if not st.is_module:
            why = "failed" if st.error else "the jaxpr, not a module"
            raise WorkbenchError(f"stage {st.name!r} is {why}: edits apply to the MLIR modules "
                                 f"({', '.join(s.name for s in self.pipeline_stages if s.is_module)[:300]})")
        return st

    def _step_of(self, st: Stage) -> int:
        """The pipeline step that made ``st`` (its place among the MLIR stages); -1 for the first module."""
        mlir = [s.name for s in self.pipeline_stages if s.group == "mlir"]
        return mlir.index(st.name) if st.name in mlir else -1

    def _with_edit(self, edit: Edit):
        return self._derived(dataclasses.replace(self.spec, edits=self.spec.edits + (edit,)))
