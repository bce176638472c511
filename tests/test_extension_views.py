"""The extension's kernel-free views in a real browser (JupyterLab on localhost, Debian's chromium, playwright,
as tests/test_extension.py): a .hlox file saved by the workbench (with a hand edit, a pattern off and a run)
opens by double-click in the file browser, with no kernel started, and shows what Python reads of the file
(the server extension, workbench/views/labserver.py, sends its view model): every stage, the edited one
marked, the toggle, the edit, the run's check leaf by leaf, and any two stages' diff counted as ``ex.diff``
counts it; a %%hlo output shows the live panel while its kernel lives, and the saved view of its view model
(stage list, the shown pair's diff) once the notebook is reopened without the kernel that made the panel.
The facts are read through the view components' data attributes (tests/browser_pages.py's view_facts)."""
import time

import nbformat
import pytest

from tests.browser_pages import OUTPUT, api as _api, diff_counts, exploration_facts, saved_notebook, view_facts

pytestmark = pytest.mark.slow

PAIR = ("canonicalize#1", "cse#1")  # a pair the file's view model does not carry: Python's diff, asked
MIME = "application/vnd.hlo-workbench.exploration+json"
HLO_CELL = """\
%%hlo -o ex
def loss(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).sum()
jax.grad(loss)([jnp.full((16, 16), 0.01) for _ in range(3)], jnp.ones((4, 16)))"""


@pytest.fixture(scope="module")
def saved(lab_server, attention_ex):
    """attention.hlox in the server's folder: the attention example with a hand edit of its first MLIR stage
    that changed the module (a multiply made an add), transpose_transpose off and a run; as loaded back."""
    import workbench as wb

    ex = attention_ex
    st = next(s for s in ex.stages if s.group == "mlir" and s.changed)
    edited = ex.with_text(st.name, st.text.replace("stablehlo.multiply", "stablehlo.add", 1))
    edited = edited.with_patterns(disable=["transpose_transpose"])
    edited.run()
    path = lab_server["root"] / "attention.hlox"
    edited.save(path)
    return wb.load(path)


def _page(browser, lab, url: str):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{lab['base']}{url}{'&' if '?' in url else '?'}token={lab['token']}")
    return page, requests


def test_a_hlox_file_opens_by_double_click_without_a_kernel_showing_what_python_reads(browser, lab, saved):
    OUTPUT.mkdir(exist_ok=True)
    ex = saved
    assert _api(lab, "/api/sessions") == [] and _api(lab, "/api/kernels") == []
    page, requests = _page(browser, lab, "/lab?reset")
    try:
        item = page.locator(".jp-DirListing-item", has_text="attention.hlox")
        item.wait_for()
        item.dblclick()
        hlox = page.locator(".hwb-hlox[data-ready]")
        hlox.wait_for(timeout=120_000)  # the server imports the workbench on its first request
        assert hlox.get_attribute("data-ready") == "1", hlox.inner_text()[:2000]
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text="attention.hlox").count() == 1
        view = hlox.locator('[data-hwb-view][data-source="hlox"]')
        facts = view_facts(view)
        # every fact as Python reads the file: stages (the edited one marked), toggle, edit, the run leaf by leaf
        expected = exploration_facts(ex)
        assert {k: facts[k] for k in expected} == expected
        assert [n for n, e in facts["stages"] if e] == [ex.edits[0].stage]
        assert len(expected["leaves"]) > 1 and not all(p for _, p in expected["leaves"])  # the edit made them drift
        # the pair shown first, counted as ex.diff counts it
        left, right = facts["pair"]
        assert facts["counts"] == diff_counts(ex.diff(left, right)), facts
        page.screenshot(path=str(OUTPUT / "extension_hlox_viewer.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_hlox_viewer.png'}; first pair {left} -> {right}: {facts['counts']}")
        # two other stages picked, as a user does (A, then B): Python's diff of them, asked of the server
        view.locator(f'[data-hwb="stage"][data-name="{PAIR[0]}"] .hwbv-pick-a').click()
        view.locator(f'[data-hwb="stage"][data-name="{PAIR[1]}"] .hwbv-pick-b').click()
        page.wait_for_function("""p => { const c = document.querySelector('.hwb-hlox [data-hwb="diff-counts"]');
            return c && c.dataset.left === p[0] && c.dataset.right === p[1] && c.dataset.state === 'ok'; }""",
                               arg=list(PAIR))
        facts = view_facts(view)
        assert facts["counts"] == diff_counts(ex.diff(*PAIR)) and sum(facts["counts"].values()) > 0, facts
        # "Open stage as document" on its shortcut: stage B of the pair picked, in a read-only editor tab
        view.locator('[data-hwb="header"]').click()
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
    # the page asked the server extension, and never fetched the file's bytes itself
    assert any("/hlo-workbench/view?" in u for u in requests) and any("/hlo-workbench/diff?" in u for u in requests)
    assert not any("/api/contents/attention.hlox" in u and "content=1" in u for u in requests)


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
        # and no saved view (the panel's own header, stage list and runs are view components: source "panel")
        assert page.locator('.hwb-bundle [data-hwb-view]:not([data-source="panel"])').count() == 0
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
    left, right = bundles[-1]["shown"]["left"], bundles[-1]["shown"]["right"]
    assert left != right

    page, requests = _page(browser, lab, "/lab/tree/saved_output.ipynb?reset")
    try:
        view = page.locator('.hwb-bundle[data-shown="saved"] [data-hwb-view]')
        view.wait_for(timeout=120_000)
        time.sleep(2)  # whatever the widget manager does once its (new) kernel is up, the saved view stays
        assert page.locator('.hwb-bundle[data-shown="saved"] [data-hwb-view]').count() == 1
        assert "Error displaying widget" not in page.locator(".jp-NotebookPanel:visible").inner_text()
        # the view model the output holds, drawn: its stages, its pair and the diff Python made of it
        bundle = bundles[-1]
        facts = view_facts(view)
        assert facts["source"] == bundle["source"]
        assert facts["stages"] == [[r["stage"], r["edit"]] for r in bundle["stages"]]
        assert facts["stages"][:2] == [["jaxpr", ""], ["stablehlo", ""]]
        assert facts["pair"] == [left, right] and facts["diff_state"] == "ok"
        from workbench.analysis.diff.result import rows_of_runs

        kinds = [kind for _, _, kind in rows_of_runs(bundle["diff"]["runs"])]
        assert facts["counts"] == {k: kinds.count(k) for k in ("changed", "deleted", "inserted", "moved")}
        assert facts["counts"]["changed"] + facts["counts"]["deleted"] > 0, facts
        assert "stablehlo." in view.locator('[data-hwb="diff"]').inner_text()
        view.scroll_into_view_if_needed()
        page.screenshot(path=str(OUTPUT / "extension_saved_output.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_saved_output.png'}; counts: {facts['counts']}")
    finally:
        page.close()
    assert all(u.startswith(lab["base"]) or u.startswith(("data:", "blob:")) for u in requests)
