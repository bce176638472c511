"""Edit any stage and resume the pipeline: ``with_text`` (a module changed by hand), ``with_pass`` and
``without_pass`` (a pass added or left out), each a new Exploration whose later MLIR stages and XLA's are made
from the edit; edits are listed, kept by toggles, saved and reloaded, and marked in the report."""
import json
import re

import jax
import jax.numpy as jnp
import pytest

import workbench as wb

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def f(x):
    return jnp.tanh(x.T).T * 2.0


X = jax.random.normal(jax.random.PRNGKey(0), (4, 8))

# canonicalize#1 of f under "upstream", both transposes taken out by hand: tanh is elementwise, so the same program
NO_TRANSPOSE = """\
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.tanh %arg0 : tensor<4x8xf32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %4 = stablehlo.multiply %1, %3 : tensor<4x8xf32>
    return %4 : tensor<4x8xf32>
  }
}
"""


@pytest.fixture(scope="module")
def upstream():
    return wb.explore(f, X, pipeline="upstream")


def test_a_transpose_removed_by_hand_flows_through_the_later_stages_and_xla(upstream, tmp_path):
    ex = upstream
    assert "stablehlo.transpose" in ex["canonicalize#1"].text and "transpose(" in ex["xla:before_optimizations"].text
    e = ex.with_text("canonicalize#1", NO_TRANSPOSE)
    assert [s.edit for s in e.pipeline_stages] == ["", "", "text", "", ""]
    assert e.edits[0].kind == "text" and e.edits[0].stage == "canonicalize#1" and e.edits[0].at == 0
    for name in ("cse#1", "symbol-dce#1"):
        assert "transpose" not in e[name].text and e[name].parent
    assert "transpose(" not in e["xla:before_optimizations"].text
    assert e["xla:optimized"].text != ex["xla:optimized"].text
    r = e.run(repeat=1)
    assert r.check.passed and r.check.source == "promoted"
    # the lines kept as they were keep their source positions: the broadcast's line is f's
    located = e.locations("canonicalize#1")
    assert set(located[located.op == "stablehlo.broadcast_in_dim"].line) == {f.__code__.co_firstlineno + 1}

    path = e.save(tmp_path / "edited.hlox")
    back = wb.load(path)
    assert back.edits == e.edits and back["canonicalize#1"].edit == "text"
    assert back["cse#1"].text == e["cse#1"].text
    toggled = back.with_patterns(disable=["transpose_transpose"])  # a loaded file rebuilds with its edits
    assert toggled.edits == e.edits and "transpose" not in toggled["cse#1"].text


def test_a_broken_edit_says_where_and_loses_nothing(upstream):
    broken = NO_TRANSPOSE.replace("stablehlo.multiply %1, %3", "stablehlo.multiply %1, %cst")
    with pytest.raises(wb.MlirSyntaxError) as info:
        upstream.with_text("canonicalize#1", broken)
    err = info.value
    assert (err.line, err.column) == (6, 33) and "expects different type" in str(err)
    assert not upstream.edits and "stablehlo.transpose" in upstream["cse#1"].text
    assert upstream.run(repeat=1).check.passed  # the exploration is as usable as before


def test_xla_stages_and_the_jaxpr_are_not_edited(upstream):
    with pytest.raises(wb.WorkbenchError, match="XLA's: its passes cannot be resumed"):
        upstream.with_text("xla:optimized", "HloModule m")
    with pytest.raises(wb.WorkbenchError, match="the jaxpr"):
        upstream.with_text("jaxpr", NO_TRANSPOSE)
    with pytest.raises(wb.WorkbenchError, match="no pass to leave out"):
        upstream.without_pass("stablehlo")
    with pytest.raises(wb.PipelineSyntaxError):
        upstream.with_pass(after="cse#1", pass_="no-such-pass")


def test_with_pass_and_without_pass_on_a_preset_equal_the_pipeline_string_with_those_passes():
    ex = wb.explore(f, X)  # the default preset, Enzyme-JaX's patterns in it
    added = ex.with_pass(after="cse#1", pass_="canonicalize")
    assert added.edits[0].kind == "insert" and added["canonicalize#2"].edit == "inserted"
    same = wb.explore(f, X, pipeline=added.pipeline_string)  # the edited pipeline, as a custom string
    assert same.pipeline_string == added.pipeline_string
    assert [s.text for s in same.pipeline_stages] == [s.text for s in added.pipeline_stages]

    dropped = ex.without_pass("enzyme-hlo-patterns#1")
    assert "enzyme-hlo-patterns#1" in ex.names and len(dropped.pipeline_stages) == len(ex.pipeline_stages) - 1
    after = dropped.pipeline_stages[[s.name for s in ex.pipeline_stages].index("enzyme-hlo-patterns#1")]
    assert after.edit == "after-removed" and after.name == "enzyme-batch#1"  # the edit shows, with its own diff
    assert dropped.pipeline_string.count("enzyme-hlo-generate-td") == ex.pipeline_string.count("enzyme-hlo-generate-td") - 1
    again = wb.explore(f, X, pipeline=dropped.pipeline_string)
    assert again.pipeline_string == dropped.pipeline_string
    assert [s.text for s in again.pipeline_stages] == [s.text for s in dropped.pipeline_stages]
    assert dropped.edits[0].pass_ == ex["enzyme-hlo-patterns#1"].produced_by


def test_edits_stack_and_toggles_keep_them(upstream):
    e = upstream.with_text("canonicalize#1", NO_TRANSPOSE).with_pass(after="cse#1", pass_="canonicalize")
    assert [x.kind for x in e.edits] == ["text", "insert"]
    assert [s.name for s in e.pipeline_stages] == ["jaxpr", "stablehlo", "canonicalize#1", "cse#1", "canonicalize#2",
                                                   "symbol-dce#1"]
    t = e.with_xla(disable=["algsimp"])
    assert t.edits == e.edits and t["canonicalize#1"].text == e["canonicalize#1"].text
    with pytest.warns(UserWarning, match="leaves out 2 edit"):
        other = e.with_pipeline("canonicalize")
    assert not other.edits


def test_an_edit_of_the_lowered_module_is_the_start_of_every_stage(upstream):
    e = upstream.with_text("stablehlo", NO_TRANSPOSE)
    assert e["stablehlo"].edit == "text" and e.edits[0].at == -1
    assert all("transpose" not in s.text for s in e.pipeline_stages[1:])
    kept = e.with_pipeline("canonicalize")  # the module it starts from stays edited under another pipeline
    assert kept.edits == e.edits and "transpose" not in kept["canonicalize#1"].text


def test_the_report_and_the_reproducer_say_what_was_edited(upstream, tmp_path):
    e = upstream.with_pass(after="canonicalize#1", pass_="cse")
    page = e.report(tmp_path / "r.html").read_text()
    # the report's view model (its components draw it: test_report and test_browser_four_ways read the page)
    model = json.loads(re.search(r'<script type="application/json" id="wb-model">(.*?)</script>', page).group(1))
    assert [(x["kind"], x["what"]) for x in model["edits"]] == [("insert", "cse inserted after canonicalize#1")]
    assert [s["stage"] for s in model["stages"] if s["edit"]] == ["cse#1"]
    folder = e.reproducer(tmp_path / "repro", stage="cse#1")
    assert (folder / "pipeline.txt").read_text().strip() == "cse,cse,symbol-dce"


def test_drift_and_bisect_work_on_an_edited_exploration_and_keep_the_edit(upstream):
    changed = NO_TRANSPOSE.replace("dense<2.000000e+00>", "dense<2.500000e+00>")  # a wrong constant, by hand
    e = upstream.with_text("canonicalize#1", changed)
    assert not e.run(repeat=1).check.passed
    d = e.drift()  # the splat of the constant is the first value that differs, on f's line
    assert d.found and d.op.op == "stablehlo.broadcast_in_dim" and d.line.endswith(f":{f.__code__.co_firstlineno + 1}")
    note = d.op.inputs[0].note
    assert "constant" in note and "2.5" in note and "removed by the hand edit of canonicalize#1" in note
    assert all(c.edits == e.edits for c in (e.with_only_patterns([]), e.with_patterns(disable=["cse_add"])))
    # bisect's candidates keep the edit: the miscompile holds with every pattern off, so no pattern is to blame
    hand = wb.explore(f, X).with_text("stablehlo", changed)
    with pytest.raises(wb.WorkbenchError, match="holds with no pattern enabled"):
        hand.bisect(wb.miscompiles("cpu:0"))


def test_reduce_and_compare_pipelines_on_an_edited_exploration(upstream):
    e = upstream.with_pass(after="canonicalize#1", pass_="cse")
    r = e.reduce(wb.has_op("stablehlo.tanh"))  # candidates run the edited pipeline's passes
    assert r.ops_after < r.ops_before and "stablehlo.tanh" in r.text
    assert r.exploration.pipeline_string == e.pipeline_string and not r.exploration.edits
    hand = upstream.with_text("stablehlo", NO_TRANSPOSE)
    df = wb.compare_pipelines(hand, pipelines=["upstream", "none"], repeat=2)  # the edited module through each
    assert list(df.pipeline) == ["upstream", "none"] and df.check_passed.all() and (df.error == "").all()
    assert (df.ops_stablehlo > 0).all()


def test_an_equinox_adam_step_with_a_print_edited_by_hand_drifts_at_the_learning_rate(capfd):
    """A real library's program with a host callback: its last stage's learning rate changed by hand (as text,
    without locations), found at optax's scale by the learning rate, the constant named with its line."""
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(8, 4, 16, 2, key=jax.random.PRNGKey(0))
    opt = optax.adam(1e-3)

    @eqx.filter_jit
    def step(model, state, x, y):
        loss, grads = eqx.filter_value_and_grad(lambda m: ((jax.vmap(m)(x) - y) ** 2).mean())(model)
        jax.debug.print("loss {l}", l=loss)
        updates, state = opt.update(grads, state)
        return eqx.apply_updates(model, updates), state, loss

    ex = wb.explore(step, model, opt.init(eqx.filter(model, eqx.is_array)), jnp.ones((4, 8)), jnp.zeros((4, 4)))
    assert not ex.drift().found
    last = ex.default_run_stage()
    e = ex.with_text(last, last.text.replace("dense<-1.000000e-03> : tensor<4xf32>", "dense<-2.000000e-03> : tensor<4xf32>"))
    d = e.drift()
    # the user's own line (opt.update in this file) leads, optax's line beside it
    assert d.found and d.op.op == "stablehlo.multiply", d.summary()
    update_line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "= opt.update(grads" in t)
    assert d.op.source.endswith(f"tests/test_edits.py:{update_line} (optax/_src/transform.py:507)"), d.op.source
    note = next(i.note for i in d.op.inputs if i.differs)
    assert "here it is the constant %" in note and "-2.000000e-03" in note and "(line 0)" not in note
    assert "loss" in capfd.readouterr().out


def test_a_flax_stage_edited_as_shown_parses_with_its_block_argument_locations():
    """Found making the view model of an NNX step: its first stage defines location aliases before the module and
    uses them in block arguments (``^bb0(%arg61: tensor<f32> loc(callsite(#loc280 at #loc442)))``); the text shown,
    edited and put back with its locations, must keep those definitions before the module, where MLIR's parser
    needs them, or the edit is refused as "undefined symbol alias id"."""
    from tests.corpus import program

    inst = program("nnx_transformer").build()
    ex = wb.explore(inst.fn, *inst.args)
    first = next(s for s in ex.pipeline_stages if s.group == "mlir" and s.is_module)
    assert first.text_with_locations.startswith("#loc")  # the form this test is about
    edited = ex.with_text(first.name, first.text + "\n")
    assert [e.kind for e in edited.edits] == ["text"] and not edited.error


def test_a_hand_edited_stablehlo_run_first_is_checked_against_the_program_as_lowered():
    """A hand edit of "stablehlo" run before the program it edits: its outputs are not the as-lowered outputs
    (they were remembered as such, under the reference's name, in the memo every exploration of the trace
    shares: its check's noise floor held the edit's own error and passed it; found on the TPU)."""
    def g(x):
        return jnp.sin(x) * 2.0

    ex = wb.explore(g, jnp.linspace(0.1, 1.0, 64), pipeline="none")
    st = ex.stage("stablehlo")
    text = st.text_with_locations or st.text
    assert text.count("2.000000e+00") == 1
    planted = ex.with_text("stablehlo", text.replace("2.000000e+00", "2.500000e+00"))
    r = planted.run("stablehlo", repeat=2)
    assert not r.check.passed and r.check.lowered_abs < 1e-5, r.check
    again = ex.run("stablehlo", repeat=2)  # the program as lowered: its own check, untouched by the edit's run
    assert again.check.passed and again.check.lowered_abs < 1e-5
