"""The TPU's kernels compared and kept (issue 48, "Compare at the bundle level"), on a CPU with the LLO dumps recorded
on a TPU v5e (tests/fixtures/tpu/llo: a bf16 MLP and attention, a Flax NNX transformer step).

Known answers: a .hlox saved after ex.backend() keeps the kernel table and gives it back equal, on a machine without
the TPU, with no LLO text in the file; a damaged or newer table costs only itself; two programs' kernels compare
fusion by fusion with the totals the dumps' own bundles files give; a program compared with itself changed nothing;
a comparison never compiles for the LLO on a CPU; the bundles limit holds a program to its golden's table, and says
when it could not be checked.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench.analysis.backend import NoLloError, SavedKernels
from workbench.analysis.diff.gates import Limits, judge
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.exploration.golden import check_golden
from workbench.ir.llo import read_bundles
from workbench.pipeline.llo import llo_folder_index

from tests.tpu_recordings import LLO, RECORDED, extract_llo


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("llo")
    return {name: extract_llo(name, root) for name in RECORDED}


def _plain(name: str, into: Path) -> Path:
    """A copy of the recorded ``.hlox`` without its kernel table: what a file saved before ``ex.backend()`` holds
    (the recordings were saved after it)."""
    path = into / f"{name}_plain.hlox"
    with zipfile.ZipFile(LLO / f"{name}.hlox") as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                manifest.pop("backend", None)
                data = json.dumps(manifest).encode()
            dst.writestr(info, data)
    return path


def _with_dump(name: str, dumps) -> wb.Exploration:
    """The recorded exploration, its kernels read from its recorded dump."""
    ex = wb.load(str(LLO / f"{name}.hlox"))
    ex.backend(dump=str(dumps[name]))
    return ex


@pytest.fixture(scope="module")
def saved_nnx(dumps, tmp_path_factory) -> tuple[wb.Exploration, Path]:
    """The NNX step with its recorded kernels, and the .hlox it saves them in."""
    ex = _with_dump("nnx_transformer", dumps)
    path = tmp_path_factory.mktemp("saved") / "nnx_kernels.hlox"
    ex.save(path, cost=False)
    return ex, path


# -- kept in a .hlox ----------------------------------------------------------------------------------------
def test_a_saved_exploration_keeps_the_kernel_table_and_gives_it_back_on_a_cpu(saved_nnx, tmp_path):
    ex, path = saved_nnx
    kernels = ex.backend()
    loaded = wb.load(path)
    back = loaded.backend()  # this machine has no TPU: the table the file kept, no compile
    assert isinstance(back, SavedKernels) and back.available and back.why == ""
    pd.testing.assert_frame_equal(back.table(), kernels.table())
    assert (back.device_kind, back.clock_hz, back.hbm_bytes_per_s) == (kernels.device_kind, kernels.clock_hz,
                                                                       kernels.hbm_bytes_per_s)
    first = kernels.table().iloc[0]
    assert back.row(first["fusion"]) == kernels.row(first["fusion"])
    # the table, not the dump: none of the LLO's text, a few KB where the dump is hundreds
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("manifest.json"))
    kept = manifest["backend"]
    assert kept["format"] == 1 and len(kept["table"]["rows"]) == len(kernels.table())
    text = json.dumps(kept)
    assert "vmatpush" not in text and "vld" not in text and "final_bundles" not in text
    assert len(text) < kernels.index.total_bytes / 20
    # saved without kernels, the file has no table, and backend() says why there is none on this machine
    plain = wb.load(_plain("nnx_transformer", tmp_path))
    plain.save(tmp_path / "plain.hlox", cost=False)
    with zipfile.ZipFile(tmp_path / "plain.hlox") as z:
        assert "backend" not in json.loads(z.read("manifest.json"))
    none = wb.load(tmp_path / "plain.hlox").backend()
    assert not none.available and "tpu:0" in none.why and "does not have" in none.why


def test_a_saved_table_has_no_llo_and_says_where_the_llo_is(saved_nnx):
    ex, path = saved_nnx
    loaded = wb.load(path)
    kernels = loaded.backend()
    fusion = kernels.table()["fusion"].iloc[0]
    with pytest.raises(NoLloError, match="keeps the kernel table .* not the LLO.*ex.backend\\(dump=folder\\)"):
        kernels.kernel(fusion)
    with pytest.raises(NoLloError):
        loaded.backend(fusion=fusion)
    with pytest.raises(UnknownNameError):
        kernels.kernel("no_such_fusion")
    llo_stage = ex.backend().kernel(fusion).stages()[-1].name  # a stage the dump has
    with pytest.raises(NoLloError):
        loaded[llo_stage]
    # the user's line each fusion came from is kept: a line selects the fusions it is the first line of
    line = kernels.table()["line"].iloc[0].rsplit("/", 1)[1]
    chosen = kernels.for_line(line)
    assert fusion in chosen and set(chosen) <= set(ex.backend().for_line(line))


def test_a_loaded_file_saved_again_keeps_its_table(saved_nnx, tmp_path, cli):
    ex, path = saved_nnx
    again = tmp_path / "again.hlox"
    wb.load(path).save(again, cost=False)  # backend() never called on it
    pd.testing.assert_frame_equal(wb.load(again).backend().table(), ex.backend().table())
    r = cli("diff", path, again)  # two files' kept tables, compared on the command line
    t = ex.backend().table()
    assert r.returncode == 0 and f"kernels unchanged ({len(t)} fusions," in r.stdout


def _rewritten(src: Path, dst: Path, change) -> Path:
    """A copy of ``src`` whose manifest's ``backend`` is ``change(backend)`` (the zip's other members as they were)."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["backend"] = change(manifest["backend"])
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return dst


def _bad_cell(b):
    b["table"]["rows"][0][b["table"]["columns"].index("bundles")] = "many"
    return b


@pytest.mark.parametrize("change, words", [
    (_bad_cell, "corrupt: backend.table.rows[0].bundles: expected a count"),
    (lambda b: "a table", "corrupt: backend: expected an object"),
    (lambda b: {**b, "table": {"columns": ["fusion"], "rows": []}}, "backend.table.columns: lacks kernel"),
    (lambda b: {**b, "format": 2, "table": "something new"}, "its format is 2, this hlo-workbench reads 1"),
], ids=["cell", "not-an-object", "columns", "newer"])
def test_a_damaged_or_newer_table_costs_only_itself(saved_nnx, tmp_path, change, words):
    ex, path = saved_nnx
    bad = _rewritten(path, tmp_path / "bad.hlox", change)
    loaded = wb.load(bad)  # loads: the stages, runs and everything else as they were
    good = wb.load(path)
    assert [s.name for s in loaded.stages] == [s.name for s in good.stages]
    assert loaded["xla:optimized"].text == good["xla:optimized"].text
    kernels = loaded.backend()
    assert not kernels.available and words in kernels.why and "bad.hlox" in kernels.why
    assert "the rest of the file loaded" in kernels.why
    with pytest.raises(UnknownNameError, match="cannot be read"):
        kernels.kernel("fusion.3")


# -- compared ------------------------------------------------------------------------------------------------
def test_a_program_compared_with_its_saved_self_changed_no_kernel(saved_nnx):
    ex, path = saved_nnx
    c = wb.compare_explorations(ex, wb.load(path))
    table = c.kernels()
    assert len(table) == len(ex.backend().table())
    assert (table["bundles_before"] == table["bundles_after"]).all()
    assert (table["mxu_before"] == table["mxu_after"]).all()
    t = c.kernels_change.totals[0]
    assert f"kernels unchanged ({t.fusions} fusions, {t.bundles:,} bundles)" in str(c)


def test_two_programs_kernels_compare_fusion_by_fusion(dumps):
    mlp, att = _with_dump("mlp_bf16", dumps), _with_dump("attention_bf16", dumps)
    c = wb.compare_explorations(mlp, att)
    change = c.kernels_change
    # the totals, against the dumps' own final bundles files: each kernel's bundles once
    for side, name in ((0, "mlp_bf16"), (1, "attention_bf16")):
        index = llo_folder_index(str(dumps[name]))
        counted = sum(len(read_bundles((dumps[name] / index.find(k, "final_bundles").name).read_text()).bundles)
                      for k in index.kernels if index.find(k, "final_bundles"))
        assert change.totals[side].bundles == counted
    # fusions both programs have, by name: their rows before and after
    a, b = mlp.backend().table().set_index("fusion"), att.backend().table().set_index("fusion")
    both = [f for f in a.index if f in b.index and a.loc[f, "bundles"] != b.loc[f, "bundles"]]
    assert both, "the two programs share fusion names whose kernels differ"
    biggest = max(both, key=lambda f: abs(int(b.loc[f, "bundles"]) - int(a.loc[f, "bundles"])))
    ba, bb = int(a.loc[biggest, "bundles"]), int(b.loc[biggest, "bundles"])
    phrase = f"bundles {ba:,} → {bb:,} ({(bb / ba - 1) * 100:+.1f}%) in {biggest}"
    mxu = f"MXU {a.loc[biggest, 'MXU']:.0%} → {b.loc[biggest, 'MXU']:.0%}"
    assert phrase in change.words() and mxu in change.words().split(phrase)[1].split(";")[0]
    assert change.words() in str(c)
    only_mlp = [f for f in a.index if f not in b.index]
    table = c.kernels().set_index("fusion")
    assert table.loc[only_mlp, "bundles_after"].isna().all()  # a fusion the other program lacks: gone
    pd.testing.assert_frame_equal(c.kernels(), mlp.backend().compare(att.backend()))


def test_a_toggles_change_summary_names_the_kernels_that_changed(dumps):
    mlp, att = _with_dump("mlp_bf16", dumps), _with_dump("attention_bf16", dumps)
    changes = att.changes_since(mlp)
    words = changes.kernels_change.words()
    assert words.startswith("kernels: bundles ") and words in changes.summary
    pd.testing.assert_frame_equal(changes.kernels(), mlp.backend().compare(att.backend()))


def test_a_comparison_on_a_cpu_never_compiles_for_the_llo(dumps, tmp_path):
    before = _with_dump("mlp_bf16", dumps)
    after = wb.load(_plain("mlp_bf16", tmp_path))  # a tpu:0 program on a CPU, no kernels computed or saved
    changes = after.changes_since(before)  # with wait: XLA's stages are read, no LLO compile is started
    assert after._kernels is None and changes.kernels_change is None
    assert "kernels" not in changes.summary
    with pytest.raises(WorkbenchError, match="after has no kernels computed or saved"):
        changes.kernels()
    c = wb.compare_explorations(before, after, labels=("with", "without"))
    assert "kernels: not compared (without has no kernels computed or saved" in str(c)
    assert after._kernels is None
    neither = wb.compare_explorations(wb.load(_plain("mlp_bf16", tmp_path)), after)
    assert "kernels" not in str(neither)
    with pytest.raises(WorkbenchError, match="neither side has the TPU's kernels"):
        neither.kernels()


# -- the golden's limit ----------------------------------------------------------------------------------------
def test_the_bundles_limit_holds_a_program_to_its_goldens_table(dumps, saved_nnx, tmp_path):
    mlp = _with_dump("mlp_bf16", dumps)
    golden = tmp_path / "mlp_golden.hlox"
    mlp.save(golden, cost=False)
    att = _with_dump("attention_bf16", dumps)
    limits = Limits.of(max_bundles_growth="5%", max_ops_growth=None, max_flops_growth=None, max_bytes_growth=None,
                       max_memory_growth=None)
    # another program saved as the golden's "now": every fusion's loop trips are known, so bundles issued
    verdict = judge(wb.compare_explorations(wb.load(golden), att), limits)
    row = verdict.rows[-1]
    ta, tb = (int(mlp.backend().table()["issued"].sum()), int(att.backend().table()["issued"].sum()))
    assert (row.what, row.golden, row.now, row.ok) == ("bundles issued", ta, tb, False)
    assert row.change == f"{(tb / ta - 1) * 100:+.1f}%" and not verdict.ok
    assert judge(wb.compare_explorations(wb.load(golden), att), Limits.of(max_bundles_growth="1000%")).rows[-1].ok
    # the NNX step against its saved table: no growth; a loop's trip count is unknown there, so bundles
    ex, path = saved_nnx
    assert ex.backend().table()["issued"].isna().any()
    same = judge(wb.compare_explorations(wb.load(path), ex), Limits.of(max_bundles_growth=0))
    assert same.ok and same.rows[-1].what == "bundles" and same.rows[-1].change == "0%"
    assert "not the bundles issued" in same.rows[-1].note
    assert not any(r.what.startswith("bundles") for r in judge(wb.compare_explorations(ex, ex), Limits()).rows)


def test_check_golden_says_when_the_bundles_limit_could_not_be_checked(dumps, tmp_path, cli):
    golden = tmp_path / "mlp_golden.hlox"
    _with_dump("mlp_bf16", dumps).save(golden, cost=False)
    verdict = check_golden(golden, device="cpu", max_bundles_growth="5%")  # explored now on this CPU: no kernels
    row = verdict.rows[-1]
    assert (row.what, row.change, row.ok) == ("bundles", "not checked", False)
    assert "could not be checked: now has no kernels" in row.note and "cpu" in row.note
    r = cli("check", golden, "--device", "cpu", "--max-bundles-growth", "5%")
    assert r.returncode == 1 and "bundles" in r.stdout and "not checked" in r.stdout
    assert "the limit could not be checked" in r.stdout
    r = cli("check", golden, "--device", "cpu", "--max-bundles-growth", "five")
    assert r.returncode != 0 and "max_bundles_growth" in r.stderr


def test_a_golden_without_kernels_says_so_too(tmp_path):
    golden = tmp_path / "plain.hlox"
    wb.load(_plain("mlp_bf16", tmp_path)).save(golden, cost=False)
    row = check_golden(golden, device="cpu", max_bundles_growth="5%").rows[-1]
    assert not row.ok and "could not be checked: neither plain.hlox nor now has the TPU's kernels" in row.note


def test_the_panels_backend_tab_shows_a_saved_table_on_a_cpu_and_says_it_has_no_llo(saved_nnx):
    pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")
    from workbench.views.widgets import Panel
    from workbench.views.widgets.backendtab import TITLE

    ex, path = saved_nnx
    p = Panel(wb.load(path), background=False)
    try:
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
        p.wait()
        shown = p.backend.view.data["backend"]
        table = ex.backend().table()
        assert [r["fusion"] for r in shown["rows"]][:5] and len(shown["rows"]) == len(table)
        kernels = table["kernel"].nunique()
        assert f"{kernels} kernels for {len(table)} instructions" in shown["summary"]
        assert "from the table saved in nnx_kernels.hlox (no LLO)" in shown["summary"]
        p.backend.open(table["fusion"].iloc[0])
        p.wait()
        assert "keeps the kernel table" in p.backend.view.data["kernel"]["error"]
    finally:
        p.close()
