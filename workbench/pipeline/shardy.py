"""Shardy's passes as stages: Reactant.jl's ``shardy_passes`` modes for a sharded program.

Reactant's ``Compiler.jl`` runs, after its optimization passes and only for a sharded module:

- ``:none``: nothing; XLA's own Shardy pass (``shardy-xla``) propagates the shardings and its SPMD
  partitioner inserts the collectives.
- ``:post_sdy_propagation`` (Reactant's default): ``sdy-propagation-pipeline``, ``sdy-close-shardings``,
  the optimize-communications passes, ``func.func(sdy-reshard-to-collectives)``; XLA partitions what
  that leaves.
- ``:to_mhlo_shardings``: the same, then ``xla-sdy-stablehlo-export-pipeline`` (Shardy's shardings
  exported as ``mhlo.sharding`` attributes).
- a custom propagation pipeline: it, then ``sdy-close-shardings``, the optimize-communications passes
  and the export (Reactant exports so that XLA keeps the custom pipeline's shardings; here the
  export is not available, see below, and is left out: once ``sdy-close-shardings`` has closed every
  sharding, XLA's own propagation cannot change them).

What this machine registers (measured with enzyme-ad 0.0.16 and jaxlib 0.10.2): enzyme-ad's pass
runner knows none of Shardy's passes (its shared object holds their code, but its registry does not
list them), and it has ``optimize-communication`` and the pattern passes; jaxlib's pass manager has
``sdy-propagation-pipeline``, ``sdy-close-shardings``, ``sdy-insert-explicit-reshards``,
``sdy-reshard-to-collectives`` and the other ``sdy-*`` passes; neither registers
``xla-sdy-stablehlo-export-pipeline`` (XLA runs it inside its compiler). So ``sdy-*`` steps run in
jaxlib's pass manager (``worker_methods.jaxlib_pipeline``, in the worker process as any pass), the
optimize-communications steps in enzyme-ad, and the export step of ``to_mhlo_shardings`` is a stage
that fails saying so, after every stage before it. XLA reads Shardy's
attributes itself, so without the export the module still compiles and runs (``:post_sdy_propagation``
is what Reactant's default hands XLA too).
"""
from __future__ import annotations

from ..errors import WorkbenchError
from ..ir.sdy import names_mesh_with_axes
from ..ir.text import pass_names, split_pipeline
from .catalog import patterns_pass
from .worker_methods import jaxlib_pipeline

__all__ = ["SHARDY_MODES", "EXPORT_PIPELINE", "is_sharded", "resolve_mode", "shardy_steps", "unregistered_reason"]

SHARDY_MODES = ("none", "post_sdy_propagation", "to_mhlo_shardings")
EXPORT_PIPELINE = "xla-sdy-stablehlo-export-pipeline"

# Reactant's OptimizeCommunicationOptions, with its defaults (src/CompileOptions.jl); each name is one
# of enzyme-ad 0.0.16's ``optimize-communication`` options (an unknown one is a parse error there).
_COMM_OPTIONS = (("periodic_concat", 0), ("rotate_comm", 0), ("rotate_to_pad_comm", 0), ("wrap_comm", 0),
                 ("extend_comm", 0), ("dus_to_pad_manual_comp_comm", 0), ("dus_to_pad_comm", 0),
                 ("concat_two_operands_comm", 0), ("concat_to_pad_comm", 0), ("concat_to_dus", 1),
                 ("extend_to_pad_comm", 0), ("extend_to_pad_comm2", 1), ("wrap_to_pad_comm", 0),
                 ("rotate_spmd", 1), ("wrap_to_rotate", 1), ("updatewithoutcorners_to_select", 1))
_OPTIMIZE_COMM = "optimize-communication{" + " ".join(f"{k}={v}" for k, v in _COMM_OPTIONS) + "}"
_LOWER = "lower_rotate;lower_wrap;lower_extend;lower_updatewithoutcorners"


def _patterns(names: str) -> str:
    return patterns_pass(tuple(names.split(";")))


def _communication_steps(optimize: bool) -> list[tuple[str, str]]:
    """Reactant's ``get_optimize_comms_passes(optimize_communications)``: with False, only the
    lowering of Enzyme-JaX's communication ops (rotate, wrap, extend, ...) to plain StableHLO."""
    if not optimize:
        return [("comm-patterns", _patterns(_LOWER))]
    return [
        ("comm-patterns", _patterns("concat_to_onedim_dus;concat_to_onedim_dusslice;concatreshape_to_onedim_dus")),
        ("comm-patterns", _patterns("reshape_to_broadcast;recognize_multirotate;use_multirotate_neutral_result;"
                                    "recognize_multislice")),
        ("optimize-communication", _OPTIMIZE_COMM),
        ("comm-patterns", _patterns(_LOWER + ";lower_multislice")),
        ("optimize-communication", _OPTIMIZE_COMM),
    ]


def is_sharded(text: str, devices: int | None = None) -> bool:
    """Whether a module is sharded: a traced one when it spans several devices (JAX writes an
    ``sdy.mesh @empty_mesh = <[]>`` into single-device programs too, e.g. for a PRNG key); a text when
    it names a Shardy mesh with axes."""
    if devices is not None:
        return devices > 1
    return names_mesh_with_axes(text)


def resolve_mode(mode: str | None, sharded: bool) -> str:
    """The mode a Spec records: None means Reactant's default (``post_sdy_propagation`` for a sharded
    program, ``none`` otherwise); a mode given for a program that is not sharded is refused, so the
    option is never dropped without a word."""
    if mode is None:
        return "post_sdy_propagation" if sharded else "none"
    if not isinstance(mode, str) or not mode.strip():
        raise WorkbenchError(f"shardy_passes must be one of {', '.join(SHARDY_MODES)} or a propagation "
                             f"pipeline string, not {mode!r}")
    mode = mode.strip().lstrip(":")
    if mode != "none" and not sharded:
        raise WorkbenchError(f"shardy_passes={mode!r} applies to a sharded program, and this one is not: its "
                             "arguments are on one device and the module has no sdy.mesh (place them with "
                             "jax.device_put(x, NamedSharding(mesh, spec)) to shard it)")
    if mode not in SHARDY_MODES:
        try:
            entries = split_pipeline(mode)
        except ValueError as e:
            raise WorkbenchError(f"shardy_passes={mode!r} is neither a mode ({', '.join(SHARDY_MODES)}) nor a "
                                 f"pass pipeline: {e}") from None
        others = [e for e in entries if not jaxlib_pipeline(e)]
        if others:
            raise WorkbenchError(f"a custom shardy_passes pipeline holds Shardy's passes (sdy-...) only; "
                                 f"{', '.join(map(repr, others))} {'is' if len(others) == 1 else 'are'} not "
                                 f"(the modes are {', '.join(SHARDY_MODES)})")
    return mode


def shardy_steps(mode: str, optimize_communications: bool = True, enzyme: bool = True) -> list[tuple[str, str]]:
    """(base name, pass string) of each Shardy stage for a resolved ``mode``, in Reactant's order.
    Without enzyme-ad (``enzyme=False``) the optimize-communications steps, Enzyme-JaX passes that
    rewrite and lower Enzyme-JaX's own communication ops, are left out: there are none to lower."""
    if mode == "none":
        return []
    comms = _communication_steps(optimize_communications) if enzyme else []
    if mode in ("post_sdy_propagation", "to_mhlo_shardings"):
        steps = [("sdy-propagation-pipeline", "sdy-propagation-pipeline"),
                 ("sdy-close-shardings", "sdy-close-shardings"), *comms,
                 ("sdy-reshard-to-collectives", "func.func(sdy-reshard-to-collectives)")]
        return steps + ([(EXPORT_PIPELINE, EXPORT_PIPELINE)] if mode == "to_mhlo_shardings" else [])
    custom = [(pass_names(e)[0], e) for e in split_pipeline(mode)]
    return custom + [("sdy-close-shardings", "sdy-close-shardings"), *comms]


def unregistered_reason(pass_string: str) -> str | None:
    """Why a Shardy step cannot run here, when that is known before running it."""
    if pass_string == EXPORT_PIPELINE:
        return (f"{EXPORT_PIPELINE} is registered neither by enzyme-ad's pass runner nor by jaxlib's pass "
                "manager on this install (XLA runs it inside its compiler); the stages before it hold the "
                "propagated shardings, and shardy_passes='post_sdy_propagation' hands XLA the same module "
                "without the export")
    return None
