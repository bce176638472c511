""""Compare with…" on a .hlox tab, in a real browser (JupyterLab on localhost, Debian's chromium, playwright,
as tests/test_extension_views.py): the MLP example saved under the default settings and under "no_enzyme"
with two patterns off (the extension's vitest fixtures, test/make_compare_fixtures.py), the first opened,
the second picked in JupyterLab's file dialog; the comparison names the first stage whose module differs,
as Python reads it from the files, and shows both explorations; a file that is not a .hlox is refused in
words, and the tab compared from stays as it was. No kernel is started. The vitest tests of the comparison
itself run in tests/test_extension.py (`npm test`)."""
import json
import shutil

import pytest

from tests.browser_pages import OUTPUT, ROOT, api as _api

pytestmark = pytest.mark.slow

FIXTURES = ROOT / "extensions" / "hlo-workbench-lab" / "test" / "fixtures"
FOLDER = "compare"


@pytest.fixture(scope="module")
def files(lab_server):
    """The two saved explorations and a file named .hlox that is not one, in a folder of the server's."""
    expected = json.loads((FIXTURES / "mlp.compare.json").read_text())
    folder = lab_server["root"] / FOLDER
    folder.mkdir(exist_ok=True)
    for name in expected["files"]:
        shutil.copy(FIXTURES / name, folder / name)
    (folder / "broken.hlox").write_text("not a zip archive at all\n")
    return expected


def _pick(page, name: str) -> None:
    """``name`` picked in the open file dialog, as a user does: a click on it, then Select."""
    dialog = page.locator(".jp-Dialog")
    item = dialog.locator(".jp-DirListing-item", has_text=name)
    item.wait_for()
    item.click()
    dialog.locator(".jp-mod-accept").click()


def test_compare_with_sets_two_hlox_files_side_by_side_with_what_differs(browser, lab, files):
    OUTPUT.mkdir(exist_ok=True)
    assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    a, b = files["files"]
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{lab['base']}/lab/tree/{FOLDER}/{a}?reset&token={lab['token']}")
        page.locator('.hwb-hlox[data-ready="1"]').wait_for()
        # the toolbar's button, then the other file in JupyterLab's file dialog
        page.locator(".hwb-hlox-document .jp-Toolbar").get_by_text("Compare with\u2026").click()
        _pick(page, b)
        compare = page.locator(".hwb-compare")
        first = compare.locator(".hwb-first-difference")
        first.wait_for()
        assert first.inner_text() == f"first difference: {files['first_difference']}"
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text=f"{a} \u21c4 {b}").count() == 1
        # the stages aligned by name: every stage of each file once, the one only A holds marked
        names_a = [s["name"] for s in files["stages"][a]]
        names_b = [s["name"] for s in files["stages"][b]]
        rows = compare.locator(".hwb-compare-stage-table tr[data-stage]").evaluate_all(
            "rows => rows.map(r => [r.dataset.stage, r.dataset.match])")
        assert sorted(n for n, _ in rows) == sorted(set(names_a) | set(names_b))
        assert ["enzyme#1", "only-a"] in rows
        assert compare.locator("tr.hwb-first").get_attribute("data-stage") == files["first_difference"]
        # the settings that differ, and the versions (one workbench saved both)
        settings = compare.locator(".hwb-compare-settings")
        assert settings.locator('tr[data-name="pipeline"]').inner_text().split("\t")[1:3] == ["all", "no_enzyme"]
        assert "broadcast_in_dim_simplify" in settings.locator('tr[data-name="patterns off"]').inner_text()
        assert "the same in both" in compare.locator(".hwb-compare-versions summary").inner_text()
        # the costs side by side: the final MLIR stage's op count differs, with its delta
        ops = compare.locator('tr[data-stage="enzyme-hlo-patterns#3"] .hwb-cost-cell').first.inner_text()
        assert "\u2192" in ops and "(" in ops, ops
        # the final modules' diff, then one stage's
        assert compare.locator(".hwb-compare-diffhead").inner_text() == \
            "final module: A's enzyme-hlo-patterns#3 \u2192 B's enzyme-hlo-patterns#3"
        page.wait_for_function("() => /rows/.test(document.querySelector('.hwb-compare .wbd-stats')?.textContent)",
                               polling=200)
        assert compare.locator(".wbd-head-l").first.inner_text() == "A: enzyme-hlo-patterns#3"
        assert compare.locator(".hwb-compare-side .hwb-view").count() == 2
        page.screenshot(path=str(OUTPUT / "extension_compare.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_compare.png'}")
        compare.locator(f'.hwb-compare-stage-table tr[data-stage="{files["first_difference"]}"] .hwb-pick').click()
        page.wait_for_function("p => document.querySelector('.hwb-compare')?.dataset.pair === p",
                               arg=f"{files['first_difference']} \u2192 {files['first_difference']}", polling=200)
        assert compare.locator(".wbd-head-r").first.inner_text() == f"B: {files['first_difference']}"
        # below, each exploration in the .hlox viewer's own view
        sides = compare.locator(".hwb-compare-sides")
        sides.evaluate("el => el.scrollIntoView({block: 'start'})")
        for k, name in enumerate((a, b)):
            side = sides.locator(".hwb-compare-side").nth(k)
            assert side.locator(".hwb-compare-side-head").inner_text().endswith(f"{FOLDER}/{name}")
            assert side.locator(".hwb-stage-table tr[data-stage]").count() == len(files["stages"][name])
            # opened on what the first differing stage did in that file
            assert side.locator(".hwb-view").get_attribute("data-pair").endswith(f"\u2192 {files['first_difference']}")
        page.screenshot(path=str(OUTPUT / "extension_compare_sides.png"))

        # from the .hlox tab's context menu: a file that is not one is refused, and nothing is lost
        page.locator(".lm-DockPanel-tabBar .hwb-hlox-tab", has_text=a).click(button="right")
        page.locator(".lm-Menu-item", has_text="Compare with\u2026").click()
        _pick(page, "broken.hlox")
        refused = page.locator(".jp-Dialog .hwb-compare-refused .hwb-error")
        refused.wait_for()
        assert refused.inner_text() == \
            f"{FOLDER}/broken.hlox cannot be compared: not a saved exploration (.hlox): it is not a zip archive"
        page.locator(".jp-Dialog .jp-mod-accept").click()
        page.locator(".jp-Dialog").wait_for(state="detached")
        assert page.locator(".hwb-compare").count() == 1
        page.locator(".lm-DockPanel-tabBar .hwb-hlox-tab", has_text=a).click()
        assert page.locator('.hwb-hlox[data-ready="1"] .hwb-stage-table tr[data-stage]').count() == len(names_a)
        # and in the command palette while the .hlox tab is current
        page.keyboard.press("Control+Shift+c")
        page.locator(".lm-CommandPalette-input").fill("Compare with")
        item = page.locator(".lm-CommandPalette-item", has_text="Compare with\u2026")
        item.wait_for()
        assert "lm-mod-disabled" not in item.get_attribute("class")
        page.keyboard.press("Escape")
        assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    finally:
        page.close()
