"""The panel's list views, rendered in the browser: the stages, a toggle list (patterns, XLA passes), and the
patterns that apply to a stage, each a switch.

They send what the user clicked as a message (``{"type": "pick", ...}``, ``{"type": "toggle", ...}``,
``{"type": "reset"}``) and leave the decision to Python, which answers by setting the traits.
"""
from __future__ import annotations

import pathlib
from typing import Callable

import anywidget
import traitlets

from ...artifacts.assets import inlined
from ...stages import Stage
from .html import num

__all__ = ["StageList", "ToggleList", "ApplicableList", "stage_rows", "time_label", "CONFIRM_OVER"]

_HERE = pathlib.Path(__file__).parent
CONFIRM_OVER = 50  # a click that would switch more names than this asks first


def time_label(seconds: float, cached: bool = False) -> str:
    """A step's time as the panel writes it: "12.3 ms", with "(cached)" when it was served from a cache (the
    time is then that of the step's first run)."""
    return f"{num(seconds * 1e3)} ms" + " (cached)" * bool(cached)


def stage_rows(stages: list[Stage]) -> list[dict]:
    """What the stage list shows of each stage; ``time`` as written (``html.num``), marked cached when
    the step was served from the cache (its ms are then those of the step's first run); ``edit`` a hand
    edit's mark ("text": its text was replaced, "inserted": its pass was added, "after-removed": the pass before
    it was left out)."""
    return [{"name": s.name, "group": s.group, "parent": s.parent,
             "state": "error" if s.error else ("changed" if s.changed else "unchanged"),
             "ms": None if s.seconds is None else round(s.seconds * 1e3, 2), "cached": s.cached, "lines": s.lines,
             "time": "" if s.seconds is None else time_label(s.seconds, s.cached),
             "error": (s.error or "").splitlines()[0] if s.error else "", "edit": s.edit}
            for s in stages]


class Messages(anywidget.AnyWidget):
    """An anywidget whose browser-side messages go to one handler (set by the panel)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handler: Callable[[dict], None] | None = None
        self.on_msg(self._receive)

    def _receive(self, _widget, content, _buffers) -> None:
        if self.handler is not None and isinstance(content, dict):
            self.handler(content)


class StageList(Messages):
    """Every stage with its group, time, lines and state (changed, unchanged, failed). Clicking a stage
    asks for it on the right and its parent on the left; shift-click asks for it on the left. ``fold``
    folds it to a strip, as its button does. ``pending`` names a group still on its way (XLA's
    stages while XLA compiles), shown as its marker with ``loading``'s spinner."""

    _esm = _HERE / "stagelist.js"
    _css = inlined(_HERE / "lists.css")  # with what it shares with the other views (assets/widgetkit.css)

    stages = traitlets.List(traitlets.Dict()).tag(sync=True)
    left = traitlets.Unicode("").tag(sync=True)
    right = traitlets.Unicode("").tag(sync=True)
    hide_unchanged = traitlets.Bool(False).tag(sync=True)
    loading = traitlets.Unicode("").tag(sync=True)  # a spinner row with this text after the rows
    pending = traitlets.Unicode("").tag(sync=True)  # the group on its way ("xla" while XLA compiles)
    # "folded": a narrow strip; "open"; "auto": folded while the panel is narrower than 760 px. Open in a panel
    # under 1000 px, the list is compact (names only; stagelist.js decides it in the browser, by the panel's width)
    fold = traitlets.Enum(("auto", "folded", "open"), "auto").tag(sync=True)

    def visible(self) -> list[str]:
        """The names the list shows now (the hide-unchanged filter keeps the two picked stages)."""
        return [r["name"] for r in self.stages
                if not self.hide_unchanged or r["state"] != "unchanged" or r["name"] in (self.left, self.right)]


class ToggleList(Messages):
    """Named switches in groups, with client-side search: ``items`` are ``[name, group, on by default]``,
    ``enabled`` the names on now. Those that differ from their default are highlighted.

    A group's checkbox follows the tri-state convention: a group with every switch off goes on, a
    mixed or full one goes off. A click (or a reset) that would switch more than ``CONFIRM_OVER``
    names asks first: ``confirm`` holds the question the browser shows inline with yes/no, and the
    handler hears the toggle only after yes."""

    _esm = _HERE / "togglelist.js"
    _css = inlined(_HERE / "lists.css")

    items = traitlets.List().tag(sync=True)
    enabled = traitlets.List(traitlets.Unicode()).tag(sync=True)
    noun = traitlets.Unicode("pattern").tag(sync=True)
    nouns = traitlets.Unicode("patterns").tag(sync=True)  # the plural, for counts and the search box
    busy = traitlets.Bool(False).tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    confirm = traitlets.Unicode("").tag(sync=True)  # the question waiting for yes/no, "" when none

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._pending: dict | None = None  # the message that yes sends on

    def changed_from_default(self) -> list[str]:
        on = set(self.enabled)
        return [name for name, _group, default in self.items if (name in on) != bool(default)]

    @traitlets.observe("items")
    def _drop_question(self, _change) -> None:
        """Other switches: a question about the old ones is moot."""
        self._pending, self.confirm = None, ""

    def group_click(self, group: str) -> None:
        """A click on ``group``'s checkbox: all off -> on; mixed or all on -> off (asking when many)."""
        names = [n for n, g, _d in self.items if g == group]
        if not names:
            return
        on = set(self.enabled)
        turn_on = not any(n in on for n in names)
        change = [n for n in names if (n in on) != turn_on]
        what = f"switch {self._count(len(change))} {'on' if turn_on else 'off'}"
        self._ask(what + f" (group {group})", {"type": "toggle", "names": change, "on": turn_on, "group": group})

    def reset_click(self) -> None:
        """The reset button: every switch back to its default (asking when many differ)."""
        n = len(self.changed_from_default())
        self._ask(f"reset {self._count(n)} to their defaults", {"type": "reset"}, n)

    def _count(self, n: int) -> str:
        return f"{n} {self.noun if n == 1 else self.nouns}"

    def _ask(self, question: str, msg: dict, n: int | None = None) -> None:
        n = len(msg.get("names", ())) if n is None else n
        if n > CONFIRM_OVER:
            self._pending, self.confirm = msg, question + "?"
        else:
            self._pending, self.confirm = None, ""
            self._forward(msg)

    def _forward(self, msg: dict) -> None:
        if self.handler is not None:
            self.handler(msg)

    def _receive(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "group":
            self.group_click(str(content.get("group", "")))
        elif kind == "reset":
            self.reset_click()
        elif kind in ("yes", "no"):
            msg, self._pending, self.confirm = self._pending, None, ""
            if kind == "yes" and msg is not None:
                self._forward(msg)
        else:
            self._forward(content)


class ApplicableList(Messages):
    """The patterns that change a stage when applied alone (``rows``: name, group and ms as written), each with
    a switch: a click sends ``{"type": "toggle", "names": [name], "on": ...}`` to the handler (the panel's toggle,
    as the Passes tab's switches do); ``enabled`` names the patterns on in ``variable``'s pipeline now, ``busy``
    holds the switches while the panel's actions wait."""

    _esm = _HERE / "applicable.js"
    _css = inlined(_HERE / "lists.css")

    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    enabled = traitlets.List(traitlets.Unicode()).tag(sync=True)
    variable = traitlets.Unicode("ex").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
