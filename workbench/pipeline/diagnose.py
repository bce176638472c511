"""A pass that failed, told as a compiler tells an error: the pass, and for each error its message, the op it
is about with that op's line in the pass's input stage, and the user's line that made the op.

MLIR prints an error's location whole: JAX's chain of every Python frame that was on the stack, the user's
few among the workbench's, JAX's, IPython's, ipykernel's, tornado's and asyncio's. ``user_frames`` keeps the
user's (files outside the standard library, the installed packages, JAX and the workbench, whose examples
count as the user's), ``where`` names one as the user knows it: a notebook cell as IPython names it in
tracebacks (``Cell In[3], line 4``), a file as path:line. The error keeps every frame in ``StageError.full``.

An op's location is often shared (JAX gives the function's own location to the constants it makes at its
boundary, and to its return), or missing (MLIR prints ``error: ...`` alone): where not exactly one op of the
input has the error's location, the pass runs once more on the input with each op's location numbered
(``locations.tag_ops``), and the error names its op. The pass runner's own words ("Failed to parse
pipeline" from enzyme-ad, though the pipeline parsed) stay in ``full``, said for what they are.
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import StageError
from ..ir.diagnostics import Diagnostic, enzyme_failure, read_diagnostics
from ..ir.locations import Frame, OpLocation, Origin, mlir_op_locations, op_tag, ops_at, tag_ops
from ..ir.text import strip_locations

__all__ = ["pass_error", "source_label", "user_frames", "where"]

_SHOWN = 3  # errors the short form shows; .full has them all
_CALLERS = 3  # the user's frames it shows after the innermost
_WIDTH = 160  # a stage line or a source line, at most

Rerun = Callable[[str], str]  # the pass run again on this text: what it printed (its diagnostics), "" if it passed


def source_label(file: str) -> str:
    """How the user knows ``file``: a cell of the running IPython as IPython's tracebacks name it
    (``Cell In[3]``), else the path itself."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    label = None
    if name is not None:
        try:
            label = name(file)
        except Exception:  # another IPython's compiler, or none: the path says enough
            label = None
    return f"{label[0]} {label[1]}" if label else file


def where(frame: Frame) -> str:
    """``Cell In[3], line 4`` or ``path/to/file.py:12``, then the function (`, in f`) if not a module's code."""
    label = source_label(frame.file)
    if label != frame.file:
        at = f"{label}, line {frame.line}"
    else:
        try:
            cwd = os.getcwd() + os.sep
        except OSError:  # the working folder is gone
            cwd = "\0"
        at = f"{frame.file[len(cwd):] if frame.file.startswith(cwd) else frame.file}:{frame.line}"
    return at + (f", in {frame.function}" if frame.function and frame.function != "<module>" else "")


@functools.cache
def _tool_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The folders whose frames are not the user's, and the folders inside them that are (the examples)."""
    import jax
    import jaxlib

    package = Path(__file__).resolve().parents[1]
    paths = sysconfig.get_paths()
    dirs = {str(package), os.path.dirname(jax.__file__), os.path.dirname(jaxlib.__file__)}
    dirs |= {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib", "scripts") if paths.get(k)}
    dirs |= {os.path.realpath(d) for d in dirs}
    keep = {str(package / "examples"), os.path.realpath(package / "examples")}
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs), tuple(k + os.sep for k in keep)


def user_frames(frames: Sequence[Frame]) -> tuple[Frame, ...]:
    """The frames of the user's code among ``frames``, in their order: not a tool's (see the module's
    docstring, console scripts too), nor a buffer MLIR parsed (``"-"``), nor frozen or generated code
    (``<frozen runpy>``, a dataclass's ``<string>``); IPython's ``<ipython-input-3-...>`` cells are the user's."""
    skip, keep = _tool_dirs()
    return tuple(f for f in frames if f.file not in _NOT_CODE and not f.file.startswith("<frozen")
                 and (not f.file.startswith(skip) or f.file.startswith(keep)))


_NOT_CODE = ("", "-", "<unknown>", "<string>")


def _clip(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _WIDTH else line[:_WIDTH - 3] + "..."


def _source(frame: Frame) -> str:
    return _clip(linecache.getline(frame.file, frame.line))


def _from_lines(origins: Sequence[Origin], location: str, indent: str) -> list[str]:
    """The user's line that made the op, its callers among the user's frames, and JAX's name stack."""
    origin = next((o for o in origins if user_frames(o.frames)), origins[0] if origins else None)
    mine = user_frames(origin.frames) if origin else ()
    out = []
    if mine:
        out.append(f"{indent}from: {where(mine[0])}")
        code = _source(mine[0])
        if code:
            out.append(f"{indent}        {code}")
        out += [f"{indent}      called from {where(f)}" for f in mine[1:1 + _CALLERS]]
        if len(mine) > 1 + _CALLERS:
            out.append(f"{indent}      ... {len(mine) - 1 - _CALLERS} more of your frames")
    elif origin is not None and origin.frames and all(f.file == "-" for f in origin.frames):
        out.append(f"{indent}from: no line of Python: the module was given as text, without locations")
    elif origin is not None and origin.frames:
        out.append(f"{indent}from: no line of your code (.full has the frames)")
    elif location:
        out.append(f"{indent}from: no line of Python; the op's location is {_clip(location)}")
    else:
        out.append(f"{indent}from: not known: the op carries no location")
    if mine and "/" in origin.name:  # JAX's name stack: which primitive made it, not only the function
        out.append(f"{indent}jax:  {_clip(origin.name)}")
    return out


def _block(d: Diagnostic, found: tuple[OpLocation | None, int], source: str, stage_lines: list[str],
           several: bool) -> list[str]:
    """The lines of one error in the short form: its op (line in the input stage) and the user's line."""
    op, count = found
    indent = "    " if several else "  "
    out = [f"  error: {d.message}"] if several else []
    of = f"stage {source!r}, the pass's input" if source else "the pass's input"
    if op is not None:
        note = f" (the first of {count} ops with its location)" if count > 1 else ""
        out.append(f"{indent}op:   {op.op}, line {op.line + 1} of {of}{note}")
        if 0 <= op.line < len(stage_lines):
            out.append(f"{indent}        {_clip(stage_lines[op.line])}")
    buffer = [o.frame for o in d.origins if o.frame is not None and o.frame.file == "-"]
    if op is None and buffer:  # MLIR's parser's location: a line of the text it first read
        out.append(f"{indent}at:   line {buffer[0].line}, column {buffer[0].column} of the module text as given")
    elif op is None and not d.location:
        out.append(f"{indent}op:   not known: MLIR gave the error no location")
    return out + _from_lines(op.origins if op is not None and op.origins else d.origins, d.location, indent)


def _detail(errors: Sequence[Diagnostic], found: Sequence[tuple[OpLocation | None, int]]) -> str:
    """Every error with every frame of its op's location, innermost first (the user's marked)."""
    out = []
    for d, (op, _) in zip(errors, found):
        named = " ".join(filter(None, (op.op, op.result))) if op is not None else ""
        out.append(f"  error: {d.message}" + (f" (op {named})" if named else ""))
        for o in op.origins if op is not None and op.origins else d.origins:
            mine = set(user_frames(o.frames))
            out.append(f"    {o.name or '(no name stack)'}, every frame, innermost first ({len(o.frames)}):")
            out += [f"      {'>' if f in mine else ' '} {f.file}:{f.line}:{f.column} in {f.function or '?'}"
                    for f in o.frames]
    return "\n".join(out)


def _ops(errors: Sequence[Diagnostic], text: str, rerun: Rerun | None) -> list[tuple[OpLocation | None, int]]:
    """Each error's op in ``text`` and how many ops share its location: the one op with the error's location,
    else the one the pass names when run again with every op's location numbered, else the first."""
    candidates = [ops_at(text, d.location) if d.location else () for d in errors]
    found = [(c[0] if c else None, len(c)) for c in candidates]
    if rerun is None or all(len(c) == 1 for c in candidates):
        return found
    tagged = [d for d in read_diagnostics(rerun(tag_ops(text))) if d.severity == "error"]
    every = mlir_op_locations(text)
    for k, (d, t) in enumerate(zip(errors, tagged)):
        n = op_tag(t.location) if t.message == d.message else None
        if n is not None and n < len(every):
            found[k] = (every[n], 1)
    return found


def pass_error(stage: str, pipeline: str, source: str, text: str, message: str, diagnostics: str,
               rerun: Rerun | None = None) -> StageError:
    """The StageError of ``pipeline`` failing on ``text`` (the input stage ``source``, with locations) with
    ``message`` (what the runner raised) and ``diagnostics`` (what it printed). ``rerun`` runs the pass again
    on another text, to find which of several ops with the same location an error is about."""
    raw = f"{message}\n{diagnostics}"
    errors = [d for d in read_diagnostics(raw) if d.severity == "error"]
    if not errors:
        errors = [Diagnostic("error", m, "", ()) for m in (enzyme_failure(message) or ())]
    if not errors:
        first = next((ln.strip() for ln in message.splitlines() if ln.strip()), message)
        return StageError(stage, pipeline, first, raw)
    try:
        return _located(stage, pipeline, source, text, errors, raw, rerun)
    except Exception:  # noqa: BLE001 -- reading where it failed failed: the pass's error, as the runner gave it
        return StageError(stage, pipeline, errors[0].message, raw)


def _located(stage: str, pipeline: str, source: str, text: str, errors: Sequence[Diagnostic], raw: str,
             rerun: Rerun | None) -> StageError:
    """The StageError with each error's op and user line (``pass_error``)."""
    found = _ops(errors, text, rerun)
    stage_lines = strip_locations(text).splitlines()
    several = len(errors) > 1
    summary: list[str] = []
    for d, f in list(zip(errors, found))[:_SHOWN]:
        summary += _block(d, f, source, stage_lines, several)
    if len(errors) > _SHOWN:
        summary.append(f"  ... and {len(errors) - _SHOWN} more errors")
    reason = errors[0].message + (f" (and {len(errors) - 1} more error{'s' * (len(errors) > 2)})" if several else "")
    return StageError(stage, pipeline, reason, raw, "\n".join(summary), _detail(errors, found))
