"""The options that shape Enzyme-JaX's pattern list and the user's toggles on top of it: values.

Named as in Reactant.jl's compile options; ``pipeline/catalog.py`` turns them into enzyme-ad's
arguments and pattern lists.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from .errors import UnknownNameError, WorkbenchError

__all__ = ["PatternOptions", "PatternSelection"]

PROPAGATE = {"none": 0, "up": 1, "down": 2}


@dataclass(frozen=True)
class PatternOptions:
    """Options that shape the pattern list, named as in Reactant.jl's compile options.

    Field order is not the C++ argument order; ``_args`` maps them.
    """

    no_nan: bool = False
    all_finite: bool = False
    transpose_propagate: str = "up"
    reshape_propagate: str = "up"
    max_constant_threshold: int = 1024
    while_unroll_threshold: int = 4
    dus_to_concat: bool = False
    dus_slice_simplify: bool = True
    sum_to_reducewindow: bool = False
    sum_to_conv: bool = False
    aggressive_sum_to_conv: bool = False
    while_concat: bool = False
    aggressive_propagation: bool = True
    is_sharded: bool = False
    raise_shlo_to_blas_lapack: bool = False
    recognize_comms: bool = False
    lower_comms: bool = False
    structured_tensors_detection: bool = True
    structured_tensors: bool = True
    scatter_gather: bool = True
    slice_to_batch: bool = False
    reduce_slice_fusion: bool = True
    concat_to_batch: bool = True
    loop_raising: bool = True
    licm: bool = True
    loop_unswitch_threshold: int = 10
    pad: bool = True
    self_to_convolution: bool = False
    dot_formation: bool = True
    max_reused_const_prop_size: int = 1024

    def __post_init__(self):
        for name in ("transpose_propagate", "reshape_propagate"):
            if getattr(self, name) not in PROPAGATE:
                raise WorkbenchError(f"{name} must be one of {sorted(PROPAGATE)}, got {getattr(self, name)!r}")

    @classmethod
    def from_kwargs(cls, **kwargs) -> "PatternOptions":
        """Options by their short names, or by enzyme-ad's ``optimization_passes`` keyword names
        (``enable_licm_optimization_passes=False`` is ``licm=False``)."""
        known = [f.name for f in dataclasses.fields(cls)]
        out = {}
        for k, v in kwargs.items():
            name = re.sub(r"^enable_|(_like)?(_optimization)?_passes$", "", k)
            if name not in known:
                raise UnknownNameError("pattern option", k, known)
            out[name] = v
        return cls(**out)


@dataclass(frozen=True)
class PatternSelection:
    """The user's toggles on top of the options' default list."""

    options: PatternOptions = field(default_factory=PatternOptions)
    disabled: frozenset[str] = frozenset()
    enabled: frozenset[str] = frozenset()
