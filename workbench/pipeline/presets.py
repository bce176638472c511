"""Pass pipelines as data: the presets that mirror Reactant.jl's ``optimize=`` modes, and custom strings.

A pipeline is a tuple of steps; each step becomes one stage. A ``patterns`` step is the Enzyme-JaX
greedy pattern application (``enzyme-hlo-generate-td`` + ``transform-interpreter`` +
``enzyme-hlo-remove-transform``), filled in with the user's pattern selection when the pipeline runs,
so toggling a pattern changes only those steps' pass strings.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from ..errors import PipelineSyntaxError, UnknownNameError
from ..ir.text import pass_name, split_pipeline

__all__ = ["Step", "Pipeline", "PRESETS", "preset", "parse_pipeline", "pipelines"]

_INLINE = "inline{default-pipeline=canonicalize max-iterations=4}"
# The differentiation pass with the clean-up it runs on its output, as Reactant.jl and enzyme-ad spell it.
ENZYME_PASS = ('enzyme{postpasses="arith-raise{stablehlo=true},enzyme-batch-to-stablehlo,canonicalize,cse,'
               'canonicalize,remove-unnecessary-enzyme-ops,enzyme-simplify-math,canonicalize,cse,canonicalize"}')
PATTERNS_STEP = "enzyme-hlo-patterns"


StepKind = Literal["pass", "patterns"]


@dataclass(frozen=True)
class Step:
    """One top-level pass. ``kind`` is "pass" (``text`` is the pass) or "patterns" (the pattern list,
    with ``direction`` overriding transpose/reshape propagation when set)."""

    kind: StepKind
    text: str = ""
    direction: str | None = None

    @property
    def base_name(self) -> str:
        return PATTERNS_STEP if self.kind == "patterns" else pass_name(self.text)


@dataclass(frozen=True)
class Pipeline:
    name: str
    steps: tuple[Step, ...]
    description: str = ""
    uses_enzyme: bool = True


def _opt(inline: bool, direction: str | None = None) -> list[Step]:
    """Reactant's ``opt_passes``: (inline,) canonicalize, cse, canonicalize, then the patterns."""
    head = [Step("pass", _INLINE)] if inline else []
    return head + [Step("pass", "canonicalize"), Step("pass", "cse"), Step("pass", "canonicalize"),
                   Step("patterns", direction=direction)]


def _p(*texts: str) -> list[Step]:
    return [Step("pass", t) for t in texts]


def _cleanup() -> list[Step]:
    return _p("canonicalize", "remove-unnecessary-enzyme-ops", "enzyme-simplify-math")


def _enzyme() -> list[Step]:
    return _p(ENZYME_PASS, "arith-raise{stablehlo=true}")


@functools.cache  # every explore asks (0.2 ms to make); callers only read the table
def _presets(inline: bool) -> dict[str, Pipeline]:
    opt = _opt(inline)
    # Reactant's modes also lower custom kernels and JIT calls (kern/raise/jit); a JAX program has
    # none, so those passes are left out and before_kernel/before_jit/before_raise coincide with all.
    full = opt + _p("enzyme-batch") + opt + _enzyme() + _cleanup() + opt
    table = {
        "all": (full, "Reactant's default: patterns, batching, differentiation, clean-up, patterns again"),
        "before_kernel": (full, "as 'all' (a JAX program has no custom kernels to lower)"),
        "no_enzyme": (opt + _p("enzyme-batch") + opt + _p("arith-raise{stablehlo=true}") + _cleanup() + opt,
                      "as 'all' without the enzyme differentiation pass"),
        "only_enzyme": (_p("enzyme-batch") + _enzyme() + _cleanup(),
                        "batching and differentiation only, no rewrite patterns"),
        "after_enzyme": (_p("enzyme-batch") + _enzyme() + _cleanup() + opt,
                         "patterns only after differentiation"),
        "before_enzyme": (opt + _p("enzyme-batch") + opt + _enzyme() + _cleanup(),
                          "patterns only before differentiation"),
        "canonicalize": (_p("canonicalize"), "MLIR's canonicalizer alone"),
        "just_batch": (_p("enzyme-batch"), "the batching pass alone"),
        "none": ([], "no MLIR passes: XLA gets the module as lowered"),
        "enzyme_ad_default": (
            [Step("pass", "mark-func-memory-effects")] + opt + _p("enzyme-batch") + opt + _enzyme()[:1] + opt
            + _p("canonicalize", "remove-unnecessary-enzyme-ops", "enzyme-simplify-math") + opt + _opt(inline, "down"),
            "exactly enzyme_ad.jax.full_optimization_pass_pipeline(): what enzyme-ad's JaX integration runs"),
        "upstream": (_p("canonicalize", "cse", "symbol-dce"), "upstream MLIR passes only (no enzyme-ad needed)"),
    }
    return {
        name: Pipeline(name, tuple(steps), desc, uses_enzyme=name != "upstream" and name != "canonicalize" and name != "none")
        for name, (steps, desc) in table.items()
    }


PRESETS: tuple[str, ...] = tuple(_presets(True))


def preset(name: str, *, inline: bool = True) -> Pipeline:
    table = _presets(inline)
    if name not in table:
        raise UnknownNameError("pipeline preset", name, list(table))
    return table[name]


def parse_pipeline(text: str) -> Pipeline:
    """A custom pipeline string, one step per top-level pass.

    ``enzyme-hlo-patterns`` stands for the pattern application with the current selection; the raw
    ``enzyme-hlo-generate-td{...},transform-interpreter,enzyme-hlo-remove-transform`` triple (as
    enzyme-ad prints it) is kept as one step. Whether each pass exists is checked by the runner,
    which asks the real pass registry.
    """
    try:
        entries = split_pipeline(text)
    except ValueError as e:
        raise PipelineSyntaxError(str(e)) from None
    steps: list[Step] = []
    i = 0
    while i < len(entries):
        e = entries[i]
        name = pass_name(e)
        if name == PATTERNS_STEP:
            opt = e[len(PATTERNS_STEP):].strip("{} ")
            direction = opt.split("=", 1)[1].strip() if opt.startswith("direction=") else None
            if opt and direction not in ("up", "down", "none"):
                raise PipelineSyntaxError(f"{PATTERNS_STEP} takes only {{direction=up|down|none}}, got {e!r}")
            steps.append(Step("patterns", direction=direction))
        elif name == "enzyme-hlo-generate-td" and entries[i + 1:i + 3] == ["transform-interpreter", "enzyme-hlo-remove-transform"]:
            steps.append(Step("pass", ",".join(entries[i:i + 3])))
            i += 2
        else:
            steps.append(Step("pass", e))
        i += 1
    return Pipeline(text, tuple(steps), "custom pipeline")


def resolve(pipeline: str, *, inline: bool = True) -> Pipeline:
    """A preset name, or else a custom pipeline string (anything with a comma, brace or dash)."""
    if pipeline in PRESETS:
        return preset(pipeline, inline=inline)
    if any(c in pipeline for c in ",{}()-.") or pipeline in ("inline", "cse", "canonicalize"):
        return parse_pipeline(pipeline)
    raise UnknownNameError("pipeline preset", pipeline, list(PRESETS))


def pipelines():
    """The named presets as a pandas DataFrame: name, description, steps, the pass names in order."""
    import pandas as pd

    rows = []
    for name, p in _presets(True).items():
        rows.append({"name": name, "description": p.description, "steps": len(p.steps),
                     "passes": ", ".join(s.base_name for s in p.steps), "needs_enzyme": p.uses_enzyme})
    return pd.DataFrame(rows)
