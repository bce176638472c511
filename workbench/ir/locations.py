"""Where each op of a program text came from: MLIR locations and XLA's per-instruction metadata, read as text.

The one place the workbench reads them from: MLIR here, XLA's metadata in ``hlo_locations.py``, the values
(``Frame``, ``Origin``, ``OpLocation``) in ``origins.py``, all importable from here.

MLIR (StableHLO as JAX lowers it, every Enzyme-JaX / MLIR stage after it): each op line ends in
``loc(...)``, usually an alias ``loc(#loc12)`` whose definition (``#loc12 = loc(...)``) follows the
module. JAX writes a name location (the name stack, ``"jit(f)/jvp()/dot_general"``) around a call-site
chain of the Python frames, innermost first: ``callsite("layer"("/x.py":3:17 to :22) at callsite(...))``.
Passes that merge ops merge their locations (``fused[...]``). ``read_location`` (``location_reader.py``) parses
any of these forms; ``mlir_op_locations`` gives every op of a module text with its result names and its origins.

JAX lowers a function it caches (``jnp.linalg.cholesky``, ``jnp.where``, a scan body, a linen submodule) once,
as a private function whose ops carry a name and no file (``loc("transpose")``); the file, line and name
stack are on the call. ``call_sites`` finds each private function's call, and an op of one reads as it
would once inlined there -- as MLIR's inliner writes it, ``callsite(the op's at the call's)``.
``xla_locations`` rewrites what XLA's translation to HLO would otherwise lose of these.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .location_reader import LocationReader, Pair, at_call, callsite_parts, fast_name_stack, read_location
from .hlo_locations import hlo_dataflow, hlo_instruction_locations
from .origins import Dataflow, Frame, OpLocation, Origin, distinct_origins, user_frame
from .text import mask_strings

__all__ = ["CallSites", "Dataflow", "Frame", "OpLocation", "Origin", "call_sites", "fast_name_stack", "hlo_dataflow",
           "hlo_instruction_locations", "mlir_dataflow", "mlir_op_locations", "op_tag", "ops_at", "read_location",
           "tag_ops", "user_frame", "xla_locations"]


_ALIAS = re.compile(r"^(#[\w$.-]+)\s*=\s*loc\((.*)\)\s*$")
# an op: a dialect's ``name.op`` (quoted in the generic form), or func's ``call`` and ``return`` as printed bare
_OP_LINE = re.compile(r"^\s*(?:(%[\w$.#:-]+(?::\d+)?(?:\s*,\s*%[\w$.#:-]+(?::\d+)?)*)\s*=\s*)?\"?"
                      r"([A-Za-z_][\w$]*\.[\w$.]+|(?:call|return)(?=\s|$))\"?")
_FUNC = re.compile(r"^\s*func\.func\s+(?:\w+\s+)*@([\w$.-]+|\"[^\"]*\")")
# a call of a function of the module: func.call (and its generic form's callee), a composite's decomposition
_CALLEE = re.compile(r"(?:(?<![\w.])(?:func\.)?call\s+@|\b(?:callee|decomposition)\s*=\s*@)"
                     r"([\w$.-]+|\"(?:[^\"\\]|\\.)*\")")


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


@dataclass(frozen=True)
class _Op:
    """One op line of a module text: ``line`` its line in the text without alias definitions (the stage's
    text), ``at`` the index among all lines of the line that holds its location ``loc`` (an op with regions
    prints it after its closing brace)."""

    op: str
    result: str
    func: str
    line: int
    at: int
    loc: str | None
    start: int = -1  # the index among all lines of the line the op starts on (its operands are there)
    parent: int = -1  # the op (its index in ``_Module.ops``) whose region holds it; -1 for none or a function


@dataclass(frozen=True)
class _Module:
    """A module text read once: its lines, alias definitions and ops, and each private function's first call
    (the call op's index in ``ops``), a call from a function to itself left out."""

    lines: tuple[str, ...]
    aliases: dict[str, str]
    ops: tuple[_Op, ...]
    first_call: dict[str, int]


@functools.lru_cache(maxsize=64)  # stages that a pass left unchanged share their parent's text
def _read_module(text: str) -> _Module:
    lines = text.splitlines()
    aliases = {}
    for ln in lines:
        if ln.startswith("#"):
            m = _ALIAS.match(ln)
            if m:
                aliases[m.group(1)] = m.group(2)
    ops: list[_Op] = []
    locs: dict[int, tuple[int, str]] = {}  # op index -> (line, loc) read after its regions
    pending: list[tuple[int, int]] = []  # (brace depth before it, op index): region ops waiting for their loc
    first_call: dict[str, int] = {}
    opened: list[tuple[int, int]] = []  # (brace depth before it, op index): ops whose regions are open
    func, depth, dropped = "", 0, 0
    for k, ln in enumerate(lines):
        if ln.startswith("#loc"):
            dropped += 1  # strip_locations (the stage's text) drops alias lines
            continue
        if not ln.strip() or ln.startswith("#") or ln.lstrip().startswith("//"):
            continue
        code = mask_strings(ln)
        before, depth = depth, depth + code.count("{") - code.count("}")
        loc = _trailing_loc(ln)
        if code.lstrip().startswith("}"):  # a region closes: the op that opened it may print its loc here
            if pending and pending[-1][0] == depth and loc:
                locs[pending.pop()[1]] = (k, loc)
            continue
        fm = _FUNC.match(ln)
        if fm:
            func = fm.group(1).strip('"')
        m = _OP_LINE.match(ln)
        if not m or m.group(2).startswith(("loc", "tensor")):
            if depth > before and ops and not fm and not (opened and opened[-1][1] == len(ops) - 1):
                opened.append((before, len(ops) - 1))  # "cond {" after a while's line opens its region
            continue
        while pending and pending[-1][0] >= before:  # a region op that printed no loc after its regions
            pending.pop()
        if loc is None:
            pending.append((before, len(ops)))
        while opened and opened[-1][0] >= before:
            opened.pop()
        parent = opened[-1][1] if opened else -1
        if depth > before:
            opened.append((before, len(ops)))
        c = _CALLEE.search(code) if "call" in code or "decomposition" in code else None
        if c:
            callee = ln[c.start(1):c.end(1)].strip('"')
            if callee != func:
                first_call.setdefault(callee, len(ops))
        result = (m.group(1) or "").split(",")[0].strip().split(":")[0]
        if parent >= 0 and ops[parent].op in ("func.func", "builtin.module"):
            parent = -1  # a function's ops: its location is the jit's, no line of the user's
        ops.append(_Op(m.group(2), result, func, k - dropped, k, loc, k, parent))
    for i, (k, loc) in locs.items():
        o = ops[i]
        ops[i] = _Op(o.op, o.result, o.func, o.line, k, loc, o.start, o.parent)
    return _Module(tuple(lines), aliases, tuple(ops), first_call)


def _resolve_sites(module: _Module, own: Callable[[_Op], list[Pair]]) -> dict[str, list[Pair]]:
    """For each private function, the origins of its first call site in text order (``own``: an op's own
    origins), attributed through the call site of the function that makes the call: nested private
    functions resolve to the outermost call. Each function is resolved once (linear in the module); a
    function on a cycle of calls has no call site to resolve to."""
    sites: dict[str, list[Pair] | None] = {}
    for start in module.first_call:
        chain: list[str] = []
        on_chain: set[str] = set()
        f = start
        while f in module.first_call and f not in sites and f not in on_chain:
            chain.append(f)
            on_chain.add(f)
            f = module.ops[module.first_call[f]].func
        if f in on_chain:  # a cycle: its functions call each other only, none reaches a caller outside
            cycle = chain.index(f)
            for g in chain[cycle:]:
                sites[g] = None
            chain = chain[:cycle]
        for g in reversed(chain):
            call = module.ops[module.first_call[g]]
            outer = sites.get(call.func)
            sites[g] = own(call) if outer is None else at_call(own(call), outer)
    return {f: s for f, s in sites.items() if s is not None}


@dataclass(frozen=True)
class CallSites:
    """Where a module's private functions are called: JAX lowers a function it caches (``@cholesky``,
    ``@_where``, a scan body, a linen submodule) once, as a private function whose ops carry only a name
    (``loc("transpose")``) or no location at all; the file, line and name stack are on its call. ``sites`` maps
    each private function to the origins of its call -- the **first call in text order** where it is
    called from several places (every op of it counts at that one) -- themselves attributed through the
    call site of the function the call sits in."""

    sites: Mapping[str, tuple[Origin, ...]]

    def attribute(self, func: str, origins: Sequence[Origin]) -> tuple[Origin, ...]:
        """The origins of an op of function ``func`` as they read once the function is inlined at its call:
        the call's frames after the op's own (an op with no file has the call's line), the call's name stack
        before the op's (``jit(f)/jit(cholesky)/transpose``); ``origins`` unchanged outside private functions."""
        site = self.sites.get(func)
        if not site:
            return tuple(origins)
        return distinct_origins(at_call([(o.name, o.frames) for o in origins], [(o.name, o.frames) for o in site]))


@functools.lru_cache(maxsize=64)
def call_sites(text: str) -> CallSites:
    """The call sites of the private functions of an MLIR module text (see ``CallSites``)."""
    module = _read_module(text)
    memo: dict = {}
    sites = _resolve_sites(module, lambda o: _own(module, o, memo))
    return CallSites({f: distinct_origins(s) for f, s in sites.items()})


def _own(module: _Module, op: _Op, memo: dict) -> list[Pair]:
    if not op.loc:
        return []
    text = op.loc.strip()
    return LocationReader(text[4:-1] if text.startswith("loc(") else text, module.aliases, memo=memo).origins()


@functools.lru_cache(maxsize=64)  # stages that a pass left unchanged share their parent's text
def mlir_op_locations(text: str) -> tuple[OpLocation, ...]:
    """Every op of an MLIR module text (one per line that starts an op, ``func.func`` and ``return``
    included) with its origins, read from its trailing ``loc(...)`` (an op with regions: the one after its
    closing brace) and the module's alias definitions; an op of a private function is attributed through
    its function's call site (``CallSites.attribute``). Text without locations gives ops with no origins."""
    module = _read_module(text)
    sites = call_sites(text)
    memo: dict = {}
    made: dict[tuple[str, str], tuple[Origin, ...]] = {}  # (a location, a function): read once, as in xla_locations

    def origins(o: _Op) -> tuple[Origin, ...]:
        if (o.loc, o.func) not in made:
            made[(o.loc, o.func)] = sites.attribute(o.func, distinct_origins(_own(module, o, memo)))
        return made[(o.loc, o.func)]

    return tuple(OpLocation(o.op, o.result, o.func, o.line, origins(o)) for o in module.ops)


_VALUE = re.compile(r"%[\w$.-]+")


@functools.lru_cache(maxsize=64)
def mlir_dataflow(text: str) -> Dataflow:
    """The dataflow between the ops of an MLIR module text, indexed as ``mlir_op_locations(text)``: each op's
    operands (the ops whose results it uses, read from the line it starts on; a block argument names no op)
    and the op whose region holds it (a while's body op: the while). One pass over the text."""
    module = _read_module(text)
    defined: dict[tuple[str, str], int] = {}
    operands: list[tuple[int, ...]] = []
    for i, o in enumerate(module.ops):
        code = mask_strings(module.lines[o.start]) if o.start >= 0 else ""
        head, eq, rest = code.partition("=") if o.result else ("", "", code)
        mine = {v.split("#")[0] for v in _VALUE.findall(head)} if eq else set()
        used = []
        for v in _VALUE.findall(rest if eq else code):
            j = defined.get((o.func, v))
            if j is not None and j not in used:
                used.append(j)
        operands.append(tuple(used))
        for v in mine:
            defined[(o.func, v)] = i
    return Dataflow(tuple(operands), tuple(o.parent for o in module.ops))


def ops_at(text: str, location: str) -> tuple[OpLocation, ...]:
    """The ops of an MLIR module text whose own ``loc(...)`` reads as ``location`` does (as a diagnostic
    prints it: whole, no aliases), in text order; none for a location with nothing to read (``unknown``).
    Ops are compared by their own location, before any attribution through call sites; each comes as
    ``mlir_op_locations`` gives it."""
    want = read_location(location)
    if not want:
        return ()
    module = _read_module(text)
    memo: dict = {}
    return tuple(located for op, located in zip(module.ops, mlir_op_locations(text))
                 if distinct_origins(_own(module, op, memo)) == want)


_TAG = "wb-op:"
_TAGGED = re.compile(r'"' + _TAG + r'(\d+)"')


def tag_ops(text: str) -> str:
    """``text`` with each op's location wrapped in a name that numbers it, ``loc("wb-op:7"(its own))``:
    the same program, whose diagnostics then say which op they are about (``op_tag``); ``7`` is the op's
    index in ``mlir_op_locations(text)``. An op that prints no location on a line of its own (one written by
    hand) gets the name alone. The location aliases move above the module: only ``loc(#alias)`` itself may
    name an alias defined further down."""
    module = _read_module(text)
    lines = list(module.lines)
    for k, op in enumerate(module.ops):
        if op.loc:
            ln = lines[op.at]
            i = ln.rfind(op.loc)
            lines[op.at] = f'{ln[:i]}loc("{_TAG}{k}"({op.loc.strip()[4:-1]})){ln[i + len(op.loc):]}'
        elif lines[op.at].strip() and not lines[op.at].rstrip().endswith(("{", "(", ",")):
            lines[op.at] = f'{lines[op.at].rstrip()} loc("{_TAG}{k}")'  # a one-line op written without one
    aliases = [ln for ln in lines if ln.startswith("#loc")]
    rest = [ln for ln in lines if not ln.startswith("#loc")]
    return "\n".join(aliases + rest) + ("\n" if text.endswith("\n") else "")


def op_tag(location: str) -> int | None:
    """The op number ``tag_ops`` gave the op a diagnostic's ``location`` names, or None."""
    m = _TAGGED.search(location)
    return int(m.group(1)) if m else None


def xla_locations(text: str) -> str:
    """``text`` with the locations XLA's translation to HLO would lose rewritten into JAX's own form, which
    it keeps: ``"name stack"(callsite("fn"("file":line:col) at ...))``.

    XLA names an instruction after the callee of a ``callsite(...)`` location and reads no file from it, so
    an op that MLIR's inliner moved out of a private function (``callsite("cholesky" at <the call>)``) would
    reach the HLO metadata as ``op_name="cholesky"`` and nothing else. Here such a location becomes the
    origins ``read_location`` gives it (the call's name stack joined with the op's own, the call's frames),
    and an op still inside a private function gets its call site's (``CallSites.attribute``): the same
    origin the MLIR stages show, so an XLA instruction and its MLIR op share ``Origin.key``. Only locations
    change; the program is the same. New chains of frames are defined as aliases (``#loc_wbN``), above the first
    definition that uses one."""
    if "loc(" not in text:
        return text
    module = _read_module(text)
    memo: dict = {}
    printer = _LocationPrinter(module.aliases)
    lines = list(module.lines)

    def lost(body: str) -> list[Pair] | None:
        """The origins of a location whose frames XLA would not read, else None: ``callsite(...)`` whose
        caller carries a name stack (the inliner's call site; in JAX's chains of frames a frame is there),
        and ``fused[...]`` of several origins (XLA names the op after all of them, with no frame)."""
        body = body.strip()
        if body.startswith("callsite"):
            callee, caller = callsite_parts(body, module.aliases, memo)
            return at_call(callee, caller) if caller and caller[0][0] else None
        if body.startswith("fused"):
            pairs = LocationReader(body, module.aliases, memo=memo).origins()
            return pairs if len(distinct_origins(pairs)) > 1 and any(fs for _, fs in pairs) else None
        return None

    first = len(lines)  # an alias definition may only use aliases defined above it (an op, any)
    for k, ln in enumerate(lines):
        m = _ALIAS.match(ln) if ln.startswith("#") else None
        pairs = lost(m.group(2)) if m else None
        if pairs is not None:
            lines[k] = f"{m.group(1)} = loc({printer.location(pairs)})"
            first = min(first, k)
    sites = _resolve_sites(module, lambda o: _own(module, o, memo))
    made: dict[tuple[str, str], str] = {}  # (an op's location, its function) -> its new location ("": as it is)
    for o in module.ops:
        if not o.loc:
            continue
        new = made.get((o.loc, o.func))
        if new is None:  # ops of one function share few locations: each is read and printed once
            site = sites.get(o.func)
            pairs = at_call(_own(module, o, memo), site) if site is not None else lost(o.loc.strip()[4:-1])
            new = made[(o.loc, o.func)] = "" if pairs is None else f"loc({printer.alias(printer.location(pairs))})"
        ln = lines[o.at]
        i = ln.rfind(o.loc)
        if new and i >= 0:
            lines[o.at] = ln[:i] + new + ln[i + len(o.loc):]
    return "\n".join(lines[:first] + printer.definitions + lines[first:]) + ("\n" if text.endswith("\n") else "")


class _LocationPrinter:
    """Prints origins as MLIR locations; each chain of frames (and each of its tails) once, as an alias, and
    the aliases' definitions (each after those it uses)."""

    def __init__(self, taken: Mapping[str, str]):
        self.taken = taken
        self.links: dict[tuple[Frame, str], str] = {}  # (a frame, the alias of the frames outside it) -> alias
        self.named: dict[str, str] = {}
        self.definitions: list[str] = []

    def location(self, pairs: Sequence[Pair]) -> str:
        """One location of ``pairs``; several origins as XLA names a fused location, ``"a;b"``, around the
        frames of the first that has frames (put first): XLA reads no frame from a fused location."""
        origins = sorted(distinct_origins(pairs), key=lambda o: not o.frames)
        if not origins:
            return "unknown"
        return self._origin(";".join(o.name for o in origins if o.name), origins[0].frames)

    def alias(self, location: str) -> str:
        """An alias of ``location``: an op may refer to an alias defined further down only directly
        (``loc(#alias)``), not from inside a location."""
        if location not in self.named:
            self.named[location] = self._define(location)
        return self.named[location]

    def _define(self, body: str) -> str:
        alias = f"#loc_wb{len(self.definitions)}"
        while alias in self.taken:
            alias += "_"
        self.definitions.append(f"{alias} = loc({body})")
        return alias

    def _origin(self, name: str, frames: tuple[Frame, ...]) -> str:
        chain = self._chain(frames) if frames else ""
        if not name:
            return chain or "unknown"
        return f"{_quoted(name)}({chain})" if chain else _quoted(name)

    def _chain(self, frames: tuple[Frame, ...]) -> str:
        """The alias of ``frames`` (innermost first), each tail defined before the chain that uses it: found by
        (frame, the alias of the rest), n lookups for n frames (not a hash of each tail's tuple)."""
        tail = ""
        for f in reversed(frames):
            alias = self.links.get((f, tail))
            if alias is None:
                at = f'{_quoted(f.file)}:{f.line}:{f.column}'
                here = f"{_quoted(f.function)}({at})" if f.function else at
                alias = self.links[(f, tail)] = self._define(f"callsite({here} at {tail})" if tail else here)
            tail = alias
        return tail


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
