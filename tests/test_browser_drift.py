"""'Find where it drifts' in a real browser (JupyterLab, Debian's chromium, playwright): a program that
replaces its NaNs by zeros, compiled with Reactant's no_nan and fed a NaN, run from the panel's Run tab;
its failed check offers the search, whose whole answer shows in the drift box under the run: the op, the
reference's op that was removed and one cause (the patterns that removed it), the op beside its counterpart,
its inputs and the values compared; its buttons mark the op in the
diff and its line in the Source tab. Screenshots: test-output/panel_drift_run.png and
test-output/panel_drift_source.png."""
import pytest

from tests.browser_pages import DRIFT_CELL, open_notebook, show_panel, side_by_side, tab, write_notebook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def notebook_files(lab_server):
    write_notebook(lab_server["root"] / "drift.ipynb", "import jax, jax.numpy as jnp\nimport workbench as wb", DRIFT_CELL)


def test_a_failed_check_offers_find_where_it_drifts_and_marks_the_op(browser, lab, shots):
    page = open_notebook(browser, lab, "drift.ipynb")
    try:
        panel = show_panel(page)
        side_by_side(panel)
        tab(panel, "Run")
        drift = panel.locator('[data-hwb="drift-find"]')
        assert not drift.is_visible()  # nothing run yet: nothing to search
        panel.locator('[data-hwb="run-go"]').click()
        panel.locator('[data-hwb="run"][data-passed="false"]').first.wait_for(timeout=120_000)
        drift.wait_for(state="visible")
        drift.click()
        found = panel.locator('.wb-run-tab [data-hwb="drift"]')
        found.wait_for(state="attached", timeout=120_000)
        said = " ".join(found.text_content().split())
        assert "drifts from 'stablehlo' at %0 = stablehlo.dot_general" in said
        assert "stablehlo.select" in said and "no_nan_compare_simplify" in said
        # one cause, said once, and the whole answer where it was asked for: the panel stays in the Run tab
        assert said.count("the cause:") == 1 and "the cause: enzyme-hlo-patterns#1's pattern" in said, said
        assert "removed by" not in said and found.is_visible()
        # the op beside its counterpart in the reference, its inputs beside theirs, and the values compared
        text = lambda hwb: " ".join(found.locator(f'[data-hwb="{hwb}"]').text_content().split())  # noqa: E731
        assert text("drift-counterpart").count("stablehlo.dot_general") >= 2
        inputs = found.locator('[data-hwb="drift-inputs"] tbody tr')
        assert inputs.count() == 2 and "argument 0 of @main" in inputs.first.text_content()
        assert "stablehlo.select" in inputs.first.text_content() and "yes" in inputs.first.text_content()
        values = found.locator('[data-hwb="drift-values"]')
        assert values.locator("tbody tr").count() >= 3 and "3 drift" in text("drift-values")
        shots(panel, "panel_drift_run")

        # its buttons: the op marked in the diff (stablehlo | the stage), then its line in the Source tab
        panel.locator('[data-hwb="drift-to"][data-where="diff"]').click()
        marked = panel.locator(".wbd-r .wbd-row.wbd-mark", has_text="stablehlo.dot_general")
        marked.first.wait_for(timeout=60_000)
        assert panel.locator(".wbd-head-l", has_text="stablehlo").count() >= 1
        assert panel.locator(".wbd-l .wbd-row.wbd-mark", has_text="stablehlo.dot_general").count() == 1
        tab(panel, "Run")
        panel.locator('[data-hwb="drift-to"][data-where="source"]').click()
        panel.locator(".wbsrc-line.wbsrc-sel", has_text="x @ w").wait_for(timeout=60_000)
        shots(panel, "panel_drift_source")
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python.startswith("ex.lineage(") or python.startswith("ex.drift(")
    finally:
        page.close()
