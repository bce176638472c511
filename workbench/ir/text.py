"""The one lexer for program text: strings, brackets, locations; pipeline strings; what kind of text it is.

Everything here works on text because the modules we handle may carry dialects (``enzymexla``) that
jaxlib's MLIR context cannot parse; parsing is left to the places that need a real IR object.
"""
from __future__ import annotations

import hashlib
import re

__all__ = [
    "strip_locations",
    "relocated",
    "split_pipeline",
    "pass_name",
    "pass_names",
    "publish_functions",
    "unmarked_functions",
    "public_functions",
    "text_hash",
    "input_kind",
    "skip_string",
    "unescaped",
    "skip_balanced",
    "skip_brackets",
    "skip_angles",
    "mask_strings",
    "split_strings",
    "word_at",
    "host_callback_count",
    "custom_call_targets",
    "unranked_element_type",
    "comparison_direction",
    "function_references",
    "leading_td_patterns",
    "short_pass",
]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_QUOTE_OR_ESCAPE = re.compile(r'["\\]')


def skip_string(text: str, i: int) -> int:
    """Index just past the string literal that starts at ``text[i] == '"'``."""
    i += 1
    while (m := _QUOTE_OR_ESCAPE.search(text, i)) is not None:
        if m.group() == '"':
            return m.end()
        i = m.start() + 2  # a backslash escapes the next character, whatever it is
    return len(text)


def unescaped(raw: str) -> str:
    """The inside of a string literal (as MLIR and XLA print one) with its escaped quotes and backslashes undone."""
    return raw.replace('\\"', '"').replace("\\\\", "\\")


def skip_balanced(text: str, i: int) -> int:
    """Index just past the parenthesised group that starts at ``text[i] == '('``."""
    return _skip_group(text, i, "(", ")")


def skip_brackets(text: str, i: int) -> int:
    """Index just past the bracketed group that starts at ``text[i]``, one of ``([{``.

    The three kinds nest in one another and any closer ends the innermost group, which is enough for
    printed IR (XLA's shapes ``f32[8]{1,0:T(8,128)}``, attribute dictionaries); strings are skipped.
    """
    return _skip_group(text, i, "([{", ")]}")


def skip_angles(text: str, i: int) -> int:
    """Index just past the ``>`` that closes the ``<`` at ``text[i]``, as MLIR attributes nest them
    (``#sdy.sharding_per_value<[<@mesh, ...>]>``): ``->`` does not close one; strings are skipped."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = skip_string(text, i)
            continue
        if c == "<":
            depth += 1
        elif c == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


_GROUP_STOPS = {"(": re.compile(r'["()]'), "([{": re.compile(r'["()\[\]{}]')}


def _skip_group(text: str, i: int, opens: str, closes: str) -> int:
    depth = 0
    stops = _GROUP_STOPS[opens]
    while (m := stops.search(text, i)) is not None:
        c, at = m.group(), m.start()
        if c == '"':
            i = skip_string(text, at)
            continue
        if c in opens:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at + 1
        i = at + 1
    return len(text)


def split_strings(text: str) -> list[str]:
    """``text`` cut at its string literals: code, string, code, ..., code (odd indices are strings,
    quotes included; a string left open runs to the end)."""
    pieces: list[str] = []
    i = 0
    while (q := text.find('"', i)) >= 0:
        end = skip_string(text, q)
        pieces += [text[i:q], text[q:end]]
        i = end
    pieces.append(text[i:])
    return pieces


def mask_strings(text: str) -> str:
    """``text`` with the inside of every string literal blanked out, its quotes and length kept.

    Brackets, names and keywords in the result are code, never the contents of a string, and an
    index into it is an index into ``text``.
    """
    if '"' not in text:
        return text
    pieces = split_strings(text)
    for k in range(1, len(pieces), 2):
        width = len(pieces[k])
        pieces[k] = '"' + " " * (width - 2) + '"' if width > 1 else '"'
    return "".join(pieces)


_BARE_WORD = re.compile(r"[\w$.\-]+")


def word_at(text: str, i: int) -> str | None:
    """The value written at ``text[i]``: a string literal's contents (quotes off, escapes as
    written) or a bare word of letters, digits and ``_$.-``; None if neither starts there."""
    if text.startswith('"', i):
        return text[i + 1:skip_string(text, i) - 1]
    m = _BARE_WORD.match(text, i)
    return m.group() if m else None


_LOC_ALIAS = re.compile(r" loc\((?:#loc\d*|unknown)\)")
_STRING_OR_LOC = re.compile(r'"|loc\(')


# Characters that make ``str.splitlines`` break, or ``str.rstrip`` strip, where ``split("\n")`` and
# ``rstrip(" \t")`` would not: text without any of them takes strip_locations' whole-text path.
_ODD_SPACE = re.compile("[\r\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _odd_spaces(text: str) -> bool:
    if text.isascii():  # a flag of the string: then a few memchr scans beat the regex's
        return any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x1f")
    return _ODD_SPACE.search(text) is not None


def strip_locations(text: str) -> str:
    """Remove every ``loc(...)`` annotation and ``#loc`` alias line from MLIR text.

    Locations are debug information: two stages that differ only in them compute the same thing, and
    users read the program faster without them. String literals are skipped, so an attribute that
    happens to contain ``loc(`` is kept intact. Lines lose their trailing whitespace.
    """
    if _odd_spaces(text):  # rare line breaks or spaces: line by line, as splitlines cuts them
        out = [_strip_line(line) for line in text.splitlines() if not line.startswith("#loc")]
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")
    # The same, a whole text at a time: the alias form is cut by one regex pass, and only the lines
    # still holding "loc(" (inline locations, or "loc(" in a string) go through the scanner.
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    body = "\n".join([line for line in lines if not line.startswith("#loc")])
    if "loc(" in body:
        body = _LOC_ALIAS.sub("", body)
    if " \n" in body or "\t\n" in body or body.endswith((" ", "\t")):
        body = "\n".join([line.rstrip(" \t") for line in body.split("\n")])
    if "loc(" in body:
        body = "\n".join([_scan_line(line) if "loc(" in line else line for line in body.split("\n")])
    return body + ("\n" if text.endswith("\n") else "")


def relocated(edited: str, located: str) -> str:
    """``edited`` (a module text without locations, such as a stage's text changed by hand) with the locations
    of ``located`` (the text it was edited from, with its locations) put back: each line of ``edited`` that is
    a line of ``located`` without its locations, as written, takes that line (its ``loc(...)``, in order,
    once each), and ``located``'s alias definitions (``#loc12 = loc(...)``) stand where they stood: before the
    module those that were before it, after it the others. A line written
    anew keeps none: its op reads as unknown. One pass over each text."""
    plain_lines = strip_locations(located).split("\n")
    located_lines = [ln for ln in located.split("\n") if not ln.startswith("#loc")]
    if len(plain_lines) != len(located_lines):  # a form strip_locations does not keep line for line
        return edited
    waiting: dict[str, list[int]] = {}
    for k in range(len(plain_lines) - 1, -1, -1):
        if plain_lines[k].strip() and plain_lines[k] != located_lines[k]:
            waiting.setdefault(plain_lines[k].rstrip(), []).append(k)
    out = []
    for line in edited.split("\n"):
        queue = waiting.get(line.rstrip())
        out.append(located_lines[queue.pop()] if queue else line)
    # the alias definitions where ``located`` has them: those before the module stay before it (MLIR's parser
    # resolves a block argument's location alias only once defined), the others follow it
    lines = located.split("\n")
    head = next((k for k, ln in enumerate(lines) if not ln.startswith("#loc")), len(lines))
    before = lines[:head]
    after = [ln for ln in lines[head:] if ln.startswith("#loc")]
    text = "\n".join(out)
    if after:
        text = text.rstrip("\n") + "\n" + "\n".join(after) + "\n"
    return "\n".join(before) + "\n" + text if before else text


def _strip_line(line: str) -> str:
    """One line of ``strip_locations``: its ``loc(...)`` groups (and the spaces before them) cut."""
    if "loc(" in line:
        line = _LOC_ALIAS.sub("", line)  # the common form, cheaply; the scanner handles the rest
    return _scan_line(line) if "loc(" in line else line.rstrip()


def _scan_line(line: str) -> str:
    """``line`` with each ``loc(...)`` group outside string literals cut, and its trailing spaces."""
    pieces: list[str] = []
    i = start = 0
    while (m := _STRING_OR_LOC.search(line, i)) is not None:
        i = m.start()
        if m.group() == '"':
            i = skip_string(line, i)
            continue
        if i == 0 or not (line[i - 1].isalnum() or line[i - 1] in "_."):
            end = skip_balanced(line, i + 3)
            cut = i
            while cut > start and line[cut - 1] == " ":
                cut -= 1
            pieces.append(line[start:cut])
            i = start = end
            continue
        i += 1
    pieces.append(line[start:])
    return "".join(pieces).rstrip()


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


def pass_names(pipeline: str) -> list[str]:
    """The passes of ``pipeline``, nested ones included, without anchors or options:
    ``"func.func(cse,canonicalize{max-iterations=2}),sdy-close-shardings"`` -> ``["cse", "canonicalize",
    "sdy-close-shardings"]``. Raises ValueError as ``split_pipeline`` does."""
    names = []
    for entry in split_pipeline(pipeline):
        name = pass_name(entry)
        rest = entry[len(name):].lstrip()
        if rest.startswith("("):  # an anchor (func.func, builtin.module): its nested pipeline's passes
            inner = rest[1:rest.rindex(")")]
            names += pass_names(inner) if inner.strip() else []
        else:
            names.append(name)
    return names


_TD_PATTERNS = re.compile(r"enzyme-hlo-generate-td\{patterns=([^}]*)\}")


def leading_td_patterns(pipeline: str) -> list[str] | None:
    """The pattern specs of a pipeline that opens with Enzyme-JaX's ``enzyme-hlo-generate-td{patterns=a;b<16>}``
    (how a pattern list is applied: ``pipeline.catalog.patterns_pass``), in order; None when it opens with
    anything else. Specs are split at ``;`` as written, options such as ``<16>`` kept."""
    m = _TD_PATTERNS.match(pipeline)
    return m.group(1).split(";") if m else None


def short_pass(p: str) -> str:
    """A pass string short enough for a table cell (a pattern list is shown by its length)."""
    patterns = leading_td_patterns(p)
    if patterns is not None:
        return f"enzyme-hlo-generate-td{{patterns=<{len(patterns)} patterns>}},transform-interpreter,..."
    return p if len(p) <= 60 else p[:57] + "..."


# The pieces of MLIR's syntax that more than one reader matches, written once.
SSA_VALUE = r"%[\w$.\-]+"
"""An SSA value's name (``%0``, ``%arg1``, ``%cst_2``), without a result number (``#1``/``:2``)."""
VISIBILITY = r"(?:public|private|nested)"
"""A symbol's visibility keyword."""
OP_NAME = r"[A-Za-z_][\w$]*(?:\.[\w$]+)*"
"""An op's name: ``dialect.op`` (``stablehlo.add``) or a bare one (``return``)."""

# ``func.func [visibility] @name`` where only whitespace precedes it on its line. Found by its
# literal head (a fast search) rather than from every line start, then checked for that whitespace.
_FUNC_HEAD = re.compile(rf"func\.func\s+({VISIBILITY}\s+)?@([\w$.\-]+)")
_SPACES = re.compile(r"\s*")


def _function_heads(text: str):
    """The ``_FUNC_HEAD`` matches that open a line (after any whitespace): one per function."""
    for m in _FUNC_HEAD.finditer(text):
        if _SPACES.fullmatch(text, text.rfind("\n", 0, m.start()) + 1, m.start()):
            yield m


def function_references(text: str) -> dict[str, int]:
    """How often each function's symbol (``func.func @name``) is mentioned outside its definition: its
    calls, a composite's ``decomposition = @name``, any other symbol use. String literals are masked
    first, so a name quoted in an attribute or a location is not a use."""
    code = mask_strings(text)
    out = {}
    for m in _FUNC_HEAD.finditer(code):
        name = m.group(2)
        out[name] = len(re.findall(rf"@{re.escape(name)}(?![\w$.-])", code)) - 1
    return out


def public_functions(text: str) -> set[str]:
    """Names of the functions that are public (no visibility keyword means public in MLIR)."""
    return {m.group(2) for m in _function_heads(text) if (m.group(1) or "public").strip() == "public"}


def publish_functions(text: str, names: set[str], unmarked: set[str] = frozenset()) -> str:
    """Make the named functions public again (``text`` itself when none of them is private).

    Enzyme-JaX's pipeline runner marks the entry function private while it works; the entry must be
    public for XLA and for comparing stages, so we restore the visibility the input had: ``public`` where
    the input said so (JAX's modules do), no keyword for the names in ``unmarked`` (an input that said none,
    as a hand-written test file: MLIR prints it so, and FileCheck lines expect ``func.func @main(``).
    """
    if not names:
        return text
    pieces: list[str] = []
    at = 0
    for m in _function_heads(text):
        if m.group(2) in names and (m.group(1) or "").strip() == "private":
            pieces += [text[at:m.start(1)], "" if m.group(2) in unmarked else "public "]
            at = m.end(1)
    return "".join(pieces) + text[at:] if pieces else text


def unmarked_functions(text: str) -> set[str]:
    """Names of the functions written with no visibility keyword (public, as MLIR reads them)."""
    return {m.group(2) for m in _function_heads(text) if not (m.group(1) or "").strip()}


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
    # The head is nearly always in the first few lines: look there before splitting the whole text
    # (a line the cut may have shortened is not looked at).
    lines = text[:4096].splitlines()[: None if len(text) <= 4096 else -1]
    head = next((line.strip() for line in lines if not _BLANK_OR_COMMENT.fullmatch(line)), "")
    if not head and len(text) > 4096:
        head = next((line.strip() for line in text.splitlines() if not _BLANK_OR_COMMENT.fullmatch(line)), "")
    if not head:
        return "empty"
    if head.startswith("HloModule") or ("ENTRY" in text and re.search(r"^ENTRY\s+%?[\w.-]+", text, re.M)):
        return "hlo"
    if re.match(r"\{\s*lambda\b", head):
        return "jaxpr"
    if _PYTHON_HEAD.match(head):
        return "python"
    if _MLIR_HEAD.match(head):
        return "mlir"
    return "unknown"


# The custom calls by which JAX calls back into Python (jax.debug.print, pure_callback, io_callback):
# the CPU and GPU targets, FFI and legacy. Their Python functions live in the process that traced
# the program, never in its text.
_HOST_CALLBACK = re.compile(r"custom_call\s*@(?:xla_ffi_python_(?:cpu|gpu)_callback|xla_python_(?:cpu|gpu)_callback)\b")


def host_callback_count(text: str) -> int:
    """How many host callbacks ``text`` holds: a module with any cannot run from its text alone (it would
    call into Python functions that are not there). On the CPU and GPU a callback is a custom call; on a
    TPU it is a chain of send and receive ops with the host, each receive naming its rendezvous: each of
    those counts (a callback with several results counts as many)."""
    count = len(_HOST_CALLBACK.findall(text)) if "_callback" in text else 0
    if "_xla_host_transfer_rendezvous" in text:
        count += sum(1 for line in text.splitlines() if "_xla_host_transfer_rendezvous" in line and "recv" in line)
    return count


_CUSTOM_CALL = re.compile(r"custom_call\s*@([\w.$-]+)|custom_call_target=\"([^\"]+)\"")


def custom_call_targets(text: str) -> list[str]:
    """The targets of the custom calls in ``text`` (MLIR's ``custom_call @target``, HLO's
    ``custom_call_target="target"``), each once, in order: routines one backend has and another may not."""
    if "custom_call" not in text:
        return []
    return list(dict.fromkeys(a or b for a, b in _CUSTOM_CALL.findall(text)))


_UNRANKED_TENSOR = re.compile(r"tensor<\*x(.+)>")


def unranked_element_type(type_text: str) -> str | None:
    """The element type of an unranked tensor type, ``tensor<*xf32>`` -> ``f32``; None for any other type."""
    m = _UNRANKED_TENSOR.fullmatch(type_text)
    return m.group(1) if m else None


_LAST_WORD = re.compile(r"(\w+)>?\s*$")


def comparison_direction(attr_text: str) -> str | None:
    """The direction of a ``stablehlo.compare`` as its attribute prints it,
    ``#stablehlo<comparison_direction LT>`` -> ``LT``: the last word; None when there is none."""
    m = _LAST_WORD.search(attr_text)
    return m.group(1) if m else None
