"""``hlo-workbench applicable``, ``step`` and ``edit`` as a user types them: a fresh process, no terminal, on a
corpus program (custom_rules: a loss with a custom_vjp and a custom_jvp, and its value_and_grad). What each
prints is what the Python API gives on the same program: ``ex.applicable``, ``ex.step`` and the edits
``with_text`` / ``with_pass`` / ``without_pass`` with ``changes_since``."""
import re

import pytest

from workbench.ir.text import strip_locations

from tests.cli_runs import command, corpus_target, could_not, document

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@pytest.fixture
def target(tmp_path):
    return corpus_target(tmp_path, "custom_rules", "rules.py")


@pytest.fixture(scope="module")
def explored():
    """The same program explored in Python: with the default pipeline, and with "upstream" (the edits')."""
    from tests.corpus import program

    import workbench as wb

    inst = program("custom_rules").build()
    return {p: wb.explore(inst.fn, *inst.args, pipeline=p) for p in ("all", "upstream")}


@pytest.mark.subprocess
def test_applicable_lists_the_patterns_python_finds_and_every_patterns_row(tmp_path, target, explored):
    import workbench as wb

    ex = explored["all"]
    names = ex.applicable()
    doc = document(command("applicable", target, "--json", cwd=tmp_path), 0)
    assert doc["command"] == "applicable" and doc["stage"] == "stablehlo" and not doc["exact"]
    assert doc["patterns"] == names != []
    assert [r["name"] for r in doc["rows"]] == list(wb.patterns().name)  # every pattern of the catalog, in order
    assert [r["name"] for r in doc["rows"] if r["changed"]] == names
    assert all(r["batch"] == 1 and r["seconds"] is not None for r in doc["rows"] if r["changed"])
    assert doc["summary"].startswith(f"{len(names)} of {len(doc['rows'])} patterns change 'stablehlo'")

    # one run per pattern gives the same answer, as every pattern's row
    r = command("applicable", target, "--exact", "--details", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    head, _, table = r.stdout.partition("\n\n")
    assert head == (f"# {len(names)} of {len(wb.patterns())} patterns change 'stablehlo' when applied alone "
                    "(one run per pattern)")
    lines = table.strip().splitlines()
    assert lines[0].split() == ["name", "group", "changed", "seconds", "error", "batch"]
    assert len(lines) == 1 + len(wb.patterns())
    assert [ln.split()[0] for ln in lines[1:] if ln.split()[2:3] == ["yes"]] == names


@pytest.mark.subprocess
def test_applicable_to_a_stage_that_is_no_module_is_exit_status_2(tmp_path, target):
    r = command("applicable", target, "--stage", "jaxpr", "--json", cwd=tmp_path)
    assert could_not(r) == ("stage 'jaxpr' is not an MLIR module the patterns can run on; pick 'stablehlo' or an "
                            "MLIR pipeline stage")
    doc = document(r, 2)
    assert doc["error"]["type"] == "WorkbenchError"


# -- step ------------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_step_is_pythons_stepping_exit_1_where_it_ends_elsewhere_and_saved_as_its_stages(tmp_path, target,
                                                                                         explored):
    import workbench as wb

    s = explored["all"].step()
    assert not s.matches_reference  # custom_rules: one pattern at a time ends elsewhere than the greedy run
    doc = document(command("step", target, "--json", "--save", tmp_path / "steps.hlox", cwd=tmp_path), 1)
    assert doc["applied"] == s.applied() != [] and doc["matches_reference"] is False
    assert [r["stage"] for r in doc["stages"]] == s.names
    assert doc["stages"][1]["stage"] == f"pattern:{s.applied()[0]}#1"
    assert doc["reference"] == s.reference.name and doc["summary"] == s.summary
    assert doc["difference"]["ops"] == s.difference.ops_delta_rows()
    assert doc["difference"]["changes"] == len(s.difference.changes) > 0
    assert wb.load(tmp_path / "steps.hlox").names == s.names

    # from a stage the greedy run made, no pattern applies: stepping ends where it starts, as the greedy run does
    r = command("step", target, "--stage", "enzyme-hlo-patterns#1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# no pattern applies to 'enzyme-hlo-patterns#1'\n")
    assert "differs" not in r.stdout


@pytest.mark.subprocess
def test_step_from_an_unknown_stage_is_exit_status_2_naming_the_stages(tmp_path, target):
    r = command("step", target, "--stage", "cse#9", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("hlo-workbench: unknown stage 'cse#9'") and "cse#1" in r.stderr


# -- edit ------------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_edit_removes_and_inserts_passes_as_python_does_and_saves_its_edits(tmp_path, target, explored):
    import workbench as wb

    ex = explored["upstream"]
    edited = ex.without_pass("cse#1").with_pass("stablehlo", "canonicalize")
    changes = edited.changes_since(ex)
    saved, html = tmp_path / "edited.hlox", tmp_path / "edited.html"
    doc = document(command("edit", target, "-p", "upstream", "--remove", "cse#1", "--insert-after",
                             "stablehlo=canonicalize", "--json", "--save", saved, "--html", html, cwd=tmp_path), 0)
    assert [(e["kind"], e["stage"], e["at"], e["pass"]) for e in doc["edits"]] == [
        (e.kind, e.stage, e.at, e.pass_) for e in edited.edits] == [("remove", "cse#1", 1, "cse"),
                                                                   ("insert", "stablehlo", 0, "canonicalize")]
    assert [r["stage"] for r in doc["stages"]] == edited.names and doc["failed"] is None
    # without cse, a broadcast stays twice in the final module; the first module that differs is symbol-dce's
    assert doc["final_mlir"]["changed"] and doc["final_mlir"]["ops"] == [
        {"op": op, "before": b, "after": a, "delta": d} for op, b, a, d in changes.mlir.ops] != []
    assert doc["first_difference"] == "symbol-dce#1"
    # the summary's words (what was recomputed depends on what this process's cache held)
    assert doc["summary"].startswith(f"{changes.settings[0]}, {changes.settings[1]}: ")
    assert doc["summary"].endswith(f"; {changes.mlir.words()}; {changes.xla.words()}")

    back = wb.load(saved)
    assert back.edits == edited.edits
    assert back["symbol-dce#1"].text == edited["symbol-dce#1"].text != ex["symbol-dce#1"].text
    assert html.read_text().lstrip().lower().startswith("<!doctype html")

    r = command("edit", target, "-p", "upstream", "--remove", "cse#1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()[:2]
    assert first.startswith("# 'cse#1' (cse) removed: ")
    assert first.endswith("final MLIR (symbol-dce#1) changed: stablehlo.broadcast_in_dim +1; xla:optimized unchanged")
    assert second == "# first stage whose module differs: symbol-dce#1"
    assert re.search(r"^ *symbol-dce#1 +after-removed +mlir ", r.stdout, re.M)
    assert "# final MLIR module (symbol-dce#1): op counts before and after the edit" in r.stdout


def _call_nothing_implements(text: str) -> str:
    """``text`` with main's first result computed by a custom call no backend implements: it parses and verifies,
    and XLA refuses it."""
    lines = text.splitlines()
    at = next(k for k, ln in enumerate(lines) if ln.strip().startswith("return "))
    m = re.fullmatch(r"(\s*)return (%\w+)(.*) : (tensor<[^>]*>)(.*)", lines[at])
    indent, value, rest, ty, tys = m.groups()
    lines[at:at + 1] = [f"{indent}%bad = stablehlo.custom_call @no_such_target({value}) : ({ty}) -> {ty}",
                        f"{indent}return %bad{rest} : {ty}{tys}"]
    return "\n".join(lines) + "\n"


@pytest.mark.subprocess
def test_edit_whose_text_xla_refuses_is_exit_1_with_the_stages_before_it(tmp_path, target, explored):
    ex = explored["upstream"]
    (tmp_path / "call.mlir").write_text(_call_nothing_implements(ex["cse#1"].text))
    edited = ex.with_text("cse#1", (tmp_path / "call.mlir").read_text())
    assert edited.error is not None
    r = command("edit", target, "-p", "upstream", "--text", "cse#1=call.mlir", "--json", cwd=tmp_path)
    doc = document(r, 1)
    assert doc["failed"]["stage"] == edited.error.stage == "xla:compile"
    assert "no_such_target" in doc["failed"]["message"] and "no_such_target" in r.stderr
    assert [r["stage"] for r in doc["stages"]] == edited.names
    assert [e["kind"] for e in doc["edits"]] == ["text"]
    assert strip_locations(doc["edits"][0]["text"]) == strip_locations(edited.edits[0].text)  # its lines' places back
    assert doc["first_difference"] == "cse#1"


@pytest.mark.subprocess
def test_an_edit_that_cannot_be_made_is_exit_status_2_in_one_line(tmp_path, target):
    (tmp_path / "bad.mlir").write_text("module {\n  func.func @main( {\n}\n")
    r = command("edit", target, "-p", "upstream", "--text", "cse#1=bad.mlir", "--json", cwd=tmp_path)
    assert could_not(r) == "--text cse#1=bad.mlir: bad.mlir:2:19: error: expected non-function type"
    assert document(r, 2)["error"]["type"] == "MlirSyntaxError"

    r = command("edit", target, "-p", "upstream", "--remove", "cse#9", "--insert-after", "cse#1=no-such-pass",
                 cwd=tmp_path)
    assert could_not(r) == "--remove cse#9: unknown stage 'cse#9'; did you mean 'cse#1', 'xla:cse#1'?"
    r = command("edit", target, "--insert-after", "cse#1=no-such-pass", cwd=tmp_path)
    assert could_not(r) == ("--insert-after cse#1=no-such-pass: 'no-such-pass' does not refer to a registered pass "
                            "or pass pipeline")
    r = command("edit", target, "--remove", "stablehlo", cwd=tmp_path)  # the API's advice in the command's words
    assert could_not(r) == ("--remove stablehlo: stage 'stablehlo' is the module the pipeline starts from, not a "
                            "pass's: there is no pass to leave out (edit its text with --text STAGE=FILE)")
    # refused before exploring: no edit, a file that is not there
    r = command("edit", target, cwd=tmp_path)
    assert could_not(r) == "give at least one edit: --text STAGE=FILE, --insert-after STAGE=PASS or --remove STAGE"
    r = command("edit", target, "--text", "cse#1=missing.mlir", cwd=tmp_path)
    assert could_not(r) == "--text cse#1=missing.mlir: no such file: missing.mlir"
