"""What a notebook keeps of the panel: the output's bundle, the widget's view beside the view model of what the
panel shows now (source "saved"), which the JupyterLab extension draws without the kernel: the panel's own model
(``CoreView.model_of``, made once per change) with the pair's facts (``viewmodel.with_pair``), the drift and
XLA's compile profile and the Memory tab's facts (once the tab has read them) added.

The panel's output is displayed with a display id and sent again (``update_display``) after each change of what
the panel shows (a toggle, an edit, a pick, a run, a drift found, XLA's stages arriving), so that a notebook saved
then, or read after a kernel restart, holds the panel as it ended rather than as the cell first showed it. The
bundle is built on a thread of its own, never on the kernel's main thread (a click is never held up by it), at
most once per ``interval`` seconds; the last state is always sent.

An update re-renders the output in the front end. The extension's renderer keeps the live panel through it (its
search box, folds and scroll) and only takes the new model; a front end without the extension would draw the
panel anew after each click. So updates start when the extension says it shows the panel live (a message on the
panel's widget, ``HOST_MESSAGE``); until then the output keeps the bundle of its first display.
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ...artifacts.viewmodel import MIME, compile_entry, drift_entry, memory_entry, view_model, view_text, with_pair

__all__ = ["Shown", "SavedView", "HOST_MESSAGE"]

HOST_MESSAGE = "hwb-keeps-live"  # what the extension's renderer sends the panel's widget once it shows it live


@dataclass(frozen=True, eq=False)
class Shown:
    """What the panel shows, as its saved view keeps it: the Exploration, the pair, the runs listed, the drift
    found, the compile profile, whether XLA's stages are still on their way, the variable that holds it, the
    panel's model of it (``CoreView.model_of``; None: none made yet), the memory its Memory tab read and the TPU
    kernels' table its Backend tab read (``viewmodel.backend_entry``; None: not read)."""
    ex: Any
    left: str
    right: str
    runs: tuple = ()
    drift: Any = None
    profile: Any = None
    pending: bool = False
    variable: str | None = None
    model: dict | None = None
    memory: dict | None = None
    backend: dict | None = None

    def same(self, other: "Shown | None") -> bool:
        """Whether ``other`` shows the same facts (the same objects: an Exploration, a run, a drift are values
        that a change replaces, never edits)."""
        return other is not None and self.ex is other.ex and (self.left, self.right, self.pending, self.variable) == \
            (other.left, other.right, other.pending, other.variable) and self.drift is other.drift and \
            self.profile is other.profile and self.memory is other.memory and \
            self.backend is other.backend and len(self.runs) == len(other.runs) and \
            all(a is b for a, b in zip(self.runs, other.runs))

    def bundle(self, wait: float = 0.0) -> dict[str, Any]:
        """The saved view's MIME bundle: the panel's model with the pair's facts (a model made here where the panel
        has none of this Exploration, or where XLA's stages it lacks came within ``wait`` seconds). The pair's
        facts (its diff, cost rows, ops delta: a third of a second on the tour's attention example) are made
        first, while XLA compiles, and count in the wait; made again only if XLA's stages changed the pair."""
        started = time.monotonic()
        m = self.model or view_model(self.ex, self.left, self.right, wait=0.0, runs=self.runs, pair=False)
        memo: dict = {}
        saved = with_pair(self.ex, self._dressed(m), memo=memo)
        left = wait - (time.monotonic() - started)
        if not m["complete"] and wait and self.ex.xla_ready(max(0.0, left)):
            m = view_model(self.ex, self.left, self.right, wait=0.0, runs=self.runs, pair=False)
            saved = with_pair(self.ex, self._dressed(m), memo=memo)
        return {MIME: saved}

    def _dressed(self, m: dict[str, Any]) -> dict[str, Any]:
        return {**m, "source": "saved", "variable": self.variable, "compile": compile_entry(self.profile),
                "drift": None if self.drift is None else drift_entry(self.drift),
                **({"memory": memory_entry(self.memory)} if self.memory else {}),
                **({"backend": self.backend} if self.backend else {})}


class SavedView:
    """The panel's output. ``bundle()`` is what it displays (``root``: the panel's widget, ``shown()``: what the
    panel shows now), ``display()`` shows it with a display id, ``changed()`` says the panel may show
    something new (a cheap call, from any thread: the bundle is built later, on this object's thread), ``flush()``
    waits until what the panel shows is sent. ``last_error`` says why the last update could not be built (the output
    then keeps the one before)."""

    def __init__(self, root, shown: Callable[[], Shown], interval: float = 0.5):
        self._root, self._shown, self.interval = root, shown, interval
        root.on_msg(lambda _w, msg, _buffers: msg == {"type": HOST_MESSAGE} and self.host_keeps_live())
        self.display_id = f"hwb-{uuid.uuid4().hex}"
        self.last_error: str | None = None
        self.live = False  # a front end keeps the live panel through updates (HOST_MESSAGE): they are sent
        self._parents: list[dict] = []  # the headers of the cells that displayed the output (updates go there)
        self._latest: Shown | None = None  # the newest state asked for
        self._sent_state: Shown | None = None  # the state the output holds
        self._sent_at = 0.0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def bundle(self, shown: Shown | None = None, wait: float = 0.0) -> dict[str, Any]:
        """The output's bundle: the saved view of ``shown`` (default: what the panel shows now; its XLA stages
        waited for up to ``wait`` seconds) and the widget's view; a saved view that fails to build says so in
        its place and never keeps the panel from showing."""
        shown = shown or self._shown()
        try:
            return self._with_widget(shown.bundle(wait), shown)
        except Exception as e:  # noqa: BLE001 -- the saved form must never keep the panel from showing
            return self._with_widget({}, shown, f" (its saved view failed: {e})")

    def _with_widget(self, saved: dict, shown: Shown, said: str = "") -> dict[str, Any]:
        widget = self._root._repr_mimebundle_()
        widget = widget[0] if isinstance(widget, tuple) else widget  # (data, metadata) in some versions
        text = view_text(saved[MIME]) if MIME in saved else f"pass-toggle panel for {shown.ex!r}{said}"
        return {**saved, **widget, "text/plain": text}

    def display(self, wait: float = 0.0) -> None:
        """Show the output (with the display id its updates name), the XLA stages waited for up to ``wait`` s."""
        from IPython.display import display

        shown = self._shown()
        bundle = self.bundle(shown, wait)
        pub = _publisher()
        parent = dict(getattr(pub, "parent_header", None) or {})
        with self._cond:
            if parent and all(p.get("msg_id") != parent.get("msg_id") for p in self._parents):
                self._parents.append(parent)
            self._sent_state, self._sent_at = shown, time.monotonic()
        display(bundle, raw=True, display_id=self.display_id)

    def host_keeps_live(self) -> None:
        """A front end shows the panel live and keeps it through updates: send them from now on."""
        self.live = True
        self.changed()

    def changed(self) -> None:
        """The panel may show something new: its state now is sent within ``interval`` seconds (with what
        changes after it), unless the output already holds it."""
        if not self._parents or not self.live or self._closed:
            return  # never displayed (a script), or no front end that keeps the panel through an update
        latest = self._shown()
        with self._cond:
            self._latest = latest
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._send_loop, name="wb-saved-view", daemon=True)
                self._thread.start()

    def flush(self, timeout: float = 60) -> bool:
        """Wait until the output holds the newest state asked for; whether it does."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _send_loop(self) -> None:
        """Send the newest state, at most one each ``interval`` seconds, until nothing newer is asked for."""
        while True:
            with self._cond:
                while not self._closed and (due := self._sent_at + self.interval - time.monotonic()) > 0:
                    self._cond.wait(due)
                state = self._latest
                if self._closed or state is None or state.same(self._sent_state):
                    self._thread = None
                    self._cond.notify_all()
                    return
            try:
                self._update(self._with_widget(state.bundle(), state))
            except Exception as e:  # noqa: BLE001 -- said in last_error; the output keeps the bundle before
                self.last_error = f"the saved view of this panel was not updated: {str(e) or type(e).__name__}"
            else:
                self.last_error = None
            with self._cond:
                self._sent_state, self._sent_at = state, time.monotonic()

    def _update(self, bundle: dict) -> None:
        """``update_display`` of the output, sent as a reply to each cell that displayed it (a message sent from
        this thread would otherwise name the cell running now, and the front end would drop it)."""
        from IPython.display import update_display

        pub = _publisher()
        for parent in list(self._parents):
            token = pub.set_thread_parent(parent) if hasattr(pub, "set_thread_parent") else None
            try:
                update_display(bundle, raw=True, display_id=self.display_id)
            finally:
                if token is not None:
                    pub.reset_thread_parent(token)


def _publisher():
    from IPython import get_ipython

    return getattr(get_ipython(), "display_pub", None)
