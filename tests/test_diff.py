"""Behaviour of workbench.analysis.diff on IR produced by jax, Enzyme-JaX passes and XLA."""

from __future__ import annotations

import dataclasses
import difflib
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
        assert not re.search(r"&(?!(?:amp|lt|gt|quot|#x27);)", html)
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
