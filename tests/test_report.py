"""The offline HTML report (``ex.report(path)``): one file with no URL in it, holding the view model
(``viewmodel.view_model``, source "report") as JSON that cannot break out of its ``<script>``, drawn by the
one set of components (``assets/views.js``, inlined) whose host answers a pair's diff from the diffs the
report carries (the workbench's, precomputed within ``ReportLimits``); with JavaScript off, the report's limits,
the user's lines and the graph still read. Report sizes are printed (``-s``), never asserted beyond sanity."""
import base64
import gzip
import hashlib
import html
import json
import pathlib
import re
import sys
from html.parser import HTMLParser

import jax
import jax.numpy as jnp
import pytest
from markupsafe import escape

import workbench as wb
from workbench import examples
from workbench.artifacts import report as report_module
from workbench.artifacts.viewmodel import validate_view, view_model

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A module whose text holds markup: comments (kept in the "input" stage as given), a string attribute
# (kept by every pass), and the title. The report must show all of it as text and run none of it.
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
HOSTILE_TITLE = '</script><script>window.__pwned=3</script>"><img src=x onerror="window.__pwned=4">'


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


def two_outputs(x, y):
    return {"out": jnp.tanh(x.T @ y).T * 2.0, "total": (x * 3.0).sum()}


@pytest.fixture(scope="module")
def edited():
    """An exploration with a pattern and an XLA pass off, a pass inserted by hand, and a run of two leaves."""
    ex = wb.explore(two_outputs, jax.random.normal(jax.random.PRNGKey(0), (8, 4)), jnp.ones((8, 6)))
    ex = ex.with_patterns(disable=["transpose_transpose"]).with_xla(disable=["algsimp"])
    ex = ex.with_pass(after=next(s.name for s in ex.pipeline_stages if s.group == "mlir"), pass_="cse")
    assert ex.run(repeat=2).check.passed
    return ex


@pytest.fixture(scope="module")
def edited_report(edited, tmp_path_factory):
    return edited.report(tmp_path_factory.mktemp("edited") / "edited.html")


class _Page(HTMLParser):
    """Every start tag with its attributes, each script's text, and the text outside <script> and <style>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.scripts, self._raw = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._raw = [tag, dict(attrs), ""]

    def handle_endtag(self, tag):
        if self._raw and self._raw[0] == "script":
            self.scripts.append((self._raw[1], self._raw[2]))
        self._raw = None

    def handle_data(self, data):
        if self._raw:
            self._raw[2] += data
        else:
            self.text.append(data)


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def script(page: _Page, ident: str) -> str:
    return next(body for attrs, body in page.scripts if attrs.get("id") == ident)


def model_of(text: str) -> dict:
    return json.loads(script(parse(text), "wb-model"))


def carried(text: str) -> dict:
    """The diffs the report carries (gzip + base64 of JSON)."""
    return json.loads(gzip.decompress(base64.b64decode(script(parse(text), "wb-diffs"))))


def text_of(data: dict, ident: int) -> str:
    runs = data["texts"][ident]
    return "\n".join(data["pool"][runs[r] + c] for r in range(0, len(runs), 2) for c in range(runs[r + 1]))


def section(text: str, ident: str) -> str:
    start = text.index(f'<section id="{ident}">')
    return text[start:text.index("</section>", start)]


# -- the file ------------------------------------------------------------------------------------------
def test_the_report_is_one_file_with_no_url_in_it_and_runs_only_its_own_script(attention_report):
    text = attention_report.read_text()
    assert not re.search(r"https?:|//cdn|\bwww\.", text, re.IGNORECASE)
    page = parse(text)
    links = [(tag, k, v) for tag, attrs in page.tags for k, v in attrs.items() if k in ("src", "href", "xlink:href")]
    assert all(v.startswith("#") for _, _, v in links), [x for x in links if not x[2].startswith("#")]
    assert not [t for t, _ in page.tags if t in ("link", "iframe", "img", "object", "embed")]
    assert [a.get("type") for a, _ in page.scripts] == ["application/json", "application/json", "text/plain", "module"]
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "'unsafe-inline'" not in csp.split("style-src")[0]
    module = page.scripts[-1][1]  # the only script that runs: the host, by its hash
    digest = base64.b64encode(hashlib.sha256(module.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}' blob:;" in csp
    views = json.loads(script(page, "wb-views"))  # the components, imported from a blob
    assert views and "mount" in views and views == (ROOT / "workbench" / "assets" / "views.js").read_text()


def test_the_inlined_model_is_the_view_model(attention, attention_report):
    model = model_of(attention_report.read_text())
    validate_view(model)
    first = report_module._first_pair(attention, attention.stages)
    # the view model, its cost that of every stage listed (ex.cost()'s, XLA's numbers with it)
    made = view_model(attention, *first, stages=attention.stages, source="report", runs=attention.history)
    assert model == {**made, "cost": model["cost"], "cost_note": model["cost_note"], "memory": model["memory"]}
    assert model["memory"]["peak_bytes"] == attention.memory().peak_bytes  # ex.memory()'s: test_memory_report
    assert [r[0] for r in model["cost"]["rows"]] == attention.names and "xla_flops" in model["cost"]["columns"]
    assert model["cost_note"].startswith("ex.cost(): ")
    assert model["source"] == "report" and [r["stage"] for r in model["stages"]] == attention.names
    assert (model["shown"]["left"], model["shown"]["right"]) == ("stablehlo", attention.default_run_stage().name)
    assert model["diff"]["runs"] == attention.diff(*first).runs()
    (run,) = model["runs"]
    check = attention.history[0].check
    assert run["check"]["passed"] and [l["path"] for l in run["check"]["leaves"]] == [l.path for l in check.leaves]


def test_without_javascript_the_limits_lines_and_graph_read(attention, attention_report):
    text = attention_report.read_text()
    view = text[text.index('<div id="wb-view">'):text.index('<p class="wb-note" id="wb-view-note">')]
    assert "<noscript>" in view and "needs JavaScript" in view  # the components draw the model's facts, once
    limits = html.unescape(re.search(r'<span id="wb-limits">(.*?)</span>', text).group(1))
    assert "characters of one stage's text" in limits and limits.endswith("every stage is embedded whole.")
    assert '<section id="cost">' not in text  # the view's cost section draws the model's cost
    final = attention.default_run_stage().name
    graph = section(text, "graph")
    assert graph.count("<svg") == 1 and f"Graph of {final}" in graph and "<text" in graph and 'class="node"' in graph
    assert "<script" not in graph  # the SVG is re-serialized drawing elements only
    assert "<table" in section(text, "lines") and "No run profile" in section(text, "time")


def test_the_carried_diffs_are_the_workbenchs(attention, attention_report):
    data = carried(attention_report.read_text())
    names = attention.names
    assert data["stages"] == names
    distinct = {s.text for s in attention.stages}  # every distinct text once: unchanged stages share their parent's
    assert len(set(data["stage_text"])) == len(distinct) < len(names)
    pairs = {(names[p[0]], names[p[1]]): p for p in data["pairs"]}
    assert all((s.parent, s.name) in pairs for s in attention.stages if s.parent)
    assert ("stablehlo", attention.default_run_stage().name) in pairs and "stablehlo" in data["note"]
    for a, b in [("canonicalize#1", "cse#1"), ("xla:fusion#1", "xla:cse#2"), ("stablehlo", "inline#1")]:
        d = attention.diff(a, b)
        p = pairs[(a, b)]
        assert (text_of(data, p[2]), text_of(data, p[3]), p[4]) == ("\n".join(d.before), "\n".join(d.after), d.runs())


def test_edits_toggles_and_runs_leaf_by_leaf_are_the_models(edited, edited_report):
    text = edited_report.read_text()
    model = model_of(text)
    assert model["toggles"]["patterns_disabled"] == ["transpose_transpose"] and model["toggles"]["xla_disabled"] == ["algsimp"]
    assert [e["kind"] for e in model["edits"]] == ["insert"] and [r["stage"] for r in model["stages"] if r["edit"]]
    assert [[l["path"] for l in r["check"]["leaves"]] for r in model["runs"]] == [["['out']", "['total']"]]
    assert model["edits"][0]["what"].startswith("cse inserted after ")


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
    them and the pair the diff and graph open on; the header names the stages between, and nothing of them
    is read, costed, embedded or put in the model (counted, not timed)."""
    from workbench.artifacts.report_texts import ReportLimits

    ex = wb.explore_text(HOSTILE.split("\n", 2)[2], pipeline=",".join(["canonicalize", "cse"] * 150))
    every = ex.stages
    assert len(every) > 300
    costed = []
    real_cost_table = report_module.cost_table

    def counted(ex_, stages=None, **kw):
        costed.append(len(stages) if stages is not None else len(ex_.stages))
        return real_cost_table(ex_, stages=stages, **kw)

    monkeypatch.setattr(report_module, "cost_table", counted)
    text = ex.report(tmp_path / "long.html", limits=ReportLimits(stages=40)).read_text()
    listed = [r["stage"] for r in model_of(text)["stages"]]
    final = ex.default_run_stage().name
    assert len(listed) <= 40 + 2 and listed[:20] == ex.names[:20] and listed[-20:] == ex.names[-20:]
    assert {*report_module._first_pair(ex, every), final} <= set(listed)  # the pair the view opens on, the graph's
    assert carried(text)["stages"] == listed  # only the stages listed are embedded and offered
    assert costed and max(costed) <= len(listed)  # only they are costed
    header = html.unescape(text[text.index("<header>"):text.index("</header>")])
    gaps = [int(n.replace(",", "")) for n in re.findall(r"<dt>not listed</dt><dd>([\d,]+) stages? not listed", header)]
    left = len(every) - len(listed)
    assert 1 <= len(gaps) <= 3 and sum(gaps) == left > 200
    assert f"#20 <code>{every[20].name}</code>" in header and f"ReportLimits(stages={len(every)})" in header
    assert "at most 40 stages are listed one by one" in header and f"{left} stages not listed" in header


def test_the_report_is_written_atomically(attention, tmp_path, monkeypatch):
    path = tmp_path / "r.html"
    path.write_text("an older report")

    def broken(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(report_module, "render_report", broken)
    with pytest.raises(RuntimeError):
        attention.report(path)
    assert path.read_text() == "an older report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]


# -- hostile text --------------------------------------------------------------------------------------
XSS = "</script><script>alert(1)</script>\"'&"


def xss(x):
    return jnp.tanh(x) * 2.0


xss.__name__ = xss.__qualname__ = XSS

# One op whose location is a script tag, which one-shot-bufferize cannot bufferize: its error quotes the
# location (MLIR prints the double quote as \22).
XSS_MODULE = """module @m {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> loc("</script><script>alert(1)</script>\\22'&")
    return %0 : tensor<4xf32>
  }
}
"""


@pytest.fixture(scope="module")
def hostile_reports(tmp_path_factory):
    """A module holding markup in its comments and an attribute, a function named like a script tag, and a pass
    whose error quotes one."""
    folder = tmp_path_factory.mktemp("hostile")
    text = wb.explore_text(HOSTILE, pipeline="cse", title=HOSTILE_TITLE)
    named = wb.explore(xss, jnp.ones((4,)), pipeline="canonicalize")
    failed = wb.explore_text(XSS_MODULE, pipeline="one-shot-bufferize", title="m")
    return {k: (ex, ex.report(folder / f"{k}.html")) for k, ex in
            (("text", text), ("named", named), ("failed", failed))}


def test_markup_in_names_errors_and_texts_is_only_ever_text(hostile_reports):
    quoted = "</script><script>alert(1)</script>\\22'&"  # the location, as the error quotes it
    for key, (ex, path) in hostile_reports.items():
        text = path.read_text()
        for raw in ("<script>alert", "<script>window", "<img", "onerror=\"", "<!--", "&amp;lt;", "&amp;#"):
            assert raw not in text, (key, raw)
        page = parse(text)
        assert len(page.scripts) == 4 and "img" not in [t for t, _ in page.tags]
        assert not [k for _, attrs in page.tags for k in attrs if k.startswith("on")]
        for ident in ("wb-model", "wb-views"):
            assert not re.search(r"[<>&]", script(page, ident))  # as \u003c and the like
        model = json.loads(script(page, "wb-model"))
        assert model["title"] == ex.spec.title and model == json.loads(json.dumps(model))
    named, failed, hostile = (hostile_reports[k] for k in ("named", "failed", "text"))
    text = named[1].read_text()
    assert f"<title>{escape(XSS)} \u2014 hlo-workbench report</title>" in text  # escaped once
    ex, path = failed
    assert ex.error is not None and quoted in str(ex.error) and ex.names[-1] == "one-shot-bufferize#1"
    model = model_of(path.read_text())
    assert quoted in model["error"]["message"] and quoted in model["stages"][-1]["error"]
    data = carried(path.read_text())
    assert data["stage_text"][-1] == -1  # a failed stage has no text
    ex, path = hostile
    data = carried(path.read_text())
    assert text_of(data, data["stage_text"][0]).startswith("// <script>window.__pwned=1</script>")


# -- in the browser --------------------------------------------------------------------------------------
def open_report(browser, path, width=1000, **context):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, **context)
    page = ctx.new_page()
    errors, dialogs = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    return ctx, page, errors, dialogs


FACTS = """() => {
  const all = (s) => [...document.querySelectorAll(s)];
  const root = document.querySelector('[data-hwb-view]'), toggles = document.querySelector('[data-hwb="toggles"]');
  const counts = document.querySelector('[data-hwb="diff-counts"]');
  return {source: root.dataset.source, stages: all('[data-hwb="stage"]').map((e) => [e.dataset.name, e.dataset.edit]),
          patterns: toggles.dataset.patternsDisabled, xla: toggles.dataset.xlaDisabled,
          edits: all('[data-hwb="edit"]').length, runs: all('[data-hwb="run"]').length,
          leaves: all('[data-hwb="leaf"]').map((e) => [e.dataset.path, e.dataset.passed]),
          counts: {pair: [counts.dataset.left, counts.dataset.right], state: counts.dataset.state,
                   n: ['changed', 'deleted', 'inserted', 'moved'].map((k) => Number(counts.dataset[k] || 0))}};
}"""


def kinds(runs: str) -> list[int]:
    """Rows changed, deleted, inserted and moved (a move counts where it left and where it arrived)."""
    n = {t: sum(int(c) for tag, c in re.findall(r"([=~\-+<>])(\d+)", runs) if tag == t) for t in "~-+<>"}
    return [n["~"], n["-"], n["+"], n["<"] + n[">"]]


@pytest.mark.slow
def test_the_report_at_1000px_shows_the_models_facts_and_answers_pairs_from_its_diffs(browser, edited, edited_report):
    model = model_of(edited_report.read_text())
    ctx, page, errors, dialogs = open_report(browser, edited_report)
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        facts = page.evaluate(FACTS)
        assert facts["source"] == "report"
        assert facts["stages"] == [[r["stage"], r["edit"]] for r in model["stages"]] and len(facts["stages"]) == len(edited)
        assert (facts["patterns"], facts["xla"]) == ("transpose_transpose", "algsimp") and facts["edits"] == 1
        check = edited.history[-1].check
        assert facts["runs"] == 1 and facts["leaves"] == [[l.path, "true"] for l in check.leaves]
        left, right = model["shown"]["left"], model["shown"]["right"]
        assert facts["counts"] == {"pair": [left, right], "state": "ok", "n": kinds(edited.diff(left, right).runs())}
        cost = page.locator('[data-hwb="cost"] .hwbv-cost-table tbody tr')  # every stage listed, by the component
        assert cost.count() == len(model["cost"]["rows"]) == len(edited)
        # a stage against its parent: from the diffs the report carries
        stage = next(s for s in edited.stages if s.group == "xla" and s.changed and s.parent)
        page.click(f'[data-hwb="stage"][data-name="{stage.name}"] .hwbv-link')
        page.wait_for_selector(f'[data-hwb="diff-counts"][data-right="{stage.name}"][data-state="ok"]', state="attached")
        assert page.evaluate(FACTS)["counts"]["n"] == kinds(edited.diff(stage.parent, stage.name).runs())
        # a pair the report did not precompute says so, and names the Python that makes it
        page.click(f'[data-hwb="stage"][data-name="{stage.name}"] .hwbv-pick-a')
        page.click(f'[data-hwb="stage"][data-name="{stage.parent}"] .hwbv-pick-b')
        page.wait_for_selector(f'[data-hwb="diff-counts"][data-left="{stage.name}"][data-state="none"]', state="attached")
        assert f'ex.diff("{stage.name}", "{stage.parent}")' in page.text_content('[data-hwb="diff"]')
        page.screenshot(path=str(edited_report.with_suffix(".png")))
        assert errors == [] and dialogs == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_hostile_text_runs_nowhere_and_without_javascript_the_report_says_why(browser, hostile_reports, edited,
                                                                             edited_report):
    ex, path = hostile_reports["text"]
    ctx, page, errors, dialogs = open_report(browser, path)
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        page.click('[data-hwb="stage"][data-name="cse#1"] .hwbv-link')
        page.wait_for_selector('[data-hwb="diff-counts"][data-right="cse#1"][data-state="ok"]', state="attached")
        assert "<script>window.__pwned=1</script>" in page.text_content('[data-hwb="diff"]')
        assert page.evaluate("window.__pwned") is None and page.evaluate("document.images.length") == 0
        assert page.evaluate("document.scripts.length") == 4 and page.title().startswith(HOSTILE_TITLE)
        assert page.text_content('[data-hwb="header"] .hwbv-title') == HOSTILE_TITLE  # drawn as text
        assert errors == [] and dialogs == []
    finally:
        ctx.close()
    ctx, page, _, _ = open_report(browser, edited_report, java_script_enabled=False)
    try:
        assert "needs JavaScript" in page.locator("#wb-view").inner_text()
        assert page.locator("#graph svg").is_visible() and page.locator("#wb-limits").is_visible()
    finally:
        ctx.close()


def test_the_wheel_ships_the_report_assets():
    """The host script and style are data files of workbench/assets/: pyproject.toml's package data
    must name each (tests/test_wheel.py builds the wheel and checks the widgets' files)."""
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = sorted(p.name for p in (ROOT / "workbench" / "assets").iterdir() if p.is_file())
    assert "reporthost.js" in files and "report.css" in files and not [f for f in files if f.endswith(".j2")]
    assert all(any(fnmatch.fnmatch(f, g) for g in globs.get("workbench.assets", ())) for f in files), files


# -- a comparison of two explorations, as one page ----------------------------------------------------------
@pytest.mark.slow
def test_a_comparison_page_is_the_comparison_model_drawn_by_the_compare_component(browser, tmp_path):
    """``hlo-workbench diff a.hlox b.hlox --html`` and a failed golden check write the comparison model (what the
    Compare tab draws) into a page the components draw; the check's verdict above it, the one fact only it has."""
    from workbench.analysis.diff.gates import Limits, judge
    from workbench.artifacts.comparison_model import comparison_model, validate_comparison
    from workbench.artifacts.comparison_page import write_comparison_page

    def grown(x, y):
        return {"out": jnp.tanh(x.T @ y).T * 2.0 + jnp.sin(x.T @ y).T, "total": (x * 3.0).sum()}

    args = (jax.random.normal(jax.random.PRNGKey(0), (8, 4)), jnp.ones((8, 6)))
    c = wb.compare_explorations(wb.explore(two_outputs, *args), wb.explore(grown, *args), labels=("golden", "now"))
    verdict = judge(c, Limits())  # no growth allowed: the sine's ops and flops fail it
    text = write_comparison_page(c, tmp_path / "c.html", verdict=verdict).read_text()
    model = model_of(text)
    validate_comparison(model)
    assert model == json.loads(json.dumps(comparison_model(c)))
    assert '<h2 id="wb-verdict">Check: failed' in text and text.count('data-ok="false"') == len(verdict.failed) > 0
    ctx, page, errors, dialogs = open_report(browser, tmp_path / "c.html")
    try:
        page.wait_for_selector("html[data-wb-ready='1']", timeout=30_000)
        rows = page.eval_on_selector_all('[data-hwb="compare-row"]', "els => els.map((e) => e.dataset.stage)")
        assert rows == [p.name for p in c.pairs] and page.locator('[data-hwb="module"]').count() == len(model["modules"])
        first = page.get_attribute("[data-hwb-comparison]", "data-first")
        assert first == (c.first_difference.name if c.first_difference else "")
        assert errors == [] and dialogs == []
    finally:
        ctx.close()
