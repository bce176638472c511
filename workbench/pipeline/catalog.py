"""The Enzyme-JaX rewrite-pattern catalog, read from enzyme-ad itself.

The list of patterns and their parameters comes from ``enzyme_call.get_transform_passes_list``, the
same C++ entry point enzyme-ad's ``optimization_passes`` and Reactant.jl use; nothing here is a
hand-copied list. Groups are derived by asking enzyme-ad which patterns each option switch adds, so
they follow whatever enzyme-ad version is installed.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

from ..errors import WorkbenchError
from ..options import PROPAGATE, PatternOptions, PatternSelection
from .worker import default_worker, enzyme_available

__all__ = ["PatternOptions", "PatternSelection", "Pattern", "catalog", "patterns", "pattern_list", "pattern_name",
           "patterns_pass"]


def _enzyme_args(options: PatternOptions, excluded: tuple[str, ...] = ()) -> tuple:
    """The options in the order of enzyme-ad's ``get_transform_passes_list`` arguments."""
    return (
        options.max_constant_threshold, options.while_unroll_threshold,
        PROPAGATE[options.reshape_propagate], PROPAGATE[options.transpose_propagate],
        options.no_nan, options.all_finite, options.dus_to_concat, options.dus_slice_simplify,
        options.sum_to_reducewindow, options.sum_to_conv, options.aggressive_sum_to_conv, options.while_concat,
        options.aggressive_propagation, options.is_sharded, options.raise_shlo_to_blas_lapack,
        options.recognize_comms, options.lower_comms, options.structured_tensors_detection,
        options.structured_tensors, options.scatter_gather, options.slice_to_batch,
        options.reduce_slice_fusion, options.concat_to_batch, options.loop_raising, options.licm,
        options.loop_unswitch_threshold, options.pad, options.self_to_convolution, options.dot_formation,
        options.max_reused_const_prop_size, list(excluded),
    )


# Which switch (and value) makes enzyme-ad add a pattern: the group names follow Reactant.jl's
# grouping of its pattern lists.
_GROUP_SWITCHES: tuple[tuple[str, str, object], ...] = (
    ("no_nan", "no_nan", True),
    ("all_finite", "all_finite", True),
    ("licm", "licm", True),
    ("scatter/gather", "scatter_gather", True),
    ("pad", "pad", True),
    ("structured tensors", "structured_tensors", True),
    ("structured tensors", "structured_tensors_detection", True),
    ("slice to batch", "slice_to_batch", True),
    ("reduce-slice fusion", "reduce_slice_fusion", True),
    ("concat to batch", "concat_to_batch", True),
    ("loop raising", "loop_raising", True),
    ("dot formation", "dot_formation", True),
    ("self to convolution", "self_to_convolution", True),
    ("comms", "recognize_comms", True),
    ("comms", "lower_comms", True),
    ("sharded", "is_sharded", True),
    ("blas/lapack raising", "raise_shlo_to_blas_lapack", True),
    ("dus", "dus_to_concat", True),
    ("dus", "dus_slice_simplify", True),
    ("sum to conv", "sum_to_conv", True),
    ("sum to conv", "aggressive_sum_to_conv", True),
    ("sum to reduce-window", "sum_to_reducewindow", True),
    ("while concat", "while_concat", True),
    ("aggressive propagation", "aggressive_propagation", True),
    ("transpose up", "transpose_propagate", "up"),
    ("transpose down", "transpose_propagate", "down"),
    ("reshape up", "reshape_propagate", "up"),
    ("reshape down", "reshape_propagate", "down"),
)

_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z_][\w]*)(?:<(?P<benefit>\d+)>)?(?P<params>\(.*\))?$")


@dataclass(frozen=True)
class Pattern:
    """One rewrite pattern: ``spec`` is the exact entry enzyme-ad puts in ``patterns=...``."""

    name: str
    group: str
    default_enabled: bool
    benefit: int | None
    parameters: str
    spec: str


def _parse_spec(spec: str) -> tuple[str, int | None, str]:
    m = _SPEC_RE.match(spec.strip())
    if not m:
        raise WorkbenchError(f"enzyme-ad returned a pattern entry this version cannot read: {spec!r}")
    benefit = int(m.group("benefit")) if m.group("benefit") else None
    return m.group("name"), benefit, (m.group("params") or "")[1:-1]


@functools.lru_cache(maxsize=64)
def _specs(options: PatternOptions, excluded: tuple[str, ...] = ()) -> tuple[str, ...]:
    if not enzyme_available():
        raise WorkbenchError("enzyme-ad is not installed (it ships for CPython 3.11 on x86-64 Linux): "
                             "Enzyme-JaX patterns are unavailable; upstream MLIR and XLA passes still work")
    lists = default_worker().call("transform_passes", _enzyme_args(options, excluded)).value
    return tuple(s for s in lists.main.split(";") if s.strip())


def _base_options() -> PatternOptions:
    """Every group switch off: what is left is the base list."""
    off = {sw: (False if isinstance(val, bool) else "none") for _, sw, val in _GROUP_SWITCHES}
    return PatternOptions(**off)


@functools.lru_cache(maxsize=16)
def catalog(options: PatternOptions = PatternOptions()) -> tuple[Pattern, ...]:
    """Every pattern enzyme-ad knows under ``options``' numeric thresholds, grouped.

    ``default_enabled`` says whether ``options`` (as given) turns it on. Patterns that only a switch
    turns on (e.g. ``sum_to_conv``) are listed with ``default_enabled=False`` so they can be enabled.
    """
    enabled = {_parse_spec(s)[0] for s in _specs(options)}
    base = _base_options()
    group_of: dict[str, str] = {}
    spec_of: dict[str, str] = {}
    for spec in _specs(base):
        name = _parse_spec(spec)[0]
        group_of.setdefault(name, "const-prop" if "const_prop" in name else "base")
        spec_of.setdefault(name, spec)
    base_specs = dict(spec_of)
    for group, switch, value in _GROUP_SWITCHES:
        for spec in _specs(dataclasses.replace(base, **{switch: value})):
            name = _parse_spec(spec)[0]
            if name not in group_of:
                group_of[name] = group
                spec_of[name] = spec
            elif group_of[name] == "base" and base_specs.get(name) != spec:
                # Always present, but the switch sets its parameter (the no_nan patterns do this).
                group_of[name] = group
    # Specs under the user's options win (they carry the user's thresholds in their parameters).
    for spec in _specs(options):
        name = _parse_spec(spec)[0]
        spec_of[name] = spec
        group_of.setdefault(name, "combined switches")  # only on when two switches are
    out = []
    for name, spec in spec_of.items():
        _, benefit, params = _parse_spec(spec)
        out.append(Pattern(name, group_of[name], name in enabled, benefit, params, spec))
    return tuple(out)


def patterns(**options):
    """The pattern catalog as a pandas DataFrame: name, group, default_enabled, benefit, parameters, spec."""
    import pandas as pd

    rows = [dataclasses.asdict(p) for p in catalog(PatternOptions.from_kwargs(**options))]
    return pd.DataFrame(rows, columns=["name", "group", "default_enabled", "benefit", "parameters", "spec"])


@functools.lru_cache(maxsize=64)
def pattern_list(sel: PatternSelection, *, direction: str | None = None) -> tuple[str, ...]:
    """The ``patterns=`` entries for one run: enzyme-ad's list with ``excluded_passes``, plus enabled extras.

    ``direction`` overrides transpose/reshape propagation, as the "propagate down" tail of
    enzyme-ad's full pipeline does. Kept per selection: every explore and toggle spells its pattern steps
    out, three times over in the default pipeline.
    """
    opts = sel.options
    if direction is not None:
        opts = dataclasses.replace(opts, transpose_propagate=direction, reshape_propagate=direction)
    specs = list(_specs(opts, tuple(sorted(sel.disabled))))
    wanted = set(sel.enabled) - {_parse_spec(s)[0] for s in specs} if sel.enabled else set()
    if wanted:  # the catalog (a worker call per group switch) only for a pattern the list lacks
        extra = {p.name: p.spec for p in catalog(opts)}
        specs += [extra[n] for n in sorted(wanted)]
    return tuple(specs)


def pattern_name(spec: str) -> str:
    """The name of one ``patterns=`` entry: ``"transpose_transpose<16>"`` -> ``"transpose_transpose"``."""
    return _parse_spec(spec)[0]


def patterns_pass(specs: tuple[str, ...]) -> str:
    """The pipeline entry that applies a pattern list once, greedily, as enzyme-ad does."""
    return ",".join([
        "enzyme-hlo-generate-td{patterns=" + ";".join(specs) + "}",
        "transform-interpreter",
        "enzyme-hlo-remove-transform",
    ])
