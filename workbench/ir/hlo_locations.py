"""Where each instruction of an XLA HLO module text came from, read from its metadata.

Each instruction's ``metadata={op_name="..." source_file=... source_line=...}``, or in newer dumps
``stack_frame_id=N`` into the module's ``FileNames`` / ``FunctionNames`` / ``FileLocations`` /
``StackFrames`` tables. ``hlo_instruction_locations`` gives every instruction with its origin, and each
instruction of a fused computation with the fusion instruction that holds it.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from .hlo import drop_attribute, read_instruction
from .origins import Dataflow, Frame, OpLocation, distinct_origins
from .text import mask_strings, skip_string, unescaped

__all__ = ["hlo_dataflow", "hlo_instruction_locations", "op_name"]


_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_FIELD = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|[^\s}]+)")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([\w\-]+)\(")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")


# an instruction's name stack: the one field of its metadata that carries ``op_name``
_OP_NAME = re.compile(r'\bop_name="((?:[^"\\]|\\.)*)"')


def op_name(attributes: str) -> str:
    """The name stack in an instruction's ``metadata={op_name="jit(f)/add" ...}`` (its escapes undone),
    "" when it has none. A search of the attributes alone, where ``hlo_instruction_locations`` reads the
    frames of every instruction too, which costs more than a graph of a 10,000-instruction module."""
    m = _OP_NAME.search(attributes)
    return unescaped(m.group(1)) if m else ""


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


def _instruction_lines(lines: list[str]):
    """Each instruction of an HLO module's lines, in order: (its line's index, its computation, the
    instruction's match, the line)."""
    comp = ""
    for k, ln in enumerate(lines):
        m = _INSTRUCTION.match(ln)
        if m:
            yield k, comp, m, ln
            continue
        cm = _COMPUTATION.match(ln)
        if cm and not ln.lstrip().startswith("HloModule"):
            comp = cm.group(1)


@functools.lru_cache(maxsize=64)
def hlo_instruction_locations(text: str) -> tuple[OpLocation, ...]:
    """Every instruction of an XLA HLO module text with its origin (its metadata's ``op_name`` and its
    frames: ``source_file``/``source_line``, or ``stack_frame_id`` into the module's tables; an ``op_name``
    ``"a;b"`` of several origins gives one each, the frames the first's). An instruction with a name and no
    frames (XLA's passes copy names, not always frames) takes those its name-stack scope agrees on
    (``_Scopes.find``). ``func`` is its computation; an instruction of a fused computation carries the
    fusion instruction that calls it."""
    lines = text.splitlines()
    frames = _Frames(lines)
    fusion_of: dict[str, str] = {}
    for ln in lines:
        m = _INSTRUCTION.match(ln)
        if m and m.group(3) == "fusion":
            c = _CALLS.search(ln)
            if c:
                fusion_of[c.group(1)] = m.group(1)
    rows: list[tuple[str, str, str, int, list[str], tuple[Frame, ...]]] = []
    scopes = _Scopes()
    for k, comp, m, ln in _instruction_lines(lines):
        meta = _fields(_metadata(ln))
        chain: tuple[Frame, ...] = ()
        if "stack_frame_id" in meta:
            chain = frames.chain(int(meta["stack_frame_id"]))
        elif "source_file" in meta:
            chain = (Frame(meta["source_file"], int(meta.get("source_line", 0) or 0),
                           int(meta.get("source_column", 0) or 0)),)
        names = meta["op_name"].split(";") if meta.get("op_name") else []  # "a;b": an op of several origins
        if chain:
            for n in names:
                scopes.add(n, chain)
        rows.append((m.group(3), m.group(1), comp, k, names, chain))
    out: list[OpLocation] = []
    for opcode, name, comp, k, names, chain in rows:
        chain = chain or scopes.find(names)
        origins = distinct_origins([(names[0] if names else "", chain)] + [(n, ()) for n in names[1:]])
        out.append(OpLocation(opcode, name, comp, k, origins, fusion_of.get(comp, "")))
    return tuple(out)


class _Scopes:
    """The frames the instructions of one HLO module have, by name-stack scope: for ``jit(f)/jit(g)/add``
    the scopes ``jit(f)``, ``jit(f)/jit(g)`` and ``jit(f)/jit(g)/add``, each with the frames of its first
    instruction, or None once two of its instructions have different innermost frames."""

    def __init__(self):
        self.known: dict[str, tuple[Frame, ...] | None] = {}

    def add(self, name: str, chain: tuple[Frame, ...]) -> None:
        scope = ""
        for part in name.split("/"):
            scope = f"{scope}/{part}" if scope else part
            have = self.known.get(scope, chain)
            self.known[scope] = have if have is not None and have[0] == chain[0] else None

    def find(self, names: Sequence[str]) -> tuple[Frame, ...]:
        """The frames of an instruction XLA left without any (a pass made it and copied only the name):
        those of the innermost scope of its name that holds instructions with frames, when they all have
        the same innermost frame -- every instruction there came from that line. () when they disagree
        (``jit(f)/add`` from two lines) or none has frames."""
        for name in names:
            scope = name
            while scope:
                if scope in self.known:
                    found = self.known[scope]
                    if found is not None:
                        return found
                    break
                scope = scope.rpartition("/")[0]
        return ()


# the attributes that name a computation an instruction calls (a fusion's, a loop's, a reduction's, a branch's)
_CALLED = re.compile(r"\b(?:calls|to_apply|body|condition|branch_computations|true_computation|false_computation"
                     r"|called_computations)=(%?[\w.\-]+|\{[^{}]*\})")
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")


@functools.lru_cache(maxsize=64)
def hlo_dataflow(text: str) -> Dataflow:
    """The dataflow between the instructions of an HLO module text, indexed as
    ``hlo_instruction_locations(text)``: each instruction's operands (in its computation), and the instruction
    that calls its computation (the first that does: a fused instruction's fusion, a loop body's while).
    One pass over the text."""
    rows = [(comp, m.group(1), ln) for _, comp, m, ln in _instruction_lines(text.splitlines())]
    index = {(c, n): i for i, (c, n, _) in enumerate(rows)}
    comps = {c for c, _, _ in rows}
    caller: dict[str, int] = {}
    operands: list[tuple[int, ...]] = []
    for i, (comp, _name, ln) in enumerate(rows):
        ins = read_instruction(ln)
        used: list[int] = []
        if ins is not None:
            for n in ins.operand_names:
                j = index.get((comp, n))
                if j is not None and j not in used:
                    used.append(j)
            if "=" in ins.attributes:
                for value in _CALLED.findall(mask_strings(drop_attribute(ins.attributes, "metadata"))):
                    for callee in _NAME.findall(value):
                        if callee in comps and callee != comp:
                            caller.setdefault(callee, i)
        operands.append(tuple(used))
    return Dataflow(tuple(operands), tuple(caller.get(c, -1) for c, _, _ in rows))
