"""The panel's stage editor without a browser (views/widgets/editbox.py): the facts it sends its component
("editor", drawn by components/editor.ts as CodeMirror) and what the component's actions do: a text applied
resumes the pipeline (ex.with_text), a refused one says MLIR's message and the line it names, quoted and
located, and keeps the editor open with the user's text; an action of an editor since given another text is
dropped. In a browser: tests/test_browser_edit.py."""
import pytest

from workbench.errors import MlirSyntaxError
from workbench.views.widgets import Panel
from workbench.views.widgets.editbox import error_facts

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


@pytest.fixture
def p(transposes_ex):
    panel = Panel(transposes_ex, background=False)
    yield panel
    panel.close()


def act(p, action, **payload):
    """What the editor component sends when the user types (pauses), clicks Apply or Cancel."""
    p.editor.view._heard(p.editor.view, {"action": action, "payload": {"open": p.editor.data["open"], **payload}}, [])


def test_edit_b_opens_stage_b_and_cancel_closes_it(p):
    p.pick("inline#1")
    p.editor.toggle.click()
    d = p.editor.data
    assert d["stage"] == "inline#1" and d["text"] == p.ex.stage("inline#1").text and d["error"] is None
    assert p.editor.toggle.description == "Close editor"
    act(p, "cancel")
    assert p.editor.data["stage"] == "" and p.editor.data["text"] == "" and p.editor.editing is None
    assert p.editor.toggle.description == "Edit B"


def test_a_refused_text_says_the_line_and_keeps_the_editor_then_a_good_one_resumes_the_pipeline(p, transposes_ex):
    p.editor.open("inline#1")
    opened = p.editor.data["open"]
    text = p.editor.text
    broken = text.replace("stablehlo.dot_general %0, %1", "stablehlo.dot_general %0, %9")
    act(p, "text", text=broken)  # the user pauses typing: Python has the text
    assert p.editor.text == broken
    act(p, "apply", text=broken)
    d = p.editor.data
    assert p.ex is transposes_ex and d["stage"] == "inline#1" and d["open"] == opened  # the user's text stays
    e = d["error"]
    assert e["line"] == 5 and "%9" in e["message"]
    assert d["text"] == broken

    good = text + "\n// changed by hand\n"
    act(p, "apply", text=good)
    assert p.editor.data["error"] is None and p.last_error is None, (p.editor.data, p.last_error)
    assert p.ex is not transposes_ex and [e.kind for e in p.ex.edits] == ["text"]
    assert p.editor.data["stage"] == "" and p.editor.editing is None  # applied: the editor closes
    assert p.python.startswith(f'{p.name} = {p.name}.with_text("inline#1", text)')


def test_an_action_of_an_editor_since_given_another_text_is_dropped(p):
    p.editor.open("inline#1")
    stale = p.editor.data["open"]
    p.editor.text = "// put here from Python"  # a new text: the editor shows it
    assert p.editor.data["open"] == stale + 1 and p.editor.data["text"] == "// put here from Python"
    p.editor.view._heard(p.editor.view, {"action": "text", "payload": {"open": stale, "text": "old"}}, [])
    assert p.editor.text == "// put here from Python"


def test_the_error_quotes_the_line_it_names_unless_the_message_does():
    text = "module {\n  %0 = stablehlo.bad %x\n}"
    e = MlirSyntaxError("the text does not parse as MLIR: 2:8: error: unknown op", line=2, column=8)
    assert error_facts(e, text) == {"message": str(e), "line": 2, "column": 8,
                                    "quoted": "line 2:   %0 = stablehlo.bad %x\n" + " " * 15 + "^"}
    said = error_facts(MlirSyntaxError("2:3: error: unknown op\n  line 2:\n    %0 = stablehlo.bad %x", line=2), text)
    assert said["line"] == 2 and said["column"] is None and said["quoted"] == ""  # quoted by the message
    assert error_facts(RuntimeError("a later pass failed"), text) == {"message": "a later pass failed", "line": None,
                                                                      "column": None, "quoted": ""}
