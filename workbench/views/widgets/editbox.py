"""The Diff tab's editor: stage B's module as text, changed by hand, and "Apply", which resumes the pipeline
from it (``ex.with_text``: the later MLIR passes, then XLA) as a toggle does, its change summary shown and
its line of Python under the panel. A text that does not parse or verify keeps the editor open with MLIR's
message, its line and column, above the text (where the editor's first screen shows it) with the line it names
quoted; the Exploration shown stays as it was. It is a plain text area wherever the panel
shows; where the JupyterLab extension is installed, the extension shows it as CodeMirror with its MLIR
highlighting and marks the line the message names (extensions/hlo-workbench-lab/src/paneleditor.ts)."""
from __future__ import annotations

from typing import Callable

import ipywidgets as W
from markupsafe import Markup

from ...errors import MlirSyntaxError, WorkbenchError
from . import actions

__all__ = ["EditBox"]


class EditBox:
    """``open()`` shows stage B's text (``stage()`` names B, ``exploration()`` is the panel's) in the editor,
    ``apply()`` hands the text to ``rebuild(make)`` (the panel's queue of rebuilds), ``close()`` hides it.
    ``text`` is the editor's text now."""

    def __init__(self, name: str, exploration: Callable, stage: Callable[[], str], rebuild: Callable) -> None:
        self.name, self._exploration, self._stage, self._rebuild = name, exploration, stage, rebuild
        self.toggle = W.Button(description="Edit B", icon="pencil", tooltip="edit stage B's module by hand and "
                               "resume the pipeline from it (ex.with_text)", layout=W.Layout(width="130px"))
        self.toggle.add_class("wb-edit-toggle")
        self.toggle.on_click(lambda _b: self.close() if self.editing else self.open())
        self.head, self.error = W.HTML(), W.HTML()
        self.area = W.Textarea(layout=W.Layout(width="100%", height="380px"))
        self.area.add_class("wb-editor")
        self.apply_button = W.Button(description="Apply", icon="play", button_style="primary",
                                     layout=W.Layout(width="100px"))
        self.apply_button.add_class("wb-edit-apply")
        self.apply_button.on_click(lambda _b: self.apply())
        self.cancel = W.Button(description="Cancel", layout=W.Layout(width="90px"))
        self.cancel.on_click(lambda _b: self.close())
        self.panel = W.VBox([self.head, self.error, self.area, W.HBox([self.apply_button, self.cancel])],
                            layout=W.Layout(display="none"))
        self.editing: str | None = None  # the stage open in the editor

    @property
    def text(self) -> str:
        return self.area.value

    def open(self, stage: str | None = None) -> None:
        name = stage or self._stage()
        st = self._exploration().stage(name)
        self.editing, self.error.value = st.name, ""
        self.head.value = str(Markup("<b>Editing {}</b> &mdash; <i>Apply</i> replaces its module and runs the "
                                     "pipeline on from it: its later MLIR passes, then XLA.").format(st.name))
        self.area.value = st.text
        self.panel.layout.display = ""
        self.toggle.description = "Close editor"

    def close(self) -> None:
        self.editing = None
        self.panel.layout.display = "none"
        self.toggle.description = "Edit B"

    def apply(self) -> None:
        stage, text = self.editing, self.area.value
        if stage is None:
            return
        act = actions.with_text(self.name, stage, text)

        def call(ex):
            try:
                new = act.call(ex)
            except (MlirSyntaxError, WorkbenchError) as e:  # said in the editor; the Exploration stays
                self.error.value = _error_html(e, text)
                raise
            self.close()
            return new

        self.error.value = ""
        self._rebuild(lambda: actions.Action(act.label, act.python, call))


def _error_html(e: Exception, text: str) -> str:
    """Why an edit was refused, with the line of ``text`` it names quoted (a column marked under it) unless the
    message quotes it already, so the line is on screen wherever the editor is scrolled."""
    line, column = getattr(e, "line", None), getattr(e, "column", None)
    lines = text.splitlines()
    quoted = ""
    if line is not None and 1 <= line <= len(lines) and lines[line - 1].strip() not in str(e):
        caret = "\n" + " " * (len(f"line {line}: ") + column - 1) + "^" if column and column >= 1 else ""
        quoted = Markup('<pre class="wb-edit-line">line {}: {}{}</pre>').format(line, lines[line - 1], caret)
    return str(Markup('<pre class="wb-edit-error">{}</pre>{}').format(str(e), quoted))
