"""The one set of view components (extensions/hlo-workbench-lab/src/components, built by esbuild into
workbench/assets/views.js and views.css) drawing a real view model in real Chromium, as every host draws it:
a page that inlines views.js and the model (workbench.artifacts.viewmodel.view_model) and mounts it. The
exploration: a small function with a ``jax.debug.print``, a pattern switched off, a hand edit and a run. The
page's data attributes (the contract every host shares) must say what Python says: the stages and the
edited one, the toggles, the edit, the diff's counts by kind (ex.diff's rows), each check leaf's verdict,
the printed output; a pair the model does not carry is asked of the host or said to be missing; no label or
button is cut at 1000 px, and nothing scrolls the page sideways."""
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.artifacts.stage_diffs import carried
from workbench.artifacts.viewmodel import validate_view, view_model

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "extensions" / "hlo-workbench-lab"
ASSETS = ROOT / "workbench" / "assets"
OUTPUTS = [ASSETS / "views.js", ASSETS / "views.css"]
SOURCES = [EXT / "src" / "components", EXT / "build-views.mjs", EXT / "package-lock.json"] + \
    [ASSETS / n for n in ("diffview.js", "diffview.css", "widgetkit.css")]
PATTERN = "add_simplify"
EDITED = "canonicalize#1"
KINDS = ("changed", "deleted", "inserted", "moved")
NO_HOST_DIFF = "this view carries only the pair shown; open it in the panel"
# what a user reads as a control's or a label's name: none may be cut
LABELS = ("button, label, summary, select, th, .hwbv-label, .hwbv-badge, .hwbv-chip, .wbd-head, .wbd-stats, "
          ".wbd-pos")


def _stale() -> bool:
    if not all(p.is_file() for p in OUTPUTS):
        return True
    built = min(p.stat().st_mtime for p in OUTPUTS)
    files = [f for s in SOURCES for f in ([s] if s.is_file() else s.rglob("*"))]
    return any(f.is_file() and f.stat().st_mtime > built for f in files)


@pytest.fixture(scope="module")
def views() -> dict[str, str]:
    """views.js and views.css, built here (as scripts/setup.sh builds them) when missing or stale."""
    if _stale():
        if not shutil.which("node") or not (EXT / "node_modules" / "esbuild").is_dir():
            pytest.skip("workbench/assets/views.js is missing or stale and there is no node/esbuild to build it: "
                        "run scripts/setup.sh")
        subprocess.run(["node", "build-views.mjs"], cwd=EXT, check=True, timeout=120)
    return {"js": OUTPUTS[0].read_text(), "css": OUTPUTS[1].read_text()}


def f(x):
    y = jnp.sin(x) * 2.0 + jnp.cos(x)
    jax.debug.print("sum {s}", s=y.sum())
    return {"a": y * y, "b": (y + 1.0).sum()}


@pytest.fixture(scope="module")
def explored():
    """The explorations: as traced, with PATTERN off, and that with EDITED's constant 2 made 3 by hand and
    run (its check fails on both leaves; the program printed once)."""
    ex = wb.explore(f, jnp.arange(8.0))
    off = ex.with_patterns(disable=[PATTERN])
    text = off.stage(EDITED).text
    assert "2.000000e+00" in text
    edited = off.with_text(EDITED, text.replace("2.000000e+00", "3.000000e+00"))
    run = edited.run(repeat=3)
    return {"ex": ex, "off": off, "edited": edited, "run": run}


def _json(value) -> str:
    """``value`` as JavaScript inside a <script>: JSON, with "</" written so that no text ends the script."""
    return json.dumps(value).replace("</", "<\\/")


def _page(browser, views, model, width: int, pairs=None):
    """A page that inlines views.js and ``model`` and mounts it; with ``pairs`` (Python's diffs by
    "left\\0right") a host whose diff() answers from them, without them no host."""
    html = f"""<!doctype html><html><head><meta charset="utf-8"><style>{views['css']}</style></head>
<body style="margin:0;padding:8px"><div id="view"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{_json(views['js'])}], {{type: "text/javascript"}})));
const pairs = {_json(pairs)};
window.acted = [];
const host = pairs && {{
  diff: async (left, right) => pairs[left + "\\u0000" + right] ?? {{left, right, note: "not made"}},
  act: (action, payload) => window.acted.push([action, payload]),
}};
window.mounted = views.mount(document.getElementById("view"), {_json(model)}, host || undefined);
document.documentElement.dataset.ready = "1";
</script></body></html>"""
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_content(html)
    page.wait_for_selector("html[data-ready='1']", timeout=30_000)
    return page, errors


FACTS = """() => {
  const root = document.querySelector('[data-hwb-view]');
  const q = (s) => Array.from(root.querySelectorAll(s));
  const shown = (e) => e.checkVisibility() && e.getBoundingClientRect().height > 0;
  const t = root.querySelector('[data-hwb="toggles"]');
  const c = root.querySelector('[data-hwb="diff-counts"]');
  return {
    source: root.dataset.source,
    stages: q('[data-hwb="stage"]').map((e) => [e.dataset.name, e.dataset.edit]),
    patterns_disabled: t.dataset.patternsDisabled, xla_disabled: t.dataset.xlaDisabled,
    edits: q('[data-hwb="edit"]').map((e) => [e.dataset.kind, e.dataset.stage, e.textContent]),
    counts: {state: c.dataset.state, left: c.dataset.left, right: c.dataset.right, changed: c.dataset.changed,
             deleted: c.dataset.deleted, inserted: c.dataset.inserted, moved: c.dataset.moved},
    rows: document.querySelector('.wbd').dataset.rows,
    runs: q('[data-hwb="run"]').map((e) => [e.dataset.stage, e.dataset.passed, e.dataset.stale]),
    leaves: q('[data-hwb="leaf"]').map((e) => [e.dataset.path, e.dataset.passed, shown(e)]),
    printed: q('[data-hwb="printed"]').map((e) => [e.textContent, shown(e)]),
    stale: q('[data-hwb="stale"]').map((e) => [e.textContent, shown(e)]),
    note: root.querySelector('[data-hwb="diff"] .hwbv-note').textContent,
  };
}"""

CUT = """(selector) => Array.from(document.querySelectorAll('[data-hwb-view] :is(' + selector + ')'))
  .filter((e) => e.checkVisibility() && e.scrollWidth > e.clientWidth)
  .map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${e.textContent.slice(0, 60)} (${e.scrollWidth} > ${e.clientWidth})`)"""


def _counts(d) -> dict[str, str]:
    n = Counter(kind for _, _, kind in d.rows())
    return {k: str(n[k]) for k in KINDS}


def test_views_js_is_built_as_an_es_module_exporting_mount(views):
    assert "mount" in views["js"] and "export" in views["js"]
    assert ".hwbv" in views["css"] and ".wbd" in views["css"]  # the components' style with the diff viewer's


@pytest.mark.parametrize("width", [1000, 1920])
def test_a_real_model_is_drawn_with_the_facts_python_made(browser, views, explored, shots, width):
    ex, run = explored["edited"], explored["run"]
    model = view_model(ex, runs=[run], source="report")
    validate_view(model)
    left, right = model["shown"]["left"], model["shown"]["right"]
    assert right == EDITED  # the first changed MLIR stage: the one edited by hand
    page, errors = _page(browser, views, model, width)
    try:
        page.wait_for_function("document.querySelector('.wbd')?.dataset.rows !== undefined")
        facts = page.evaluate(FACTS)
        assert facts["source"] == "report"
        assert [n for n, _ in facts["stages"]] == [s.name for s in ex.stages]
        assert dict(facts["stages"])[EDITED] == "text" and [n for n, e in facts["stages"] if e] == [EDITED]
        assert facts["patterns_disabled"] == PATTERN and facts["xla_disabled"] == ""
        assert [e[:2] for e in facts["edits"]] == [["text", EDITED]]
        assert facts["edits"][0][2].startswith(model["edits"][0]["what"])
        d = ex.diff(left, right)
        assert facts["counts"] == {"state": "ok", "left": left, "right": right, **_counts(d)}
        assert facts["rows"] == str(len(d.rows()))
        assert d.rows() and int(facts["counts"]["changed"]) + int(facts["counts"]["deleted"]) > 0
        # the run: its stage, its check failed leaf by leaf as Python's check says, and what it printed
        assert facts["runs"] == [[run.stage, "false", "false"]]
        assert [(l[0], l[1]) for l in facts["leaves"]] == [(leaf.path, str(leaf.passed).lower())
                                                          for leaf in run.check.leaves]
        assert [l.path for l in run.check.leaves] == ["['a']", "['b']"]
        assert all(shown for *_, shown in facts["leaves"])
        printed = model["runs"][0]["printed"]
        assert printed.startswith("sum ") and printed.count("sum ") == 1, printed  # once, not per timing repeat
        assert facts["printed"] == [[printed, True]]
        assert facts["stale"] == []
        # nothing a user reads as a name is cut, and nothing scrolls the page sideways
        assert page.evaluate(CUT, LABELS) == []
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        shots(page.locator("[data-hwb-view]"), f"views-bundle-{width}")
        assert errors == []
    finally:
        page.close()


def test_a_pair_the_model_does_not_carry_is_asked_of_the_host_or_said_missing(browser, views, explored):
    ex, run = explored["edited"], explored["run"]
    model = view_model(ex, runs=[run])
    left, right = model["shown"]["left"], model["shown"]["right"]
    other = "cse#1"
    pairs = {f"{left}\u0000{other}": {"left": left, "right": other, **carried(ex.diff(left, other))}}
    # without host.diff: the view says it carries only the pair shown
    page, errors = _page(browser, views, model, 1000)
    try:
        page.click(f'[data-hwb="stage"][data-name="{other}"] .hwbv-pick-b')
        facts = page.evaluate(FACTS)
        assert facts["counts"]["state"] == "unavailable" and facts["counts"]["right"] == other
        assert facts["counts"]["changed"] is None and NO_HOST_DIFF in facts["note"]
        # a click on a stage's name shows it against its parent: the pair the model carries
        page.click(f'[data-hwb="stage"][data-name="{right}"] .hwbv-link')
        assert page.evaluate(FACTS)["counts"] == {"state": "ok", "left": left, "right": right,
                                                  **_counts(ex.diff(left, right))}
        assert errors == []
    finally:
        page.close()
    # with host.diff: the view shows Python's diff of the pair, and tells the host the pair picked
    page, errors = _page(browser, views, model, 1000, pairs)
    try:
        page.click(f'[data-hwb="stage"][data-name="{other}"] .hwbv-pick-b')
        page.wait_for_function(f"document.querySelector('[data-hwb=\"diff-counts\"]').dataset.right === {other!r}"
                               " && document.querySelector('[data-hwb=\"diff-counts\"]').dataset.state === 'ok'")
        facts = page.evaluate(FACTS)
        assert facts["counts"] == {"state": "ok", "left": left, "right": other, **_counts(ex.diff(left, other))}
        assert page.evaluate("window.acted") == [["pair", {"left": left, "right": other}]]
        assert page.evaluate(f"""document.querySelector('[data-hwb="stage"][data-name="{other}"] .hwbv-pick-b')
                                 .getAttribute('aria-pressed')""") == "true"
        assert errors == []
    finally:
        page.close()


def test_update_draws_a_newer_model_and_a_stale_run_says_why(browser, views, explored):
    """update(model): the view of the exploration as the user changed it (the pattern back on, no edit);
    the run made before shows as stale, with Python's reason; printed output is text, never markup."""
    first = view_model(explored["edited"], runs=[explored["run"]])
    page, errors = _page(browser, views, first, 1000)
    try:
        run = explored["run"]
        newer = view_model(explored["ex"], runs=[run])
        reason = newer["runs"][0]["stale"]
        assert reason, "a run of the edited program is stale in a view of the program before the edit"
        newer["runs"][0]["printed"] = '<img src=x onerror="window.pwned = 1">sum\n'
        failed = newer["stages"][-1]  # as a stage that failed is listed (its error, the exploration's error)
        failed["error"] = "XlaRuntimeError: INTERNAL: <b>no</b> such thing\nsecond line"
        newer["error"] = {"stage": failed["stage"], "message": failed["error"]}
        validate_view(newer)
        page.evaluate("(m) => window.mounted.update(m)", newer)
        facts = page.evaluate(FACTS)
        assert [n for n, _ in facts["stages"]] == [s.name for s in explored["ex"].stages]
        assert facts["patterns_disabled"] == "" and facts["edits"] == []
        assert facts["runs"] == [[run.stage, "false", "true"]]
        assert facts["stale"] == [[f"stale: {reason}", True]]
        assert facts["printed"] == [[newer["runs"][0]["printed"], True]]
        assert page.evaluate("window.pwned") is None and page.locator("[data-hwb-view] img").count() == 0
        row = page.locator('[data-hwb="stage"][data-error="true"]')
        assert row.count() == 1 and row.get_attribute("data-name") == failed["stage"]
        assert "failed" in row.inner_text()
        assert page.locator(".hwbv-stage-error").inner_text() == "XlaRuntimeError: INTERNAL: <b>no</b> such thing"
        error = page.locator('[data-hwb="error"]')
        assert error.get_attribute("data-stage") == failed["stage"] and failed["error"] in error.inner_text()
        assert page.locator("[data-hwb-view] b").count() == 0
        page.evaluate("window.mounted.dispose()")
        assert page.locator("[data-hwb-view]").count() == 0
        assert errors == []
    finally:
        page.close()
