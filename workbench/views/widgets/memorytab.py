"""The panel's Memory tab: where the bytes go in XLA's compile of the program shown (``ex.memory()``, read from
XLA's own buffer assignment and live ranges): the peak and where in the schedule it is reached, the live bytes over
the schedule, the bytes live at the peak by line of the user's code, and the largest buffers live at the peak.

Python makes the facts (``memory_data``: ``Memory.to_json()`` with, on each line and buffer, where its line is in
the user's code) and the view component "memory" (extensions/hlo-workbench-lab/src/components/memory.ts) draws
them. It fills when first shown for an Exploration, once XLA's compile has ended, on the panel's worker; a program
whose memory cannot be read (a failed compile, a text XLA did not compile) says why in the tab. A click on a buffer
comes back as "select_op" {instruction, buffer}, on a line of the user's as "select_line" {file, line}: the panel
follows them (``follow_op``, ``follow_line``).
"""
from __future__ import annotations

from collections.abc import Callable

from ...analysis.memory import user_line
from ...errors import WorkbenchError
from ...pipeline.diagnose import source_label
from ...exploration import Exploration
from .actions import Action
from .component import Component

__all__ = ["MemoryTab", "TITLE", "memory_data", "user_line"]

TITLE = "Memory"


def memory(name: str) -> Action:
    """``ex.memory()``, as the panel reads it: its facts for the tab."""
    return Action("reading XLA's buffers and live ranges", f"{name}.memory()", lambda ex: memory_data(ex.memory()))


def memory_data(m) -> dict:
    """What the tab shows of a ``Memory``: ``m.to_json()`` (each line and buffer with ``at``: where it is in the
    user's code), a line of a notebook cell named as IPython names it (``Cell In[3], line 4``) in the tables and the
    summary."""
    facts = m.to_json()
    named: dict[str, str] = {}
    for row in facts["by_line"] + facts["buffers"]:
        line = str(row["line"])
        if row["at"] is not None:
            label = source_label(row["at"]["file"])
            if label != row["at"]["file"]:
                named[line] = row["line"] = f"{label}, line {row['at']['line']}"
    for line, label in named.items():
        facts["summary"] = facts["summary"].replace(line, label)
    return facts


class MemoryTab:
    """The Memory tab's component (``widget``). ``submit(label, python, work, busy=...)`` queues work on the
    panel's worker; ``follow_op(instruction)`` and ``follow_line(file, line)`` are the panel's answers to a click
    on a buffer and on a line."""

    def __init__(self, name: str, submit: Callable, follow_op: Callable[[str], None],
                 follow_line: Callable[[str, int], None]):
        self.name, self._submit, self._follow_op, self._follow_line = name, submit, follow_op, follow_line
        self.widget = self.view = Component("memory", on_action=self._on_action)
        self._for: Exploration | None = None  # the Exploration whose memory is shown (or on its way)

    def facts_of(self, ex: Exploration) -> dict | None:
        """The memory the tab shows of ``ex`` (``memory_data``), None until it has read it."""
        return self.view.data.get("memory") if self._for is ex else None

    def show(self, ex: Exploration, *, visible: bool, pending: bool) -> None:
        """Fill the tab for ``ex`` if it is ``visible`` and shows another Exploration's; while XLA compiles
        (``pending``) it says it waits."""
        if not visible or self._for is ex:
            return
        if pending:
            self.view.data = {"busy": "XLA is compiling: its buffers and live ranges are read when it is done"}
            return
        self._for = ex
        act = memory(self.name)
        self.view.data = {"busy": "reading XLA's buffer assignment and live ranges…"}

        def work():
            try:
                facts = act.call(ex)
            except WorkbenchError as e:
                data = {"error": str(e), "python": act.python}
            except Exception as e:  # noqa: BLE001 -- a dump this reader cannot take is said in the tab, not raised
                data = {"error": f"the memory of this compile could not be read: {type(e).__name__}: {e}",
                        "python": act.python}
            else:
                data = {"memory": facts, "python": act.python}
            if self._for is ex:  # else another Exploration is shown meanwhile
                self.view.data = data

        self._submit(act.label, act.python, work, busy=False)

    def _on_action(self, action: str, payload: dict) -> None:
        """A click in the component: a buffer (its instruction followed), or a line of the user's."""
        if action == "select_op" and payload.get("instruction"):
            self.view.data = {**self.view.data, "selected": str(payload.get("buffer") or "")}
            self._follow_op(str(payload["instruction"]))
        elif action == "select_line" and payload.get("file"):
            self._follow_line(str(payload["file"]), int(payload.get("line") or 0))
