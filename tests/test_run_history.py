"""The session's runs across toggles: an Exploration made from another by a toggle carries the runs made
so far (``ex.history``), each knowing the program it ran (stage, text hash, settings); a run is stale
for an exploration whose program differs from it, and the report, the saved file and the panel's Run
tab say so."""
import json
import re
import zipfile

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.run.history import RunProgram, program_of, why_stale
from workbench.views.widgets import Panel

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def transposes(x, y):  # three transposes that dot_transpose (among others) removes
    return jnp.dot(x.T, y.T).T


def model_of(report: str) -> dict:
    """The view model a report holds (what its view draws)."""
    return json.loads(re.search(r'<script type="application/json" id="wb-model">(.*?)</script>', report).group(1))


@pytest.fixture(scope="module")
def base():
    """An exploration no test runs: each test starts from ``base.with_patterns()``, its own Exploration of
    the same program with no runs yet (every step a cache hit)."""
    return wb.explore(transposes, jnp.ones((8, 16)), jnp.ones((4, 8)))


def session(base):
    """A pattern toggle that changes the final module, an XLA pass toggle, a run before each: the
    three explorations and their runs."""
    ex = base.with_patterns()
    first = ex.run(repeat=2)
    off = ex.with_patterns(disable=["dot_transpose"])
    last = ex.default_run_stage().name
    assert off[last].text != ex[last].text  # the toggle changes the program run
    second = off.run(repeat=2)
    xla = off.with_xla(disable=["algsimp"])
    third = xla.run(repeat=2)
    return (ex, off, xla), (first, second, third)


@pytest.mark.slow  # over 2 s: three runs, two toggles, an XLA compile
def test_a_toggle_carries_the_runs_each_with_its_program(base):
    (ex, off, xla), (first, second, third) = session(base)
    assert ex.runs == ex.history == [first]
    assert off.runs == [second] and off.history == [first, second]
    assert xla.runs == [third] and xla.history == [first, second, third]
    last = ex.default_run_stage()
    assert first.program == RunProgram(last.name, first.program.text_sha256, "all")
    assert first.program == program_of(ex.spec, last) and first.program.settings == "pipeline all"
    assert second.program.patterns_off == ("dot_transpose",) and second.program.text_sha256 != first.program.text_sha256
    assert second.program.settings == "pipeline all; patterns off: dot_transpose"
    assert third.program.xla_off == ("algsimp",) and third.program.text_sha256 == second.program.text_sha256
    assert third.program.settings == "pipeline all; patterns off: dot_transpose; XLA off: algsimp"
    # what was derived before a run does not get it: the history is what the exploration was made from
    assert base.history == [] and ex.with_patterns().history == [first]


def test_a_run_is_stale_where_its_program_changed(base):
    (ex, off, xla), (first, second, third) = session(base)
    assert not first.stale_for(ex) and first.why_stale(ex) == ""
    assert first.stale_for(off) and first.stale_for(xla)
    assert first.why_stale(off) == f"stage {first.stage!r} holds another program than the one this run ran"
    assert not second.stale_for(off) and second.stale_for(xla) and second.stale_for(ex)
    assert second.why_stale(xla) == ("XLA compiles it with other options (XLA off: algsimp; the run had XLA's "
                                     "defaults)")
    assert not third.stale_for(xla) and third.stale_for(off)
    # switching the XLA pass back on gives back the program the second run ran
    assert not second.stale_for(xla.with_xla(enable=["algsimp"]))
    # a toggle that leaves the program as it was leaves the run current
    same = ex.with_patterns(disable=["while_simplify"])
    assert same[first.stage].text == ex[first.stage].text and not first.stale_for(same)
    # a stage that is gone
    other = ex.with_pipeline("canonicalize,cse")
    assert first.stage not in other.names
    assert first.why_stale(other) == f"stage {first.stage!r} is not in this exploration (pipeline 'canonicalize,cse')"
    assert why_stale(first.program, ex) == ""


@pytest.mark.slow  # over 2 s: three runs, two toggles, an XLA compile
def test_the_report_lists_the_sessions_runs_with_settings_and_stale_marks(base, tmp_path):
    (ex, off, xla), (first, second, third) = session(base)
    runs = model_of(xla.report(tmp_path / "r.html").read_text())["runs"]
    # the runs the report's view draws (the view model's: each with the program it ran, and why it is stale)
    assert [(bool(r["stale"]), r["stage"], r["settings"]) for r in runs] == [
        (True, first.stage, "pipeline all"), (True, second.stage, "pipeline all; patterns off: dot_transpose"),
        (False, third.stage, "pipeline all; patterns off: dot_transpose; XLA off: algsimp")]
    stale = " ".join(r["stale"] for r in runs)
    assert stale.count("holds another program than the one this run ran") == 1
    assert stale.count("XLA compiles it with other options") == 1
    # the first exploration's own report: its one run, current
    own = model_of(ex.report(tmp_path / "own.html").read_text())["runs"]
    assert [r["stale"] for r in own] == [""]


def test_the_saved_file_keeps_the_sessions_runs_typed(base, tmp_path):
    (ex, off, xla), (first, second, third) = session(base)
    path = xla.save(tmp_path / "s.hlox", arrays=True, cost=False)
    back = wb.load(path)
    assert [r.stage for r in back.runs] == [third.stage] and len(back.history) == 3
    for was, got in zip(xla.history, back.history):
        assert got.program == was.program and got.timing == was.timing and got.check == was.check
        assert got.why_stale(back) == was.why_stale(xla)
    assert [r.stale_for(back) for r in back.history] == [True, True, False]
    # a run made on the loaded exploration joins them; a toggle of it carries all four
    fourth = back.run(repeat=1)
    assert fourth.program == third.program and back.history[-1] is fourth
    again = back.with_xla(enable=["algsimp"])
    assert again.history == back.history and len(again.history) == 4
    assert [r.stale_for(again) for r in again.history] == [True, False, True, True]


def test_a_run_of_a_stage_gone_is_saved_and_loaded(base, tmp_path):
    ex = base.with_patterns()
    first = ex.run(repeat=1)
    other = ex.with_pipeline("canonicalize")
    assert first.stage not in other.names
    back = wb.load(other.save(tmp_path / "gone.hlox", cost=False))
    assert back.runs == [] and [r.program for r in back.history] == [first.program]
    gone = f"stage {first.stage!r} is not in this exploration (pipeline 'canonicalize')"
    assert back.history[0].why_stale(back) == gone


def test_a_file_whose_runs_predate_their_programs_loads_them_with_the_stages_as_saved(base, tmp_path):
    """A .hlox written before runs recorded their program: each run ran the file's stage of its name."""
    ex = base.with_xla(disable=["algsimp"])
    run = ex.run(repeat=1)
    path = ex.save(tmp_path / "new.hlox", cost=False)
    old = tmp_path / "old.hlox"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "manifest.json":
                text = data.decode()
                assert '"program":{' in text and '"earlier"' not in text
                data = re.sub(r',"program":\{[^{}]*\}', "", text).encode()
                assert b'"program"' not in data
            dst.writestr(info, data)
    back = wb.load(old)
    assert back.runs[0].program == run.program and not back.runs[0].stale_for(back)
    assert back.runs[0].stale_for(back.with_xla(enable=["algsimp"]))


def test_the_run_tab_marks_a_result_stale_after_a_toggle_and_lists_the_runs(base):
    ex = base.with_patterns()
    p = Panel(ex, background=False)
    try:
        p.run(stage=ex.default_run_stage().name, device="cpu:0", repeat=2)
        assert p.last_error is None, p.last_error
        runs = lambda: p.core.model["runs"]  # noqa: E731 -- the Run tab's: the session's runs, the view model's
        (run,) = runs()
        assert run["check"]["passed"] and run["stale"] == ""
        p.toggle_xla(["algsimp"], False)
        assert p.ex.spec.xla_disabled == ("algsimp",)
        (run,) = runs()  # drawn stale, with why
        assert run["check"]["passed"] and "XLA compiles it with other options (XLA off: algsimp" in run["stale"]
        p.toggle_xla(["algsimp"], True)  # back: the run is current again
        assert runs()[0]["stale"] == "" and runs()[0]["check"]["passed"]
        p.toggle_patterns(["dot_transpose"], False)
        assert "holds another program" in runs()[0]["stale"]
        p.run()
        assert len(runs()) == 2 and runs()[-1]["stale"] == "" and runs()[0]["stale"]
        p.compare(["stablehlo", p.ex.default_run_stage().name])  # each stage compared is a run of the session
        assert len(runs()) == 4
    finally:
        p.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["debug_print_loop", "eqx_filter_jit"])
def test_corpus_programs_keep_their_runs_across_toggles(name, tmp_path, capfd):
    from tests.corpus import program

    inst = program(name).build()
    ex = wb.explore(inst.fn, *inst.args)
    first = ex.run(repeat=1)
    assert first.check.passed
    xla = ex.with_xla(disable=["algsimp"])
    second = xla.run(repeat=1)
    assert second.check.passed and xla.history == [first, second]
    assert first.stale_for(xla) and not second.stale_for(xla) and not first.stale_for(ex)
    assert jax.tree_util.tree_structure(first.outputs) == jax.tree_util.tree_structure(second.outputs)
    back = wb.load(xla.save(tmp_path / f"{name}.hlox", cost=False))
    assert [r.stale_for(back) for r in back.history] == [True, False]
    runs = model_of(xla.report(tmp_path / f"{name}.html").read_text())["runs"]
    assert len(runs) == 2 and "XLA off: algsimp" in runs[-1]["settings"]
    if name == "debug_print_loop":
        assert "power iteration 0: estimate" in capfd.readouterr().out  # both runs printed
