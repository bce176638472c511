"""The one reader of XLA's HLO text: computations, their instructions, and who calls whom; an
instruction's attributes (``sharding={...}``, ``replica_groups=...``) and a shape's arrays.

Reads what XLA prints: the per-pass dumps (``%name = f32[8]{0} add(f32[8]{0} %a, f32[8]{0} %b),
metadata={...}``, computation headers with their signature) and ``as_hlo_text()`` (names without
``%``, operands without shapes, headers without a signature). jaxlib has no parser for HLO *text*
(see DESIGN.md), so this is a reader of lines, not a verifier: a line that is not an instruction is
skipped, and nothing checks that operands are defined.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from .text import mask_strings, skip_brackets, skip_string, word_at

__all__ = [
    "NAME",
    "Array",
    "Instruction",
    "Computation",
    "Call",
    "HloModule",
    "read_hlo",
    "read_header",
    "read_instruction",
    "drop_attribute",
    "strip_debug_info",
    "attribute_value",
    "attribute_text",
    "arrays",
    "array_sizes",
    "tuple_shapes",
    "without_layout",
    "without_names",
    "has_custom_calls",
    "has_opcode",
]

NAME = r"[A-Za-z_][\w.\-]*"
"""The regex of an instruction's or computation's name, without the ``%`` one printer puts before it."""

_HEADER = re.compile(rf"(ENTRY\s+)?%?({NAME})")
_INSTRUCTION = re.compile(rf"\s*(ROOT\s+)?%?({NAME})\s*=\s*")
_SPACE = re.compile(r"\s")
_OPCODE = re.compile(r"([\w\-]+)\(")
_REF = re.compile(rf"%({NAME})")
# An operand as printed: "%name", "name", or either after its shape; element types ("f32[")
# and layout tiles ("T(8,128)") are followed by a bracket, so they are not names.
_OPERAND_NAME = re.compile(rf"(?<![\w.\-%])%?({NAME})(?![\w.\-\[(])")
_COMMENT = re.compile(r"/\*.*?\*/")
_NAMED_COMPUTATIONS = re.compile(rf"\b(\w+)=(%?{NAME}|\{{[^{{}}]*\}})")
_NAMES = re.compile(NAME)
_MODULE_NAME = re.compile(r"HloModule\s+([^\s,]+)")
_LAYOUT = re.compile(r"\]\{[^{}]*\}")
DEBUG_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")  # a header line, numbered rows
DEBUG_ROW = re.compile(r"[ \t]*\d+ ")
_DEBUG_SECTION = re.compile(rf"^(?:{'|'.join(DEBUG_SECTIONS)})\n(?:[ \t]*\d+ .*(?:\n|$))*", re.M)
_LITERAL_OPERANDS = ("constant", "parameter")  # their parentheses hold a literal or a number
_ARRAY = re.compile(r"\b([a-z]\w*)\[([^\]]*)\]")
_SHARDING = re.compile(r"(?:^|(?<=[\s,]))sharding=\{")
_DEVICE_IDS = re.compile(r",\s*device_ids=")
_GROUP_AXES = re.compile(r"\s*\{")


@dataclass(frozen=True)
class Instruction:
    """One instruction line: ``[ROOT] name = shape opcode(operands), attributes``.

    ``operands`` and ``attributes`` are the text as printed (``metadata`` included); ``name`` has
    no ``%``.
    """

    name: str
    root: bool
    shape: str
    opcode: str
    operands: str
    attributes: str

    @property
    def operand_names(self) -> tuple[str, ...]:
        """The names the operands refer to, without ``%`` (a constant's literal and a parameter's
        number name nothing)."""
        if self.opcode in _LITERAL_OPERANDS:
            return ()
        return tuple(_OPERAND_NAME.findall(_COMMENT.sub("", mask_strings(self.operands))))

    @property
    def sharding(self) -> str | None:
        """The ``{...}`` of its ``sharding=`` attribute as written (``{devices=[2,1]<=[2]}``, a tuple's
        ``{{replicated}, {maximal device=0}}``), or None when it has none."""
        if "sharding={" not in self.attributes:
            return None
        m = _SHARDING.search(mask_strings(self.attributes))
        return self.attributes[m.end() - 1:skip_brackets(self.attributes, m.end() - 1)] if m else None


@dataclass(frozen=True)
class Computation:
    name: str
    entry: bool
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True)
class Call:
    """An instruction naming another computation: ``calls=``, ``to_apply=``, ``body=``,
    ``condition=``, ``branch_computations={...}``, ..."""

    caller: str
    instruction: Instruction
    attribute: str
    callee: str


@dataclass(frozen=True)
class HloModule:
    """The computations of one module, in the order printed (callees usually first, ENTRY last).

    ``name`` is what the text's ``HloModule`` line names ("" without one); ``entry`` is the ENTRY
    computation, None where the text has none (it is no whole module); ``calls``, which instruction
    calls which of the other computations.
    """

    name: str
    computations: tuple[Computation, ...]

    @property
    def entry(self) -> Computation | None:
        return next((c for c in self.computations if c.entry), None)

    @cached_property
    def calls(self) -> tuple[Call, ...]:
        """Every reference from an instruction to a computation of this module, in order."""
        known = {c.name for c in self.computations}
        out: list[Call] = []
        for c in self.computations:
            for ins in c.instructions:
                attributes = mask_strings(drop_attribute(ins.attributes, "metadata"))
                for attribute, value in _NAMED_COMPUTATIONS.findall(attributes):
                    for callee in _NAMES.findall(value):
                        if callee in known and callee != c.name:
                            out.append(Call(c.name, ins, attribute, callee))
        return tuple(out)


def read_header(line: str) -> tuple[str, bool] | None:
    """``(name, is ENTRY)`` when ``line`` opens a computation, else None.

    A header is an unindented line ending in ``{``: ``ENTRY %main.5 (x: f32[8]) -> f32[8] {`` in a
    dump, ``ENTRY main.5 {`` from ``as_hlo_text()``.
    """
    if not line.endswith("{") or line[0].isspace() or line.startswith("HloModule"):
        return None
    m = _HEADER.match(line)
    return (m.group(2), bool(m.group(1))) if m else None


def read_instruction(line: str) -> Instruction | None:
    """The instruction on ``line``, or None if the line is not one."""
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    rest = line[m.end():].rstrip()
    if rest.startswith("("):  # a tuple shape
        end = skip_brackets(rest, 0)
    else:
        space = _SPACE.search(rest)
        end = space.start() if space else -1
        word = rest[:end]
        if end < 0 or word.count("[") != word.count("]") or word.count("{") != word.count("}"):
            end = 0  # a space inside the shape's brackets: walk them
            while end < len(rest) and not rest[end].isspace():
                end = skip_brackets(rest, end) if rest[end] in "[{" else end + 1
    shape, rest = rest[:end], rest[end:].lstrip()
    op = _OPCODE.match(rest)
    if not op:
        return None
    close = skip_brackets(rest, op.end() - 1)
    return Instruction(m.group(2), bool(m.group(1)), shape, op.group(1), rest[op.end():close - 1],
                       rest[close:].lstrip(", "))


def read_hlo(text: str) -> HloModule:
    """The computations of HLO text; lines outside them (the debug-info sections) are skipped."""
    lines = text.splitlines()
    m = _MODULE_NAME.match(next((line for line in lines if line.strip()), ""))
    computations: list[Computation] = []
    header: tuple[str, bool] | None = None
    current: list[Instruction] = []
    for line in lines:
        if header is None:
            header = read_header(line.rstrip())
            current = []
            continue
        if line.strip() == "}":
            computations.append(Computation(header[0], header[1], tuple(current)))
            header = None
            continue
        instruction = read_instruction(line)
        if instruction is not None:
            current.append(instruction)
    return HloModule(m.group(1) if m else "", tuple(computations))


def drop_attribute(text: str, name: str) -> str:
    """``text`` without its ``name={...}`` attributes (``metadata``, which is debug information),
    together with the comma before each; a ``name={`` inside a string is kept."""
    key = f"{name}={{"
    if key not in text:
        return text
    masked = mask_strings(text)
    pieces: list[str] = []
    pos = 0
    i = masked.find(key)
    while i >= 0:
        if i > 0 and (masked[i - 1].isalnum() or masked[i - 1] in "_.-"):
            i = masked.find(key, i + 1)  # the end of another attribute's name
            continue
        pieces.append(text[pos:i].rstrip(", "))
        pos = skip_brackets(text, i + len(name) + 1)
        i = masked.find(key, pos)
    pieces.append(text[pos:])
    return "".join(pieces)


def strip_debug_info(text: str) -> str:
    """HLO text without ``metadata={...}`` attributes and the debug-info sections they point into
    (``FileNames`` ... ``StackFrames``)."""
    if "metadata={" in text:
        text = "\n".join(drop_attribute(line, "metadata") for line in text.split("\n"))
    return _DEBUG_SECTION.sub("", text)


def attribute_value(attributes: str, key: str) -> str | None:
    """The value of attribute ``key`` (a string's contents, or a bare word such as ``kLoop``), or
    None when no such attribute has one of those forms."""
    masked = mask_strings(attributes)
    for m in re.finditer(rf"\b{re.escape(key)}=", masked):
        value = word_at(attributes, m.end())
        if value is not None:
            return value
    return None


def attribute_text(attributes: str, key: str) -> str | None:
    """The value of ``key=`` as written (``{{0,1},{2,3}}``, ``[2,4]<=[8]``), up to the comma that ends it;
    the mesh form of replica groups, ``mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)) {'y'}``, whole. None
    when there is no such attribute."""
    masked = mask_strings(attributes)
    for m in re.finditer(rf"(?<![\w.\-]){re.escape(key)}=", masked):
        start = end = m.end()
        if masked.startswith("mesh[", start):
            end = skip_brackets(attributes, start + 4)
            ids = _DEVICE_IDS.match(masked, end)
            if ids:
                end = skip_brackets(attributes, ids.end())
            axes = _GROUP_AXES.match(masked, end)
            return attributes[start:skip_brackets(attributes, axes.end() - 1) if axes else end]
        while end < len(masked) and masked[end] != ",":
            end = skip_brackets(attributes, end) if masked[end] in "([{" else end + 1
        return attributes[start:end].strip()
    return None


@dataclass(frozen=True)
class Array:
    """One array of a shape: its element type (``f32``, ``bf16``, ``pred``) and dimensions as written
    (``8``; a bounded dynamic one ``<=8``; ``?``)."""

    dtype: str
    dims: tuple[str, ...]

    @property
    def sizes(self) -> tuple[int | None, ...]:
        """Each dimension's size, None for a dynamic one."""
        return tuple(int(d) if d.isdigit() else None for d in self.dims)

    @property
    def bounds(self) -> tuple[int | None, ...]:
        """Each dimension's size, a bounded dynamic one (``<=8``) at its bound; None for an unbounded one."""
        return tuple(int(d.removeprefix("<=")) if d.removeprefix("<=").isdigit() else None for d in self.dims)


def _array(m: re.Match) -> Array:
    return Array(m.group(1), tuple(d.strip() for d in m.group(2).split(",") if d.strip()))


def arrays(shape: str) -> list[Array]:
    """The arrays of a shape (``f32[8,32]{1,0}``, or each array of a tuple of them), in order."""
    return [_array(m) for m in _ARRAY.finditer(mask_strings(shape))]


def array_sizes(shape: str) -> tuple[int | None, ...] | None:
    """The dimensions of an array shape (``f32[16,64]{1,0}`` -> (16, 64), a dynamic one None); None for a
    shape that is not one array (a tuple)."""
    m = _ARRAY.match(shape.strip())
    return _array(m).sizes if m else None


def tuple_shapes(shape: str) -> list[str]:
    """The element shapes of a tuple shape (``(f32[8]{0}, /*index=1*/s32[])`` -> ``f32[8]{0}``, ``s32[]``);
    [] for an array."""
    text = _COMMENT.sub("", shape).strip()
    if not text.startswith("("):
        return []
    inner, out, start, k = text[1:-1], [], 0, 0
    while k < len(inner):
        if inner[k] in "([{\"":
            k = skip_brackets(inner, k) if inner[k] != '"' else skip_string(inner, k)
            continue
        if inner[k] == ",":
            out.append(inner[start:k].strip())
            start = k + 1
        k += 1
    out.append(inner[start:].strip())
    return [s for s in out if s]


def without_layout(shape: str) -> str:
    """``f32[8,4]{1,0}`` -> ``f32[8,4]``: the shape (or every shape of a line) without its layouts, a TPU's
    tiles and memory spaces with them (``f32[8,128]{1,0:T(8,128)S(1)}``, ``u32[]{:S(2)}``)."""
    return _LAYOUT.sub("]", shape)


def without_names(text: str) -> str:
    """``text`` with every ``%name`` reduced to ``%``: what an instruction reads, not what the
    operands happen to be called (names change whenever instructions are added or removed)."""
    return _REF.sub("%", text)


def has_opcode(hlo_text: str, opcode: str) -> bool:
    """Whether XLA HLO text holds an instruction of ``opcode`` (``"while"``): ``opcode(`` not inside a longer name.
    Found with ``str.find`` (tens of times faster than a regex that starts with ``\\b``, which tries every
    position: ~1 s over a GPT-2 exploration's HLO stages). It may say yes where the words stand in a string
    (metadata), never no where such an instruction is."""
    word = opcode + "("
    at = hlo_text.find(word)
    while at != -1:
        if at == 0 or not (hlo_text[at - 1].isalnum() or hlo_text[at - 1] in "_-"):
            return True
        at = hlo_text.find(word, at + 1)
    return False


def has_custom_calls(hlo_text: str) -> bool:
    """Whether XLA HLO text holds a custom call, whose flops and bytes XLA's cost analysis counts as -1
    (``has_opcode``)."""
    return has_opcode(hlo_text, "custom-call")
