"""Editing a stage in the panel in a real browser (JupyterLab, Debian's chromium, playwright): stage B opened in
the Diff tab's editor, a broken edit refused with MLIR's line and column (the Exploration kept), then both
transposes taken out by hand and applied: the pipeline resumes from the edit, the change summary says what
changed, the stage list marks the edited stage, and the line of Python is under the panel. The editor is the view
component "editor" (components/editor.ts): CodeMirror with the workbench's MLIR highlighting, in JupyterLab's
code font and colours, the diagnostic's line marked and scrolled to in the editor.
Screenshots: test-output/panel_edit_error.png, test-output/panel_edit_applied.png. And the editor component alone
in a page at 1000 px, fed by the panel's EditBox: what it sends as the user types and applies, a refused edit's
line marked and scrolled to in a long module with the user's text kept, nothing cut; test-output/editor_component.png.
"""
import json

import pytest

from tests.browser_pages import open_notebook, pick, show_panel, stage, tab, write_notebook
from workbench.errors import MlirSyntaxError
from workbench.views.widgets.component import views_module
from workbench.views.widgets.editbox import EditBox

pytestmark = pytest.mark.slow

CELL = """\
%%hlo -o ex -p upstream
def twice(x):
    return jnp.tanh(x.T).T * 2.0
twice(jnp.ones((4, 8)))"""


@pytest.fixture(scope="module")
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "edit.ipynb", "%load_ext workbench\nimport jax, jax.numpy as jnp", CELL)


def test_editing_stage_b_resumes_the_pipeline_and_shows_what_changed(browser, notebook_files, lab, shots):
    page = open_notebook(browser, lab, "edit.ipynb")
    try:
        panel = show_panel(page)
        tab(panel, "Diff")
        pick(panel, "canonicalize#1")
        panel.locator(".wbd-head-r", has_text="canonicalize#1").wait_for()
        panel.locator(".wb-edit-toggle").click()
        # CodeMirror with the MLIR highlighting and line numbers, in JupyterLab's look
        editor = panel.locator('[data-hwb="editor"] .hwb-panel-editor')
        editor.wait_for()
        assert panel.locator('[data-hwb="editor"]').get_attribute("data-stage") == "canonicalize#1"
        assert panel.locator('[data-hwb="editor"] textarea').count() == 0
        editor.locator(".h-op").nth(3).wait_for()  # the stage's text, as Python sent it
        assert editor.locator(".cm-lineNumbers").count() == 1
        font, lab_font = editor.evaluate("e => [getComputedStyle(e.querySelector('.cm-scroller')).fontFamily, "
                                         "getComputedStyle(document.body).getPropertyValue('--jp-code-font-family')]")
        assert lab_font.strip() and font.replace(" ", "") == lab_font.strip().replace(" ", ""), (font, lab_font)
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
        apply = panel.locator('[data-hwb="editor"] .hwbv-editor-apply')
        apply.click()
        error = panel.locator('[data-hwb="edit-error"]')
        error.wait_for(timeout=60_000)
        assert "expects different type" in error.inner_text() and "line 6" in error.inner_text()
        assert error.get_attribute("data-line") == "6"
        marked = editor.locator(".cm-line.hwb-diagnostic-line")
        marked.wait_for(timeout=10_000)
        assert "%cst" in marked.inner_text() and "multiply" in marked.inner_text()
        page.wait_for_function("""() => {  // the marked line is in the editor's box, where it scrolled
            const line = document.querySelector('.hwb-panel-editor .hwb-diagnostic-line').getBoundingClientRect();
            const box = document.querySelector('.hwb-panel-editor .cm-scroller').getBoundingClientRect();
            return line.top >= box.top && line.bottom <= box.bottom; }""", timeout=10_000, polling=200)
        assert panel.locator('.wb-stages [data-hwb="stage"][data-edit="text"]').count() == 0
        shots(panel, "panel_edit_error")

        type_in(edited.replace("multiply %2,", "multiply %1,"))
        apply.click()
        summary = panel.locator('[data-hwb="changes"]', has_text="replaced by hand")
        summary.first.wait_for(timeout=120_000)
        said = summary.first.inner_text()
        assert "stages recomputed" in said and "stablehlo.transpose -2" in said
        panel.locator('.wb-stages [data-hwb="stage"][data-name="canonicalize#1"][data-edit="text"]').wait_for()
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python.startswith('ex = ex.with_text("canonicalize#1", text)')
        assert not editor.is_visible()  # applied: the editor closes
        stage(panel, "xla:optimized").wait_for(timeout=120_000)
        shots(panel, "panel_edit_applied")
    finally:
        page.close()


# anywidget's model as the panel's widget has it: the component's kind and data, and what it sends
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body style="margin:0;padding:8px"><p>above the editor</p><div id="editor"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
window.sent = [];
const on = {{}};
const model = {{ get: (k) => (k === "kind" ? "editor" : model.data), data: {data}, on: (e, f) => (on[e] = f), off() {{}},
                send: (m) => window.sent.push(m), set(d) {{ model.data = d; on["change:data"](); }} }};
window.model = model;
views.render({{ model, el: document.getElementById("editor") }});
document.documentElement.dataset.ready = "1";
</script></body></html>"""

BODY = "\n".join(f"    %{k + 1} = stablehlo.add %{k}, %{k} : tensor<4xf32>" for k in range(400))
MODULE = f"""module @m {{
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {{
    %0 = stablehlo.abs %arg0 : tensor<4xf32>
{BODY}
    return %400 : tensor<4xf32>
  }}
}}"""


class _Stage:
    name, text = "canonicalize#1", MODULE


class _Refused:
    """An Exploration whose with_text refuses the text as MLIR does, naming line 250."""
    def stage(self, _name):
        return _Stage()

    def with_text(self, _stage, _text):
        raise MlirSyntaxError("the text does not parse as MLIR:\n  250:10: error: use of undeclared SSA value name",
                              line=250, column=10)


def test_the_editor_component_sends_the_text_and_marks_a_refused_line(browser, shots):
    ex = _Refused()
    box = EditBox("ex", lambda: ex, lambda: "canonicalize#1", lambda make: _try(make().call, ex))
    box.open()
    js, css = views_module("editor.js")
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(PAGE.format(css=css, js=json.dumps(js).replace("</", "<\\/"), data=json.dumps(box.data)))
        page.wait_for_selector("html[data-ready='1']", timeout=30_000)
        root = page.locator('[data-hwb="editor"]')
        assert root.get_attribute("data-stage") == "canonicalize#1" and "Editing canonicalize#1" in root.inner_text()
        editor = root.locator(".hwb-panel-editor")
        editor.locator(".h-op").first.wait_for()  # highlighted as the diff view is
        assert editor.locator(".cm-lineNumbers").count() == 1 and root.locator("textarea").count() == 0
        # typing: the text goes to Python when the user pauses; Apply sends it
        editor.locator(".cm-content").click()
        page.keyboard.press("Control+End")
        page.keyboard.insert_text("\n// typed")
        page.wait_for_function("window.sent.length > 0", timeout=5_000)
        typed = page.evaluate("window.sent")[0]
        assert typed["action"] == "text" and typed["payload"]["open"] == box.data["open"]
        assert typed["payload"]["text"] == MODULE + "\n// typed"
        box.view._heard(box.view, typed, [])
        assert box.text == MODULE + "\n// typed"
        root.locator(".hwbv-editor-apply").click()
        applied = page.evaluate("window.sent")[-1]
        assert applied == {"action": "apply", "payload": {"open": box.data["open"], "text": MODULE + "\n// typed"}}
        box.view._heard(box.view, applied, [])  # refused: Python sends the error, the text the user typed stays
        assert box.data["error"]["line"] == 250 and box.editing == "canonicalize#1"
        page.evaluate("(d) => window.model.set(d)", box.data)
        error = root.locator('[data-hwb="edit-error"]')
        assert error.get_attribute("data-line") == "250" and "undeclared SSA value" in error.inner_text()
        assert root.locator('[data-hwb="edit-line"]').inner_text() == (
            "line 250:     %247 = stablehlo.add %246, %246 : tensor<4xf32>\n" + " " * 19 + "^")
        marked = editor.locator(".cm-line.hwb-diagnostic-line")
        marked.wait_for(timeout=5_000)
        assert marked.inner_text() == "    %247 = stablehlo.add %246, %246 : tensor<4xf32>"
        page.wait_for_function("""() => {  // scrolled to the line inside the editor's box, from its end
            const line = document.querySelector('.hwb-diagnostic-line').getBoundingClientRect();
            const box = document.querySelector('.hwb-panel-editor .cm-scroller').getBoundingClientRect();
            return line.top >= box.top && line.bottom <= box.bottom; }""", timeout=5_000, polling=100)
        shots(page, "editor_component")
        editor.locator(".cm-content").focus()
        page.keyboard.press("Control+End")
        assert editor.locator(".cm-line").last.inner_text() == "// typed"  # what the user typed stays
        cut = page.evaluate("""() => Array.from(document.querySelectorAll('[data-hwb="editor"] button'))
            .filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.textContent)""")
        assert cut == [] and page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        # Cancel: sent; Python closes the editor and the component hides
        root.locator(".hwbv-editor-cancel").click()
        box.view._heard(box.view, page.evaluate("window.sent")[-1], [])
        assert box.editing is None and box.data["stage"] == ""
        page.evaluate("(d) => window.model.set(d)", box.data)
        assert root.is_hidden() and page.locator(".hwb-panel-editor").count() == 0
        assert errors == []
    finally:
        page.close()


def _try(call, ex):
    """The panel's queue of rebuilds, as far as the editor sees it: the action's error is the panel's to show."""
    try:
        call(ex)
    except MlirSyntaxError:
        pass
