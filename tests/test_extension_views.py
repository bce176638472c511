"""The extension's kernel-free views in a real browser (JupyterLab on localhost, Debian's chromium, playwright,
as tests/test_extension.py): a .hlox file saved by the workbench opens by double-click in the file browser,
with no kernel started, and shows its stages and the diff of any two; a %%hlo output shows the live panel
while its kernel lives, and the saved view of its bundle (stage list, the shown pair's diff) once the notebook
is reopened without the kernel that made the panel. The vitest tests of the decoding run in
tests/test_extension.py (`npm test`)."""
import re
import time

import nbformat
import pytest

from tests.browser_pages import OUTPUT, api as _api, saved_notebook

pytestmark = pytest.mark.slow

PAIR = ("canonicalize#1", "cse#1")
MIME = "application/vnd.hlo-workbench.exploration+json"
NAME = re.compile(r"%([A-Za-z_\-]*)[\w.$#:\-]*")
HLO_CELL = """\
%%hlo -o ex
def loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).sum()
jax.grad(loss)([jnp.full((16, 16), 0.01) for _ in range(3)], jnp.ones((4, 16)))"""


def _template(line: str) -> str:
    return NAME.sub(r"%\1", line).strip()


def _stats(rows) -> str:
    """The diff viewer's header for ``Diff.rows()``, as diffview.js writes it: the panel's count."""
    from collections import Counter

    count = Counter(kind for _, _, kind in rows)
    parts = [f"{sign}{count[kind]} {kind}" for kind, sign in
             (("changed", "~"), ("deleted", "\u2212"), ("inserted", "+"), ("moved", "")) if count[kind]]
    return f"{len(rows):,} rows: {' '.join(parts) if parts else 'no changes'}"


@pytest.fixture(scope="module")
def saved(lab_server, attention_ex):
    """attention.hlox in the server's folder, saved by the workbench, and the lines ex.diff deletes."""
    ex = attention_ex
    path = lab_server["root"] / "attention.hlox"
    ex.save(path)
    deleted = [_template(l[1:]) for l in ex.diff(*PAIR).unified().splitlines()
               if l.startswith("-") and not l.startswith("---")]
    return {"path": path, "names": [s.name for s in ex.stages], "deleted": deleted,
            "stats": _stats(ex.diff(*PAIR).rows())}


def _page(browser, lab, url: str):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{lab['base']}{url}{'&' if '?' in url else '?'}token={lab['token']}")
    return page, requests


def _deleted_rows(page, root: str) -> list[str]:
    """The texts of the rows the diff viewer under `root` shows as deleted (its "changes only" fold on)."""
    page.locator(f"{root} .wbd-mode").select_option("split")  # auto may choose unified at this width
    page.locator(f'{root} .wbd[data-mode="split"]').wait_for()
    fold = page.locator(f"{root} .wbd-fold")
    if not fold.is_checked():
        fold.check()
    page.locator(f"{root} .wbd-l .wbd-row.k-deleted").first.wait_for()
    return page.locator(f"{root} .wbd-l .wbd-row.k-deleted .wbd-code").all_inner_texts()


def test_a_hlox_file_opens_by_double_click_without_a_kernel(browser, lab, saved):
    OUTPUT.mkdir(exist_ok=True)
    assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    page, requests = _page(browser, lab, "/lab?reset")
    try:
        item = page.locator(".jp-DirListing-item", has_text="attention.hlox")
        item.wait_for()
        item.dblclick()
        view = page.locator(".hwb-hlox[data-ready]")
        view.wait_for()
        assert view.get_attribute("data-ready") == "1", view.inner_text()[:2000]
        # its own tab, the file's name on it, and the stage list with every stage
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text="attention.hlox").count() == 1
        names = page.locator(".hwb-hlox .hwb-stage-table tr[data-stage]").evaluate_all(
            "rows => rows.map(r => r.dataset.stage)")
        assert names == saved["names"]
        table = page.locator(".hwb-hlox .hwb-stage-table").inner_text()
        for name in saved["names"]:
            assert name in table
        # two stages picked, as a user does
        page.locator(".hwb-hlox .hwb-pick-a").select_option(PAIR[0])
        page.locator(".hwb-hlox .hwb-pick-b").select_option(PAIR[1])
        page.wait_for_function("p => document.querySelector('.hwb-hlox .hwb-view')?.dataset.pair === p",
                               arg=f"{PAIR[0]} \u2192 {PAIR[1]}")
        assert page.locator(".hwb-hlox .wbd-head-l").inner_text() == PAIR[0]
        assert page.locator(".hwb-hlox .wbd-head-r").inner_text() == PAIR[1]
        # the structural diff the file carries for a stage and its parent: the panel's rows, so its count
        assert page.locator(".hwb-hlox .wbd-stats").text_content() == saved["stats"]
        assert "deleted" in saved["stats"]
        assert page.locator(".hwb-hlox .hwb-view").get_attribute("data-diff") == "structural"
        assert "structural diff the panel shows" in page.locator(".hwb-hlox .hwb-note").inner_text()
        shown = {_template(t) for t in _deleted_rows(page, ".hwb-hlox")}
        both = [l for l in saved["deleted"] if l in shown]
        assert both, (sorted(shown)[:10], saved["deleted"][:10])
        cost = page.locator(".hwb-hlox .hwb-cost").inner_text()
        assert "cost" in cost
        page.screenshot(path=str(OUTPUT / "extension_hlox_viewer.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_hlox_viewer.png'}; deleted in both: {both[0]}")
        # "Open stage as document" on its shortcut: stage B of the pair picked, in a read-only editor tab
        page.locator(".hwb-hlox .hwb-title").click()
        page.keyboard.press("Control+Alt+o")
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for()
        assert dialog.locator("select").input_value() == PAIR[1]
        dialog.locator(".jp-mod-accept").click()
        doc = page.locator(f'.hwb-stage-document[data-stage="{PAIR[1]}"] .cm-content')
        doc.locator(".h-op").first.wait_for()
        assert "func.func" in doc.locator(".h-op").all_inner_texts()
        assert doc.get_attribute("contenteditable") == "false"
        # no kernel was started for it
        assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    finally:
        page.close()
    assert all(u.startswith(lab["base"]) or u.startswith(("data:", "blob:")) for u in requests), \
        sorted({u for u in requests if not u.startswith(lab["base"])})


def test_a_hlo_output_shows_its_saved_view_once_the_kernel_is_gone(browser, lab):
    OUTPUT.mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench\nimport jax, jax.numpy as jnp"),
                nbformat.v4.new_code_cell(HLO_CELL)]
    nbformat.write(nb, lab["root"] / "saved_output.ipynb")
    page, _ = _page(browser, lab, "/lab/tree/saved_output.ipynb?reset")
    try:
        page.locator(".jp-NotebookPanel:visible .jp-Cell").first.wait_for()
        page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
        for k in (0, 1):
            page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(k).locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
        # the kernel lives: the live panel shows (our renderer hands the output to the widget renderer)
        page.locator(".wb-panel").first.wait_for(timeout=180_000)
        assert page.locator('.hwb-bundle[data-shown="live"] .wb-panel').count() == 1
        # the count the live panel's Diff tab shows for the pair it shows (the saved view must show it too)
        page.wait_for_function("() => /rows/.test(document.querySelector('.wb-panel .wbd-stats')?.textContent)",
                               timeout=180_000)
        live_stats = page.locator(".wb-panel .wbd-stats").first.text_content()
        assert page.locator(".hwb-view").count() == 0
        page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).click()
        page.keyboard.press("Control+s")
        saved = saved_notebook(lab["root"] / "saved_output.ipynb",
                               lambda nb: any(MIME in o.get("data", {}) for o in nb.cells[1].get("outputs", [])))
        bundles = [o["data"][MIME] for o in saved.cells[1].outputs if MIME in o.get("data", {})]
    finally:
        page.close()
    for s in _api(lab, "/api/sessions"):  # the kernel is shut down
        _api(lab, f"/api/sessions/{s['id']}", "DELETE")
    for k in _api(lab, "/api/kernels"):
        _api(lab, f"/api/kernels/{k['id']}", "DELETE")
    assert _api(lab, "/api/kernels") == []
    left, right = bundles[0]["shown"]["left"], bundles[0]["shown"]["right"]
    assert left != right

    page, requests = _page(browser, lab, "/lab/tree/saved_output.ipynb?reset")
    try:
        view = page.locator('.hwb-bundle[data-shown="saved"] .hwb-view')
        view.wait_for(timeout=120_000)
        time.sleep(2)  # whatever the widget manager does once its (new) kernel is up, the saved view stays
        assert page.locator('.hwb-bundle[data-shown="saved"] .hwb-view').count() == 1
        assert "Error displaying widget" not in page.locator(".jp-NotebookPanel:visible").inner_text()
        names = view.locator(".hwb-stage-table tr[data-stage]").evaluate_all("rows => rows.map(r => r.dataset.stage)")
        assert names == [r["stage"] for r in bundles[0]["stages"]] and names[:2] == ["jaxpr", "stablehlo"]
        assert view.get_attribute("data-pair") == f"{left} \u2192 {right}"
        assert view.locator(".wbd-head-l").inner_text() == left
        assert view.locator(".wbd-head-r").inner_text() == right
        stats = view.locator(".wbd-stats").text_content()
        assert re.search(r"\d+ rows: .*(deleted|changed)", stats), stats
        assert stats == live_stats and view.get_attribute("data-diff") == "structural"  # the panel's count
        view.locator(".wbd-mode").select_option("split")
        view.locator('.wbd[data-mode="split"]').wait_for()
        assert view.locator(".wbd-l .wbd-row .wbd-code").count() > 5
        assert "stablehlo." in view.locator(".wbd-l .wbd-rows").inner_text()
        cost = view.locator(".hwb-cost").inner_text()
        assert ("no cost table in this output" in cost) if "cost" not in bundles[0] else (right in cost)
        view.scroll_into_view_if_needed()
        page.screenshot(path=str(OUTPUT / "extension_saved_output.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_saved_output.png'}; stats: {stats}")
    finally:
        page.close()
    assert all(u.startswith(lab["base"]) or u.startswith(("data:", "blob:")) for u in requests)
