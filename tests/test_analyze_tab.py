"""The Analyze tab's bisection over XLA's passes and over patterns and XLA passes together, its new
predicates (has_op, lacks_op, differs_from) and their repr, and its Reduce button, on real small
programs through ``Panel(ex, background=False)``: what the tab shows, the Python line of each action,
and that the line, pasted, gives what the tab shows."""
from html import unescape

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

import workbench as wb
from workbench.views.widgets import Panel
from workbench.views.widgets.analyze import (applicable_html, applicable_rows, bisect_failed_html,
                                             reduce_failed_html)

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@jax.jit
def _scaled_sine(x):
    return jnp.sin(x) * 2


def elementwise(x):  # the nested jit is a call, which XLA inlines (call-inliner)
    return _scaled_sine(x) + jnp.exp(x)


NO_CALL = 'wb.lacks_op("call", stage="xla:optimized")'


@pytest.fixture(scope="module")
def tb_ex(transposes_ex):
    """tests/conftest.py's jnp.dot(x.T, y.T).T: the patterns remove all three transposes; XLA has nothing to
    do with it."""
    return transposes_ex


@pytest.fixture(scope="module")
def elementwise_ex():
    # only the patterns: without MLIR's inline pass the call reaches XLA
    return wb.explore(elementwise, jnp.ones((8, 4)), pipeline="enzyme-hlo-patterns")


def test_the_predicate_dropdown_offers_the_new_predicates_and_shows_their_repr(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    assert {"has_op(op, stage)", "lacks_op(op, stage)", "differs_from(stage)"} <= set(tab.predicate.options)
    assert "<code>op_count_at_most('stablehlo.transpose', 0)</code>" in unescape(tab.predicate_repr.value)
    tab.predicate.value = "has_op(op, stage)"
    assert (tab.pred_op.layout.display, tab.pred_stage.layout.display, tab.pred_n.layout.display) == ("", "", "none")
    tab.pred_op.value = "stablehlo.dot_general"
    assert "<code>has_op('stablehlo.dot_general')</code>" in unescape(tab.predicate_repr.value)
    tab.pred_stage.value = "xla:optimized"
    assert repr(wb.has_op("stablehlo.dot_general", stage="xla:optimized")) in unescape(tab.predicate_repr.value)
    tab.predicate.value = "differs_from(stage)"  # its stage is required: the tab proposes one
    assert tab.pred_op.layout.display == "none" and tab.pred_stage.value == "xla:optimized"
    tab.pred_stage.value = ""
    tab.predicate.value = "lacks_op(op, stage)"
    tab.predicate.value = "differs_from(stage)"
    assert tab.pred_stage.value == "stablehlo" and "differs_from('stablehlo'" in unescape(tab.predicate_repr.value)
    with pytest.raises(wb.UnknownNameError, match="over"):
        p.bisect(over="everything")
    p.close()


@pytest.mark.slow  # bisects: many pipelines and compiles
def test_bisect_over_all_blames_the_two_patterns_and_no_xla_pass(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    p.bisect("op_count_at_most(op, n)", over="all", op="stablehlo.transpose", n=0)
    assert p.last_error is None, p.last_error
    line = 'ex.bisect(wb.op_count_at_most("stablehlo.transpose", 0), over="all")'
    assert p.python == line and tab.over.value == "all"
    assert tab.culprits == ["dot_transpose", "transpose_dot_reorder"] and tab.culprits_xla == []
    out = tab.bisect_out.value
    assert "<b>2 patterns</b> make " in out and "XLA pass</th>" not in out
    assert "<code>dot_transpose</code>" in out and "<code>transpose_dot_reorder</code>" in out
    assert "<th>without it</th>" in out and "stablehlo.transpose" in out  # the table() column
    assert "XLA passes always on" in out  # always_needed and how it was found
    ns = {"ex": tb_ex, "wb": wb}
    exec(f"res = {line}", ns)
    res = ns["res"]
    assert (res.patterns, res.xla_passes) == (tab.culprits, [])
    assert f"({res.runs} pipeline runs" in out
    assert res.always_needed == [] and f"({res.always_needed_how})" in unescape(out)
    assert tab.culprits_off.layout.display == ""
    tab.culprits_off.click()
    assert p.last_error is None and p.ex.spec.selection.disabled == {"dot_transpose", "transpose_dot_reorder"}
    p.close()


@pytest.mark.slow  # bisects: many pipelines and compiles
def test_bisect_over_xla_blames_the_call_inliner_and_switches_it_off(elementwise_ex):
    p = Panel(elementwise_ex, background=False)
    tab = p.analyze
    p.bisect("lacks_op(op, stage)", over="xla", op="call", stage="xla:optimized")
    assert p.last_error is None, p.last_error
    line = f'ex.bisect({NO_CALL}, over="xla")'
    assert p.python == line
    assert tab.culprits == [] and tab.culprits_xla == ["call-inliner"]
    out = tab.bisect_out.value
    assert "<b>1 XLA pass</b> makes " in out and "<th>XLA pass</th>" in out and "<code>call-inliner</code>" in out
    assert "<th>pattern</th>" not in out and "XLA passes always on" in out
    assert 'ex = ex.with_xla(disable=["call-inliner"])' in unescape(out)
    assert "what they do together, on xla:optimized" in out or "could not be computed" in out \
        or "change no op count of xla:optimized" in out
    assert tab.culprits_off.layout.display == ""
    tab.culprits_off.click()  # through the panel's XLA toggles
    assert p.last_error is None and p.python == 'ex = ex.with_xla(disable=["call-inliner"])'
    assert not wb.lacks_op("call", stage="xla:optimized")(p.ex)
    # a domain with nothing to find is said in the tab, and the panel keeps working
    p.bisect("op_count_at_most(op, n)", over="xla", op="stablehlo.sine", n=0)
    assert "Nothing bisected" in tab.bisect_out.value and p.last_error
    assert "<td>every XLA pass</td>" in tab.bisect_out.value and tab.culprits_xla == []
    p.run(stage="stablehlo")
    assert p.last_error is None
    p.close()


def test_reduce_shows_the_reduced_module_and_counts_its_runs(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    assert "stablehlo" in tab.reduce_stage.options and tab.reduce_stage.value == "stablehlo"
    assert not any(s.startswith("xla:") for s in tab.reduce_stage.options)
    notes = []
    tab._note = notes.append  # the status line's note, which the job clears when it ends
    tab.reduce("has_op(op, stage)", op="stablehlo.dot_general", stage="")
    assert p.last_error is None, p.last_error
    line = 'r = ex.reduce(wb.has_op("stablehlo.dot_general"))'
    assert p.python == line
    ns = {"ex": tb_ex, "wb": wb}
    exec(line.replace("))", "), progress=False)"), ns)
    r = ns["r"]
    assert (r.ops_before, r.ops_after) == (4, 1)
    out = tab.reduce_out.value
    assert f"<b>ops {r.ops_before} &rarr; {r.ops_after}</b>" in out and "<b>ops 4 &rarr; 1</b>" in out
    assert f"{r.runs} runs, {r.skipped} skipped" in out and "Interrupted" not in out
    assert "<code>has_op('stablehlo.dot_general')</code>" in unescape(out)
    assert '<pre class="wb-reduced">' in out and "stablehlo.dot_general %arg0" in out and "tensor&lt;" in out
    assert tab.reduced.text == r.text and "stablehlo.transpose" not in r.text
    assert notes and notes[-1] == f" · reduce run {r.runs}"
    assert [int(n.rsplit(" ", 1)[1]) for n in notes] == list(range(1, r.runs + 1))
    # nothing to reduce: shown in the tab, the panel keeps working
    tab.reduce("lacks_op(op, stage)", from_stage="stablehlo", op="stablehlo.dot_general")
    assert "does not hold" in p.last_error and "Nothing reduced" in tab.reduce_out.value
    assert p.python == 'r = ex.reduce(wb.lacks_op("stablehlo.dot_general"))'
    p.run(stage="stablehlo")
    assert p.last_error is None and p.core.model["runs"][-1]["check"]["passed"]
    p.close()


def test_compare_pipelines_shows_each_pipeline_side_by_side(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    tab.compare_pipelines(["all", "none"], device="cpu:0")
    df = tab.compared
    assert list(df.pipeline) == ["all", "none"] and df.check_passed.all() and (df.error == "").all()
    assert df.set_index("pipeline").loc["none", "ops_stablehlo"] > df.set_index("pipeline").loc["all", "ops_stablehlo"]
    line = "wb.compare_pipelines(ex, pipelines=['all', 'none'], device=\"cpu:0\")"
    assert p.python == line and "ops by dialect" in tab.pipelines_out.value
    assert "<td>none</td>" in tab.pipelines_out.value and tab.pipelines.value == "all, none"
    # the line, pasted, compares the same pipelines
    again = wb.compare_pipelines(tb_ex, pipelines=["all", "none"], device="cpu:0")
    assert list(again.pipeline) == list(df.pipeline) and list(again.ops) == list(df.ops)
    tab.compare_pipelines(["all", "no-such-pipeline"])  # a pipeline that does not parse: said in the tab
    assert tab.compared is None and "No comparison" in tab.pipelines_out.value
    assert "does not refer to a registered pass" in tab.pipelines_out.value
    tab.compare_pipelines(["none"])  # and the tab works on
    assert list(tab.compared.pipeline) == ["none"]
    p.close()


HOSTILE = "<img src=x onerror=alert(1)>"  # a name, pass string or message that is markup
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"


def test_names_pass_strings_and_messages_are_shown_escaped(tb_ex):
    # through the tab: the panel's variable name, a predicate's op and stage, a pipeline MLIR cannot parse
    p = Panel(tb_ex, name=HOSTILE, background=False)
    tab = p.analyze
    try:
        tab.predicate.value = "has_op(op, stage)"
        tab.pred_op.value = tab.pred_stage.value = HOSTILE
        assert tab.predicate_repr.value.count(ESCAPED) == 2 and "<img" not in tab.predicate_repr.value
        tab.compare_pipelines([HOSTILE])  # MLIR's parse error quotes the pipeline
        out = tab.pipelines_out.value
        assert "No comparison" in out and ESCAPED in out and "<img" not in out
    finally:
        p.close()
    # the renderers: every value they are given
    df = pd.DataFrame({"name": [HOSTILE], "group": [HOSTILE], "seconds": [0.002], "changed": [True], "error": [""]})
    out = applicable_html(HOSTILE, HOSTILE, df)  # the variable's name and the stage
    assert out.count(ESCAPED) == 2 and "<img" not in out and "1 of 1 patterns change" in out
    assert applicable_rows(df) == [{"name": HOSTILE, "group": HOSTILE, "ms": "2"}]  # escaped by applicable.js
    out = bisect_failed_html(HOSTILE, HOSTILE, [True, False])
    assert out.count(ESCAPED) == 2 and "<img" not in out and "<td>every enabled pattern</td>" in out
    out = reduce_failed_html(HOSTILE, HOSTILE, HOSTILE)
    assert out.count(ESCAPED) == 3 and "<img" not in out and "<b>Nothing reduced</b>" in out
