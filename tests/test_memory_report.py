"""The report's "where the bytes go" (``ex.report(path)``): the report's view model carries what ``ex.memory()`` of
the same exploration says (the peak to the byte, the lines and buffers at the peak, the donation candidates, the
reconciliation), the components draw it in a browser as the panel's Memory tab does, and where there is no XLA
compile to read, a section says why."""
import pytest

import workbench as wb
from workbench.artifacts.viewmodel import validate_view
from tests.test_report import model_of, open_report, section


@pytest.fixture(scope="module")
def optax_step():
    from tests.corpus import program

    inst = program("optax_chain").build()
    return wb.explore(inst.fn, *inst.args)


@pytest.fixture(scope="module")
def optax_report(optax_step, tmp_path_factory):
    return optax_step.report(tmp_path_factory.mktemp("memory") / "step.html")


def test_the_reports_model_carries_the_memory_of_the_same_exploration(optax_step, optax_report):
    m = optax_step.memory()
    model = model_of(optax_report.read_text())
    validate_view(model)
    mem = model["memory"]
    assert (mem["peak_bytes"], mem["peak_at"], mem["peak_instruction"]) == (m.peak_bytes, m.peak_at,
                                                                            m.peak_instruction)
    top = m.by_line().iloc[0]
    assert (mem["by_line"][0]["line"], mem["by_line"][0]["bytes"]) == (top["line"], int(top["bytes"]))
    assert "optax_programs.py:" in top["line"] and mem["by_line"][0]["at"]["line"] == int(top["line"].rsplit(":")[1])
    peak = m.at_peak()
    assert [b["buffer"] for b in mem["buffers"]] == list(peak["buffer"].head(len(mem["buffers"])))
    assert sum(b["bytes"] for b in mem["buffers"]) + mem["more_bytes"] == m.peak_bytes
    # optax_chain donates nothing: its parameters and optimizer state are the candidates, by name
    assert [d["argument"] for d in mem["donation"]] == list(m.donation()["argument"]) != []
    assert mem["reported"]["explained"] == m.reported()["explained"]
    assert '<section id="memory">' not in optax_report.read_text()  # drawn by the components, not a second time


@pytest.mark.slow
def test_in_a_browser_the_components_draw_the_reports_memory(browser, optax_step, optax_report):
    m = optax_step.memory()
    ctx, page, errors, dialogs = open_report(browser, optax_report, width=1280)
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        root = page.locator('[data-hwb="memory"][data-state="shown"]')
        assert root.get_attribute("data-peak-bytes") == str(m.peak_bytes)
        first = page.locator('[data-hwb="memory-line"]').first
        assert first.get_attribute("data-line") == m.by_line()["line"].iloc[0]
        assert page.locator('[data-hwb="memory-buffer"]').first.get_attribute("data-buffer") == m.at_peak()[
            "buffer"].iloc[0]
        donated = page.locator('[data-hwb="memory-donation"]')
        assert donated.count() == len(m.donation())
        assert sum(int(donated.nth(k).get_attribute("data-saves")) for k in range(donated.count())) == int(
            m.donation()["saves"].sum())
        page.locator('[data-hwb="memory"]').screenshot(path=str(optax_report.with_suffix(".memory.png")))
        assert errors == [] and dialogs == []
    finally:
        ctx.close()


def test_without_an_xla_compile_the_section_says_why(tmp_path):
    """A module given as text with no @main: XLA compiles nothing, the section says so and the report stands."""
    ex = wb.explore_text("func.func public @helper(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                         "  %y = stablehlo.add %x, %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n",
                         pipeline="canonicalize")
    with pytest.raises(wb.WorkbenchError) as raised:
        ex.memory()
    text = ex.report(tmp_path / "text.html").read_text()
    assert "memory" not in model_of(text)
    said = section(text, "memory")
    assert "Where the bytes go" in said and "no memory to show" in said
    assert str(raised.value).split(",")[0] in said
