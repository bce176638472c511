"""Compiler test files (LLVM lit files) as text: the pieces an opt tool reads and the pipeline a RUN line names.

A lit test file holds MLIR in one of two forms besides a single module:

- several top-level ``module`` ops one after another. MLIR's parser wraps them in one unnamed module of its
  own (checked with jaxlib's parser: ``module {} module {}`` parses as ``module { module {} module {} }``),
  and ``enzymexlamlir-opt`` runs the pipeline on that outer module, so its passes reach every inner one.
  ``top_level_modules`` finds them in the text, without parsing.
- chunks separated by ``// -----``, read one by one under ``--split-input-file``: each chunk is parsed as a
  file of its own (a chunk's line 1 is the rest of the marker's line) and the outputs are joined with
  ``// -----`` lines. ``split_input_file`` cuts the text as MLIR's ``splitAndProcessBuffer`` does: at every
  ``// -----`` with a character after it, wherever it is; a shorter run of dashes (``// ---``) is not a
  marker. Without the flag the marker is a comment, and the file one module.

``run_lines`` reads a file's ``// RUN:`` lines (joined across a trailing backslash, as lit joins them), and
``RunLine.pipeline`` the pass pipeline an ``*-opt`` command on one names: ``--pass-pipeline=...`` as it is,
or its pass flags (``--enzyme-hlo-opt``, ``--enzyme-hlo-generate-td="patterns=a;b"``) as
``builtin.module(enzyme-hlo-opt,enzyme-hlo-generate-td{patterns=a;b})``; ``--split-input-file`` is
``RunLine.split``. Pure text, no parse.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..errors import ArgumentError
from .text import skip_string

__all__ = ["SPLIT_MARKER", "Piece", "RunLine", "split_input_file", "top_level_modules", "run_lines", "has_split_marker",
           "run_line_pipeline", "is_run_pipeline"]

SPLIT_MARKER = "// -----"  # MLIR's kDefaultSplitMarker, for input and output alike


@dataclass(frozen=True)
class Piece:
    """One piece of a test file that a tool reads on its own: a ``// -----`` chunk (``kind`` "chunk") or a
    top-level module (``kind`` "module", ``name`` its ``@name`` or "" when unnamed). ``index`` counts from 0,
    as a list of the pieces does; ``line`` is the line of the file where the piece starts (a chunk after a
    marker: the marker's line, as MLIR counts it); ``text`` is what is parsed:
    a chunk as MLIR cuts it; a module with the file's text before the first module in front of it (the RUN
    line, attribute aliases), ``prefix_lines`` lines of it."""

    kind: str
    index: int
    line: int
    text: str
    name: str = ""
    prefix_lines: int = 0

    @property
    def label(self) -> str:
        """``chunk [1] at line 13`` or ``module [1] @t2 at line 16``: what messages and titles call it."""
        name = f" {self.name}" if self.name else ""
        return f"{self.kind} [{self.index}]{name} at line {self.line}"

    def file_line(self, line: int) -> int:
        """The file's line of the piece's ``line`` (1-based, as the parser counts the piece's text)."""
        if self.kind == "chunk":
            return self.line + line - 1
        if line <= self.prefix_lines:
            return line
        return self.line + line - self.prefix_lines - 1


def has_split_marker(text: str) -> bool:
    """Whether ``text`` holds a ``// -----`` marker that ``split_input_file`` would cut at."""
    return len(split_input_file(text)) > 1


def split_input_file(text: str) -> list[Piece]:
    """The chunks ``--split-input-file`` reads, in order (one, the whole text, when there is no marker)."""
    starts, at = [0], 0
    while (at := text.find(SPLIT_MARKER, at)) >= 0:
        end = at + len(SPLIT_MARKER)
        if end < len(text):  # MLIR wants a character after the marker; at the very end it is no split
            starts.append(end)
        at = end
    out = []
    for k, start in enumerate(starts):
        stop = starts[k + 1] - len(SPLIT_MARKER) if k + 1 < len(starts) else len(text)
        out.append(Piece("chunk", k, text.count("\n", 0, start) + 1, text[start:stop]))
    return out


_WORD = re.compile(r"[A-Za-z0-9_$.]")
_MODULE = re.compile(r'module\b(?!\.)|"builtin\.module"')
_NAME = re.compile(r'\s*@("(?:[^"\\]|\\.)*"|[A-Za-z0-9_$.\-]+)')


def _top_level_starts(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each ``module`` op at nesting depth 0: comments and strings skipped."""
    found, depth, i, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl + 1
            continue
        if c == '"':
            if depth == 0 and text.startswith('"builtin.module"', i):
                found.append((i, ""))
            i = skip_string(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and c == "m" and (i == 0 or not _WORD.match(text[i - 1])):
            m = _MODULE.match(text, i)
            if m is not None:
                name = _NAME.match(text, m.end())
                found.append((i, "@" + name.group(1) if name else ""))
                i = m.end()
                continue
        i += 1
    return found


def top_level_modules(text: str) -> list[Piece]:
    """The ``module`` ops at the top of ``text`` (nesting depth 0, comments and strings skipped), each a Piece
    running from its line to the next one's (its trailing comments, CHECK lines among them, with it), the
    text before the first (the RUN line, attribute aliases) in front of each. Empty for fewer than two.
    This only cuts: whether the text holds nothing but modules at its top is the parser's to say
    (``ir.mlir.side_by_side_modules``)."""
    starts = _top_level_starts(text)
    if len(starts) < 2:
        return []
    line_starts = [text.rfind("\n", 0, at) + 1 for at, _ in starts]
    prefix = text[: line_starts[0]]
    pieces = []
    for k, (_, name) in enumerate(starts):
        end = line_starts[k + 1] if k + 1 < len(starts) else len(text)
        pieces.append(Piece("module", k, text.count("\n", 0, line_starts[k]) + 1, prefix + text[line_starts[k]:end],
                            name, prefix.count("\n")))
    return pieces


@dataclass(frozen=True)
class RunLine:
    """One ``// RUN:`` command of a lit file (continuation lines joined): its ``text``, the ``tool`` it
    starts, the pipeline that tool's flags name (``pipeline``, "" for none), whether it splits its input
    (``split``), and the tool flags that change no pass (``ignored``, e.g. ``--allow-unregistered-dialect``)."""

    text: str
    line: int
    tool: str
    pipeline: str
    split: bool
    ignored: tuple[str, ...] = ()


# flags of mlir-opt-like tools that are no pass (their values, if any, joined with "=")
_TOOL_FLAGS = {"allow-unregistered-dialect", "verify-diagnostics", "verify-each", "split-input-file",
               "no-implicit-module", "show-dialects", "debug", "debug-only", "dump-pass-pipeline", "o",
               "output-split-marker", "log-actions-to", "emit-bytecode", "disable-i2p-p2i-opt"}
_RUN = re.compile(r"^\s*//\s*RUN:\s?(.*)$")


def run_lines(text: str) -> list[RunLine]:
    """The RUN lines of ``text`` that start an opt tool (``*-opt``), first first; lines that run something
    else (FileCheck alone, a Python script) are left out."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = _RUN.match(lines[i])
        if m is None:
            i += 1
            continue
        first, command = i + 1, m.group(1).rstrip()
        while command.endswith("\\") and i + 1 < len(lines) and (nxt := _RUN.match(lines[i + 1])) is not None:
            command = command[:-1].rstrip() + " " + nxt.group(1).strip()
            i += 1
        i += 1
        parsed = _opt_command(command, first)
        if parsed is not None:
            out.append(parsed)
    return out


def _opt_command(command: str, line: int) -> RunLine | None:
    head = command.split("|", 1)[0]  # the opt tool's part; FileCheck reads its output
    try:
        words = shlex.split(head)
    except ValueError:  # an unbalanced quote: not a command this reads
        return None
    if not words or not re.search(r"-opt$", words[0].rsplit("/", 1)[-1]):
        return None
    passes, ignored, split, pipeline = [], [], False, ""
    k = 1
    while k < len(words):
        w = words[k]
        k += 1
        if not w.startswith("-") or w == "-":
            continue  # %s, a file
        name, eq, value = w.lstrip("-").partition("=")
        if name == "pass-pipeline":
            if not eq and k < len(words):
                value, k = words[k], k + 1
            pipeline = value
        elif name == "split-input-file":
            split = True
        elif name in _TOOL_FLAGS or name.startswith("mlir-"):
            ignored.append(w)
            if name == "o" and not eq:
                k += 1
        else:
            passes.append(f"{name}{{{value}}}" if eq and value else name)
    if not pipeline and passes:
        pipeline = f"builtin.module({','.join(passes)})"
    elif pipeline and passes:  # both: the tool runs --pass-pipeline's, then appends the flags' passes
        inner = pipeline[len("builtin.module("):-1] if pipeline.startswith("builtin.module(") else pipeline
        pipeline = f"builtin.module({inner},{','.join(passes)})"
    return RunLine(command, line, words[0].rsplit("/", 1)[-1], pipeline, split, tuple(ignored))


_RUN_NAME = re.compile(r"^\s*RUN(?::(\d+))?\s*$")


def is_run_pipeline(pipeline: str) -> bool:
    """Whether ``pipeline`` is "RUN" or "RUN:k": the pipeline of a RUN line of the text."""
    return bool(_RUN_NAME.match(pipeline or ""))


def run_line_pipeline(text: str, pipeline: str) -> tuple[str, bool | None]:
    """``pipeline`` and whether to split the input: for "RUN" (or "RUN:k"), the pass pipeline and the
    ``--split-input-file`` of the text's first (k-th) RUN line that starts an opt tool; for any other
    pipeline, itself and None (the caller's default). ArgumentError when the text has no such RUN line."""
    m = _RUN_NAME.match(pipeline or "")
    if m is None:
        return pipeline, None
    found = run_lines(text)
    k = int(m.group(1) or 1)
    if not found:
        raise ArgumentError("pipeline='RUN' takes the pass pipeline of the text's RUN line, and the text has no "
                            "'// RUN:' line that starts an opt tool (such as enzymexlamlir-opt or mlir-opt); "
                            "give the pipeline itself")
    if not 1 <= k <= len(found):
        raise ArgumentError(f"pipeline={pipeline!r}: the text has {len(found)} RUN line(s) that start an opt tool "
                            f"(at line {', '.join(str(r.line) for r in found)}); say RUN:1 to RUN:{len(found)}")
    run = found[k - 1]
    return run.pipeline, run.split
