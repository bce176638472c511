"""MLIR locations read from their text: ``read_location`` parses any of their forms (a name, a file's place,
``callsite(callee at caller)``, ``fused[...]``, an alias), ``fast_name_stack`` the name stack of JAX's form
without a parse. ``locations.py`` reads whole modules with them (and re-exports both)."""
from __future__ import annotations

import re
from collections.abc import Sequence

from .origins import Frame, Origin, distinct_origins
from .text import skip_string, unescaped

__all__ = ["read_location", "fast_name_stack", "LocationReader", "Pair", "at_call", "callsite_parts"]

# -- MLIR locations ----------------------------------------------------------------------------------------
# One origin as the reader carries it: (name stack, frames innermost first).
Pair = tuple[str, tuple[Frame, ...]]

_MAX_ALIAS_DEPTH = 200  # alias chains are as deep as Python's stack was; a longer one is not JAX's


_SPACE = re.compile(r"[ \t\n]*")


class LocationReader:
    """A recursive-descent reader of one location's text (inside ``loc(...)``), aliases resolved."""

    def __init__(self, text: str, aliases: dict[str, str], depth: int = 0, memo: dict | None = None):
        self.s, self.i, self.aliases, self.depth = text, 0, aliases, depth
        self.memo = {} if memo is None else memo  # alias -> its origins, read once per module

    def _space(self) -> None:
        if self.s[self.i:self.i + 1] in (" ", "\t", "\n"):
            self.i = _SPACE.match(self.s, self.i).end()

    def _peek(self, word: str) -> bool:
        self._space()
        return self.s.startswith(word, self.i)

    def _take(self, word: str) -> bool:
        if self._peek(word):
            self.i += len(word)
            return True
        return False

    def _string(self) -> str:
        end = skip_string(self.s, self.i)
        raw = self.s[self.i + 1:end - 1]
        self.i = end
        return unescaped(raw)

    def _int(self) -> int:
        self._space()  # "to 46:99": a range that ends on another line
        m = _DIGITS.match(self.s, self.i)
        if not m:
            return 0
        self.i = m.end()
        return int(m.group())

    def alias(self, alias: str) -> list[Pair]:
        """The origins of alias ``alias`` (``#loc12``), read once per module."""
        return _alias_origins(alias, self.aliases, self.depth, self.memo)

    def callsite(self) -> tuple[list[Pair], list[Pair]]:
        """The callee's and the caller's origins of the ``callsite(callee at caller)`` at the reader's position
        (after the word ``callsite``)."""
        self._take("(")
        callee = self.origins()
        self._take("at")
        caller = self.origins()
        self._take(")")
        return callee, caller

    def origins(self) -> list[Pair]:
        """The (name stack, frames innermost first) pairs of the location at the reader's position."""
        self._space()
        if self.i >= len(self.s):
            return []
        if self.s[self.i] == "#":  # an alias
            m = _ALIAS_NAME.match(self.s, self.i)
            self.i = m.end()
            return self.alias(m.group())
        if self._take("unknown"):
            return []
        if self._take("callsite"):
            return at_call(*self.callsite())
        if self._take("fused"):
            if self._peek("<"):  # fused<metadata>[...]
                depth = 0
                while self.i < len(self.s):
                    c = self.s[self.i]
                    self.i += 1
                    depth += c == "<"
                    depth -= c == ">"
                    if depth == 0:
                        break
            self._take("[")
            out: list[Pair] = []
            while self.i < len(self.s) and not self._peek("]"):
                out += self.origins()
                if not self._take(","):
                    break
            self._take("]")
            return out
        if self._peek('"'):
            self._space()
            text = self._string()
            if self._peek(":"):  # "file":line:col [to [line:]col]
                self._take(":")
                line = self._int()
                col = self._int() if self._take(":") else 0
                if self._take("to"):
                    self._int()
                    if self._take(":"):
                        self._int()
                return [("", (Frame(text, line, col),))]
            if self._take("("):  # "name"(child)
                inner = self.origins()
                self._take(")")
                return _named(text, inner)
            return [(text, ())]
        self.i = len(self.s)  # something else (an opaque location): nothing to read
        return []


_ALIAS_NAME = re.compile(r"#[\w$.-]*")
_CALLSITE_OF_ALIASES = re.compile(r"callsite\((#[\w$.-]+) at (#[\w$.-]+)\)\Z")
_NAMED_ALIAS = re.compile(r'"((?:[^"\\]|\\.)*)"\((#[\w$.-]+)\)\Z')
_FILE_PLACE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?: to (?:\d+:)?\d+)?\Z')


def callsite_parts(body: str, aliases: dict[str, str], memo: dict) -> tuple[list[Pair], list[Pair]]:
    """The callee's and the caller's origins of ``body``, a ``callsite(callee at caller)`` location's inside."""
    link = _link(body, aliases, 0, memo)
    return link if link is not None else LocationReader(body[len("callsite"):], aliases, memo=memo).callsite()


def _link(body: str, aliases: dict[str, str], depth: int, memo: dict) -> tuple[list[Pair], list[Pair]] | None:
    """The callee's and the caller's origins of JAX's link in a chain of frames, ``callsite(#a at #b)``, read
    without a parser (each alias once, kept in ``memo``); None for any other text."""
    m = _CALLSITE_OF_ALIASES.match(body)
    if m is None:
        return None
    return _alias_origins(m.group(1), aliases, depth, memo), _alias_origins(m.group(2), aliases, depth, memo)


def _alias_origins(alias: str, aliases: dict[str, str], depth: int, memo: dict) -> list[Pair]:
    """The origins of alias ``alias``, kept in ``memo``. JAX's three forms in a chain of frames (a link, a
    function's frame, a file's place) are read without a parser: a module has thousands of them."""
    got = memo.get(alias)
    if got is not None:
        return got
    memo[alias] = []  # a cycle of aliases (not valid MLIR) reads as nothing
    body = aliases.get(alias)
    if body is not None and depth <= _MAX_ALIAS_DEPTH:
        if (link := _link(body, aliases, depth + 1, memo)) is not None:
            got = at_call(*link)
        elif m := _NAMED_ALIAS.match(body):
            got = _named(unescaped(m.group(1)), _alias_origins(m.group(2), aliases, depth + 1, memo))
        elif m := _FILE_PLACE.match(body):
            got = [("", (Frame(unescaped(m.group(1)), int(m.group(2)), int(m.group(3))),))]
        else:
            got = LocationReader(body, aliases, depth + 1, memo).origins()
        memo[alias] = got
    return memo[alias]


def _named(text: str, inner: list[Pair]) -> list[Pair]:
    """The origins of ``"text"(inner)``: a function's frame, or a name stack around its location."""
    if (len(inner) == 1 and not inner[0][0] and len(inner[0][1]) == 1 and not inner[0][1][0].function
            and not _is_name_stack(text)):
        f = inner[0][1][0]  # "layer"("/x.py":3:17): the frame of function layer
        return [("", (Frame(f.file, f.line, f.column, text),))]
    return [(n or text, fs) for n, fs in inner] or [(text, ())]

_DIGITS = re.compile(r"\d+")


def _join(outer: str, inner: str) -> str:
    return f"{outer}/{inner}" if outer and inner else outer or inner


def at_call(callee: Sequence[Pair], caller: Sequence[Pair]) -> list[Pair]:
    """The origins of ``callsite(callee at caller)``. In JAX's chain of Python frames the callee's frames
    continue into the caller's. Where MLIR's inliner put an op of a private function at its call (the callee
    the op's own location, the caller the call's), JAX had begun the function's name stack afresh: it
    continues the call's (``jit(f)/jit(cholesky)`` + ``transpose``), as it would had JAX inlined the function."""
    name, outer = caller[0] if caller else ("", ())
    return [(_join(name, n), fs + outer) for n, fs in callee] or list(caller[:1])


def _is_name_stack(text: str) -> bool:
    """Whether a name location's name is JAX's name stack ("jit(f)/jvp()/dot_general"), not a function's."""
    return "/" in text or "(" in text


def read_location(text: str, aliases: dict[str, str] | None = None, memo: dict | None = None) -> tuple[Origin, ...]:
    """The origins of one MLIR location, written ``loc(...)`` or as its inside; ``aliases`` maps
    ``#locN`` to the inside of its definition. A name location around a call site (JAX's form) gives one
    origin: the name stack and the frames; a fused location one origin per part; ``unknown`` none; an op
    that MLIR's inliner moved out of a private function (``callsite(its own at the call's)``) the call's
    frames and the call's name stack joined with its own."""
    text = text.strip()
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    return distinct_origins(LocationReader(text, aliases or {}, memo=memo).origins())


# JAX's own form of an op's location: the name stack around the call-site chain of Python frames. Read by
# its first string alone: the chain behind it is hundreds of characters that the name stack does not need.
_JAX_NAME = re.compile(r'loc\("((?:[^"\\]|\\.)*)"\(callsite\(')
# A file location and nothing else (what the parser gives ops of text without locations): no name stack.
_FILE_ONLY = re.compile(r'loc\("(?:[^"\\]|\\.)*":\d+:\d+(?: to (?:\d+:)?\d+)?\)\Z')


def fast_name_stack(text: str) -> str | None:
    """The name stack of a ``loc(...)`` as jaxlib prints an op's location, for the two forms that need
    no parse: JAX's ``loc("jit(f)/add"(callsite(...)))`` gives its name stack (escapes undone), a bare
    file location ``loc("x.py":3:17)`` gives "". None for any other form (a fused location that passes
    make): ``read_location`` reads those. A graph asks this of every op, so the long call-site chain
    behind JAX's name is never read."""
    m = _JAX_NAME.match(text)
    if m:
        return unescaped(m.group(1))
    return "" if _FILE_ONLY.match(text) else None
