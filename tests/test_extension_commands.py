"""The extension's commands and %%mlir cells in a real browser (JupyterLab on localhost, Debian's chromium,
playwright, as tests/test_extension.py): "Explore this cell with hlo-workbench" from the command palette
runs a plain Python cell under %%hlo (the workbench not even loaded) and leaves its text as written; "Open
stage as document" opens a read-only, highlighted editor tab of a stage; "Save exploration…" from the
cell's context menu writes a .hlox that wb.load reads; a cell that starts with %%mlir is highlighted as
MLIR. The pure parts (the Python the commands send) are vitest's (test/commands.test.ts)."""
import time

import nbformat
import pytest

from tests.browser_pages import OUTPUT, saved_notebook

pytestmark = pytest.mark.slow
MIME = "application/vnd.hlo-workbench.exploration+json"

PLAIN = """\
def tb(x, y):
    return jnp.dot(x.T, y.T).T

tb(jnp.ones((8, 16)), jnp.ones((4, 8)))"""

MLIR_CELL = """\
%%mlir -p canonicalize
module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"""


def _page(browser, lab, url: str):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(f"{lab['base']}{url}{'&' if '?' in url else '?'}token={lab['token']}")
    return page


def _palette(page, label: str) -> None:
    """Run the command labelled `label` from the command palette, as a user does (Ctrl+Shift+C, type, Enter)."""
    page.keyboard.press("Control+Shift+c")
    search = page.locator(".jp-ModalCommandPalette input, #modal-command-palette input").first
    search.wait_for()
    search.fill(label)
    item = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item", has_text=label).first
    item.wait_for()
    page.keyboard.press("Enter")


def test_the_commands_explore_open_and_save_and_mlir_cells_are_highlighted(browser, lab):
    OUTPUT.mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("import jax.numpy as jnp"), nbformat.v4.new_code_cell(PLAIN),
                nbformat.v4.new_code_cell(MLIR_CELL)]
    nbformat.write(nb, lab["root"] / "commands.ipynb")
    page = _page(browser, lab, "/lab/tree/commands.ipynb?reset")
    try:
        cells = page.locator(".jp-NotebookPanel:visible .jp-Cell")
        cells.first.wait_for()
        # a cell whose first line is %%mlir is highlighted as MLIR, with the diff view's token classes
        mlir = cells.nth(2).locator(".cm-content")
        mlir.locator(".h-op").first.wait_for()
        ops = set(mlir.locator(".h-op").all_inner_texts())
        assert {"func.func", "stablehlo.add"} <= ops, ops
        assert "tensor<4xf32>" in mlir.locator(".h-type").all_inner_texts()
        assert cells.nth(1).locator(".cm-content .h-op").count() == 0  # the Python cell is Python's
        cells.nth(2).screenshot(path=str(OUTPUT / "extension_mlir_cell.png"))

        page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
        cells.nth(0).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        cells.nth(1).locator(".cm-content").click()
        page.keyboard.press("Escape")  # command mode, the cell selected
        _palette(page, "Explore this cell with hlo-workbench")
        out = cells.nth(1).locator(".jp-Cell-outputArea")
        out.locator(".wb-panel").first.wait_for(timeout=180_000)
        # the cell's text is as it was written; its output is the pass-toggle panel of tb's stages
        src = cells.nth(1).locator(".cm-content").inner_text().replace("\u200b", "")
        assert [l for l in src.splitlines() if l.strip()] == [l for l in PLAIN.splitlines() if l.strip()], src
        assert "Error" not in out.inner_text()[:200]
        stage_list = out.locator(".wb-panel").first.inner_text()
        assert "enzyme-hlo-patterns#1" in stage_list and "jaxpr" in stage_list
        page.wait_for_function("() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell:nth-child(2)"
                               " .jp-InputPrompt')?.innerText.match(/\\[\\d+\\]/)")
        page.screenshot(path=str(OUTPUT / "extension_explore_cell.png"))

        # Open stage as document: the shown stage (the default in its picker), read-only, highlighted
        cells.nth(1).locator(".jp-InputPrompt").click()
        _palette(page, "Open stage as document")
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for()
        assert dialog.locator("select").input_value() == "enzyme-hlo-patterns#1"
        dialog.locator(".jp-mod-accept").click()
        doc = page.locator('.hwb-stage-document[data-stage="enzyme-hlo-patterns#1"]')
        doc.wait_for()
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text="enzyme-hlo-patterns#1").count() == 1
        content = doc.locator(".cm-content")
        assert "stablehlo.dot_general" in content.locator(".h-op").all_inner_texts()
        assert content.get_attribute("contenteditable") == "false"
        page.screenshot(path=str(OUTPUT / "extension_stage_document.png"))
        page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()

        # Save exploration… from the cell's context menu: a .hlox in the notebook's folder
        cells.nth(1).locator(".jp-InputPrompt").click(button="right")
        page.locator(".lm-Menu-item", has_text="Save exploration").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for()
        name = dialog.locator("input").input_value()
        assert name.startswith("commands-") and name.endswith(".hlox"), name
        dialog.locator("input").fill("saved_by_command.hlox")
        dialog.locator(".jp-mod-accept").click()
        page.locator(".jp-toast-message, .Toastify__toast", has_text="Saved").first.wait_for(timeout=120_000)
        path = lab["root"] / "saved_by_command.hlox"
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "no .hlox was written"
            time.sleep(0.3)
        # saved, the notebook keeps the cell's text exactly as written, and the panel's output under it
        cells.nth(1).locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+s")
        saved = saved_notebook(lab["root"] / "commands.ipynb", lambda nb: nb.cells[1].get("outputs")).cells[1]
        assert saved.source == PLAIN and isinstance(saved.execution_count, int)
        assert any(MIME in o.get("data", {}) for o in saved.outputs)
    except BaseException:
        page.screenshot(path=str(OUTPUT / "extension_commands_failed.png"))
        print("the notebook when it failed:\n" + page.locator(".jp-NotebookPanel:visible").inner_text()[:3000])
        raise
    finally:
        page.close()
    import workbench as wb

    ex = wb.load(path)
    assert "enzyme-hlo-patterns#1" in ex.names and "xla:optimized" in ex.names
    assert ex["canonicalize#2"].text.count("stablehlo.transpose") == 3
