"""Golden explorations: a ``.hlox`` saved once, re-explored with the versions installed now and judged by
limits (``hlo-workbench check``, ``wb.testing.assert_compiles_like``).

``check_golden(golden, fn=None, args=(), **limits)`` loads the golden file, explores its program again
with its settings (pipeline, pattern toggles and options, XLA options, device) -- from the module it
saved as lowered, or from ``fn(*args)`` traced anew --, compares the two (``compare_explorations``, the
golden as ``a``) and judges the comparison (``analysis.diff.gates``). A golden's hand edits are its
expectation, not its program: the program is re-explored without them, so a golden whose final module
was edited by hand fails ``same_final_module`` unless the pipeline now makes that module.

A check of a function (``fn``) first holds it to the golden's program: the same function name and the same
arguments (pytree, shapes, dtypes) as the golden recorded, else the verdict fails on its "program" row before
any count is read (``gates.program_row``); ``same_program=True`` says it is the golden's program under another
name or signature. Without ``fn`` the golden's own module is re-explored: the same program by construction.

``write_golden(ex, path)`` runs ``ex``'s final MLIR stage (its outputs are the numbers a later check
compares with) and saves the exploration with its arrays, and its compile time when asked.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from ..analysis.diff.gates import GateRow, Limits, Verdict, judge, program_row
from ..artifacts.comparison_page import write_comparison_page
from ..errors import WorkbenchError
from ..ir.text import host_callback_count
from ..pipeline.build import build, spec_for_function, with_toggles, with_xla_options
from .backend_change import kernels_known
from .comparing import compare_explorations, module_args
from .core import Exploration, xla_checked

__all__ = ["check_golden", "write_golden", "reexplored"]


def write_golden(ex: Exploration, path, compile_time: bool = False, kernels: bool = False) -> Path:
    """Save ``ex`` as a golden: its final MLIR stage run (the outputs a ``numbers`` check compares with), then
    saved with its arrays (``save(arrays=True)``), with its measured compile time when ``compile_time``, with the
    TPU's kernel table when ``kernels`` (``ex.backend()`` first: the golden of ``max_bundles_growth``; where there
    are none, a warning says why). A run that cannot be checked (no reference runs) is kept unchecked; one that
    cannot run at all leaves the golden without outputs, with a warning."""
    try:
        ex.run()
    except WorkbenchError:  # no reference to check against (a module only a pass makes runnable): the outputs alone
        try:
            ex.run(check=False)
        except WorkbenchError as e:  # nothing runs: the golden holds no numbers, and a numbers check says so
            warnings.warn(f"the golden {path} holds no run outputs: {str(e).splitlines()[0]}", stacklevel=2)
    if kernels:
        k = ex.backend()
        if not k.available:
            warnings.warn(f"the golden {path} holds no kernels, so a bundles limit cannot be checked against it: "
                          f"{k.why}", stacklevel=2)
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # goldens live in a folder of their own
    return ex.save(path, arrays=True, compile_time=compile_time)


def reexplored(golden: Exploration, fn=None, args: tuple = (), device: str | None = None, pipeline: str | None = None,
               disable=(), enable=(), xla_disable=()) -> Exploration:
    """The golden's program explored again with its settings and the versions installed now: from ``fn(*args)``
    traced anew when given, else from the module the golden saved as lowered; without its hand edits. The
    other arguments change a setting on top of the golden's (a candidate pipeline, pattern or XLA toggle,
    checked against the golden)."""
    spec = golden.spec
    if fn is not None:
        traced = spec_for_function(fn, tuple(args), device=device or spec.device, timeout=spec.timeout)
        spec = dataclasses.replace(traced, pipeline=spec.pipeline, inline=spec.inline, selection=spec.selection,
                                   xla_options=spec.xla_options, shardy=spec.shardy,
                                   optimize_communications=spec.optimize_communications)
    elif spec.loaded is not None:  # the golden's module, explored by what is installed now: not "saved by" anyone
        spec = dataclasses.replace(spec, source=dataclasses.replace(spec.loaded, saved_by={}, path=""))
    spec = dataclasses.replace(spec, edits=(), device=device or spec.device, pipeline=pipeline or spec.pipeline)
    if disable or enable:
        spec = with_toggles(spec, tuple(disable), tuple(enable))
    if xla_disable:
        spec = with_xla_options(spec, tuple(xla_disable), (), {})
    return xla_checked(Exploration(build(spec)))


def _same_args(golden: tuple, now: tuple) -> str:
    """Why the golden's arguments are not the ones explored now ("" when they are)."""
    if len(golden) != len(now):
        return f"the golden has {len(golden)} arguments, the program now {len(now)}"
    for i, (g, n) in enumerate(zip(golden, now)):
        g, n = np.asarray(g), np.asarray(n)
        if g.shape != n.shape or g.dtype != n.dtype:
            return f"argument {i} is {g.dtype}{list(g.shape)} in the golden and {n.dtype}{list(n.shape)} now"
        if not np.array_equal(g, n, equal_nan=True):
            return f"argument {i} holds other values than the golden's"
    return ""


def _flat(values) -> tuple[tuple[tuple[int, ...], str], ...]:
    return tuple((tuple(int(d) for d in np.shape(v)), str(getattr(v, "dtype", np.asarray(v).dtype))) for v in values)


def _program(golden: Exploration, now: Exploration, same_program: bool) -> GateRow | None:
    """The "program" row of a function checked against ``golden`` (None when ``now`` re-explores the golden's
    own module): its name and arguments against what the golden recorded."""
    if now.spec.traced is None:
        return None
    g = golden.spec
    flat = tuple((tuple(s), d) for s, d in g.loaded.avals) if g.loaded is not None else _flat(module_args(g))
    return program_row(g.signature, now.spec.signature, flat, _flat(module_args(now.spec)), same_program)


def _numbers(golden: Exploration, now: Exploration) -> tuple[bool, str]:
    """The numbers limit: this program's run checked as any run is, and the golden's outputs checked against
    this program by the same rule (both within rounding of what the program computes)."""
    run = next((r for r in reversed(golden.runs) if r.outputs is not None), None)
    if run is None:
        raise WorkbenchError("the golden holds no run outputs to check the numbers against: save it with "
                             "arrays=True after a run (wb.testing.write_golden(ex, path) does both)")
    why = _same_args(module_args(golden.spec), module_args(now.spec))
    if why:
        return False, f"not compared: {why}"
    stage = run.stage if run.stage in now.names else None
    mine = now.run(stage, repeat=1)
    theirs = now.check_outputs(run.program_outputs if run.program_outputs is not None else run.outputs)
    passed = bool(mine.check is not None and mine.check.passed and theirs.passed)
    return passed, (f"the golden's outputs against this program: {'passed' if theirs.passed else 'FAILED'}, "
                    f"max error {theirs.max_abs:.3g}; this run of {mine.stage}: "
                    f"{'passed' if mine.check and mine.check.passed else 'FAILED'}")


def _kernels_now(golden: Exploration, now: Exploration) -> None:
    """The bundles limit asks for the kernels of the program explored now, where the golden has kernels: compiled
    where the TPU is on this machine; elsewhere ``now.backend()`` compiles nothing and says why there are none, which
    the verdict's row repeats."""
    kept = kernels_known(golden)
    if kept is not None and kept.available:
        now.backend()


def _compile_time(golden: Exploration, now: Exploration) -> tuple[float, float, str]:
    saved = golden.saved_compile_time
    if saved is None:
        raise WorkbenchError("the golden holds no compile time: save it with compile_time=True "
                             "(ex.save(path, arrays=True, compile_time=True), or pytest --hlo-update-golden)")
    measured = now.compile_time()
    return saved.ratio, measured.ratio, f"golden {saved.words()}; now {measured.words()}"


def check_golden(golden, fn=None, args: tuple = (), *, device: str | None = None, html=None,
                 pipeline: str | None = None, disable=(), enable=(), xla_disable=(), **limits) -> Verdict:
    """``golden`` (a ``.hlox`` path or a loaded Exploration) re-explored now and judged by ``limits``
    (``Limits``: ``max_ops_growth``, ``max_flops_growth``, ``max_bytes_growth``, ``max_memory_growth`` --
    fractions or "5%", 0 by default --, ``max_compile_time_growth``, ``max_bundles_growth`` (the TPU's bundles,
    the golden's saved kernels against those computed now; off by default), ``same_final_module``, ``numbers``,
    ``same_program``). With ``fn``, the verdict fails unless ``fn`` is the golden's function with arguments of
    the golden's tree, shapes and dtypes, or ``same_program=True`` allows the difference (see the module
    docstring).
    With ``html``, the comparison is written there as one offline page. ``pipeline``, ``disable``/``enable``
    (patterns) and ``xla_disable`` check a candidate setting against the golden (``reexplored``).
    WorkbenchError when a limit asks for what the golden does not hold (outputs, a compile time)."""
    from . import load

    rules = Limits.of(**limits)
    path = None if isinstance(golden, Exploration) else Path(golden)
    g = golden if path is None else load(path)
    if fn is None and g.spec.traced is None and host_callback_count(g.spec.input_text):
        raise WorkbenchError("the golden's program calls host callbacks (jax.debug.print, pure_callback, "
                             "io_callback), whose Python functions its saved module does not hold: XLA cannot "
                             "compile it from the file alone. Give the function: --target PATH.py:FUNC on the "
                             "command line, or check_golden(golden, fn, args)")
    now = reexplored(g, fn, args, device, pipeline, disable, enable, xla_disable)
    label = path.name if path is not None else "golden"
    if rules.max_bundles_growth is not None:
        _kernels_now(g, now)
    comparison = compare_explorations(g, now, labels=(label, "now"))
    numbers = _numbers(g, now) if rules.numbers else None
    timed = _compile_time(g, now) if rules.max_compile_time_growth is not None else None
    notes = []
    if g.spec.edits:
        notes.append(f"the golden holds {len(g.spec.edits)} hand edit(s): its program was explored without them")
    if now.error is not None:
        notes.append(f"exploring now failed: {str(now.error).splitlines()[0]}")
    verdict = judge(comparison, rules, numbers, timed, tuple(notes), _program(g, now, rules.same_program))
    if html is not None:
        written = write_comparison_page(comparison, html, verdict=verdict)
        verdict = dataclasses.replace(verdict, html=str(written))
    return verdict
