"""Where a module's text writes each value's sharding: per function, the values that carry one, with
the sharding and the type as written. What the shardings mean is ``sdy.py`` and ``hlo_sharding.py``'s
to read; what they mean in words is ``analysis.sharding.shardings``'s.

MLIR: a function argument's ``{sdy.sharding = #sdy.sharding<...>}``, an op's
``sdy.sharding = #sdy.sharding_per_value<[...]>`` (one per result), the ``out_sharding=<...>`` of
Shardy's collectives, the sharding written in ``sdy.reshard`` and ``sdy.sharding_constraint``, a
``sdy.manual_computation``'s ``out_shardings`` (its results) and ``in_shardings`` (read with its body's
arguments), and ``mhlo.sharding = "{...}"`` strings (a tuple's elements one per result). An op with
regions may write its sharding and its types on the line that closes them, and is read there. The
values of an op with several results are named as their users write them (``%5#1``), and the op's own
name (``%5`` of ``%5:2``) stands for the group.

XLA HLO: an instruction's ``sharding={...}``, per computation (``ENTRY main.5`` for the entry).

A reader of lines, not a parser: it works on any dialect and on text jaxlib cannot parse (the lines
are ``text.split("\\n")``, so line numbers are those a view of the text shows). A value with no
sharding written has no entry.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .hlo import read_header, read_instruction
from .hlo_sharding import tuple_shardings
from .sdy import keyed_axes, per_value_shardings, sharding_list
from .text import SSA_VALUE, mask_strings, skip_angles, skip_brackets, skip_string

__all__ = ["WrittenSharding", "ShardedScope", "mlir_shardings", "hlo_shardings", "tensor_dims"]

Kind = Literal["sdy", "hlo", "manual", "group"]


@dataclass(frozen=True)
class WrittenSharding:
    """One value's sharding as written. ``kind``: ``sdy`` a Shardy tensor sharding (``<@mesh, [...]>``);
    ``hlo`` an HloSharding (``{devices=[2,1]<=[2]}``: HLO's ``sharding=``, or an ``mhlo.sharding`` string's
    contents); ``manual`` a ``sdy.manual_computation``'s body argument, each device's own part, with its
    operand's sharding (``""`` when not written) and the computation's ``manual_axes``; ``group`` the name
    of an op's results together, ``parts`` the names of those with a sharding. ``type`` as written
    (``tensor<8x4xf32>``, ``f32[8,4]{1,0}``; ``""`` when not read)."""

    name: str
    kind: Kind
    sharding: str = ""
    type: str = ""
    manual_axes: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShardedScope:
    """One function (HLO computation) and its values with a sharding, in the order read; ``first``..``last``
    are the lines it spans (0-based, inclusive)."""

    function: str
    first: int
    last: int
    values: tuple[WrittenSharding, ...]


_TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([A-Za-z]\w*)")
_FUNC = re.compile(r"^\s*func\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.\-]+)\s*\(")
_ARGUMENT = re.compile(rf"({SSA_VALUE})\s*:\s*")
_RESULTS = re.compile(rf"^\s*((?:{SSA_VALUE}(?::\d+)?\s*,\s*)*{SSA_VALUE}(?::\d+)?)\s*=\s*")
_RESULT = re.compile(rf"({SSA_VALUE})(?::(\d+))?")
_OP = re.compile(r'"?([A-Za-z_][\w$]*(?:\.[\w$]+)*)"?')
_ATTR = re.compile(r"(?<![\w.])(sdy\.sharding|mhlo\.sharding)\s*=\s*")
_STOPS = re.compile(r"[()\[\]{}<>]| : |->")
_CLOSERS = re.compile(r"[\s})]*[})]")
_TYPE_ITEMS = re.compile(r"(?:[^,<>]|<[^<>]*>)+")
_NESTED = re.compile(r"<[^<>]*<")
_TYPE_TAIL = re.compile(r"\s+(?:attributes\s*\{.*|loc\(.*|\{)\s*$")


def tensor_dims(type_text: str) -> list[int | None] | None:
    """The dimensions of ``tensor<16x?x64xf32>`` (a dynamic one None); None for another type."""
    m = _TENSOR.match(type_text.strip())
    if not m:
        return None
    return [None if d == "?" else int(d) for d in m.group(1).split("x")[:-1]]


# -- MLIR ------------------------------------------------------------------------------------------------
def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` cut at the ``sep`` characters outside brackets and strings, each piece stripped, empty ones
    dropped."""
    code = mask_strings(text)
    pieces, depth, start = [], 0, 0
    for k, c in enumerate(code):
        if c in "([{<":
            depth += 1
        elif c in ")]}" or (c == ">" and code[k - 1:k] != "-"):
            depth -= 1
        elif c == sep and depth == 0:
            pieces.append(text[start:k].strip())
            start = k + 1
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _type_start(code: str, start: int) -> int:
    """Where the types begin: after the first `` : `` outside brackets from ``start``; -1 if none. The
    last `` : `` of the line nearly always is it (the types end an op), checked by its tail holding
    balanced angle brackets and no braces; else the line is walked."""
    last = code.rfind(" : ", start)
    if last < 0:
        return -1
    tail = code[last + 3:]
    if "{" not in tail and "}" not in tail and tail.count("<") == tail.count(">") - tail.count("->"):
        return last + 3
    depth = 0
    for m in _STOPS.finditer(code, start):
        c = m.group()
        if c in ("(", "[", "{", "<"):
            depth += 1
        elif c in (")", "]", "}", ">"):
            depth -= 1
        elif c == " : " and depth == 0:
            return m.end()
    return -1


def _result_types(code: str, text: str, start: int, count: int) -> list[str] | None:
    """The result types written after the first `` : `` outside brackets from ``start``: the part after
    ``->`` when there is one, else the last ``count`` of the types listed; None when the line has none."""
    at = _type_start(code, start)
    if at < 0:
        return None
    tail = _TYPE_TAIL.sub("", text[at:])  # a trailing dict, location, region
    cut = tail.rfind("->")
    outs = tail[cut + 2:].strip() if cut >= 0 else tail.strip()
    if outs.startswith("(") and outs.endswith(")"):
        outs = outs[1:-1]
    types = split_top(outs) if _NESTED.search(outs) else [t.strip() for t in _TYPE_ITEMS.findall(outs) if t.strip()]
    return types[-count:] if len(types) >= count else None


def _op_shardings(op: str, line: str, code: str, start: int) -> list[tuple[Kind, str]] | None:
    """(kind, sharding) per result that ``line`` writes for op ``op`` from ``start`` on; None if none."""
    if op in ("sdy.reshard", "sdy.sharding_constraint"):
        k = code.find("<", start + len(op))
        return [("sdy", line[k:skip_angles(line, k)])] if k >= 0 else None
    if "out_sharding=<" in code:
        k = code.index("out_sharding=<") + len("out_sharding=")
        return [("sdy", line[k:skip_angles(line, k)])]
    if "out_shardings=[" in code:
        k = code.index("out_shardings=[") + len("out_shardings=")
        return [("sdy", s) for s in sharding_list(line, k)]
    m = _ATTR.search(code, start)
    if m is None:
        return None
    k = m.end()
    if m.group(1) == "mhlo.sharding":
        value = line[k + 1:skip_string(line, k) - 1] if line.startswith('"', k) else ""
        return [("hlo", e) for e in tuple_shardings(value)] if value.startswith("{{") else [("hlo", value)]
    if line.startswith("#sdy.sharding_per_value<", k):
        return [("sdy", s) for s in per_value_shardings(line, k)]
    if line.startswith("#sdy.sharding<", k):
        j = k + len("#sdy.sharding")
        return [("sdy", line[j:skip_angles(line, j)])]
    return None


class _Op:
    """An op with results, read from its first line and, for an op with regions, its closing line."""

    def __init__(self, results: list[tuple[str, int]], name: str, depth: int):
        self.results, self.name, self.depth = results, name, depth
        self.shardings: list[tuple[Kind, str]] | None = None
        self.types: list[str] | None = None

    @property
    def count(self) -> int:
        return sum(n for _, n in self.results)

    def read(self, line: str, start: int, code: str) -> None:
        if self.shardings is None:
            self.shardings = _op_shardings(self.name, line, code, start)
        if self.types is None:
            self.types = _result_types(code, line, start, self.count)

    def values(self) -> list[WrittenSharding]:
        """Its results with a sharding, each one's own and then each group's (``%5`` of ``%5:2``)."""
        if not self.shardings:
            return []
        names = [name if n == 1 else f"{name}#{k}" for name, n in self.results for k in range(n)]
        types = self.types or []
        out = [WrittenSharding(name, *self.shardings[k], types[k] if k < len(types) else "")
               for k, name in enumerate(names[:len(self.shardings)])]
        if len(names) > 1:
            read = {v.name for v in out}
            for name, n in self.results:
                parts = tuple(f"{name}#{k}" for k in range(n) if f"{name}#{k}" in read)
                if n > 1 and parts:
                    out.append(WrittenSharding(name, "group", parts=parts))
        return out


def _func_arguments(line: str, start: int) -> list[WrittenSharding]:
    """The arguments of the ``func.func`` whose ``(`` is at ``line[start]`` that carry a sharding."""
    group = line[start + 1:skip_brackets(line, start) - 1]
    if "sharding" not in group:
        return []
    out = []
    for arg in split_top(group):
        m = _ARGUMENT.match(arg)
        if not m:
            continue
        code = mask_strings(arg)
        attrs = code.find("{", m.end())
        type_text = arg[m.end():attrs if attrs >= 0 else len(arg)].strip()
        found = _op_shardings("", arg, code, attrs if attrs >= 0 else len(arg))
        if found:
            out.append(WrittenSharding(m.group(1), *found[0], type_text))
    return out


def _manual_body(line: str) -> list[WrittenSharding]:
    """A ``sdy.manual_computation``'s body arguments (its opening line): each device's own part of an operand."""
    code = mask_strings(line)
    k = code.find("in_shardings=[")
    axes = tuple(a.name for a in keyed_axes(line, "manual_axes"))
    ins = sharding_list(line, k + len("in_shardings=")) if k >= 0 else []
    close = code.rfind(")")
    opened = code.rfind("(", 0, close) if close >= 0 else -1
    if opened < 0:
        return []
    args = [a for a in split_top(line[opened + 1:close]) if a.startswith("%")]
    out = []
    for n, arg in enumerate(args):
        name, _, type_text = arg.partition(":")
        out.append(WrittenSharding(name.strip(), "manual", ins[n] if n < len(ins) else "", type_text.strip(), axes))
    return out


class _MlirReader:
    """The walk over a module's lines: functions by their braces, ops by their results."""

    def __init__(self) -> None:
        self.scopes: list[ShardedScope] = []
        self.function: tuple[str, int] | None = None  # (name, first line) of the function being read
        self.values: list[WrittenSharding] = []
        self.base = self.depth = 0
        self.pending: list[_Op] = []  # ops with regions, waiting for their closing line

    def close(self, last: int) -> None:
        self.scopes.append(ShardedScope(self.function[0], self.function[1], last, tuple(self.values)))
        self.function, self.values, self.pending = None, [], []

    def outside(self, k: int, line: str, change: int) -> None:
        """A line outside any function: one may open here."""
        m = _FUNC.match(line)
        if m is None:
            self.depth += change
            return
        self.function, self.values = (m.group(1), k), _func_arguments(line, m.end() - 1)
        self.base = self.depth
        self.depth += change
        if self.depth <= self.base:  # a declaration without a body
            self.close(k)

    def inside(self, k: int, line: str, code: str, change: int) -> None:
        before = self.depth
        self.depth += change
        if self.pending and code.lstrip().startswith("}") and self.depth <= self.pending[-1].depth:
            op = self.pending.pop()
            op.read(line, _CLOSERS.match(code).end(), code)
            self.values += op.values()
        if self.depth <= self.base:
            self.close(k)
            return
        results = _RESULTS.match(line)
        if results is None:
            return
        name = _OP.match(line, results.end())
        op = _Op([(m.group(1), int(m.group(2) or 1)) for m in _RESULT.finditer(results.group(1))],
                 name.group(1) if name else "", before)
        if self.depth > before:  # regions follow: the sharding or the types may be on the closing line
            op.read(line, results.end(), code)
            if op.name == "sdy.manual_computation":
                self.values += _manual_body(line)
            self.pending.append(op)
        elif "sharding" in line or op.name == "sdy.reshard":  # a reshard writes its sharding bare
            op.read(line, results.end(), code)
            self.values += op.values()


def mlir_shardings(lines: Sequence[str]) -> list[ShardedScope]:
    """Each function of an MLIR module's ``lines``, with its values' shardings as written (functions with
    none included)."""
    reader = _MlirReader()
    for k, line in enumerate(lines):
        code = mask_strings(line) if '"' in line else line
        change = code.count("{") - code.count("}")
        if reader.function is None:
            reader.outside(k, line, change)
        else:
            reader.inside(k, line, code, change)
    return reader.scopes


# -- XLA HLO ---------------------------------------------------------------------------------------------
def hlo_shardings(lines: Sequence[str]) -> list[ShardedScope]:
    """Each computation of an HLO module's ``lines`` (``ENTRY name`` for the entry), with its instructions'
    ``sharding={...}`` as written (computations with none included)."""
    scopes: list[ShardedScope] = []
    current: tuple[str, int] | None = None
    values: list[WrittenSharding] = []
    for k, line in enumerate(lines):
        if current is None:
            header = read_header(line.rstrip()) if line and not line[0].isspace() else None
            if header is not None:
                current, values = (("ENTRY " if header[1] else "") + header[0], k), []
            continue
        if line.strip() == "}":
            scopes.append(ShardedScope(current[0], current[1], k, tuple(values)))
            current = None
            continue
        ins = read_instruction(line) if "sharding={" in line else None
        if ins is not None and (sharding := ins.sharding) is not None:
            values.append(WrittenSharding("%" + ins.name, "hlo", sharding, ins.shape))
    return scopes
