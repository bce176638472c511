"""What the panel shows of an Exploration whose XLA stages are on their way (XLA compiling in the
background): its trace and MLIR stages, read without waiting for the compile."""
from __future__ import annotations

from ...analysis.cost import cost_table
from ...errors import WorkbenchError
from ...exploration import Exploration

__all__ = ["SoFar", "late_name"]


def late_name(name: str) -> bool:
    """Whether ``name`` is an XLA or backend stage's (a pick the panel keeps while XLA compiles)."""
    return name.startswith(("xla:", "backend:"))


class SoFar:
    """The stages ``ex`` has before XLA's, as the Cost tab reads an Exploration: the table of every
    stage without XLA's rows (they come with its stages), per-op costs of the module stages. What
    it does not define (``spec``, ...) is ``ex``'s."""

    def __init__(self, ex: Exploration):
        self.ex, self.stages, self.xla_result = ex, ex.pipeline_stages, None

    def __getattr__(self, name):
        if name == "ex":
            raise AttributeError(name)
        return getattr(self.ex, name)

    def cost(self, stage=None):
        if stage is None:
            return cost_table(self)
        if late_name(stage) or not self.ex.stage(stage).is_module:
            raise WorkbenchError(f"{stage} has no per-op cost here; the MLIR stages have (XLA is compiling)")
        return self.ex.cost(stage)
