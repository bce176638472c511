"""Where each op of a program text came from: MLIR locations and XLA's per-instruction metadata, read as text.

MLIR (StableHLO as JAX lowers it, every Enzyme-JaX / MLIR stage after it): each op line ends in
``loc(...)``, usually an alias ``loc(#loc12)`` whose definition (``#loc12 = loc(...)``) follows the
module. JAX writes a name location (the name stack, ``"jit(f)/jvp()/dot_general"``) around a call-site
chain of the Python frames, innermost first: ``callsite("layer"("/x.py":3:17 to :22) at callsite(...))``.
Passes that merge ops merge their locations (``fused[...]``). ``read_location`` parses any of these
forms; ``mlir_op_locations`` gives every op of a module text with its result names and its origins.

XLA HLO: each instruction's ``metadata={op_name="..." source_file=... source_line=...}``, or in newer
dumps ``stack_frame_id=N`` into the module's ``FileNames`` / ``FunctionNames`` / ``FileLocations`` /
``StackFrames`` tables. ``hlo_instruction_locations`` gives every instruction with its origin, and each
instruction of a fused computation with the fusion instruction that holds it.

An **origin** is one source position: the innermost Python frame (file, line, column, function) and the
name stack. Two ops in two stages with an origin in common came from the same JAX equation
(``Origin.key``: the name stack without XLA's ``jit(...)/call_exported/`` prefix, file, line, column).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .text import skip_string

__all__ = [
    "Frame",
    "OpLocation",
    "Origin",
    "hlo_instruction_locations",
    "mlir_op_locations",
    "read_location",
    "user_frame",
]


@dataclass(frozen=True)
class Frame:
    """One Python frame of a location: file, line, column (1-based, 0 when unknown) and function."""

    file: str
    line: int
    column: int = 0
    function: str = ""


@dataclass(frozen=True)
class Origin:
    """One source position of an op: the name stack and the Python frames, innermost first."""

    name: str
    frames: tuple[Frame, ...]

    @property
    def frame(self) -> Frame | None:
        """The innermost frame (the line of the user's code that made the op), if any."""
        return self.frames[0] if self.frames else None

    @property
    def key(self) -> tuple:
        """What two stages' ops share when they came from the same JAX equation."""
        f = self.frame
        return (_short_name(self.name),) + ((f.file, f.line, f.column) if f else ("", 0, 0))


@dataclass(frozen=True)
class OpLocation:
    """One op of a program text: ``op`` its name (``stablehlo.add``; an HLO opcode), ``result`` its first
    result (``%3``; an HLO instruction's name), ``func`` the function or computation it sits in, ``line``
    its line (0-based) in the text without locations (``strip_locations``: the stage's text), ``origins`` where it came from (empty: no location), and for an HLO
    instruction inside a fused computation, ``fusion``: the fusion instruction that holds it."""

    op: str
    result: str
    func: str
    line: int
    origins: tuple[Origin, ...]
    fusion: str = ""


_XLA_PREFIX = re.compile(r"^(?:jit\([^/]*\)/)?call_exported/")


def _short_name(name: str) -> str:
    """The name stack as JAX wrote it in StableHLO: XLA's ``jit(call)/call_exported/`` prefix removed."""
    return _XLA_PREFIX.sub("", name)


# -- MLIR locations ----------------------------------------------------------------------------------------
class _Reader:
    """A recursive-descent reader of one location's text (inside ``loc(...)``), aliases resolved."""

    def __init__(self, text: str, aliases: dict[str, str], depth: int = 0, memo: dict | None = None):
        self.s, self.i, self.aliases, self.depth = text, 0, aliases, depth
        self.memo = {} if memo is None else memo  # alias -> its origins, read once per module

    def _space(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\n":
            self.i += 1

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
        return raw.replace('\\"', '"').replace("\\\\", "\\")

    def _int(self) -> int:
        m = re.compile(r"\d+").match(self.s, self.i)
        if not m:
            return 0
        self.i = m.end()
        return int(m.group())

    def origins(self) -> list[tuple[str, list[Frame]]]:
        """The (name stack, frames innermost first) pairs of the location at the reader's position."""
        self._space()
        if self.i >= len(self.s):
            return []
        if self.s[self.i] == "#":  # an alias
            m = re.compile(r"#[\w$.-]*").match(self.s, self.i)
            self.i = m.end()
            alias = m.group()
            if alias not in self.memo:
                body = self.aliases.get(alias)
                self.memo[alias] = [] if body is None or self.depth > 200 else \
                    _Reader(body, self.aliases, self.depth + 1, self.memo).origins()
            return [(n, list(fs)) for n, fs in self.memo[alias]]
        if self._take("unknown"):
            return []
        if self._take("callsite"):
            self._take("(")
            callee = self.origins()
            self._take("at")
            caller = self.origins()
            self._take(")")
            outer = caller[0][1] if caller else []
            return [(n, fs + outer) for n, fs in callee] or [(n, fs) for n, fs in caller[:1]]
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
            out: list[tuple[str, list[Frame]]] = []
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
                return [("", [Frame(text, line, col)])]
            if self._take("("):  # "name"(child)
                inner = self.origins()
                self._take(")")
                if (len(inner) == 1 and not inner[0][0] and len(inner[0][1]) == 1 and not inner[0][1][0].function
                        and not _is_name_stack(text)):
                    f = inner[0][1][0]  # "layer"("/x.py":3:17): the frame of function layer
                    return [("", [Frame(f.file, f.line, f.column, text)])]
                return [(n or text, fs) for n, fs in inner] or [(text, [])]
            return [(text, [])]
        self.i = len(self.s)  # something else (an opaque location): nothing to read
        return []


def _is_name_stack(text: str) -> bool:
    """Whether a name location's name is JAX's name stack ("jit(f)/jvp()/dot_general"), not a function's."""
    return "/" in text or "(" in text


def _origins(pairs: list[tuple[str, list[Frame]]]) -> tuple[Origin, ...]:
    out = []
    for name, frames in pairs:
        o = Origin(name, tuple(frames))
        if (o.name or o.frames) and o not in out:
            out.append(o)
    return tuple(out)


def read_location(text: str, aliases: dict[str, str] | None = None, memo: dict | None = None) -> tuple[Origin, ...]:
    """The origins of one MLIR location, written ``loc(...)`` or as its inside; ``aliases`` maps
    ``#locN`` to the inside of its definition. A name location around a call site (JAX's form) gives one
    origin: the name stack and the frames; a fused location one origin per part; ``unknown`` none."""
    text = text.strip()
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    return _origins(_Reader(text, aliases or {}, memo=memo).origins())


_ALIAS = re.compile(r"^(#[\w$.-]+)\s*=\s*loc\((.*)\)\s*$")
_OP_LINE = re.compile(r"^\s*(?:(%[\w$.#:-]+(?::\d+)?(?:\s*,\s*%[\w$.#:-]+(?::\d+)?)*)\s*=\s*)?\"?([A-Za-z_][\w$]*\.[\w$.]+)\"?")
_FUNC = re.compile(r"^\s*func\.func\s+(?:\w+\s+)*@([\w$.-]+|\"[^\"]*\")")


def _trailing_loc(line: str) -> str | None:
    """The ``loc(...)`` that ends an op line, or None."""
    end = line.rstrip()
    if not end.endswith(")"):
        return None
    depth, i = 0, len(end) - 1
    while i >= 0:
        c = end[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return end[i - 3:] if end[max(0, i - 3):i] == "loc" else None
        elif c == '"':  # skip a string backwards
            j = i - 1
            while j >= 0 and not (end[j] == '"' and (j == 0 or end[j - 1] != "\\")):
                j -= 1
            i = j
        i -= 1
    return None


@functools.lru_cache(maxsize=64)  # stages that a pass left unchanged share their parent's text
def mlir_op_locations(text: str) -> tuple[OpLocation, ...]:
    """Every op of an MLIR module text (one per line that starts an op, ``func.func`` and ``return``
    included) with its origins, read from its trailing ``loc(...)`` and the module's alias definitions.
    Text without locations gives ops with no origins."""
    lines = text.splitlines()
    aliases = {}
    for ln in lines:
        m = _ALIAS.match(ln)
        if m:
            aliases[m.group(1)] = m.group(2)
    out: list[OpLocation] = []
    func = ""
    memo: dict = {}
    dropped = 0  # alias lines so far: strip_locations (the stage's text) drops them
    for k, ln in enumerate(lines):
        if ln.startswith("#loc"):
            dropped += 1
            continue
        if not ln.strip() or ln.startswith("#") or ln.lstrip().startswith("//"):
            continue
        fm = _FUNC.match(ln)
        if fm:
            func = fm.group(1).strip('"')
        m = _OP_LINE.match(ln)
        if not m:
            continue
        op = m.group(2)
        if op.startswith(("loc", "tensor")):
            continue
        result = (m.group(1) or "").split(",")[0].strip().split(":")[0]
        loc = _trailing_loc(ln)
        origins = read_location(loc, aliases, memo) if loc else ()
        out.append(OpLocation(op, result, func, k - dropped, origins))
    return tuple(out)


# -- XLA HLO metadata --------------------------------------------------------------------------------------
_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_FIELD = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|[^\s}]+)")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([\w\-]+)\(")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")


def _fields(text: str) -> dict[str, str]:
    return {k: (v[1:-1].replace('\\"', '"') if v.startswith('"') else v) for k, v in _FIELD.findall(text)}


def _metadata(line: str) -> str:
    i = line.find("metadata={")
    if i < 0:
        return ""
    depth, j = 0, i + len("metadata=")
    while j < len(line):
        c = line[j]
        if c == '"':
            j = skip_string(line, j)
            continue
        depth += c == "{"
        depth -= c == "}"
        j += 1
        if depth == 0:
            break
    return line[i + len("metadata={"):j - 1]


class _Frames:
    """A module's stack-frame tables (FileNames, FunctionNames, FileLocations, StackFrames)."""

    def __init__(self, lines: list[str]):
        tables: dict[str, dict[int, str]] = {}
        current = None
        for ln in lines:
            s = ln.strip()
            if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
                current = tables.setdefault(s, {})
                continue
            if current is None:
                continue
            m = _TABLE_ROW.match(s)
            if not m:
                current = None
                continue
            current[int(m.group(1))] = m.group(2)
        self.files = {k: v.strip().strip('"') for k, v in tables.get("FileNames", {}).items()}
        self.functions = {k: v.strip().strip('"') for k, v in tables.get("FunctionNames", {}).items()}
        self.locations = {k: _fields(v) for k, v in tables.get("FileLocations", {}).items()}
        self.frames = {k: _fields(v) for k, v in tables.get("StackFrames", {}).items()}

    def chain(self, frame_id: int) -> tuple[Frame, ...]:
        """The frames from ``frame_id`` outwards (a frame whose parent is itself, or 0, ends the chain)."""
        out: list[Frame] = []
        seen: set[int] = set()
        while frame_id and frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            f = self.frames[frame_id]
            loc = self.locations.get(int(f.get("file_location_id", 0)), {})
            if loc:
                out.append(Frame(self.files.get(int(loc.get("file_name_id", 0)), ""), int(loc.get("line", 0)),
                                 int(loc.get("column", 0)),
                                 self.functions.get(int(loc.get("function_name_id", 0)), "")))
            parent = int(f.get("parent_frame_id", 0))
            frame_id = 0 if parent == frame_id else parent
        return tuple(out)


@functools.lru_cache(maxsize=64)
def hlo_instruction_locations(text: str) -> tuple[OpLocation, ...]:
    """Every instruction of an XLA HLO module text with its origin (its metadata's ``op_name`` and its
    frames: ``source_file``/``source_line``, or ``stack_frame_id`` into the module's tables); ``func`` is its
    computation; an instruction of a fused computation carries the fusion instruction that calls it."""
    lines = text.splitlines()
    frames = _Frames(lines)
    fusion_of: dict[str, str] = {}
    for ln in lines:
        m = _INSTRUCTION.match(ln)
        if m and m.group(3) == "fusion":
            c = _CALLS.search(ln)
            if c:
                fusion_of[c.group(1)] = m.group(1)
    out: list[OpLocation] = []
    comp = ""
    for k, ln in enumerate(lines):
        m = _INSTRUCTION.match(ln)
        if not m:
            cm = _COMPUTATION.match(ln)
            if cm and not ln.lstrip().startswith(("HloModule",)):
                comp = cm.group(1)
            continue
        name, opcode = m.group(1), m.group(3)
        meta = _fields(_metadata(ln))
        origins: tuple[Origin, ...] = ()
        op_name = meta.get("op_name", "")
        chain: tuple[Frame, ...] = ()
        if "stack_frame_id" in meta:
            chain = frames.chain(int(meta["stack_frame_id"]))
        elif "source_file" in meta:
            chain = (Frame(meta["source_file"], int(meta.get("source_line", 0) or 0),
                           int(meta.get("source_column", 0) or 0)),)
        if op_name or chain:
            origins = (Origin(op_name, chain),)
        out.append(OpLocation(opcode, name, comp, k, origins, fusion_of.get(comp, "")))
    return tuple(out)


def user_frame(origin: Origin, skip: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Frame | None:
    """The innermost frame of ``origin``, unless its file is under one of ``skip`` and none of ``keep``
    (folders of tools, e.g. the workbench's own package but its examples): an op made where a tool called
    JAX (a constant at the traced function's boundary) came from no line of the user's, and the frames
    outside the tool's are its caller's."""
    f = origin.frame
    if f is None or f.file in _BUFFERS:
        return None
    if any(f.file.startswith(s) for s in skip) and not any(f.file.startswith(k) for k in keep):
        return None
    return f


# what MLIR's parser names a buffer read from a string or stdin: a location into the pass's own input text
# (a module given without locations gets these from the first pass that parses it), never the user's code
_BUFFERS = ("-", "", "<stdin>", "<unknown>")
