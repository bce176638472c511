"""The panel's Memory tab: ``ex.memory()`` of the program shown, as the component "memory" gets it, filled when the tab
is first opened; a click on a buffer follows its instruction in xla:optimized (B, the Source tab, the diff, its line),
a click on a line of the user's selects it; a program whose memory cannot be read says why in the tab."""
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.artifacts.viewmodel import MEMORY_BUFFERS, MIME, validate_view
from workbench.views.widgets import Panel
from workbench.views.widgets.memorytab import TITLE, user_line

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

ROWS, COLS, INNER = 512, 1024, 256
TEMP = ROWS * COLS * 4  # the tanh's f32 temporary: the largest buffer at the peak


def wide(x, w):
    t = jnp.tanh(x @ w)  # the peak's temporary
    u = jnp.exp(t) @ w.T
    return (u * t.sum()).sum(0)


ARGS = (jnp.ones((ROWS, INNER)), jnp.ones((INNER, COLS)))
TEMP_LINE = wide.__code__.co_firstlineno + 1

# a text XLA cannot compile (a custom call no backend registers): no buffers to read
NO_COMPILE = """
module {
  func.func public @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.custom_call @no_such_kernel(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
"""


def open_memory(p: Panel) -> dict:
    p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
    p.wait()
    return p.memory.view.data


def test_the_memory_tab_shows_the_peak_and_follows_a_buffer_and_a_line():
    ex = wb.explore(wide, *ARGS)
    m = ex.memory()
    p = Panel(ex, background=False)
    try:
        assert p.memory.view.data == {}  # nothing read until the tab is opened
        data = open_memory(p)
        assert p.last_error is None and p.python == "ex.memory()" and data["python"] == "ex.memory()"
        facts = data["memory"]
        assert facts["peak_bytes"] == m.peak_bytes and facts["summary"] == m.summary()
        first = facts["by_line"][0]
        assert first["line"] == f"{__file__}:{TEMP_LINE}" and first["bytes"] == TEMP
        assert first["at"] == {"file": __file__, "line": TEMP_LINE}
        assert sum(r["bytes"] for r in facts["by_line"]) == m.peak_bytes
        temp = facts["buffers"][0]
        assert (temp["bytes"], temp["kind"], temp["at"]) == (TEMP, "temporary", first["at"])
        argument = next(b for b in facts["buffers"] if b["kind"] == "argument")
        assert argument["line"].startswith("(argument") and argument["at"] is None
        # a click on the temporary: xla:optimized is B, the Source tab shows its line and the instruction's lineage
        p.memory.widget._heard(None, {"action": "select_op", "payload": {"instruction": temp["instruction"],
                                                                         "buffer": temp["buffer"]}}, [])
        p.wait()
        assert p.last_error is None and p.right == "xla:optimized"
        assert p.tabs.titles[p.tabs.selected_index] == "Source"
        assert p.python == f'ex.lineage("xla:optimized", "{temp["instruction"]}")'
        assert p.source.selection == ("op", "xla:optimized", temp["instruction"])
        assert f"{__file__}:{TEMP_LINE}" in p.source.view.data["selected"]
        marked = p.diff_view.data["marks"]["after"]
        lines = [p.diff_view.side("after")[1].split("\n")[k] for k in marked]  # the diff's names are normalized
        assert lines and all(f"f32[{ROWS},{COLS}]" in t and "tanh" in t for t in lines), lines
        assert p.memory.view.data["selected"] == temp["buffer"]
        # a click on the line: the Source tab selects it, its ops marked
        p.memory.widget._heard(None, {"action": "select_line", "payload": first["at"]}, [])
        p.wait()
        assert p.last_error is None and p.source.selection == ("line", __file__, TEMP_LINE)
        assert p.diff_view.data["marks"]["after"]
        # the same Exploration: read once
        before = p.memory.view.data
        open_memory(p)
        assert p.memory.view.data is before
    finally:
        p.close()


def test_a_saved_notebook_keeps_the_memory_the_tab_read():
    ex = wb.explore(wide, *ARGS)
    m = ex.memory()
    p = Panel(ex, background=False)
    try:
        assert "memory" not in p._shown().bundle()[MIME]  # not read: not kept (a saved view reads no buffers)
        open_memory(p)
        saved = p._shown().bundle()[MIME]
        validate_view(saved)
        kept = saved["memory"]
        assert (kept["peak_bytes"], kept["peak_at"], kept["summary"]) == (m.peak_bytes, m.peak_at, m.summary())
        assert len(kept["buffers"]) <= MEMORY_BUFFERS and kept["buffers"][0]["bytes"] == TEMP
        assert sum(b["bytes"] for b in kept["buffers"]) + kept["more_bytes"] == m.peak_bytes
        assert kept["by_line"][0]["at"] == {"file": __file__, "line": TEMP_LINE}
        assert p._shown().same(p._shown())  # the same facts: the saved view is not sent again for nothing
    finally:
        p.close()


def test_a_program_without_buffers_says_why_in_the_tab():
    ex = wb.explore_text(NO_COMPILE, pipeline="canonicalize")
    with pytest.raises(wb.WorkbenchError) as e:
        ex.memory()
    p = Panel(ex, background=False)
    try:
        data = open_memory(p)
        assert data == {"error": str(e.value), "python": "ex.memory()"} and p.last_error is None
    finally:
        p.close()


def test_user_lines_are_those_of_the_users_code():
    assert user_line("/home/me/step.py:12") == {"file": "/home/me/step.py", "line": 12}
    assert user_line("<ipython-input-3-ab>:4") == {"file": "<ipython-input-3-ab>", "line": 4}
    assert user_line("(argument params['w'])") is None and user_line("(constant)") is None
    assert user_line("(no location)") is None
    assert user_line("flax/nnx/linear.py:301 (library code only)") is None
