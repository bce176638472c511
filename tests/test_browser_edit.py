"""Editing a stage in the panel in a real browser (JupyterLab, Debian's chromium, playwright): stage B opened in
the Diff tab's editor, a broken edit refused with MLIR's line and column (the Exploration kept), then both
transposes taken out by hand and applied: the pipeline resumes from the edit, the change summary says what
changed, the stage list marks the edited stage, and the line of Python is under the panel. With the extension
installed (as here) the editor is CodeMirror with its MLIR highlighting, the diagnostic's line marked.
Screenshots: test-output/panel_edit_error.png, test-output/panel_edit_applied.png."""
import pytest

from tests.browser_pages import open_notebook, show_panel, tab, write_notebook

pytestmark = pytest.mark.slow

CELL = """\
%%hlo -o ex -p upstream
def twice(x):
    return jnp.tanh(x.T).T * 2.0
twice(jnp.ones((4, 8)))"""


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "edit.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL)


def test_editing_stage_b_resumes_the_pipeline_and_shows_what_changed(browser, lab, shots):
    page = open_notebook(browser, lab, "edit.ipynb")
    try:
        panel = show_panel(page)
        tab(panel, "Diff")
        panel.locator('.wbs-row[data-name="canonicalize#1"]').click()
        panel.locator(".wbd-head-r", has_text="canonicalize#1").wait_for()
        panel.locator(".wb-edit-toggle").click()
        # the extension shows the text area as CodeMirror with its MLIR highlighting and line numbers
        editor = panel.locator(".hwb-panel-editor")
        editor.wait_for()
        assert not panel.locator(".wb-editor textarea").is_visible()
        editor.locator(".h-op").nth(3).wait_for()  # the stage's text, read from the text area the kernel filled
        assert editor.locator(".cm-lineNumbers").count() == 1
        text = "\n".join(editor.locator(".cm-line").all_inner_texts())
        assert "stablehlo.transpose" in text
        kept = [ln for ln in text.splitlines() if "stablehlo.transpose" not in ln]
        edited = "\n".join(kept).replace("tanh %0 : tensor<8x4xf32>", "tanh %arg0 : tensor<4x8xf32>")

        def type_in(new: str) -> None:  # as a user does: select all, then the new text
            editor.locator(".cm-content").click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(new)

        # a type mismatch: refused with MLIR's line and column, the editor still open, the line marked
        type_in(edited.replace("multiply %2,", "multiply %cst,"))
        panel.locator(".wb-edit-apply").click()
        error = panel.locator(".wb-edit-error")
        error.wait_for(timeout=60_000)
        assert "expects different type" in error.inner_text() and "line 6" in error.inner_text()
        page.wait_for_function("document.querySelector('.hwb-panel-editor .cm-line.hwb-diagnostic-line')",
                               timeout=10_000, polling=200)
        marked = page.evaluate("document.querySelector('.hwb-panel-editor .hwb-diagnostic-line').textContent")
        assert "%cst" in marked and "multiply" in marked
        assert panel.locator(".wbs-edit").count() == 0
        shots(panel, "panel_edit_error")

        type_in(edited.replace("multiply %2,", "multiply %1,"))
        panel.locator(".wb-edit-apply").click()
        summary = panel.locator(".wb-row", has_text="replaced by hand")
        summary.first.wait_for(timeout=120_000)
        said = summary.first.inner_text()
        assert "stages recomputed" in said and "stablehlo.transpose -2" in said
        panel.locator('.wbs-row[data-name="canonicalize#1"] .wbs-edit').wait_for()
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python.startswith('ex = ex.with_text("canonicalize#1", text)')
        assert not editor.is_visible()  # applied: the editor closes
        panel.locator('.wbs-row[data-name="xla:optimized"]').wait_for(timeout=120_000)
        shots(panel, "panel_edit_applied")
    finally:
        page.close()
