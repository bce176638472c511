"""Issue 27's smaller items, each as the user meets it: the notebook's stage table (pass strings shortened,
no NaN for XLA's passes), the files a session writes readable as a report is, the Source tab naming a
notebook cell as IPython does, the Analyze tab pointing at the Run tab's device picker."""
import os
import re
import stat
from html import unescape

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.views.text import stage_table

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")


def program(x):
    return jnp.tanh(x @ x.T).sum(axis=0)


@pytest.fixture(scope="module")
def ex():
    return wb.explore(program, jnp.ones((8, 8)))


def test_the_notebook_table_shortens_pattern_lists_and_says_why_xla_rows_have_no_ms(ex):
    page = unescape(ex._repr_html_())
    patterns = next(s for s in ex.stages if s.name.startswith("enzyme-hlo-patterns")).produced_by
    n = len(re.search(r"patterns=([^}]*)\}", patterns).group(1).split(";"))
    assert n > 100 and f"patterns=<{n} patterns>" in page and patterns not in page
    assert "NaN" not in page and "nan" not in page
    xla = [s for s in ex.stages if s.group in ("xla", "backend") and s.seconds is None]
    whole = ex["xla:optimized"].seconds * 1e3
    assert f"ms is blank for {len(xla)} XLA/backend stages: XLA runs its passes inside one compile, whose time " \
           f"is on xla:optimized ({whole:,.1f} ms)." in page
    assert ex.table()["produced_by"].tolist() == [s.produced_by for s in ex.stages]  # the data stays exact
    text = stage_table(ex)  # the CLI's
    assert "NaN" not in text and f"<{n} patterns>" in text


def test_saved_files_and_reports_are_readable_by_others_as_the_umask_allows(ex, tmp_path):
    old = os.umask(0o022)
    try:
        saved, report = ex.save(tmp_path / "a.hlox"), ex.report(tmp_path / "a.html")
        assert stat.S_IMODE(os.stat(saved).st_mode) == stat.S_IMODE(os.stat(report).st_mode) == 0o644
        os.umask(0o077)
        private = ex.save(tmp_path / "b.hlox")
        assert stat.S_IMODE(os.stat(private).st_mode) == 0o600  # the user's umask says so
        os.chmod(saved, 0o640)
        ex.save(saved)  # replacing a file keeps its permissions
        assert stat.S_IMODE(os.stat(saved).st_mode) == 0o640
    finally:
        os.umask(old)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_source_tab_names_a_notebook_cell_as_ipython_does(kernel_shell):
    from IPython.utils.capture import capture_output

    from workbench.views.widgets.source import listing_rows

    with capture_output() as cap:
        assert kernel_shell.run_cell("import jax.numpy as jnp\nimport workbench as wb").success
        result = kernel_shell.run_cell("def cell_program(x):\n    y = jnp.sin(x)\n    return y * 2\n"
                                       "ex_in_cell = wb.explore(cell_program, jnp.ones(4))")
    assert result.success, cap.stdout + cap.stderr
    ex = kernel_shell.user_ns["ex_in_cell"]
    rows = listing_rows(ex.source_map(stage="stablehlo"))
    files = [r for r in rows if r["k"] == "file"]
    assert [r["code"] for r in files] == [f"Cell In[{result.execution_count}]"]
    assert re.search(r"ipykernel_\d+/\d+\.py$", files[0]["file"])  # the path stays, as the row's title
    assert any(r["k"] == "line" and "jnp.sin(x)" in r["code"] and r["ops"] for r in rows)


def test_the_analyze_tab_points_at_the_run_tabs_device_picker(ex):
    from workbench.views.widgets import Panel
    from workbench.views.widgets.component import views_module

    p = Panel(ex)
    try:
        p.wait()
        assert p.analyze.view.kind == "analyze"
        words = views_module()[0]  # the component's words, as the panel's page gets them
        assert "on the device picked in the Run tab" in words and "picked above" not in words
    finally:
        p.close()
