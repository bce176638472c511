"""What a toggle changed (issue 27, item 2): ``ex2.changes_since(ex)`` on real toggles of real programs --
the settings in words, the stages recomputed and reused, whether the final MLIR module and xla:optimized
changed and by which ops, their diffs -- and the panel's one-line summary with its two diff buttons."""
import dataclasses

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.diff import Changes, normalize
from workbench.analysis.diff.changes import setting_changes
from workbench.analysis.diff.result import rows_of_runs
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.ir.ops import op_counts
from workbench.options import PatternOptions, PatternSelection
from workbench.pipeline.build import with_toggles
from workbench.views.widgets import Panel
from workbench.views.widgets.changes import summary_facts

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def transposes(x, y):  # three transposes that Enzyme-JaX's patterns remove, and XLA's compile folds
    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="module")
def ex():
    """tests/conftest.py's transposes at shapes of this file's own, so that no toggle another file made in this
    process serves this file's steps from the caches; its XLA stages read."""
    e = wb.explore(transposes, jnp.ones((6, 10)), jnp.ones((3, 6)))
    e.stages  # noqa: B018 -- XLA compiled, so a toggle's compile is compared with it
    return e


def final_mlir(e):
    return [s for s in e.pipeline_stages if s.is_module][-1]


def counted_delta(before, after):
    """The op counts that differ between two stages' texts, counted on the texts themselves."""
    b, a = op_counts(before.text), op_counts(after.text)
    return {op: a[op] - b[op] for op in b.keys() | a.keys() if a[op] != b[op]}


def check_work(c: Changes, before, after):
    """Every trace and MLIR stage of ``after`` is either recomputed or reused, once, in order; the ones
    recomputed ran (not from a cache); the trace is the same trace."""
    early = [s.name for s in after.pipeline_stages]
    assert sorted(c.recomputed + c.reused) == sorted(early)
    assert [n for n in early if n in c.recomputed] == list(c.recomputed)
    assert not any(after[n].cached for n in c.recomputed)
    assert {"jaxpr", "stablehlo"} <= set(c.reused)


def test_a_pattern_toggle_says_what_it_recomputed_and_that_the_final_module_changed(ex):
    ex2 = ex.with_patterns(disable=["dot_transpose"])
    c = ex2.changes_since(ex)
    assert c.settings == ("dot_transpose off",) and not c.failed
    check_work(c, ex, ex2)
    first = ex2.names.index("enzyme-hlo-patterns#1")  # the first stage whose pass string the toggle changes
    assert c.recomputed[0] == "enzyme-hlo-patterns#1"
    assert set(ex2.names[:first]) <= set(c.reused)
    # the final module: the same stage, changed, by what op counts of the two texts say
    assert (c.mlir.before, c.mlir.after) == (final_mlir(ex), final_mlir(ex2))
    assert c.mlir.changed and counted_delta(final_mlir(ex), final_mlir(ex2)) == {"stablehlo.transpose": 2}
    assert c.mlir.ops == (("stablehlo.transpose", 0, 2, 2),)
    d = c.diff("mlir")
    assert d.before == tuple(normalize(final_mlir(ex).text)) and not d.is_empty
    assert (d.before_name, d.after_name) == (f"{final_mlir(ex).name} (before)", f"{final_mlir(ex2).name} (after)")
    # XLA folds the transposes into the dot: its optimized module is the same
    assert c.xla.before is ex["xla:optimized"] and c.xla.after is ex2["xla:optimized"]
    assert not c.xla.changed and c.xla.ops == () and c.diff("xla").is_empty
    assert c.xla_compiled is (not ex2["xla:optimized"].cached)
    n = len(c.recomputed)
    text = str(c)
    assert text.startswith(f"dot_transpose off: {n} stages recomputed (enzyme-hlo-patterns#1, ")
    assert f"{len(c.reused)} reused" in text
    assert f"final MLIR ({final_mlir(ex).name}) changed: stablehlo.transpose +2" in text
    assert text.endswith("; xla:optimized unchanged") and repr(c) == f"Changes({text})"
    assert "<li>final MLIR (" in c._repr_html_()


def test_a_toggle_that_changes_nothing_says_unchanged(ex):
    same = ex.with_patterns(disable=["pad_simplify"])  # a pattern with nothing to do in this program
    c = same.changes_since(ex)
    assert c.settings == ("pad_simplify off",)
    check_work(c, ex, same)
    assert "enzyme-hlo-patterns#1" in c.recomputed  # its pass string changed, so it ran
    assert final_mlir(same).text == final_mlir(ex).text
    assert not c.mlir.changed and c.mlir.ops == () and c.diff("mlir").is_empty
    assert c.xla_compiled is False and not c.xla.changed  # the same module: XLA's compile is served
    assert f"final MLIR ({final_mlir(ex).name}) unchanged" in str(c)
    assert str(c).endswith("XLA's compile reused; " f"final MLIR ({final_mlir(ex).name}) unchanged; "
                           "xla:optimized unchanged")
    # an Exploration against itself: the same settings, nothing ran
    itself = ex.changes_since(ex)
    assert itself.settings == () and itself.recomputed == () and itself.xla_compiled is False
    assert str(itself).startswith("the same settings: nothing recomputed (")


def test_an_xla_toggle_recomputes_no_mlir_stage_and_compares_xla_optimized(ex):
    off = ex.with_xla(disable=["algsimp"])
    c = off.changes_since(ex)
    assert c.settings == ("XLA pass algsimp off",)
    assert c.recomputed == () and len(c.reused) == len(ex.pipeline_stages)
    assert not c.mlir.changed and c.mlir.after is final_mlir(ex)  # the MLIR stages are the very same
    assert c.xla is not None and c.xla.changed == (not c.diff("xla").is_empty)
    assert dict((op, d) for op, _, _, d in c.xla.ops) == counted_delta(ex["xla:optimized"], off["xla:optimized"])
    assert "nothing recomputed" in str(c)
    back = off.with_xla(enable=["algsimp"])
    c = back.changes_since(off)
    assert c.settings == ("XLA pass algsimp on",)
    assert c.xla_compiled is False  # ex's compile, served from the cache
    assert c.xla.after.text == ex["xla:optimized"].text and "XLA's compile reused" in str(c)


def test_settings_in_words_pipeline_options_and_groups(ex):
    c = ex.with_pipeline("canonicalize,cse").changes_since(ex)
    assert c.settings == ("pipeline all → canonicalize,cse",)
    assert c.mlir.label == f"final MLIR ({final_mlir(ex).name} → cse#1)" and c.mlir.changed
    assert counted_delta(final_mlir(ex), c.mlir.after) == {op: d for op, _, _, d in c.mlir.ops}
    names = ["transpose_transpose", "dot_transpose", "transpose_dot_reorder", "pad_simplify", "slice_simplify"]
    many = ex.with_patterns(disable=names)
    assert many.changes_since(ex).settings == (
        "5 patterns off (dot_transpose, pad_simplify, slice_simplify, transpose_dot_reorder and 1 more)",)
    assert ex.changes_since(many).settings[0].startswith("5 patterns on (")
    # XLA options and the rest of the spec, on specs alone (no compile)
    fast = dataclasses.replace(ex.spec, xla_options=(("xla_cpu_enable_fast_math", "True"),), device="cpu:1")
    assert setting_changes(ex.spec, fast) == ["XLA option xla_cpu_enable_fast_math=True",
                                              f"device {ex.spec.device} → cpu:1"]
    assert setting_changes(fast, ex.spec)[0] == "XLA option xla_cpu_enable_fast_math unset"
    nan = with_toggles(dataclasses.replace(ex.spec, selection=PatternSelection(PatternOptions(no_nan=True))),
                       ["dot_transpose"], [])
    assert setting_changes(ex.spec, nan) == ["pattern option no_nan False → True", "dot_transpose off"]
    with pytest.raises(UnknownNameError, match="did you mean 'xla'"):
        c.diff("xl")


def test_without_wait_a_compile_under_way_is_left_out_and_said():
    def scaled_t(x):
        return (x.T * 3.0).T + 1.0

    e = wb.explore(scaled_t, jnp.ones((3, 5)), pipeline="canonicalize,enzyme-hlo-patterns")
    e.stages  # noqa: B018 -- e's XLA stages in
    # with_only_patterns starts no compile, and no other test makes this module: XLA has not compiled it
    e2 = e.with_only_patterns(["transpose_transpose"])
    assert not e2.xla_ready()
    c = e2.changes_since(e, wait=False)
    assert c.xla is None and c.xla_compiled is None and c.xla_note == "XLA has not compiled it yet"
    assert str(c).endswith("xla:optimized: XLA has not compiled it yet")
    with pytest.raises(WorkbenchError, match="no xla diff: XLA has not compiled it yet"):
        c.diff("xla")
    assert c.mlir is not None and not e2.xla_ready()  # it did not wait
    waited = e2.changes_since(e)  # waits: the compile runs
    assert waited.xla is not None and waited.xla_compiled is True
    assert e.changes_since(e2, wait=False).xla is not None  # both in now


def test_names_and_notes_show_as_text_in_the_markup_and_as_given_in_the_panels_facts():
    xss = "<script>alert(1)</script>"
    c = Changes(settings=(f"pipeline all → {xss}",), recomputed=(xss,), reused=(), xla_compiled=None, mlir=None,
                xla=None, mlir_note=xss, xla_note=xss)
    markup = c._repr_html_()
    assert "<script" not in markup and markup.count("&lt;script&gt;") == 4
    facts = summary_facts(c)  # the panel's component writes them as text
    assert facts["head"] == f"pipeline all → {xss}" and sum(p["text"].count(xss) for p in facts["parts"]) == 3


def said(s) -> str:
    """The change summary's line as its component writes it: the settings, then each phrase."""
    return summary_line(s.widget.data)


def summary_line(data: dict) -> str:
    return f"{data.get('head', '')}: " + " · ".join(p["text"] for p in data.get("parts", []))


def act(component, action: str, **payload):
    """A click in a component, as it sends it to Python."""
    component._heard(component, {"action": action, "payload": payload}, [])


# -- the panel --------------------------------------------------------------------------------------------
def test_the_panel_says_what_each_rebuild_changed_and_diffs_against_before(ex):
    p = Panel(ex, background=False)
    s = p.summary
    assert s.widget.data["head"] == "no toggle yet" and s.changes is None  # it says what will show there
    p.toggle_patterns(["dot_transpose"], False)
    p.wait()
    line = said(s)
    assert s.changes is not None and s.widget.data["head"] == "dot_transpose off"
    n = len(s.changes.recomputed)  # none when an earlier test ran the same toggle: every step is served then
    assert (f"{n} stages recomputed (enzyme-hlo-patterns#1, " if n else "nothing recomputed (") in line
    check_work(s.changes, ex, p.ex)
    mlir = f"final MLIR ({final_mlir(ex).name}) changed: stablehlo.transpose +2"
    assert mlir in line and [p["text"] for p in s.widget.data["parts"] if p["changed"]] == [mlir]  # drawn marked
    assert "xla:optimized unchanged" in line
    assert s.widget.data["mlir"] and s.widget.data["xla"]  # both buttons enabled
    p.tabs.selected_index = 2  # the Run tab: the button brings the Diff tab forward
    act(s.widget, "changes", which="mlir")
    assert p.tabs.selected_index == 0 and p.last_error is None
    diff = p.diff_view.data["diff"]
    assert (diff["left"], diff["right"]) == (f"{final_mlir(ex).name} (before)", f"{final_mlir(p.ex).name} (after)")
    assert {"op": "stablehlo.transpose", "before": 0, "after": 2, "delta": 2} in p.diff_view.data["ops_delta"]
    assert "the last toggle" in p.diff_view.data["note"]
    assert p.python.startswith('ex.changes_since(before).diff("mlir")')
    act(s.widget, "changes", which="xla")
    diff = p.diff_view.data["diff"]
    assert diff["left"] == "xla:optimized (before)" and p.diff_view.data["ops_delta"] == []
    assert {k for _, _, k in rows_of_runs(diff["runs"])} == {"equal"}  # no change
    # a pick shows the picked pair again
    p.pick("enzyme-hlo-patterns#1")
    assert p.diff_view.data["diff"]["right"] == "enzyme-hlo-patterns#1" and p.diff_view.data["note"] == ""
    # the reset and a pipeline change say theirs
    p.reset_patterns()
    assert s.widget.data["head"] == "dot_transpose on" and "stablehlo.transpose -2" in said(s)
    p.set_pipeline("canonicalize,cse")
    assert said(s).startswith("pipeline all → canonicalize,cse")
    p.toggle_patterns(["pad_simplify"], False)  # no patterns step: nothing to change
    assert said(s).count("unchanged") == 2 and "nothing recomputed" in said(s)
    p.close()


def test_in_the_background_xlas_part_comes_with_its_stages(ex):
    # a pair no other test switches off, so XLA compiles anew: the CPU's and the TPU's pipelines share only algsimp
    names = ["algsimp", "reshape-decomposer" if "reshape-decomposer" in ex.xla_passes else "bfloat16-propagation"]
    assert set(names) <= set(ex.xla_passes)
    p = Panel(ex).wait()
    seen = []
    p.summary.widget.observe(lambda ch: seen.append(summary_line(ch["new"])), "data")
    p.toggle_xla(names, False)
    p.wait()  # the rebuild, then XLA's stages
    # first without XLA's part (its compile takes longer than showing the MLIR stages), then with it
    assert "xla:optimized: XLA has not compiled it yet" in seen[0] and len(seen) == 2
    line = said(p.summary)
    assert p.summary.widget.data["head"] == f"2 XLA passes off ({', '.join(sorted(names))})"
    assert "nothing recomputed" in line
    assert "xla:optimized" in line and "not compiled" not in line and "XLA has not" not in line
    assert p.summary.changes.xla is not None and p.summary.widget.data["xla"]
    p.close()


# -- real programs of the corpus ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, changes", [("debug_print_loop", False), ("eqx_filter_jit", True),
                                           ("nnx_transformer", True)])
def test_a_toggle_of_a_corpus_program_is_summed_up(name, changes):
    """A program with jax.debug.print (a host callback; it holds no transpose), one written with Equinox,
    one with Flax NNX (attention: transposes): every pattern about transposes off, and what the summary
    says matches the stages."""
    from tests.corpus import program

    inst = program(name).build()
    e = wb.explore(inst.fn, *inst.args)
    catalog = wb.patterns()
    off = sorted(catalog[catalog.default_enabled & catalog.name.str.contains("transpose")].name)
    e2 = e.with_patterns(disable=off)
    c = e2.changes_since(e)
    assert c.settings == (f"{len(off)} patterns off ({', '.join(off[:4])} and {len(off) - 4} more)",)
    check_work(c, e, e2)
    assert {op: d for op, _, _, d in c.mlir.ops} == counted_delta(final_mlir(e), final_mlir(e2))
    assert c.mlir.changed == (not c.diff("mlir").is_empty) == changes
    assert not changes or dict((op, d) for op, _, _, d in c.mlir.ops)["stablehlo.transpose"] > 0
    assert c.xla is not None, c.xla_note
    assert {op: d for op, _, _, d in c.xla.ops} == counted_delta(e["xla:optimized"], e2["xla:optimized"])
    assert ("final MLIR (" + final_mlir(e).name + (") changed" if c.mlir.changed else ") unchanged")) in str(c)
    jax.effects_barrier()
