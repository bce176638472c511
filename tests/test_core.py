"""The core Exploration on real programs: stages per preset, pattern toggles checked against
enzyme-ad called directly, incremental recomputation, failures that keep earlier stages, XLA stages."""
import html
import dataclasses

import jax
import jax.numpy as jnp
import pytest

from workbench import examples
import workbench as wb
from workbench.pipeline import presets as pl
from workbench.ir.text import publish_functions, strip_locations
from workbench.pipeline.runner import default_runner
from workbench.stages import Stage

enzyme = pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@pytest.fixture(scope="module")
def attention():
    return examples.load("attention")


def mlir_stages(ex):
    return [s for s in ex.stages if s.group == "mlir"]


def direct(text: str, pipeline: str) -> str:
    """enzyme-ad's own pipeline runner on the whole pipeline at once, normalised like our stages."""
    _, out = enzyme.enzyme_call.run_pass_pipeline([], text, pipeline)
    return strip_locations(publish_functions(out, {"main"}))


@pytest.mark.parametrize("preset", pl.PRESETS)
def test_every_preset_produces_its_stages(attention, preset):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline=preset)
    assert ex.error is None
    p = pl.preset(preset)
    names = [s.name for s in mlir_stages(ex)]
    assert len(names) == len(p.steps)
    assert [n.split("#")[0] for n in names] == [s.base_name for s in p.steps]
    assert ex.names[:2] == ["jaxpr", "stablehlo"]
    # every stage names its parent, and the chain is the stage order
    for prev, cur in zip(ex.stages, ex.stages[1:]):
        if cur.group != "backend":
            assert cur.parent == prev.name
    last = mlir_stages(ex)[-1] if names else ex["stablehlo"]
    assert "func.func public @main" in last.text and "loc(" not in last.text
    assert ex.stages[-1].group == "backend"


def test_whole_default_pipeline_matches_enzyme_ad(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="enzyme_ad_default")
    want = direct(ex["stablehlo"].text_with_locations, enzyme.full_optimization_pass_pipeline())
    assert mlir_stages(ex)[-1].text == want


def test_disabling_dot_transpose_matches_enzyme_ad_excluding_it(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="enzyme_ad_default")
    off = ex.with_patterns(disable=["dot_transpose"])
    src = ex["stablehlo"].text_with_locations
    want = direct(src, enzyme.full_optimization_pass_pipeline(excluded_passes=["dot_transpose"]))
    assert mlir_stages(off)[-1].text == want
    assert mlir_stages(off)[-1].text != mlir_stages(ex)[-1].text
    # the masked attention keeps transposes next to its dots when the pattern is off
    assert mlir_stages(off)[-1].text.count("stablehlo.transpose") > mlir_stages(ex)[-1].text.count("stablehlo.transpose")
    # and the stage that first differs is a pattern stage, not an earlier one
    first = next(a.name for a, b in zip(mlir_stages(ex), mlir_stages(off)) if a.text != b.text)
    assert first.startswith("enzyme-hlo-patterns#")


def test_enable_adds_a_pattern_that_is_off_by_default(attention):
    cat = wb.patterns()
    row = cat[cat.name == "sum_to_conv"].iloc[0]
    assert not row.default_enabled and row.group == "sum to conv"
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="canonicalize,enzyme-hlo-patterns", enable=["sum_to_conv"])
    assert "sum_to_conv" in mlir_stages(ex)[-1].produced_by
    plain = wb.explore(fn, *args, pipeline="canonicalize,enzyme-hlo-patterns")
    assert mlir_stages(plain)[-1].name == "enzyme-hlo-patterns#1"
    assert "sum_to_conv" not in mlir_stages(plain)[-1].produced_by


def test_pattern_catalog_comes_from_enzyme_ad():
    cat = wb.patterns()
    assert len(cat) > 450
    assert set(cat.columns) >= {"name", "group", "default_enabled", "parameters"}
    specs = enzyme.optimization_passes().split("patterns=")[1].split("}")[0].split(";")
    default_names = {s.split("<")[0].split("(")[0] for s in specs}
    assert set(cat[cat.default_enabled].name) == default_names
    groups = set(cat.group)
    assert {"base", "const-prop", "pad", "licm", "scatter/gather", "no_nan", "all_finite",
            "transpose up", "transpose down", "reshape up", "reshape down"} <= groups
    assert cat.set_index("name").loc["no_nan_self_sub_simplify", "group"] == "no_nan"
    assert cat.set_index("name").loc["concatenate_op_canon", "parameters"] == "1024"
    # options shape the list: max_constant_threshold lands in the parameters
    assert wb.patterns(max_constant_threshold=7).set_index("name").loc["concatenate_op_canon", "parameters"] == "7"


def test_a_default_explore_asks_enzyme_ad_for_its_lists_only_and_an_added_pattern_reads_the_catalog():
    """The catalog (one worker request per group switch, ~20) is what toggles, the panel's list and
    wb.patterns() read; a first explore with the default patterns needs only enzyme-ad's own lists."""
    from workbench.pipeline import catalog as C

    def f(x):
        return -(-jnp.sin(x.T.T))

    asked: list = []
    worker, call = default_runner().worker, default_runner().worker.call

    def counting(method, *args, **kwargs):
        asked.append(method)
        return call(method, *args, **kwargs)

    C.catalog.cache_clear()
    C._specs.cache_clear()
    C.pattern_list.cache_clear()
    worker.call = counting
    try:
        ex = wb.explore(f, jnp.ones((4, 3)), pipeline="all")
        assert ex.error is None and C.catalog.cache_info().misses == 0
        lists = asked.count("transform_passes")
        assert 1 <= lists <= 3  # the pattern lists the preset's pattern passes run (and their direction)
        extra = next(p.name for p in C.catalog() if not p.default_enabled)
        asked.clear()
        C.catalog.cache_clear()
        C._specs.cache_clear()
        C.pattern_list.cache_clear()
        on = ex.with_patterns(enable=[extra])
        assert C.catalog.cache_info().misses >= 1 and asked.count("transform_passes") > lists
        assert any(extra in s.produced_by for s in on.stages if s.name.startswith("enzyme-hlo-patterns"))
    finally:
        del worker.call


def test_a_toggle_recomputes_only_later_stages(attention):
    fn, args = attention
    runner = default_runner()
    runner.clear()  # an earlier test of this process may have made the toggled stages already
    ex = wb.explore(fn, *args, pipeline="all")
    steps = mlir_stages(ex)
    first_patterns = next(i for i, s in enumerate(steps) if s.name.startswith("enzyme-hlo-patterns"))
    before = runner.worker.executions
    hits = runner.hits
    off = ex.with_patterns(disable=["dot_transpose"])
    ran = runner.worker.executions - before
    assert runner.hits - hits >= first_patterns  # every stage before the first pattern stage came from the cache
    assert 1 <= ran <= len(steps) - first_patterns
    assert [s.text for s in mlir_stages(off)[:first_patterns]] == [s.text for s in steps[:first_patterns]]
    before = runner.worker.executions
    again = ex.with_patterns(disable=["dot_transpose"])
    assert runner.worker.executions == before  # the same toggle twice costs no pass execution
    assert mlir_stages(again)[-1].text == mlir_stages(off)[-1].text


def test_a_failing_pass_keeps_earlier_stages(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="canonicalize,cse,one-shot-bufferize,canonicalize")
    assert isinstance(ex.error, wb.StageError)
    assert ex.error.stage == "one-shot-bufferize#1"
    assert "not bufferized" in ex.error.diagnostics
    assert [s.name for s in ex.stages] == ["jaxpr", "stablehlo", "canonicalize#1", "cse#1", "one-shot-bufferize#1"]
    assert ex.stages[-1].error and ex["cse#1"].text.strip()
    # the worker survives and the next exploration works
    assert wb.explore(fn, *args, pipeline="canonicalize").error is None


def test_a_pass_that_runs_too_long_is_stopped_and_the_worker_restarts(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="cse,enzyme-hlo-patterns", timeout=0.001)
    assert ex.error is not None and "was stopped" in ex.error.reason
    assert ex.names[-1] == ex.error.stage
    assert wb.explore(fn, *args, pipeline="cse").error is None


def test_a_crashed_worker_is_replaced():
    w = default_runner().worker
    w.call("parse_module", "module {\n}\n")  # a live process first: an earlier test may have left it stopped
    restarts = w.restarts
    from workbench.pipeline.worker import WorkerCrash

    with pytest.raises(WorkerCrash) as e:
        w.call("crash", "abort")
    assert e.value.exitcode is not None and e.value.exitcode != 0
    name = w.call("run_pipeline", "module {\n}\n", "canonicalize").value.entry
    assert w.restarts == restarts + 1


def test_xla_stages_have_pass_names(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="all")
    names = ex.names
    assert "xla:before_optimizations" in names and "xla:optimized" in names
    xla = [n for n in names if n.startswith("xla:") and "#" in n]
    assert any(n.startswith("xla:algsimp#") for n in xla) and any(n.startswith("xla:fusion#") for n in xla)
    assert "backend:llvm-ir" in names and "backend:buffer-assignment" in names
    assert "algsimp" in ex.xla_passes
    assert "HloModule" in ex["xla:optimized"].text
    no_alg = ex.with_xla(disable=["algsimp"])
    assert not any(n.startswith("xla:algsimp#") for n in no_alg.names)
    assert no_alg.pipeline_stages == ex.pipeline_stages  # MLIR stages reused as they are


def test_xla_options_that_would_abort_are_refused(attention):
    fn, args = attention
    with pytest.raises(wb.XlaOptionError, match="together"):
        wb.explore(fn, *args, xla_disable=["algsimp"], xla_options={"xla_enable_hlo_passes_only": "cse"})
    ex = wb.explore(fn, *args, pipeline="none", xla_options={"xla_no_such_flag": "1"})
    assert ex.error.stage == "xla:compile" and "xla_no_such_flag" in str(ex.error)
    assert ex["stablehlo"].text


def test_unknown_names_suggest_the_closest(attention):
    fn, args = attention
    with pytest.raises(wb.UnknownNameError) as e:
        wb.explore(fn, *args, disable=["transpose_transpos"])
    assert "transpose_transpose" in str(e.value)
    with pytest.raises(wb.UnknownNameError) as e:
        wb.explore(fn, *args, pipeline="only_enzym")
    assert "only_enzyme" in str(e.value)
    with pytest.raises(wb.UnknownNameError):
        wb.explore(fn, *args, not_an_option=True)
    ex = wb.explore(fn, *args, pipeline="canonicalize")
    with pytest.raises(wb.UnknownNameError) as e:
        ex.stage("canonicalise#1")
    assert "canonicalize#1" in str(e.value)


@pytest.mark.parametrize("pipeline,fragment", [
    ("canonicalize,{cse", "missing .}."),
    ("canonicalize,cse}", "unbalanced"),
    ("canonicalize,,cse", "empty pass"),
    ("canonicalize,no-such-pass", "no-such-pass"),
    ("canonicalize{no-such-option=1}", "no-such-option"),
])
def test_unparsable_pipelines_are_refused_before_running(attention, pipeline, fragment):
    fn, args = attention
    before = default_runner().worker.executions
    with pytest.raises(wb.PipelineSyntaxError, match=fragment):
        wb.explore(fn, *args, pipeline=pipeline)
    assert default_runner().worker.executions - before <= 1  # at most the parse check on an empty module


def test_a_function_that_fails_to_trace_shows_the_users_frame():
    def bad(x):
        return x @ jnp.ones((5, 5))  # shapes do not match

    with pytest.raises(wb.TraceError) as e:
        wb.explore(bad, jnp.ones((3, 4)))
    msg = str(e.value)
    assert "test_core.py" in msg and "x @ jnp.ones((5, 5))" in msg
    assert "jax/_src" not in msg and "workbench/" not in msg


def test_non_array_arguments_are_static_where_jax_allows():
    def scaled(x, mode, n):
        return jnp.sin(x) * n if mode == "sin" else jnp.cos(x) * n

    ex = wb.explore(scaled, jnp.ones((3,)), "sin", 2.0, pipeline="canonicalize")
    assert "stablehlo.sine" in ex["stablehlo"].text and "cosine" not in ex["stablehlo"].text
    with pytest.raises(wb.ArgumentError, match="argument 1"):
        wb.explore(scaled, jnp.ones((3,)), ["sin", object()], 2.0)


def test_missing_enzyme_gives_a_clear_notice_and_upstream_still_works(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "no_enzyme.py"
    script.write_text(
        "import jax.numpy as jnp, workbench as wb\n"
        "f = lambda x: jnp.exp(x) + jnp.exp(x)\n"
        "try:\n"
        "    wb.explore(f, jnp.ones(3), pipeline='all')\n"
        "except wb.WorkbenchError as e:\n"
        "    print('NOTICE', e)\n"
        "ex = wb.explore(f, jnp.ones(3), pipeline='upstream')\n"
        "print('STAGES', [s.name for s in ex.stages if s.group == 'mlir'], ex.error)\n"
        "print('EXP', ex['cse#1'].text.count('stablehlo.exponential'), 'xla:optimized' in ex.names)\n")
    env = {**__import__("os").environ, "HLO_WORKBENCH_NO_ENZYME": "1"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300).stdout
    assert "NOTICE" in out and "enzyme-ad is not installed" in out
    assert "STAGES ['canonicalize#1', 'cse#1', 'symbol-dce#1'] None" in out
    assert "EXP 1 True" in out


def test_explore_text_takes_any_functions():
    def two(x):
        return jnp.exp(x) + jnp.exp(x)

    text = jax.jit(two).lower(jnp.ones((4,))).as_text().replace("@main", "@helper").replace("public @helper", "private @helper")
    text = text.replace("module @jit_two attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {",
                        "module @jit_two {")
    ex = wb.explore_text(text, pipeline="cse")
    assert ex.names[0] == "input" and ex.error is None
    assert ex["cse#1"].text.count("stablehlo.exponential") == 1 < ex["input"].text.count("stablehlo.exponential")
    assert not any(s.group == "xla" for s in ex.stages)  # no @main: nothing to compile
    full = wb.explore_text(jax.jit(two).lower(jnp.ones((4,))).as_text(), pipeline="all")
    assert full.error is None and "xla:optimized" in full.names


def test_changed_keeps_only_stages_that_changed(attention):
    fn, args = attention
    ex = wb.explore(fn, *args)
    ch = ex.changed()
    assert ch and all(s.changed for s in ch)
    assert {s.name for s in ex.stages if not s.changed}.isdisjoint({s.name for s in ch})
    for s in ch:
        if s.parent and s.group == "mlir":
            assert s.text != ex[s.parent].text
    # positions count as Python's do, and each lookup is by name, position or Stage alike
    assert ex[-1].name == ex.names[len(ex) - 1] and ex[-len(ex)].name == "jaxpr"
    assert ex[ch[0]] is ch[0] and ex.stage(ch[-1].name).name == ch[-1].name


def test_diff_between_any_two_stages(attention):
    fn, args = attention
    ex = wb.explore(fn, *args)
    d = ex.diff("stablehlo", "enzyme-hlo-patterns#1")
    assert not d.is_empty and "@@" in d.unified()
    delta = d.ops_delta().set_index("op")
    assert delta.loc["stablehlo.transpose", "delta"] < 0  # the patterns fold transposes into dots
    assert ex.diff(ex["cse#2"], ex.stage("canonicalize#4")).is_empty  # a pass that changed nothing
    assert ex.diff("cse#1").unified() == ex.diff("canonicalize#1", "cse#1").unified()  # one stage: vs its parent
    html = ex.diff(2, 6)._repr_html_()
    assert "<table" in html and "stablehlo.dot_general" in html


def test_reactant_and_enzyme_ad_option_names_shape_the_pattern_list(attention):
    fn, args = attention
    ex = wb.explore(fn, *args, pipeline="enzyme-hlo-patterns", enable_licm_optimization_passes=False, no_nan=True)
    assert ex.spec.selection.options.licm is False and ex.spec.selection.options.no_nan
    passes = mlir_stages(ex)[-1].produced_by
    want = enzyme.optimization_passes(enable_licm_optimization_passes=False, no_nan=True)
    assert passes.split("patterns=")[1].split("}")[0] == want.split("patterns=")[1].split("}")[0]
    down = wb.explore(fn, *args, pipeline="enzyme-hlo-patterns", transpose_propagate="down", reshape_propagate="none")
    want = enzyme.optimization_passes(transpose_propagate="down", reshape_propagate="none")
    assert mlir_stages(down)[-1].produced_by.split("patterns=")[1].split("}")[0] == want.split("patterns=")[1].split("}")[0]


def small(x, y):
    return jnp.tanh(x @ y).sum(0)


SMALL_ARGS = (jnp.ones((16, 16)), jnp.ones((16, 8)))


def test_every_road_into_xla_options_is_one_validated_road():
    by_kwarg = wb.explore(small, *SMALL_ARGS, xla_disable=["algsimp"])
    by_option = wb.explore(small, *SMALL_ARGS, xla_options={"xla_disable_hlo_passes": "algsimp"})
    by_list = wb.explore(small, *SMALL_ARGS, xla_options={"xla_disable_hlo_passes": ["algsimp"]})
    by_toggle = wb.explore(small, *SMALL_ARGS).with_xla(disable=["algsimp"])
    for ex in (by_kwarg, by_option, by_list, by_toggle):
        assert dict(ex.spec.xla_options) == {"xla_disable_hlo_passes": "algsimp"}
        assert "algsimp" not in ex.xla_passes and not any(n.startswith("xla:algsimp") for n in ex.names)
    assert "algsimp" in wb.explore(small, *SMALL_ARGS).xla_passes
    both = dict(ex.spec.xla_options) | {"xla_enable_hlo_passes_only": "cse"}
    with pytest.raises(wb.XlaOptionError, match="cannot be given together"):
        wb.explore(small, *SMALL_ARGS, xla_options=both)
    with pytest.raises(wb.XlaOptionError, match="cannot be given together"):
        wb.explore(small, *SMALL_ARGS, xla_disable=["algsimp"], xla_options={"xla_enable_hlo_passes_only": "cse"})
    with pytest.raises(wb.XlaOptionError, match="cannot be given together"):
        by_kwarg.with_xla(xla_enable_hlo_passes_only="cse")
    merged = by_option.with_xla(disable=["cse"])
    assert dict(merged.spec.xla_options)["xla_disable_hlo_passes"] == "algsimp,cse"
    assert "xla_disable_hlo_passes" not in dict(merged.with_xla(enable=["algsimp", "cse"]).spec.xla_options)


def test_an_xla_pass_that_did_not_run_is_named_with_the_closest_ones():
    with pytest.warns(wb.XlaPassWarning, match=r"'algsimpp'.*no effect.*Closest passes it reported: algsimp"):
        ex = wb.explore(small, *SMALL_ARGS, xla_disable=["algsimpp"])  # said by the call that named it
    with pytest.warns(wb.XlaPassWarning, match="no-such-xla-pass"):
        wb.explore(small, *SMALL_ARGS).with_xla(disable=["no-such-xla-pass"])
    assert len(ex.warnings) == 1 and "algsimpp" in ex.warnings[0]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", wb.XlaPassWarning)
        assert wb.explore(small, *SMALL_ARGS, xla_disable=["algsimp"]).warnings == []


def test_every_stage_key_goes_through_one_lookup():
    ex = wb.explore(small, *SMALL_ARGS, pipeline="canonicalize")
    n = len(ex)
    for bad in (999, -n - 1):
        with pytest.raises(wb.UnknownNameError, match=f"{n} stages"):
            ex.stage(bad)
        with pytest.raises(wb.UnknownNameError):
            ex.diff("jaxpr", bad)
        with pytest.raises(wb.UnknownNameError):
            ex[bad]
    with pytest.raises(wb.UnknownNameError, match="did you mean 'canonicalize#1'"):
        ex.diff("canonicalise#1", "stablehlo")
    with pytest.raises(wb.UnknownNameError):
        ex.run(3.5)
    import numpy as np

    assert ex[np.int64(1)].name == "stablehlo" and ex.diff("stablehlo", -1) is not None


def test_a_jitted_functions_static_arguments_are_honoured():
    def g(x, n, name):
        return getattr(jnp, name)(x) * n

    x = jnp.linspace(0.0, 1.0, 4)
    for fn in (jax.jit(g, static_argnums=(1, 2)), jax.jit(g, static_argnames=("n", "name"))):
        ex = wb.explore(fn, x, 3, "sin")
        assert ex.spec.traced.static_argnums == (1, 2)
        r = ex.run(repeat=1)
        assert r.check.passed and jnp.allclose(r.outputs, jnp.sin(x) * 3)
    plain = wb.explore(g, x, 3, "sin")  # a string is static by itself; a Python number stays traced
    assert plain.spec.traced.static_argnums == (2,)
    assert "tensor<i32>" in plain["stablehlo"].text.split("func.func public @main")[1].split("\n")[0]


def test_a_concrete_value_error_names_the_argument_and_the_fix():
    def repeat(x, n):
        for _ in range(n):
            x = x * 2
        return x

    with pytest.raises(wb.TraceError, match=r"argument 1 \('n'\).*static_argnums=\(1,\)"):
        wb.explore(repeat, jnp.ones(3), 3)
    ex = wb.explore(repeat, jnp.ones(3), 3, static_argnums=(1,))
    assert jnp.all(ex.run(repeat=1).outputs == 8.0)


def test_the_worker_imports_the_same_workbench_whatever_the_current_directory(tmp_path):
    import os
    import subprocess
    import sys

    shadow = tmp_path / "workbench"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('a workbench from the current directory was imported')\n")
    (shadow / "worker.py").write_text("raise SystemExit('a workbench from the current directory was imported')\n")
    root = os.path.dirname(os.path.dirname(wb.__file__))
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import jax.numpy as jnp, workbench as wb\n"
            "ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(3), pipeline='canonicalize')\n"
            "assert ex.error is None, ex.error\nprint(ex.names[2])\n") % root
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "canonicalize#1", r.stderr[-2000:]


def test_the_repr_counts_the_stages_that_len_and_the_table_count():
    ex = wb.explore(small, *SMALL_ARGS, pipeline="canonicalize,cse")
    n_early = len(ex.pipeline_stages)
    assert repr(ex) == f"Exploration('small', pipeline='canonicalize,cse', device={ex.spec.device!r}, {n_early} stages so far; XLA stages on demand)"
    fresh = wb.explore(small, *SMALL_ARGS, pipeline="canonicalize,cse")
    page = fresh._repr_html_()  # a notebook's view: its header counts the rows of its table
    assert f"{len(fresh)} stages: {n_early} trace/MLIR" in page and page.count("<tr>") == len(fresh)
    n, n_late = len(ex), len([s for s in ex.stages if s.group in ("xla", "backend")])
    assert n_late > 0 and len(ex.table()) == n
    assert repr(ex) == (f"Exploration('small', pipeline='canonicalize,cse', device={ex.spec.device!r}, {n} stages: {n_early} trace/MLIR "
                        f"+ {n_late} XLA/backend)")
    failed = wb.explore(small, *SMALL_ARGS, pipeline="canonicalize,one-shot-bufferize")
    assert failed.error is not None and f"{len(failed)} stages, no XLA stages, FAILED at " in repr(failed)


def test_an_unknown_stage_name_lists_the_stages_or_the_closest_ones():
    ex = wb.explore(small, *SMALL_ARGS, pipeline="canonicalize")
    with pytest.raises(KeyError) as caught:  # the type users catch: UnknownNameError is a KeyError
        ex.stage("nope")
    assert isinstance(caught.value, wb.UnknownNameError)
    assert str(caught.value) == "unknown stage 'nope': the stages are " + ", ".join(ex.names)
    assert "xla:optimized" in str(caught.value)
    with pytest.raises(wb.UnknownNameError, match=r"unknown stage 'canonicalize#2'; did you mean 'canonicalize#1'\?$"):
        ex["canonicalize#2"]


def test_stepping_a_module_no_pattern_applies_to_says_so():
    ex = wb.explore(jnp.sin, jnp.ones((4,)), pipeline="none")
    seen = []
    s = ex.step(progress=False, on_progress=lambda done, total: seen.append((done, total)))
    assert s.applied() == [] and s.names == ["stablehlo"] and seen == [(0, None)]
    assert repr(s) == "Stepwise('sin', no pattern applies to 'stablehlo')"
    assert "no pattern applies to 'stablehlo'" in html.unescape(s._repr_html_())
    assert "XLA/backend" not in repr(s)


def test_stepping_reports_each_step_and_the_end():
    def f(x, y):
        return (x.T @ y.T).T + 1.0

    ex = wb.explore(f, jnp.ones((8, 4)), jnp.ones((6, 8)), pipeline="none")
    seen = []
    s = ex.step(progress=False, on_progress=lambda done, total: seen.append((done, total)))
    applied = s.applied()
    assert applied and seen == [(k, None) for k in range(len(applied) + 1)]
    assert [n.split(":", 1)[1].rsplit("#", 1)[0] for n in s.names[1:]] == applied  # one stage per step, named for it
    assert repr(s).startswith(f"Stepwise('f', {len(applied)} steps from 'stablehlo': {applied[0]}")
    assert ("ends where one greedy run" in repr(s)) == s.matches_reference


def test_the_jaxpr_stage_is_plain_text_where_jax_would_colour_it(monkeypatch):
    """In a Jupyter kernel JAX's pretty-printer colours a jaxpr's str(); the stage's text stays plain."""
    from jax._src import pretty_printer

    monkeypatch.setattr(pretty_printer, "CAN_USE_COLOR", True)
    assert "\x1b[" in str(jax.make_jaxpr(lambda x: x + 1)(jnp.ones(2)))  # what the kernel would have printed
    text = wb.explore(lambda x: jnp.sin(x) + 1, jnp.ones(2), pipeline="none")["jaxpr"].text
    assert "\x1b" not in text and "sin" in text and text.startswith("{ lambda")


def test_a_stage_and_an_exploration_show_hostile_text_escaped_in_a_notebook():
    """Jupyter renders _repr_html_ as HTML: a stage name, a module text and an error holding markup show as
    text (markupsafe escapes each value once), never as elements."""
    hostile = "<img src=x onerror=alert(1)>"
    stage = Stage(name=hostile, group="mlir", text=f'"x" = {hostile}', produced_by="p", changed=True,
                  seconds=None, parent=None)
    failed = dataclasses.replace(stage, text="", error=f"failed at {hostile} & more")
    for html_text in (stage._repr_html_(), failed._repr_html_()):
        assert "<img" not in html_text and "&lt;img src=x onerror=alert(1)&gt;" in html_text
    assert "&amp; more" in failed._repr_html_()
    ex = wb.explore_text(f'module {{ func.func @main() attributes {{note = "{hostile}"}} {{ return }} }}',
                         pipeline="canonicalize", title=hostile)
    assert hostile in ex.stage("input").text and hostile in repr(ex)
    shown = ex._repr_html_()
    assert "<img" not in shown and "&lt;img" in shown and "<table" in shown
