"""The Exploration facade: what a user holds and calls. Each method is one call down, into the
pipeline (to derive a new Exploration) or into analysis (to read this one).

An Exploration is immutable: toggling a pattern or an XLA pass returns a new one, recomputed
incrementally (the runner caches each step). XLA's compile, the slowest step, starts in the
background as soon as ``explore`` or a toggle has the final MLIR module (``ex.xla_ready()``,
``ex.xla_future()``); reading the XLA stages waits for the rest of that compile, so a user
toggling patterns sees the MLIR stages first.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from ..children.env import in_a_kernel
from ..analysis.search.pipelines import DEFAULT_PIPELINES, compare_pipelines as pipelines_table
from ..pipeline.build import build, spec_for_function, spec_for_text
from ..pipeline.opt import run_passes
from ..pipeline.compile_queue import XLA_QUEUE
from ..pipeline.trace import release_forgotten_later
from ..pipeline.xla import compiles_begun
from ..pipeline.xla_probe import warm_soon
from ..artifacts.saved import load_exploration
from .comparing import compare_explorations
from .core import XLA_WAIT, Exploration, Stepwise, xla_checked
from .pieces import Explorations
from ..errors import InputKindError, LitFileError, MlirSyntaxError
from ..ir.lit import Piece, has_split_marker, is_run_pipeline, run_line_pipeline, top_level_modules
from ..ir.lit import split_input_file as split_chunks
from ..pipeline.lit import in_piece
from ..pipeline.runner import default_runner

__all__ = ["Exploration", "Explorations", "Stepwise", "XLA_WAIT", "compare_explorations", "compare_pipelines", "explore",
           "explore_text", "explore_texts", "load", "opt"]


def explore(fn: Callable, *args, pipeline: str = "all", disable: Sequence[str] = (), enable: Sequence[str] = (),
            device: str | None = None, xla_disable: Sequence[str] = (), xla_options: dict | None = None,
            timeout: float = 600.0, static_argnums: Sequence[int] = (), **pattern_options) -> "Exploration":
    """Trace ``fn(*args)`` and show the program after every stage of ``pipeline``.

    ``pipeline`` is a preset (see ``wb.pipelines()``) or any pass pipeline string. ``disable``/``enable``
    toggle Enzyme-JaX patterns (see ``wb.patterns()``); ``pattern_options`` are Reactant's options
    that shape the pattern list (``no_nan``, ``transpose_propagate``, ...; ``inline`` too).
    ``device``: where to lower, compile and run ("tpu:0", "cpu"); by default where ``jax.jit`` would
    compute: the device the arguments are committed to, else JAX's default device (the TPU or GPU of
    an accelerator host: say ``device="cpu"`` for the CPU). ``xla_disable`` names XLA HLO passes to skip; ``xla_options`` are other XLA debug options (its
    ``xla_disable_hlo_passes`` joins ``xla_disable``). For a sharded program (arguments placed with a
    ``NamedSharding``), ``shardy_passes`` is Reactant's option: ``"post_sdy_propagation"`` (the
    default: Shardy's propagation, closing, the optimize-communications passes and reshards turned
    into collectives, a stage each, before XLA), ``"none"`` (XLA propagates), ``"to_mhlo_shardings"``,
    or a propagation pipeline of ``sdy-*`` passes; ``optimize_communications=False`` mirrors
    Reactant's option (``workbench/pipeline/shardy.py`` says which passes run where). Arguments JAX cannot trace (strings, None,
    functions) are static; ``static_argnums`` makes others static too (a Python int that picks an
    axis), and a jitted function's own ``static_argnums``/``static_argnames`` are honoured.
    XLA's compile starts in the background when the call returns; reading the XLA stages waits for
    it. When XLA passes are disabled that no compile has reported yet, the call waits for it, so
    that a pass name XLA did not run is reported at once (``XlaPassWarning``, and ``ex.warnings``).
    """
    seen = compiles_begun()
    try:
        return _toggles_soon(xla_checked(Exploration(build(spec_for_function(
            fn, args, pipeline=pipeline, disable=disable, enable=enable, device=device, xla_disable=xla_disable,
            xla_options=xla_options, timeout=timeout, static_argnums=static_argnums, **pattern_options),
            start_xla=True))))
    finally:
        release_forgotten_later(seen)  # the jaxprs the trace took out of JAX's caches: freed while XLA compiles


def explore_text(text: str, *, pipeline: str = "all", disable: Sequence[str] = (), enable: Sequence[str] = (),
                 device: str | None = None, xla_disable: Sequence[str] = (), xla_options: dict | None = None,
                 timeout: float = 600.0, title: str = "text", **pattern_options) -> "Exploration":
    """Like ``explore`` for a module given as MLIR/StableHLO text (any functions; XLA stages need ``@main``).

    The text reaches the first pass exactly as given. Text that is not MLIR (empty, XLA HLO text, a
    jaxpr, Python source) raises InputKindError, and MLIR that does not parse raises MlirSyntaxError
    with the parser's line:col, both before any stage is made.

    A compiler test file is read as MLIR reads it: modules one after another are one module around
    them (every stage holds them all, as ``enzymexlamlir-opt`` runs its passes on them; XLA, which compiles
    one module, makes no stages), and ``// -----`` lines are comments. The default title says so
    ("text: 3 modules read as one"). ``wb.explore_texts(text)`` explores each module or chunk on its own.
    ``pipeline="RUN"`` is the pipeline of the file's RUN line.
    """
    return _explored(text, pipeline=pipeline, disable=disable, enable=enable, device=device, xla_disable=xla_disable,
                     xla_options=xla_options, timeout=timeout, title=title, **pattern_options)


def _explored(text: str, **options) -> "Exploration":
    return _toggles_soon(xla_checked(Exploration(build(spec_for_text(text, **options)))))


def explore_texts(text: str, *, split_input_file: bool | None = None, pipeline: str = "all", title: str = "text",
                  **options) -> Explorations:
    """One Exploration per piece of a compiler test file: each ``// -----`` chunk when the text is split
    (``split_input_file``; by default when it holds a ``// -----`` line, or as its RUN line says with
    ``pipeline="RUN"``), else each of its modules one after another; a text of one module gives one.
    Each piece is explored as ``explore_text`` explores a text (the other keywords are its), titled by the
    piece and the file line it starts at (``"text: chunk [1] at line 13"``); a chunk is cut as
    ``--split-input-file`` cuts it, a module keeps the lines above the first module (the RUN line, aliases).

    Returns ``Explorations``, a list with ``pieces`` and a ``repr`` that says how the file was cut. A piece
    that does not parse is named with its line after every piece was tried: LitFileError, the other
    pieces' Explorations in its ``results``.
    """
    resolved, split_run = run_line_pipeline(text, pipeline)
    if split_input_file is None:
        split_input_file = bool(split_run) if is_run_pipeline(pipeline) else has_split_marker(text)
    if split_input_file:
        pieces, form = split_chunks(text), "chunks"
    else:
        pieces, form = _modules(text), "modules"
        if len(pieces) < 2:
            pieces, form = [Piece("module", 0, 1, text)], "one"
    made, failed = [], []
    for piece in pieces:
        try:
            made.append(_explored(piece.text, pipeline=resolved, title=title if form == "one" else
                                  f"{title}: {piece.label}", **options))
        except MlirSyntaxError as e:
            failed.append((piece.label, in_piece(e, piece) if form != "one" else e))
            made.append(None)
        except InputKindError as e:
            failed.append((piece.label, e))
            made.append(None)
    if failed:
        if form == "one":
            raise failed[0][1]
        raise LitFileError("modules" if form == "modules" else "`// -----` chunks", tuple(failed), tuple(made))
    return Explorations(made, pieces, form)


def _modules(text: str) -> list[Piece]:
    """The text's top-level modules, cut where the parser also reads nothing but modules at its top ([] when
    it does not: a module beside functions is one module as MLIR reads it). A text that does not parse as a
    whole is cut as it looks, and each piece then says whether it parses."""
    pieces = top_level_modules(text)
    if len(pieces) < 2:
        return []
    try:
        names = default_runner().check_module(text, several=True)
    except MlirSyntaxError:
        return pieces
    return pieces if len(names) == len(pieces) else []


def _toggles_soon(ex: Exploration) -> Exploration:
    """In a notebook kernel, start the child process that compiles XLA pass toggles (XLA can abort on
    disabled passes) once XLA's compiles are done (this explore's among them): the first toggle then finds
    JAX imported there and XLA's client up, and its compile is the only wait. Not sooner, so the start does
    not slow the compile the user waits for; not in a script, where a toggle is rare."""
    if in_a_kernel():
        XLA_QUEUE.when_idle(warm_soon)  # watches no compile: the queue's own choices stand
    return ex


def opt(text: str, pipeline: str, timeout: float = 600.0, split_input_file: bool | None = None) -> str:
    """Run ``pipeline`` (a preset or a pass pipeline string, ``builtin.module(...)`` or not) on the
    module ``text`` in one go, as ``enzymexlamlir-opt --pass-pipeline`` does, and return the result
    with locations; ``hlo-workbench opt`` prints it. MlirSyntaxError, PipelineSyntaxError or
    StageError (a pass failed or crashed its worker) say what went wrong.

    A compiler test file runs as the opt tool runs it: modules one after another are parsed as one
    module around them and the pipeline runs on it, reaching each; with ``split_input_file=True`` (the
    tool's ``--split-input-file``) each ``// -----`` chunk is parsed and run on its own, and the outputs
    are joined with ``// -----`` lines, ready for FileCheck. A chunk that fails is named with the line it
    starts at once every chunk ran (LitFileError; the other chunks' outputs are in its ``results``).
    ``pipeline="RUN"`` runs the pipeline the file's first RUN line gives its opt tool (``"RUN:2"`` the
    second), split as that line says unless ``split_input_file`` is given."""
    return run_passes(text, pipeline, timeout=timeout, split_input_file=split_input_file)


def compare_pipelines(fn: Callable, *args, pipelines: Sequence[str] = DEFAULT_PIPELINES, device: str | None = None,
                      repeat: int = 20, executor=None, **explore_kwargs):
    """``fn(*args)`` (or an Exploration ``fn``, no args) through each pipeline: a DataFrame, one row per pipeline
    (median time and IQR, the numeric check, cost, op counts by dialect: ``workbench.analysis.search.pipelines``);
    ``wb.plot_pipelines(df)`` draws it. With ``executor`` (as ``ex.applicable`` takes it) each pipeline's MLIR
    passes run there, all at once; costing and timing stay here."""
    return pipelines_table(explore, fn, *args, pipelines=pipelines, device=device, repeat=repeat, executor=executor,
                           **explore_kwargs)


def load(path) -> "Exploration":
    """The Exploration saved in ``path`` (a ``.hlox`` file from ``ex.save``): its stages, diffs, costs,
    graphs and saved runs (``runs``; ``history`` adds those of the explorations it was made from)
    work at once, without running a pass or compiling; ``with_patterns``, ``with_pipeline`` and
    ``with_xla`` recompute from the saved input module (where enzyme-ad is installed, for Enzyme-JaX
    patterns), and ``run`` runs a stage on the saved arguments (when they were saved with
    ``arrays=True``; otherwise on seeded random ones of the saved shapes).
    Raises SavedFileError for a file that is missing, not a .hlox, from a newer workbench, corrupt
    or truncated; nothing is written."""
    saved = load_exploration(path)
    ex = Exploration(dataclasses.replace(saved.built, runs=saved.runs), saved.earlier)
    ex._profiles.update(saved.profiles)  # saved with profile=True: the profiles and their traces
    ex._saved_compile_time = saved.compile_time  # saved with compile_time=True: ex.saved_compile_time
    ex._saved_kernels = saved.backend  # saved after ex.backend(): its kernel table, where the TPU is not here
    return ex
