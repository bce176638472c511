"""The panel's Backend tab, Python's side, on the recorded TPU v5e dump of the corpus's Flax NNX transformer step
(tests/fixtures/tpu/llo: the saved exploration and libtpu's LLO dump, read with ``ex.backend(dump=...)``):

* the tab is there where the Exploration's kernels were read and lists every fusion as ``Kernels.table()`` has it,
  the longest first;
* a fusion clicked opens its kernel: its first bundles with each unit's slots as ``Kernel.bundle_table()`` has them,
  capped and counted, its lines and its LLO passes; a pass clicked is diffed against the pass before it that
  changed the kernel, in the tab's own diff view;
* a line of the user's selected in the Source tab chooses the fusions ``Kernels.for_line`` gives; a kernel's line
  clicked selects it in the Source tab;
* a saved notebook and the report keep the table (no LLO text);
* on a CPU there is no Backend tab, and where ``ex.backend()`` was asked there, the tab says why in words."""
import json

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.artifacts.viewmodel import BACKEND_ROWS, MIME, validate_view
from workbench.views.widgets import Panel
from workbench.views.widgets.backendtab import BUNDLES_SHOWN, TITLE

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

from tests.tpu_recordings import LLO, extract_llo


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> str:
    return str(extract_llo("nnx_transformer", tmp_path_factory.mktemp("llo")))


@pytest.fixture
def nnx(dump):
    """A panel of the recorded NNX step whose kernels were read, its Kernels, and the same Kernels read apart."""
    ex = wb.load(str(LLO / "nnx_transformer.hlox"))
    kernels = ex.backend(dump=dump)
    p = Panel(ex, background=False)
    try:
        yield p, kernels
    finally:
        p.close()


def open_backend(p: Panel) -> dict:
    p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
    p.wait()
    return p.backend.view.data


def test_the_tab_lists_every_fusion_with_its_bundles_and_mxu_occupancy(nnx):
    p, kernels = nnx
    assert p.tabs.titles[-1] == TITLE
    assert p.backend.view.data == {}  # nothing read until the tab is opened
    data = open_backend(p)
    assert p.last_error is None and data["python"] == "ex.backend()" and p.python == "ex.backend()"
    rows = data["backend"]["rows"]
    table = kernels.table().set_index("fusion")
    assert len(rows) == len(table) >= 60 and data["backend"]["more"] == 0
    for r in rows:
        t = table.loc[r["fusion"]]
        assert (r["kernel"], r["bundles"], r["bound"]) == (t["kernel"], t["bundles"], t["bound"])
        assert r["occupancy"]["MXU"] == pytest.approx(t["MXU"])
        others = {u: t[u] for u in ("XLU", "VALU", "VPOP", "EUP", "VLOAD", "VSTORE", "SALU")}
        assert r["occupancy"][r["busiest"]] == pytest.approx(max(others.values()))
        assert r["at"] == {"file": r["line"].rsplit(":", 1)[0], "line": int(r["line"].rsplit(":", 1)[1])}
    # the recording kept the times measured on the v5e (ex.profile() before ex.backend()): every fusion's, in us,
    # the longest first
    timed = [r["time"] for r in rows if r["unit"]]
    assert {r["unit"] for r in rows} == {"µs"} and len(timed) == len(rows)
    assert timed == sorted(timed, reverse=True)
    assert all(r["time"] == pytest.approx(table.loc[r["fusion"], "measured_us"]) for r in rows)
    assert "55 kernels for 66 instructions" in data["backend"]["summary"]


def test_a_fusion_clicked_opens_its_bundles_lines_and_passes(nnx):
    p, kernels = nnx
    open_backend(p)
    table = kernels.table()
    longest = table.loc[table["bundles"].idxmax()]
    assert longest["bundles"] > BUNDLES_SHOWN  # the cap is met: the first bundles listed, the rest counted
    p.backend.view._heard(None, {"action": "fusion", "payload": {"fusion": longest["fusion"]}}, [])
    p.wait()
    k = p.backend.view.data["kernel"]
    assert p.last_error is None and p.backend.view.data["opened"] == longest["fusion"]
    assert len(k["rows"]) == BUNDLES_SHOWN and k["more"] == longest["bundles"] - BUNDLES_SHOWN
    bundles = kernels.kernel(longest["fusion"]).bundle_table()
    assert [r[0] for r in k["rows"]] == list(bundles["address"][:BUNDLES_SHOWN])
    for j, unit in enumerate(k["units"]):  # each unit's slots, bundle by bundle, as libtpu's slot usage has them
        assert [r[3][j] for r in k["rows"]] == list(bundles[unit][:BUNDLES_SHOWN]), unit
    assert "VALU" in k["units"] and set(k["units"]) <= set(k["occupancy"])  # the units these bundles use
    assert all(any(r[3][j] for r in k["rows"]) for j in range(len(k["units"])))

    # the kernel with its passes recorded: a changed pass against the changed pass before it
    name = max(kernels.index.kernels, key=lambda n: len(kernels.index.components[n]))
    fusion = kernels.kernel(name).fusions[0]
    p.backend.view._heard(None, {"action": "fusion", "payload": {"fusion": fusion}}, [])
    p.wait()
    k = p.backend.view.data["kernel"]
    assert [(x["stage"], x["changed"]) for x in k["passes"]] == kernels.kernel(fusion).passes()
    assert k["lines"] and all(x["at"] is not None for x in k["lines"])
    changed = [x["stage"] for x in k["passes"] if x["changed"]]
    p.backend.view._heard(None, {"action": "pass", "payload": {"stage": changed[2]}}, [])
    p.wait()
    shown = p.backend.diff.data["diff"]
    assert p.last_error is None and (shown["left"], shown["right"]) == (changed[1], changed[2])
    assert shown["after"] and p.backend.diff.layout.display == ""
    assert p.python == f'ex.diff(ex.backend().stage("{changed[1]}"), ex.backend().stage("{changed[2]}"))'
    # the diff view's swap and pickers: another pair of the kernel's passes
    p.backend.diff._heard(None, {"action": "swap", "payload": {}}, [])
    p.wait()
    assert (p.backend.diff.data["diff"]["left"], p.backend.diff.data["diff"]["right"]) == (changed[2], changed[1])
    p.backend.diff._heard(None, {"action": "pick", "payload": {"side": "left", "stage": changed[0]}}, [])
    p.wait()
    assert (p.backend.diff.data["diff"]["left"], p.backend.diff.data["diff"]["right"]) == (changed[0], changed[1])
    # the first pass has none before it: its text
    p.backend.view._heard(None, {"action": "pass", "payload": {"stage": changed[0]}}, [])
    p.wait()
    shown = p.backend.diff.data["diff"]
    assert shown["left"] == shown["right"] == changed[0] and shown["before"] == shown["after"]
    assert "its text" in p.backend.diff.data["note"]


def test_a_line_selected_in_the_source_tab_chooses_its_fusions_and_back(nnx):
    p, kernels = nnx
    open_backend(p)
    line = kernels.table()["line"].iloc[0]  # the user's line of the most issued kernel
    file, number = line.rsplit(":", 1)
    assert file.endswith("/tests/corpus/flax_programs.py")  # as the recording's checkout named it
    p.source.select_line(file, int(number))
    p.wait()
    data = p.backend.view.data
    assert p.last_error is None and data["chosen"] == kernels.for_line(line) and len(data["chosen"]) > 1
    assert data["line"] == line
    # a fusion chosen: its kernel lists the line among its own, and a click on it selects it in the Source tab
    p.backend.view._heard(None, {"action": "fusion", "payload": {"fusion": data["chosen"][0]}}, [])
    p.wait()
    lines = p.backend.view.data["kernel"]["lines"]
    assert line in [x["line"] for x in lines]
    other = next(x for x in lines if x["line"] != line)
    p.backend.view._heard(None, {"action": "select_line", "payload": other["at"]}, [])
    p.wait()
    assert p.tabs.titles[p.tabs.selected_index] == "Source"
    assert p.source.selection == ("line", other["at"]["file"], other["at"]["line"])
    assert p.backend.view.data["chosen"] == kernels.for_line(other["line"])  # and the tab follows the Source tab


def test_a_saved_notebook_and_the_report_keep_the_fusions_without_llo_text(nnx, tmp_path):
    p, kernels = nnx
    assert "backend" not in p._shown().bundle()[MIME]  # not read by the tab: not kept
    open_backend(p)
    saved = p._shown().bundle()[MIME]
    validate_view(saved)
    kept = saved["backend"]
    assert len(kept["rows"]) == min(BACKEND_ROWS, len(kernels.table())) and kept["units"]["MXU"]
    assert "vmatmul" not in json.dumps(kept) and "final_bundles" not in json.dumps(kept)  # no LLO text
    assert p._shown().same(p._shown())
    page = tmp_path / "report.html"
    p.ex.report(str(page))
    assert all(r["fusion"] in page.read_text() for r in kept["rows"][:5])


def test_on_a_cpu_there_is_no_backend_tab_and_where_asked_the_tab_says_why():
    ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(8))
    p = Panel(ex, background=False)
    try:
        assert TITLE not in p.tabs.titles
    finally:
        p.close()
    kernels = ex.backend()
    p = Panel(ex, background=False)
    try:
        data = open_backend(p)
        assert data == {"why": kernels.why, "python": "ex.backend()"} and "LLVM IR" in data["why"]
        assert p.last_error is None and "backend" not in p._shown().bundle()[MIME]
    finally:
        p.close()


def test_opening_the_tab_and_a_fusion_reads_that_kernel_only(dump):
    """The dump is read a kernel at a time: opening the tab reads the kernels' summaries (their final bundles and slot
    usage, the top-level program's maps), a fusion clicked only its own kernel's files, and no pass's LLO -- most of a
    dump -- until a pass is clicked."""
    ex = wb.load(str(LLO / "nnx_transformer.hlox"))
    kernels = ex.backend(dump=dump)
    p = Panel(ex, background=False)
    try:
        open_backend(p)
        summaries = ("final_bundles.txt", "final_hlo-static-per-bundle-utilization.txt", "deduplication-map.txt",
                     "hlo-static-bundle-profile.txt", "-TLP-hlo.txt")
        assert kernels.files_read and all(name.endswith(summaries) for name in kernels.files_read)
        opened_tab = len(kernels.files_read)
        name = max(kernels.index.kernels, key=lambda n: len(kernels.index.components[n]))  # one with its passes kept
        fusion = kernels.kernel(name).fusions[0]
        p.backend.view._heard(None, {"action": "fusion", "payload": {"fusion": fusion}}, [])
        p.wait()
        new = kernels.files_read[opened_tab:]
        assert all(f"-{name}-" in f for f in new)  # that kernel's files, nothing of another's
        passes = {f.name for f in kernels.index.components[name] if f.is_pass}
        assert not passes & set(new) or all(f.endswith("final_bundles.txt") for f in passes & set(new))
        pass_bytes = sum(f.size for files in kernels.index.components.values() for f in files
                         if f.is_pass and not f.what.endswith("final_bundles"))
        assert kernels.bytes_read < kernels.index.total_bytes - pass_bytes + 1  # none of the passes' LLO
    finally:
        p.close()
