"""The offline HTML report (``ex.report(path)``): one file with no URL in it, the stage table, cost table
and chart, graph and runs as static HTML, the stage texts packed so that they cannot become markup, and
the panel's diff viewer picking any two stages in headless chromium; with JavaScript off the static
parts still read. Report sizes are printed (``-s``), never asserted beyond sanity."""
import base64
import gzip
import html
import json
import pathlib
import re
import sys
from html.parser import HTMLParser

import jax
import jax.numpy as jnp
import pytest
from test_browser import browser, chromium  # noqa: F401 -- the browser fixtures (Debian's chromium via playwright)

import workbench as wb
from workbench import examples
from workbench.artifacts import report as report_module
from workbench.analysis.diff import normalize
from workbench.analysis.diff.kinds import ROW_CODES

# A module whose text holds markup: comments (kept in the "input" stage as given), a string attribute
# (kept by every pass), and the title. The report must show all of it as text and run none of it.
ROOT = pathlib.Path(__file__).resolve().parent.parent

HOSTILE = '''// <script>window.__pwned=1</script>
// "><img src=x onerror="window.__pwned=2"> </script><!--
module @m attributes {wb.note = "<script>window.__pwned=1</script> <!-- \\22><img src=x onerror=\\22window.__pwned=2\\22>"} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<4xf32>
    %2 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    %3 = stablehlo.add %1, %2 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}
'''
HOSTILE_TITLE = '<script>window.__pwned=3</script>"><img src=x onerror="window.__pwned=4">'


@pytest.fixture(scope="module")
def attention():
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    ex.run(repeat=3)
    return ex


@pytest.fixture(scope="module")
def attention_report(attention, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "attn.html"
    written = attention.report(path)
    assert written == path and path.is_file()
    print(f"\nreport of the attention example: {path.stat().st_size / 1e3:.0f} kB, {len(attention)} stages, "
          f"{sum(len(s.text) for s in attention.stages) / 1e6:.1f} MB of stage texts")
    return path


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    ex = wb.explore_text(HOSTILE, pipeline="cse", title=HOSTILE_TITLE)
    path = tmp_path_factory.mktemp("hostile") / "hostile.html"
    return ex.report(path), ex


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text outside <script> and <style>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self._raw = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._raw += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._raw -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._raw:
            self.text.append(data)


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def section(text: str, ident: str) -> str:
    start = text.index(f'<section id="{ident}">')
    return text[start:text.index("</section>", start)]


def payload(text: str) -> dict:
    m = re.search(r'<script type="text/plain" id="wb-data" data-encoding="gzip\+base64">([A-Za-z0-9+/=]*)</script>',
                  text)
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


def text_of(data: dict, ident: int) -> list[str]:
    runs = data["texts"][ident]
    return [data["pool"][runs[r] + c] for r in range(0, len(runs), 2) for c in range(runs[r + 1])]


def rows_of(runs: list[int]) -> list[tuple[int, int, int]]:
    out = []
    for r in range(0, len(runs), 4):
        i, j, kind, n = runs[r:r + 4]
        out += [(-1 if i < 0 else i + t, -1 if j < 0 else j + t, kind) for t in range(n)]
    return out


KIND = ROW_CODES  # a row kind's code, as the report packs it


# -- the file ------------------------------------------------------------------------------------------
def test_the_report_is_one_file_with_no_url_in_it(attention_report):
    text = attention_report.read_text()
    assert not re.search(r"https?:|//cdn|\bwww\.", text, re.IGNORECASE)
    page = parse(text)
    links = [(tag, k, v) for tag, attrs in page.tags for k, v in attrs.items() if k in ("src", "href", "xlink:href")]
    assert links and all(v.startswith("#") for _, _, v in links), [x for x in links if not x[2].startswith("#")]
    assert not [t for t, _ in page.tags if t in ("link", "iframe", "img", "object", "embed")]
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert [s.get("type") for s in scripts] == ["application/json", "text/plain", "module"]
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "'unsafe-inline'" not in csp.split("style-src")[0]


def test_the_header_stage_table_cost_graph_and_runs_are_static_html(attention, attention_report):
    text = attention_report.read_text()
    words = " ".join(parse(text).text)
    from importlib import metadata

    import jaxlib

    for dist, version in (("jax", jax.__version__), ("jaxlib", jaxlib.__version__),
                          ("enzyme-ad", metadata.version("enzyme-ad")), ("workbench", metadata.version("hlo-workbench"))):
        assert f"{dist} {version}" in words
    assert attention.spec.title in words and "cpu:0" in words and attention.spec.pipeline in words
    # the report's limits, stated in it (tests/test_bounds.py checks that they hold)
    limits = html.unescape(re.search(r'<span id="wb-limits">(.*?)</span>', text).group(1))
    assert "characters of one stage's text" in limits and limits.endswith("every stage is embedded whole.")
    table = section(text, "stages")
    rows = re.findall(r'<tr data-stage="([^"]*)"', table)
    assert [html.unescape(r) for r in rows] == attention.names
    cost = section(text, "cost")
    assert cost.count("<svg") == 1 and "<table" in cost and "xla_flops" in cost
    cost_rows = re.findall(r"<tr><td>([^<]*)</td>", cost)
    assert [html.unescape(r) for r in cost_rows] == attention.names
    final = attention.default_run_stage().name
    graph = section(text, "graph")
    assert graph.count("<svg") == 1 and f"Graph of {final}" in graph and "<text" in graph and "class=\"node\"" in graph
    runs = section(text, "runs")
    assert "Runs (1)" in runs and final in runs and "passed" in runs and "stablehlo promoted to float64" in runs
    assert "<script" not in cost + graph  # the SVGs are re-serialized drawing elements only


def test_the_packed_texts_and_diffs_are_the_workbenchs(attention, attention_report):
    data = payload(attention_report.read_text())
    names = attention.names
    for k, s in enumerate(attention.stages):
        assert text_of(data, data["stage_text"][k]) == normalize(s.text), s.name
    # every distinct text once: unchanged stages share their parent's
    distinct = {tuple(normalize(s.text)) for s in attention.stages}
    assert len(set(data["stage_text"])) == len(distinct) < len(names)
    assert len({tuple(r) for r in data["texts"]}) == len(data["texts"])
    pairs = {(names[p[0]], names[p[1]]): p for p in data["pairs"]}
    assert all((s.parent, s.name) in pairs for s in attention.stages if s.parent)
    assert ("stablehlo", attention.default_run_stage().name) in pairs
    for a, b in [("canonicalize#1", "cse#1"), ("xla:fusion#1", "xla:cse#2"), ("stablehlo", "inline#1")]:
        d = attention.diff(a, b)
        p = pairs[(a, b)]
        assert text_of(data, p[2]) == list(d.before) and text_of(data, p[3]) == list(d.after)
        assert rows_of(p[4]) == [(i, j, KIND[k]) for i, j, k in d.rows()]


def test_a_bigger_program_stays_a_sane_size(tmp_path):
    """The gradient of a 3-layer transformer stack (bench/bench_core.py's): ~54 stages, ~8 MB of texts."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_core import make
    finally:
        sys.path.pop(0)
    f, args = make(3)
    ex = wb.explore(f, *args)
    path = ex.report(tmp_path / "block3.html")
    size, texts = path.stat().st_size, sum(len(s.text) for s in ex.stages)
    print(f"\nreport of a 3-layer transformer gradient: {size / 1e3:.0f} kB for {len(ex)} stages, "
          f"{texts / 1e6:.1f} MB of stage texts")
    assert texts > 4e6 and size < texts / 3



def test_a_pipeline_of_hundreds_of_passes_lists_the_first_and_last_stages_and_counts_the_rest(tmp_path, monkeypatch):
    """A report of 10,015 stages took 65 s and 2.7 GB: every stage was listed, read, costed (a 10,000-bar
    chart) and offered to the viewer. Past ``ReportLimits.stages`` it lists the first and last half of
    them and the pair the diff and graph open on; the stages between are one row naming the first and
    last of them and how many, and nothing of them is read, costed or embedded (counted, not timed)."""
    from workbench.analysis.cost import table as cost_module
    from workbench.artifacts.report_texts import ReportLimits

    ex = wb.explore_text(HOSTILE.split("\n", 2)[2], pipeline=",".join(["canonicalize", "cse"] * 150))
    every = ex.stages
    assert len(every) > 300
    costed = []
    real_cost_table = cost_module.cost_table

    def counted(ex_, stages=None, **kw):
        costed.append(len(stages) if stages is not None else len(ex_.stages))
        return real_cost_table(ex_, stages=stages, **kw)

    monkeypatch.setattr(report_module, "cost_table", counted)
    path = ex.report(tmp_path / "long.html", limits=ReportLimits(stages=40))
    text = path.read_text()
    table = section(text, "stages")
    listed = [html.unescape(r) for r in re.findall(r'<tr data-stage="([^"]*)"', table)]
    final = ex.default_run_stage().name
    assert len(listed) <= 40 + 2 and listed[:20] == ex.names[:20] and listed[-20:] == ex.names[-20:]
    assert {*report_module._first_pair(ex, every), final} <= set(listed)  # the pair the diff opens on, the graph's
    gaps = re.findall(r'<tr class="wb-gap"><td colspan="8">(.*?)</td></tr>', table, re.DOTALL)
    left = len(every) - len(listed)
    counts = [int(re.search(r"&hellip; ([\d,]+) stage", g).group(1).replace(",", "")) for g in gaps]
    assert 1 <= len(gaps) <= 3 and sum(counts) == left > 200
    assert f"#20 <code>{every[20].name}</code>" in gaps[0] and "ReportLimits(stages=" in gaps[0]
    assert f"Stages ({len(every)})" in table  # the count is of every stage
    data = payload(text)
    assert len(data["stage_text"]) == len(listed)  # only the stages listed are embedded and offered
    config = json.loads(re.search(r'<script type="application/json" id="wb-config">(.*?)</script>', text,
                                  re.DOTALL).group(1))
    assert [s["name"] for s in config["stages"]] == listed
    assert costed and max(costed) <= len(listed)  # only they are costed
    cost_rows = re.findall(r"<tr><td>([^<]*)</td>", section(text, "cost"))
    assert len(cost_rows) <= len(listed)
    limits = html.unescape(re.search(r'<span id="wb-limits">(.*?)</span>', text).group(1))
    assert "at most 40 stages are listed one by one" in limits and f"{left} stages not listed" in limits

def test_markup_in_the_ir_and_the_title_is_only_ever_text(hostile_report):
    path, ex = hostile_report
    text = path.read_text()
    assert "window.__pwned" in ex["input"].text and "window.__pwned" in ex["cse#1"].text
    # the stage texts travel packed; the title and anything else appear escaped, never as markup
    for raw in ("<script>window", "<img", "onerror=\"", "<!--", "</script><!--"):
        assert raw not in text, raw
    assert "&lt;script&gt;window.__pwned=3&lt;/script&gt;" in text
    page = parse(text)
    assert [t for t, _ in page.tags].count("script") == 3 and "img" not in [t for t, _ in page.tags]
    assert not [k for _, attrs in page.tags for k in attrs if k.startswith("on")]
    config = re.search(r'<script type="application/json" id="wb-config">(.*?)</script>', text, re.DOTALL).group(1)
    assert "<" not in config and ">" not in config and "&" not in config.replace("\\u0026", "")
    data = payload(text)
    assert text_of(data, data["stage_text"][0])[0] == "// <script>window.__pwned=1</script>"


XSS = "<script>alert(1)</script>\"'&"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&amp;"  # as the templates escape it, once


def xss(x):
    return jnp.tanh(x) * 2.0


xss.__name__ = xss.__qualname__ = XSS

# One op whose location is a script tag, which one-shot-bufferize cannot bufferize: its error quotes the
# location (MLIR prints the double quote as \22).
XSS_MODULE = """module @m {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> loc("<script>alert(1)</script>\\22'&")
    return %0 : tensor<4xf32>
  }
}
"""


def test_a_name_and_an_error_holding_markup_are_escaped_once_by_the_templates(tmp_path):
    """A function named like a script tag and a pass whose error quotes one: the report shows both as
    text, escaped once (no hand escaping before the template's: that would show as &amp;lt;), and none
    of it is markup."""
    named = wb.explore(xss, jnp.ones((4,)), pipeline="canonicalize")
    failed = wb.explore_text(XSS_MODULE, pipeline="one-shot-bufferize", title="m")
    quoted = "<script>alert(1)</script>\\22'&"  # the location, as the error quotes it
    assert failed.error is not None and quoted in str(failed.error) and failed.names[-1] == "one-shot-bufferize#1"
    pages = {}
    for name, ex in (("named", named), ("failed", failed)):
        text = pages[name] = ex.report(tmp_path / f"{name}.html").read_text()
        assert "<script>alert" not in text and "&amp;lt;" not in text and "&amp;#" not in text
        page = parse(text)
        assert [t for t, _ in page.tags].count("script") == 3
        assert (XSS if name == "named" else quoted) in " ".join(page.text)  # shown, as text
    text = pages["named"]
    assert f"<title>{XSS_ESCAPED} \u2014 hlo-workbench report</title>" in text
    assert f"<h1>{XSS_ESCAPED} &mdash; every compiler stage</h1>" in text
    assert f"<dt>function</dt><dd><code>{XSS_ESCAPED}</code></dd>" in text
    assert f"jax.jit({XSS_ESCAPED}).trace(...).jaxpr" in section(text, "stages")  # the jaxpr stage's "produced by"
    text = pages["failed"]
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;\\22&#39;&amp;"
    row = re.search(r'<tr data-stage="one-shot-bufferize#1" class="wb-failed">(.*?)</tr>', text, re.DOTALL).group(1)
    assert f"the op&#39;s location is loc(&#34;{escaped}&#34;)\n" in row  # the short form, as text
    header = text[text.index("<header>"):text.index("</header>")]
    assert "<b>Stage one-shot-bufferize#1 failed</b>" in header and f"loc(&#34;{escaped}&#34;)" in header


def small(x, y):
    return jnp.tanh(x @ y) * 2.0


@pytest.fixture(scope="module")
def failed_report(tmp_path_factory):
    ex = wb.explore(small, jnp.ones((16, 16)), jnp.ones((16, 8)), pipeline="canonicalize,one-shot-bufferize")
    assert ex.error is not None
    return ex.report(tmp_path_factory.mktemp("failed") / "failed.html"), ex


def test_a_failed_stage_shows_its_error_and_the_report_still_writes(failed_report):
    path, ex = failed_report
    text = path.read_text()
    failed = ex.stages[-1]
    row = re.search(rf'<tr data-stage="{re.escape(failed.name)}" class="wb-failed">(.*?)</tr>', text, re.DOTALL).group(1)
    assert failed.error.splitlines()[0] in html.unescape(row) and "<pre>" in row
    assert f"Stage {failed.name} failed" in text and "No runs" in section(text, "runs")
    data = payload(text)
    assert data["stage_text"][-1] == -1


def test_the_report_is_written_atomically(attention, tmp_path, monkeypatch):
    path = tmp_path / "r.html"
    path.write_text("an older report")

    def broken(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(report_module, "render_report", broken)
    with pytest.raises(RuntimeError):
        attention.report(path)
    assert path.read_text() == "an older report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]


# -- in the browser --------------------------------------------------------------------------------------
def open_report(browser, path, **context):  # noqa: F811 -- the fixture, passed in
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000}, **context)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    return ctx, page, errors


def pick(page, before: str, after: str) -> None:
    page.select_option("#wb-pick-a", before)
    page.select_option("#wb-pick-b", after)
    page.wait_for_function("([a, b]) => document.documentElement.dataset.wbPair === a + ' \u2192 ' + b",
                           arg=[before, after])
    page.wait_for_timeout(100)  # the viewer loads on a microtask and paints on the next frame


def stats(d) -> dict:
    counts = {k: 0 for k in KIND}
    for _, _, kind in d.rows():
        counts[kind] += 1
    return counts


@pytest.mark.slow
def test_picking_two_stages_shows_their_diff(browser, attention, attention_report):  # noqa: F811
    ctx, page, errors = open_report(browser, attention_report)
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        first = f"stablehlo \u2192 {attention.default_run_stage().name}"
        assert page.evaluate("document.documentElement.dataset.wbPair") == first
        # cse#1 removes ops that canonicalize#1 computes twice: the structural diff shows them deleted
        pick(page, "canonicalize#1", "cse#1")
        d = attention.diff("canonicalize#1", "cse#1")
        n = stats(d)
        assert n["deleted"] > 0
        bar = page.text_content(".wbd-stats")
        assert f"{len(d.rows()):,} rows" in bar and f"\u2212{n['deleted']} deleted" in bar
        assert "structural diff" in page.text_content("#wb-diff-note")
        page.check(".wbd-fold")  # changes only: the first changes are painted at the top
        page.wait_for_timeout(200)
        removed = [d.before[i] for i, j, k in d.rows() if k == "deleted"]
        shown = page.eval_on_selector_all(".wbd-l .wbd-row.k-deleted .wbd-code", "els => els.map(e => e.textContent)")
        assert shown and shown[0] == removed[0] and "stablehlo." in removed[0]
        assert page.text_content(".wbd-head-l") == "canonicalize#1" and page.text_content(".wbd-head-r") == "cse#1"
        # the other way round was not diffed by the workbench: the page diffs it line by line
        pick(page, "cse#1", "canonicalize#1")
        assert "computed in this page" in page.text_content("#wb-diff-note")
        assert "inserted" in page.text_content(".wbd-stats")
        # the page's line diff walks both texts whole and in order, pairing only lines of one template
        check = page.evaluate("""([b, a]) => {
            const B = b.split('\\n'), A = a.split('\\n'), rows = window.wbReport.lineDiff(B, A);
            const left = [], right = [];
            let paired = 0, consistent = true;
            for (let r = 0; r < rows.length; r += 3) {
                if (rows[r] >= 0) left.push(rows[r]);
                if (rows[r + 1] >= 0) right.push(rows[r + 1]);
                if (rows[r] >= 0 && rows[r + 1] >= 0) {
                    paired++;
                    const t = (s) => s.replace(/%([A-Za-z_\\-]*)[\\w.$#:\\-]*/g, '%$1');
                    consistent &&= t(B[rows[r]]) === t(A[rows[r + 1]]) && (rows[r + 2] === 0) === (B[rows[r]] === A[rows[r + 1]]);
                }
            }
            const inOrder = (xs, n) => xs.length === n && xs.every((x, k) => x === k);
            return {whole: inOrder(left, B.length) && inOrder(right, A.length), paired, consistent};
        }""", ["\n".join(normalize(attention["cse#1"].text)), "\n".join(normalize(attention["canonicalize#1"].text))])
        assert check["whole"] and check["consistent"] and check["paired"] > 200
        # a stage row's "diff" button shows it against its parent
        page.click('tr[data-stage="xla:cse#1"] button.wb-pick')
        page.wait_for_function("document.documentElement.dataset.wbPair === 'xla:transpose-folding#1 \u2192 xla:cse#1'")
        assert errors == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_markup_in_a_stage_text_runs_nowhere_in_the_browser(browser, hostile_report):  # noqa: F811
    path, _ = hostile_report
    ctx, page, errors = open_report(browser, path)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        pick(page, "input", "cse#1")
        page.wait_for_timeout(300)
        left = page.text_content(".wbd-l")
        assert "// <script>window.__pwned=1</script>" in left and '"><img src=x onerror="window.__pwned=2">' in left
        page.hover(".wbd-l .wbd-row[data-t='b2']")  # the long attribute line gets its whole text as a title
        pick(page, "cse#1", "xla:optimized")
        pick(page, "input", "input")
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.images.length") == 0 and page.evaluate("document.scripts.length") == 3
        assert page.title().startswith(HOSTILE_TITLE)
        assert dialogs == [] and errors == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_a_failed_stage_picked_shows_its_error_in_the_viewer(browser, failed_report):  # noqa: F811
    path, ex = failed_report
    failed = ex.stages[-1]
    ctx, page, errors = open_report(browser, path)
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        pick(page, "stablehlo", failed.name)
        message = page.text_content(".wbd-msg")
        assert page.locator(".wbd-msg").is_visible() and f"stage {failed.name} failed" in message
        assert failed.error.splitlines()[0] in message
        pick(page, "stablehlo", "canonicalize#1")  # and back to a pair with texts
        assert not page.locator(".wbd-msg").is_visible() and page.locator(".wbd-l .wbd-row").count() > 0
        assert errors == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_with_javascript_off_the_static_parts_read(browser, attention, attention_report):  # noqa: F811
    ctx, page, _ = open_report(browser, attention_report, java_script_enabled=False)
    try:
        table = page.locator("table.wb-stages")
        assert table.is_visible()
        shown = table.inner_text()
        assert all(name in shown for name in attention.names)
        assert page.locator("#cost svg").is_visible() and page.locator("#graph svg").is_visible()
        assert page.locator("#cost table").is_visible() and page.locator("#runs table").first.is_visible()
        assert "needs JavaScript" in page.inner_text("#diff")
        assert page.locator("#wb-diff .wbd-row").count() == 0
    finally:
        ctx.close()


def test_the_wheel_ships_the_report_assets():
    """The page script and style are data files of workbench/assets/: pyproject.toml's package data
    must name each (tests/test_wheel.py builds the wheel and checks the widgets' files)."""
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = sorted(p.name for p in (ROOT / "workbench" / "assets").iterdir() if p.is_file())
    assert "report.js" in files and "report.css" in files
    assert all(any(fnmatch.fnmatch(f, g) for g in globs.get("workbench.assets", ())) for f in files), files
