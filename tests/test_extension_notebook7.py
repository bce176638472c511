"""The extension in Notebook 7 (the `notebook` package: JupyterLab's extension system, its own pages), in
a real browser as tests/test_extension.py: a .mlir file in Notebook's editor is highlighted with the diff
view's token classes; a notebook saved with a %%hlo output (executed headless by nbclient, no widget
state) shows the saved view of its bundle, never "Error displaying widget"; and "Explore this cell with
hlo-workbench" from Notebook's command palette shows the live panel."""
import shutil

import nbformat
import pytest

from tests.browser_pages import KERNEL, OUTPUT, ROOT, view_facts

pytest.importorskip("notebook", reason="Notebook 7 (pip install notebook) is not installed")
pytestmark = pytest.mark.slow

FIXTURES = ROOT / "extensions" / "hlo-workbench-lab" / "test" / "fixtures"
HLO_CELL = """\
%%hlo -o ex --xla-wait 600
def tb(x, y):
    return jnp.dot(x.T, y.T).T
tb(jnp.ones((8, 16)), jnp.ones((4, 8)))"""
PLAIN = "def f(x):\n    return jnp.sin(x.T) @ x\nf(jnp.ones((4, 4)))"


@pytest.fixture(scope="module")
def nb7(lab_server, run_notebook):
    """The session's Jupyter server, which serves Notebook 7's pages (/edit/..., /notebooks/...) beside
    JupyterLab's, with nb7/ in its folder: a .mlir file, and saved.ipynb executed headless by nbclient."""
    root = lab_server["root"] / "nb7"
    root.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "attention.enzyme.mlir", root / "attention.mlir")
    nb = nbformat.v4.new_notebook(metadata=KERNEL)
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench\nimport jax.numpy as jnp"),
                nbformat.v4.new_code_cell(HLO_CELL), nbformat.v4.new_code_cell(PLAIN)]
    run_notebook(nb, root, timeout=300)
    nb.metadata.pop("widgets", None)  # as JupyterLab and Notebook save by default: no widget state
    nb.cells[2].outputs = []
    nbformat.write(nb, root / "saved.ipynb")
    return lab_server


def _page(browser, nb7, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{nb7['base']}{url}?token={nb7['token']}")
    return page


def test_notebook7_highlights_a_mlir_file(browser, lab, nb7):
    OUTPUT.mkdir(exist_ok=True)
    page = _page(browser, nb7, "/edit/nb7/attention.mlir")
    try:
        content = page.locator(".jp-FileEditor .cm-content")
        content.locator(".h-op").first.wait_for()
        assert {"func.func", "stablehlo.dot_general"} <= set(content.locator(".h-op").all_inner_texts())
        assert "tensor<f32>" in content.locator(".h-type").all_inner_texts()
        page.screenshot(path=str(OUTPUT / "extension_notebook7_mlir.png"))
    except BaseException:
        page.screenshot(path=str(OUTPUT / "extension_notebook7_failed.png"))
        raise
    finally:
        page.close()


def test_notebook7_shows_the_saved_output_and_explores_a_cell(browser, lab, nb7):
    OUTPUT.mkdir(exist_ok=True)
    page = _page(browser, nb7, "/notebooks/nb7/saved.ipynb")
    try:
        # the saved %%hlo output: its bundle's view (the kernel that made the panel is gone)
        view = page.locator('.hwb-bundle[data-shown="saved"] [data-hwb-view]')
        view.wait_for(timeout=120_000)
        facts = view_facts(view)
        names = [name for name, _ in facts["stages"]]
        assert names[:2] == ["jaxpr", "stablehlo"] and "xla:optimized" in names
        assert facts["pair"] == ["canonicalize#2", "enzyme-hlo-patterns#1"] and facts["diff_state"] == "ok"
        assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
        page.screenshot(path=str(OUTPUT / "extension_notebook7_saved_output.png"))
        # Explore this cell, from Notebook's command palette, on the plain cell, once the kernel is up: a
        # cell run before Notebook has a kernel asks which kernel to start instead of running
        page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first.wait_for(timeout=120_000)
        cells = page.locator(".jp-Notebook .jp-Cell")
        cells.nth(0).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        # the imports ran (the saved view above is tall: the plain cell is only clicked once they have)
        cells.nth(0).locator(".jp-InputPrompt", has_text="1").wait_for(timeout=120_000)
        cells.nth(2).locator(".cm-content").click()
        page.keyboard.press("Escape")
        page.keyboard.press("Control+Shift+c")
        search = page.locator(".jp-ModalCommandPalette input").first
        search.wait_for()
        search.fill("Explore this cell with hlo-workbench")
        page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item", has_text="Explore this cell").first.wait_for()
        page.keyboard.press("Enter")
        panel = cells.nth(2).locator(".jp-Cell-outputArea .wb-panel")
        panel.first.wait_for(timeout=180_000)
        assert "jaxpr" in panel.first.inner_text()
        page.screenshot(path=str(OUTPUT / "extension_notebook7_explore_cell.png"))
    except BaseException:
        page.screenshot(path=str(OUTPUT / "extension_notebook7_failed.png"))
        raise
    finally:
        page.close()
