"""hlo-workbench: look inside array compilers, one stage at a time.

    import workbench as wb
    ex = wb.explore(f, x, y, pipeline="all")
    ex.stages, ex["stablehlo"], ex.changed(), ex.with_patterns(disable=["transpose_transpose"])

``import workbench`` loads the errors only; each other public name loads its module on first use
(PEP 562). So the child processes the workbench starts (the Enzyme worker, the XLA child, a process
of a multi-process run), which import a module of this package and so this file, do not pay for jax,
pandas and the whole facade before they can answer; nor does a kernel that only loads the extension.
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from .errors import (ArgumentError, ArrayTooLargeError, GraphTooLargeError, GraphUnavailableError, InputKindError,
                     LitFileError, MlirSyntaxError, PipelineSyntaxError, ProcessRunError, SavedFileError, StageError,
                     TraceError, UnknownNameError, UnknownPeakError, WorkbenchError, XlaAbortError, XlaOptionError,
                     XlaPassWarning, XlaProbeDied)

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from .analysis.run.execute import devices
    from .analysis.search.bisect import (crashes, differs_from, has_op, lacks_op, miscompiles, op_count_above,
                                         op_count_at_most, slower_than)
    from .analysis.search.drifts import drifts_at
    from .analysis.search.pipelines import plot_pipelines
    from .exploration import (Exploration, Explorations, compare_explorations, compare_pipelines, explore, explore_text,
                              explore_texts, load, opt)
    from .pipeline.catalog import patterns
    from .pipeline.presets import pipelines
    from .pipeline.remote import config
    from .stages import Stage

# public name -> the module (relative to this package) that defines it
_LAZY = {
    **dict.fromkeys(("explore", "explore_text", "explore_texts", "load", "opt", "Exploration", "Explorations",
                     "compare_pipelines", "compare_explorations"), ".exploration"),
    **dict.fromkeys(("crashes", "differs_from", "has_op", "lacks_op", "miscompiles", "op_count_above",
                     "op_count_at_most", "slower_than"), ".analysis.search.bisect"),
    "drifts_at": ".analysis.search.drifts",
    "devices": ".analysis.run.execute", "plot_pipelines": ".analysis.search.pipelines",
    "patterns": ".pipeline.catalog", "pipelines": ".pipeline.presets", "config": ".pipeline.remote",
    "Stage": ".stages",
}
_SUBMODULES = ("widgets", "course", "examples", "views", "exploration", "analysis", "artifacts", "pipeline", "ir",
               "testing")


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # once: later lookups do not come here
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def panel(ex, **kwargs):
    """The pass-toggle panel for an Exploration (ipywidgets; see ``workbench.views.widgets.panel``)."""
    from .views.widgets import panel as make_panel

    return make_panel(ex, **kwargs)


__all__ = [
    "explore", "explore_text", "explore_texts", "Explorations", "load", "opt", "patterns", "pipelines", "Exploration",
    "Stage", "devices", "panel",
    "compare_pipelines", "compare_explorations", "plot_pipelines", "config", "testing",
    "miscompiles", "crashes", "slower_than", "op_count_above", "op_count_at_most", "differs_from", "has_op", "lacks_op",
    "drifts_at",
    "WorkbenchError", "StageError", "TraceError", "ArgumentError", "PipelineSyntaxError", "UnknownNameError",
    "XlaOptionError", "XlaPassWarning", "UnknownPeakError", "InputKindError", "MlirSyntaxError",
    "SavedFileError", "ArrayTooLargeError", "GraphUnavailableError", "GraphTooLargeError", "XlaAbortError",
    "XlaProbeDied", "ProcessRunError", "LitFileError",
]
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .pipeline.worker import warm_soon

    warm_soon()  # first: enzyme-ad's import in the worker runs beside the magics' imports here
    from .views.magics import load_ipython_extension as load
    load(ipython)


def _warm_in_a_kernel() -> None:
    """A notebook kernel that imports the workbench is about to explore: start the worker now, in the
    background, so that the first explore finds it ready (a script or a child process does not)."""
    if "ipykernel" in sys.modules:
        from .children.env import in_a_kernel

        if in_a_kernel():
            from .pipeline.worker import warm_soon

            warm_soon()


_warm_in_a_kernel()
