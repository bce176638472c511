"""Errors a user can act on: each says what failed, where, and what to try."""
from __future__ import annotations

import difflib


class WorkbenchError(Exception):
    """Base class of every error the workbench raises on purpose."""


class UnknownNameError(WorkbenchError, KeyError):
    """A pattern, preset, stage or pass name that does not exist; suggests the closest ones."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...], known_note: str = ""):
        self.kind, self.name = kind, name
        self.suggestions = difflib.get_close_matches(name, list(known), n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(map(repr, self.suggestions))}?" if self.suggestions else ""
        note = f": {known_note}" if known_note else ""
        super().__init__(f"unknown {kind} {name!r}{hint}{note}")

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return self.args[0]


class PipelineSyntaxError(WorkbenchError, ValueError):
    """A pipeline string that does not parse (unbalanced brackets, empty entry, unregistered pass)."""


class TraceError(WorkbenchError):
    """The user's function raised while JAX traced it; the message holds the user's own frames.

    ``call`` is what was traced, as ``f(float32[3])``; ``detail`` what went wrong, the user's frames
    first; ``cause`` the name of the exception the function raised (None when unknown)."""

    def __init__(self, call: str, detail: str, cause: str | None = None):
        self.call, self.detail, self.cause = call, detail, cause
        super().__init__(f"tracing {call} failed:\n{detail}")


class ArgumentError(WorkbenchError, TypeError):
    """An argument that JAX can neither trace nor treat as static."""


class XlaOptionError(WorkbenchError, ValueError):
    """XLA options that XLA would abort the process on, refused before compiling."""


class StageError(WorkbenchError):
    """A stage failed: a pass did not verify, raised, crashed its worker, or timed out.

    The Exploration keeps every stage computed before it; ``stage`` names the failed one and
    ``produced_by`` the exact pass string to reproduce it in a terminal tool. ``reason`` says why in one
    line (a pass's first error); ``diagnostics`` is everything the pass runner said, as it said it.

    ``str()`` is the short form a compiler prints: the pass, and for each error the op it is about (its line
    in the pass's input stage) and the user's line that made the op (``summary``, written where the error is
    made). ``full`` adds every frame of each error (``detail``) and the runner's own words.
    """

    def __init__(self, stage: str, produced_by: str, reason: str, diagnostics: str = "", summary: str = "",
                 detail: str = ""):
        self.stage, self.produced_by, self.reason, self.diagnostics = stage, produced_by, reason, diagnostics
        self.summary, self.detail = summary, detail
        super().__init__(self._short())

    def __reduce__(self):  # pickled (by an executor) with its fields, not its message
        return type(self), (self.stage, self.produced_by, self.reason, self.diagnostics, self.summary, self.detail)

    def _head(self, whole: bool) -> str:
        p = self.produced_by
        if not whole and len(p) > 160:
            p = f"{p[:120]}... ({len(p):,} characters: .produced_by)"
        return f"stage {self.stage!r} failed: {self.reason}\n  pass: {p}"

    def _short(self) -> str:
        if self.summary:
            more = "\n  (every frame, and what the pass runner printed: .full; in the CLI, --full-errors)"
            return f"{self._head(False)}\n{self.summary.rstrip()}{more * bool(self.detail or self.diagnostics)}"
        msg = self._head(False)
        if self.diagnostics.strip():
            msg += "\n  diagnostics:\n    " + "\n    ".join(self.diagnostics.strip().splitlines()[-30:])
        return msg

    @property
    def full(self) -> str:
        """Everything known of the failure: the short form's lines with the whole pass string, every frame of
        each error, and what the pass runner printed (enzyme-ad's runner heads a pass's failure "Failed to
        parse pipeline" though the pipeline parsed: said where it does)."""
        if not self.summary:
            raw = self.diagnostics.strip()
            return self._head(True) + ("\n  diagnostics:\n    " + "\n    ".join(raw.splitlines()) if raw else "")
        out = [self._head(True), self.summary.rstrip()]
        if self.detail.strip():
            out.append(self.detail.rstrip())
        raw = self.diagnostics.strip()
        if raw:
            note = ""
            if "Failed to parse pipeline" in raw and "Pipeline failed:" in raw:
                note = (" (its \"Failed to parse pipeline\" heads every failure: the pipeline parsed, and the "
                        "pass reported the errors after \"Pipeline failed:\")")
            out.append(f"  what the pass runner printed{note}:\n    " + "\n    ".join(raw.splitlines()))
        return "\n".join(out)


class ModuleParseError(WorkbenchError, ValueError):
    """The text is not an MLIR module that jaxlib's MLIR can read."""


class GraphUnavailableError(WorkbenchError, ValueError):
    """A stage whose text is not a module the graph can be drawn from (a jaxpr, a backend dump,
    a failed stage)."""


class XlaPassWarning(UserWarning):
    """A pass named in ``xla_disable_hlo_passes`` that XLA did not report running on this module.

    XLA ignores names it does not know, so a misspelled pass would otherwise be skipped silently.
    """


class InputKindError(WorkbenchError, ValueError):
    """Text given as a module that is not MLIR: empty, XLA HLO text, a jaxpr, Python source.

    ``kind`` is what the text looks like (``irtext.input_kind``); the message says what to pass instead.
    """

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class MlirSyntaxError(WorkbenchError, ValueError):
    """MLIR text that the parser (enzyme-ad's, else jaxlib's) refuses, caught before any pass runs.

    ``diagnostics`` are the parser's messages as ``"line:col: error: ..."``; ``line`` and ``column``
    (1-based) locate the first error, or are None when the parser gave no position.
    """

    def __init__(self, message: str, diagnostics: tuple[str, ...] = (), line: int | None = None,
                 column: int | None = None):
        self.diagnostics, self.line, self.column = tuple(diagnostics), line, column
        super().__init__(message)


class LitFileError(WorkbenchError, ValueError):
    """Some pieces of a test file of several modules or ``// -----`` chunks failed (``wb.opt`` with
    ``split_input_file``, ``wb.explore_texts``): each failed piece is named with the line it starts at and
    its own error. ``failed`` is ``((label, error), ...)``; ``results`` what every piece gave, in order
    (``None`` for a failed one): the outputs or explorations made before and after it are kept there."""

    def __init__(self, what: str, failed: tuple, results: tuple):
        self.failed, self.results = tuple(failed), tuple(results)
        lines = [f"  {label}: {str(error).strip()}".replace("\n", "\n    ") for label, error in self.failed]
        done = sum(r is not None for r in self.results)
        super().__init__(f"{len(self.failed)} of {len(self.results)} {what} failed:\n" + "\n".join(lines)
                         + f"\nthe other {done} are kept in this error's .results")


class UnknownPeakError(UnknownNameError, ValueError):
    """A device, or a dtype of a device, that the roofline has no peak rate for; suggests the closest.

    Also a ValueError: it is a bad argument to ``roofline``.
    """


class SavedFileError(WorkbenchError, ValueError):
    """A saved exploration (.hlox) that cannot be read: missing, not a .hlox, corrupt or truncated,
    or written by a newer workbench. Nothing was overwritten; ``path`` is the file."""

    def __init__(self, path, message: str):
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class ReportFileError(WorkbenchError, OSError):
    """A report (``ex.report``, a diff page) that could not be written at ``path``, in words: the path
    holds a FIFO, a device or a folder, its folder is missing or not writable, or the disk filled.
    Whatever was at ``path`` is as it was, and no temporary file is left beside it."""

    def __init__(self, path, message: str):
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class ReproducerError(WorkbenchError, ValueError):
    """A reproducer folder that cannot be written as asked: a predicate without a standalone form
    (a custom function rather than one of the built-in predicates), a stage that is not an MLIR
    pipeline stage, or a module that cannot be run on its own."""


class NothingToSearchError(WorkbenchError):
    """A search that has nothing to search: its predicate does not hold where the search starts (``bisect``:
    with every candidate enabled, the program as explored; ``reduce``: on the start module). Not a failure of
    the search: the command line's ``bisect`` and ``reduce`` exit 0 on it."""


class XlaAbortError(WorkbenchError):
    """XLA aborted the process compiling this module with these options (tried in a child process)."""


class XlaProbeDied(WorkbenchError):
    """The child process compiling the module was killed from outside (SIGKILL: the out-of-memory
    killer or a user's kill -9), exited, or gave no answer within the timeout and was ended; whether XLA
    accepts the module is not known, and nothing is kept."""


class ArrayTooLargeError(WorkbenchError, ValueError):
    """Arrays the workbench would make, place or write for a module's shapes are larger than
    ``array_limit()``; refused before anything was allocated or written. ``what`` names the array
    (``"argument 0"``), ``shape`` and ``dtype`` are its own, ``nbytes`` its size, ``total`` the bytes
    of it and the arrays counted before it, ``limit`` the limit then."""

    def __init__(self, message: str, what: str, shape: tuple, dtype: str, nbytes: int, total: int, limit: int):
        self.what, self.shape, self.dtype, self.nbytes, self.total, self.limit = what, shape, dtype, nbytes, total, limit
        super().__init__(message)


class ProcessRunError(WorkbenchError):
    """A multi-process run that failed: a process exited non-zero or was killed (``process_id``,
    ``returncode``), or the run outlived its ``timeout`` (``process_id`` None). ``stderr`` is the end
    of the failing process's stderr. Every process of the run was stopped before this was raised."""

    def __init__(self, message: str, process_id: int | None = None, returncode: int | None = None,
                 stderr: str = ""):
        self.process_id, self.returncode, self.stderr = process_id, returncode, stderr
        super().__init__(message)


class GraphTooLargeError(GraphUnavailableError):
    """``dot`` did not lay the graph out within its time limit; it was stopped, and nothing was drawn.
    ``seconds`` is the limit, ``nodes`` and ``edges`` what was to be laid out."""

    def __init__(self, message: str, seconds: float, nodes: int, edges: int):
        self.seconds, self.nodes, self.edges = seconds, nodes, edges
        super().__init__(message)
