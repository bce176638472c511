"""The report's "Where the bytes go" section (``ex.report(path)``): read as a browser reads the page, it holds what
``ex.memory()`` of the same exploration says -- the peak to the byte, the line with the most bytes at the peak
first, the largest buffer, the timeline with its peak marked -- and where there is no XLA compile to read, why."""
from html.parser import HTMLParser

import pytest

import workbench as wb


class _Section(HTMLParser):
    """One ``<section id=...>`` of a page: its text, its tables (rows of cell texts, the header first) and the
    tags inside it with their attributes."""

    def __init__(self, ident: str):
        super().__init__(convert_charrefs=True)
        self.ident, self.depth = ident, 0
        self.text: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.tags: list[tuple[str, dict]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and attrs.get("id") == self.ident:
            self.depth = 1
            return
        if not self.depth:
            return
        if tag == "section":
            self.depth += 1
        self.tags.append((tag, attrs))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if not self.depth:
            return
        if tag == "section":
            self.depth -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)
            if self._cell is not None:
                self._cell.append(data)


def memory_section(path) -> _Section:
    page = _Section("memory")
    page.feed(path.read_text())
    assert page.text, "the report has no memory section"
    return page


@pytest.fixture(scope="module")
def optax_step():
    from tests.corpus import program

    inst = program("optax_chain").build()
    return wb.explore(inst.fn, *inst.args)


def test_the_section_holds_the_peak_the_top_line_and_the_largest_buffer(optax_step, tmp_path):
    m = optax_step.memory()
    page = memory_section(optax_step.report(tmp_path / "step.html"))
    text = "".join(page.text)
    assert "Where the bytes go" in text and m.summary() in text
    assert f"Peak {m.peak_bytes:,} bytes of host memory (cpu) at position {m.peak_at:,} " in text
    by_line, live, donation = page.tables
    assert by_line[0][:3] == ["line", "bytes", "share"]
    top = m.by_line().iloc[0]
    assert by_line[1][:2] == [top["line"], f"{int(top['bytes']):,}"] and "optax_programs.py:" in top["line"]
    assert len(by_line) - 1 == min(15, len(m.by_line()))
    peak = m.at_peak()
    assert live[1][:3] == [peak["buffer"].iloc[0], f"{int(peak['bytes'].iloc[0]):,}", peak["kind"].iloc[0]]
    # optax_chain donates nothing: its parameters and optimizer state are the candidates, by name
    assert [r[0] for r in donation[1:]] == list(m.donation()["argument"].head(15)) != []
    assert m.reported()["explained"] in text


def test_the_timeline_is_drawn_with_its_peak_and_no_script(optax_step, tmp_path):
    m = optax_step.memory()
    page = memory_section(optax_step.report(tmp_path / "step.html"))
    tags = dict(page.tags)
    assert "svg" in tags and "script" not in tags and "a" not in tags
    (live,) = [a for t, a in page.tags if t == "polyline"]
    points = [tuple(map(float, p.split(","))) for p in live["points"].split()]
    (peak,) = [a for t, a in page.tags if t == "line" and a.get("class") == "wb-memory-peak"]
    top = min(y for _, y in points)  # the highest point drawn is the peak, at the dashed line's position
    assert any(abs(x - float(peak["x1"])) < 0.05 and y == top for x, y in points)
    assert f"peak {m.peak_bytes:,} bytes at {m.peak_instruction}" in "".join(page.text)


def test_without_an_xla_compile_the_section_says_why(tmp_path):
    """A module given as text with no @main: XLA compiles nothing, the section says so and the report stands."""
    ex = wb.explore_text("func.func public @helper(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                         "  %y = stablehlo.add %x, %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n",
                         pipeline="canonicalize")
    with pytest.raises(wb.WorkbenchError) as raised:
        ex.memory()
    page = memory_section(ex.report(tmp_path / "text.html"))
    text = "".join(page.text)
    assert "no memory to show" in text and str(raised.value) in text and not page.tables
