"""Structural diff between two versions of a compiler IR module.

Reads MLIR text (StableHLO and friends, as printed by jax and Enzyme-JaX) and XLA HLO text (as
printed by ``Compiled.as_text()`` or ``compiler_ir('hlo').as_hlo_text()``). It is meant for reading
what a pass did: locations and value names are noise, ops are the signal.

Normalization (:func:`normalize`)
    Drops MLIR locations (``loc(...)`` anywhere, ``#loc... = ...`` alias lines), HLO
    ``metadata={...}`` and the debug-info sections it points into (``FileNames`` ...
    ``StackFrames``), the visibility keyword of ``func.func`` (Enzyme's pass driver makes ``@main``
    private as a side effect of running any pipeline, so keeping it would put a false change into
    every diff), trailing whitespace and blank lines. HLO computation headers are reduced to
    ``[ENTRY] %name {`` (the signature repeats the parameter instructions and the root type, and
    ``as_hlo_text()`` does not print it) and every HLO name gets the ``%`` sigil (which that printer
    leaves out). Values are then renamed per function / HLO computation in order of definition:
    MLIR op results ``%0, %1, ...`` (a result group keeps its ``:2`` and ``#1`` suffixes), function,
    block and region arguments ``%arg0, ...``; HLO instructions ``%<opcode>.<n>``; HLO computations
    ``%<base>.<n>`` (``fused_computation.3`` -> ``fused_computation.0`` if it comes first). Symbols
    (``@main``) are kept. A pass that only renames or renumbers values normalizes to the same lines.

Alignment
    Positional names are stable only until the first inserted or deleted op; after that every later
    value is renumbered. So lines are not aligned by their text but in three rounds of keys that do
    not depend on names, each round working only inside the gaps the previous one left:

    1. *content key* -- a hash of the line in which each operand is replaced by the content key of
       its defining op (a Merkle hash over the use-def graph). It does not depend on names or on
       position, so removing ``%3`` leaves the keys of ``%4 .. %100`` alone. Aligned with patience
       diff (anchors on keys that are unique in both ranges, recursing between them): ops that a
       pass left alone, with inputs it left alone, anchor the alignment.
    2. *mapped key* -- the line with each operand named by the value correspondence found so far
       (unknown on both sides counts as equal). This re-finds the users of a changed op, whose
       content keys all changed, and chooses between equal-looking candidates (two ``x*y`` before
       ``cse``) by who uses them. Patience, then Myers' O(ND) diff.
    3. *template* -- the line with every value name blanked. Patience, then Myers.

    Every aligned pair of lines pairs up the values they define, and in rounds 1 and 2 also the
    values they use (their operands are equal in content, resp. consistent), giving a one-to-one map
    from after-values to before-values within paired functions (paired by where most of their
    unique content keys went). Work proceeds top down, so a value is usually paired by its
    definition before its users are looked at, and a pair of lines whose definitions contradict
    the map is not aligned. Myers gives up past a few hundred edits in one gap, leaving it to the
    next round or to delete + insert, so a rewrite of a whole module stays fast.

Naming and comparison
    The after module is then printed with each value named after its before counterpart; values
    without one get fresh numbers past the before module's. So ``Diff.before`` is ``normalize()`` of
    the before text and ``Diff.after`` is the after text normalized *onto the before names*. Aligned
    lines whose text differs are changed ("replace"), typically a user that now reads another
    value; that is the only ripple a removed op leaves.

Moves
    Unaligned lines are paired first by content key -- the operand-name-insensitive key: an op that
    moved is still the same op on the same inputs, although renumbering changed every name in its
    line -- which also pairs the values they define, and then by exact printed text. A pair whose
    printed lines are equal is reported as a move (kind ``"move"``), not as a delete plus an insert.
    Lines with no identifier in them (a bare ``}``) are never moves.
"""

from __future__ import annotations

import bisect
import difflib
import gc
import html
import re
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Change", "ChangeKind", "Diff", "diff_texts", "normalize"]

ChangeKind = Literal["delete", "insert", "replace", "move"]


@dataclass(frozen=True)
class Change:
    """One change between the normalized lines of ``Diff.before`` and ``Diff.after``.

    Ranges are 0-based, half-open line indices. A ``"delete"`` has an empty ``after`` range (and an
    ``"insert"`` an empty ``before`` range) placed where the lines were removed (added). A
    ``"move"`` gives where the lines were (``before``) and where they are now (``after``).
    """

    kind: ChangeKind
    before: range
    after: range


# --------------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------------

_STRING = r'"(?:[^"\\\n]|\\.)*"'


def _nested(open_: str, close: str, depth: int) -> str:
    """Regex for the inside of a bracket pair, allowing ``depth`` levels of nested pairs."""
    o, c = re.escape(open_), re.escape(close)
    body = rf'(?:[^{o}{c}"\n]|{_STRING})*'
    for _ in range(depth):
        body = rf'(?:[^{o}{c}"\n]|{_STRING}|{o}{body}{c})*'
    return body


# The printer ends almost every line with " loc(#locN)"; one pass over the text removes those
# (a string cannot end a line, so "$" keeps this out of string literals).
_TRAILING_LOC_ALIAS = re.compile(r" loc\(#loc\d*\)$", re.M)
# Other locations, line by line. Strings are matched first and put back by the replacement, so a
# "loc(" inside a string survives; what this leaves (deeper nesting) _strip_balanced_locs removes.
_LOC = re.compile(rf'({_STRING})|[ \t]*(?<![\w.$#])loc\({_nested("(", ")", 3)}\)')
_LOC_START = re.compile(rf'({_STRING})|[ \t]*(?<![\w.$#])loc\(')
_PAREN_OR_STRING = re.compile(rf'{_STRING}|[()]')
_FUNC_VISIBILITY = re.compile(r"^(\s*func\.func) (?:public|private|nested) ")

_HLO_METADATA = re.compile(rf'({_STRING})|,\s*metadata=\{{{_nested("{", "}", 2)}\}}')
_HLO_DEBUG_SECTION = re.compile(
    r"^(?:FileNames|FunctionNames|FileLocations|StackFrames)\n(?:[ \t]*\d+ .*(?:\n|$))*", re.M
)

_MLIR_TOKEN = re.compile(rf"({_STRING}|%[\w$.\-]+)")
_MLIR_NAME = re.compile(r"(%[\w$.\-]+)")  # same split, faster, for the many lines with no string
_MLIR_RESULT_TAIL = re.compile(r"(?::\d+)?\s*=\s")
# An op with a symbol name that opens a body: func.func @f(...) {, module @m {, ...
_MLIR_SCOPE_START = re.compile(r"\s*[A-Za-z_][\w$.]*\s+(?:(?:public|private|nested)\s+)?@")

# One HLO printer (compiler_ir('hlo')) writes names without "%", so every identifier is a
# candidate and only known names are treated as values. An identifier followed by "(" is an opcode.
_HLO_TOKEN = re.compile(rf"({_STRING}|(?<![\w.\-])%?[A-Za-z_][\w.\-]*+(?!\())")
_HLO_HEADER = re.compile(r"(ENTRY\s+)?%?([A-Za-z_][\w.\-]*)")
_HLO_DEF = re.compile(r"\s+(?:ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=\s.*?\s([a-z][a-z0-9\-]*)\(")
_NUMERIC_SUFFIX = re.compile(r"\.\d+$")


# A value while parsing: (name, scope, defining line, prefix, family, number); see _Module.
_Value = tuple[str, int, int, str, str, int]


@dataclass
class _Module:
    """A normalized module: each line as a %-format with one ``%s`` per value reference.

    Value ids index the ``v_*`` lists. ``v_line`` is the defining line, -1 for a name that is
    used but never defined (kept as printed). Fresh names are ``v_prefix + str(number)`` with the
    number drawn from the counter ``(scope, v_family)``. ``keys`` are the lines' content keys and
    ``v_key`` the values' (see the module docstring).
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
    ) -> _Module:
        columns = [list(c) for c in zip(*values)] if values else [[] for _ in range(6)]
        return cls(fmts, refs, scopes, keys, *columns, v_key)

    def render(self, names: Sequence[str]) -> list[str]:
        get = names.__getitem__
        return [fmt % tuple(map(get, refs)) for fmt, refs in zip(self.fmts, self.refs)]


def _strip_balanced_locs(text: str) -> str:
    """Remove ``loc(...)`` of any nesting depth; slow path for what ``_LOC`` cannot match."""
    pieces: list[str] = []
    pos = 0
    for m in _LOC_START.finditer(text):
        if m.group(1) is not None or m.start() < pos:
            continue
        depth = 1
        for tok in _PAREN_OR_STRING.finditer(text, m.end()):
            if tok.group() == "(":
                depth += 1
            elif tok.group() == ")":
                depth -= 1
            if depth == 0:
                end = tok.end()
                break
        else:
            continue  # unbalanced: not a location we understand, leave the text as it is
        pieces.append(text[pos : m.start()])
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def _is_hlo(text: str) -> bool:
    return text.lstrip().startswith("HloModule")


def _parse(text: str) -> _Module:
    return _parse_hlo(text) if _is_hlo(text) else _parse_mlir(text)


def _strip_locs(line: str) -> str:
    line = _LOC.sub(r"\1", line)
    return _strip_balanced_locs(line) if "loc(" in line else line


def _split_around_strings(line: str) -> tuple[list[str], list[str]]:
    """(texts, names) of a line, as ``_MLIR_NAME.split`` gives them, but leaving strings whole.

    The texts are %-escaped: a string may contain "%".
    """
    texts = [""]
    names: list[str] = []
    parts = _MLIR_TOKEN.split(line)
    for k, part in enumerate(parts):
        if k % 2 and part[0] == "%":
            names.append(part)
            texts.append("")
        else:
            texts[-1] += part.replace("%", "%%")
    return texts, names


def _parse_mlir(text: str) -> _Module:
    if "loc(" in text:
        text = _TRAILING_LOC_ALIAS.sub("", text)
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
        if raw.startswith("#loc"):
            continue  # location alias definitions
        if "loc(" in raw:
            raw = _strip_locs(raw)
        line = raw.rstrip()
        if not line or line.isspace():
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
    return _Module.build(fmts, all_refs, scopes, keys, values, vkey)


def _parse_hlo(text: str) -> _Module:
    text = _HLO_METADATA.sub(r"\1", text)
    text = _HLO_DEBUG_SECTION.sub("", text)
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
        if line.endswith("{") and not line[0].isspace() and not line.startswith("HloModule"):
            m = _HLO_HEADER.match(line)
            if m is None:
                continue
            # The signature repeats the parameter instructions and the ROOT type, and one of
            # XLA's printers leaves it out, so a header is normalized to its name.
            entry, name = m.groups()
            lines[lineno] = f"{'ENTRY ' if entry else ''}%{name} {{"
            headers[lineno] = name
            base = _NUMERIC_SUFFIX.sub("", name)
            number = per_base[base]
            per_base[base] += 1
            computations[name] = len(values)
            values.append((f"{base}.{number}", 0, lineno, f"{base}.", f"c:{base}", number))
    vkey = [0] * len(values)

    split = _HLO_TOKEN.split
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
                if m := _HLO_DEF.match(lines[inner]):
                    opcode = m.group(2)
                    local[m.group(1)] = defined_on[inner] = len(values)
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
    return _Module.build(fmts, all_refs, scopes, keys, values, vkey)


def normalize(text: str) -> list[str]:
    """Normalized lines of an MLIR or HLO module: no locations or metadata, canonical names.

    See the module docstring for the rules. Two texts that differ only in value names,
    numbering, locations or whitespace normalize to the same list.
    """
    with _cycle_collector_paused():
        mod = _parse(text)
        return mod.render(mod.v_name)


# --------------------------------------------------------------------------------------------
# Alignment
# --------------------------------------------------------------------------------------------

_CONTENT, _MAPPED, _TEMPLATE = 1, 2, 3
# Myers is O((N+M)·D): cap D, and (N+M)·D, so that one pathological gap cannot stall the diff.
_MYERS_MAX_EDITS = 400
_MYERS_BUDGET = 2_000_000


def _unique_lcs(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Patience anchors: the longest increasing run of keys occurring once in ``a`` and ``b``."""
    ca, cb = Counter(a), Counter(b)
    unique = {k for k, c in ca.items() if c == 1 and cb.get(k) == 1}
    if not unique:
        return []
    pos_a = {k: i for i, k in enumerate(a) if k in unique}
    cand = [(pos_a[k], j) for j, k in enumerate(b) if k in unique]
    tails: list[int] = []  # smallest a-index ending an increasing run of each length
    tail_at: list[int] = []  # index into cand of that run's end
    back = [-1] * len(cand)
    for idx, (i, _) in enumerate(cand):
        p = bisect.bisect_left(tails, i)
        if p == len(tails):
            tails.append(i)
            tail_at.append(idx)
        else:
            tails[p] = i
            tail_at[p] = idx
        back[idx] = tail_at[p - 1] if p else -1
    out = []
    idx = tail_at[-1]
    while idx >= 0:
        out.append(cand[idx])
        idx = back[idx]
    out.reverse()
    return out


def _myers(
    a: Sequence[Hashable], b: Sequence[Hashable], max_d: int
) -> list[tuple[int, int]] | None:
    """Matched index pairs of a shortest edit script; None if it takes more than ``max_d`` edits."""
    n, m = len(a), len(b)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    snapshots: list[list[int]] = []  # v after step d, diagonals -d..d
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[off + k] = x
            if x >= n and y >= m:
                return _myers_path(snapshots, d, k, x)
        snapshots.append(v[off - d : off + d + 1])
    return None


def _myers_path(snapshots: list[list[int]], d: int, k: int, x: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    while True:
        if d == 0:
            start = 0
        else:
            prev = snapshots[d - 1]  # index k' -> prev[k' + d - 1]
            if k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1]):
                k_prev = k + 1
                start = prev[k_prev + d - 1]
            else:
                k_prev = k - 1
                start = prev[k_prev + d - 1] + 1
        for xx in range(x - 1, start - 1, -1):
            pairs.append((xx, xx - k))
        if d == 0:
            break
        x = snapshots[d - 1][k_prev + d - 1]
        k = k_prev
        d -= 1
    pairs.reverse()
    return pairs


class _Aligner:
    """Aligns the lines of two modules and builds the after -> before value map on the way."""

    def __init__(self, before: _Module, after: _Module) -> None:
        self.b, self.a = before, after
        self.amap = [-1] * len(after.v_name)
        self.taken = [False] * len(before.v_name)
        self.pairs: list[tuple[int, int]] = []
        self.scope_pair: dict[int, int] = {0: 0}
        self.scope_taken: set[int] = {0}
        self._pair_scopes()

    def _pair_scopes(self) -> None:
        """Pair functions by the majority of their lines with a unique, shared content key."""
        kb, ka = self.b.keys, self.a.keys
        cb, ca = Counter(kb), Counter(ka)
        where_b = {k: i for i, k in enumerate(kb) if cb[k] == 1 and ca.get(k) == 1}
        votes: Counter[tuple[int, int]] = Counter()
        for j, k in enumerate(ka):
            i = where_b.get(k)
            if i is not None:
                votes[(self.a.scopes[j], self.b.scopes[i])] += 1
        for (sa, sb), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if sa not in self.scope_pair and sb not in self.scope_taken:
                self.scope_pair[sa] = sb
                self.scope_taken.add(sb)

    def map_value(self, va: int, vb: int) -> None:
        a, b = self.a, self.b
        if self.amap[va] >= 0 or self.taken[vb] or a.v_line[va] < 0 or b.v_line[vb] < 0:
            return
        if a.v_prefix[va] != b.v_prefix[vb]:
            return  # keep names honest: an "add" is never printed under a "multiply"'s name
        sa, sb = a.v_scope[va], b.v_scope[vb]
        paired = self.scope_pair.get(sa)
        if paired is None:
            if sb in self.scope_taken:
                return
            self.scope_pair[sa] = sb
            self.scope_taken.add(sb)
        elif paired != sb:
            return
        self.amap[va] = vb
        self.taken[vb] = True

    def map_line(self, i: int, j: int, *, uses: bool) -> None:
        """Pair the values of aligned lines: always what they define, their operands if ``uses``."""
        a_line, b_line = self.a.v_line, self.b.v_line
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if uses or (a_line[va] == j and b_line[vb] == i):
                self.map_value(va, vb)

    def _consistent(self, i: int, j: int) -> bool:
        """False if the values the two lines define are already paired with other values."""
        a_line, b_line, amap, taken = self.a.v_line, self.b.v_line, self.amap, self.taken
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if a_line[va] == j and b_line[vb] == i:
                mapped = amap[va]
                if mapped != vb and (mapped >= 0 or taken[vb]):
                    return False
        return True

    def _match(self, level: int, i: int, j: int) -> bool:
        """Align lines ``i`` and ``j`` unless that contradicts the value pairing found so far."""
        if not self._consistent(i, j):
            return False
        self.pairs.append((i, j))
        self.map_line(i, j, uses=level != _TEMPLATE)
        return True

    def _keys(self, level: int, i0: int, i1: int, j0: int, j1: int) -> tuple[list, list]:
        b, a = self.b, self.a
        if level == _CONTENT:
            return b.keys[i0:i1], a.keys[j0:j1]
        if level == _TEMPLATE:
            return b.fmts[i0:i1], a.fmts[j0:j1]
        taken, amap = self.taken, self.amap
        kb = [
            (b.fmts[i], tuple([v if taken[v] else -1 for v in b.refs[i]]))
            if b.refs[i]
            else b.fmts[i]
            for i in range(i0, i1)
        ]
        ka = [
            (a.fmts[j], tuple([amap[v] for v in a.refs[j]])) if a.refs[j] else a.fmts[j]
            for j in range(j0, j1)
        ]
        return kb, ka

    def run(self) -> list[tuple[int, int]]:
        # A stack, popped left to right, so values are mapped roughly in definition order.
        stack = [(_CONTENT, 0, len(self.b.fmts), 0, len(self.a.fmts))]
        while stack:
            self._align_range(*stack.pop(), stack)
        self.pairs.sort()
        return self.pairs

    def _align_range(self, level: int, i0: int, i1: int, j0: int, j1: int, stack: list) -> None:
        kb, ka = self._keys(level, i0, i1, j0, j1)
        n, m = i1 - i0, j1 - j0
        p = 0
        while p < n and p < m and kb[p] == ka[p] and self._match(level, i0 + p, j0 + p):
            p += 1
        s = 0
        while s < n - p and s < m - p and kb[n - 1 - s] == ka[m - 1 - s]:
            if not self._consistent(i1 - 1 - s, j1 - 1 - s):
                break
            s += 1
        for t in range(s, 0, -1):
            self._match(level, i1 - t, j1 - t)
        i0, i1, j0, j1 = i0 + p, i1 - s, j0 + p, j1 - s
        if i0 == i1 or j0 == j1:
            return
        kb, ka = kb[p : n - s], ka[p : m - s]
        anchors = _unique_lcs(kb, ka)
        between = level  # the round that handles the gaps between anchors
        if not anchors and level != _CONTENT:
            # Myers' matches are final for this key; what lies between them goes one round down.
            max_d = min(_MYERS_MAX_EDITS, _MYERS_BUDGET // (len(kb) + len(ka)))
            anchors = _myers(kb, ka, max_d) or []
            between = level + 1
        anchors = [(x, y) for x, y in anchors if self._match(level, i0 + x, j0 + y)]
        if not anchors:
            if level < _TEMPLATE:
                stack.append((level + 1, i0, i1, j0, j1))
            return
        gaps = []
        pi, pj = i0, j0
        for x, y in anchors + [(i1 - i0, j1 - j0)]:
            if pi < i0 + x and pj < j0 + y and between <= _TEMPLATE:
                gaps.append((between, pi, i0 + x, pj, j0 + y))
            pi, pj = i0 + x + 1, j0 + y + 1
        stack.extend(reversed(gaps))


# --------------------------------------------------------------------------------------------
# The diff
# --------------------------------------------------------------------------------------------

# Script step tags: aligned and equal / aligned but changed / deleted / inserted / moved away from
# here / moved to here.
_EQ, _CHG, _DEL, _INS, _OUT, _IN = "=", "~", "-", "+", "<", ">"
_HAS_WORD = re.compile(r"\w")
_MLIR_OP_NAME = re.compile(
    r'\s*(%[^\s=,]+(?:,\s*%[^\s=,]+)*\s*=\s*)?"?([A-Za-z_][\w$]*(?:\.[\w$]+)*)"?(.?)'
)
_HLO_OP_NAME = re.compile(r"\s+(?:ROOT\s+)?%?[\w.\-]+\s*=\s.*?\s([a-z][a-z0-9\-]*)\(")
_TOKEN = re.compile(r"%?[\w.$#\-]+|\s+|.")

_CSS = """
.wb-diff table{border-collapse:collapse;font-family:monospace;font-size:12px}
.wb-diff th{text-align:left;padding:2px 6px;border-bottom:1px solid #999}
.wb-diff td{padding:0 6px;white-space:pre;vertical-align:top}
.wb-diff td.wb-diff-ln{color:#888;text-align:right;user-select:none}
.wb-diff tr.wb-diff-deleted td.wb-diff-code{background:#fdd}
.wb-diff tr.wb-diff-inserted td.wb-diff-code{background:#dfd}
.wb-diff tr.wb-diff-changed td.wb-diff-code{background:#ffc}
.wb-diff tr.wb-diff-moved td.wb-diff-code{background:#def}
.wb-diff tr.wb-diff-skip td{color:#888;font-style:italic}
.wb-diff span.wb-diff-tok{background:#fb6}
"""


def _op_name(line: str, hlo: bool) -> str | None:
    if hlo:
        m = _HLO_OP_NAME.match(line)
        return m.group(1) if m else None
    m = _MLIR_OP_NAME.match(line)
    if not m:
        return None
    results, name, nxt = m.groups()
    if "." in name or results:
        return name
    # Undotted words are ops only in forms like "return %0", "call @f(...)", "module @m {":
    # this skips region keywords such as "cond {" and "reducer(%arg1: ...)".
    rest = line[m.end() :].lstrip()
    if nxt == "" or (nxt == " " and rest[:1] in ("%", "@", "")):
        return name
    return None


def _unified_range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


@dataclass(frozen=True)
class Diff:
    """The aligned, normalized difference between two versions of a module.

    ``before`` is ``normalize(before_text)``; ``after`` is the after text normalized onto the
    before module's value names (values with no counterpart get fresh numbers), so equal lines
    are equal text. ``hlo`` says whether the texts are XLA HLO, which decides how op names are
    read. Build it with :func:`diff_texts`.
    """

    before_name: str
    after_name: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    hlo: bool
    _script: tuple[tuple[str, int, int], ...] = field(repr=False)
    _moves: tuple[tuple[int, int], ...] = field(repr=False)

    @property
    def is_empty(self) -> bool:
        """True when every line aligns with an equal line."""
        return all(step[0] == _EQ for step in self._script)

    @cached_property
    def _changes(self) -> tuple[Change, ...]:
        changes: list[Change] = []
        run: list[tuple[str, int, int]] = []

        def close_run() -> None:
            if not run:
                return
            bi = [i for tag, i, _ in run if tag != _INS]
            aj = [j for tag, _, j in run if tag != _DEL]
            i_at, j_at = run[0][1], run[0][2]
            before = range(bi[0], bi[-1] + 1) if bi else range(i_at, i_at)
            after = range(aj[0], aj[-1] + 1) if aj else range(j_at, j_at)
            kind: ChangeKind = "replace" if bi and aj else ("delete" if bi else "insert")
            changes.append(Change(kind, before, after))
            run.clear()

        for step in self._script:
            if step[0] in (_CHG, _DEL, _INS):
                run.append(step)
            else:
                close_run()
        close_run()
        # Consecutive moved lines that stay consecutive are one move.
        start = 0
        moves = self._moves
        for k in range(1, len(moves) + 1):
            if k == len(moves) or moves[k] != (moves[k - 1][0] + 1, moves[k - 1][1] + 1):
                (i0, j0), (i1, j1) = moves[start], moves[k - 1]
                changes.append(Change("move", range(i0, i1 + 1), range(j0, j1 + 1)))
                start = k
        changes.sort(key=lambda c: (c.before.start, c.after.start))
        return tuple(changes)

    @property
    def changes(self) -> list[Change]:
        """Each change, in before-line order; see :class:`Change`."""
        return list(self._changes)

    def rows(self) -> list[tuple[int, int, str]]:
        """The alignment, one row per displayed line: ``(before line, after line, kind)``, 0-based,
        -1 where a side has no line; kind is equal, changed, deleted, inserted or moved (a moved
        line appears twice: where it left and where it arrived)."""
        kinds = {_EQ: "equal", _CHG: "changed", _DEL: "deleted", _INS: "inserted", _OUT: "moved", _IN: "moved"}
        return [(i if tag not in (_INS, _IN) else -1, j if tag not in (_DEL, _OUT) else -1, kinds[tag])
                for tag, i, j in self._script]

    def _hunk_lines(self) -> list[tuple[str, int, int]]:
        """(tag, before cursor, after cursor) per printed line, "-" lines before "+" lines."""
        out: list[tuple[str, int, int]] = []
        minus: list[tuple[str, int, int]] = []
        plus: list[tuple[str, int, int]] = []
        for tag, i, j in self._script:
            if tag == _EQ:
                out.extend(minus)
                out.extend(plus)
                minus.clear()
                plus.clear()
                out.append((" ", i, j))
                continue
            if tag in (_CHG, _DEL, _OUT):
                minus.append(("-", i, j))
            if tag in (_CHG, _INS, _IN):
                plus.append(("+", i if tag != _CHG else i + 1, j))
        out.extend(minus)
        out.extend(plus)
        return out

    def unified(self, context: int = 3) -> str:
        """``diff -u`` of the normalized texts (moves show as a deletion and an insertion).

        Empty when there is no change.
        """
        lines = self._hunk_lines()
        changed = [k for k, (tag, _, _) in enumerate(lines) if tag != " "]
        if not changed:
            return ""
        out = [f"--- {self.before_name}\n", f"+++ {self.after_name}\n"]
        groups: list[list[int]] = [[changed[0], changed[0]]]
        for k in changed[1:]:
            if k - groups[-1][1] > 2 * context:
                groups.append([k, k])
            else:
                groups[-1][1] = k
        before, after = self.before, self.after
        for first, last in groups:
            lo, hi = max(0, first - context), min(len(lines), last + context + 1)
            hunk = lines[lo:hi]
            n_before = sum(1 for tag, _, _ in hunk if tag != "+")
            n_after = sum(1 for tag, _, _ in hunk if tag != "-")
            i_start, j_start = hunk[0][1], hunk[0][2]
            out.append(
                f"@@ -{_unified_range(i_start, i_start + n_before)}"
                f" +{_unified_range(j_start, j_start + n_after)} @@\n"
            )
            for tag, i, j in hunk:
                text = after[j] if tag == "+" else before[i]
                out.append(f"{tag}{text}\n")
        return "".join(out)

    def side_by_side(self, context: int | None = 3) -> str:
        """HTML table of the two texts in aligned columns.

        Rows are classed ``wb-diff-equal``, ``-changed``, ``-deleted``, ``-inserted`` and
        ``-moved``; in changed rows the differing tokens are marked. Unchanged runs longer than
        ``2 * context`` lines are folded (``context=None`` shows everything). All text is escaped.
        """
        esc = html.escape
        rows: list[tuple[str, int, int]] = []  # (class, before index or -1, after index or -1)
        for tag, i, j in self._script:
            if tag == _EQ:
                rows.append(("equal", i, j))
            elif tag == _CHG:
                rows.append(("changed", i, j))
            elif tag == _DEL:
                rows.append(("deleted", i, -1))
            elif tag == _INS:
                rows.append(("inserted", -1, j))
            elif tag == _OUT:
                rows.append(("moved", i, -1))
            else:
                rows.append(("moved", -1, j))
        keep = [True] * len(rows)
        if context is not None:
            near = [False] * len(rows)
            for k, row in enumerate(rows):
                if row[0] != "equal":
                    for t in range(max(0, k - context), min(len(rows), k + context + 1)):
                        near[t] = True
            keep = near
        moved_to = {i: j for i, j in self._moves}
        moved_from = {j: i for i, j in self._moves}
        out = [
            f'<div class="wb-diff"><style>{_CSS}</style><table>',
            f'<thead><tr><th colspan="2">{esc(self.before_name)}</th>'
            f'<th colspan="2">{esc(self.after_name)}</th></tr></thead><tbody>',
        ]
        if self.is_empty:
            out.append('<tr class="wb-diff-skip"><td colspan="4">no changes</td></tr>')
        skipped = 0
        for k, (cls, i, j) in enumerate(rows):
            if not keep[k]:
                skipped += 1
                continue
            if skipped:
                out.append(_skip_row(skipped))
                skipped = 0
            left = esc(self.before[i]) if i >= 0 else ""
            right = esc(self.after[j]) if j >= 0 else ""
            if cls == "changed":
                left, right = _mark_tokens(self.before[i], self.after[j])
            title = ""
            if cls == "moved":
                title = (
                    f' title="moved to line {moved_to[i] + 1}"'
                    if i >= 0
                    else f' title="moved from line {moved_from[j] + 1}"'
                )
            out.append(
                f'<tr class="wb-diff-{cls}"{title}>'
                f'<td class="wb-diff-ln">{i + 1 if i >= 0 else ""}</td>'
                f'<td class="wb-diff-code">{left}</td>'
                f'<td class="wb-diff-ln">{j + 1 if j >= 0 else ""}</td>'
                f'<td class="wb-diff-code">{right}</td></tr>'
            )
        if skipped:
            out.append(_skip_row(skipped))
        out.append("</tbody></table></div>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return self.side_by_side()

    def ops_delta(self) -> pd.DataFrame:
        """Op counts that differ: columns op, before, after, delta (after - before).

        ``op`` is the MLIR op name (``stablehlo.add``) or the HLO opcode (``fusion``). Sorted by
        ``|delta|`` descending, then name.
        """
        import pandas as pd

        count_b = Counter(op for op in (_op_name(s, self.hlo) for s in self.before) if op)
        count_a = Counter(op for op in (_op_name(s, self.hlo) for s in self.after) if op)
        rows = [
            (op, count_b[op], count_a[op], count_a[op] - count_b[op])
            for op in sorted(count_b.keys() | count_a.keys())
            if count_a[op] != count_b[op]
        ]
        rows.sort(key=lambda r: (-abs(r[3]), r[0]))
        return pd.DataFrame(rows, columns=["op", "before", "after", "delta"]).astype(
            {"before": "int64", "after": "int64", "delta": "int64"}
        )


def _skip_row(count: int) -> str:
    return f'<tr class="wb-diff-skip"><td colspan="4">… {count} unchanged lines …</td></tr>'


def _mark_tokens(old: str, new: str) -> tuple[str, str]:
    """Escaped ``old`` and ``new`` with the tokens that differ wrapped in ``wb-diff-tok`` spans."""
    ta, tb = _TOKEN.findall(old), _TOKEN.findall(new)
    sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    left: list[str] = []
    right: list[str] = []
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        la, lb = html.escape("".join(ta[a0:a1])), html.escape("".join(tb[b0:b1]))
        if op == "equal":
            left.append(la)
            right.append(lb)
            continue
        if la:
            left.append(f'<span class="wb-diff-tok">{la}</span>')
        if lb:
            right.append(f'<span class="wb-diff-tok">{lb}</span>')
    return "".join(left), "".join(right)


def _after_names(aligner: _Aligner) -> list[str]:
    """After-values' names: their before counterpart's, else a number past the before module's."""
    b, a = aligner.b, aligner.a
    next_number: dict[tuple[int, str], int] = {}
    for scope, family, number in zip(b.v_scope, b.v_family, b.v_number):
        key = (scope, family)
        if next_number.get(key, 0) <= number:
            next_number[key] = number + 1
    names = list(a.v_name)
    for va, vb in enumerate(aligner.amap):
        if vb >= 0:
            names[va] = b.v_name[vb]
            continue
        if a.v_line[va] < 0:
            continue  # never defined: keeps its printed name
        sb = aligner.scope_pair.get(a.v_scope[va])
        if sb is None:
            continue  # a function with no counterpart keeps its own numbering
        key = (sb, a.v_family[va])
        number = next_number.get(key, 0)
        next_number[key] = number + 1
        names[va] = f"{a.v_prefix[va]}{number}"
    return names


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
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


def diff_texts(
    before_text: str, after_text: str, before_name: str = "before", after_name: str = "after"
) -> Diff:
    """Diff two versions of an MLIR or HLO module (see the module docstring for how)."""
    with _cycle_collector_paused():
        return _diff(before_text, after_text, before_name, after_name)


def _diff(before_text: str, after_text: str, before_name: str, after_name: str) -> Diff:
    b, a = _parse(before_text), _parse(after_text)
    aligner = _Aligner(b, a)
    pairs = aligner.run()
    matched_b = [False] * len(b.fmts)
    matched_a = [False] * len(a.fmts)
    for i, j in pairs:
        matched_b[i] = matched_a[j] = True
    # Moved ops: same content key; pairing them also pairs their values before naming.
    waiting: dict[int, list[int]] = {}
    for i in range(len(b.fmts) - 1, -1, -1):
        if not matched_b[i] and _HAS_WORD.search(b.fmts[i]):
            waiting.setdefault(b.keys[i], []).append(i)
    candidates: list[tuple[int, int]] = []
    for j in range(len(a.fmts)):
        if not matched_a[j] and (stack := waiting.get(a.keys[j])):
            i = stack.pop()
            candidates.append((i, j))
            aligner.map_line(i, j, uses=True)
    before = b.render(b.v_name)
    after = a.render(_after_names(aligner))
    moves = [(i, j) for i, j in candidates if before[i] == after[j]]
    moved_b = {i for i, _ in moves}
    moved_a = {j for _, j in moves}
    by_text: dict[str, list[int]] = {}
    for i in range(len(before) - 1, -1, -1):
        if not matched_b[i] and i not in moved_b and _HAS_WORD.search(before[i]):
            by_text.setdefault(before[i], []).append(i)
    for j in range(len(after)):
        if not matched_a[j] and j not in moved_a and (stack := by_text.get(after[j])):
            i = stack.pop()
            moves.append((i, j))
            moved_b.add(i)
            moved_a.add(j)
    moves.sort()

    script: list[tuple[str, int, int]] = []
    i = j = 0
    for pi, pj in pairs + [(len(before), len(after))]:
        for ii in range(i, pi):
            script.append((_OUT if ii in moved_b else _DEL, ii, j))
        for jj in range(j, pj):
            script.append((_IN if jj in moved_a else _INS, pi, jj))
        if pi < len(before):
            script.append((_EQ if before[pi] == after[pj] else _CHG, pi, pj))
        i, j = pi + 1, pj + 1
    return Diff(
        before_name=before_name,
        after_name=after_name,
        before=tuple(before),
        after=tuple(after),
        hlo=_is_hlo(before_text) or _is_hlo(after_text),
        _script=tuple(script),
        _moves=tuple(moves),
    )
