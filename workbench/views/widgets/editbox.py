"""The Diff tab's editor: stage B's module as text, changed by hand, and "Apply", which resumes the pipeline
from it (``ex.with_text``: the later MLIR passes, then XLA) as a toggle does, its change summary shown and
its line of Python under the panel. A text that does not parse or verify keeps the editor open with MLIR's
message, its line and column, above the text with the line it names quoted (so it reads wherever the editor
is scrolled), that line marked in the editor and scrolled to; the Exploration shown stays as it was.

Python makes the facts (``data``: the stage open, its text, the error of a failed edit); the component
"editor" (extensions/hlo-workbench-lab/src/components/editor.ts, in assets/views.js) draws them as a
CodeMirror editor with the workbench's MLIR/HLO highlighting, wherever the panel shows. What the user does
comes back as actions: ``text`` (the text as typed, when the user pauses), ``apply`` (with the text) and
``cancel``, each naming the text Python put there (``open``), so an action of an editor since replaced is
dropped."""
from __future__ import annotations

import threading
from typing import Callable

import ipywidgets as W

from ...errors import MlirSyntaxError, WorkbenchError
from . import actions
from .component import Component

__all__ = ["EditBox", "error_facts"]


class EditBox:
    """``open()`` shows stage B's text (``stage()`` names B, ``exploration()`` is the panel's) in the editor,
    ``apply()`` hands the text to ``rebuild(make)`` (the panel's queue of rebuilds), ``close()`` hides it.
    ``toggle`` is the "Edit B" button, ``panel`` the editor (a Component). ``text`` is the editor's text: as
    the user last typed it, or set here (which puts it in the editor)."""

    def __init__(self, name: str, exploration: Callable, stage: Callable[[], str], rebuild: Callable) -> None:
        self.name, self._exploration, self._stage, self._rebuild = name, exploration, stage, rebuild
        self.toggle = W.Button(description="Edit B", icon="pencil", tooltip="edit stage B's module by hand and "
                               "resume the pipeline from it (ex.with_text)", layout=W.Layout(width="130px"))
        self.toggle.add_class("wb-edit-toggle")
        self.toggle.on_click(lambda _b: self.close() if self.editing else self.open())
        self.editing: str | None = None  # the stage open in the editor
        self._text, self._opened, self._lock = "", 0, threading.Lock()  # apply's error comes from the worker
        self.panel = self.view = Component("editor", {"open": 0, "stage": "", "text": "", "error": None},
                                           on_action=self._on_action)

    @property
    def data(self) -> dict:
        return self.view.data

    @property
    def text(self) -> str:
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value
        if self.editing is not None:
            self._send(reopen=True, text=value, error=None)

    def _send(self, reopen: bool = False, **facts) -> None:
        """The editor's facts with ``facts`` changed; ``reopen``: the text is new, the editor shows it."""
        with self._lock:
            self._opened += reopen
            self.view.data = {**self.view.data, **facts, "open": self._opened}

    def open(self, stage: str | None = None) -> None:
        st = self._exploration().stage(stage or self._stage())
        self.editing, self._text = st.name, st.text
        self._send(reopen=True, stage=st.name, text=st.text, error=None)
        self.toggle.description = "Close editor"

    def close(self) -> None:
        self.editing = None
        self._send(reopen=True, stage="", text="", error=None)
        self.toggle.description = "Edit B"

    def apply(self, text: str | None = None) -> None:
        """Resume the pipeline from ``text`` (default: the editor's) as the stage open."""
        if text is not None:
            self._text = text
        stage, text = self.editing, self._text
        if stage is None:
            return
        act = actions.with_text(self.name, stage, text)

        def call(ex):
            try:
                new = act.call(ex)
            except (MlirSyntaxError, WorkbenchError) as e:  # said in the editor; the Exploration stays
                if self.editing == stage:
                    self._send(text=text, error=error_facts(e, text))
                raise
            if self.editing == stage:
                self.close()
            return new

        self._send(error=None)
        self._rebuild(lambda: actions.Action(act.label, act.python, call))

    def _on_action(self, action: str, payload: dict) -> None:
        if payload.get("open") != self._opened or self.editing is None:
            return  # from an editor since given another text, or closed
        if action == "text":
            self._text = str(payload.get("text", ""))
        elif action == "apply":
            self.apply(str(payload.get("text", self._text)))
        elif action == "cancel":
            self.close()


def error_facts(e: Exception, text: str) -> dict:
    """Why an edit was refused: the message, the line of ``text`` it names and its column (an MlirSyntaxError's;
    a later pass's error names a line of another stage, none here), and that line quoted with the column marked
    under it unless the message quotes it already, so the line reads wherever the editor is scrolled."""
    line, column = getattr(e, "line", None), getattr(e, "column", None)
    lines = text.splitlines()
    quoted = ""
    if line is not None and 1 <= line <= len(lines) and lines[line - 1].strip() not in str(e):
        caret = "\n" + " " * (len(f"line {line}: ") + column - 1) + "^" if column and column >= 1 else ""
        quoted = f"line {line}: {lines[line - 1]}{caret}"
    return {"message": str(e), "line": line, "column": column, "quoted": quoted}
