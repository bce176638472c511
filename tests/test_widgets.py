"""The pass-toggle panel's behaviour without a browser: what it shows of a real Exploration, what a
toggle does to it, the Python line each action shows, and errors shown in the panel, never raised.

The browser sends the panel messages (a click on a stage, a pattern checkbox); these tests send the
same messages and read the widgets' state, which is what the browser renders."""
import re
import threading
import time
from html import unescape

import jax.numpy as jnp
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench as wb
from workbench.analysis.diff import diff_texts
from workbench.views.widgets import Panel, panel
from workbench.views.widgets.component import Component
from workbench.analysis.diff.result import rows_of_runs

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def transposed_dot(x, y):
    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="module")
def ex(transposes_ex):
    """tests/conftest.py's exploration of the same program as transposed_dot (three transposes the patterns
    remove)."""
    return transposes_ex


@pytest.fixture
def p(ex):
    panel = Panel(ex, background=False)
    yield panel
    panel.close()


def last_mlir(ex):
    return [s for s in ex.stages if s.group == "mlir"][-1]


def rows_of(view):
    """The diff view's rows as the browser reads them from the runs it is sent: (before line, after line, kind)."""
    return rows_of_runs(view.data["diff"]["runs"])


def shown(p, side="after"):
    """The name and normalized text the Diff tab shows on ``side``."""
    return p.diff_view.side(side)


def ops(p):
    """The op counts' change the Diff tab shows: {op: (before, after, delta)}."""
    return {r["op"]: (r["before"], r["after"], r["delta"]) for r in p.diff_view.data["ops_delta"]}


def diff_act(p, action, **payload):
    """A click in the Diff tab (a picker, swap), as its component sends it to Python."""
    p.diff_view._heard(p.diff_view, {"action": action, "payload": payload}, [])


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def send(widget, **msg):
    widget._receive(widget, msg, [])


def pick(p, left, right):
    """A pick in the stage list (a stage's name: it against its parent; an A or B button), as its component sends it."""
    p.core.stages._heard(p.core.stages, {"action": "pair", "payload": {"left": left, "right": right}}, [])


def stages(p):
    """The stage list's rows as the panel sends them to its component (the view model's stages), by name."""
    return {r["stage"]: r for r in p.core.model["stages"]}


def click(p, action, **payload):
    """A click in the Passes tab, as its component sends it to Python."""
    p.passes.view._heard(p.passes.view, {"action": action, "payload": payload}, [])


def changed(p, key="patterns"):
    """The switches of the Passes tab's list ``key`` that differ from their default, as the tab shows them."""
    shown = p.passes.data[key]
    return [n for n, _group, default in shown["items"] if (n in shown["on"]) != default]


# -- what the panel shows --------------------------------------------------------------------------------
def test_the_stage_list_shows_every_stage_with_group_time_and_state(p, ex):
    """The header, the stage list and the runs are view components of one view model (its "hide unchanged" filter:
    extensions/hlo-workbench-lab/test/stages.test.ts)."""
    assert [r["stage"] for r in p.core.model["stages"]] == ex.names and p.core.model["source"] == "panel"
    by_name = stages(p)
    assert by_name["enzyme-hlo-patterns#1"]["changed"] and not by_name["cse#1"]["changed"]
    assert by_name["xla:optimized"]["group"] == "xla" and by_name["stablehlo"]["group"] == "trace"
    assert by_name["enzyme-hlo-patterns#1"]["ms"] > 0 and by_name["enzyme-hlo-patterns#1"]["parent"] == "canonicalize#2"
    assert [c.data["sections"] for c in (p.core.header, p.core.stages)] == [["header", "edits"], ["stages"]]
    assert all(c.data["model"] is p.core.model for c in (p.core.header, p.core.stages))
    assert p.run_tab.data["runs"] == p.core.model["runs"]  # the Run tab's runs: the view model's
    assert "texts" in p.core.model and p.core.model["texts"] == {}  # the pair's own facts are the Diff tab's
    assert "error" not in p.status.value and p.last_error is None


def test_the_default_pair_is_the_first_changing_pass_and_its_parent(p):
    assert (p.left, p.right) == ("canonicalize#2", "enzyme-hlo-patterns#1")
    assert (p.diff_view.data["left"], p.diff_view.data["right"]) == (p.left, p.right)
    assert p.core.model["shown"] == {"left": p.left, "right": p.right}
    rows = rows_of(p.diff_view)
    deleted = [shown(p, "before")[1].splitlines()[i] for i, _, kind in rows if kind == "deleted"]
    assert sum("stablehlo.transpose" in line for line in deleted) == 3
    assert "stablehlo.transpose" not in shown(p)[1]
    assert ops(p)["stablehlo.transpose"] == (3, 0, -3)


def test_the_diff_says_its_text_is_normalized_and_how(p):
    """Issue 27 item 10: the diff view shows normalized text, not the stage's own; a label says so and what
    differs (the component's words: views.js), and each thing it says holds for the pair shown."""
    from workbench.views.widgets.component import views_module

    label = views_module()[0]
    assert "normalized text: values renumbered in order (%0, %1, \\u2026; B\\u2019s onto A\\u2019s)" in label
    assert "locations, metadata and public dropped" in label and 'ex["B"].text is the stage as written' in label
    own, shown = p.ex[p.left].text, p.diff_view.side("before")[1]
    assert "func.func public @main" in own and "func.func public" not in shown and "func.func @main" in shown
    assert "loc(" in p.ex[p.left].text_with_locations and "loc(" not in shown
    assert re.search(r"^\s*%0 = ", shown, re.M)


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


def test_the_viewer_reads_row_kinds_by_the_diffs_codes(ex):
    """The panel and the report send a row's kind as its code (analysis/diff/kinds.py); diffview.js names
    it back with its own KINDS, which must be the same list in the same order."""
    import ast
    import pathlib

    from workbench.analysis.diff.kinds import ROW_KINDS

    script = (pathlib.Path(wb.__file__).parent / "assets" / "diffview.js").read_text()
    found = re.findall(r"^const KINDS = (\[[^\]]*\]);", script, re.MULTILINE)
    assert len(found) == 1 and tuple(ast.literal_eval(found[0])) == ROW_KINDS  # Prettier's quotes: 'equal'...
    d = diff_texts(ex["canonicalize#2"].text, ex["enzyme-hlo-patterns#1"].text)
    assert {k for _, _, k in d.rows()} <= set(ROW_KINDS)


def test_the_views_get_what_they_share_inlined_once(tmp_path):
    """diffview.css imports what the views share (assets/widgetkit.css) by a relative path,
    which a page loading them from a string cannot follow: the widgets and the report get each file with the
    file it imports in place of the import line, once however many files import it."""
    from workbench.artifacts.assets import ASSETS, inlined
    from workbench.artifacts.report import render_diff_page

    css = inlined(ASSETS / "diffview.css")
    assert not [line for line in css.splitlines() if line.startswith("@import ")] and css.count(".wb-bar {") == 1
    page = render_diff_page("a\n", "b\n", "x", "y")  # the components, built: esbuild followed the imports
    assert "@import" not in page and "./widgetkit.js" not in page
    (tmp_path / "a.js").write_text('import { b } from "./b.js";\nimport { c } from "./c.js";\nexport const a = b + c;\n')
    (tmp_path / "b.js").write_text('import { c } from "./c.js";\nexport const b = c;')
    (tmp_path / "c.js").write_text("export const c = 1;\n")
    assert inlined(tmp_path / "a.js") == "export const c = 1;\nexport const b = c;\nexport const a = b + c;\n"


XSS = "<script>alert(1)</script>\"'&"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&amp;"  # as markupsafe escapes it, once


def test_the_panels_markup_shows_names_lines_and_errors_as_text_escaped_once(ex):
    """Every piece of the panel's markup escapes what it is given (a variable name, a Python line, a pipeline, an
    error), once: a name like a script tag shows as text and runs nowhere. (The header, the stage list, the runs and
    the Cost and Compile tabs are drawn by the view components, which write every text as text.)"""
    from workbench.views.widgets import html as wb_html

    shown = {  # the first three wrote a name or a Python line unescaped before
        "pipeline_string": wb_html.pipeline_string(XSS, XSS),
        "python_line": wb_html.python_line(XSS, [XSS], [XSS]),
        "python_line, unbound": wb_html.python_line(XSS, [], (), XSS),
        "failed": wb_html.failed(f"{XSS}\n{XSS}"),
        "done": wb_html.done(XSS),
        "running": wb_html.running(XSS, 1.0, XSS, 1, 2),
        "awaiting": wb_html.awaiting(XSS, 1.0, wb_html.done("compiled")),
    }
    for what, markup in shown.items():
        assert "<script" not in markup and "&amp;lt;" not in markup, what
        assert XSS_ESCAPED in markup, what
    assert "&#10003; compiled</span>" in shown["awaiting"]  # the markup of how the last job ended, kept


def test_clicking_a_stage_diffs_it_with_its_parent_and_shift_click_sets_the_left(p, ex):
    pick(p, ex["xla:optimized"].parent, "xla:optimized")  # its name in the list: it against its parent
    assert (p.left, p.right) == (ex["xla:optimized"].parent, "xla:optimized")
    assert shown(p)[0] == "xla:optimized" and rows_of(p.diff_view)
    assert p.python == f'ex.diff("{p.left}", "xla:optimized")' and p.core.model["shown"]["right"] == "xla:optimized"
    pick(p, "stablehlo", "xla:optimized")  # its A button
    assert (p.left, p.right) == ("stablehlo", "xla:optimized") and p.core.model["shown"]["left"] == "stablehlo"
    p.pick("cse#1", "left")  # Panel.pick, a user's call
    assert (p.left, p.right) == ("cse#1", "xla:optimized")
    pick(p, "gone#1", "xla:optimized")  # a stage of an Exploration replaced meanwhile: nothing changes
    assert (p.left, p.right) == ("cse#1", "xla:optimized") and p.last_error is None
    diff_act(p, "pick", side="left", stage="jaxpr")  # the Diff tab's pickers pick one side each
    assert p.left == "jaxpr" and shown(p, "before")[0] == "jaxpr" and p.diff_view.data["left"] == "jaxpr"
    diff_act(p, "swap")
    assert (p.left, p.right) == ("xla:optimized", "jaxpr") and shown(p)[0] == "jaxpr" == p.diff_view.data["right"]


def test_every_action_shows_its_line_of_python(ex):
    p = Panel(ex, name="_hlo", background=False)
    click(p, "toggle_patterns", names=["dot_transpose"], on=False)
    assert p.python == '_hlo = _hlo.with_patterns(disable=["dot_transpose"])'
    assert '_hlo = _hlo.with_patterns(disable=["dot_transpose"])' in unescape(p.python_box.value)
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
    assert p.ex.pipeline_string in unescape(p.pipeline_box.value)
    p.close()


# -- toggling --------------------------------------------------------------------------------------------
def test_switching_a_pattern_off_changes_the_final_stage_and_keeps_the_pair(p, ex):
    pick(p, "canonicalize#2", "enzyme-hlo-patterns#1")
    pair = (p.left, p.right)
    click(p, "toggle_patterns", names=["dot_transpose"], on=False)
    assert p.ex is not ex and p.ex.spec.selection.disabled == {"dot_transpose"}
    assert last_mlir(p.ex).text != last_mlir(ex).text
    assert last_mlir(p.ex).text.count("stablehlo.transpose") > last_mlir(ex).text.count("stablehlo.transpose")
    assert (p.left, p.right) == pair
    assert "dot_transpose" not in p.passes.data["patterns"]["on"] and "dot_transpose" not in p.passes.patterns_on()
    assert changed(p) == ["dot_transpose"]
    assert p.core.model["toggles"]["patterns_disabled"] == ["dot_transpose"]
    # the diff now shows what the remaining patterns did
    assert ops(p)["stablehlo.transpose"] == (3, 2, -1)
    # and back on: the original pipeline's texts
    click(p, "toggle_patterns", names=["dot_transpose"], on=True)
    assert p.ex.spec.selection.disabled == frozenset()
    assert last_mlir(p.ex).text == last_mlir(ex).text


def test_a_group_switch_and_reset(p, ex):
    items = p.passes.data["patterns"]["items"]
    pad = [name for name, group, _ in items if group == "pad"]
    assert len(pad) > 10
    click(p, "toggle_patterns", names=pad, on=True)
    assert set(pad) <= set(p.passes.data["patterns"]["on"])
    assert p.ex.spec.selection.enabled == {n for n, g, d in items if g == "pad" and not d}
    click(p, "toggle_patterns", names=["dot_transpose"], on=False)
    click(p, "reset_patterns")
    assert changed(p) == []
    assert p.ex.spec.selection.disabled == frozenset() and p.ex.spec.selection.enabled == frozenset()
    assert p.python.startswith("ex = ex.with_patterns(enable=")


def test_xla_passes_switch_off_and_stay_listed(p, ex):
    assert "algsimp" in [n for n, _, _ in p.passes.data["xla"]["items"]]
    click(p, "toggle_xla", names=["algsimp"], on=False)
    assert p.python == 'ex = ex.with_xla(disable=["algsimp"])'
    assert dict(p.ex.spec.xla_options)["xla_disable_hlo_passes"] == "algsimp"
    xla = p.passes.data["xla"]
    assert "algsimp" in [n for n, _, _ in xla["items"]] and "algsimp" not in xla["on"] and changed(p, "xla") == ["algsimp"]
    assert p.core.model["toggles"]["xla_disabled"] == ["algsimp"]
    # the MLIR stages are the same objects: only XLA recompiled
    assert [s.text for s in p.ex.stages if s.group == "mlir"] == [s.text for s in ex.stages if s.group == "mlir"]
    click(p, "reset_xla")
    assert "xla_disable_hlo_passes" not in dict(p.ex.spec.xla_options)


def test_a_preset_or_pipeline_string_rebuilds_keeping_the_stages_that_remain(p, ex):
    pick(p, ex["xla:optimized"].parent, "xla:optimized")
    assert p.passes.data["pipeline"] == ex.spec.pipeline and "only_enzyme" in p.passes.data["presets"]
    click(p, "set_pipeline", pipeline="only_enzyme")  # as the preset menu does
    assert p.ex.spec.pipeline == "only_enzyme" and "enzyme#1" in p.ex.names
    assert p.right == "xla:optimized" and p.passes.data["pipeline"] == "only_enzyme"
    click(p, "set_pipeline", pipeline=" canonicalize,cse ")  # as the pipeline string's apply button does
    assert [s.name for s in p.ex.stages if s.group == "mlir"] == ["canonicalize#1", "cse#1"]
    assert p.passes.data["pipeline"] == "canonicalize,cse" and p.python == 'ex = ex.with_pipeline("canonicalize,cse")'
    click(p, "set_pipeline", pipeline="  ")  # an empty string changes nothing
    assert p.ex.spec.pipeline == "canonicalize,cse"
    assert ex.with_pipeline("canonicalize,cse").names == p.ex.names


# -- running, costing, analysing --------------------------------------------------------------------------
def test_run_shows_outputs_timing_and_the_check(p, ex):
    assert p.run_tab.data["devices"] == list(wb.devices()["id"])
    p.run_tab._heard("run", {"device": "cpu:0"})  # the Run button, the device picked, as the component sends it
    run = p.core.model["runs"][-1]  # the Run tab's runs (the session's, newest last): the view model's
    # measured against the as-lowered module in float64, leaf by leaf
    assert run["check"]["passed"] and run["check"]["reference"] == "stablehlo promoted to float64"
    assert run["repeat"] == 20 and 0 < run["min_ms"] <= run["median_ms"] and run["stale"] == ""
    assert [(l["shape"], l["dtype"], l["passed"]) for l in run["check"]["leaves"]] == [([4, 16], "float32", True)]
    p.compare(["stablehlo", ex.default_run_stage().name])
    compared = p.run_tab.data["compared"]  # the table the Run tab draws
    assert "speedup" in compared["columns"] and [r[compared["columns"].index("check_passed")]
                                                  for r in compared["rows"]] == [True, True]
    p.run_tab._heard("set", {"stage": "stablehlo", "repeat": 3, "device": "nowhere"})  # a control changed
    assert (p.run_settings.stage, p.run_settings.repeat, p.run_settings.device) == ("stablehlo", 3, "cpu:0")


def test_cost_and_graph_tabs_fill_when_opened(p):
    p.tabs.selected_index = 3  # Cost: what its component draws (the table, the chart from its rows, B per op)
    cost = p.cost.data
    assert cost["python"] == "ex.cost()" and "flops" in cost["table"]["columns"]
    assert [r[0] for r in cost["table"]["rows"]] == p.ex.names
    ops = cost["table"]["columns"].index("ops")  # the chart's bars: the module stages, those that changed marked
    assert sum(isinstance(r[ops], int) for r in cost["table"]["rows"]) >= 2 and p.right in cost["changed"]
    assert cost["ops"]["title"] == f"Per op of {p.right}" and cost["ops"]["python"] == f'ex.cost("{p.right}")'
    assert "stablehlo.dot_general" in [r[0] for r in cost["ops"]["table"]["rows"]]
    p.tabs.selected_index = list(p.tabs.titles).index("Graph")
    graph = p.graph_view  # the right stage's dataflow: graphviz's SVG, without the XML prologue
    assert graph.message == "" and graph.svg.startswith("<svg") and "dot_general" in graph.svg
    assert graph.focus == "" and len(graph.nodes) >= 4


def legend(view) -> list[str]:
    """The caption the graph view shows above the graph (graph_svg's <desc class="wbg-legend">), its lines."""
    m = re.search(r'<desc class="wbg-legend">([^<]*)</desc>', view.svg)
    return unescape(m.group(1)).split("\n") if m else []


def picked(tab) -> tuple[str, str]:
    """The Graph tab's picker: its value and the label it shows, as the component has them."""
    d = tab.view.data
    return d["picked"], dict((v, label) for label, v in d["stages"])[d["picked"]]


def test_the_graph_tab_says_which_stage_it_draws_and_draws_the_one_picked(p, ex):
    from workbench.errors import UnknownNameError, WorkbenchError

    p.pick("enzyme-hlo-patterns#1")
    p.tabs.selected_index = list(p.tabs.titles).index("Graph")  # B of the diff, labelled as such
    tab, view = p.graph, p.graph_view
    assert picked(tab) == ("", "enzyme-hlo-patterns#1 (B of the diff)")
    assert tab.drawn == tab.stage == "enzyme-hlo-patterns#1" and p.python == 'ex.graph("enzyme-hlo-patterns#1")'
    assert legend(view)[0].startswith("enzyme-hlo-patterns#1: ") and "since 'canonicalize#2'" in legend(view)[1]
    # the stages it can draw, in order: StableHLO, the MLIR stages, XLA's HLO; not the jaxpr nor a backend dump
    listed = [value for _, value in tab.view.data["stages"]]
    assert listed == [""] + [s.name for s in ex.stages if s.group in ("trace", "mlir", "xla") and s.name != "jaxpr"]
    assert "xla:optimized" in listed and not any(n.startswith("backend:") for n in listed)

    tab.view._heard(tab.view, {"action": "pick", "payload": {"stage": "stablehlo"}}, [])  # picked in the browser
    assert tab.drawn == "stablehlo" and p.python == 'ex.graph("stablehlo")'  # drawn through ex.graph, the line shown
    assert picked(tab) == ("stablehlo", "stablehlo")
    assert re.match(r"stablehlo: \d+ ops$", legend(view)[0]) and "transpose" in view.svg and view.message == ""
    p.pick("cse#1")  # another B: the stage picked stays, the first entry follows B
    assert tab.drawn == tab.stage == "stablehlo" and tuple(tab.view.data["stages"][0]) == ("cse#1 (B of the diff)", "")
    p.show_graph("xla:optimized")  # from Python, as the picker does
    assert picked(tab)[0] == "xla:optimized" and tab.drawn == "xla:optimized"
    assert re.match(r"xla:optimized: \d+ instructions", legend(view)[0])
    p.show_graph("")  # B again
    assert picked(tab) == ("", "cse#1 (B of the diff)") and tab.drawn == "cse#1" and legend(view)[0].startswith("cse#1: ")
    with pytest.raises(WorkbenchError, match="stage 'jaxpr' cannot be drawn"):
        p.show_graph("jaxpr")
    with pytest.raises(UnknownNameError):
        p.show_graph("no-such-stage")
    assert tab.drawn == "cse#1" and p.last_error is None


def test_applicable_patterns_are_switches_of_the_pipeline(p):
    p.find_applicable("stablehlo")
    view = p.analyze.view
    found = lambda: view.data["applicable"]  # noqa: E731
    assert found()["state"] == "found" and found()["stage"] == "stablehlo" and found()["total"] > len(found()["rows"])
    assert p.python == 'ex.applicable("stablehlo", details=True)'
    assert "dot_transpose" in [r["name"] for r in found()["rows"]] and "dot_transpose" in found()["on"]
    toggle = {"action": "toggle", "payload": {"names": ["dot_transpose"], "on": False}}
    view._heard(view, toggle, [])  # its switch clicked
    assert p.python == 'ex = ex.with_patterns(disable=["dot_transpose"])' and p.history == [p.python]
    assert p.ex.spec.selection.disabled == {"dot_transpose"} and "dot_transpose" not in found()["on"]
    view._heard(view, {**toggle, "payload": {"names": ["dot_transpose"], "on": True}}, [])
    assert not p.ex.spec.selection.disabled and "dot_transpose" in found()["on"]


def test_bisect_finds_the_patterns_that_form_a_dot_and_switches_them_off():
    def mul_sum(x, y):  # the patterns turn the multiply + reduce into one dot_general
        return jnp.sum(x[:, :, None] * y[None, :, :], axis=1)

    ex = wb.explore(mul_sum, jnp.ones((4, 8)), jnp.ones((8, 3)))
    p = Panel(ex, background=False)
    p.bisect("op_count_above(op, n)", op="stablehlo.dot_general", n=0)
    assert p.last_error is None, p.last_error
    assert p.python == 'ex.bisect(wb.op_count_above("stablehlo.dot_general", 0))'
    tab = p.analyze
    culprits = tab.culprits
    assert culprits and [c["name"] for c in tab.data["bisect"]["patterns"]] == culprits
    assert tab.data["bisect"]["can_switch_off"]
    tab.view._heard(tab.view, {"action": "switch_culprits_off", "payload": {}}, [])  # "switch these off" clicked
    assert p.ex.spec.selection.disabled == set(culprits)
    assert "stablehlo.dot_general" not in last_mlir(p.ex).text
    # a predicate that does not hold with every pattern on is explained, not raised
    p.bisect("crashes()")
    assert "does not hold with all candidate patterns" in p.last_error and "wb-error" in p.status.value
    # a predicate kind that does not exist is named, with the known ones
    with pytest.raises(wb.UnknownNameError, match=r"unknown predicate 'crash\(\)'; did you mean 'crashes\(\)'"):
        p.bisect("crash()")
    assert tab.form["predicate"] == "crashes()"
    p.close()


# -- errors are shown, not raised -------------------------------------------------------------------------
def test_errors_are_shown_in_the_panel_and_the_exploration_stays(p, ex):
    p.set_pipeline("canonicalize,not-a-pass")
    assert p.ex is ex
    assert "not-a-pass" in p.last_error and "wb-error" in p.status.value
    runs = len(p.core.model["runs"])  # the session's, before
    p.run(stage="xla:optimized")
    assert "layout assignment" in p.last_error and len(p.core.model["runs"]) == runs  # refused in words, nothing run
    p.run(stage="stablehlo")  # the next action clears the error
    assert p.last_error is None and p.core.model["runs"][-1]["stage"] == "stablehlo"
    assert len(p.core.model["runs"]) == runs + 1 and p.core.model["runs"][-1]["check"]["passed"]


def test_a_failed_stage_is_picked_and_explained(ex):
    bad = wb.explore(transposed_dot, jnp.ones((8, 16)), jnp.ones((4, 8)),
                     pipeline="canonicalize,cse,one-shot-bufferize")
    p = Panel(bad, background=False)
    assert p.right == "one-shot-bufferize#1" and p.left == "cse#1"
    assert p.core.model["error"]["stage"] == "one-shot-bufferize#1" and "one-shot-bufferize" in p.core.model["error"]["message"]
    assert "has no text to compare" in p.diff_view.data["diff"]["note"] and "runs" not in p.diff_view.data["diff"]
    assert stages(p)["one-shot-bufferize#1"]["error"] and not stages(p)["cse#1"]["error"]
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
        assert p.run_tab.data["busy"] and p.passes.data["busy"]
        p.toggle_patterns(["dot_transpose"], False)  # queued behind the running job
        assert p.ex is ex and not started.is_set()
    finally:
        gate.set()
    p.wait()
    assert started.is_set() and not p.run_tab.data["busy"] and not p.passes.data["busy"]
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
        assert bundle["text/plain"].startswith("hlo-workbench: tp on ")  # the saved view in words
        from ipywidgets import widget_serialization

        model_id = bundle["application/vnd.jupyter.widget-view+json"]["model_id"]
        root = widget_serialization["from_json"]("IPY_MODEL_" + model_id, None)
        stage_list = next(w for w in descendants(root) if isinstance(w, Component) and w.data["sections"] == ["stages"])
        deadline = time.monotonic() + 120
        # the panel reads the stages on its thread: the MLIR ones, then XLA's when its compile ends
        while not stage_list.data.get("model", {}).get("complete") and time.monotonic() < deadline:
            time.sleep(0.1)
        model = stage_list.data["model"]
        assert [r["stage"] for r in model["stages"]] == shell.user_ns["tp"].names
        assert model["shown"] == {"left": "stablehlo", "right": "enzyme#1"}
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


# -- issue 10: the state follows the panel -----------------------------------------------------------------
def test_the_magics_variables_follow_the_panels_toggles():
    from ipywidgets import widget_serialization

    from workbench.views.widgets.component import Component

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    shell.run_cell("import jax.numpy as jnp")
    cell = "%%hlo -o tt\ndef tt(x):\n    return jnp.transpose(jnp.transpose(x)) + 1\ntt(jnp.ones((4, 8)))\n"
    shell.kernel = object()  # what a Jupyter kernel's shell has: the magic shows the panel
    try:
        with capture_output() as cap:
            assert shell.run_cell(cell).success
        model_id = cap.outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"]
        root = widget_serialization["from_json"]("IPY_MODEL_" + model_id, None)
        passes = next(w for w in descendants(root) if isinstance(w, Component) and w.kind == "passes")
        p = passes.on_action.__self__.wait()  # the Panel that the Passes tab reports to
        first = shell.user_ns["tt"]
        assert shell.user_ns["_hlo"] is first and p.ex is first
        assert "<code>tt</code> and <code>_hlo</code> follow this panel" in p.python_box.value
        click(p, "toggle_patterns", names=["transpose_transpose"], on=False)
        p.wait()
        assert p.last_error is None, p.last_error
        new = shell.user_ns["tt"]
        assert new is p.ex and new is not first and shell.user_ns["_hlo"] is new
        assert new.spec.selection.disabled == {"transpose_transpose"}
        assert last_mlir(new).text.count("stablehlo.transpose") > last_mlir(first).text.count("stablehlo.transpose")
        # what the user runs next is the program the panel shows
        shell.run_cell("after = tt.default_run_stage().text")
        assert shell.user_ns["after"] == last_mlir(p.ex).text
        # a failed action rebinds nothing
        p.set_pipeline("canonicalize,not-a-pass")
        p.wait()
        assert "not-a-pass" in p.last_error and shell.user_ns["tt"] is new and shell.user_ns["_hlo"] is new
        # a name the user bound to something else since is left alone; the others still follow
        shell.run_cell("tt = 42")
        click(p, "toggle_patterns", names=["transpose_transpose"], on=True)
        p.wait()
        assert shell.user_ns["tt"] == 42 and shell.user_ns["_hlo"] is p.ex
        assert p.ex.spec.selection.disabled == frozenset()
        p.close()
    finally:
        del shell.kernel


def test_panel_rebinds_a_name_only_when_given_a_namespace(ex):
    ns = {"mine": ex}
    p = panel(ex, name="mine", bind=ns).wait()
    p.toggle_xla(["algsimp"], False)
    p.wait()
    assert p.last_error is None and ns["mine"] is p.ex and p.ex is not ex
    assert "<code>mine</code> follows this panel" in p.python_box.value
    p.close()
    q = Panel(ex, name="mine", background=False)  # no namespace: no variable changes
    q.toggle_xla(["algsimp"], False)
    assert q.bound == () and q.ex is not ex
    assert "<code>mine</code> stays the Exploration the panel started from" in q.python_box.value
    assert "bind=globals()" in q.python_box.value
    q.close()


# -- issue 10: honest numbers ----------------------------------------------------------------------------
def test_numbers_are_written_with_three_digits_and_small_ones_in_scientific_notation():
    from workbench.views.widgets import html

    assert [html.num(x) for x in (3.06e-07, 0.0, 0.87, 12.345, 1234.5, 7, 2_500_000, -4.2e-05, float("nan"))] == \
        ["3.06e-07", "0", "0.870", "12.3", "1234", "7", "2.50e+06", "-4.20e-05", ""]

    def noisy(x, y):
        return jnp.tanh(x @ y).sum(0)

    import jax

    x = jax.random.normal(jax.random.PRNGKey(0), (32, 32))
    e = wb.explore(noisy, x, x, pipeline="canonicalize,cse")
    p = Panel(e, background=False)
    p.run("cse#1", device="cpu:0", repeat=2)
    p.compare(["stablehlo", "cse#1"], device="cpu:0")
    df = e.compare(["stablehlo", "cse#1"], device="cpu:0", repeat=2)
    err = df["max_rel_err"].iloc[0]
    assert 0 < err < 1e-3  # float32 rounding against the float64 reference
    compared = p.run_tab.data["compared"]  # its numbers as measured: the component writes them (formatNumber)
    errs = [r[compared["columns"].index("max_rel_err")] for r in compared["rows"]]
    assert errs[0] == pytest.approx(err, rel=1e-3) and 0 not in errs  # as measured, not rounded to 0
    assert p.core.model["runs"][0]["check"]["max_rel"] == pytest.approx(float(e.history[0].check.max_rel))
    p.close()


def test_steps_served_from_the_cache_are_marked_cached():
    from workbench.pipeline.build import clear_caches
    from workbench.views.text import stage_table

    def scaled(x):
        return x * 3.0 + 1.0

    clear_caches()  # this process's step cache: the first run of each step is measured here
    e = wb.explore(scaled, jnp.ones((4, 4)), pipeline="canonicalize,canonicalize,cse,cse")
    st = {s.name: s for s in e.stages}
    assert not st["canonicalize#1"].cached and not st["cse#1"].cached
    # a repeat on an unchanged module has the same input and pass: served from the cache, first time reused
    for first, again in (("canonicalize#1", "canonicalize#2"), ("cse#1", "cse#2")):
        assert st[again].cached == (not st[first].changed)
        if st[again].cached:
            assert st[again].seconds == st[first].seconds and "(cached)" in repr(st[again])
    assert any(s.cached for s in e.stages) and not st["xla:optimized"].cached
    table = e.table()
    assert list(table["cached"]) == [s.cached for s in e.stages]
    assert "cached" in stage_table(e).splitlines()[0]
    # a toggle recomputes only what it affects: the steps before the patterns are served, and XLA's
    # compile of an unchanged final module too
    t = wb.explore(transposed_dot, jnp.ones((8, 16)), jnp.ones((4, 8)), pipeline="canonicalize,cse,enzyme-hlo-patterns")
    assert not t["xla:optimized"].cached  # XLA's stages are made on first use: t's first
    t2 = t.with_patterns(disable=["pad_simplify"])  # a pattern that does nothing to this program
    assert last_mlir(t2).text == last_mlir(t).text
    assert t2["canonicalize#1"].cached and t2["cse#1"].cached and not t2["enzyme-hlo-patterns#1"].cached
    assert t2["xla:optimized"].cached and t2["xla:optimized"].seconds == t["xla:optimized"].seconds
    p = Panel(t2, background=False)
    rows = stages(p)
    assert rows["cse#1"]["cached"] and not rows["enzyme-hlo-patterns#1"]["cached"]
    assert rows["cse#1"]["ms"] == round(t2["cse#1"].seconds * 1e3, 2)  # its first run's, drawn "(cached)"
    p.tabs.selected_index = 3  # Cost: the seconds of cached stages say so (the component marks those named)
    cost = p.cost.data
    seconds = {r[0]: r[cost["table"]["columns"].index("seconds")] for r in cost["table"]["rows"]}
    assert "cse#1" in cost["cached"] and seconds["cse#1"] == t2["cse#1"].seconds
    assert "enzyme-hlo-patterns#1" not in cost["cached"]
    p.close()


# -- issue 10: bisect in the Analyze tab ------------------------------------------------------------------
def test_bisect_shows_its_culprits_runs_and_failures_in_the_tab(ex):
    p = Panel(ex, background=False)
    tab = p.analyze
    # the proposed predicate holds with every pattern and not with none: the transposes the patterns remove
    assert (tab.form["predicate"], tab.form["op"], tab.form["n"]) == ("op_count_at_most(op, n)", "stablehlo.transpose", 0)
    assert tab.data["proposal"]["state"] == "proposed" and tab.data["proposal"]["op"] == "stablehlo.transpose"
    assert tab.data["proposal"]["why"].startswith("the patterns remove 3 stablehlo.transpose over the ")
    p.bisect()
    assert p.last_error is None, p.last_error
    line = 'ex.bisect(wb.op_count_at_most("stablehlo.transpose", 0))'
    assert p.python == line
    found = tab.data["bisect"]
    assert found["state"] == "found" and found["expr"] == line[len("ex.bisect("):-1] and found["over"] == "patterns"
    assert len(tab.culprits) >= 1 and [c["name"] for c in found["patterns"]] == tab.culprits and found["xla"] == []
    assert "base" in {c["group"] for c in found["patterns"]}
    assert found["delta_on"] == "the last MLIR stage"
    assert [d for d in found["delta"] if d["op"] == "stablehlo.transpose" and d["after"] == 0 and d["delta"] < 0]
    assert len(found["log"]) == found["runs"] and all(held in (True, False) for _, held in found["log"])
    # the line it shows, pasted, finds the same patterns
    ns = {"ex": ex, "wb": wb}
    assert exec(f"res = {line}", ns) is None and ns["res"].patterns == tab.culprits
    # nothing to bisect: said in the tab, with the predicate and the runs, and in the status line
    p.bisect("op_count_above(op, n)", op="stablehlo.dot_general", n=0)
    failed = tab.data["bisect"]
    assert "holds with no pattern enabled" in p.last_error and failed["state"] == "failed"
    assert "holds with no pattern enabled" in failed["message"] and failed["reason"] == "with-none"
    assert failed["expr"] == 'wb.op_count_above("stablehlo.dot_general", 0)'
    assert failed["log"] == [["every enabled pattern", True], ["no pattern", True]]
    p.bisect("crashes()")
    assert "does not hold with all candidate patterns" in tab.data["bisect"]["message"]
    assert tab.data["bisect"]["reason"] == "not-with-all" and tab.culprits == []
    # a predicate the user chose stays through a toggle; the proposal follows the program otherwise
    p.bisect("op_count_above(op, n)", op="stablehlo.dot_general", n=3)
    p.toggle_patterns(["dot_transpose"], False)
    assert (tab.form["predicate"], tab.form["op"], tab.form["n"]) == ("op_count_above(op, n)", "stablehlo.dot_general", 3)
    from workbench.ir.ops import op_counts

    q = Panel(p.ex, background=False)
    left = op_counts(p.ex.default_run_stage().text)["stablehlo.transpose"]
    assert 0 < left < 3 and (q.analyze.form["op"], q.analyze.form["n"]) == ("stablehlo.transpose", left)
    p.close()
    q.close()


# -- issue 10: patterns under a pipeline that does not apply them ----------------------------------------
def test_the_passes_tab_says_patterns_do_nothing_without_a_patterns_step(p):
    assert p.passes.data["patterns_used"] and p.passes.data["patterns"]["message"] == ""
    p.set_pipeline("upstream")
    shown = p.passes.data
    assert "has no enzyme-hlo-patterns step" in shown["patterns"]["message"] and "no effect" in shown["patterns"]["message"]
    assert not shown["patterns_used"] and shown["pipeline"] == "upstream"
    offered = shown["with_patterns"]
    assert "all" in offered and "upstream" not in offered and "only_enzyme" not in offered
    assert p.analyze.data["proposal"] == {"state": "no-patterns"}  # nor is there anything to bisect
    from workbench.pipeline.presets import preset

    assert all(any(s.kind == "patterns" for s in preset(n).steps) for n in offered)
    # toggling there really changes no stage
    before = [s.text for s in p.ex.pipeline_stages]
    click(p, "toggle_patterns", names=["transpose_transpose"], on=False)
    assert [s.text for s in p.ex.pipeline_stages] == before
    click(p, "set_pipeline", pipeline="all")  # a preset offered, clicked
    assert p.ex.spec.pipeline == "all" and "enzyme-hlo-patterns#1" in p.ex.names
    assert p.passes.data["patterns_used"] and p.passes.data["patterns"]["message"] == ""


# -- issue 10: the group checkbox ------------------------------------------------------------------------
def test_a_group_switch_is_one_toggle_of_its_names(p, ex):
    """The tab's component decides what a group's box switches (and asks first when it is many: passes.ts,
    test_browser.py); Python hears one toggle of those names, and a reset."""
    items = p.passes.data["patterns"]["items"]
    base = [n for n, g, _ in items if g == "base"]
    click(p, "toggle_patterns", names=["dot_transpose"], on=False)  # base is now mixed
    click(p, "toggle_patterns", names=[n for n in base if n != "dot_transpose"], on=False)
    assert p.last_error is None and p.python.startswith("ex = ex.with_patterns(disable=[")
    assert set(base) <= p.ex.spec.selection.disabled and not set(base) & set(p.passes.data["patterns"]["on"])
    click(p, "reset_patterns")
    assert changed(p) == [] and p.ex.spec.selection.disabled == frozenset()
    click(p, "toggle_xla", names=["algsimp"], on=False)
    click(p, "reset_xla")
    assert changed(p, "xla") == [] and p.last_error is None
    click(p, "no such action", names=["x"])  # heard and ignored
    assert p.last_error is None and changed(p) == []


class _SlowStatus:
    """A status line whose "running" writes take a while (a busy kernel sending the comm message): the
    window in which a tick that woke before a job ended used to land after the job's last word."""

    def __init__(self):
        self._value, self.writes = "", []

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, v):
        if "wb-running" in v:
            time.sleep(0.5)
        self._value = v
        self.writes.append(v)


def test_a_tick_that_woke_before_a_job_ended_never_writes_over_how_it_ended():
    """The panel's status ticker (every 0.5 s while a job runs) wakes at 0.5 s and takes 0.5 s to write
    "running"; the job ends at 0.65 s, in that write. The line must end on the job's ✓ (a browser test
    waited five minutes for a ✓ that such a tick had written over), and stay so."""
    from workbench.views.widgets.jobs import Jobs

    status = _SlowStatus()
    jobs = Jobs(status, on_busy=lambda busy: None)
    try:
        for round_ in range(2):
            jobs.submit(f"job {round_}", lambda: time.sleep(0.65), busy=True)
            jobs.wait(timeout=30)
            time.sleep(1.2)  # any tick still writing has written
            assert "wb-done" in status.value and f"job {round_}" in unescape(status.value), status.writes[-3:]
        assert any("wb-running" in w for w in status.writes)  # the ticker did write while the jobs ran
    finally:
        jobs.shutdown()
