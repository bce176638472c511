"""The Analyze tab's bisection over XLA's passes and over patterns and XLA passes together, its new
predicates (has_op, lacks_op, differs_from) and their repr, and its Reduce button, on real small
programs through ``Panel(ex, background=False)``: the facts the tab sends its component, the Python line
of each action, and that the line, pasted, gives what the tab shows. And the component (kind "analyze" of
assets/views.js) alone in a page, drawn from those facts: names and messages as text, clicks sent as actions."""
import json

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

import workbench as wb
from workbench.views.widgets import Panel
from workbench.views.widgets.analyze import applicable_rows
from workbench.views.widgets.component import views_module

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


def clicked(tab, action: str, **payload) -> None:
    """What the component sends when the user sets a field or clicks (as the browser's message arrives)."""
    tab.view._heard(tab.view, {"action": action, "payload": payload}, [])


def test_the_predicate_picker_offers_the_new_predicates_and_shows_their_repr(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    assert {"has_op(op, stage)", "lacks_op(op, stage)", "differs_from(stage)"} <= set(tab.data["choices"]["predicate"])
    assert tab.data["expr"] == "op_count_at_most('stablehlo.transpose', 0)"
    clicked(tab, "set", predicate="has_op(op, stage)")
    assert tab.data["params"] == ["op", "stage"] and not tab.data["stage_required"]  # the fields the component shows
    clicked(tab, "set", op="stablehlo.dot_general")
    assert tab.data["expr"] == "has_op('stablehlo.dot_general')"
    clicked(tab, "set", stage="xla:optimized")
    assert tab.data["expr"] == repr(wb.has_op("stablehlo.dot_general", stage="xla:optimized"))
    tab.set(predicate="differs_from(stage)")  # its stage is required: the tab proposes one
    assert tab.data["params"] == ["stage"] and tab.data["stage_required"] and tab.form["stage"] == "xla:optimized"
    tab.set(stage="")
    tab.set(predicate="lacks_op(op, stage)")
    tab.set(predicate="differs_from(stage)")
    assert tab.form["stage"] == "stablehlo" and tab.data["expr"].startswith("differs_from('stablehlo'")
    assert tab.data["form"] == tab.form
    clicked(tab, "set", predicate="op_count_above(op, n)", n="")  # a number field being typed
    assert tab.data["expr"] == "op_count_above('stablehlo.dot_general', 0)" and tab.form["n"] == 0
    with pytest.raises(wb.UnknownNameError, match="over"):
        p.bisect(over="everything")
    with pytest.raises(TypeError, match="unknown field 'colour'"):
        tab.set(colour="red")
    p.close()


@pytest.mark.slow  # bisects: many pipelines and compiles
def test_bisect_over_all_blames_the_two_patterns_and_no_xla_pass(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    p.bisect("op_count_at_most(op, n)", over="all", op="stablehlo.transpose", n=0)
    assert p.last_error is None, p.last_error
    line = 'ex.bisect(wb.op_count_at_most("stablehlo.transpose", 0), over="all")'
    assert p.python == line and tab.form["over"] == "all"
    assert tab.culprits == ["dot_transpose", "transpose_dot_reorder"] and tab.culprits_xla == []
    found = tab.data["bisect"]
    assert found["state"] == "found" and found["over"] == "all" and found["xla"] == []
    assert [c["name"] for c in found["patterns"]] == tab.culprits
    assert {c["group"] for c in found["patterns"]} == {"base"}
    assert any("stablehlo.transpose" in c["changes"] for c in found["patterns"])  # what removing each changes
    ns = {"ex": tb_ex, "wb": wb}
    exec(f"res = {line}", ns)
    res = ns["res"]
    assert (res.patterns, res.xla_passes) == (tab.culprits, [])
    assert found["runs"] == res.runs and len(found["log"]) == res.runs and found["log_on"] == "candidates on"
    assert found["always_needed"] == res.always_needed == [] and found["always_needed_how"] == res.always_needed_how
    assert found["can_switch_off"]
    clicked(tab, "switch_culprits_off")
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
    found = tab.data["bisect"]
    assert found["patterns"] == [] and [c["name"] for c in found["xla"]] == ["call-inliner"]
    assert found["always_needed"] is not None  # the XLA passes always on: said beside the culprits
    assert found["python"] == 'ex = ex.with_xla(disable=["call-inliner"])'
    assert found["delta_on"] == "xla:optimized" and (found["delta"] is not None or found["why_not"])
    assert found["can_switch_off"]
    clicked(tab, "switch_culprits_off")  # through the panel's XLA toggles
    assert p.last_error is None and p.python == 'ex = ex.with_xla(disable=["call-inliner"])'
    assert not wb.lacks_op("call", stage="xla:optimized")(p.ex)
    # a domain with nothing to find is said in the tab, and the panel keeps working
    p.bisect("op_count_at_most(op, n)", over="xla", op="stablehlo.sine", n=0)
    failed = tab.data["bisect"]
    assert failed["state"] == "failed" and failed["message"] in p.last_error and tab.culprits_xla == []
    assert failed["log"][0][0] == "every XLA pass" and failed["reason"] in ("not-with-all", "with-none")
    p.run(stage="stablehlo")
    assert p.last_error is None
    p.close()


def test_reduce_shows_the_reduced_module_and_counts_its_runs(tb_ex):
    p = Panel(tb_ex, background=False)
    tab = p.analyze
    assert "stablehlo" in tab.data["choices"]["from_stage"] and tab.form["from_stage"] == "stablehlo"
    assert not any(s.startswith("xla:") for s in tab.data["choices"]["from_stage"])
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
    shown = tab.data["reduce"]
    assert (shown["ops_before"], shown["ops_after"], shown["runs"], shown["skipped"]) == (4, 1, r.runs, r.skipped)
    assert shown["state"] == "reduced" and not shown["interrupted"] and shown["python"] == line
    assert shown["predicate"] == "has_op('stablehlo.dot_general')"
    assert shown["expr"] == 'wb.has_op("stablehlo.dot_general")'
    assert shown["text"] == r.text == tab.reduced.text and "stablehlo.dot_general %arg0" in r.text
    assert "stablehlo.transpose" not in r.text
    assert notes and notes[-1] == f" · reduce run {r.runs}"
    assert [int(n.rsplit(" ", 1)[1]) for n in notes] == list(range(1, r.runs + 1))
    # nothing to reduce: shown in the tab, the panel keeps working
    tab.reduce("lacks_op(op, stage)", from_stage="stablehlo", op="stablehlo.dot_general")
    failed = tab.data["reduce"]
    assert "does not hold" in p.last_error and failed["state"] == "failed" and failed["message"] in p.last_error
    assert (failed["stage"], failed["expr"]) == ("stablehlo", 'wb.lacks_op("stablehlo.dot_general")')
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
    shown = tab.data["pipelines"]
    assert p.python == line == shown["python"] and tab.form["pipelines"] == "all, none"
    table, dialects = shown["table"], shown["dialects"]
    assert [row[table["columns"].index("pipeline")] for row in table["rows"]] == ["all", "none"]
    assert "median_ms" in table["columns"] and "ops_stablehlo" in dialects["columns"]  # ops by dialect
    # the line, pasted, compares the same pipelines
    again = wb.compare_pipelines(tb_ex, pipelines=["all", "none"], device="cpu:0")
    assert list(again.pipeline) == list(df.pipeline) and list(again.ops) == list(df.ops)
    clicked(tab, "set", pipelines="all, no-such-pipeline")  # a pipeline that does not parse: said in the tab
    clicked(tab, "compare_pipelines")
    assert tab.compared is None and tab.data["pipelines"]["state"] == "failed"
    assert "does not refer to a registered pass" in tab.data["pipelines"]["message"]
    tab.compare_pipelines(["none"])  # and the tab works on
    assert list(tab.compared.pipeline) == ["none"]
    p.close()


HOSTILE = "<img src=x onerror=\"window.pwned = 1\">"  # a name, pass string or message that is markup

# anywidget's model as the panel's widget has it: the component's kind and data, and what it sends
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body style="margin:0;padding:8px"><div id="tab"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
window.sent = [];
const on = {{}};
const model = {{ get: (k) => (k === "kind" ? "analyze" : model.data), data: {data}, on: (e, f) => (on[e] = f),
                off() {{}}, send: (m) => window.sent.push(m), set(d) {{ model.data = d; on["change:data"](); }} }};
window.model = model;
views.render({{ model, el: document.getElementById("tab") }});
document.documentElement.dataset.ready = "1";
</script></body></html>"""


@pytest.mark.slow  # a browser
def test_the_component_draws_the_tabs_facts_as_text_and_sends_the_clicks(tb_ex, browser, shots):
    p = Panel(tb_ex, name=HOSTILE, background=False)  # the variable's name, a predicate's op and stage: markup
    tab = p.analyze
    try:
        tab.set(predicate="has_op(op, stage)", op=HOSTILE, stage=HOSTILE)
        tab.compare_pipelines([HOSTILE])  # MLIR's parse error quotes the pipeline
        assert tab.data["pipelines"]["state"] == "failed" and HOSTILE in tab.data["pipelines"]["message"]
        data = tab.data
    finally:
        p.close()
    df = pd.DataFrame({"name": [HOSTILE, "dot_transpose"], "group": [HOSTILE, "base"], "seconds": [0.002, 0.001],
                       "changed": [True, True], "error": ["", ""]})
    rows = applicable_rows(df)
    assert rows[0] == {"name": HOSTILE, "group": HOSTILE, "ms": 2.0}
    culprit = {"name": HOSTILE, "group": "base", "parameters": HOSTILE, "changes": HOSTILE}
    data = {**data, "applicable": {"state": "found", "stage": HOSTILE, "total": 9, "failed": 1, "rows": rows,
                                   "on": ["dot_transpose"]},
            "bisect": {"state": "found", "expr": HOSTILE, "over": "all", "runs": 3, "seconds": 0.5,
                       "patterns": [culprit], "xla": [{"name": HOSTILE, "changes": ""}], "always_needed": [HOSTILE],
                       "always_needed_how": HOSTILE, "delta": [{"op": HOSTILE, "before": 3, "after": 0, "delta": -3}],
                       "why_not": "", "delta_on": "the last MLIR stage", "log_on": "candidates on",
                       "log": [["2 candidates", True], ["0 candidates", False], ["1 candidate", True]],
                       "python": HOSTILE, "can_switch_off": True},
            "reduce": {"state": "failed", "stage": HOSTILE, "expr": HOSTILE, "message": HOSTILE}}
    js, css = views_module()
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(PAGE.format(css=css, js=json.dumps(js).replace("</", "<\\/"),
                                     data=json.dumps(data).replace("</", "<\\/")))
        page.wait_for_selector("html[data-ready='1']", timeout=30_000)
        assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
        # the fields: the chosen predicate's, with the form's values
        assert page.locator('[data-field="op"]').input_value() == HOSTILE
        assert page.locator('[data-field="n"]').is_hidden() and page.locator('[data-field="stage"]').is_visible()
        assert HOSTILE in page.locator('[data-hwb="analyze"]').inner_text()  # the predicate's repr, as text
        # the applicable patterns: each a switch, on as Python says
        switches = page.locator('[data-hwb="applicable"]').evaluate_all(
            "(es) => es.map((e) => [e.dataset.name, e.dataset.on, e.querySelector('input').checked])")
        assert switches == [[HOSTILE, "false", False], ["dot_transpose", "true", True]]
        assert f"2 of 9 patterns change {HOSTILE} when applied alone; 1 failed on it" in \
            page.locator('[data-hwb="analyze-applicable"]').inner_text()
        # the bisection: culprits by kind, the runs folded, what they change together
        bisect = page.locator('[data-hwb="analyze-bisect"]')
        assert bisect.get_attribute("data-state") == "found"
        assert bisect.locator('[data-hwb="culprit"]').evaluate_all(
            "(es) => es.map((e) => [e.dataset.kind, e.dataset.name])") == [["pattern", HOSTILE], ["xla", HOSTILE]]
        assert bisect.locator('[data-hwb="search-run"]').evaluate_all("(es) => es.map((e) => e.dataset.held)") == \
            ["true", "false", "true"]
        text = bisect.inner_text()
        assert f"1 pattern and 1 XLA pass make {HOSTILE} hold (3 pipeline runs, 0.5 s)" in text
        assert f"what the patterns do together, on the last MLIR stage: {HOSTILE} 3\u21920 (-3)" in text
        assert f"XLA passes always on (the compile cannot do without them; never culprits): {HOSTILE}" in text
        assert page.locator('[data-hwb="switch-culprits-off"]').is_visible()
        assert f"Nothing reduced from {HOSTILE} for {HOSTILE}: {HOSTILE}" in \
            page.locator('[data-hwb="analyze-reduce"]').inner_text()
        assert "No comparison" in page.locator('[data-hwb="analyze-pipelines"]').inner_text()
        assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
        shots(page, "analyze_component")
        # the runs unfolded stay so while the form changes (a result is drawn anew only when its facts change)
        bisect.locator("summary", has_text="the pipeline runs").click()
        page.evaluate("(d) => window.model.set(d)", {**data, "form": {**data["form"], "op": "stablehlo.add"}})
        assert page.locator('[data-field="op"]').input_value() == "stablehlo.add"
        assert bisect.locator("details").evaluate("(e) => e.open")
        # the clicks: sent to Python as actions
        page.locator('[data-hwb="applicable"][data-name="dot_transpose"] input').click()
        page.locator('[data-field="op"]').fill("stablehlo.add")
        page.locator("button", has_text="Bisect").click()
        page.locator('[data-hwb="switch-culprits-off"]').click()
        sent = page.evaluate("window.sent")
        assert sent[0] == {"action": "toggle", "payload": {"names": ["dot_transpose"], "on": False}}
        assert sent[-3:] == [{"action": "set", "payload": {"op": "stablehlo.add"}}, {"action": "bisect", "payload": {}},
                             {"action": "switch_culprits_off", "payload": {}}]
        # while the panel's actions wait, the buttons and switches are held; a result running says so
        page.evaluate("(d) => window.model.set(d)", {**data, "busy": True, "bisect": {"state": "running",
                                                                                      "label": "bisect the patterns"}})
        assert page.locator("button", has_text="Bisect").is_disabled()
        assert page.locator('[data-hwb="analyze-bisect"]').inner_text() == "bisect the patterns\u2026"
        assert page.locator('[data-hwb="switch-culprits-off"]').is_hidden()
        # at 1000 px nothing scrolls the page sideways
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        assert errors == []
    finally:
        page.close()
