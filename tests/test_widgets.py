"""The pass-toggle panel's behaviour without a browser: what it shows of a real Exploration, what a
toggle does to it, the Python line each action shows, and errors shown in the panel, never raised.

The browser sends the panel messages (a click on a stage, a pattern checkbox); these tests send the
same messages and read the widgets' state, which is what the browser renders."""
import re
import threading
import time

import jax.numpy as jnp
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench as wb
from workbench.analysis.diff import diff_texts
from workbench.views.widgets import Panel, StageList, panel
from workbench.views.widgets.diffview import KINDS

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def transposed_dot(x, y):
    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="module")
def ex():
    return wb.explore(transposed_dot, jnp.ones((8, 16)), jnp.ones((4, 8)))


@pytest.fixture
def p(ex):
    panel = Panel(ex, background=False)
    yield panel
    panel.close()


def last_mlir(ex):
    return [s for s in ex.stages if s.group == "mlir"][-1]


def rows_of(view):
    """The diff view's rows as the browser reads them: (before line, after line, kind)."""
    import array

    flat = array.array("i")
    flat.frombytes(view.rows)
    return [(flat[k], flat[k + 1], KINDS[flat[k + 2]]) for k in range(0, len(flat), 3)]


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def send(widget, **msg):
    widget._receive(widget, msg, [])


# -- what the panel shows --------------------------------------------------------------------------------
def test_the_stage_list_shows_every_stage_with_group_time_and_state(p, ex):
    rows = p.stage_list.stages
    assert [r["name"] for r in rows] == ex.names
    by_name = {r["name"]: r for r in rows}
    assert by_name["enzyme-hlo-patterns#1"]["state"] == "changed"
    assert by_name["cse#1"]["state"] == "unchanged"
    assert by_name["xla:optimized"]["group"] == "xla" and by_name["stablehlo"]["group"] == "trace"
    assert by_name["enzyme-hlo-patterns#1"]["ms"] > 0
    # hiding unchanged stages keeps the changed ones and the two picked
    p.stage_list.hide_unchanged = True
    shown = p.stage_list.visible()
    assert "cse#1" not in shown and "enzyme-hlo-patterns#1" in shown and p.left in shown
    assert "error" not in p.status.value and p.last_error is None


def test_the_default_pair_is_the_first_changing_pass_and_its_parent(p):
    assert (p.left, p.right) == ("canonicalize#2", "enzyme-hlo-patterns#1")
    assert (p.left_picker.value, p.right_picker.value) == (p.left, p.right)
    assert (p.stage_list.left, p.stage_list.right) == (p.left, p.right)
    rows = rows_of(p.diff_view)
    deleted = [p.diff_view.before.splitlines()[i] for i, _, kind in rows if kind == "deleted"]
    assert sum("stablehlo.transpose" in line for line in deleted) == 3
    assert "stablehlo.transpose" not in p.diff_view.after
    assert "stablehlo.transpose</code> 3&rarr;0 (-3)" in p.ops_delta.value


def test_the_diff_rows_are_the_structural_diffs_alignment(ex):
    a, b = ex["canonicalize#2"], ex["enzyme-hlo-patterns#1"]
    d = diff_texts(a.text, b.text)
    rows = d.rows()
    # every line of both sides appears once, in order
    assert [i for i, _, _ in rows if i >= 0] == list(range(len(d.before)))
    assert [j for _, j, _ in rows if j >= 0] == list(range(len(d.after)))
    # equal rows hold equal text, and the other rows are exactly the lines in Diff.changes
    assert all(d.before[i] == d.after[j] for i, j, k in rows if k == "equal")
    assert {i for i, _, k in rows if i >= 0 and k != "equal"} == {i for c in d.changes for i in c.before}
    assert {j for _, j, k in rows if j >= 0 and k != "equal"} == {j for c in d.changes for j in c.after}


def test_clicking_a_stage_diffs_it_with_its_parent_and_shift_click_sets_the_left(p, ex):
    send(p.stage_list, type="pick", name="xla:optimized", side="right")
    assert (p.left, p.right) == (ex["xla:optimized"].parent, "xla:optimized")
    assert p.diff_view.after_name == "xla:optimized" and p.diff_view.row_count > 0
    assert p.python == f'ex.diff("{p.left}", "xla:optimized")'
    send(p.stage_list, type="pick", name="stablehlo", side="left")
    assert (p.left, p.right) == ("stablehlo", "xla:optimized")
    p.left_picker.value = "jaxpr"  # the dropdowns pick one side each
    assert p.left == "jaxpr" and p.diff_view.before_name == "jaxpr"


def test_every_action_shows_its_line_of_python(ex):
    p = Panel(ex, name="_hlo", background=False)
    send(p.patterns_view, type="toggle", names=["dot_transpose"], on=False)
    assert p.python == '_hlo = _hlo.with_patterns(disable=["dot_transpose"])'
    assert '_hlo = _hlo.with_patterns(disable=[&quot;dot_transpose&quot;])' in p.python_box.value
    p.run(device="cpu:0", repeat=3)
    assert p.python == f'_hlo.run("{ex.default_run_stage().name}", device="cpu:0", repeat=3)'
    p.set_pipeline("only_enzyme")
    assert p.python == '_hlo = _hlo.with_pipeline("only_enzyme")'
    assert p.history == ['_hlo = _hlo.with_patterns(disable=["dot_transpose"])',
                         '_hlo = _hlo.with_pipeline("only_enzyme")']
    # the history, pasted, gives the Exploration the panel shows
    ns = {"_hlo": ex, "wb": wb}
    for line in p.history:
        exec(line, ns)
    assert ns["_hlo"].names == p.ex.names
    assert last_mlir(ns["_hlo"]).text == last_mlir(p.ex).text
    assert p.ex.pipeline_string in p.pipeline_box.value.replace("&quot;", '"')
    p.close()


# -- toggling --------------------------------------------------------------------------------------------
def test_switching_a_pattern_off_changes_the_final_stage_and_keeps_the_pair(p, ex):
    send(p.stage_list, type="pick", name="enzyme-hlo-patterns#1")
    pair = (p.left, p.right)
    send(p.patterns_view, type="toggle", names=["dot_transpose"], on=False)
    assert p.ex is not ex and p.ex.spec.selection.disabled == {"dot_transpose"}
    assert last_mlir(p.ex).text != last_mlir(ex).text
    assert last_mlir(p.ex).text.count("stablehlo.transpose") > last_mlir(ex).text.count("stablehlo.transpose")
    assert (p.left, p.right) == pair
    assert "dot_transpose" not in p.patterns_view.enabled
    assert p.patterns_view.changed_from_default() == ["dot_transpose"]
    assert "1 pattern off" in p.header.value
    # the diff now shows what the remaining patterns did
    assert "stablehlo.transpose</code> 3&rarr;2 (-1)" in p.ops_delta.value
    # and back on: the original pipeline's texts
    send(p.patterns_view, type="toggle", names=["dot_transpose"], on=True)
    assert p.ex.spec.selection.disabled == frozenset()
    assert last_mlir(p.ex).text == last_mlir(ex).text


def test_a_group_switch_and_reset(p, ex):
    pad = [name for name, group, _ in p.patterns_view.items if group == "pad"]
    assert len(pad) > 10
    send(p.patterns_view, type="toggle", names=pad, on=True)
    assert set(pad) <= set(p.patterns_view.enabled)
    assert p.ex.spec.selection.enabled == {n for n, g, d in p.patterns_view.items if g == "pad" and not d}
    send(p.patterns_view, type="toggle", names=["dot_transpose"], on=False)
    send(p.patterns_view, type="reset")
    assert p.patterns_view.changed_from_default() == []
    assert p.ex.spec.selection.disabled == frozenset() and p.ex.spec.selection.enabled == frozenset()
    assert p.python.startswith("ex = ex.with_patterns(enable=")


def test_xla_passes_switch_off_and_stay_listed(p, ex):
    assert "algsimp" in [n for n, _, _ in p.xla_view.items]
    send(p.xla_view, type="toggle", names=["algsimp"], on=False)
    assert p.python == 'ex = ex.with_xla(disable=["algsimp"])'
    assert dict(p.ex.spec.xla_options)["xla_disable_hlo_passes"] == "algsimp"
    assert "algsimp" in [n for n, _, _ in p.xla_view.items] and "algsimp" not in p.xla_view.enabled
    assert "XLA off: algsimp" in p.header.value
    # the MLIR stages are the same objects: only XLA recompiled
    assert [s.text for s in p.ex.stages if s.group == "mlir"] == [s.text for s in ex.stages if s.group == "mlir"]
    send(p.xla_view, type="reset")
    assert "xla_disable_hlo_passes" not in dict(p.ex.spec.xla_options)


def test_a_preset_or_pipeline_string_rebuilds_keeping_the_stages_that_remain(p, ex):
    send(p.stage_list, type="pick", name="xla:optimized")
    p.preset.value = "only_enzyme"  # as the dropdown does
    assert p.ex.spec.pipeline == "only_enzyme" and "enzyme#1" in p.ex.names
    assert p.right == "xla:optimized"
    p.pipeline_text.value = "canonicalize,cse"
    p.apply_pipeline.click()
    assert [s.name for s in p.ex.stages if s.group == "mlir"] == ["canonicalize#1", "cse#1"]
    assert p.preset.value == "(custom string)"
    assert ex.with_pipeline("canonicalize,cse").names == p.ex.names


# -- running, costing, analysing --------------------------------------------------------------------------
def test_run_shows_outputs_timing_and_the_check(p, ex):
    assert p.device.options == tuple(wb.devices()["id"])
    p.device.value = "cpu:0"
    p.run_button.click()
    out = p.run_out.value
    # measured against the function in float64, next to the as-lowered program's own error
    assert "passed" in out and "against <code>transposed_dot in float64</code>" in out
    assert re.search(r"the program as lowered: [\d.e+-]+;", out) and "<th>as lowered</th>" in out
    assert re.search(r"median <b>[\d.]+ ms</b> &middot; min [\d.]+ ms &middot; IQR [\d.]+ ms &middot; n=20", out)
    assert "<td>(4, 16)</td><td>float32</td>" in out
    p.compare(["stablehlo", ex.default_run_stage().name])
    assert "speedup" in p.compare_out.value and p.compare_out.value.count("True") == 2


def test_cost_and_graph_tabs_fill_when_opened(p):
    p.tabs.selected_index = 3  # Cost
    assert "<b>Every stage</b>" in p.cost_table.value and "flops" in p.cost_table.value
    assert p.cost_plot.outputs[0]["data"]["image/png"]
    assert "stablehlo.dot_general" in p.op_costs.value
    p.tabs.selected_index = 4  # Graph
    assert "<svg" in p.graph_out.value or "not available" in p.graph_out.value


def test_applicable_patterns(p):
    p.find_applicable("stablehlo")
    out = p.applicable_out.value
    assert "<code>dot_transpose</code>" in out and "patterns change <code>stablehlo</code> when applied alone" in out
    assert p.python == 'ex.applicable("stablehlo", details=True)'


def test_bisect_finds_the_patterns_that_form_a_dot_and_switches_them_off():
    def mul_sum(x, y):  # the patterns turn the multiply + reduce into one dot_general
        return jnp.sum(x[:, :, None] * y[None, :, :], axis=1)

    ex = wb.explore(mul_sum, jnp.ones((4, 8)), jnp.ones((8, 3)))
    p = Panel(ex, background=False)
    p.bisect("op_count_above(op, n)", op="stablehlo.dot_general", n=0)
    assert p.last_error is None, p.last_error
    assert p.python == 'ex.bisect(wb.op_count_above("stablehlo.dot_general", 0))'
    culprits = p._culprits
    assert culprits and all(f"<code>{c}</code>" in p.bisect_out.value for c in culprits)
    assert p.culprits_off.layout.display == ""
    p.culprits_off.click()
    assert p.ex.spec.selection.disabled == set(culprits)
    assert "stablehlo.dot_general" not in last_mlir(p.ex).text
    # a predicate that does not hold with every pattern on is explained, not raised
    p.bisect("crashes()")
    assert "does not hold with all candidate patterns" in p.last_error and "wb-error" in p.status.value
    # a predicate kind that does not exist is named, with the known ones
    with pytest.raises(wb.UnknownNameError, match=r"unknown predicate 'crash\(\)'; did you mean 'crashes\(\)'"):
        p.bisect("crash()")
    assert p.predicate.value == "crashes()"
    p.close()


# -- errors are shown, not raised -------------------------------------------------------------------------
def test_errors_are_shown_in_the_panel_and_the_exploration_stays(p, ex):
    p.set_pipeline("canonicalize,not-a-pass")
    assert p.ex is ex
    assert "not-a-pass" in p.last_error and "wb-error" in p.status.value
    p.run(stage="xla:optimized")
    assert "XLA HLO text" in p.last_error and p.run_out.value == ""
    p.run(stage="stablehlo")  # the next action clears the error
    assert p.last_error is None and "passed" in p.run_out.value


def test_a_failed_stage_is_picked_and_explained(ex):
    bad = wb.explore(transposed_dot, jnp.ones((8, 16)), jnp.ones((4, 8)),
                     pipeline="canonicalize,cse,one-shot-bufferize")
    p = Panel(bad, background=False)
    assert p.right == "one-shot-bufferize#1" and p.left == "cse#1"
    assert "one-shot-bufferize#1 failed" in p.stage_error.value
    assert "has no text to compare" in p.diff_view.message and p.diff_view.row_count == 0
    assert {r["name"]: r["state"] for r in p.stage_list.stages}["one-shot-bufferize#1"] == "error"
    p.close()


# -- the worker thread -----------------------------------------------------------------------------------
def test_work_runs_on_a_thread_with_the_buttons_disabled(ex):
    p = Panel(ex)
    p.wait()
    gate = threading.Event()
    try:
        p._submit("holding", None, gate.wait, busy=True)
        started = threading.Event()
        p._submit("marker", None, started.set, busy=False)
        assert p.run_button.disabled and p.patterns_view.busy
        p.toggle_patterns(["dot_transpose"], False)  # queued behind the running job
        assert p.ex is ex and not started.is_set()
    finally:
        gate.set()
    p.wait()
    assert started.is_set() and not p.run_button.disabled and not p.patterns_view.busy
    assert p.ex.spec.selection.disabled == {"dot_transpose"}
    assert p.right == "enzyme-hlo-patterns#1"
    # a reset queued right behind a toggle resets what the toggle left
    p.toggle_patterns(["transpose_transpose"], False)
    p.reset_patterns()
    p.wait()
    assert p.ex.spec.selection.disabled == frozenset() and p.last_error is None
    assert p.history[-1] == 'ex = ex.with_patterns(enable=["dot_transpose", "transpose_transpose"])'
    p.close()


# -- the magic ------------------------------------------------------------------------------------------
def test_the_magic_shows_the_panel_where_widgets_render_and_text_elsewhere():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    shell.run_cell("import jax.numpy as jnp")
    cell = ("%%hlo -p only_enzyme --stage stablehlo --vs enzyme#1 -o tp\n"
            "def tp(x):\n    return jnp.transpose(x) * 2\ntp(jnp.ones((4, 8)))\n")
    with capture_output() as cap:
        shell.run_cell(cell)
    assert "# diff stablehlo -> enzyme#1" in cap.stdout and not cap.outputs  # a terminal: text
    shell.kernel = object()  # what a Jupyter kernel's shell has
    try:
        with capture_output() as cap:
            result = shell.run_cell(cell)
        assert result.success and cap.stdout == ""
        bundle = cap.outputs[0].data
        assert bundle["text/plain"].startswith("pass-toggle panel for Exploration('tp'")
        from ipywidgets import widget_serialization

        model_id = bundle["application/vnd.jupyter.widget-view+json"]["model_id"]
        root = widget_serialization["from_json"]("IPY_MODEL_" + model_id, None)
        stage_list = next(w for w in descendants(root) if isinstance(w, StageList))
        deadline = time.monotonic() + 120
        while not stage_list.stages and time.monotonic() < deadline:  # the panel reads the stages on its thread
            time.sleep(0.1)
        assert [r["name"] for r in stage_list.stages] == shell.user_ns["tp"].names
        assert (stage_list.left, stage_list.right) == ("stablehlo", "enzyme#1")
        with capture_output() as cap:
            shell.run_cell(cell.replace("-o tp", "-o tp --no-panel"))
        assert "# diff stablehlo -> enzyme#1" in cap.stdout
    finally:
        del shell.kernel


def test_panel_function_names_the_variable(ex):
    p = panel(ex, name="mine")
    p.wait()
    p.toggle_xla(["algsimp"], False)
    p.wait()
    assert p.python == 'mine = mine.with_xla(disable=["algsimp"])' and p.last_error is None
    p.close()
