"""Compile regressions caught by pytest: ``assert_compiles_like`` and the pytest plugin that serves it.

    import workbench as wb

    def test_mlp_compiles_as_before():
        wb.testing.assert_compiles_like(mlp, x, w, golden="golden/mlp.hlox", max_ops_growth="5%", numbers=True)

The first run (or ``pytest --hlo-update-golden``) writes the golden: the program explored, its final MLIR
stage run, saved with its arguments and outputs (``write_golden``). Every later run explores ``fn(*args)``
again with the versions installed then and checks it against the golden (``check_golden``; the limits are
``workbench.analysis.diff.gates.Limits``'). A failure raises AssertionError with the check's table and
writes the comparison as one HTML page next to the golden (``golden/mlp.diff.html``).

The golden is of one program: a check fails when ``fn``'s name or its arguments (their pytree, shapes and
dtypes) are not the ones the golden recorded, however its counts compare. ``same_program=True`` says ``fn``
is the golden's program under another name or signature (renamed, or checked at other shapes on purpose).

A golden path that is not absolute is read from the folder of the test file that calls it. The plugin is
registered with pytest (the ``pytest11`` entry point ``hlo_workbench``): it adds ``--hlo-update-golden``.
Importing this module loads nothing heavy: pytest imports it in every session of the environment.
"""
from __future__ import annotations

import inspect
import os
from pathlib import Path

__all__ = ["assert_compiles_like", "check_golden", "write_golden", "UPDATE_ENV", "golden_path"]

UPDATE_ENV = "HLO_WORKBENCH_UPDATE_GOLDEN"  # set (to 1) by --hlo-update-golden; a script may set it too


def pytest_addoption(parser) -> None:
    group = parser.getgroup("hlo-workbench")
    group.addoption("--hlo-update-golden", action="store_true", default=False,
                    help="write or refresh the golden .hlox files of wb.testing.assert_compiles_like instead of "
                         "checking against them")


def pytest_configure(config) -> None:
    if config.getoption("--hlo-update-golden", default=False):
        os.environ[UPDATE_ENV] = "1"


def _updating() -> bool:
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def write_golden(ex, path, compile_time: bool = False, kernels: bool = False):
    """Save the Exploration ``ex`` as a golden at ``path``: its final MLIR stage run, saved with its arguments and
    outputs (and its measured compile time with ``compile_time``, the TPU's kernel table with ``kernels``); returns
    the path."""
    from .exploration.golden import write_golden as write

    return write(ex, path, compile_time=compile_time, kernels=kernels)


def check_golden(golden, fn=None, args: tuple = (), **options):
    """The golden ``.hlox`` explored again now and judged (a ``Verdict``: ``ok``, a table); ``options``: the
    limits, ``html``, ``device``, and a candidate ``pipeline``/``disable``/``enable``/``xla_disable``
    (``workbench.exploration.golden.check_golden``)."""
    from .exploration.golden import check_golden as check

    return check(golden, fn, args, **options)


def golden_path(golden, caller_file: str | None) -> Path:
    """``golden`` as a path: an absolute one as it is, else in the folder of ``caller_file`` (the test file)."""
    path = Path(golden)
    if path.is_absolute() or caller_file is None:
        return path
    return Path(caller_file).resolve().parent / path


def _caller_file() -> str | None:
    frame = inspect.currentframe()
    try:
        outer = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
        return outer.f_code.co_filename if outer is not None else None
    finally:
        del frame


def assert_compiles_like(fn, *args, golden, pipeline: str | None = None, disable=(), enable=(), xla_disable=(),
                         device: str | None = None, **limits):
    """Explore ``fn(*args)`` and check it against the golden ``.hlox`` (see the module docstring). ``limits``:
    ``max_ops_growth``, ``max_flops_growth``, ``max_bytes_growth``, ``max_memory_growth`` (fractions or "5%";
    0 by default), ``max_compile_time_growth``, ``max_bundles_growth`` (the TPU's bundles), ``same_final_module``,
    ``numbers``, ``same_program`` (allow another function name or argument signature than the golden's; by default
    they fail). ``pipeline``, pattern and
    XLA toggles and ``device`` are the exploration's settings (the golden is written with them). Returns the
    ``Verdict`` (None when the golden was written); AssertionError with its table when a limit broke, the
    HTML diff written beside the golden; AssertionError when there is no golden and none is being written."""
    from .analysis.diff.gates import Limits
    from .exploration import explore
    from .exploration.golden import check_golden

    Limits.of(**limits)  # a misspelt limit is named now, when writing a golden too
    path = golden_path(golden, _caller_file())
    if _updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        ex = explore(fn, *args, pipeline=pipeline or "all", disable=disable, enable=enable, xla_disable=xla_disable,
                     device=device)
        write_golden(ex, path, compile_time=limits.get("max_compile_time_growth") is not None,
                     kernels=limits.get("max_bundles_growth") is not None)
        return None
    if not path.exists():
        raise AssertionError(f"no golden exploration at {path}: run pytest --hlo-update-golden to write it")
    html = path.with_suffix(".diff.html")
    verdict = check_golden(path, fn, args, device=device, pipeline=pipeline, disable=disable, enable=enable,
                           xla_disable=xla_disable, **limits)
    if not verdict.ok:
        from .artifacts.comparison_page import write_comparison_page

        written = write_comparison_page(verdict.comparison, html, verdict=verdict)
        raise AssertionError(f"{fn.__name__ if hasattr(fn, '__name__') else fn} does not compile like {path.name}:\n"
                             f"{verdict}\nthe comparison: {written}")
    if html.exists():
        html.unlink()  # a page of an earlier failure would say what no longer holds
    return verdict
