"""XLA HLO text as a ``Module`` (the rules are in the package docstring)."""
from __future__ import annotations

import re
from collections import Counter

from ...ir.hlo import NAME, read_header, read_instruction, strip_debug_info
from ...ir.text import split_strings
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


def read_hlo(text: str) -> Module:
    text = strip_debug_info(text)
    lines = [s for s in (raw.rstrip() for raw in text.splitlines()) if s and not s.isspace()]
    fmts: list[str] = []
    all_refs: list[tuple[int, ...]] = []
    scopes: list[int] = []
    keys: list[int] = []
    values: list[Value] = []
    computations: dict[str, int] = {}
    headers: dict[int, str] = {}  # line -> computation name as printed
    per_base: Counter[str] = Counter()
    for lineno, line in enumerate(lines):
        header = read_header(line)
        if header is not None:
            # The signature repeats the parameter instructions and the ROOT type, and one of
            # XLA's printers leaves it out, so a header is normalized to its name.
            name, entry = header
            lines[lineno] = f"{'ENTRY ' if entry else ''}%{name} {{"
            headers[lineno] = name
            base = _NUMERIC_SUFFIX.sub("", name)
            number = per_base[base]
            per_base[base] += 1
            computations[name] = len(values)
            values.append((f"{base}.{number}", 0, lineno, f"{base}.", f"c:{base}", number))
    vkey = [0] * len(values)

    split = _split_hlo
    scope = 0
    local: dict[str, int] = {}
    defined_on: dict[int, int] = {}  # line -> value defined there
    block_start = 0
    for lineno, line in enumerate(lines):
        if lineno in headers:
            # Name the computation's instructions up front: a definition is easy to recognize
            # and carries the opcode the canonical name is made of.
            scope += 1
            local, defined_on = {}, {}
            block_start = lineno
            n = 0
            for inner in range(lineno + 1, len(lines)):
                if lines[inner] == "}":
                    break
                if ins := read_instruction(lines[inner]):
                    opcode = ins.opcode
                    local[ins.name] = defined_on[inner] = len(values)
                    values.append((f"{opcode}.{n}", scope, inner, f"{opcode}.", "i", n))
                    vkey.append(0)
                    n += 1
        parts = split(line)
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
        fmt = "%s".join([piece.replace("%", "%%") for piece in out])
        ref_tuple = tuple(refs)
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
