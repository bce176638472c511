""""Compare with…" on a .hlox tab, in a real browser (JupyterLab on localhost, Debian's chromium, playwright,
as tests/test_extension_views.py): the MLP example saved twice -- under the default settings with a hand
edit, and under "no_enzyme" with two patterns off --, the first opened, the second picked in JupyterLab's
file dialog. The tab draws the comparison Python makes of the two files (the server extension,
workbench/views/labserver.py, sends wb.compare_explorations's model): the first differing stage, the stages
aligned by name, the settings that differ, the final modules' diffs and a stage's diff across the files
counted as Python counts them, and each file's own view with its edit. A file that is not a .hlox is refused
in the server's words, and the tab compared from stays as it was. No kernel is started."""
import pytest

from tests.browser_pages import OUTPUT, api as _api, diff_counts, exploration_facts, view_facts

pytestmark = pytest.mark.slow

FOLDER = "compare"
NAMES = ("mlp.edited.hlox", "mlp.no_enzyme.hlox")
COUNTS = """el => { const c = el.querySelector('[data-hwb="diff-counts"]');
    return c && c.dataset.state === 'ok' ? {left: c.dataset.left, right: c.dataset.right,
        counts: Object.fromEntries(['changed', 'deleted', 'inserted', 'moved'].map(k => [k, +c.dataset[k]]))} : null; }"""


@pytest.fixture(scope="module")
def files(lab_server):
    """The two saved explorations (as loaded back), their comparison as Python makes it, and a file named .hlox
    that is not one, in a folder of the server's."""
    import workbench as wb
    from workbench import examples

    fn, args = examples.load("mlp")
    folder = lab_server["root"] / FOLDER
    folder.mkdir(exist_ok=True)
    plain = wb.explore(fn, *args)
    st = next(s for s in plain.stages if s.group == "mlir" and s.changed)
    edited = st.text.replace("stablehlo.add", "stablehlo.subtract", 1)
    assert edited != st.text
    plain.with_text(st.name, edited).save(folder / NAMES[0])
    # the patterns that fold the MLP's chained broadcasts: with one of them off, the other folds the same
    wb.explore(fn, *args, pipeline="no_enzyme",
               disable=("broadcast_in_dim_op_canon", "broadcast_in_dim_simplify")).save(folder / NAMES[1])
    (folder / "broken.hlox").write_text("not a zip archive at all\n")
    a, b = (wb.load(folder / n) for n in NAMES)
    return {"a": a, "b": b, "edited": st.name, "comparison": wb.compare_explorations(a, b, labels=NAMES)}


def _pick(page, name: str) -> None:
    """``name`` picked in the open file dialog, as a user does: a click on it, then Select."""
    dialog = page.locator(".jp-Dialog")
    item = dialog.locator(".jp-DirListing-item", has_text=name)
    item.wait_for()
    item.click()
    dialog.locator(".jp-mod-accept").click()


def test_compare_with_draws_pythons_comparison_of_two_hlox_files_and_each_files_view(browser, lab, files):
    from workbench.analysis.diff import diff_texts

    OUTPUT.mkdir(exist_ok=True)
    assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    a, b = NAMES
    c = files["comparison"]
    first = c.first_difference.name
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{lab['base']}/lab/tree/{FOLDER}/{a}?reset&token={lab['token']}")
        page.locator('.hwb-hlox[data-ready="1"]').wait_for(timeout=120_000)
        # the toolbar's button, then the other file in JupyterLab's file dialog
        page.locator(".hwb-hlox-document .jp-Toolbar").get_by_text("Compare with\u2026").click()
        _pick(page, b)
        compare = page.locator(".hwb-compare [data-hwb-comparison]")
        compare.wait_for(timeout=120_000)
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text=f"{a} \u21c4 {b}").count() == 1
        # what differs, as Python says it: the first difference, the aligned stages, the settings
        assert compare.get_attribute("data-first") == first == files["edited"]
        said = compare.locator('[data-hwb="first-difference"]')
        assert said.get_attribute("data-stage") == first and said.inner_text() == f"first difference: {first}"
        rows = compare.locator('[data-hwb="compare-row"]').evaluate_all(
            "rows => rows.map(r => [r.dataset.stage, r.dataset.side, r.dataset.same === 'true'])")
        assert rows == [[p.name, p.side, p.same] for p in c.pairs]
        assert any(r[:2] == ["enzyme#1", "a"] for r in rows)  # the pass only A's pipeline runs
        settings = compare.locator('[data-hwb="setting"]').evaluate_all("s => s.map(e => e.dataset.name)")
        assert settings == list(c.settings) and any("no_enzyme" in s for s in settings), settings
        # the final modules' diffs, counted as Python's structural diff counts them
        modules = compare.locator('[data-hwb="module"]')
        assert modules.evaluate_all("m => m.map(e => e.dataset.what)") == ["final MLIR", "xla:optimized"]
        final = modules.first.evaluate(COUNTS)
        assert final["counts"] == diff_counts(c.mlir.diff), final
        page.screenshot(path=str(OUTPUT / "extension_compare.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_compare.png'}; first difference {first}")
        # a stage that differs: A's against B's, Python's diff asked of the server
        compare.locator(f'[data-hwb="compare-row"][data-stage="{first}"] .hwbc-diff').click()
        across = compare.locator('[data-hwb="stage-diff"]')
        page.wait_for_function(f"""() => {{ const c = document.querySelector('[data-hwb="stage-diff"] [data-hwb="diff-counts"]');
            return c && c.dataset.state === 'ok' && c.dataset.right === {first!r}; }}""")
        d = diff_texts(files["a"].stage(first).text, files["b"].stage(first).text, first, first)
        assert across.evaluate(COUNTS)["counts"] == diff_counts(d) and not d.is_empty
        # below, each file in its own view: its facts as Python reads the file, opened on the first difference
        sides = compare.locator('[data-hwb="compare-side"]')
        assert sides.evaluate_all("s => s.map(e => e.dataset.path)") == [f"{FOLDER}/{a}", f"{FOLDER}/{b}"]
        for k, ex in enumerate((files["a"], files["b"])):
            facts = view_facts(sides.nth(k).locator("[data-hwb-view]"))
            expected = exploration_facts(ex)
            assert {key: facts[key] for key in expected} == expected
            assert facts["pair"][1] == first
        assert view_facts(sides.nth(0).locator("[data-hwb-view]"))["edits"] == [["text", files["edited"]]]
        sides.first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(OUTPUT / "extension_compare_sides.png"))

        # from the .hlox tab's context menu: a file that is not one is refused, and nothing is lost
        page.locator(".lm-DockPanel-tabBar .hwb-hlox-tab", has_text=a).click(button="right")
        page.locator(".lm-Menu-item", has_text="Compare with\u2026").click()
        _pick(page, "broken.hlox")
        refused = page.locator(".jp-Dialog .hwb-compare-refused .hwb-error")
        refused.wait_for()
        assert refused.inner_text() == \
            f"Cannot compare them: {FOLDER}/broken.hlox: not a saved exploration (.hlox): it is not a zip archive"
        page.locator(".jp-Dialog .jp-mod-accept").click()
        page.locator(".jp-Dialog").wait_for(state="detached")
        assert page.locator(".hwb-compare [data-hwb-comparison]").count() == 1
        page.locator(".lm-DockPanel-tabBar .hwb-hlox-tab", has_text=a).click()
        assert page.locator('.hwb-hlox[data-ready="1"] [data-hwb="stage"]').count() == len(files["a"].stages)
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
