"""``--json`` of the commands that explore a program (stages, show, report, profile) and of the listings
(patterns, pipelines), called as a user types them: a fresh process, no terminal. Each document is validated
against the schema the package ships and holds the facts the Python API gives on the same program: the stage
table (``ex.table()``), a stage's text, the op-count delta, the cost rows, the run's check, the profiles'
tables, the catalog and the presets."""
import pytest

from tests.cli_runs import command, corpus_target, document

FAILING = "canonicalize,one-shot-bufferize"  # one-shot-bufferize fails on StableHLO: a stage that failed


def _corpus(name: str):
    from tests.corpus import program

    return program(name).build()


def _facts(rows, columns) -> list[tuple]:
    return [tuple(row[c] for c in columns) for row in rows]


@pytest.mark.subprocess
def test_stages_and_show_of_an_equinox_program_are_its_table_and_texts_in_python(tmp_path):
    import workbench as wb

    saved = tmp_path / "eqx.hlox"
    doc = document(command("stages", corpus_target(tmp_path, "eqx_filter_jit"), "--json", "--save", saved,
                             cwd=tmp_path), 0)
    inst = _corpus("eqx_filter_jit")
    ex = wb.explore(inst.fn, *inst.args)
    table = ex.table()
    assert _facts(doc["stages"], ("stage", "group", "changed", "error", "produced_by")) == \
        list(table[["stage", "group", "changed", "error", "produced_by"]].itertuples(index=False, name=None))
    # XLA's texts name the Python frames that traced the program (this test's, the command's): their lines differ
    early = table["group"].isin(["trace", "mlir"])
    assert [row["lines"] for row in doc["stages"] if row["group"] in ("trace", "mlir")] == list(table["lines"][early])
    assert doc["failed"] is None and doc["warnings"] == ex.warnings == []
    assert doc["exploration"] == {"title": ex.spec.title, "device": ex.spec.device, "pipeline": "all",
                                  "pipeline_string": ex.pipeline_string}

    # show reads the saved exploration (the --save note went to stderr, not into the document)
    kept = wb.load(saved)
    for name in ("enzyme-hlo-patterns#1", "xla:optimized"):
        shown = document(command("show", saved, "--stage", name, "--json"), 0)
        st = (ex if name.startswith("enzyme") else kept).stage(name)
        assert (shown["stage"], shown["group"], shown["produced_by"]) == (st.name, st.group, st.produced_by)
        assert shown["text"] == st.text != "" and shown["error"] is None

    # a stage that is not there: status 2, one line on stderr, the error document on stdout
    r = command("show", saved, "--stage", "enzyme-hlo-patterns#9", "--json")
    trouble = document(r, 2)
    assert r.stderr.startswith("hlo-workbench: unknown stage 'enzyme-hlo-patterns#9'") and "Traceback" not in r.stderr
    assert trouble["error"]["type"] == "UnknownNameError" and "did you mean" in trouble["error"]["message"]


@pytest.mark.subprocess
def test_a_failed_stage_is_status_1_with_the_apis_error_in_stages_show_and_profile(tmp_path):
    import workbench as wb
    from workbench.examples import mlp

    saved = tmp_path / "failed.hlox"
    doc = document(command("stages", "mlp", "-p", FAILING, "--json", "--save", saved), 1)
    ex = wb.explore(mlp.fn, *mlp.args(), pipeline=FAILING)
    assert doc["failed"] == {"stage": ex.error.stage, "message": str(ex.error)}
    assert doc["failed"]["stage"] == "one-shot-bufferize#1" == doc["stages"][-1]["stage"]
    assert [r["stage"] for r in doc["stages"]] == list(ex.table()["stage"])
    assert doc["stages"][-1]["ms"] is None and doc["stages"][-1]["error"] == ex.stage("one-shot-bufferize#1").error

    shown = document(command("show", saved, "--stage", "one-shot-bufferize#1", "--json"), 1)
    assert shown["error"] == ex.stage("one-shot-bufferize#1").error and shown["text"] == ""

    # nothing past the failed stage to run: profile says which failed, and has no tables
    profiled = document(command("profile", saved, "--json"), 1)
    assert profiled["failed"] == doc["failed"] and profiled["run"] is None and profiled["compile"] is None


@pytest.mark.subprocess
def test_report_of_a_program_that_prints_keeps_stdout_for_the_document(tmp_path):
    """debug_print_loop prints from a host callback on every call: with --json that goes to stderr."""
    import pandas as pd

    import workbench as wb

    r = command("report", corpus_target(tmp_path, "debug_print_loop"), "--json", "--repeat", "2", "--html", "r.html",
                 cwd=tmp_path)
    doc = document(r, 0)
    assert "power iteration" in r.stderr
    inst = _corpus("debug_print_loop")
    ex = wb.explore(inst.fn, *inst.args)
    assert [row["stage"] for row in doc["stages"]] == list(ex.table()["stage"]) and doc["failed"] is None

    last = [s for s in ex.stages if s.group == "mlir" and not s.error][-1]
    first = ex.reference_stage()
    assert (doc["ops"]["before"], doc["ops"]["after"]) == (first.name, last.name)
    delta = ex.diff(first, last).ops_delta()
    assert _facts(doc["ops"]["delta"], ("op", "before", "after", "delta")) == list(delta.itertuples(index=False,
                                                                                                   name=None))
    cost = ex.cost().set_index("stage")
    assert [row["stage"] for row in doc["cost"]] == [first.name, last.name, "xla:optimized"]
    for row in doc["cost"]:
        for col in ("ops", "flops", "transcendentals", "bytes"):
            want = cost.loc[row["stage"], col]
            assert row[col] == (None if pd.isna(want) else int(want)), (row["stage"], col)

    run = doc["run"]
    assert run["stage"] == last.name and len(run["timing"]["times_ms"]) == 2 and run["timing"]["median_ms"] > 0
    check = ex.run(last, repeat=2).check
    assert run["check"]["passed"] is check.passed is True and run["check"]["reference"] == check.reference
    assert [leaf["path"] for leaf in run["check"]["leaves"]] == [leaf.path for leaf in check.leaves]
    assert [leaf["shape"] for leaf in run["check"]["leaves"]] == [list(leaf.shape) for leaf in check.leaves]
    assert doc["final"] == {"stage": last.name, "text": last.text}
    assert doc["html"].endswith("r.html") and (tmp_path / "r.html").is_file()


@pytest.mark.subprocess
def test_profile_json_has_every_row_of_both_tables_whatever_top_says(tmp_path):
    import workbench as wb

    doc = document(command("profile", corpus_target(tmp_path, "optax_chain"), "--json", "--repeat", "2", "--top", "2",
                             cwd=tmp_path), 0)
    inst = _corpus("optax_chain")
    ex = wb.explore(inst.fn, *inst.args)
    prof = ex.profile(repeat=2)
    run = doc["run"]
    assert run["stage"] == prof.stage == ex.default_run_stage().name and run["calls"] == 2
    assert len(run["instructions"]) == len(prof.table) > 2
    assert {row["instruction"] for row in run["instructions"]} == set(prof.table["instruction"])

    cp = ex.compile_profile()
    steps = doc["compile"]["steps"]
    assert {row["kind"] for row in steps} == set(cp.table["kind"])
    assert len([s for s in steps if s["kind"] == "xla pass"]) > 2  # the text shows the 2 longest; here all
    ours = cp.table[cp.table["kind"].isin(["trace", "lowering", "mlir pass"])]
    assert _facts([s for s in steps if s["kind"] in ("trace", "lowering", "mlir pass")], ("kind", "name", "stage")) \
        == list(ours[["kind", "name", "stage"]].itertuples(index=False, name=None))
    assert doc["compile"]["total_s"] > 0 and doc["compile"]["explore_s"] > 0 and doc["trace"] is None


@pytest.mark.subprocess
def test_patterns_and_pipelines_json_are_the_catalog_and_the_presets():
    import workbench as wb

    catalog = wb.patterns()
    doc = document(command("patterns", "--search", "Transpose", "--group", "base", "--json"), 0)
    want = catalog[(catalog["group"] == "base") & catalog["name"].str.contains("transpose", case=False)]
    assert [p["name"] for p in doc["patterns"]] == list(want["name"]) != []
    assert {p["group"] for p in doc["patterns"]} == {"base"} and "groups" not in doc

    groups = document(command("patterns", "--groups", "--json"), 0)["groups"]
    counts = catalog.groupby("group")["name"].size()
    assert {g["group"]: g["patterns"] for g in groups} == counts.to_dict()
    assert sum(g["enabled_by_default"] for g in groups) == int(catalog["default_enabled"].sum())

    r = command("patterns", "--group", "bse", "--json")
    assert document(r, 2)["error"]["type"] == "UnknownNameError" and "did you mean 'base'" in r.stderr

    presets = document(command("pipelines", "--json"), 0)["pipelines"]
    table = wb.pipelines()
    assert _facts(presets, ("name", "steps", "passes", "needs_enzyme")) == \
        list(table[["name", "steps", "passes", "needs_enzyme"]].itertuples(index=False, name=None))
