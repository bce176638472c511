"""The one view model (``artifacts/viewmodel.py``), and what a ``%%hlo`` output keeps of it in a saved notebook: the
model next to the panel's widget view, read from a real IPython shell's published display data and from a
notebook executed by nbclient; every model made here is valid under its JSON Schema."""
import json
import platform
import math

import jax
import jax.numpy as jnp
import jaxlib
import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench as wb
from workbench.views.widgets import Panel
from workbench.artifacts.stage_diffs import carried
from workbench.artifacts import viewmodel as B

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

WIDGET = "application/vnd.jupyter.widget-view+json"

TRANSPOSES = """\
%%hlo -o tb
def tb(x, y):
    return jnp.dot(x.T, y.T).T
tb(jnp.ones((8, 16)), jnp.ones((4, 8)))
"""

# A real module of 60,005 lines (60,000 ops), with a string attribute that is markup; no @main, so no
# XLA stages: its MLIR stages are the subject.
BIG = """\
import workbench as wb
_lines = ['module attributes {wb.note = "<script>alert(1)</script>"} {',
          '  func.func @big(%arg0: tensor<4xf32>) -> tensor<4xf32> {',
          '    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>']
_lines += [f'    %{i} = stablehlo.multiply %{i - 1}, %arg0 : tensor<4xf32>' for i in range(1, 60000)]
_lines += ['    return %59999 : tensor<4xf32>', '  }', '}']
big = wb.explore_text("\\n".join(_lines) + "\\n", pipeline="canonicalize", title="big<&>")
"""


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    ip.run_cell("import jax.numpy as jnp\nimport workbench as wb\nfrom IPython.display import display")
    ip.kernel = object()  # what a Jupyter kernel's shell has: the magic shows the panel
    try:
        yield ip
    finally:
        del ip.kernel


def published(shell, cell):
    """Run ``cell``; the data of every display it published."""
    with capture_output() as cap:
        result = shell.run_cell(cell)
    assert result.success, cap.stdout + cap.stderr
    return [o.data for o in cap.outputs]


def panel_of(data) -> Panel:
    """The Panel behind a published widget view (its Passes tab reports to it)."""
    from ipywidgets import widget_serialization

    from workbench.views.widgets.component import Component

    root = widget_serialization["from_json"]("IPY_MODEL_" + data[WIDGET]["model_id"], None)
    stack = [root]
    while stack:
        w = stack.pop()
        if isinstance(w, Component) and w.kind == "passes":
            return w.on_action.__self__
        stack.extend(getattr(w, "children", ()))
    raise AssertionError("no panel")


def records(df):
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in df.to_dict("records")]


@pytest.fixture(scope="module")
def big(shell):
    shell.run_cell(BIG)
    return shell.user_ns["big"]


# -- the %%hlo output ---------------------------------------------------------------------------------------
def test_the_hlo_output_carries_the_stage_table_and_the_texts_shown(shell):
    # --xla-wait: the output waits for XLA's compile (however busy the machine), so it lists every stage
    (data,) = published(shell, TRANSPOSES.replace("-o tb", "-o tb --xla-wait 600"))
    ex = shell.user_ns["tb"]
    assert set(data) == {WIDGET, B.MIME, "text/plain"}  # one output: the panel and its saved form
    # where no JavaScript draws the view (GitHub, nbviewer, a terminal): the model in words
    assert data["text/plain"].startswith(f"hlo-workbench: tb on {ex.spec.device}, {len(ex.stages)} stages; pipeline ")
    saved = data[B.MIME]
    json.dumps(saved)  # JSON all through, as the notebook stores it
    assert saved["format"] == 2 and saved["schema"] == "hlo-workbench/view" and saved["title"] == "tb" and saved["pipeline"] == "all"
    assert saved["device"] == ex.spec.device and saved["error"] is None
    assert saved["versions"]["jax"] == jax.__version__ and saved["versions"]["jaxlib"] == jaxlib.__version__
    assert saved["versions"]["workbench"] == wb.__version__ and saved["versions"]["python"] == platform.python_version()
    assert saved["complete"] and ex.xla_ready()
    assert saved["variable"] == "tb"  # the name that holds it, for the extension's "Save exploration…"
    assert [r["stage"] for r in saved["stages"]] == ex.names
    assert "xla:optimized" in ex.names and "enzyme-hlo-patterns#1" in ex.names
    rows = [{c: r[c] for c in B.COLUMNS} for r in saved["stages"]]
    assert rows == records(ex.table())  # the columns and values of ex.table()
    assert [r["parent"] for r in saved["stages"]] == [s.parent for s in ex.stages]
    # the pair the panel shows first: the first stage that changed the module, and its parent
    p = panel_of(data).wait()
    assert saved["shown"] == {"left": "canonicalize#2", "right": "enzyme-hlo-patterns#1"} == \
        {"left": p.left, "right": p.right}
    for name in ("canonicalize#2", "enzyme-hlo-patterns#1"):
        entry = saved["texts"][name]
        assert entry["text"] == ex[name].text and entry["state"] == "ok" and not entry["cut"]
        assert entry["lines"] == entry["kept_lines"] == ex[name].lines
    assert set(saved["texts"]) == {"canonicalize#2", "enzyme-hlo-patterns#1"}
    assert saved["texts"]["canonicalize#2"]["text"].count("stablehlo.transpose") == 3
    assert "stablehlo.dot_general" in saved["texts"]["enzyme-hlo-patterns#1"]["text"]
    assert saved["ops_delta"] == [{"op": "stablehlo.transpose", "before": 3, "after": 0, "delta": -3}]
    assert saved["ops_delta"] == ex.diff("canonicalize#2", "enzyme-hlo-patterns#1").ops_delta().to_dict("records")
    # the cost table of the pair shown (the analytic model's, as ex.cost() has it)
    cost = {r[0]: dict(zip(saved["cost"]["columns"], r)) for r in saved["cost"]["rows"]}
    assert list(cost) == ["canonicalize#2", "enzyme-hlo-patterns#1"]
    live = ex.cost().set_index("stage")
    for name, row in cost.items():
        assert row["ops"] == int(live.loc[name, "ops"]) and row["flops"] == int(live.loc[name, "flops"])
    # the structural diff of the pair, as ex.diff makes it
    assert saved["diff"] == {**saved["shown"], **carried(ex.diff("canonicalize#2", "enzyme-hlo-patterns#1"))}
    B.validate_view(saved)
    p.close()


def test_by_default_the_output_lists_what_is_ready_when_it_shows(shell):
    """The default wait is short (the panel shows at once): the output lists XLA's stages if their compile
    ended within it, else the trace and MLIR stages, and says so. Either way it is consistent."""
    (data,) = published(shell, TRANSPOSES)
    saved, ex = data[B.MIME], shell.user_ns["tb"]
    listed = [r["stage"] for r in saved["stages"]]
    if saved["complete"]:
        assert listed == ex.names and "xla:optimized" in listed
    else:  # the header component says "XLA was still compiling" of an incomplete model
        assert listed == [s.name for s in ex.pipeline_stages] and "xla:optimized" not in listed
    assert saved["shown"] == {"left": "canonicalize#2", "right": "enzyme-hlo-patterns#1"}
    panel_of(data).close()


def test_a_bundle_made_while_xla_compiles_lists_the_mlir_stages_and_says_so():
    from workbench.examples import mlp

    big = wb.explore(mlp.fn, *mlp.args(batch=256, sizes=(512, 1024, 1024, 1024, 16)))  # XLA busy a while
    ex = wb.explore(lambda x: jnp.tanh(x.T) * 2, jnp.ones((4, 8)))  # its compile queues behind
    saved = B.view_model(ex, wait=0)
    listed = [r["stage"] for r in saved["stages"]]
    if not saved["complete"]:  # (the XLA thread was free and fast after all: nothing to check then)
        assert listed == [s.name for s in ex.pipeline_stages] and saved["error"] is None
        assert not any(n.startswith(("xla:", "backend:")) for n in listed)
    assert ex.xla_ready(wait=600) and big.xla_ready(wait=600)
    again = B.view_model(ex, wait=0)
    assert again["complete"] and [r["stage"] for r in again["stages"]] == ex.names and "xla:optimized" in ex.names


def test_xla_wait_must_be_seconds(shell):
    with capture_output() as cap:
        result = shell.run_cell(TRANSPOSES.replace("-o tb", "-o tb --xla-wait -1"))
    assert not result.success and "--xla-wait takes seconds, 0 or more; got -1" in cap.stderr + cap.stdout


def test_stage_and_vs_options_pick_the_pair_the_bundle_keeps(shell):
    (data,) = published(shell, TRANSPOSES.replace("-o tb", "-o tb --stage stablehlo --vs xla:optimized"))
    saved, ex = data[B.MIME], shell.user_ns["tb"]
    assert saved["shown"] == {"left": "stablehlo", "right": "xla:optimized"}
    assert saved["texts"]["xla:optimized"]["text"] == ex["xla:optimized"].text
    assert "HloModule" in saved["texts"]["xla:optimized"]["text"]
    panel_of(data).close()


def test_a_60000_line_text_is_cut_to_the_cap_and_says_so(shell, big):
    (data,) = published(shell, 'display(wb.panel(big, name="big", left="input", right="canonicalize#1"))')
    saved = data[B.MIME]
    assert saved["complete"] and [r["stage"] for r in saved["stages"]] == big.names == ["input", "canonicalize#1"]
    assert [r["lines"] for r in saved["stages"]] == [60005, 60005]
    for name in ("input", "canonicalize#1"):
        entry, whole = saved["texts"][name], big[name].text
        kept = entry["text"]
        assert entry["cut"] and entry["lines"] == 60005 and 0 < entry["kept_lines"] < 60005
        assert len(kept.encode()) <= B.TEXT_BYTES == 200_000
        assert whole.startswith(kept) and kept.endswith("\n") and kept.count("\n") == entry["kept_lines"]
        next_line = whole[len(kept):].split("\n", 1)[0] + "\n"
        assert len((kept + next_line).encode()) > B.TEXT_BYTES  # as many whole lines as fit
        assert f"the first {entry['kept_lines']:,} of 60,005 lines are kept" in entry["note"]
    assert len(json.dumps(saved, ensure_ascii=False).encode()) <= B.TOTAL_BYTES
    assert saved["title"] == "big<&>" and "<script>" in saved["texts"]["input"]["text"]  # the JSON keeps them as they are
    panel_of(data).close()


def test_the_whole_bundle_stays_within_its_total(big, monkeypatch):
    monkeypatch.setattr(B, "TOTAL_BYTES", 150_000)
    saved = B.view_model(big, "input", "canonicalize#1")
    size = len(json.dumps(saved, ensure_ascii=False).encode())
    assert size <= 150_000
    kept = [saved["texts"][n]["kept_lines"] for n in ("input", "canonicalize#1")]
    assert all(0 < k < 60005 for k in kept) and size > 100_000  # the texts share what the rest leaves
    assert all(big[n].text.startswith(saved["texts"][n]["text"]) for n in ("input", "canonicalize#1"))


def test_a_redisplayed_panel_saves_what_it_shows_now():
    def td(x, y):
        return jnp.dot(x.T, y.T).T

    ex = wb.explore(td, jnp.ones((8, 16)), jnp.ones((4, 8)))
    p = Panel(ex, background=False)
    try:
        p.toggle_patterns(["dot_transpose"], False)
        p.pick("xla:optimized")
        saved = p._repr_mimebundle_()[B.MIME]
        assert saved["toggles"]["patterns_disabled"] == ["dot_transpose"]
        assert saved["shown"] == {"left": p.left, "right": "xla:optimized"} and p.left == ex["xla:optimized"].parent
        assert saved["texts"]["xla:optimized"]["text"] == p.ex["xla:optimized"].text
        assert [r["stage"] for r in saved["stages"]] == p.ex.names
    finally:
        p.close()


def test_the_bundle_carries_the_structural_diff_the_panel_shows(monkeypatch):
    """The Diff tab's diff of the pair shown, as the panel's DiffView holds it (normalized texts, runs), is in
    the bundle: the extension shows and counts the same rows (issue 27 item 10). Too big, or with a failed
    stage, the bundle says why it has none."""
    def td(x, y):
        return jnp.dot(x.T, y.T).T

    ex = wb.explore(td, jnp.ones((8, 16)), jnp.ones((4, 8)))
    p = Panel(ex, background=False)
    try:
        for pick in (None, "xla:optimized"):
            if pick:
                p.pick(pick)
            saved = p.wait()._repr_mimebundle_()[B.MIME]
            assert (saved["shown"]["left"], saved["shown"]["right"]) == (p.left, p.right)
            assert saved["diff"] == p.diff_view.data["diff"] == {"left": p.left, "right": p.right,
                                                                 **carried(ex.diff(p.left, p.right))}
    finally:
        p.close()
    size = len(json.dumps(B.view_model(ex, "stablehlo", "xla:optimized")["diff"], ensure_ascii=False))
    monkeypatch.setattr(B, "DIFF_BYTES", size - 1)
    over = B.view_model(ex, "stablehlo", "xla:optimized")["diff"]
    assert set(over) == {"left", "right", "note"}
    assert over["note"] == f"the structural diff takes {size:,} bytes, over the {size - 1:,} a view carries for it"


def test_a_pair_without_a_structural_diff_says_why(big):
    saved = B.view_model(big, "input", "canonicalize#1")
    assert saved["diff"] == {"left": "input", "right": "canonicalize#1",
                             "note": "over 20,000 lines, a saved notebook keeps no structural diff (it would take "
                                     "seconds to make)"}
    # nor cost rows: the analytic model takes seconds on 60,000 ops, and the cell's output waits for them
    assert saved["cost"] is None
    assert saved["cost_note"] == ("input and canonicalize#1: over 20,000 lines, a saved notebook keeps no cost rows "
                                  "(they would take seconds to make); the live panel's Cost tab has them")


def test_the_cost_rows_keep_the_stage_under_the_limit_and_name_the_one_over(shell, monkeypatch):
    tb = shell.user_ns.get("tb") or wb.explore(lambda x, y: jnp.dot(x.T, y.T).T, jnp.ones((8, 16)), jnp.ones((4, 8)))
    small, large = sorted(("canonicalize#2", "enzyme-hlo-patterns#1"), key=lambda n: tb[n].lines)
    assert tb[small].lines < tb[large].lines
    monkeypatch.setattr(B, "DIFF_LINES", tb[small].lines)
    saved = B.view_model(tb, "canonicalize#2", "enzyme-hlo-patterns#1")
    assert [r[0] for r in saved["cost"]["rows"]] == [small]
    ops = saved["cost"]["columns"].index("ops")
    assert saved["cost"]["rows"][0][ops] == int(tb.cost().set_index("stage").loc[small, "ops"])
    assert saved["cost_note"].startswith(f"{large}: over {tb[small].lines:,} lines")
    assert "cost_note" not in B.view_model(tb, small, small)


def test_the_bundles_cost_rows_run_no_xla_analysis(shell, monkeypatch):
    """The saved view keeps the analytic model's rows; XLA's numbers (a conversion to HLO and an analysis of
    each MLIR stage, ~0.3 s of the first %%hlo cell) are left to the live panel, so none is computed for it."""
    from workbench.analysis.cost import table

    tb = shell.user_ns.get("tb") or wb.explore(lambda x, y: jnp.dot(x.T, y.T).T, jnp.ones((8, 16)), jnp.ones((4, 8)))
    analysed: list[str] = []
    real = table.xla_cost
    monkeypatch.setattr(table, "xla_cost", lambda text: analysed.append(text) or real(text))
    table._model_cost.cache_clear()
    table._xla_cost.cache_clear()
    saved = B.view_model(tb, "canonicalize#2", "enzyme-hlo-patterns#1")
    assert len(saved["cost"]["rows"]) == 2 and analysed == []
    assert "xla_flops" not in saved["cost"]["columns"] or all(
        r[saved["cost"]["columns"].index("xla_flops")] is None for r in saved["cost"]["rows"])
    live = tb.cost()  # the panel's Cost tab and ex.cost() do show XLA's numbers
    assert analysed and live.set_index("stage").loc["enzyme-hlo-patterns#1", "xla_flops"] > 0


def test_a_failed_stage_is_saved_with_its_error():
    def tf(x):
        return jnp.transpose(x) * 2

    ex = wb.explore(tf, jnp.ones((4, 8)), pipeline="canonicalize,cse,one-shot-bufferize")
    saved = B.view_model(ex)
    assert ex.error.stage == "one-shot-bufferize#1"
    assert saved["error"]["stage"] == "one-shot-bufferize#1" and saved["error"]["message"] == str(ex.error)
    assert saved["shown"] == {"left": "cse#1", "right": "one-shot-bufferize#1"}  # as the panel picks it
    entry = saved["texts"]["one-shot-bufferize#1"]
    assert entry["state"] == "failed" and entry["text"] == "" and ex["one-shot-bufferize#1"].error in entry["note"]
    assert saved["texts"]["cse#1"]["text"] == ex["cse#1"].text and saved["complete"]
    assert saved["diff"] == {"left": "cse#1", "right": "one-shot-bufferize#1",
                             "note": "a stage shown has no text to compare"}


# -- a notebook, executed and saved -------------------------------------------------------------------------
@pytest.mark.slow
def test_an_executed_notebook_keeps_the_bundle(tmp_path):
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench\nimport jax.numpy as jnp"),
                nbformat.v4.new_code_cell(TRANSPOSES.replace("-o tb", "-o tb --xla-wait 600").rstrip())]
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved_nb = nbformat.read(path, as_version=4)
    (output,) = saved_nb.cells[1].outputs
    assert output.output_type == "display_data"
    data = output.data
    assert set(data) >= {WIDGET, B.MIME, "text/plain"}
    saved = data[B.MIME]
    names = [r["stage"] for r in saved["stages"]]
    assert saved["format"] == 2 and saved["schema"] == "hlo-workbench/view" and saved["complete"]
    assert names[:2] == ["jaxpr", "stablehlo"] and "enzyme-hlo-patterns#1" in names and names[-1].startswith("backend:")
    assert "xla:optimized" in names and all(set(r) == set(B.COLUMNS) | {"parent", "edit"} for r in saved["stages"])
    assert "stablehlo.dot_general" in saved["texts"][saved["shown"]["right"]]["text"]
    # JupyterLab saves a notebook without the widgets' state (its default): nbconvert, nbviewer's
    # renderer, then has no state for the view and shows the output's text
    saved_nb.metadata.pop("widgets", None)
    body, _ = HTMLExporter().from_notebook_node(saved_nb)
    assert f"{len(names)} stages; pipeline " in body and WIDGET not in body


# -- the one view model: what every view draws -------------------------------------------------------------
def _nnx_step():
    """A Flax NNX train step with a ``jax.debug.print``: its program returns the model's and the optimizer's
    state too, so its check has many more leaves than the step's own output."""
    from tests.corpus import program

    inst = program("nnx_transformer").build()
    fn = inst.fn

    def step(*args):
        out = fn(*args)
        jax.debug.print("loss {l}", l=out)
        return out

    return inst, fn


def test_the_model_holds_toggles_an_edit_and_a_run_checked_leaf_by_leaf(capfd):
    from tests.corpus import program

    inst = program("nnx_transformer").build()
    ex = wb.explore(inst.fn, *inst.args)
    mlir = [s for s in ex.pipeline_stages if s.group == "mlir" and s.is_module and not s.error]
    edited = ex.with_text(mlir[0].name, mlir[0].text.replace("stablehlo.", "stablehlo.", 1) + "\n")
    edited = edited.with_patterns(disable=["add_simplify"]).with_xla(disable=["algsimp"])
    r = edited.run()
    model = B.view_model(edited, source="panel")
    B.validate_view(model)
    assert model["toggles"]["patterns_disabled"] == ["add_simplify"] and model["toggles"]["xla_disabled"] == ["algsimp"]
    assert [e["kind"] for e in model["edits"]] == ["text"] and model["edits"][0]["stage"] == mlir[0].name
    assert [s["stage"] for s in model["stages"] if s["edit"] == "text"] == [mlir[0].name]
    assert len(model["stages"]) == len(edited.stages)
    run = model["runs"][-1]
    leaves = run["check"]["leaves"]
    # every leaf of the program's outputs, as r.check.table() lists them (not the step's own output alone)
    assert [l["path"] for l in leaves] == list(r.check.table()["path"]) and len(leaves) > 5
    assert all(l["tolerance"] is not None and l["passed"] for l in leaves)
    assert run["stale"] == "" and run["repeat"] == len(r.timing.times)
    # the same model in words, as a saved notebook shows it without JavaScript
    words = B.view_text(model).splitlines()
    assert words[0].startswith(f"hlo-workbench: {ex.spec.title} on {ex.spec.device}, {len(edited.stages)} stages")
    assert "  patterns off: add_simplify" in words and "  XLA passes off: algsimp" in words
    assert words[-1].startswith(f"  run {r.stage} on {r.device}: ") and words[-1].endswith("check passed")
    assert [w for w in words if w.startswith("  edit: ")] == [f"  edit: {model['edits'][0]['what']}"]
    # a view model is JSON as a browser reads it: no NaN, no Infinity
    json.loads(json.dumps(model, allow_nan=False))


def test_a_run_of_an_earlier_program_is_marked_stale_with_why():
    ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(8))
    ex.run()
    off = ex.with_xla(disable=["algsimp"])
    model = B.view_model(off, runs=off.history)
    B.validate_view(model)
    assert len(model["runs"]) == 1 and model["runs"][0]["stale"]
    assert "(stale: " in B.view_text(model).splitlines()[-1]


def test_the_schema_refuses_a_model_that_lies_about_its_shape():
    ex = wb.explore(lambda x: x + 1, jnp.ones(4))
    model = B.view_model(ex)
    B.validate_view(model)
    bad = json.loads(json.dumps(model))
    bad["stages"][0]["group"] = "gpu"
    with pytest.raises(ValueError, match=r"stages\[0\]\.group"):
        B.validate_view(bad)
    bad = json.loads(json.dumps(model))
    bad["diff"] = {"left": "a", "right": "b"}  # neither a diff nor a note saying why there is none
    with pytest.raises(ValueError, match="diff"):
        B.validate_view(bad)


def test_the_models_diff_counts_are_pythons():
    ex = wb.explore(lambda x: jnp.dot(x.T, x.T).T + 0 * x.sum(), jnp.ones((8, 8)))
    model = B.view_model(ex)
    left, right = model["shown"]["left"], model["shown"]["right"]
    d = ex.diff(left, right)
    assert model["diff"]["runs"] == d.runs()


def test_the_models_drift_names_one_cause_the_users_hand_edit(monkeypatch):
    """... and carries the op beside its counterpart, its inputs and the values compared, as JSON-safe rows: the
    first rows of each, with a count of the rest."""
    from tests.test_drift import scaled

    x = jnp.linspace(0, 1, 64)
    ex = wb.explore(scaled, x)
    last = ex.default_run_stage()
    e = ex.with_text(last, last.text.replace("dense<3.000000e+00>", "dense<3.100000e+00>"))
    d = e.drift()
    model = B.view_model(e, drift=d)
    B.validate_view(model)
    json.dumps(model["drift"], allow_nan=False)
    op = model["drift"]["op"]
    assert model["drift"]["found"] and op["cause"]["kind"] == "edit" and op["cause"]["stage"] == last.name
    assert op["cause"]["words"] == f"the cause: your hand edit of {last.name}"
    assert model["drift"]["summary"].count("the cause:") == 1
    ref = d.op.reference
    assert op["counterpart"] == {"result": ref["result"], "op": "stablehlo.multiply", "line": ref["line"],
                                 "text": ref["text"]} and ref["line"] >= 0
    inputs = op["inputs"]
    assert inputs["columns"][:4] == ["input", "here", "reference", "differs"] and inputs["more"] == 0
    assert [r[:4] for r in inputs["rows"]] == [[i.position, i.here, i.reference, i.differs] for i in d.op.inputs]
    assert any(r[3] for r in inputs["rows"])  # the edited constant differs from the reference's
    values = model["drift"]["values"]
    assert values["columns"] == list(d.table().columns) and len(values["rows"]) == len(d.rows) > 1
    assert values["more"] == 0 and values["drifts"] == sum(r["drifts"] for r in d.rows) >= 1
    monkeypatch.setattr(B, "DRIFT_VALUES", 1)
    monkeypatch.setattr(B, "DRIFT_INPUTS", 1)
    cut = B.drift_entry(d)
    assert len(cut["values"]["rows"]) == 1 and cut["values"]["more"] == len(d.rows) - 1
    assert len(cut["op"]["inputs"]["rows"]) == 1 and cut["op"]["inputs"]["more"] == len(d.op.inputs) - 1
    B.validate_view({**model, "drift": cut})


def test_a_model_without_its_pair_makes_no_diff_cost_or_texts(monkeypatch):
    """The panel's core (header, stage list, runs) draws the pair elsewhere: its model neither makes nor carries the
    pair's diff, ops delta, cost rows or texts, and is still a valid view model."""
    ex = wb.explore(lambda x: jnp.dot(x.T, x.T).T, jnp.ones((8, 8)))
    ex.stages
    made = []
    monkeypatch.setattr(B, "pair_diff", lambda *a, **k: made.append("diff"))
    monkeypatch.setattr(B, "_cost", lambda *a, **k: made.append("cost"))
    model = B.view_model(ex, pair=False)
    B.validate_view(model)
    assert made == [] and model["texts"] == {} and model["ops_delta"] == [] and model["cost"] is None
    assert set(model["diff"]) == {"left", "right", "note"} and len(model["stages"]) == len(ex.stages)


def test_the_pairs_facts_added_later_make_the_same_model():
    """The panel makes its model without the pair (``pair=False``) and its saved view adds the pair's facts to that
    one (``with_pair``): the two steps make what one does."""
    ex = wb.explore(lambda x: jnp.dot(x.T, x.T).T, jnp.ones((8, 8)))
    core = B.view_model(ex, pair=False)
    whole = B.with_pair(ex, core)
    assert core["texts"] == {} and whole == B.view_model(ex)
    assert whole["diff"]["runs"] == ex.diff(whole["shown"]["left"], whole["shown"]["right"]).runs()
