"""XLA's HLO stages as runnable modules: the HLO text read back by jaxlib and turned into StableHLO.

jaxlib 0.10.2 reads HLO text (``jaxlib._hlo.hlo_module_from_text``, private but present) and turns a module
proto into StableHLO (``_jax.mlir.hlo_to_stablehlo``): a stage's module after an XLA pass then compiles and
runs as the MLIR stages do, with the numbers of the module after that pass. XLA compiles it again from
the start, so its own passes run over it once more: the run measures that module's numbers, not the
pass's code generation.

What converts: every module before XLA's layout assignment. From layout assignment on, the text carries
layouts and backend-specific forms that the way back cannot take -- XLA refused them here with "layout
minor_to_major field contains 2 elements, but shape has 1 dimensions" and "Fusion must have backend
config" -- so those stages are refused in words (``first_after_layout``), naming the last one that runs.
Whether the way back keeps a program's meaning at all is checked where a run starts
(``exploration.running.refuse_unfaithful_hlo``: the module XLA was given must compute the as-lowered numbers).
"""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import WorkbenchError

__all__ = ["hlo_as_stablehlo", "first_after_layout"]

_AFTER_LAYOUT = ("after layout assignment", "hlo normalization", "dot-library", "after scheduling")


def hlo_as_stablehlo(text: str) -> str:
    """The HLO module ``text`` as StableHLO text (with its locations), as jaxlib converts it;
    WorkbenchError saying why where jaxlib cannot read or convert it."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import _jax
    from jax._src.lib.mlir import ir

    try:
        from jaxlib import _hlo

        module = _hlo.hlo_module_from_text(text)
        bytecode = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        with jax_mlir.make_ir_context():
            return jax_mlir.module_to_string(ir.Module.parse(bytecode), enable_debug_info=True)
    except ImportError:
        raise WorkbenchError("this jaxlib cannot read HLO text (jaxlib._hlo is missing; jax 0.10.2 has it)") from None
    except Exception as e:  # noqa: BLE001 -- jaxlib's own error, said in words
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise WorkbenchError(f"jaxlib cannot turn this HLO module into StableHLO: {first}") from None


def first_after_layout(stages: Sequence, runs: Sequence[tuple[str, str, str, str]] = ()) -> str | None:
    """The name of the first XLA stage made at or after XLA's layout assignment (None: there is none).
    ``runs``: the compile's dumps in order (``XlaResult.runs``), which say exactly where layout assignment
    ran (on a TPU it hands its module to its tiling rewriter, whose dump names no pass before it); without
    them (a file saved before they were kept) the stage names and pipelines say it."""
    if runs:
        seen = False  # a dump named layout assignment next: every later change is at or after it
        for _pipeline, after, nxt, made in runs:
            if made and (seen or after == "layout-assignment"):
                return made
            seen = seen or after == "layout-assignment" or nxt == "layout-assignment"
        return next((s.name for s in stages if s.name == "xla:optimized"), None)
    for s in stages:
        if s.group != "xla" or s.name == "xla:before_optimizations":
            continue
        if s.name.startswith("xla:layout-assignment") or s.name == "xla:optimized" \
                or any(p in (s.produced_by or "") for p in _AFTER_LAYOUT):
            return s.name
    return None
