"""MLIR text as a ``Module`` (the rules are in the package docstring).

The text is read in bulk, not line by line: string literals are set aside (a name in a string is
not a name), one regex pass over the whole text finds the value names, and whether a name defines
or uses a value is decided once per distinct line format -- it depends only on the text around
the names, and a 20,000-line module has a few dozen formats. In a function the value ids then
follow from one dict from names to definitions (a name that sibling regions define again is
followed name by name), and only the content keys (a hash over the use-def graph) take a loop
over the lines. A function with a forward reference (CFG blocks) or a name it never defines is
read line by line.
"""
from __future__ import annotations

import re
from collections import Counter
from itertools import accumulate, chain, compress, islice, pairwise, repeat
from operator import le, methodcaller, sub

from ..text import SSA_VALUE, VISIBILITY, strip_locations
from .model import Module, Value

__all__ = ["read_mlir"]

_FUNC_VISIBILITY = re.compile(rf"^(\s*func\.func) {VISIBILITY} ")
_NAME = re.compile(f"%({SSA_VALUE[1:]})")
_NAME_ASCII = re.compile(f"%({SSA_VALUE[1:]})", re.ASCII)  # the same on ASCII text, and faster
# A string literal as ``ir.text.split_strings`` reads one: to the closing quote, a backslash
# escaping the next character, or to the end of the line if it is left open.
_STRING = re.compile(r'("[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|\\?(?=\n|\Z)))')
_FORMAT_PIECE = re.compile(r"%%|%s|[^%]+")
_RESULT_TAIL = re.compile(r"(?::\d+)?\s*=\s")
# An op with a symbol name that opens a body: func.func @f(...) {, module @m {, ...
_SCOPE_START = re.compile(rf"\s*[A-Za-z_][\w$.]*\s+(?:{VISIBILITY}\s+)?@")

# What each name of a line does: uses a value, defines an op result, declares an argument.
_USE, _RESULT, _ARG = 0, 1, 2


def read_mlir(text: str, *, bulk: bool = True) -> Module:
    """The ``Module`` of MLIR text; ``bulk=False`` reads every function line by line (the same
    module, more slowly: what the bulk reading is checked against)."""
    if "loc" in text:
        text = strip_locations(text)
    fmts, shaped, names = _formats(text)
    # (The same tests on a format as on its line: no name or string can be part of a match.)
    opening = compress(range(len(fmts)), map(str.endswith, fmts, repeat("{")))
    starts = [k for k in opening if _SCOPE_START.match(fmts[k])]
    for k in starts:
        fmts[k] = _FUNC_VISIBILITY.sub(r"\1 ", fmts[k])
        if shaped is not fmts:
            shaped[k] = _FUNC_VISIBILITY.sub(r"\1 ", shaped[k])
    kinds_of = {fmt: _kinds(_format_texts(fmt)) for fmt in set(shaped)}
    line_kinds = list(map(kinds_of.__getitem__, shaped))
    counts = list(map(len, line_kinds))
    offsets = list(accumulate(counts, initial=0))
    out = _Out(fmts, shaped, names, kinds_of)
    bounds = [0, *starts, len(fmts)]
    for scope, (l0, l1) in enumerate(pairwise(bounds)):
        if l0 == l1:
            continue  # the first line starts a scope: there is no scope 0
        t0, t1 = offsets[l0], offsets[l1]
        kinds = list(chain.from_iterable(line_kinds[l0:l1]))
        if not (bulk and out.scope_in_bulk(scope, l0, l1, t0, t1, counts[l0:l1], kinds)):
            out.scope_by_lines(scope, l0, l1, t0, counts[l0:l1])
    return Module(fmts, out.refs, out.scopes, out.keys, *out.columns, out.vkey, flat_refs=out.flat)


def _formats(text: str) -> tuple[list[str], list[str], list[str]]:
    """(each non-blank line as a %-format, the formats that decide definitions, every value name).

    Whitespace at line ends goes; a "%" that is not a value name is written "%%". The second list
    has each string literal as a mark (it is the first list if there are none): lines that
    differ only in strings share it.
    """
    joined = _joined_lines(text)  # lines hold no "\n" (splitlines cut at every one), nor do strings
    if not joined:
        return [], [], []
    literals: list[str] = []
    mark = ""
    if '"' in joined:
        mark = _unused_char(joined)
        parts = _STRING.split(joined)
        literals = parts[1::2]
        joined = mark.join(parts[0::2])
    names, texts = _split_names(joined)
    masked = "%s".join(texts)
    del texts
    shaped = masked.split("\n")
    if not literals:
        return shaped, shaped, names
    fmts = shaped.copy()
    escaped = [s.replace("%", "%%") if "%" in s else s for s in literals]
    at = 0
    for k in compress(range(len(shaped)), map(methodcaller("__contains__", mark), shaped)):
        pieces = shaped[k].split(mark)
        fmts[k] = "".join([p for pair in zip(pieces, escaped[at : at + len(pieces) - 1]) for p in pair]) + pieces[-1]
        at += len(pieces) - 1
    return fmts, shaped, names


def _split_names(joined: str) -> tuple[list[str], list[str]]:
    """(the value names, without their "%", the texts around them with "%" written "%%")."""
    parts = (_NAME_ASCII if joined.isascii() else _NAME).split(joined)
    texts = parts[0::2]
    if joined.count("%") != len(texts) - 1:  # a "%" that is not a value name
        texts = [t.replace("%", "%%") if "%" in t else t for t in texts]
    return parts[1::2], texts


def _joined_lines(text: str) -> str:
    """``"\n".join`` of the non-blank lines of ``text`` (as ``splitlines`` cuts them), each without
    its trailing whitespace."""
    if not text.isascii() or any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x1f"):
        return "\n".join([s for s in map(str.rstrip, text.splitlines()) if s])
    # Only "\n" breaks lines, and only " " and "\t" are stripped: most printed IR needs no change.
    if " \n" in text or "\t\n" in text or "\n\n" in text or text.startswith("\n") or text.endswith((" ", "\t")):
        return "\n".join([s for s in map(methodcaller("rstrip", " \t"), text.split("\n")) if s])
    return text.removesuffix("\n")


def _unused_char(text: str) -> str:
    """A character that ``text`` does not hold, and that is neither whitespace nor part of a name."""
    for code in (*range(9), *range(14, 28), *range(0xE000, 0xF900)):
        if chr(code) not in text:
            return chr(code)
    raise ValueError("no character is left to mark the strings of this text")


def _format_texts(fmt: str) -> list[str]:
    """The texts around the ``%s`` of a line format (``%%`` is a literal "%")."""
    if "%%" not in fmt:
        return fmt.split("%s")
    texts = [""]
    for piece in _FORMAT_PIECE.findall(fmt):
        if piece == "%s":
            texts.append("")
        else:
            texts[-1] += piece
    return texts


def _kinds(texts: list[str]) -> tuple[int, ...]:
    """What each name of a line does (``_USE``, ``_RESULT``, ``_ARG``), from the texts around them."""
    n_names = len(texts) - 1
    lead = 0
    # Leading result list: "%0 = ", "%0:2 = ", "%a, %b = ".
    if n_names and (not texts[0] or texts[0].isspace()):
        k = 1
        while k < n_names and texts[k] == ", ":
            k += 1
        if _RESULT_TAIL.match(texts[k]):
            lead = k
    # "%x: type" declares an argument, "%x = %init" a region argument (while, for).
    rest = (_ARG if texts[pos + 1].startswith((": ", " = ")) else _USE for pos in range(lead, n_names))
    return (_RESULT,) * lead + tuple(rest)


_FIRST = (0,)  # the positions of the names that define values, when it is just the first one
_NAMES: dict[str, list[str]] = {}  # "%0", "%1", ...: the same in every module


def _positions(kinds: tuple[int, ...]) -> tuple[int, ...]:
    positions = tuple(compress(range(len(kinds)), kinds))
    return _FIRST if positions == _FIRST else positions


def _follow_redefinitions(
    toks: list[str], kinds: list[int], def_names: list[str], dpos: list[int], base: int, ids: list[int]
) -> bool:
    """Point each use of a name defined more than once (sibling regions reuse names) at the value
    defined under it last before the use; False if there is none."""
    counts = Counter(def_names)
    again = set(compress(counts, map((1).__lt__, counts.values())))
    own = {dpos[k]: base + k for k in compress(range(len(dpos)), map(again.__contains__, def_names))}
    current: dict[str, int] = {}
    for t in compress(range(len(toks)), map(again.__contains__, toks)):
        if kinds[t]:
            current[toks[t]] = ids[t] = own[t]
        elif (v := current.get(toks[t])) is not None:
            ids[t] = v
        else:
            return False
    return True


def _def_lines(l0: int, n_defs: list[int]) -> list[int]:
    """The line of each value defined in lines ``l0, l0 + 1, ...``, which define ``n_defs`` each."""
    lines = list(compress(range(l0, l0 + len(n_defs)), n_defs))
    multi = list(compress(range(len(n_defs)), map((1).__lt__, n_defs)))
    if not multi:
        return lines
    # Lines that define more than one value (a function's arguments, "%a, %b = ..."): repeat them.
    before = accumulate(map(bool, n_defs), initial=0)  # lines with values before each line
    at = list(islice(before, len(n_defs)))
    parts, done = [], 0
    for k in multi:
        parts.append(lines[done : at[k]])
        parts.append([l0 + k] * n_defs[k])
        done = at[k] + 1
    parts.append(lines[done:])
    return list(chain.from_iterable(parts))


def _canonical_names(prefix: str, count: int) -> list[str]:
    """``[prefix + "0", prefix + "1", ...]``, ``count`` of them."""
    known = _NAMES.setdefault(prefix, [])
    if len(known) < count:
        known += map(f"{prefix}{{}}".format, range(len(known), count))
    return known[:count]


class _Out:
    """The module being built: per line refs, scope and key; per value the ``Module`` columns."""

    def __init__(self, fmts: list[str], shaped: list[str], names: list[str], kinds_of: dict) -> None:
        self.fmts, self.shaped, self.names, self.kinds_of = fmts, shaped, names, kinds_of
        self.defs_of = {fmt: _positions(k) for fmt, k in kinds_of.items()}
        self.n_defs = {fmt: len(k) for fmt, k in self.defs_of.items()}
        self.refs: list[tuple[int, ...]] = []
        self.flat: list[int] = []  # the same, in one list
        self.scopes: list[int] = []
        self.keys: list[int] = []
        self.columns: tuple[list, ...] = ([], [], [], [], [], [])  # name, scope, line, prefix, family, number
        self.vkey: list[int] = []

    def scope_in_bulk(
        self, scope: int, l0: int, l1: int, t0: int, t1: int, counts: list[int], kinds: list[int]
    ) -> bool:
        """Read lines ``l0:l1`` (names ``t0:t1``), one scope; False, having read nothing, if a name
        in it is used before any value is defined under it."""
        found = self._bulk_ids(t0, t1, kinds)
        if found is None:
            return False
        ids, dpos = found
        shaped = self.shaped[l0:l1]
        self._add_values(scope, l0, shaped, list(map(kinds.__getitem__, dpos)))
        self._add_lines(scope, l0, l1, ids, counts, shaped)
        return True

    def _bulk_ids(self, t0: int, t1: int, kinds: list[int]) -> tuple[list[int], list[int]] | None:
        """The value id of each name ``t0:t1`` (of values to be added from ``len(self.vkey)`` on) and
        the offsets of the names that define them; None if a name is never defined, or used before
        its value is defined."""
        toks = self.names[t0:t1]
        n = t1 - t0
        dpos = list(compress(range(n), kinds))  # offsets of the names that define values
        def_names = list(map(toks.__getitem__, dpos))
        base, nd = len(self.vkey), len(dpos)
        id_of = dict(zip(def_names, range(base, base + nd)))
        try:
            ids = list(map(id_of.__getitem__, toks))
        except KeyError:  # a name never defined
            return None
        if len(id_of) != nd and not _follow_redefinitions(toks, kinds, def_names, dpos, base, ids):
            return None
        # No forward reference: every name's value is defined at that name or before it.
        local = map(sub, ids, repeat(base)) if base else ids
        if not all(map(le, map(dpos.__getitem__, local), range(n))):
            return None
        return ids, dpos

    def _add_values(self, scope: int, l0: int, shaped: list[str], dkinds: list[int]) -> None:
        """The scope's values, in order of definition (``dkinds``: what each definition is), added to
        the columns with their canonical names and a content key still to come."""
        nd = len(dkinds)
        n_args = nd - dkinds.count(_RESULT)
        name, v_scope, line, prefix, family, number = self.columns
        line += _def_lines(l0, list(map(self.n_defs.__getitem__, shaped)))
        v_scope.extend(repeat(scope, nd))
        if dkinds[:n_args].count(_ARG) == n_args:  # the arguments come first, if any: a function
            name += _canonical_names("%arg", n_args)
            name += _canonical_names("%", nd - n_args)
            prefix.extend(chain(repeat("%arg", n_args), repeat("%", nd - n_args)))
            family.extend(chain(repeat("a", n_args), repeat("r", nd - n_args)))
            number.extend(chain(range(n_args), range(nd - n_args)))
        else:
            counters = [0, 0, 0]
            for kind in dkinds:
                k = counters[kind]
                counters[kind] = k + 1
                name.append(f"%{k}" if kind == _RESULT else f"%arg{k}")
                prefix.append("%" if kind == _RESULT else "%arg")
                family.append("r" if kind == _RESULT else "a")
                number.append(k)
        self.vkey.extend(repeat(0, nd))

    def _add_lines(self, scope: int, l0: int, l1: int, ids: list[int], counts: list[int], shaped: list[str]) -> None:
        """Each line's refs, then the content keys: a line's key hashes its format with the keys of
        its operands' definitions, so it is known once those lines' keys are."""
        vkey = self.vkey
        refs = list(map(tuple, map(islice, repeat(iter(ids)), counts)))
        self.refs += refs
        self.flat += ids
        self.scopes.extend(repeat(scope, l1 - l0))
        add_key = self.keys.append
        vk = vkey.__getitem__
        for fmt, r, dps in zip(self.fmts[l0:l1], refs, map(self.defs_of.__getitem__, shaped)):
            key = hash((fmt, *map(vk, r)))
            if dps is _FIRST:
                vkey[r[0]] = key  # (as hash((key, 0)) would be: one value per line and position)
            else:
                for pos in dps:
                    vkey[r[pos]] = hash((key, pos))
            add_key(key)

    def scope_by_lines(self, scope: int, l0: int, l1: int, t0: int, counts: list[int]) -> None:
        """Read lines ``l0:l1`` one by one: a name means the latest value defined under it; one
        used before any is defined gets its value at that first use, and keeps its printed name
        if it is never defined."""
        names, fmts, shaped, kinds_of = self.names, self.fmts, self.shaped, self.kinds_of
        base = len(self.vkey)
        values: list[Value] = []
        vkey: list[int] = []
        local: dict[str, int] = {}
        pending: dict[str, int] = {}  # used before defined (forward references in CFG regions)
        counters = [0, 0, 0]
        at = t0
        for lineno, count in zip(range(l0, l1), counts):
            toks = names[at : at + count]
            at += count
            kinds = kinds_of[shaped[lineno]]
            refs: list[int] = []
            for tok, kind in zip(toks, kinds):
                if kind:
                    k = counters[kind]
                    counters[kind] = k + 1
                    if kind == _RESULT:
                        value = (f"%{k}", scope, lineno, "%", "r", k)
                    else:
                        value = (f"%arg{k}", scope, lineno, "%arg", "a", k)
                    v = pending.pop(tok, -1)
                    if v < 0:
                        v = base + len(values)
                        values.append(value)
                        vkey.append(0)
                    else:
                        values[v - base] = value
                    local[tok] = v
                else:
                    v = local.get(tok, -1)
                    if v < 0:
                        v = pending.get(tok, -1)
                        if v < 0:
                            v = pending[tok] = base + len(values)
                            values.append((f"%{tok}", scope, -1, f"%{tok}", "", 0))
                            vkey.append(hash(f"%{tok}"))
                refs.append(v)
            ref_tuple = tuple(refs)
            key = hash((fmts[lineno], *(vkey[v - base] for v in ref_tuple)))
            dps = self.defs_of[shaped[lineno]]
            if dps is _FIRST:  # the keys as scope_in_bulk makes them
                vkey[ref_tuple[0] - base] = key
            else:
                for pos in dps:
                    vkey[ref_tuple[pos] - base] = hash((key, pos))
            self.refs.append(ref_tuple)
            self.flat += ref_tuple
            self.scopes.append(scope)
            self.keys.append(key)
        for column, part in zip(self.columns, zip(*values)):
            column.extend(part)
        self.vkey += vkey
