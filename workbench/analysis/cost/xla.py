"""What XLA itself says a module costs: its HloCostAnalysis, and the buffers of the compiled executable.

Both run on the CPU, through the module's ``jax.export`` route, so they need only jaxlib, and a module explored
for a TPU or GPU is costed here too (before XLA's optimizations HloCostAnalysis counts the same ops on any
backend; what the accelerator's compile makes of it is the XLA stages' analysis, from that compile). The analytic
model (``model.py``) is written to agree with ``xla_cost`` wherever the two count the same thing.
"""
from __future__ import annotations

from typing import Any

import jax
from jax._src.lib import _jax

from ...ir.hlo import has_custom_calls
from ...pipeline.exported import exported_for_text
from .tensors import TUPLE_POINTER_BYTES

__all__ = ["has_custom_calls", "memory_analysis", "xla_cost"]


def _lowered(text: str) -> Any:
    """``jax.jit(exported.call).lower(...)`` for an Exported that carries this module."""
    from jax.sharding import SingleDeviceSharding

    exported = exported_for_text(text, "cpu")
    # placed on the CPU: on an accelerator host JAX's default device is the accelerator, which this module is not for
    cpu = SingleDeviceSharding(jax.devices("cpu")[0])
    flat = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=cpu) for a in exported.in_avals]
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, flat)
    return jax.jit(exported.call).lower(*args, **kwargs)


def xla_cost(text: str) -> dict[str, float | None] | None:
    """XLA's HloCostAnalysis of the module on CPU, before any XLA optimization.

    Returns ``{"xla_flops", "xla_transcendentals", "xla_bytes"}``, or None when XLA cannot take the
    module (no ``@main``, unparseable for XLA, shapes it cannot compile). XLA charges each custom call
    -1 flops and -1 bytes and sums that in; when the module has custom calls those two totals are
    therefore meaningless and reported as None. Loop bodies count once (see ``ModuleCost``).
    """
    try:
        lowered = _lowered(text)
        # converted to HLO once, for the analysis and the text both (Lowered.cost_analysis and
        # as_text("hlo") would each convert it: half of the MLIR stages' cost in a GPT-2 exploration)
        computation = lowered.compiler_ir("hlo")
        analysis = _jax.hlo_module_cost_analysis(jax.devices("cpu")[0].client, computation.as_hlo_module())
        hlo = computation.as_hlo_text()
    except Exception:  # XLA reports unsupported modules with many exception types
        return None
    custom = has_custom_calls(hlo)
    # The wrapper around the module returns several results as a tuple of its own; its pointer
    # table is the route's cost, not the module's.
    results = len(jax.tree.leaves(lowered.out_info))
    wrapper_bytes = TUPLE_POINTER_BYTES * results if results > 1 else 0
    return {
        "xla_flops": None if custom else float(analysis.get("flops", 0.0)),
        "xla_transcendentals": float(analysis.get("transcendentals", 0.0)),
        "xla_bytes": (
            None if custom else float(analysis.get("bytes accessed", 0.0)) - wrapper_bytes
        ),
    }


def memory_analysis(text: str) -> dict[str, int] | None:
    """Buffer sizes of the module compiled by XLA for the CPU, or None when XLA cannot compile it (the
    exploration's own device has its figures in the XLA stages' memory analysis)."""
    try:
        stats = _lowered(text).compile().memory_analysis()
    except Exception:  # XLA reports unsupported modules with many exception types
        return None
    if stats is None:
        return None
    return {
        "argument_bytes": int(stats.argument_size_in_bytes),
        "output_bytes": int(stats.output_size_in_bytes),
        "temp_bytes": int(stats.temp_size_in_bytes),
        "alias_bytes": int(stats.alias_size_in_bytes),
        "generated_code_bytes": int(stats.generated_code_size_in_bytes),
    }
