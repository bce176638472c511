"""The one lexer for program text: strings, brackets, locations; pipeline strings; what kind of text it is.

Everything here works on text because the modules we handle may carry dialects (``enzymexla``) that
jaxlib's MLIR context cannot parse; parsing is left to the places that need a real IR object.
"""
from __future__ import annotations

import hashlib
import re

__all__ = [
    "strip_locations",
    "split_pipeline",
    "pass_name",
    "publish_functions",
    "public_functions",
    "text_hash",
    "input_kind",
    "skip_string",
    "skip_balanced",
]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def skip_string(text: str, i: int) -> int:
    """Index just past the string literal that starts at ``text[i] == '"'``."""
    i += 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    return n


def skip_balanced(text: str, i: int) -> int:
    """Index just past the parenthesised group that starts at ``text[i] == '('``."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = skip_string(text, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


_LOC_ALIAS = re.compile(r" loc\((?:#loc\d*|unknown)\)")


def strip_locations(text: str) -> str:
    """Remove every ``loc(...)`` annotation and ``#loc`` alias line from MLIR text.

    Locations are debug information: two stages that differ only in them compute the same thing, and
    users read the program faster without them. String literals are skipped, so an attribute that
    happens to contain ``loc(`` is kept intact.
    """
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        if "loc(" in line:
            line = _LOC_ALIAS.sub("", line)  # the common form, cheaply; the scanner handles the rest
        if "loc(" not in line:
            out.append(line.rstrip())
            continue
        pieces: list[str] = []
        i, start, n = 0, 0, len(line)
        while i < n:
            c = line[i]
            if c == '"':
                i = skip_string(line, i)
                continue
            if c == "l" and line.startswith("loc(", i) and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] in "_.")):
                end = skip_balanced(line, i + 3)
                cut = i
                while cut > start and line[cut - 1] == " ":
                    cut -= 1
                pieces.append(line[start:cut])
                i = start = end
                continue
            i += 1
        pieces.append(line[start:])
        out.append("".join(pieces).rstrip())
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def split_pipeline(pipeline: str) -> list[str]:
    """Split a textual pass pipeline at its top-level commas.

    ``"inline{default-pipeline=canonicalize max-iterations=4},func.func(cse),canonicalize"`` gives
    three passes; commas inside ``{...}`` options or ``(...)`` nested pipelines do not split. An
    anchoring ``builtin.module(...)`` wrapper is unwrapped, as mlir-opt's ``--pass-pipeline`` accepts.
    Raises ValueError with the column of the problem for unbalanced brackets or empty entries.
    """
    text = pipeline.strip()
    m = re.fullmatch(r"builtin\.module\((.*)\)", text, re.S)
    if m:
        text = m.group(1).strip()
    if not text:
        return []
    parts: list[str] = []
    depth = 0
    start = 0
    closers = {"{": "}", "(": ")"}
    stack: list[str] = []
    for i, c in enumerate(text):
        if c in closers:
            stack.append(closers[c])
            depth += 1
        elif c in ")}":
            if not stack or stack.pop() != c:
                raise ValueError(f"unbalanced {c!r} at column {i + 1} of pipeline {pipeline!r}")
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if stack:
        raise ValueError(f"missing {stack[-1]!r} at the end of pipeline {pipeline!r}")
    parts.append(text[start:].strip())
    for k, p in enumerate(parts):
        if not p:
            raise ValueError(f"empty pass (entry {k + 1}) in pipeline {pipeline!r}")
    return parts


def pass_name(entry: str) -> str:
    """The bare name of one pipeline entry: ``"inline{...}"`` -> ``"inline"``, ``"func.func(cse)"`` -> ``"func.func"``."""
    return re.split(r"[{(]", entry, maxsplit=1)[0].strip()


_FUNC_RE = re.compile(r"^(\s*func\.func\s+)(public\s+|private\s+|nested\s+)?@([\w$.\-]+)", re.M)


def public_functions(text: str) -> set[str]:
    """Names of the functions that are public (no visibility keyword means public in MLIR)."""
    return {m.group(3) for m in _FUNC_RE.finditer(text) if (m.group(2) or "public").strip() == "public"}


def publish_functions(text: str, names: set[str]) -> str:
    """Make the named functions public again.

    Enzyme-JaX's pipeline runner marks the entry function private while it works; the entry must be
    public for XLA and for comparing stages, so we restore the visibility the input had.
    """
    if not names:
        return text

    def fix(m: re.Match) -> str:
        if m.group(3) in names and (m.group(2) or "").strip() == "private":
            return f"{m.group(1)}public @{m.group(3)}"
        return m.group(0)

    return _FUNC_RE.sub(fix, text)


# Lines that carry no program: MLIR comments, and Python comments or a shebang (a hash then a space,
# a bang or nothing; MLIR's ``#name = ...`` attribute aliases are program).
_BLANK_OR_COMMENT = re.compile(r"\s*(?://.*|#(?:[ \t!].*)?)?")
_PYTHON_HEAD = re.compile(r"(?:async\s+def|def|class)\s+\w|import\s+\w|from\s+[\w.]+\s+import\b|@[\w.]+(?:\(.*\))?$|lambda\b")
_MLIR_HEAD = re.compile(r"module\b|\"|[#!][\w$.-]+\s*=|%[\w$.-]+(?::\d+)?\s*=|[A-Za-z_][\w$]*\.[\w$.-]+")


def input_kind(text: str) -> str:
    """What kind of program text this is, from its first line that is not a comment.

    ``"empty"`` (nothing or only whitespace and comments), ``"hlo"`` (XLA's HLO text: ``HloModule ...``,
    or an ``ENTRY`` computation pasted without its header), ``"jaxpr"`` (``{ lambda ...``),
    ``"python"`` (a ``def``, ``import``, decorator or ``lambda``), ``"mlir"`` (a ``module``, an op
    name such as ``func.func``, a generic ``"op"`` or an attribute/type alias), else ``"unknown"``.
    A guess from the text's head, for telling users what they passed; whether MLIR text is valid is
    the parser's call.
    """
    head = next((line.strip() for line in text.splitlines() if not _BLANK_OR_COMMENT.fullmatch(line)), "")
    if not head:
        return "empty"
    if head.startswith("HloModule") or re.search(r"^ENTRY\s+%?[\w.-]+", text, re.M):
        return "hlo"
    if re.match(r"\{\s*lambda\b", head):
        return "jaxpr"
    if _PYTHON_HEAD.match(head):
        return "python"
    if _MLIR_HEAD.match(head):
        return "mlir"
    return "unknown"
