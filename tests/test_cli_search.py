"""``hlo-workbench drift``, ``bisect`` and ``reduce`` as a user types them: a fresh process, no terminal, on a
real program. Each command's exit status says what it found (1), that there was nothing to find (0), or that it
could not search (2); its ``--json`` follows the shipped schema and holds the facts of the Python API's object
(``ex.drift()``, ``ex.bisect(...)``, ``ex.reduce(...)``) for the same program.

The programs: test_drift's planted miscompile (a NaN fed to a program that replaces its NaNs by zeros, explored
with Reactant's no_nan, so a pattern folds the replacement away), and the corpus's SGD step (``donated_step``:
a pattern removes its one transpose) and attention (``dot_product_attention``: a transpose stays)."""
import json

import pytest

import workbench as wb
from workbench.errors import NothingToSearchError

from tests.cli_runs import NAN_FED, command, corpus_target, could_not, document, user_module

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


# -- drift ----------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_drift_finds_the_no_nan_fold_where_ex_drift_does_and_exits_1(tmp_path):
    user = user_module(tmp_path, "nanfed", NAN_FED)
    r = command("drift", "nanfed.py:fn", "--no-nan", "--json", cwd=tmp_path, installed=True)
    doc = document(r, 1)
    d = wb.explore(user.fn, *user.args(), no_nan=True).drift()
    assert d.found and doc["found"] is True and doc["command"] == "drift"
    for field in ("stage", "reference", "device", "line", "outputs_drift", "ops", "compared", "rule", "note"):
        assert doc[field] == getattr(d, field), field
    assert doc["line"] == f"{tmp_path}/nanfed.py:5"  # the jnp.where line: where the values first go wrong
    op = doc["op"]
    assert (op["op"], op["result"], op["line"], op["text"], op["source"]) == (d.op.op, d.op.result, d.op.line + 1,
                                                                              d.op.text, d.op.source)
    assert op["reference"]["op"] == d.op.reference["op"] and op["reference"]["line"] == d.op.reference["line"] + 1
    # the NaN comes through: an error JSON cannot hold, said in words
    assert op["max_abs"] is None and op["max_abs_text"] == "inf" and op["tolerance"] == d.op.check.tolerance
    assert op["cause"] == {"kind": d.op.cause.kind, "stage": d.op.cause.stage,
                           "patterns": list(d.op.cause.patterns), "how": d.op.cause.how}
    assert "no_nan_compare_simplify" in op["patterns"] and op["patterns"] == list(d.op.patterns)
    first = op["inputs"][0]
    assert first["differs"] is True and first["here"] == "argument 0 of @main"
    assert "stablehlo.select" in first["reference"]
    table = d.table()
    assert [row["result"] for row in doc["table"]] == list(table["result"])
    assert [row["drifts"] for row in doc["table"]] == list(table["drifts"])
    assert doc["table"][0]["line"] == table["line"].iloc[0] and isinstance(doc["table"][0]["line"], int)
    assert doc["summary"].startswith(f"{d.stage!r} drifts from 'stablehlo' at %0 = stablehlo.dot_general")

    r = command("drift", "nanfed.py:fn", "--no-nan", "--rows", "1", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert out.startswith(f"# {d.stage!r} drifts from 'stablehlo' at %0 = stablehlo.dot_general")
    assert f"\nyour line  {d.line}  (where the values first go wrong)\n" in out
    assert "\nerror      inf over a tolerance of " in out and "\ncause      enzyme-hlo-patterns#" in out
    assert "\ninput 0  argument 0 of @main  /  " in out and "differs (inf)" in out
    assert f"# {len(table)} values compared, {int(table.drifts.sum())} drift" in out
    assert out.rstrip().endswith(f"... {len(table) - 1} more (--rows N shows more)")


@pytest.mark.subprocess
def test_drift_of_a_corpus_program_whose_rounding_moves_is_none_and_exits_0(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "donated_step", "sgd.py")
    saved = tmp_path / "sgd.hlox"
    r = command("drift", "sgd.py:fn", "--json", "--save", saved, cwd=tmp_path)
    doc = document(r, 0)
    inst = program("donated_step").build()
    d = wb.explore(inst.fn, *inst.args).drift()
    assert not d.found and doc["found"] is False and doc["op"] is None and doc["line"] == ""
    assert (doc["stage"], doc["compared"], doc["ops"], doc["rule"]) == (d.stage, d.compared, d.ops, d.rule)
    assert doc["summary"].split(" (")[0] == d.summary().split(" (")[0]
    assert doc["summary"].startswith(f"no drift: the {d.compared} values of {d.stage!r}")
    assert len(doc["table"]) == len(d.table()) and not any(row["drifts"] for row in doc["table"])
    assert saved.is_file()

    r = command("drift", saved, cwd=tmp_path)  # the saved exploration, searched again
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"# no drift: the {d.compared} values of {d.stage!r}")


@pytest.mark.subprocess
def test_drift_of_a_stage_that_is_not_there_exits_2_saying_which_there_are(tmp_path):
    user_module(tmp_path, "nanfed", NAN_FED)
    r = command("drift", "nanfed.py:fn", "--stage", "enzyme-hlo-patterns#9", "--json", cwd=tmp_path)
    message = could_not(r, "drift")
    assert message.startswith("unknown stage 'enzyme-hlo-patterns#9'; did you mean ")
    assert json.loads(r.stdout)["error"]["type"] == "UnknownNameError"


# -- bisect ---------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_bisect_names_the_no_nan_pattern_that_miscompiles_and_exits_1(tmp_path):
    user = user_module(tmp_path, "nanfed", NAN_FED)
    r = command("bisect", "nanfed.py:fn", "--no-nan", "--json", cwd=tmp_path, installed=True)
    doc = document(r, 1)
    ex = wb.explore(user.fn, *user.args(), no_nan=True)
    b = ex.bisect(wb.miscompiles())
    assert doc["found"] is True and doc["predicate"] == "miscompiles()" and doc["recipe"]["kind"] == "miscompiles"
    assert doc["patterns"] == b.patterns == ["no_nan_compare_simplify"] and doc["xla_passes"] == [] == b.xla_passes
    assert doc["over"] == "patterns" and doc["runs"] == b.runs and doc["always_needed"] == []
    assert doc["table"] == b.table().to_dict("records")
    assert doc["diff_ops"] == b.diff.ops_delta().to_dict("records")
    assert {row["op"]: row["delta"] for row in doc["diff_ops"]}["stablehlo.select"] == -1  # the where, folded
    assert doc["summary"].startswith("miscompiles() holds with no_nan_compare_simplify alone of the patterns enabled")

    # the op where the values first drift, as the predicate: the same pattern makes it drift
    r = command("bisect", "nanfed.py:fn", "--no-nan", "--drifts", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    d = ex.drift()
    assert ex.bisect(wb.drifts_at(d)).patterns == b.patterns
    assert r.stderr.startswith(f"# {d.summary().split(' (')[0]}")  # what it pinned, said on stderr
    assert r.stdout.startswith(f"# drifts_at('stablehlo.dot_general at {tmp_path}/nanfed.py:6') holds with "
                               "no_nan_compare_simplify alone of the patterns enabled")


@pytest.mark.subprocess
def test_bisect_over_patterns_and_xla_passes_of_a_corpus_step_prints_the_culprit_and_its_table(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "donated_step", "sgd.py")
    r = command("bisect", "sgd.py:fn", "--lacks-op", "stablehlo.transpose", "--over", "all", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    inst = program("donated_step").build()
    b = wb.explore(inst.fn, *inst.args).bisect(wb.lacks_op("stablehlo.transpose"), over="all")
    assert b.patterns == ["transpose_dot_reorder"] and b.xla_passes == []
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"# lacks_op('stablehlo.transpose') holds with transpose_dot_reorder alone of the "
                               f"patterns and XLA passes enabled, and no longer without any one of them ({b.runs} "
                               "runs, ")  # XLA's compiles: fewer where this process compiled the module before
    assert lines[0].endswith(" XLA compiles)")
    assert lines[2].split() == ["kind", "name", "changes"]
    assert lines[3].split() == ["pattern", "transpose_dot_reorder", "stablehlo.transpose", "-1"]
    assert "# Op counts of the last MLIR stage: without the culprits (before), with them (after)" in r.stdout


@pytest.mark.subprocess
def test_bisect_where_the_predicate_does_not_hold_exits_0_and_a_bad_option_exits_2(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "dot_product_attention", "attention.py")
    r = command("bisect", "attention.py:fn", "--lacks-op", "stablehlo.transpose", "--json", cwd=tmp_path)
    doc = document(r, 0)
    inst = program("dot_product_attention").build()
    with pytest.raises(NothingToSearchError) as e:  # a transpose stays with every pattern enabled
        wb.explore(inst.fn, *inst.args).bisect(wb.lacks_op("stablehlo.transpose"))
    assert doc["found"] is False and doc["summary"] == str(e.value)
    assert doc["patterns"] == [] and doc["table"] == [] and doc["runs"] is None
    assert doc["predicate"] == "lacks_op('stablehlo.transpose')"

    r = command("bisect", "attention.py:fn", "--has-op", "stablehlo.transpose", "--op-stage", "nowhere", "--json",
                 cwd=tmp_path)
    assert could_not(r, "bisect").startswith("unknown stage 'nowhere': the stages are jaxpr, stablehlo, ")
    r = command("bisect", "attention.py:fn", "--op-count-above", "stablehlo.transpose", "many", "--json",
                 cwd=tmp_path)  # refused before anything is explored
    assert could_not(r, "bisect") == ("--op-count-above stablehlo.transpose many: N is a whole number of ops, e.g. "
                                       "--op-count-above stablehlo.transpose 0")


# -- reduce ---------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_reduce_shrinks_a_corpus_step_to_its_dot_as_ex_reduce_does_and_exits_1(tmp_path):
    from tests.corpus import program

    corpus_target(tmp_path, "donated_step", "sgd.py")
    r = command("reduce", "sgd.py:fn", "--has-op", "stablehlo.dot_general", "-o", "small.mlir", "--json",
                 cwd=tmp_path, installed=True)
    doc = document(r, 1)
    inst = program("donated_step").build()
    reduced = wb.explore(inst.fn, *inst.args).reduce(wb.has_op("stablehlo.dot_general"))
    assert doc["found"] is True and doc["predicate"] == "has_op('stablehlo.dot_general')"
    assert doc["recipe"] == {"kind": "has_op", "name": "stablehlo.dot_general", "stage": None}
    assert (doc["stage"], doc["ops_before"], doc["ops_after"], doc["runs"]) == (
        "stablehlo", reduced.ops_before, reduced.ops_after, reduced.runs)
    assert doc["ops_after"] == 1 < doc["ops_before"] and doc["interrupted"] is False
    assert doc["module"] == reduced.text and "stablehlo.dot_general" in doc["module"]
    assert doc["output"] == "small.mlir" and (tmp_path / "small.mlir").read_text() == reduced.text.rstrip() + "\n"

    r = command("reduce", "sgd.py:fn", "--has-op", "stablehlo.dot_general", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    head, _, module = r.stdout.partition("\n\n")
    assert head == (f"# has_op('stablehlo.dot_general') holds on a module of 1 op, reduced from {reduced.ops_before} "
                    f"ops of 'stablehlo' ({reduced.runs} runs, {reduced.skipped} candidates that did not verify "
                    "skipped)")
    assert module.rstrip() == reduced.text.rstrip()


@pytest.mark.subprocess
def test_reduce_of_a_program_with_complex_values_zeroes_them_and_keeps_its_fft(tmp_path):
    """The corpus's spectral solver: complex constants and an FFT in a loop. Zeroing a complex value used to raise
    inside jaxlib's bindings (a complex dense attribute cannot be handed to Python): the command died as a bug."""
    from tests.corpus import program

    corpus_target(tmp_path, "spectral_burgers", "spectral.py")
    doc = document(command("reduce", "spectral.py:fn", "--has-op", "stablehlo.fft", "--json", cwd=tmp_path), 1)
    inst = program("spectral_burgers").build()
    reduced = wb.explore(inst.fn, *inst.args).reduce(wb.has_op("stablehlo.fft"))
    assert (doc["ops_before"], doc["ops_after"]) == (reduced.ops_before, reduced.ops_after)
    assert doc["ops_after"] < doc["ops_before"] and "stablehlo.fft" in doc["module"] and "complex" in doc["module"]


@pytest.mark.subprocess
def test_reduce_where_the_predicate_does_not_hold_on_the_start_module_exits_0_and_a_jaxpr_exits_2(tmp_path):
    """The planted miscompile needs its NaN: the start module, explored as text, runs on seeded random inputs,
    which have none, so it does not miscompile there (the API says so in the same words)."""
    user = user_module(tmp_path, "nanfed", NAN_FED)
    r = command("reduce", "nanfed.py:fn", "--no-nan", "--json", cwd=tmp_path)
    doc = document(r, 0)
    with pytest.raises(NothingToSearchError) as e:
        wb.explore(user.fn, *user.args(), no_nan=True).reduce(wb.miscompiles())
    assert doc["found"] is False and doc["summary"] == str(e.value) and "nothing to reduce" in doc["summary"]
    assert doc["module"] is None and doc["ops_after"] is None and doc["predicate"] == "miscompiles()"

    r = command("reduce", "nanfed.py:fn", "--stage", "jaxpr", "--json", cwd=tmp_path)
    assert could_not(r, "reduce").startswith("stage 'jaxpr' is a jaxpr, not an MLIR module: reduce works on the "
                                              "MLIR modules stablehlo, ")
