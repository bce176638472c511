"""XLA HLO text as a ``Module`` (the rules are in the package docstring)."""
from __future__ import annotations

import re
from collections import Counter

from ..hlo import NAME, drop_attribute, read_header, read_instruction, strip_debug_info
from ..text import split_strings
from .model import Module, Value

__all__ = ["read_hlo"]

# One HLO printer (compiler_ir('hlo')) writes names without "%", so every identifier is a
# candidate and only known names are treated as values. An identifier followed by "(" is an opcode.
_HLO_NAME = re.compile(rf"((?<![\w.\-])%?(?>{NAME})(?!\())")
_NUMERIC_SUFFIX = re.compile(r"\.\d+$")


def _split_hlo(line: str) -> list[str]:
    """``_HLO_NAME.split(line)``, with each string literal one token that is never a name."""
    if '"' not in line:
        return _HLO_NAME.split(line)
    pieces = split_strings(line)
    parts = _HLO_NAME.split(pieces[0])
    for k in range(1, len(pieces), 2):
        parts.append(pieces[k])
        parts += _HLO_NAME.split(pieces[k + 1])
    return parts


# JAX's compile options written into the module's header: they follow how the module was lowered (a jit's
# unspecified shardings, or an exported call's placed ones), not what XLA made of it
_LOWERING_FLAGS = ("allow_spmd_sharding_propagation_to_parameters", "allow_spmd_sharding_propagation_to_output")


def _without_lowering_flags(header: str) -> str:
    for flag in _LOWERING_FLAGS:
        header = drop_attribute(header, flag)
    return header


def read_hlo(text: str) -> Module:
    """HLO text as a ``Module``: each line a format with its references to values (computations and
    instructions) taken out, and the keys that ``align`` matches lines by."""
    lines = [s for s in (raw.rstrip() for raw in strip_debug_info(text).splitlines()) if s and not s.isspace()]
    if lines and lines[0].startswith("HloModule"):
        lines[0] = _without_lowering_flags(lines[0])
    headers, computations, values = _computations(lines)
    vkey = [0] * len(values)
    fmts: list[str] = []
    all_refs: list[tuple[int, ...]] = []
    scopes: list[int] = []
    keys: list[int] = []
    scope = 0
    local: dict[str, int] = {}
    defined_on: dict[int, int] = {}  # line -> value defined there
    block_start = 0
    for lineno, line in enumerate(lines):
        if lineno in headers:
            scope += 1
            block_start = lineno
            local, defined_on = _name_instructions(lines, lineno, scope, values, vkey)
        fmt, ref_tuple = _template(line, local, computations)
        key = hash((fmt, tuple(map(vkey.__getitem__, ref_tuple))))
        own = defined_on.get(lineno)
        if own is not None and own in ref_tuple:
            vkey[own] = hash((key, ref_tuple.index(own)))
        fmts.append(fmt)
        all_refs.append(ref_tuple)
        scopes.append(scope)
        keys.append(key)
        if line == "}" and block_start in headers:
            # A computation is identified by its body, so callers' keys follow callee changes.
            vkey[computations[headers[block_start]]] = hash(tuple(keys[block_start : lineno + 1]))
    return Module.build(fmts, all_refs, scopes, keys, values, vkey, hlo=True)


def _computations(lines: list[str]) -> tuple[dict[int, str], dict[str, int], list[Value]]:
    """The computations' headers, each rewritten in ``lines`` to its name alone (the signature repeats
    the parameter instructions and the ROOT type, and one of XLA's printers leaves it out): the
    header lines with the names as printed, each name's value, and the values, one a computation
    named by its base and how many of that base came before it."""
    headers: dict[int, str] = {}
    computations: dict[str, int] = {}
    values: list[Value] = []
    per_base: Counter[str] = Counter()
    for lineno, line in enumerate(lines):
        header = read_header(line)
        if header is None:
            continue
        name, entry = header
        lines[lineno] = f"{'ENTRY ' if entry else ''}%{name} {{"
        headers[lineno] = name
        base = _NUMERIC_SUFFIX.sub("", name)
        number = per_base[base]
        per_base[base] += 1
        computations[name] = len(values)
        values.append((f"{base}.{number}", 0, lineno, f"{base}.", f"c:{base}", number))
    return headers, computations, values


def _name_instructions(lines: list[str], header: int, scope: int, values: list[Value], vkey: list[int]
                       ) -> tuple[dict[str, int], dict[int, int]]:
    """Name the instructions of the computation whose header is line ``header`` up front (a definition
    is easy to recognize and carries the opcode the canonical name is made of), appending them to
    ``values`` and ``vkey``: each name's value, and the line each is defined on."""
    local: dict[str, int] = {}
    defined_on: dict[int, int] = {}
    n = 0
    for inner in range(header + 1, len(lines)):
        if lines[inner] == "}":
            break
        if ins := read_instruction(lines[inner]):
            opcode = ins.opcode
            local[ins.name] = defined_on[inner] = len(values)
            values.append((f"{opcode}.{n}", scope, inner, f"{opcode}.", "i", n))
            vkey.append(0)
            n += 1
    return local, defined_on


def _template(line: str, local: dict[str, int], computations: dict[str, int]) -> tuple[str, tuple[int, ...]]:
    """The line as a format with ``%s`` for each name of a known value (an instruction of its
    computation, or a computation), and those values in order."""
    parts = _split_hlo(line)
    out = [parts[0]]
    refs: list[int] = []
    for k in range(1, len(parts), 2):
        tok, follow = parts[k], parts[k + 1]
        name = tok[1:] if tok[0] == "%" else tok
        v = -1 if tok[0] == '"' else local.get(name, computations.get(name, -1))
        if v < 0:
            out[-1] += tok + follow
            continue
        # One printer writes names with "%", the other without: settle on "%".
        out[-1] += "%"
        refs.append(v)
        out.append(follow)
    return "%s".join([piece.replace("%", "%%") for piece in out]), tuple(refs)
