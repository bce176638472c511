"""What makes a fresh explore cheap changes no result: each shortcut checked against the plain
computation it replaces, on real programs (stage names, texts, changed flags), and unchanged stages
hold their parent's text objects rather than copies."""
import os
import random
import re
import sys

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.ir.text import public_functions, publish_functions, skip_balanced, skip_string, strip_locations
from workbench.pipeline import xla
from workbench.pipeline.build import clear_caches
from workbench.pipeline.program import relowered
from workbench.pipeline.trace import trace

enzyme = pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


# -- the plain computations: one line at a time, one regex anchored at every line start ------------------
def plain_strip(text: str) -> str:
    out = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        line = re.sub(r" loc\((?:#loc\d*|unknown)\)", "", line)
        pieces, i, start = [], 0, 0
        while (m := re.compile(r'"|loc\(').search(line, i)) is not None:
            i = m.start()
            if m.group() == '"':
                i = skip_string(line, i)
            elif i == 0 or not (line[i - 1].isalnum() or line[i - 1] in "_."):
                cut = i
                while cut > start and line[cut - 1] == " ":
                    cut -= 1
                pieces.append(line[start:cut])
                i = start = skip_balanced(line, i + 3)
            else:
                i += 1
        out.append(("".join(pieces) + line[start:]).rstrip())
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


_PLAIN_FUNC = re.compile(r"^(\s*func\.func\s+)((?:public|private|nested)\s+)?@([\w$.\-]+)", re.M)


def plain_public(text: str) -> set[str]:
    return {m[3] for m in _PLAIN_FUNC.finditer(text) if (m[2] or "public").strip() == "public"}


def plain_publish(text: str, names: set[str]) -> str:
    return _PLAIN_FUNC.sub(lambda m: f"{m[1]}public @{m[3]}" if m[3] in names and (m[2] or "").strip() == "private"
                           else m[0], text)


@pytest.fixture(scope="module")
def attention():
    fn, args = examples.load("attention")
    yield fn, args, wb.explore(fn, *args)
    clear_caches()  # later tests count the pass runs a toggle costs: leave them none of these cached


def test_unchanged_stages_share_their_parents_text_objects(attention):
    fn, args, ex = attention
    for e in (ex, ex.with_patterns(disable=["dot_transpose"])):  # run fresh, then mostly from the step cache
        stages = {s.name: s for s in e.stages}
        mlir = [s for s in e.stages if s.group == "mlir"]
        assert any(s.changed for s in mlir) and any(not s.changed for s in mlir)
        for s in mlir:
            parent = stages[s.parent]
            if not s.changed:
                assert s.text is parent.text
                if s.text_with_locations == parent.text_with_locations:
                    assert s.text_with_locations is parent.text_with_locations
            else:
                assert s.text != parent.text
        xla = [s for s in e.stages if s.group == "xla"]
        for s in xla[1:]:
            if not s.changed:
                assert s.text is stages[s.parent].text


def test_mlir_stages_are_what_enzyme_ad_gives_step_by_step(attention):
    """Every MLIR stage against enzyme-ad run directly on its parent, made public and stripped the plain way."""
    fn, args, ex = attention
    stages = {s.name: s for s in ex.pipeline_stages}
    assert ex["stablehlo"].text == plain_strip(ex["stablehlo"].text_with_locations)
    for s in ex.pipeline_stages[2:]:
        parent = stages[s.parent]
        entry, out = enzyme.enzyme_call.run_pass_pipeline([], parent.text_with_locations, s.produced_by)
        out = plain_publish(out, plain_public(parent.text_with_locations) & {entry})
        assert s.text_with_locations == out, s.name
        assert s.text == plain_strip(out), s.name
        assert s.changed == (plain_strip(out) != parent.text), s.name


def test_tracing_runs_the_function_once_for_the_jaxpr_and_the_module():
    runs = []

    def f(x, w):
        runs.append(1)
        return jnp.tanh(x @ w).sum(0)

    args = (jnp.ones((8, 16)), jnp.ones((16, 4)))
    t = trace(f, args)
    assert len(runs) == 1  # one jax.jit(f).trace gives the jaxpr, and its .lower() the module
    assert t.jaxpr == str(jax.make_jaxpr(f)(*args))
    # the module is the one jax.jit lowers, printed as jax.export prints it (its portable round trip)
    exported = jax.export.export(jax.jit(f), platforms=["cpu"])(*args).mlir_module()
    assert plain_strip(t.stablehlo) == plain_strip(exported).replace("jax.uses_shape_polymorphism = false, ", "")


def _fuzz_texts(n: int) -> list[str]:
    pieces = ['"', '\\', 'loc(', ' loc(#loc3)', ' loc(unknown)', 'loc("a"(#loc1))', '#loc', '#loc1 = loc("x")',
              '\n', '\n  ', ' ', '  ', '\t', 'a', 'x.loc(', '(', ')', 'func.func', ' private ', ' public ', ' nested ',
              '@main', '@f', '%0 = stablehlo.add', '\u00e9']
    odd = ['\r', '\r\n', '\x0b', '\x0c', '\x1c', '\x1f', '\x85', '\xa0', '\u2028', '\u3000']
    rnd = random.Random(11)
    return ["".join(rnd.choice(pieces + (odd if k % 3 == 0 else [])) for _ in range(rnd.randint(0, 40)))
            for k in range(n)]


def _odd_whitespace() -> list[str]:
    """Every character that str.splitlines breaks at or str.rstrip strips, besides space, tab and newline."""
    return [c for c in map(chr, range(sys.maxunicode + 1))
            if c not in " \t\n" and (c.isspace() or len(f"a{c}b".splitlines()) > 1)]


def test_the_text_scanners_give_what_the_plain_ones_give(attention):
    fn, args, ex = attention
    real = [s.text_with_locations for s in ex.pipeline_stages if s.text_with_locations]
    scan_fn, scan_args = examples.load("scan")
    real += [s.text_with_locations for s in wb.explore(scan_fn, *scan_args).pipeline_stages if s.text_with_locations]
    odd = [f'  %0 = stablehlo.add %a, %b loc(#loc3){c}  \n"s loc(x)"{c}loc("a") \n#loc3 = loc("f")\n'
           for c in _odd_whitespace()]
    texts = real + odd + _fuzz_texts(6000)
    for t in texts:
        assert strip_locations(t) == plain_strip(t), repr(t[:300])
        assert public_functions(t) == plain_public(t), repr(t[:300])
        for names in (set(), {"main"}, {"f", "main"}):
            assert publish_functions(t, names) == plain_publish(t, names), repr(t[:300])
    private = real[0].replace("func.func public @main", "func.func private @main")
    assert publish_functions(real[0], {"main"}) is real[0]  # nothing to publish: the text itself
    assert publish_functions(private, {"main"}) == real[0]


def plain_xla_stages(d: str) -> list[tuple[str, str]]:
    """(name, text) of XLA's HLO stages read from a dump directory file by file: the module before
    optimizations, each pass dump that differs from the one before (pipeline starts and ends only
    update that), the optimized module."""
    files = sorted(os.listdir(d))
    mod = sorted(f.split(".")[0] for f in files if f.endswith(".before_optimizations.txt"))[-1]
    files = [f for f in files if f.startswith(mod + ".")]
    read = lambda f: open(os.path.join(d, f), errors="replace").read()
    last = read(next(f for f in files if f.endswith(".before_optimizations.txt")))
    out, counts = [("xla:before_optimizations", last)], {}
    for f in files:
        m = re.match(r"^module_\d+\..+?\.\d{4}\.[^.]+\.after_([^.]+?)(?:\.before_[^.]+)?\.txt$", f)
        if m:
            text, was = read(f), last
            last = text
            if m[1] not in ("pipeline-start", "pipeline-end") and text != was:
                counts[m[1]] = counts.get(m[1], 0) + 1
                out.append((f"xla:{m[1]}#{counts[m[1]]}", text))
    return out + [("xla:optimized", read(next(f for f in files if f.endswith("_after_optimizations.txt"))))]


def test_xla_stages_and_analyses_are_a_plain_reading_of_xlas_own_compile(attention, tmp_path, monkeypatch):
    fn, args, ex = attention
    lowered = relowered(ex.spec.traced.lowered, ex.pipeline_stages[-1].text_with_locations)
    kept, removed = tmp_path / "dumps", []
    kept.mkdir()
    ex.stages  # explore compiles for XLA on a thread of its own: let that compile end before the patches
    drain = lambda: xla._AFTER.submit(lambda: None).result()  # one FIFO worker: earlier compiles' clean-ups are done
    drain()  # so that none of them lands in the patched rmtree below
    monkeypatch.setattr(xla.tempfile, "mkdtemp", lambda **_: str(kept))
    monkeypatch.setattr(xla.shutil, "rmtree", lambda d, **_: removed.append(d))  # keep the files to read them here
    result = xla.compile_lowered_with_dumps(lowered)
    assert [(s.name, s.text) for s in result.stages if s.group == "xla"] == plain_xla_stages(str(kept))
    compiled = lowered.compile()
    cost, memory = compiled.cost_analysis(), compiled.memory_analysis()
    assert result.cost == {k: float(v) for k, v in cost.items() if isinstance(v, (int, float))}
    assert result.memory == {
        "argument_bytes": memory.argument_size_in_bytes, "output_bytes": memory.output_size_in_bytes,
        "temp_bytes": memory.temp_size_in_bytes, "alias_bytes": memory.alias_size_in_bytes,
        "generated_code_bytes": memory.generated_code_size_in_bytes, "peak_memory_bytes": memory.peak_memory_in_bytes}
    drain()  # the clean-up follows the analyses on their thread
    # this compile's folder is removed once (an earlier test's background compile may end in between)
    assert removed.count(str(kept)) == 1
    stages = {s.name: s for s in ex.stages}
    xla_stages = [s for s in ex.stages if s.group == "xla"]
    assert [s.name for s in xla_stages] == [s.name for s in result.stages if s.group == "xla"]
    for s in xla_stages:
        assert s.changed == (s.text != stages[s.parent].text), s.name
