"""The panel's Source tab without a browser: the user's lines with what they became in stage B, a line
picked marks exactly its ops in the diff, an op clicked in the diff marks its counterparts and shows its
lineage, and errors are said in the tab while the panel goes on working.

The browser sends the same messages these tests send (a click on a source line, on a diff row, a metric);
what the tests read is the facts the tab's components draw (their JSON ``data``), which is what the browser
renders."""
import linecache
import pathlib
import re

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.diff import normalize, shown_lines
from workbench.errors import WorkbenchError
from workbench.views.widgets import Panel
from workbench.views.widgets.diffview import DiffView
from workbench.views.widgets.source import cost_note, lineage_rows, listing_rows

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

EXAMPLE = pathlib.Path(wb.__file__).parent / "examples" / "attention.py"


def tb(x, y):
    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="module")
def attention(attention_ex):
    """The attention example (a transformer block's gradient; tests/conftest.py's) and the file of its source."""
    return attention_ex, str(EXAMPLE)


@pytest.fixture
def p(attention):
    ex, _ = attention
    panel = Panel(ex, background=False)
    panel.pick("enzyme-hlo-patterns#1")
    open_source(panel)
    yield panel
    panel.close()


def open_source(panel) -> None:
    panel.tabs.selected_index = list(panel.tabs.titles).index("Source")


def send(widget, **msg):
    widget._receive(widget, msg, [])


def act(component, action: str, **payload):
    """What the component sends when the user clicks: an action and its payload."""
    component._heard(component, {"action": action, "payload": payload}, [])


def listing(p) -> dict:
    """The facts of the tab's listing: metric, unit, note, message, rows, selected."""
    return p.source.view.data


def said(p) -> str:
    """What the tab says under the diff view, as its lines read; errors marked "error: "."""
    return " | ".join(("error: " if s["error"] else "") + s["text"] for s in p.source.trail.data["status"])


def lineage(p) -> dict | None:
    return p.source.trail.data["lineage"]


def marks(p) -> dict:
    """The lines the Diff tab's component marks: before, after (0-based, as shown) and the side scrolled to."""
    return p.diff_view.data["marks"]


def line_of(path: str, text: str) -> int:
    return next(n for n, code in enumerate(pathlib.Path(path).read_text().splitlines(), 1) if text in code)


def shown(ex, stage: str, text_lines) -> list[int]:
    """The diff view's lines that show these lines of a stage's text."""
    inverse = {t: k for k, t in enumerate(shown_lines(ex[stage].text))}
    return sorted({inverse[t] for t in text_lines})


def ops_of_line(ex, stage: str, path: str, line: int):
    df = ex.locations(stage)
    return df[(df["file"] == path) & (df["line"] == line)]


# -- the listing ---------------------------------------------------------------------------------------
def test_the_source_tab_lists_the_blocks_lines_with_heat_from_the_source_map(p, attention):
    ex, path = attention
    assert p.python == 'ex.source_map(stage="enzyme-hlo-patterns#1")'
    sm = ex.source_map(stage="enzyme-hlo-patterns#1")
    rows = listing(p)["rows"]
    assert listing(p)["message"] == "" and p.last_error is None
    assert rows[0] == {"k": "file", "file": path, "line": 0, "code": path}
    lines = [r for r in rows if r["k"] == "line"]
    with_ops = {r["line"]: r for r in lines if r["ops"]}
    mapped = sm[sm["file"] == path]
    assert sorted(with_ops) == sorted(mapped["line"])
    for r in mapped.itertuples():  # each line's count and flops are the source map's
        assert with_ops[r.line]["ops"] == r.ops and with_ops[r.line]["value"] == float(r.flops)
    costliest = mapped.loc[mapped["flops"].idxmax(), "line"]
    assert with_ops[costliest]["frac"] == 1.0 and all(0 <= r["frac"] <= 1 for r in lines)
    # whole functions as written: from layer_norm's def to the end of loss, every line in between
    first, last = line_of(path, "def layer_norm"), line_of(path, "return jnp.mean(block(p, x) ** 2)")
    assert [r["line"] for r in lines] == list(range(first, last + 1))
    assert all(r["code"] == linecache.getline(path, r["line"]).rstrip("\n") for r in lines)
    assert not any(r["ops"] for r in lines if r["line"] not in with_ops)  # lines without ops: no bar, no count
    assert rows[-1]["k"] == "none" and rows[-1]["ops"] == int(sm[sm["file"] == "(no location)"]["ops"].iloc[0])
    assert "analytic cost model" in listing(p)["note"] and "enzyme-hlo-patterns#1" in listing(p)["note"]
    assert listing(p)["metric"] == "flops" and listing(p)["unit"] == "flops"
    # the bars by bytes instead: the metric's button
    act(p.source.view, "metric", metric="bytes")
    assert {r["line"]: r["value"] for r in listing(p)["rows"] if r["k"] == "line" and r["ops"]} == {
        r.line: float(r.bytes) for r in mapped.itertuples()}
    assert listing(p)["unit"] == "bytes" == p.source.metric and listing(p)["note"].startswith("the bars: bytes per line")
    with pytest.raises(ValueError, match="flops, bytes, measured"):
        p.source.set_metric("time")


def test_an_xla_stage_is_listed_with_xlas_own_costs(p, attention):
    ex, path = attention
    p.pick("xla:optimized")
    assert p.python == 'ex.source_map(stage="xla:optimized")'
    sm = ex.source_map(stage="xla:optimized")
    got = {r["line"]: r["value"] for r in listing(p)["rows"] if r["k"] == "line" and r["ops"]}
    assert got == {r.line: float(r.flops) for r in sm[(sm["file"] == path) & (sm["ops"] > 0)].itertuples()}
    assert "XLA's own cost analysis" in listing(p)["note"]


def test_the_listing_folds_long_runs_of_lines_without_ops(tmp_path):
    import pandas as pd

    path = tmp_path / "long.py"
    path.write_text("def f(x):\n    y = x + 1\n" + "    # nothing\n" * 60 + "    return y * 2\n")
    sm = pd.DataFrame({"file": [str(path)] * 2, "line": [2, 63], "function": ["f", "f"], "code": ["", ""],
                       "ops": [1, 2], "flops": [10, 30], "bytes": [4, 8]})
    rows = listing_rows(sm, "flops")
    assert [r["k"] for r in rows] == ["file", "line", "line", "gap", "line"]
    assert rows[1]["code"] == "def f(x):" and rows[3]["code"] == "… 60 lines without ops …"
    assert rows[4]["frac"] == 1.0 and rows[2]["frac"] == round(10 / 30, 4)


# -- a line picked: its ops marked in the diff -----------------------------------------------------------
def test_picking_a_line_marks_exactly_its_ops_on_both_sides(p, attention):
    ex, path = attention
    n = line_of(path, 'heads(x @ p["wq"])')
    act(p.source.view, "line", file=path, line=n)
    a, b = p.left, p.right
    assert (a, b) == ("canonicalize#2", "enzyme-hlo-patterns#1")
    assert p.python == f'ex.locations("{b}").query("file == \'{path}\' and line == {n}")'
    ops_b, ops_a = ops_of_line(ex, b, path, n), ops_of_line(ex, a, path, n)
    assert len(ops_b) and len(ops_a)
    assert marks(p)["after"] == shown(ex, b, ops_b["text_line"])
    assert marks(p)["before"] == shown(ex, a, ops_a["text_line"])
    # an MLIR stage's diff lines are its text's lines: the marked rows are those ops' lines
    assert marks(p)["after"] == sorted(ops_b["text_line"])
    marked = [p.diff_view.side("after")[1].split("\n")[k] for k in marks(p)["after"]]
    assert sum("stablehlo.dot_general" in t for t in marked) == (ops_b["op"] == "stablehlo.dot_general").sum() >= 3
    assert listing(p)["selected"] == [f"{path}:{n}"]
    assert f"{len(ops_b)} ops in B" in said(p)
    # another pair: the same line's ops of the new stages are marked
    p.pick("enzyme-hlo-patterns#3")
    b = p.right
    assert marks(p)["after"] == shown(ex, b, ops_of_line(ex, b, path, n)["text_line"])
    assert marks(p)["before"] == shown(ex, p.left, ops_of_line(ex, p.left, path, n)["text_line"])


def test_a_line_marks_xla_instructions_where_the_diff_shows_them(p, attention):
    ex, path = attention
    p.pick("xla:optimized")
    n = line_of(path, 'heads(x @ p["wq"])')
    p.source.select_line(path, n)
    ops = ops_of_line(ex, "xla:optimized", path, n)
    assert len(ops) and marks(p)["after"] == shown(ex, "xla:optimized", ops["text_line"])
    # the diff view's HLO lines are not the text's (no debug-info sections): each marked row shows the
    # instruction of its text line, as normalized
    text = ex["xla:optimized"].text.splitlines()
    rows = p.diff_view.side("after")[1].split("\n")
    at = shown_lines(ex["xla:optimized"].text)
    opcode = re.compile(r"=.*?\s([a-z][\w.-]*)\(")  # after the result's type (a tuple's, a TPU layout's too)
    for k in marks(p)["after"]:
        assert opcode.search(rows[k])[1] == opcode.search(text[at[k]])[1], (rows[k], text[at[k]])


def test_the_no_location_row_marks_the_ops_without_a_line(p, attention):
    ex, _ = attention
    act(p.source.view, "line", file="", line=0)
    df = ex.locations(p.right)
    none = df[(df["file"] == "") & (df["op"] != "func.func")]
    assert len(none) and marks(p)["after"] == shown(ex, p.right, none["text_line"])
    assert p.python == f'ex.locations("{p.right}").query("file == \'\'")'


# -- an op clicked in the diff: its counterparts, its line, its lineage ------------------------------------
@pytest.mark.slow  # the lineage of an op through every stage
def test_clicking_an_op_marks_its_counterparts_and_its_line_and_shows_its_lineage(p, attention):
    ex, path = attention
    a, b = p.left, p.right
    n = line_of(path, 'heads(x @ p["wq"])')
    df = ops_of_line(ex, b, path, n)
    dot = df[df["op"] == "stablehlo.dot_general"].iloc[0]
    k = shown(ex, b, [dot["text_line"]])[0]
    act(p.diff_view, "op", side="after", line=k)
    assert p.python == f'ex.lineage("{b}", "{dot["result"]}")' and p.last_error is None
    lin = ex.lineage(b, dot["result"])
    assert marks(p)["before"] == shown(ex, a, lin[(lin["stage"] == a) & (lin["line"] >= 0)]["line"])
    assert k in marks(p)["after"]
    assert set(marks(p)["after"]) == set(shown(ex, b, lin[(lin["stage"] == b) & (lin["line"] >= 0)]["line"])) | {k}
    assert marks(p)["before"] and marks(p)["focus"] == "before"
    assert listing(p)["selected"] == [f"{path}:{n}"] == [s for s in lin.attrs["sources"]]
    # the lineage: a row per stage with its counterparts, A and B marked
    got = lineage(p)
    assert (got["stage"], got["result"], got["op"]) == (b, dot["result"], "stablehlo.dot_general")
    assert [(r["stage"], r["count"]) for r in got["rows"]] == [
        (stage, int((rows["result"] != "").sum())) for stage, rows in lin.groupby("stage", sort=False)]
    assert {r["stage"]: r["side"] for r in got["rows"] if r["side"]} == {a: "A", b: "B"}
    assert got["removed_by"] == ""  # the q projection lives on to the last stage
    first = next(r for r in got["rows"] if r["stage"] == b)
    assert first["state"] == "found" and dot["result"] in [o["result"] for o in first["ops"]]
    # another pair: the counterparts of the same op in the new stages
    p.pick("xla:optimized")
    xla = lin[(lin["stage"] == "xla:optimized") & (lin["line"] >= 0)]
    assert len(xla) and marks(p)["after"] == shown(ex, "xla:optimized", xla["line"])


def test_an_op_that_a_pattern_removes_says_by_which_stage():
    ex = wb.explore(tb, jnp.ones((8, 16)), jnp.ones((4, 8)))
    p = Panel(ex, background=False)
    try:
        assert (p.left, p.right) == ("canonicalize#2", "enzyme-hlo-patterns#1")
        df = ex.locations("canonicalize#2")
        t = df[df["result"] == "%0"].iloc[0]
        assert t["op"] == "stablehlo.transpose"
        k = shown(ex, "canonicalize#2", [t["text_line"]])[0]
        act(p.diff_view, "op", side="before", line=k)
        assert p.python == 'ex.lineage("canonicalize#2", "%0")'
        lin = ex.lineage("canonicalize#2", "%0")
        assert lin.attrs["removed_by"] == "enzyme-hlo-patterns#1"
        got = lineage(p)
        assert got["removed_by"] == "enzyme-hlo-patterns#1"
        assert [r["state"] for r in got["rows"] if r["stage"] == "enzyme-hlo-patterns#1"] == ["removed"]
        assert "removed by enzyme-hlo-patterns#1" in said(p)
        assert k in marks(p)["before"] and marks(p)["after"] == []  # no counterpart in B
        src = lin.attrs["sources"]
        assert listing(p)["selected"] == src and src[0].endswith(f":{tb.__code__.co_firstlineno + 1}")
    finally:
        p.close()


HOSTILE = "<img src=x onerror=alert(1)>"  # an op's name, a stage's, a message that is markup


def test_names_messages_and_ir_lines_are_facts_as_given():
    """Python writes no markup: the tab's facts carry names, messages and IR lines as they are, and the
    component draws them as text (tests/test_browser_source.py)."""
    ex = wb.explore(tb, jnp.ones((8, 16)), jnp.ones((4, 8)))
    p = Panel(ex, name=HOSTILE, background=False)
    try:
        p.source.pick_op("canonicalize#2", HOSTILE)  # no such op: the error, which names it, in the tab
        assert "unknown op" in lineage(p)["error"] and HOSTILE in lineage(p)["error"]
        assert f"{HOSTILE} of canonicalize#2: marked" in said(p)
    finally:
        p.close()
    # a lineage: the names given, and each counterpart's IR line (its title in the browser)
    lin = lineage_rows(ex.lineage("canonicalize#2", "%0"), HOSTILE, HOSTILE, HOSTILE, (HOSTILE, "cse#1"))
    assert (lin["stage"], lin["result"], lin["op"]) == (HOSTILE, HOSTILE, HOSTILE)
    row = {r["stage"]: r for r in lin["rows"]}
    assert row["canonicalize#2"]["ops"][0]["text"].startswith(
        "%0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x16xf32>) -> ")
    assert row["canonicalize#2"]["ops"][0]["op"] == "transpose" and row["cse#1"]["side"] == "B"
    assert cost_note(ex.stage("canonicalize#2"), HOSTILE).startswith(f"the bars: {HOSTILE} per line")


def test_a_row_that_is_no_op_says_so_and_changes_nothing(p, attention):
    ex, path = attention
    n = line_of(path, 'heads(x @ p["wq"])')
    p.source.select_line(path, n)
    kept, python = list(marks(p)["after"]), p.python
    act(p.diff_view, "op", side="after", line=0)  # "module {"
    assert "line 1 of enzyme-hlo-patterns#1 is not an op" in said(p)
    assert marks(p)["after"] == kept and p.python == python and p.last_error is None


# -- errors: said in the tab, the panel goes on ----------------------------------------------------------
def test_the_jaxpr_and_a_text_stage_without_locations_are_explained_in_the_tab(p, attention):
    ex, path = attention
    p.pick("jaxpr")
    with pytest.raises(WorkbenchError) as e:
        ex.source_map(stage="jaxpr")
    assert listing(p)["message"] == f"jaxpr: {e.value}" and listing(p)["rows"] == []
    assert p.last_error is None
    # A the jaxpr: the line's ops are marked in B, and the tab says why A has none
    p.pick("stablehlo")
    p.pick("jaxpr", side="left")
    n = line_of(path, 'heads(x @ p["wq"])')
    p.source.select_line(path, n)
    assert marks(p)["before"] == [] and marks(p)["after"] == shown(
        ex, "stablehlo", ops_of_line(ex, "stablehlo", path, n)["text_line"])
    assert "error: jaxpr" in said(p)
    act(p.diff_view, "op", side="before", line=0)
    assert said(p).startswith("error: jaxpr has no ops to follow") and p.last_error is None
    # the panel still works: another stage lists its lines
    p.pick("enzyme-hlo-patterns#1")
    assert listing(p)["message"] == "" and any(r["ops"] for r in listing(p)["rows"] if r["k"] == "line")

    stripped = jax.jit(tb).lower(jnp.ones((8, 16)), jnp.ones((4, 8))).as_text(debug_info=False)
    text = Panel(wb.explore_text(stripped, pipeline="canonicalize"), background=False)
    try:
        open_source(text)
        assert "has no source locations" in listing(text)["message"] and text.last_error is None
        act(text.diff_view, "op", side="after", line=2)
        assert "no source location" in lineage(text)["error"] and text.last_error is None
    finally:
        text.close()


def test_a_failed_stage_is_explained_in_the_tab():
    bad = wb.explore(tb, jnp.ones((8, 16)), jnp.ones((4, 8)), pipeline="canonicalize,cse,one-shot-bufferize")
    p = Panel(bad, background=False)
    try:
        open_source(p)
        assert p.right == "one-shot-bufferize#1"
        assert "failed" in listing(p)["message"] and p.last_error is None
        p.pick("cse#1")
        assert listing(p)["message"] == "" and listing(p)["rows"]
    finally:
        p.close()


def test_the_diff_view_clears_its_marks_with_each_diff(attention):
    ex, _ = attention
    heard = []
    v = DiffView(on_action=lambda action, payload: heard.append((action, payload)))
    assert v.data["marks"] == {"before": [], "after": [], "focus": ""}
    v.show(ex.diff("stablehlo", "inline#1"))
    v.mark([3, 1, 3], [2], focus="after")
    assert v.data["marks"] == {"before": [1, 3], "after": [2], "focus": "after"}
    shown_before = v.data["shown"]
    v.show(ex.diff("stablehlo", "cse#1"))
    assert v.data["marks"] == {"before": [], "after": [], "focus": ""} and v.data["shown"] == shown_before + 1
    act(v, "op", side="after", line=4)  # a click on a code row, as the component sends it
    assert heard == [("op", {"side": "after", "line": 4})]


def test_shown_lines_maps_every_line_the_diff_shows_to_its_text_line(attention):
    ex, _ = attention
    for st in ex.stages:
        if st.error or st.name == "jaxpr" or st.group == "backend":
            continue
        lines, shown = st.text.splitlines(), normalize(st.text)
        at = shown_lines(st.text)
        assert len(at) == len(shown), st.name
        # the same line, value names aside: the op agrees on every op line
        op = re.compile(r"=\s*(?:\S+\s+)?\"?([A-Za-z_][\w.\-]*)[\"(\s]")
        for k in range(len(at)):
            mine, theirs = op.search(lines[at[k]]), op.search(shown[k])
            if mine and theirs:
                assert mine.group(1) == theirs.group(1), (st.name, lines[at[k]], shown[k])


def test_measured_bars_profile_the_run_once_and_show_each_lines_microseconds(p, attention):
    """The third metric: each line's measured run time (ex.source_map(stage=B, measured=True): JAX's profiler
    over the last MLIR stage), the profile taken once per Exploration; flops again without profiling."""
    ex, path = attention
    act(p.source.view, "metric", metric="measured")
    assert p.last_error is None and p.python == 'ex.source_map(stage="enzyme-hlo-patterns#1", measured=True)'
    prof = ex.profiles["run"]
    assert p.source._sm.attrs["profile"] is prof and listing(p)["unit"] == "µs"
    lines = [r for r in listing(p)["rows"] if r["k"] == "line" and r.get("label")]
    assert lines and all(r["label"].endswith(" µs") for r in lines)
    top = max(lines, key=lambda r: r["frac"])
    assert top["frac"] == 1.0 and "measured" in top["title"]
    sm = p.source._sm
    assert float(top["value"]) == pytest.approx(float(sm[(sm["file"] == path) & (sm["line"] == top["line"])]
                                                        ["measured_us"].iloc[0]))
    note = listing(p)["note"]
    assert "measured run time" in note and f"run {prof.calls} times" in note and prof.stage in note
    act(p.source.view, "metric", metric="flops")  # back: the same map, drawn by flops, no new profile
    assert listing(p)["unit"] == "flops" and ex.profiles["run"] is prof
    assert ex.source_map(stage="enzyme-hlo-patterns#1", measured=True).attrs["profile"] is prof  # reused, not retaken
    assert not any(r.get("label", "").endswith(" µs") for r in listing(p)["rows"])


def test_the_compile_tab_lists_both_pipelines_and_a_click_diffs_the_stage_a_step_made(p, attention):
    ex, _ = attention
    p.tabs.selected_index = list(p.tabs.titles).index("Compile")
    assert p.last_error is None and p.python == "ex.compile_profile()"
    data = p.compile.view.data  # what the component draws: the profile's table, the stages a click shows
    rows = [dict(zip(data["table"]["columns"], r)) for r in data["table"]["rows"]]
    kinds = {r["kind"] for r in rows}
    assert {"trace", "lowering", "mlir pass", "xla pass", "xla backend", "xla other"} <= kinds
    assert sum(r["share"] for r in rows) == pytest.approx(1.0, abs=1e-3)
    assert [r["stage"] for r in rows if r["kind"] == "mlir pass"] == [s.name for s in ex.stages if s.group == "mlir"]
    assert data["links"] == ex.names
    made = [r for r in rows if r["kind"] == "xla pass" and r["stage"] in data["links"]]
    assert made and all(r["changed"] is True and r["stage"].startswith("xla:") for r in made)
    assert "s in all" in data["note"] and p.compile.profile is not None
    act(p.compile.view, "stage", name=made[0]["stage"])  # a click on the row of a pass that made a stage
    assert p.tabs.selected_index == 0 and p.right == made[0]["stage"] and p.left == ex[made[0]["stage"]].parent
