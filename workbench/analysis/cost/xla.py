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
from ...pipeline.exported import exported_for_text, readable_module
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


def _converted(text: str) -> tuple[Any, int]:
    """The module as XLA's own MLIR-to-HLO conversion makes it, its ``@main`` the entry computation (Enzyme's
    attributes dropped, as for XLA's input), and the wrapper's pointer bytes to take off its analysis (0 here).
    A third of the ``jax.export`` route's time, which exports the module, traces and lowers a call of it, and
    converts that: 0.9 of 1.4 s per MLIR stage of a GPT-2 training step. The numbers are the route's on every
    module both can take; a module with host callbacks, which ``jax.export`` cannot serialize, and a sharded one
    (over Shardy's mesh: the whole program's numbers, as the analytic model counts them) get them too."""
    from jax._src.interpreters import mlir as jax_mlir

    module = readable_module(text)  # without a @main the conversion refuses it
    bytecode = jax_mlir.module_to_bytecode(module)
    return _jax.mlir.mlir_module_to_xla_computation(bytecode, use_tuple_args=False, return_tuple=False), 0


def _exported_route(text: str) -> tuple[Any, int]:
    """The module through ``jax.export``'s route (for what XLA's conversion refuses), and the pointer bytes of
    the tuple its wrapper returns several results in: its pointer table is the route's cost, not the module's."""
    lowered = _lowered(text)
    results = len(jax.tree.leaves(lowered.out_info))
    return lowered.compiler_ir("hlo"), TUPLE_POINTER_BYTES * results if results > 1 else 0


def xla_cost(text: str) -> dict[str, float | None] | None:
    """XLA's HloCostAnalysis of the module on CPU, before any XLA optimization.

    Returns ``{"xla_flops", "xla_transcendentals", "xla_bytes"}``, or None when XLA cannot take the
    module (no ``@main``, unparseable for XLA, shapes it cannot compile). XLA charges each custom call
    -1 flops and -1 bytes and sums that in; when the module has custom calls those two totals are
    therefore meaningless and reported as None. Loop bodies count once (see ``ModuleCost``). The module
    goes to XLA by its own conversion (``_converted``), or by ``jax.export``'s route where that fails.
    """
    computation = None
    for route in (_converted, _exported_route):
        try:
            computation, wrapper_bytes = route(text)
            # converted to HLO once, for the analysis and the text both
            analysis = _jax.hlo_module_cost_analysis(jax.devices("cpu")[0].client, computation.as_hlo_module())
            hlo = computation.as_hlo_text()
            break
        except Exception:  # XLA reports unsupported modules with many exception types
            computation = None
    if computation is None:
        return None
    custom = has_custom_calls(hlo)
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
