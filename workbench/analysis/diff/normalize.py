"""Normalization: module text as lines with canonical value names (see the package docstring).

``read_module`` turns MLIR or HLO text into a ``Module`` -- each line a %-format with one ``%s`` per
value reference, and every value's canonical name and content key -- which the aligner works on;
``normalize`` prints it with the canonical names.
"""
from __future__ import annotations

import gc
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ...ir.hlo import NAME, read_header, read_instruction, strip_debug_info
from ...ir.text import SSA_VALUE, VISIBILITY, input_kind, split_strings, strip_locations

__all__ = ["Module", "read_module", "normalize", "collector_paused"]

_FUNC_VISIBILITY = re.compile(rf"^(\s*func\.func) {VISIBILITY} ")
_MLIR_NAME = re.compile(f"({SSA_VALUE})")
_MLIR_RESULT_TAIL = re.compile(r"(?::\d+)?\s*=\s")
# An op with a symbol name that opens a body: func.func @f(...) {, module @m {, ...
_MLIR_SCOPE_START = re.compile(rf"\s*[A-Za-z_][\w$.]*\s+(?:{VISIBILITY}\s+)?@")

# One HLO printer (compiler_ir('hlo')) writes names without "%", so every identifier is a
# candidate and only known names are treated as values. An identifier followed by "(" is an opcode.
_HLO_NAME = re.compile(rf"((?<![\w.\-])%?(?>{NAME})(?!\())")
_NUMERIC_SUFFIX = re.compile(r"\.\d+$")

# A value while parsing: (name, scope, defining line, prefix, family, number); see Module.
_Value = tuple[str, int, int, str, str, int]


@dataclass
class Module:
    """A normalized module: each line as a %-format with one ``%s`` per value reference.

    Value ids index the ``v_*`` lists. ``v_line`` is the defining line, -1 for a name that is
    used but never defined (kept as printed). Fresh names are ``v_prefix + str(number)`` with the
    number drawn from the counter ``(scope, v_family)``. ``keys`` are the lines' content keys and
    ``v_key`` the values' (see the package docstring).
    """

    fmts: list[str]
    refs: list[tuple[int, ...]]
    scopes: list[int]
    keys: list[int]
    v_name: list[str]
    v_scope: list[int]
    v_line: list[int]
    v_prefix: list[str]
    v_family: list[str]
    v_number: list[int]
    v_key: list[int]

    @classmethod
    def build(
        cls,
        fmts: list[str],
        refs: list[tuple[int, ...]],
        scopes: list[int],
        keys: list[int],
        values: list[_Value],
        v_key: list[int],
    ) -> Module:
        columns = [list(c) for c in zip(*values)] if values else [[] for _ in range(6)]
        return cls(fmts, refs, scopes, keys, *columns, v_key)

    def render(self, names: Sequence[str]) -> list[str]:
        get = names.__getitem__
        return [fmt % tuple(map(get, refs)) for fmt, refs in zip(self.fmts, self.refs)]


def read_module(text: str) -> Module:
    """The normalized model of MLIR or XLA HLO text."""
    return _parse_hlo(text) if input_kind(text) == "hlo" else _parse_mlir(text)


def _split_around_strings(line: str) -> tuple[list[str], list[str]]:
    """(texts, names) of a line, as ``_MLIR_NAME.split`` gives them, but leaving strings whole.

    The texts are %-escaped: a string may contain "%".
    """
    texts = [""]
    names: list[str] = []
    for k, piece in enumerate(split_strings(line)):
        if k % 2:
            texts[-1] += piece.replace("%", "%%")
            continue
        parts = _MLIR_NAME.split(piece)
        texts[-1] += parts[0].replace("%", "%%")
        for name, after in zip(parts[1::2], parts[2::2]):
            names.append(name)
            texts.append(after.replace("%", "%%"))
    return texts, names


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


def _parse_mlir(text: str) -> Module:
    if "loc" in text:
        text = strip_locations(text)
    fmts: list[str] = []
    all_refs: list[tuple[int, ...]] = []
    scopes: list[int] = []
    keys: list[int] = []
    values: list[_Value] = []
    vkey: list[int] = []
    split_names = _MLIR_NAME.split
    result_tail = _MLIR_RESULT_TAIL.match
    scope = 0
    local: dict[str, int] = {}
    pending: dict[str, int] = {}  # used before defined (forward references in CFG regions)
    n_result = n_arg = 0
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        lineno = len(fmts)
        if line.endswith("{") and _MLIR_SCOPE_START.match(line):
            line = _FUNC_VISIBILITY.sub(r"\1 ", line)
            scope += 1
            local, pending = {}, {}
            n_result = n_arg = 0
        if '"' in line:
            texts, names = _split_around_strings(line)
        else:
            parts = split_names(line)
            texts, names = parts[0::2], parts[1::2]
            if line.count("%") != len(names):  # a "%" that is not a value name
                texts = [t.replace("%", "%%") for t in texts]
        # Leading result list: "%0 = ", "%0:2 = ", "%a, %b = ".
        lead = 0
        if names and (not texts[0] or texts[0].isspace()):
            k = 1
            while k < len(names) and texts[k] == ", ":
                k += 1
            if result_tail(texts[k]):
                lead = k
        refs: list[int] = []
        defs: list[int] = []
        for pos, tok in enumerate(names):
            # "%x: type" declares an argument, "%x = %init" a region argument (while, for).
            if pos < lead or texts[pos + 1].startswith((": ", " = ")):
                if pos < lead:
                    value = (f"%{n_result}", scope, lineno, "%", "r", n_result)
                    n_result += 1
                else:
                    value = (f"%arg{n_arg}", scope, lineno, "%arg", "a", n_arg)
                    n_arg += 1
                v = pending.pop(tok, -1)
                if v < 0:
                    v = len(values)
                    values.append(value)
                    vkey.append(0)
                else:
                    values[v] = value
                local[tok] = v
                defs.append(pos)
            else:
                v = local.get(tok, -1)
                if v < 0:
                    v = pending.get(tok, -1)
                    if v < 0:
                        v = pending[tok] = len(values)
                        values.append((tok, scope, -1, tok, "", 0))
                        vkey.append(hash(tok))
            refs.append(v)
        fmt = "%s".join(texts)
        ref_tuple = tuple(refs)
        key = hash((fmt, tuple(map(vkey.__getitem__, ref_tuple))))
        for pos in defs:
            vkey[ref_tuple[pos]] = hash((key, pos))
        fmts.append(fmt)
        all_refs.append(ref_tuple)
        scopes.append(scope)
        keys.append(key)
    return Module.build(fmts, all_refs, scopes, keys, values, vkey)


def _parse_hlo(text: str) -> Module:
    text = strip_debug_info(text)
    lines = [s for s in (raw.rstrip() for raw in text.splitlines()) if s and not s.isspace()]
    fmts: list[str] = []
    all_refs: list[tuple[int, ...]] = []
    scopes: list[int] = []
    keys: list[int] = []
    values: list[_Value] = []
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
    return Module.build(fmts, all_refs, scopes, keys, values, vkey)


def normalize(text: str) -> list[str]:
    """Normalized lines of an MLIR or HLO module: no locations or metadata, canonical names.

    See the package docstring for the rules. Two texts that differ only in value names,
    numbering, locations or whitespace normalize to the same list.
    """
    with collector_paused():
        mod = read_module(text)
        return mod.render(mod.v_name)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Parsing allocates ~10^5 small objects that never form cycles; in a process that has
    imported jax each automatic collection they trigger walks a very large heap, which can take
    longer than the diff itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()