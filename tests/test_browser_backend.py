"""The panel's Backend tab in a real browser (Debian's chromium, playwright, JupyterLab at 1280 px), on the recorded
TPU v5e dump of the corpus's Flax NNX transformer step: a notebook cell loads tests/fixtures/tpu/llo/
nnx_transformer.hlox, reads libtpu's dump with ``ex.backend(dump=...)`` and shows the panel, as a user on any
machine would. The Backend tab lists every fusion with its MXU occupancy; a line of the step clicked in the Source
tab (the optimizer's update) marks, in the Backend tab, the fusions ``Kernels.for_line`` gives; a fusion clicked
shows its bundles with each unit's slots coloured, a pass clicked its LLO diff, and its line goes back to the
Source tab. Screenshots in test-output/ and /tmp/h/backend-*.png."""
import shutil
from pathlib import Path

import pytest

import workbench as wb
from tests.browser_pages import open_notebook, saved_model_after, saved_view_page, settle, show_panel, tab, write_notebook

pytestmark = pytest.mark.slow
pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

from tests.tpu_recordings import LLO, extract_llo
STEP = Path(__file__).resolve().parent / "corpus" / "flax_programs.py"
UPDATE = next(n for n, t in enumerate(STEP.read_text().splitlines(), 1)
              if t.strip() == "optimizer.update(model, grads)")  # the optimizer's update: Adam's fusions
SHOTS = Path("/tmp/h")

SETUP = f"""\
%load_ext workbench
import tarfile, tempfile
import workbench as wb
dump = tempfile.mkdtemp()
with tarfile.open({str(LLO / 'nnx_transformer.llo.tar.xz')!r}) as tf:
    tf.extractall(dump, filter="data")"""
CELL = f"""\
ex = wb.load({str(LLO / 'nnx_transformer.hlox')!r})
k = ex.backend(dump=dump)
wb.panel(ex)"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The same recording read here: what the kernel's Kernels answers."""
    folder = extract_llo("nnx_transformer", tmp_path_factory.mktemp("llo"))
    return wb.load(str(LLO / "nnx_transformer.hlox")).backend(dump=str(folder))


@pytest.fixture(scope="module")
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "backend.ipynb", SETUP, CELL)


# labels, tab titles, column heads and buttons whose text is wider than their box: [class, text, needed, shown px]
CUT = """panel => [...panel.querySelectorAll('.lm-TabBar-tabLabel, th, button, .hwbv-caption, .hwbv-be-chip')]
    .filter(e => e.getClientRects().length > 0 && e.scrollWidth > e.clientWidth + 1)
    .map(e => [String(e.className).slice(0, 40), e.textContent.trim().slice(0, 60), e.scrollWidth, e.clientWidth])"""


def shot(shots, target, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    shutil.copy(shots(target, name), SHOTS / f"{name}.png")


def test_a_line_of_the_nnx_step_selects_its_fusions_and_a_fusion_shows_its_bundles(browser, notebook_files, lab,
                                                                                 shots, kernels):
    page = open_notebook(browser, lab, "backend.ipynb", width=1280)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        panel = show_panel(page)
        tab(panel, "Backend")
        root = panel.locator('[data-hwb="backend"][data-state="shown"]')
        root.wait_for(timeout=120_000)
        table = kernels.table()
        rows = panel.locator('[data-hwb="backend-row"]')
        assert rows.count() == len(table) >= 60
        assert panel.locator(".wb-python pre").first.inner_text() == "ex.backend()"
        # each fusion's MXU occupancy, as a per cent, is Kernels.table()'s
        mxu = dict(zip(table["fusion"], table["MXU"]))
        for k in range(0, rows.count(), 9):
            row = rows.nth(k)
            fusion, share = row.get_attribute("data-fusion"), float(row.get_attribute("data-mxu"))
            assert share == pytest.approx(mxu[fusion])
            assert row.locator("td").nth(3).inner_text() == f"{round(100 * share)} %"
        root.scroll_into_view_if_needed()
        shot(shots, panel, "backend-fusions")

        # the optimizer's update line clicked in the Source tab: the Backend tab marks the fusions it went into. The
        # recording names its lines by the paths of the checkout it was made in: this line's file as recorded
        step = next(ln.rsplit(":", 1)[0] for ln in kernels.table()["line"]
                    if ln.endswith(f"/tests/corpus/flax_programs.py:{UPDATE}"))
        tab(panel, "Source")
        line = panel.locator(f'[data-hwb="source-line"][data-file="{step}"][data-line="{UPDATE}"]')
        line.click()
        panel.locator(".wbsrc-line.wbsrc-sel").first.wait_for(timeout=60_000)
        tab(panel, "Backend")
        panel.locator(f'[data-hwb="backend"][data-line="{step}:{UPDATE}"]').wait_for(timeout=60_000)
        chosen = panel.locator('[data-hwb="backend-row"][data-chosen="true"]')
        expected = kernels.for_line(f"{step}:{UPDATE}")
        assert len(expected) > 1
        assert sorted(chosen.evaluate_all("rs => rs.map(r => r.dataset.fusion)")) == sorted(expected)
        assert all("hwbv-be-chosen" in c for c in chosen.evaluate_all("rs => rs.map(r => r.className)"))
        chosen.first.scroll_into_view_if_needed()
        shot(shots, panel, "backend-line-selected")

        # a fusion of the line clicked: its bundles, each unit's slots coloured; the kernel whose passes were recorded
        fusion = next(f for f in expected if len(kernels.index.components[kernels.kernel(f).name]) > 10)
        k = kernels.kernel(fusion)
        panel.locator(f'[data-hwb="backend-row"][data-fusion="{fusion}"]').click()
        box = panel.locator(f'[data-hwb="backend-kernel"][data-name="{k.name}"]')
        box.wait_for(timeout=60_000)
        bundles = panel.locator('[data-hwb="backend-bundle"]')
        assert bundles.count() == min(k.bundles, 400) == int(box.get_attribute("data-listed"))
        used = k.bundle_table()
        first = next(i for i in range(len(used)) if used["VALU"][i] > 0)
        slots = bundles.nth(first).locator('[data-hwb="backend-slot"]')
        assert slots.evaluate_all("s => s.filter(e => e.dataset.unit === 'VALU').length") == used["VALU"][first]
        colours = panel.locator('[data-hwb="backend-slot"]').evaluate_all(
            "s => Object.fromEntries(s.map(e => [e.dataset.unit, getComputedStyle(e).backgroundColor]))")
        assert {"VALU", "MXU"} <= set(colours) and len(set(colours.values())) == len(colours)
        assert all(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours.values())
        assert f"{step}:{UPDATE}" in box.locator('[data-hwb="backend-line"]').evaluate_all(
            "ls => ls.map(l => l.dataset.line)")
        box.scroll_into_view_if_needed()
        shot(shots, box, "backend-bundles")

        # a pass that changed the kernel: its diff from the changed pass before it
        changed = [s for s, c in k.passes() if c]
        panel.locator(f'[data-hwb="backend-pass"][data-stage="{changed[2]}"]').click()
        panel.locator(f'[data-hwb="backend-pass"][data-stage="{changed[2]}"][data-shown="true"]').wait_for(
            timeout=60_000)
        panel.locator(".wbd-head-r", has_text=changed[2]).last.wait_for(timeout=60_000)
        panel.locator(".wbd-head-r", has_text=changed[2]).last.scroll_into_view_if_needed()
        shot(shots, page, "backend-pass-diff")

        # at 1000 px, with the Backend tab the panel's eleventh: no tab title, column head, pass or unit cut
        page.set_viewport_size({"width": 1000, "height": 1250})
        settle(page)
        cut = panel.evaluate(CUT)
        assert cut == [], cut
        shot(shots, page, "backend-1000")

        # and back: the kernel's line clicked selects it in the Source tab
        box.locator(f'[data-hwb="backend-line"][data-line="{step}:{UPDATE}"]').click()
        panel.locator(".lm-TabBar-tab.lm-mod-current", has_text="Source").wait_for(timeout=60_000)
        assert errors == []
    finally:
        page.close()


def test_a_saved_notebook_draws_the_fusions_the_tab_read(browser, shots, kernels, tmp_path):
    ex = wb.load(str(LLO / "nnx_transformer.hlox"))
    ex.backend(dump=str(extract_llo("nnx_transformer", tmp_path)))
    page = saved_view_page(browser, saved_model_after(ex, "Backend"))
    try:
        section = page.locator('details[data-hwb="backend-section"]')
        rows = section.locator('[data-hwb="backend-row"]')
        assert rows.count() == len(kernels.table())
        assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.fusion)")) == sorted(kernels.table()["fusion"])
        assert section.locator(".hwbv-mem-click").count() == 0  # no panel to open a kernel
        section.scroll_into_view_if_needed()
        shot(shots, section, "backend-saved-view")
    finally:
        page.close()
