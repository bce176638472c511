"""The panel's output follows the panel (``views/widgets/savedview.py``): shown with a display id, then sent again
(``update_display``) after the toggles, picks and runs that change what it shows, at most one update each half
second and the last state always sent, each update built off the kernel's main thread and addressed to the cell
that showed the panel. Read from IPython's display publisher as a kernel's would publish (the JupyterLab side,
with the extension keeping the live panel through updates and the kernel restarted, is
tests/test_browser_saved.py)."""
import threading
import time

import jax.numpy as jnp
import pytest
from IPython.core.interactiveshell import InteractiveShell

import workbench as wb
from workbench.artifacts import viewmodel as B
from workbench.views.widgets import Panel
from workbench.views.widgets.savedview import HOST_MESSAGE

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

WIDGET = "application/vnd.jupyter.widget-view+json"
CELL = {"msg_id": "cell-1", "msg_type": "execute_request"}  # the header of the cell that shows the panel
LATER = {"msg_id": "cell-2", "msg_type": "execute_request"}  # a cell run after it


class Publisher:
    """What ipykernel's display publisher does with a display: the header it answers (the running cell's, or the
    thread's own once ``set_thread_parent`` named one), the data, the display id, and the thread it came from."""

    def __init__(self):
        self.parent_header = CELL
        self.sent = []
        self._local = threading.local()

    def set_thread_parent(self, parent):
        self._local.parent = parent
        return object()

    def reset_thread_parent(self, token):
        self._local.parent = None

    def publish(self, data, metadata=None, *, transient=None, update=False, **kwargs):
        parent = getattr(self._local, "parent", None) or self.parent_header
        self.sent.append({"data": data, "display_id": (transient or {}).get("display_id"), "update": update,
                          "parent": parent["msg_id"], "thread": threading.current_thread().name,
                          "at": time.monotonic()})

    def clear_output(self, wait=False):
        pass


@pytest.fixture
def publisher(monkeypatch):
    shell = InteractiveShell.instance()
    pub = Publisher()
    monkeypatch.setattr(shell, "display_pub", pub)
    return pub


@pytest.fixture(scope="module")
def ex():
    def td(x, y):
        return jnp.dot(x.T, y.T).T

    return wb.explore(td, jnp.ones((8, 16)), jnp.ones((4, 8)))


def _host_keeps_live(p: Panel) -> None:
    """What the extension's renderer says once it shows the panel live."""
    p.widget._handle_custom_msg({"type": HOST_MESSAGE}, [])


def test_the_panel_shows_itself_with_a_display_id_and_sends_updates_once_the_host_keeps_it(publisher, ex):
    from IPython.display import display

    p = Panel(ex)
    try:
        p.wait()
        display(p)
        (shown,) = publisher.sent
        assert shown["display_id"] == p.saved.display_id and not shown["update"]
        assert shown["data"][WIDGET]["model_id"] == p.widget.model_id and B.MIME in shown["data"]
        p.pick("xla:optimized")
        p.wait()
        assert p.saved.flush(10) and len(publisher.sent) == 1  # no front end keeps the panel: no update
        publisher.parent_header = LATER  # the user runs another cell meanwhile
        _host_keeps_live(p)
        assert p.saved.flush(30) and len(publisher.sent) == 2
        update = publisher.sent[-1]
        assert update["update"] and update["display_id"] == p.saved.display_id
        assert update["parent"] == "cell-1"  # addressed to the cell that shows the panel, not the one running
        assert update["thread"] != threading.main_thread().name
        assert update["data"][B.MIME]["shown"]["right"] == "xla:optimized"
        assert update["data"][WIDGET] == shown["data"][WIDGET]  # the same widget: the live panel stays
        assert B.MIME in p._repr_mimebundle_()  # other callers get the same bundle
    finally:
        p.close()


def test_updates_are_debounced_and_the_last_state_is_always_sent(publisher, ex):
    from IPython.display import display

    p = Panel(ex)
    try:
        p.wait()
        display(p)
        _host_keeps_live(p)
        started = time.monotonic()
        pairs = [("stablehlo", n) for n in ex.names[2:12]]
        for left, right in pairs:  # a pick each tenth of a second, as fast as a user clicks
            p.pick(right)
            p.pick(left, side="left")
            time.sleep(0.1)
        p.pick("xla:optimized")
        p.wait()
        assert p.saved.flush(60), p.saved.last_error
        updates = [s for s in publisher.sent if s["update"]]
        took = updates[-1]["at"] - started
        assert 2 <= len(updates) <= took / p.saved.interval + 2, (len(updates), took)
        gaps = [b["at"] - a["at"] for a, b in zip(updates, updates[1:])]
        assert all(g >= p.saved.interval * 0.9 for g in gaps), gaps
        last = updates[-1]["data"][B.MIME]
        assert last["shown"] == {"left": p.left, "right": "xla:optimized"}
        print(f"\n{2 * len(pairs) + 1} picks in {took:.2f} s: {len(updates)} updates")
    finally:
        p.close()


def test_the_saved_output_ends_with_the_toggles_and_the_runs(publisher, ex):
    from IPython.display import display

    p = Panel(ex, bind={"ex": ex})
    try:
        p.wait()
        display(p)
        first = publisher.sent[0]["data"][B.MIME]
        _host_keeps_live(p)
        p.toggle_patterns(["dot_transpose"], False)
        p.toggle_xla(["algsimp"], False)
        p.wait()
        p.run(p.ex.default_run_stage().name, repeat=2)
        p.wait()
        assert p.saved.flush(120), p.saved.last_error
        last = publisher.sent[-1]["data"][B.MIME]
        B.validate_view(last)
        assert first["toggles"]["patterns_disabled"] == [] and first["runs"] == []
        assert last["toggles"]["patterns_disabled"] == ["dot_transpose"]
        assert last["toggles"]["xla_disabled"] == ["algsimp"]
        assert [r["stage"] for r in last["stages"]] == p.ex.names and last["complete"]
        assert len(last["runs"]) == 1 and last["runs"][0]["check"] is not None
        assert last["variable"] == "ex" and last["source"] == "saved"
    finally:
        p.close()


def test_a_toggle_makes_one_model_for_the_panel_and_its_saved_view(publisher, ex, monkeypatch):
    """After a toggle the panel's core (header, stage list, runs) and the saved view show one model of the new
    Exploration: it is made once (``view_model``) and the saved view adds the pair's facts to it (``with_pair``),
    off the main thread (counted, not timed)."""
    from IPython.display import display

    from workbench.views.widgets import coreview, savedview

    made, paired = [], []
    for module in (coreview, savedview):
        real = module.view_model
        monkeypatch.setattr(module, "view_model", lambda *a, _real=real, **k: made.append(a[0]) or _real(*a, **k))
    real_pair = savedview.with_pair
    monkeypatch.setattr(savedview, "with_pair", lambda ex_, m, **k: paired.append(threading.current_thread().name)
                        or real_pair(ex_, m, **k))
    p = Panel(ex, background=False)
    try:
        p.wait()
        display(p)
        _host_keeps_live(p)
        assert p.saved.flush(60), p.saved.last_error
        for n, (names, on) in enumerate([(["dot_transpose"], False), (["dot_transpose"], True)], 1):
            made.clear()
            paired.clear()
            p.toggle_patterns(names, on)
            p.wait()
            assert p.saved.flush(60), p.saved.last_error
            assert made == [p.ex], n  # one model of the new Exploration, the panel's
            assert len(paired) == 1 and paired[0] != threading.main_thread().name
            last = publisher.sent[-1]["data"][B.MIME]
            assert last["toggles"]["patterns_disabled"] == (["dot_transpose"] if n == 1 else [])
            assert last["stages"] == [{**r, "produced_by": s.produced_by} for r, s in
                                      zip(p.core.model["stages"], p.ex.stages)]
    finally:
        p.close()
