"""What several lessons ask of an Exploration, written once."""
from __future__ import annotations

__all__ = ["last_mlir"]


def last_mlir(ex):
    """The last MLIR stage: where the MLIR pipeline ends, the module XLA compiles (for a pipeline that
    succeeded, ``ex.default_run_stage()``)."""
    return [s for s in ex.stages if s.group == "mlir"][-1]
