"""One of the view components (``assets/views.js``, built from extensions/hlo-workbench-lab/src/components) drawn
in the panel: the same components the saved view, the report and the JupyterLab extension draw.

``kind`` names the component, ``data`` is the JSON Python made for it (a view model, a table, ...), and what the
user does in it comes back to ``on_action(action, payload)``. A component that asks (``host.ask`` in the
browser: a pair's diff, a page of rows) gets ``on_ask(action, payload)``'s value back as its reply; an ask that
raises is answered with ``{"error": message}`` so the browser never waits forever. Python never writes a
component's markup: it sends facts, the component draws them.

A long string in ``data`` (a stage's text, an SVG: ``BLOB_MIN`` characters or more) travels once, in the second synced
trait ``blobs`` (key: its content's hash), and ``data`` refers to it as ``{"$blob": key}``: a click that changes a
small fact sends the small facts, not the texts again. ``blobs`` is sent before the ``data`` that refers to it, and
only when a blob is new; in Python ``data`` keeps the strings themselves, and the browser's ``render`` puts them back
before the component sees its data.
"""
from __future__ import annotations

import functools
import hashlib
from typing import Any, Callable

import anywidget
import traitlets

from ...artifacts.assets import ASSETS

__all__ = ["BLOB_MIN", "Component", "MODULES", "views_module"]


BLOB_MIN = 2048  # a string of data's this long or longer travels as a blob
MODULES = {"editor": "editor.js"}  # kinds with a module of their own (CodeMirror: ~300 kB the others do not need)


@functools.cache
def views_module(name: str = "views.js") -> tuple[str, str]:
    """A components' module (``views.js``, or ``editor.js`` for the stage editor) and the components' style (built
    by scripts/setup.sh); a clear error where the build is missing."""
    js, css = ASSETS / name, ASSETS / "views.css"
    if not js.exists() or not css.exists():
        raise FileNotFoundError(f"{js.name} is not built: run scripts/setup.sh (it builds the view components with "
                                "npm from extensions/hlo-workbench-lab), or install the wheel, which ships them")
    return js.read_text(encoding="utf-8"), css.read_text(encoding="utf-8")


class Component(anywidget.AnyWidget):
    """A view component in the panel: ``Component("view", {"model": view_model, "sections": ["runs"]})``."""

    _esm = traitlets.Unicode().tag(sync=True)
    _css = traitlets.Unicode().tag(sync=True)
    kind = traitlets.Unicode("").tag(sync=True)
    data = traitlets.Dict().tag(sync=True, to_json=lambda data, self: self._refer(data))
    blobs = traitlets.Dict().tag(sync=True)  # key -> a long string of data's, that data refers to as {"$blob": key}

    def __init__(self, kind: str, data: dict | None = None, *,
                 on_action: Callable[[str, dict], None] | None = None,
                 on_ask: Callable[[str, dict], Any] | None = None, **kwargs):
        js, css = views_module(MODULES.get(kind, "views.js"))
        self._keys: dict[int, tuple[str, str]] = {}  # id of a blob's string -> (the string, its key)
        super().__init__(_esm=js, _css=css, kind=kind, data=data or {}, **kwargs)
        self.on_action, self.on_ask = on_action, on_ask
        self.on_msg(self._heard)

    @traitlets.validate("data")
    def _blobs_first(self, proposal) -> dict:
        """The blobs of the data about to be sent, sent first where one is new (a blob no data refers to goes)."""
        keys: dict[int, tuple[str, str]] = {}
        self._collect(proposal["value"], keys)
        self._keys = keys
        blobs = {key: text for text, key in keys.values()}
        if blobs.keys() != self.blobs.keys():
            self.blobs = blobs
        return proposal["value"]

    def _collect(self, value, keys: dict) -> None:
        if isinstance(value, str):
            if len(value) >= BLOB_MIN and id(value) not in keys:
                known = self._keys.get(id(value))
                keys[id(value)] = known if known and known[0] is value else (
                    value, hashlib.sha1(value.encode("utf-8", "surrogatepass")).hexdigest()[:20])
        elif isinstance(value, dict):
            for v in value.values():
                self._collect(v, keys)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self._collect(v, keys)

    def _refer(self, value):
        """``value`` as sent: each blob's string replaced by ``{"$blob": key}``."""
        if isinstance(value, str):
            known = self._keys.get(id(value)) if len(value) >= BLOB_MIN else None
            return {"$blob": known[1]} if known and known[0] is value else value
        if isinstance(value, dict):
            return {k: self._refer(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._refer(v) for v in value]
        return value

    def _heard(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        action, payload = str(content.get("action", "")), content.get("payload") or {}
        if "ask" in content:
            try:
                value = self.on_ask(action, payload) if self.on_ask else {"error": f"nothing answers {action!r} here"}
            except Exception as e:  # noqa: BLE001 -- the browser hears why, the kernel goes on
                value = {"error": f"{type(e).__name__}: {e}"}
            self.send({"reply": content["ask"], "value": value})
        elif self.on_action is not None:
            self.on_action(action, payload)
