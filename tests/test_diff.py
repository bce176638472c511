"""Behaviour of workbench.analysis.diff on IR produced by jax, Enzyme-JaX passes and XLA."""

from __future__ import annotations

import bisect
import collections
import dataclasses
import difflib
import functools
import random
import re

import jax
import jax.numpy as jnp
import pytest

from workbench.analysis.diff import Change, Diff, diff_texts, normalize
from workbench.analysis.diff.align import myers as _myers  # the alignment core, checked against a textbook LCS

try:  # the diff needs no enzyme-ad; only the tests of Enzyme's own passes do
    from enzyme_ad.jax import enzyme_call
except ImportError:
    enzyme_call = None
needs_enzyme = pytest.mark.skipif(enzyme_call is None, reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

X = jnp.ones((4, 3), jnp.float32)


def run_pipeline(text: str, pipeline: str) -> str:
    """Run a pass pipeline on MLIR text (Enzyme-JaX's runner, or jaxlib's for upstream passes
    without enzyme-ad); returns the printed result."""
    if enzyme_call is not None:
        _, out = enzyme_call.run_pass_pipeline([], text, pipeline)
        return out
    from jax._src.interpreters import mlir as jmlir
    from jaxlib.mlir import ir, passmanager

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
        return module.operation.get_asm(enable_debug_info=True)


def stablehlo(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text()


def lines_of(d: Diff, change: Change) -> tuple[list[str], list[str]]:
    return [d.before[i] for i in change.before], [d.after[j] for j in change.after]


def blank_names(line: str) -> str:
    return re.sub(r"%[\w.\-]+", "%_", line)


def apply_unified(before: tuple[str, ...], patch: str) -> list[str]:
    """Apply a unified diff to ``before``; checks every context and removed line on the way."""
    out: list[str] = []
    pos = 0
    lines = patch.splitlines()
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    for line in lines[2:]:
        if line.startswith("@@"):
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$", line)
            assert m, line
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            out.extend(before[pos:start])
            pos = start
            assert len(out) == int(m.group(3)) - (0 if m.group(4) == "0" else 1)
        elif line[0] == " ":
            assert before[pos] == line[1:]
            out.append(line[1:])
            pos += 1
        elif line[0] == "-":
            assert before[pos] == line[1:]
            pos += 1
        else:
            assert line[0] == "+"
            out.append(line[1:])
    out.extend(before[pos:])
    return out


# --- programs -------------------------------------------------------------------------------


def duplicated_product(x, y):
    a = x * y
    b = x * y  # the same product again: cse removes it
    return jnp.sin(a) * b


def duplicated_product_then_chain(x, y):
    h = jnp.sin(x * y) * (x * y)
    for _ in range(30):
        h = jnp.tanh(h) + x
    return h


def sine_times_two(x):
    return jnp.sin(x) * 2.0


def double_transpose(x):
    return (x.T).T + 1.0


def mlp_loss(params, x):
    h = x
    for w, b in params:
        h = jnp.tanh(h @ w + b)
    return jnp.mean(h**2)


def mlp_grad_text(layers: int) -> str:
    params = [(jnp.ones((8, 8)), jnp.ones((8,))) for _ in range(layers)]
    return stablehlo(jax.grad(mlp_loss), params, jnp.ones((4, 8)))


def _hlo_program_xy():
    def f(x, y):
        s = jnp.tanh(x @ y)
        return jnp.sum(s * 2.0, axis=0), jnp.cumsum(x, axis=1)

    return f


def _hlo_program_ab():
    def f(a, b):  # same program, other parameter names
        s = jnp.tanh(a @ b)
        return jnp.sum(s * 2.0, axis=0), jnp.cumsum(a, axis=1)

    return f


# --- normalization --------------------------------------------------------------------------


@needs_enzyme
def test_locations_and_value_names_do_not_count():
    lowered = jax.jit(sine_times_two).lower(X)
    plain = lowered.as_text()
    with_locations = lowered.as_text(debug_info=True)  # #loc aliases, callsite and name locs
    renamed = lowered.compiler_ir("stablehlo").operation.get_asm(use_name_loc_as_prefix=True)
    reprinted = run_pipeline(plain, "")  # Enzyme: loc() everywhere, @main made private
    assert "%jit28sine_times_two29" in renamed and "%arg0" not in renamed
    assert "loc(" in with_locations and "private @main" in reprinted
    for other in (with_locations, renamed, reprinted):
        assert normalize(other) == normalize(plain)
        d = diff_texts(plain, other)
        assert d.is_empty and d.changes == [] and d.unified() == ""
    assert not any("loc(" in line for line in normalize(with_locations))


def test_inline_locations_of_any_depth_are_dropped():
    def inner(x):
        return jnp.sin(x)

    def middle(x):
        return inner(x) * 2.0

    def outer(x):
        return middle(x) + 1.0

    lowered = jax.jit(lambda x: outer(x) - 3.0).lower(X)
    module = lowered.compiler_ir("stablehlo")
    inline = module.operation.get_asm(enable_debug_info=True, use_local_scope=True)
    assert "at callsite(" in inline  # call sites nested inside call sites, printed inline
    assert normalize(inline) == normalize(lowered.as_text())


def test_pass_that_changes_nothing_diffs_empty():
    text = stablehlo(lambda x, y: jnp.sin(x) + jnp.cos(y), X, X)
    d = diff_texts(text, run_pipeline(text, "canonicalize"), "stablehlo", "canonicalize#1")
    assert d.is_empty
    assert d.ops_delta().empty


def test_canonical_names_follow_definition_order():
    lines = normalize(stablehlo(sine_times_two, X))
    assert "func.func @main(%arg0: tensor<4x3xf32>)" in lines[1]
    defined = [m.group(1) for line in lines if (m := re.match(r"\s*(%\w+) = ", line))]
    assert defined == ["%0", "%1", "%2", "%3"]  # %cst is renamed like any other value


# --- alignment ------------------------------------------------------------------------------


def test_cse_shows_exactly_the_removed_op():
    text = stablehlo(duplicated_product, X, X)
    d = diff_texts(text, run_pipeline(text, "cse"), "stablehlo", "cse")
    assert [c.kind for c in d.changes] == ["delete", "replace"]
    deleted, _ = lines_of(d, d.changes[0])
    assert len(deleted) == 1 and "stablehlo.multiply %arg0, %arg1" in deleted[0]
    removed_name = deleted[0].split()[0]
    user_before, user_after = lines_of(d, d.changes[1])
    kept_name = d.before[d.changes[0].before.start - 1].split()[0]  # the first x*y
    assert removed_name in user_before[0] and kept_name in user_after[0]
    assert user_before[0].replace(removed_name, kept_name) == user_after[0]
    delta = d.ops_delta()
    assert delta.to_dict("records") == [
        {"op": "stablehlo.multiply", "before": 3, "after": 2, "delta": -1}
    ]


def test_removing_an_op_does_not_renumber_the_rest():
    text = stablehlo(duplicated_product_then_chain, X, X)
    after = run_pipeline(text, "cse")
    renumbered = set(normalize(text)) ^ set(normalize(after))
    assert len(renumbered) > 60  # positional names shift for every later line...
    d = diff_texts(text, after)
    changed = [c for c in d.changes if c.kind != "move"]
    assert sum(len(c.before) for c in changed) == 2  # ...but the diff is the op and its user
    assert sum(len(c.after) for c in changed) == 1


@needs_enzyme
def test_transpose_transpose_pattern():
    text = stablehlo(double_transpose, X)
    pipeline = (
        "enzyme-hlo-generate-td{patterns=transpose_transpose<16>},"
        "transform-interpreter,enzyme-hlo-remove-transform"
    )
    d = diff_texts(text, run_pipeline(text, pipeline), "stablehlo", "transpose_transpose")
    delta = d.ops_delta()
    assert delta.to_dict("records") == [
        {"op": "stablehlo.transpose", "before": 2, "after": 1, "delta": -1}
    ]
    removed = [d.before[i] for c in d.changes for i in c.before if c.kind != "move"]
    added = [d.after[j] for c in d.changes for j in c.after if c.kind != "move"]
    assert len(removed) == 2 and all("dims = [1, 0]" in line for line in removed)
    assert len(added) == 1 and "dims = [0, 1]" in added[0]  # what the pattern leaves behind
    # The add now reads the new transpose, which carries the old result's name: no ripple.
    assert not any("stablehlo.add" in line for line in removed + added)


def test_hoisted_constant_is_a_move():
    text = stablehlo(sine_times_two, X)
    after = run_pipeline(text, "canonicalize")
    # Hoisting renumbers every value, so by position every op line differs...
    before_lines, after_lines = normalize(text), normalize(after)
    assert sum(a != b for a, b in zip(before_lines[2:6], after_lines[2:6])) == 4
    d = diff_texts(text, after, "stablehlo", "canonicalize#1")
    # ...but structurally one op moved, found by its operand-name-insensitive content key.
    assert d.changes == [Change("move", range(3, 4), range(2, 3))]
    assert d.before[3] == d.after[2] and "stablehlo.constant" in d.before[3]
    assert not d.is_empty
    assert d.ops_delta().empty


def test_large_pass_diff_is_small_and_consistent():
    text = mlp_grad_text(layers=25)
    after = run_pipeline(text, "canonicalize,cse")
    d = diff_texts(text, after, "stablehlo", "canonicalize,cse")
    kinds = {c.kind for c in d.changes}
    assert kinds == {"replace", "move"}  # constants hoisted, duplicates dropped, users rewired
    # By position nearly every line changes; aligned by structure only the rewired users do.
    positional = difflib.unified_diff(normalize(text), normalize(after), lineterm="", n=0)
    assert sum(line[:1] == "+" for line in positional) > 0.9 * len(d.after)
    changed_after = sum(len(c.after) for c in d.changes if c.kind == "replace")
    assert changed_after < 0.25 * len(d.after)
    for change in d.changes:
        if change.kind == "replace":
            removed, (user,) = lines_of(d, change)
            assert blank_names(removed[-1]) == blank_names(user)
            deduplicated = removed[:-1]
            assert all(re.search(r"stablehlo\.(constant|broadcast_in_dim) ", r) for r in deduplicated)
    # unified() is a real patch from the normalized before text to the normalized after text.
    patch = d.unified()
    assert patch.startswith("--- stablehlo\n+++ canonicalize,cse\n@@ ")
    assert apply_unified(d.before, patch) == list(d.after)
    # Op counts agree with what the normalized texts say.
    for row in d.ops_delta().itertuples():
        assert row.delta == row.after - row.before != 0


def test_unified_has_three_lines_of_context():
    text = stablehlo(duplicated_product_then_chain, X, X)
    d = diff_texts(text, run_pipeline(text, "cse"))
    hunks = d.unified().split("\n@@")[1:]
    assert len(hunks) == 1
    body = hunks[0].splitlines()[1:]
    marks = "".join(line[0] for line in body)
    assert re.fullmatch(r" {3}[-+]+ +", marks) and marks.endswith("   ")


def test_myers_finds_a_longest_common_subsequence():
    rng = random.Random(0)
    for _ in range(200):
        a = [rng.randrange(4) for _ in range(rng.randrange(12))]
        b = [rng.randrange(4) for _ in range(rng.randrange(12))]
        lcs = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a) - 1, -1, -1):
            for j in range(len(b) - 1, -1, -1):
                if a[i] == b[j]:
                    lcs[i][j] = lcs[i + 1][j + 1] + 1
                else:
                    lcs[i][j] = max(lcs[i + 1][j], lcs[i][j + 1])
        pairs = _myers(a, b, len(a) + len(b))
        assert pairs is not None and len(pairs) == lcs[0][0]
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(i0 < i1 and j0 < j1 for (i0, j0), (i1, j1) in zip(pairs, pairs[1:]))
    assert _myers([1, 2, 3], [4, 5, 6], 2) is None  # more edits than allowed


# --- views ----------------------------------------------------------------------------------


def test_side_by_side_escapes_everything():
    def program(x):
        return {"<script>alert('x')</script>&": sine_times_two(x)}

    text = stablehlo(program, X)
    assert "<script>" in text and "&" in text  # in the result_info string attribute
    d = diff_texts(text, run_pipeline(text, "canonicalize"), "<b>stablehlo</b>", "a&b")
    for html in (d.side_by_side(), d.side_by_side(context=None), d._repr_html_()):
        assert "<script>" not in html and "<b>" not in html
        assert "&lt;script&gt;" in html and "a&amp;b" in html
        assert not re.search(r"&(?!(?:amp|lt|gt|quot|#x27|#39|#34);)", html)  # every & is an entity
    assert d._repr_html_() == d.side_by_side()
    assert 'class="wb-diff-moved"' in d.side_by_side()


def test_side_by_side_marks_each_kind_of_change():
    text = stablehlo(duplicated_product, X, X)
    html = diff_texts(text, run_pipeline(text, "cse")).side_by_side()
    assert 'class="wb-diff-deleted"' in html and 'class="wb-diff-changed"' in html
    assert '<span class="wb-diff-tok">' in html  # the operand that changed within the line
    text = stablehlo(sine_times_two, X)
    html = diff_texts(text, stablehlo(lambda x: jnp.sin(x) * 2.0 + 1.0, X)).side_by_side()
    assert 'class="wb-diff-inserted"' in html


def test_changes_are_values():
    text = stablehlo(duplicated_product, X, X)
    d = diff_texts(text, run_pipeline(text, "cse"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.changes[0].kind = "insert"  # type: ignore[misc]
    assert d.changes == diff_texts(text, run_pipeline(text, "cse")).changes


# --- HLO ------------------------------------------------------------------------------------


@pytest.mark.parametrize("printer", ["hlo", "compiled"])
def test_hlo_renaming_is_normalized(printer):
    x = jnp.ones((8, 8), jnp.float32)
    texts = []
    for program in (_hlo_program_xy(), _hlo_program_ab()):
        lowered = jax.jit(program).lower(x, x)
        texts.append(
            lowered.compiler_ir("hlo").as_hlo_text()
            if printer == "hlo"
            else lowered.compile().as_text()
        )
    first, second = texts
    assert first != second  # parameter names and metadata differ
    assert normalize(first) == normalize(second)
    assert diff_texts(first, second).is_empty
    normalized = "\n".join(normalize(first))
    assert "metadata=" not in normalized and "StackFrames" not in normalized
    assert not re.search(r"\b[xyab]\.\d+\b", normalized)
    instruction = r"^\s+(?:ROOT )?%([\w\-]+)\.(\d+) = \S+ ([\w\-]+)\("
    instructions = re.findall(instruction, normalized, re.M)
    assert instructions and all(name == opcode for name, _, opcode in instructions)
    headers = re.findall(r"^(?:ENTRY )?%([\w.\-]+) \{$", normalized, re.M)
    assert headers and all(re.fullmatch(r"[\w\-]+\.\d+", h) for h in headers)


def test_hlo_diff_through_xla_optimization():
    x = jnp.ones((8, 8), jnp.float32)
    lowered = jax.jit(_hlo_program_xy()).lower(x, x)
    d = diff_texts(lowered.compiler_ir("hlo").as_hlo_text(), lowered.compile().as_text())
    delta = d.ops_delta()
    assert list(delta.columns) == ["op", "before", "after", "delta"]
    assert (delta["delta"] != 0).all()
    assert list(delta["delta"].abs()) == sorted(delta["delta"].abs(), reverse=True)
    fusion = delta.set_index("op").loc["fusion"]
    assert fusion["before"] == 0 and fusion["after"] > 0
    assert apply_unified(d.before, d.unified()) == list(d.after)


def test_hlo_computation_suffixes_are_canonical():
    x = jnp.ones((8, 8), jnp.float32)
    compiled = jax.jit(_hlo_program_xy()).lower(x, x).compile().as_text()
    printed = re.findall(r"^(?:ENTRY )?%([\w.\-]+) \(", compiled, re.M)  # as XLA numbered them
    assert any(re.search(r"\.[1-9]\d*$", name) for name in printed)
    normalized = normalize(compiled)
    headers = re.findall(r"^(?:ENTRY )?%([\w.\-]+) \{$", "\n".join(normalized), re.M)
    # Each base name is numbered from 0 in order of appearance, whatever XLA's counters said.
    seen: dict[str, int] = {}
    expected = []
    for name in printed:
        base = re.sub(r"\.\d+$", "", name)
        expected.append(f"{base}.{seen.setdefault(base, 0)}")
        seen[base] += 1
    assert headers == expected
    called = {m for line in normalized for m in re.findall(r"(?:calls|to_apply)=%([\w.\-]+)", line)}
    assert called and called <= set(headers)


# --- the bulk reader and the aligner against a line-by-line reference -------------------------
#
# The reference is the diff as it was before it was made fast: each line read on its own, one
# method call per value pairing. The fast one must give the same module model (content keys up
# to their values) and the same diff on real pairs.

_REF_NAME = re.compile(r"(%[\w$.\-]+)")
_REF_RESULT_TAIL = re.compile(r"(?::\d+)?\s*=\s")
_REF_SCOPE_START = re.compile(r"\s*[A-Za-z_][\w$.]*\s+(?:(?:public|private|nested)\s+)?@")
_REF_VISIBILITY = re.compile(r"^(\s*func\.func) (?:public|private|nested) ")


def _ref_split(line):
    """(texts, names) of a line; names in strings are text; texts %-escaped."""
    from workbench.ir.text import split_strings

    texts, names = [""], []
    for k, piece in enumerate(split_strings(line)):
        if k % 2:
            texts[-1] += piece.replace("%", "%%")
            continue
        parts = _REF_NAME.split(piece)
        texts[-1] += parts[0].replace("%", "%%")
        for name, after in zip(parts[1::2], parts[2::2]):
            names.append(name)
            texts.append(after.replace("%", "%%"))
    return texts, names


def _ref_read(text):
    """The module model, line by line (HLO through the package's reader, which is unchanged)."""
    from workbench.ir.lines.model import Module
    from workbench.ir.lines.hlo import read_hlo
    from workbench.ir.text import input_kind, strip_locations

    if input_kind(text) == "hlo":
        return read_hlo(text)
    text = strip_locations(text)
    fmts, all_refs, scopes, keys, values, vkey = [], [], [], [], [], []
    scope, local, pending, counters = 0, {}, {}, {"r": 0, "a": 0}
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        lineno = len(fmts)
        if line.endswith("{") and _REF_SCOPE_START.match(line):
            line = _REF_VISIBILITY.sub(r"\1 ", line)
            scope, local, pending, counters = scope + 1, {}, {}, {"r": 0, "a": 0}
        texts, names = _ref_split(line)
        lead = 0
        if names and (not texts[0] or texts[0].isspace()):
            k = 1
            while k < len(names) and texts[k] == ", ":
                k += 1
            lead = k if _REF_RESULT_TAIL.match(texts[k]) else 0
        refs, defs = [], []
        for pos, tok in enumerate(names):
            if pos < lead or texts[pos + 1].startswith((": ", " = ")):
                family = "r" if pos < lead else "a"
                n = counters[family]
                counters[family] += 1
                prefix = "%" if family == "r" else "%arg"
                value = (f"{prefix}{n}", scope, lineno, prefix, family, n)
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
                v = local.get(tok, pending.get(tok, -1))
                if v < 0:
                    v = pending[tok] = len(values)
                    values.append((tok, scope, -1, tok, "", 0))
                    vkey.append(hash(tok))
            refs.append(v)
        fmt = "%s".join(texts)
        key = hash((fmt, tuple(vkey[v] for v in refs)))
        for pos in defs:
            vkey[refs[pos]] = hash((key, pos))
        fmts.append(fmt)
        all_refs.append(tuple(refs))
        scopes.append(scope)
        keys.append(key)
    return Module.build(fmts, all_refs, scopes, keys, values, vkey)


def _ref_patience(a, b):
    ca, cb = collections.Counter(a), collections.Counter(b)
    unique = {k for k, c in ca.items() if c == 1 and cb.get(k) == 1}
    pos_a = {k: i for i, k in enumerate(a) if k in unique}
    cand = [(pos_a[k], j) for j, k in enumerate(b) if k in unique]
    tails, tail_at, back = [], [], [-1] * len(cand)
    for idx, (i, _) in enumerate(cand):
        p = bisect.bisect_left(tails, i)
        if p == len(tails):
            tails.append(i)
            tail_at.append(idx)
        else:
            tails[p], tail_at[p] = i, idx
        back[idx] = tail_at[p - 1] if p else -1
    out, idx = [], tail_at[-1] if tail_at else -1
    while idx >= 0:
        out.append(cand[idx])
        idx = back[idx]
    return out[::-1]


class _RefAligner:
    """Three rounds of keys (content, mapped, template), patience then Myers, one call per pairing."""

    def __init__(self, b, a):
        self.b, self.a = b, a
        self.amap, self.taken = [-1] * len(a.v_name), [False] * len(b.v_name)
        self.pairs, self.scope_pair, self.scope_taken = [], {0: 0}, {0}
        cb, ca = collections.Counter(b.keys), collections.Counter(a.keys)
        where_b = {k: i for i, k in enumerate(b.keys) if cb[k] == 1 and ca.get(k) == 1}
        votes = collections.Counter(
            (a.scopes[j], b.scopes[where_b[k]]) for j, k in enumerate(a.keys) if k in where_b
        )
        for (sa, sb), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if sa not in self.scope_pair and sb not in self.scope_taken:
                self.scope_pair[sa] = sb
                self.scope_taken.add(sb)

    def map_value(self, va, vb):
        a, b = self.a, self.b
        if self.amap[va] >= 0 or self.taken[vb] or a.v_line[va] < 0 or b.v_line[vb] < 0:
            return
        if a.v_prefix[va] != b.v_prefix[vb]:
            return
        sa, sb = a.v_scope[va], b.v_scope[vb]
        paired = self.scope_pair.get(sa)
        if paired is None:
            if sb in self.scope_taken:
                return
            self.scope_pair[sa] = sb
            self.scope_taken.add(sb)
        elif paired != sb:
            return
        self.amap[va], self.taken[vb] = vb, True

    def map_line(self, i, j, uses):
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if uses or (self.a.v_line[va] == j and self.b.v_line[vb] == i):
                self.map_value(va, vb)

    def consistent(self, i, j):
        for va, vb in zip(self.a.refs[j], self.b.refs[i]):
            if self.a.v_line[va] == j and self.b.v_line[vb] == i:
                mapped = self.amap[va]
                if mapped != vb and (mapped >= 0 or self.taken[vb]):
                    return False
        return True

    def match(self, level, i, j):
        if not self.consistent(i, j):
            return False
        self.pairs.append((i, j))
        self.map_line(i, j, level != 3)
        return True

    def keys(self, level, i0, i1, j0, j1):
        b, a = self.b, self.a
        if level == 1:
            return b.keys[i0:i1], a.keys[j0:j1]
        if level == 3:
            return b.fmts[i0:i1], a.fmts[j0:j1]
        kb = [(b.fmts[i], tuple(v if self.taken[v] else -1 for v in b.refs[i])) if b.refs[i] else b.fmts[i]
              for i in range(i0, i1)]
        ka = [(a.fmts[j], tuple(self.amap[v] for v in a.refs[j])) if a.refs[j] else a.fmts[j]
              for j in range(j0, j1)]
        return kb, ka

    def run(self):
        stack = [(1, 0, len(self.b.fmts), 0, len(self.a.fmts))]
        while stack:
            level, i0, i1, j0, j1 = stack.pop()
            kb, ka = self.keys(level, i0, i1, j0, j1)
            n, m = i1 - i0, j1 - j0
            p = 0
            while p < n and p < m and kb[p] == ka[p] and self.match(level, i0 + p, j0 + p):
                p += 1
            s = 0
            while s < n - p and s < m - p and kb[n - 1 - s] == ka[m - 1 - s] and self.consistent(i1 - 1 - s, j1 - 1 - s):
                s += 1
            for t in range(s, 0, -1):
                self.match(level, i1 - t, j1 - t)
            i0, i1, j0, j1 = i0 + p, i1 - s, j0 + p, j1 - s
            if i0 == i1 or j0 == j1:
                continue
            kb, ka = kb[p : n - s], ka[p : m - s]
            anchors, between = _ref_patience(kb, ka), level
            if not anchors and level != 1:
                anchors = _myers(kb, ka, min(400, 2_000_000 // (len(kb) + len(ka)))) or []
                between = level + 1
            anchors = [(x, y) for x, y in anchors if self.match(level, i0 + x, j0 + y)]
            if not anchors:
                if level < 3:
                    stack.append((level + 1, i0, i1, j0, j1))
                continue
            gaps, pi, pj = [], i0, j0
            for x, y in anchors + [(i1 - i0, j1 - j0)]:
                if pi < i0 + x and pj < j0 + y and between <= 3:
                    gaps.append((between, pi, i0 + x, pj, j0 + y))
                pi, pj = i0 + x + 1, j0 + y + 1
            stack.extend(reversed(gaps))
        return sorted(self.pairs)


def _ref_diff(before_text, after_text):
    """(before lines, after lines, rows, moves) as the line-by-line diff gives them."""
    b, a = _ref_read(before_text), _ref_read(after_text)
    al = _RefAligner(b, a)
    pairs = al.run()
    mb, ma = {i for i, _ in pairs}, {j for _, j in pairs}
    waiting = {}
    for i in range(len(b.fmts) - 1, -1, -1):
        if i not in mb and re.search(r"\w", b.fmts[i]):
            waiting.setdefault(b.keys[i], []).append(i)
    candidates = []
    for j in range(len(a.fmts)):
        if j not in ma and waiting.get(a.keys[j]):
            candidates.append((waiting[a.keys[j]].pop(), j))
            al.map_line(*candidates[-1], True)
    following = {}
    for scope, family, number in zip(b.v_scope, b.v_family, b.v_number):
        following[(scope, family)] = max(following.get((scope, family), 0), number + 1)
    names = list(a.v_name)
    for va, vb in enumerate(al.amap):
        if vb >= 0:
            names[va] = b.v_name[vb]
        elif a.v_line[va] >= 0 and (sb := al.scope_pair.get(a.v_scope[va])) is not None:
            key = (sb, a.v_family[va])
            names[va] = f"{a.v_prefix[va]}{following.get(key, 0)}"
            following[key] = following.get(key, 0) + 1
    before = [fmt % tuple(b.v_name[v] for v in refs) for fmt, refs in zip(b.fmts, b.refs)]
    after = [fmt % tuple(names[v] for v in refs) for fmt, refs in zip(a.fmts, a.refs)]
    moves = [(i, j) for i, j in candidates if before[i] == after[j]]
    moved_b, moved_a = {i for i, _ in moves}, {j for _, j in moves}
    by_text = {}
    for i in range(len(before) - 1, -1, -1):
        if i not in mb and i not in moved_b and re.search(r"\w", before[i]):
            by_text.setdefault(before[i], []).append(i)
    for j in range(len(after)):
        if j not in ma and j not in moved_a and by_text.get(after[j]):
            moves.append((by_text[after[j]].pop(), j))
            moved_b.add(moves[-1][0])
            moved_a.add(j)
    rows, i, j = [], 0, 0
    for pi, pj in pairs + [(len(before), len(after))]:
        rows += [(ii, -1, "moved" if ii in moved_b else "deleted") for ii in range(i, pi)]
        rows += [(-1, jj, "moved" if jj in moved_a else "inserted") for jj in range(j, pj)]
        if pi < len(before):
            rows.append((pi, pj, "equal" if before[pi] == after[pj] else "changed"))
        i, j = pi + 1, pj + 1
    return before, after, rows, sorted(moves)



_CFG = """
func.func @main(%arg0: tensor<f32>, %arg1: i1) -> tensor<f32> {
  cf.br ^bb2
^bb1(%x: tensor<f32>):
  %r = stablehlo.add %x, %y : tensor<f32>
  return %r : tensor<f32>
^bb2:
  %y = stablehlo.multiply %arg0, %arg0 : tensor<f32>
  %z = stablehlo.multiply %arg0, %arg0 : tensor<f32>
  cf.cond_br %arg1, ^bb1(%y : tensor<f32>), ^bb1(%z : tensor<f32>)
}
"""


def _while_loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: jnp.sin(c) * 2.0 + c * 2.0 + i, x)


def _scan(x):
    def step(c, y):
        c = jnp.tanh(c + y) * (c + y)
        return c, c * 2.0

    return jax.lax.scan(step, x, jnp.stack([x, x, x]))


def _two_functions(x):
    inner = jax.jit(lambda v: jnp.exp(v) + v * 3.0)
    return inner(x) * inner(x + 1.0)


def _strings(x):
    return {'50% "quoted" %x': jnp.sin(x) * 2.0, "b%d": x * 3.0}


@functools.cache
def _real_pairs() -> tuple[tuple[str, str, str], ...]:
    """(name, before, after): stages of real programs before and after real passes."""
    from jax._src.interpreters import mlir as jmlir
    from jaxlib.mlir import ir

    pairs = []
    programs = [
        ("product", duplicated_product, (X, X)), ("chain", duplicated_product_then_chain, (X, X)),
        ("sine", sine_times_two, (X,)), ("transpose", double_transpose, (X,)), ("while", _while_loop, (X,)),
        ("scan", _scan, (X,)), ("two functions", _two_functions, (X,)), ("strings", _strings, (X,)),
        ("sort", lambda x: jnp.sort(x, axis=0) + jnp.argsort(x, axis=1), (X,)),
    ]
    for name, program, args in programs:
        lowered = jax.jit(program).lower(*args)
        text = lowered.as_text()
        for pipeline in ("cse", "canonicalize,cse", "inline,canonicalize,cse,symbol-dce"):
            pairs.append((f"{name} {pipeline}", text, run_pipeline(text, pipeline)))
        pairs.append((f"{name} with locations", lowered.as_text(debug_info=True), text))
    text = mlp_grad_text(layers=25)
    pairs.append(("mlp canonicalize,cse", text, run_pipeline(text, "canonicalize,cse")))
    pairs.append(("mlp reprinted", text, run_pipeline(text, "")))
    with jmlir.make_ir_context():
        cfg = ir.Module.parse(_CFG).operation.get_asm()  # a forward reference across blocks
    pairs.append(("blocks cse", cfg, run_pipeline(cfg, "cse")))
    x = jnp.ones((8, 8), jnp.float32)
    lowered = jax.jit(_hlo_program_xy()).lower(x, x)
    pairs.append(("hlo optimized", lowered.compiler_ir("hlo").as_hlo_text(), lowered.compile().as_text()))
    return tuple(pairs)


def _same_keys(x, y) -> bool:
    """Whether two key lists say the same about which keys are equal."""
    first_x, first_y = {}, {}
    return [first_x.setdefault(k, len(first_x)) for k in x] == [first_y.setdefault(k, len(first_y)) for k in y]


def test_bulk_reader_reads_modules_as_the_line_by_line_reference():
    from workbench.analysis.diff.normalize import read_module

    texts = {text for _, before, after in _real_pairs() for text in (before, after)}
    assert any("%c_3" in t and t.count("%c_3 =") > 1 for t in texts)  # a name defined in sibling regions
    assert any('"' in t and "%" in t.split('"')[1] for t in texts if t.count('"') > 1)
    for text in texts:
        fast, ref = read_module(text), _ref_read(text)
        for column in ("fmts", "refs", "scopes", "v_name", "v_scope", "v_line", "v_prefix", "v_family", "v_number"):
            assert getattr(fast, column) == getattr(ref, column), column
        assert _same_keys(fast.keys, ref.keys) and _same_keys(fast.v_key, ref.v_key)


def test_diff_is_the_line_by_line_reference_diff():
    for name, before, after in _real_pairs():
        d = diff_texts(before, after, "x", "y")
        ref_before, ref_after, ref_rows, ref_moves = _ref_diff(before, after)
        assert list(d.before) == ref_before and list(d.after) == ref_after, name
        assert d.rows() == ref_rows, name
        assert [(c.before.start, c.after.start) for c in d.changes if c.kind == "move"] == [
            move for k, move in enumerate(ref_moves) if k == 0 or ref_moves[k - 1] != (move[0] - 1, move[1] - 1)
        ], name
        for context in (1, 2, 3, 10):  # the patch from runs of changes, and from every printed line
            assert d.unified(context) == d._unified_by_lines(context), (name, context)
    assert any(any(kind == "moved" for *_, kind in _ref_diff(b, a)[2]) for _, b, a in _real_pairs())


@pytest.fixture(scope="module")
def mlp_20k():
    """(layers, before, after): a 20,000-line gradient of a deep MLP before and after canonicalize,cse."""
    layers = 1060
    text = mlp_grad_text(layers)
    return layers, text, run_pipeline(text, "canonicalize,cse")


def test_20k_line_pair_aligns_every_known_change(mlp_20k):
    layers, before, after = mlp_20k
    d = diff_texts(before, after, "stablehlo", "canonicalize,cse")
    assert len(d.before) > 20_000
    # canonicalize hoists the 4 distinct constants (0, 1, 2 and the mean's 32) to the top of @main,
    # cse keeps one of each and one broadcast of 1 (the forward pass's "1 - tanh^2"), and every user
    # of a dropped copy now reads the kept one: per layer the broadcast's subtract and two reduces.
    moves = [c for c in d.changes if c.kind == "move"]
    replaces = [c for c in d.changes if c.kind == "replace"]
    assert len(moves) == 4 and len(replaces) == 3 * layers - 1 and len(d.changes) == 3 * layers + 3
    assert sorted(c.after.start for c in moves) == [2, 3, 4, 5]
    assert all(len(c.before) == 1 and "stablehlo.constant" in d.before[c.before.start] for c in moves)
    for change in replaces:
        removed, (user,) = lines_of(d, change)
        assert blank_names(removed[-1]) == blank_names(user)  # the user, paired with itself
        assert re.search(r"stablehlo\.(subtract|reduce|broadcast_in_dim)\b", user)
        assert all(re.search(r"stablehlo\.(constant|broadcast_in_dim) ", r) for r in removed[:-1])
    delta = d.ops_delta().set_index("op")["delta"].to_dict()
    assert delta == {"stablehlo.constant": -(3 * layers - 1), "stablehlo.broadcast_in_dim": -(layers - 1)}
    equal = sum(kind == "equal" for *_, kind in d.rows())
    assert equal == len(d.after) - len(replaces) - len(moves)
    assert apply_unified(d.before, d.unified()) == list(d.after)


def test_20k_line_pair_is_the_line_by_line_reference_diff(mlp_20k):
    _, before, after = mlp_20k
    d = diff_texts(before, after)
    ref_before, ref_after, ref_rows, _ = _ref_diff(before, after)
    assert (list(d.before), list(d.after), d.rows()) == (ref_before, ref_after, ref_rows)
    assert d.unified() == d._unified_by_lines(3)


def test_read_modules_are_kept_and_left_as_read():
    from workbench.analysis.diff.normalize import read_module

    text = stablehlo(duplicated_product, X, X)
    after = run_pipeline(text, "cse")
    module = read_module(text)
    columns = {name: list(value) for name, value in vars(module).items() if isinstance(value, list)}
    d = diff_texts(text, after)
    assert read_module(text) is module  # a stage diffed again is not read again
    assert {name: getattr(module, name) for name in columns} == columns  # nor changed by a diff
    assert diff_texts(text, after) == d
    read_module.cache_clear()
    assert read_module(text) is not module and diff_texts(text, after) == d


def test_strings_are_set_aside_as_the_lexer_reads_them():
    from workbench.ir.lines.mlir import read_mlir
    from workbench.ir.text import split_strings

    rng = random.Random(1)
    for _ in range(300):
        line = "".join(rng.choice(['"', "\\", "%a", "%1", " ", "x", "%", "=", ": "]) for _ in range(rng.randrange(12)))
        text = f"%0 = op {line}\n%1 = op %0 {line[::-1]}\n"
        module = read_mlir(text)
        for k, raw in enumerate(text.splitlines()):
            strings = split_strings(raw.rstrip())[1::2]
            # Every string stays in the format as written ("%" doubled), and names in it are not names.
            assert all(s.replace("%", "%%") in module.fmts[k] for s in strings), (raw, module.fmts[k])
            assert module.fmts[k].count("%s") == len(module.refs[k])
        assert module.render(module.v_name) == normalize(text) == _ref_read_render(text)


def _ref_read_render(text):
    ref = _ref_read(text)
    return [fmt % tuple(ref.v_name[v] for v in refs) for fmt, refs in zip(ref.fmts, ref.refs)]


def test_functions_read_in_bulk_or_line_by_line_are_the_same():
    from workbench.ir.lines.mlir import read_mlir

    # A stage may need the line-by-line reading (a forward reference) where the stage before it
    # did not: both readings must give equal content keys, or nothing would align.
    texts = {text for _, before, after in _real_pairs() for text in (before, after) if "HloModule" not in text}
    for text in texts:
        assert read_mlir(text, bulk=False) == read_mlir(text)
