"""--json of the commands that work on files -- ``diff``, ``opt``, ``open``, ``course`` -- and of the gate ``check``,
as a user types them (a subprocess, no terminal), on the corpus's optax_chain: each document validates against the
schema the package ships and holds the facts the Python API gives on the same files (``ex.diff``,
``compare_explorations``, ``wb.opt``, ``ex.table()``, ``check_golden``), with the exit statuses the text has (diff and
check 0 same / 1 differ, opt and open 1 for a failed pass or stage, 2 could not)."""
import subprocess

import pytest

from tests.cli_runs import ROOT, command, document

# a pass that fails on a module without @__transform_main (tests/test_cli.py reads it the same way)
FAILING_PASS = "transform-interpreter"


def _command(*args, cwd) -> tuple[subprocess.CompletedProcess, dict]:
    """The command and its --json document, validated against its schema."""
    r = command(*args, "--json", cwd=cwd)
    doc = document(r, r.returncode)
    assert doc["command"] == args[0]
    return r, doc


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """optax_chain explored with the default pipeline and with no rewrite patterns (only_enzyme), each saved, and the
    stablehlo and final MLIR stage of the first written as files."""
    from tests.corpus import program

    import workbench as wb

    folder = tmp_path_factory.mktemp("files_json")
    inst = program("optax_chain").build()
    ex = wb.explore(inst.fn, *inst.args)
    bare = ex.with_pipeline("only_enzyme")
    last = [s for s in ex.stages if s.group == "mlir" and not s.error][-1]
    files = {"dir": folder, "ex": ex, "last": last.name, "a": ex.save(folder / "a.hlox"),
             "b": bare.save(folder / "b.hlox")}
    for key, stage in (("stablehlo", "stablehlo"), ("final", last.name)):
        files[key] = folder / f"{key}.mlir"
        files[key].write_text(ex[stage].text)
    return files


@pytest.mark.subprocess
def test_diff_json_of_two_modules_is_the_apis_diff(saved):
    ex, cwd = saved["ex"], saved["dir"]
    r, doc = _command("diff", "stablehlo.mlir", "final.mlir", "-U", 1, cwd=cwd)
    assert r.returncode == 1, r.stderr
    d = ex.diff("stablehlo", saved["last"])
    assert doc["kind"] == "modules" and doc["same"] is False and doc["html"] is None
    assert doc["ops_delta"] == d.ops_delta_rows() != []
    assert doc["unified"].splitlines()[2:] == d.unified(context=1).splitlines()[2:]  # the headers name the files
    kinds = [kind for _, _, kind in d.rows()]
    assert doc["lines"] == {"deleted": kinds.count("deleted"), "inserted": kinds.count("inserted"),
                            "changed": kinds.count("changed"), "moved": kinds.count("moved") // 2}

    r, doc = _command("diff", "final.mlir", "final.mlir", "--html", "d.html", cwd=cwd)
    assert r.returncode == 0 and doc["same"] is True and doc["ops_delta"] == [] and doc["unified"] == ""
    assert doc["html"] and (cwd / "d.html").is_file() and "wrote the diff viewer" in r.stderr

    r, doc = _command("diff", "final.mlir", "missing.mlir", cwd=cwd)
    assert r.returncode == 2 and r.stderr == "hlo-workbench: no such file: missing.mlir\n"
    assert doc["error"]["message"] == "no such file: missing.mlir"


@pytest.mark.subprocess
def test_diff_json_of_two_saved_explorations_is_compare_explorations(saved):
    import workbench as wb

    r, doc = _command("diff", "a.hlox", "b.hlox", cwd=saved["dir"])
    assert r.returncode == 1, r.stderr
    c = wb.compare_explorations(wb.load(saved["a"]), wb.load(saved["b"]), labels=("a.hlox", "b.hlox"))
    assert doc["kind"] == "explorations" and doc["same"] is doc["identical"] is c.identical is False
    assert doc["first_difference"]["stage"] == c.first_difference.name
    assert [(s["stage"], s["side"], s["same"]) for s in doc["stages"]] == [(p.name, p.side, p.same) for p in c.pairs]
    assert [s["ops_delta"] for s in doc["stages"]] == [row["ops_delta"] for row in c.rows()]
    assert doc["final"] == {k: list(v) for k, v in c.final.items()} and doc["final"]["ops"][0] < doc["final"]["ops"][1]
    assert doc["versions"] == [] and doc["summary"] == c.lines()

    r, doc = _command("diff", "a.hlox", "a.hlox", cwd=saved["dir"])
    assert r.returncode == 0 and doc["identical"] is True and doc["first_difference"] is None


@pytest.mark.subprocess
def test_opt_json_is_wb_opt_and_names_a_failing_pass_or_chunk(saved):
    import workbench as wb
    from workbench.ir.text import strip_locations

    cwd = saved["dir"]
    text = saved["stablehlo"].read_text()
    r, doc = _command("opt", "stablehlo.mlir", "--pass-pipeline=canonicalize,cse", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert doc["module"] == strip_locations(wb.opt(text, "canonicalize,cse")).rstrip("\n") + "\n"
    assert doc["pipeline"] == "canonicalize,cse" and doc["chunks"] is None and doc["failure"] is None

    r, doc = _command("opt", "stablehlo.mlir", f"--pass-pipeline={FAILING_PASS}", cwd=cwd)
    assert r.returncode == 1 and doc["module"] is None
    assert doc["failure"]["stage"] == "opt" and "__transform_main" in doc["failure"]["message"]

    # two chunks, the second not MLIR that parses: the first's module, the second's error, exit 1
    (cwd / "two.mlir").write_text(text + "\n// -----\nfunc.func @broken(\n")
    r, doc = _command("opt", "two.mlir", "--split-input-file", "--pass-pipeline=canonicalize", cwd=cwd)
    assert r.returncode == 1, r.stderr
    first, second = doc["chunks"]
    assert first["module"] == strip_locations(wb.opt(text, "canonicalize")).rstrip("\n") + "\n"
    assert first["error"] is None and second["module"] is None and second["error"]

    r, doc = _command("opt", "a.hlox", cwd=cwd)
    assert r.returncode == 2 and "a.hlox is not a text file" in doc["error"]["message"]


@pytest.mark.subprocess
def test_open_json_is_the_saved_stage_table_and_one_stage(saved):
    import workbench as wb

    cwd = saved["dir"]
    loaded = wb.load(saved["a"])
    r, doc = _command("open", "a.hlox", cwd=cwd)
    assert r.returncode == 0, r.stderr
    table = loaded.table()
    assert [s["stage"] for s in doc["stages"]] == list(table["stage"]) == saved["ex"].names
    assert [(s["group"], s["lines"], s["changed"]) for s in doc["stages"]] == list(
        zip(table["group"], table["lines"], table["changed"]))
    assert doc["failure"] is None

    r, doc = _command("open", "a.hlox", "--stage", "xla:optimized", "-o", "opt.hlo", cwd=cwd)
    assert r.returncode == 0, r.stderr
    stage = loaded["xla:optimized"]
    assert doc["stage"]["text"] == stage.text == (cwd / "opt.hlo").read_text()
    assert doc["stage"]["group"] == "xla" and doc["stage"]["lines"] == stage.lines and doc["output"] == "opt.hlo"

    r, doc = _command("open", "a.hlox", "--stage", "xla:optimised", cwd=cwd)
    assert r.returncode == 2 and "did you mean 'xla:optimized'" in doc["error"]["message"]


@pytest.mark.subprocess
def test_course_json_lists_what_it_wrote_and_what_it_kept(tmp_path):
    r, doc = _command("course", "mine", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    shipped = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.suffix in (".ipynb", ".md"))
    assert sorted(doc["written"]) == shipped and doc["folder"] == "mine" and doc["kept"] == []
    mine = tmp_path / "mine" / "03_rewrite_patterns.ipynb"
    mine.write_text(mine.read_text() + "\n")
    r, doc = _command("course", "mine", cwd=tmp_path)
    assert r.returncode == 0 and doc["written"] == [] and doc["kept"] == ["03_rewrite_patterns.ipynb"]
    assert sorted(doc["already_there"] + doc["kept"]) == shipped
    (tmp_path / "afile").write_text("")
    r, doc = _command("course", "afile", cwd=tmp_path)
    assert r.returncode == 2 and "is a file, not a folder" in doc["error"]["message"]


@pytest.mark.subprocess
def test_check_json_rows_are_the_verdicts(saved):
    from workbench.exploration.golden import check_golden

    cwd = saved["dir"]
    r, doc = _command("check", "a.hlox", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert doc["ok"] is True and doc["first_difference"] is None and doc["updated"] is None
    assert all(row["ok"] for row in doc["rows"]) and {"ops", "flops"} <= {row["what"] for row in doc["rows"]}

    # without the rewrite patterns the final module has more ops: the ops limit (0%) breaks
    r, doc = _command("check", "a.hlox", "-p", "only_enzyme", cwd=cwd)
    assert r.returncode == 1, r.stderr
    verdict = check_golden(saved["a"], pipeline="only_enzyme")
    table = verdict.table()
    assert doc["ok"] is verdict.ok is False
    assert [(row["what"], row["ok"], row["change"], row["limit"]) for row in doc["rows"]] == list(
        zip(table["what"], table["ok"], table["change"], table["limit"]))
    ops = next(row for row in doc["rows"] if row["what"] == "ops")
    assert not ops["ok"] and ops["now"] > ops["golden"]
    assert doc["first_difference"] == verdict.comparison.first_difference.words(verdict.comparison.labels)

    r, doc = _command("check", "missing.hlox", cwd=cwd)
    assert r.returncode == 2 and "missing.hlox" in doc["error"]["message"]
