"""hlo-workbench: look inside array compilers, one stage at a time.

    import workbench as wb
    ex = wb.explore(f, x, y, pipeline="all")
    ex.stages, ex["stablehlo"], ex.changed(), ex.with_patterns(disable=["transpose_transpose"])
"""
from .errors import (ArgumentError, ArrayTooLargeError, GraphTooLargeError, GraphUnavailableError, InputKindError,
                     MlirSyntaxError, PipelineSyntaxError, ProcessRunError, SavedFileError, StageError, TraceError,
                     UnknownNameError, UnknownPeakError, WorkbenchError, XlaAbortError, XlaOptionError, XlaPassWarning,
                     XlaProbeDied)
from .analysis.search.bisect import (crashes, differs_from, has_op, lacks_op, miscompiles, op_count_above, op_count_at_most,
                              slower_than)
from .analysis.run.execute import devices
from .analysis.search.pipelines import plot_pipelines
from .exploration import Exploration, compare_pipelines, explore, explore_text, load, opt
from .pipeline.catalog import patterns
from .pipeline.presets import pipelines
from .pipeline.remote import config
from .stages import Stage


def panel(ex, **kwargs):
    """The pass-toggle panel for an Exploration (ipywidgets; see ``workbench.views.widgets.panel``)."""
    from .views.widgets import panel as make_panel

    return make_panel(ex, **kwargs)


__all__ = [
    "explore", "explore_text", "load", "opt", "patterns", "pipelines", "Exploration", "Stage", "devices", "panel",
    "compare_pipelines", "plot_pipelines", "config",
    "miscompiles", "crashes", "slower_than", "op_count_above", "op_count_at_most", "differs_from", "has_op", "lacks_op",
    "WorkbenchError", "StageError", "TraceError", "ArgumentError", "PipelineSyntaxError", "UnknownNameError",
    "XlaOptionError", "XlaPassWarning", "UnknownPeakError", "InputKindError", "MlirSyntaxError",
    "SavedFileError", "ArrayTooLargeError", "GraphUnavailableError", "GraphTooLargeError", "XlaAbortError",
    "XlaProbeDied", "ProcessRunError",
]
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .views.magics import load_ipython_extension as load
    load(ipython)
