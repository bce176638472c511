"""What the browser tests share: the JupyterLab server they all talk to (tests/conftest.py starts one per
session with ``serve_lab``), the notebooks they write into its folder, and the steps a user takes in a
page (open a notebook, run a cell, wait for the panel, pick a tab). A plain module, imported as
``tests.browser_pages``: no test file imports another test file."""
import contextlib
import json
import math
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"  # Debian's, installed by scripts/setup.sh --test
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
JUPYTER = pathlib.Path(sys.executable).parent / "jupyter"
OUTPUT = ROOT / "test-output"  # screenshots, for a person to look at
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}}


def write_notebook(path: pathlib.Path, *cells: str) -> None:
    """A notebook of code cells, for the python3 kernel, without outputs."""
    nb = nbformat.v4.new_notebook(metadata=KERNEL)
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def saved_notebook(path: pathlib.Path, done, seconds: float = 60):
    """``path`` read once ``done(notebook)`` holds, polling while JupyterLab saves it: the server writes
    the file in place, so a read can meet it empty or cut off (read as not saved yet)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            nb = nbformat.read(path, as_version=4)
        except ValueError:  # nbformat's NotJSONError and json's JSONDecodeError: the file is being written
            nb = None
        if nb is not None and done(nb):
            return nb
        assert time.monotonic() < deadline, f"{path.name} was not saved as expected within {seconds:.0f} s"
        time.sleep(0.5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_lab(home: pathlib.Path, root: pathlib.Path):
    """A JupyterLab server serving ``root`` on a free localhost port, with its config, data and settings dirs
    under ``home``; yields its base URL, token, root and log file, and shuts it (and its kernels) down after.
    The same server answers Notebook 7's pages (/notebooks/..., /edit/...): the ``notebook`` package is a
    server extension that every Jupyter server of this environment loads."""
    settings = home / "settings"
    # no "official Jupyter news?" toast over the panel
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = _free_port(), uuid.uuid4().hex
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        [str(JUPYTER), "lab", "--no-browser", "--ServerApp.open_browser=False", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=", f"--LabApp.user_settings_dir={settings}",
         f"--LabApp.workspaces_dir={home / 'workspaces'}"] + (["--allow-root"] if os.geteuid() == 0 else []),
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if server.poll() is not None:
                pytest.fail(f"jupyter lab exited with {server.returncode}:\n{(home / 'server.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer in 90 s:\n{(home / 'server.log').read_text()}")
            time.sleep(0.3)
        yield {"base": base, "token": token, "root": root, "log": home / "server.log"}
    finally:
        try:  # the server shuts its kernels down with it
            req = urllib.request.Request(f"{base}/api/shutdown", method="POST",
                                         headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(req, timeout=10).close()
            server.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()


def api(lab, path: str, method: str = "GET"):
    """The server's REST API: ``path``'s JSON answer (None for an empty one)."""
    req = urllib.request.Request(f"{lab['base']}{path}", method=method,
                                 headers={"Authorization": f"token {lab['token']}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        body = r.read()
    return json.loads(body) if body else None


def shut_down_kernels(lab) -> None:
    """End every session and kernel the server holds (tests leave theirs when they close their pages)."""
    for s in api(lab, "/api/sessions"):
        api(lab, f"/api/sessions/{s['id']}", "DELETE")
    for k in api(lab, "/api/kernels"):
        api(lab, f"/api/kernels/{k['id']}", "DELETE")


def open_notebook(browser, lab, name: str, width: int = 1500):
    page = browser.new_page(viewport={"width": width, "height": 1250})
    page.set_default_timeout(60_000)
    page.goto(f"{lab['base']}/lab/tree/{name}?reset&token={lab['token']}")  # reset: only this notebook open
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.wait_for()
    # the kernel is up when the status bar says so
    page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
    page.keyboard.press("Control+b")  # close the file browser: the notebook gets the width
    return page


def run_cell(page, index: int) -> None:
    """Click into cell ``index``'s editor and press Shift+Enter, as a user does."""
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(index).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")


def show_panel(page, timeout: int = 180_000, status_timeout: int | None = None):
    """Run the notebook's first two cells (set-up, then the %%hlo cell) and wait until the panel lists
    the XLA stages and its status line says the last job ended; the panel's locator."""
    run_cell(page, 0)
    run_cell(page, 1)
    panel = page.locator(".wb-panel")
    stage(panel, "xla:optimized").wait_for(timeout=timeout)
    page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓')",
                           **({} if status_timeout is None else {"timeout": status_timeout}))
    return panel


def tab(panel, title: str) -> None:
    panel.locator(".lm-TabBar-tab", has_text=title).first.click()


def stage(panel, name: str):
    """The row of stage ``name`` in the panel's stage list (the view components': [data-hwb="stage"], data-name,
    data-edit, data-group)."""
    return panel.locator(f'.wb-stages [data-hwb="stage"][data-name="{name}"]')


def pick(panel, name: str, side: str = "right") -> None:
    """Pick stage ``name`` in the stage list as a user does: "right", a click on its name (it against its parent);
    "left" or "B", its A or B button (that side only)."""
    row = stage(panel, name)
    if side == "right":
        row.locator(".hwbv-link").click()
    else:
        row.locator(".hwbv-pick-a" if side == "left" else ".hwbv-pick-b").click()


def pane_text(panel, side: str) -> str:
    return panel.locator(f".wbd-{side} .wbd-rows").inner_text()


def side_by_side(panel) -> None:
    """Pick the diff's side-by-side layout, as a user does (auto may choose unified at this width)."""
    panel.locator(".wbd-mode").first.select_option("split")
    panel.locator('.wbd[data-mode="split"]').first.wait_for()


def settle(page) -> None:
    """A few frames: JupyterLab lays out after a resize, then the ResizeObservers run."""
    page.evaluate("() => new Promise(r => { let n = 4; const f = () => --n ? requestAnimationFrame(f) : r(); f(); })")


# The Graph tab as a user reads it: the stage its picker shows, the zoom, the size of the drawn labels on screen
# (each SVG text's font size times the drawing's scale, and its box's height) and whether the legend fits.
GRAPH_READ = """panel => {
    const el = panel.querySelector('.wbg'), s = el.querySelector('.wbg-view svg'), legend = el.querySelector('.wbg-legend');
    const k = s.getBoundingClientRect().width / s.viewBox.baseVal.width;  // px on screen per user unit
    const texts = [...s.querySelectorAll('text')].filter(t => t.getBoundingClientRect().height > 0);
    const picker = panel.querySelector('.wb-graph select'), lb = legend.getBoundingClientRect();
    const pb = panel.getBoundingClientRect();
    return {picked: picker.options[picker.selectedIndex].text.replace(/\u00a0/g, ' '), zoom: el.querySelector('.wbg-scale').textContent,
            scale: +el.dataset.scale, opened: el.dataset.opened, start: el.dataset.start || '', texts: texts.length,
            font: Math.min(...texts.map(t => parseFloat(t.getAttribute('font-size')) * k)),
            height: Math.min(...texts.map(t => t.getBoundingClientRect().height)),
            legend: legend.innerText, cut: [legend, ...legend.children].filter(e => e.scrollWidth > e.clientWidth + 1)
                                                .map(e => [e.textContent.slice(0, 60), e.scrollWidth, e.clientWidth]),
            inside: lb.width > 0 && lb.left >= pb.left - 1 && lb.right <= pb.right + 1};
}"""


def check_graph(panel, width: int, picked: str, first: str) -> dict:
    """The Graph tab draws the stage its picker shows (``picked``; the legend's first line starts ``first``), every
    label at 9 px or more on screen, the zoom said in the toolbar, the legend inside the panel and none of it cut."""
    g = panel.evaluate(GRAPH_READ)
    print(f"{width} px: the graph opened {g['opened']} at {g['zoom']}, its smallest label {g['font']:.1f} px")
    assert g["picked"] == picked and g["legend"].startswith(first), (width, g["picked"], g["legend"][:80])
    assert g["texts"] > 0 and g["font"] >= 9 and g["height"] >= 9, (width, g)
    assert g["zoom"] == f"{math.floor(g['scale'] * 100 + 0.5)} %"  # as JavaScript's Math.round (94.5: 95)
    assert g["inside"] and not g["cut"], (width, g["cut"])
    return g


# The facts a view of an exploration shows, read from its data attributes (src/components: the same in every
# host: the panel's saved view, the report, the .hlox viewer, each side of the Compare tab), and the same facts
# as Python has them: a browser test compares the two.
VIEW_FACTS = """root => {
    const all = s => [...root.querySelectorAll(s)];
    const t = root.querySelector('[data-hwb="toggles"]'), c = root.querySelector('[data-hwb="diff-counts"]');
    const counts = c && c.dataset.state === 'ok'
        ? Object.fromEntries(['changed', 'deleted', 'inserted', 'moved'].map(k => [k, +c.dataset[k]])) : null;
    return {source: root.dataset.source,
            stages: all('[data-hwb="stage"]').map(e => [e.dataset.name, e.dataset.edit]),
            patterns_disabled: t ? t.dataset.patternsDisabled : null, xla_disabled: t ? t.dataset.xlaDisabled : null,
            edits: all('[data-hwb="edit"]').map(e => [e.dataset.kind, e.dataset.stage]),
            pair: c ? [c.dataset.left, c.dataset.right] : null, diff_state: c ? c.dataset.state : null, counts,
            runs: all('[data-hwb="run"]').length,
            leaves: all('[data-hwb="leaf"]').map(e => [e.dataset.path, e.dataset.passed === 'true'])};
}"""


def view_facts(root) -> dict:
    """What the view under ``root`` (a locator of its ``[data-hwb-view]``) shows, by its data attributes."""
    return root.evaluate(VIEW_FACTS)


def diff_counts(diff) -> dict:
    """The rows of each kind a structural diff (``ex.diff(a, b)``) has, as the views count them."""
    from collections import Counter

    kinds = Counter(kind for _, _, kind in diff.rows())
    return {k: kinds[k] for k in ("changed", "deleted", "inserted", "moved")}


def exploration_facts(ex, runs=None) -> dict:
    """The facts of ``view_facts`` as Python has them for Exploration ``ex`` (``runs``: the runs its view lists,
    default ``ex.history``), the pair and counts left out (they depend on the pair shown: ``diff_counts``)."""
    runs = list(ex.history if runs is None else runs)
    return {"stages": [[s.name, s.edit] for s in ex.stages],
            "patterns_disabled": ",".join(sorted(ex.spec.selection.disabled)),
            "xla_disabled": ",".join(ex.spec.xla_disabled),
            "edits": [[e.kind, e.stage] for e in ex.edits], "runs": len(runs),
            "leaves": [[l.path, bool(l.passed)] for r in runs if r.check for l in r.check.leaves]}


# A program whose check fails under Reactant's no_nan (it replaces a NaN it is fed by zero), so that a run in the
# panel offers "Find where it drifts" (tests/test_browser_drift.py, tests/test_browser_layout.py)
DRIFT_CELL = """\
def clean(x, w):
    x = jnp.where(jnp.isnan(x), 0.0, x)
    return jnp.tanh(x @ w).sum(0)

xs = jnp.arange(32.0).reshape(4, 8).at[1, 2].set(jnp.nan)
ex = wb.explore(clean, xs, jnp.ones((8, 3)) / 8, no_nan=True)
wb.panel(ex)"""


def run_in_panel(panel, passed: bool) -> None:
    """The Run tab's Run button clicked, as a user does, until a run whose check ``passed`` (or failed) shows."""
    tab(panel, "Run")
    panel.locator('[data-hwb="run-go"]').click()
    panel.locator(f'[data-hwb="run"][data-passed="{str(passed).lower()}"]').first.wait_for(timeout=120_000)

# -- what a user does in the panel (tests/test_browser_saved.py, tests/test_browser_four_ways.py) ------------------
def idle(page) -> None:
    """The panel's last job has ended (its status line says how)."""
    page.wait_for_function("() => { const s = document.querySelector('.wb-panel .wb-status');"
                           " return s && /\u2713|\u2716/.test(s.textContent) && !/running|…$/.test(s.textContent); }",
                           timeout=180_000, polling=200)


SWITCHES = ("pattern-toggle", "xla-toggle")  # the data-hwb of the Passes tab's switches, by list


def switch(panel, name: str, index: int = 0):
    """The switch of ``name`` in the Passes tab's list ``index`` (0: patterns, 1: XLA passes; the tab shown), found
    by that list's search box as a user does: its label, [data-hwb=...] with data-name and data-on."""
    box = panel.locator(".hwbv-tl").nth(index)
    box.locator(".hwbv-tl-search").fill(name)
    return box.locator(f'[data-hwb="{SWITCHES[index]}"][data-name="{name}"]')


def toggle_off(panel, index: int, name: str, page) -> None:
    """Switch ``name`` off in the Passes tab's list ``index`` (see ``switch``), once the panel shows it off."""
    switch(panel, name, index).locator("input").click()
    panel.locator(f'[data-hwb="{SWITCHES[index]}"][data-name="{name}"][data-on="false"]').wait_for(timeout=180_000)
    idle(page)


def edit_b(panel, page) -> None:
    """Stage B's text changed by hand (a comment line added at its end) in the panel's editor (CodeMirror, the
    view component "editor") and applied."""
    tab(panel, "Diff")
    panel.locator(".wb-edit-toggle").click()
    editor = panel.locator('[data-hwb="editor"] .cm-content')
    editor.wait_for(timeout=30_000)
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n// changed by hand in the panel")
    panel.locator('[data-hwb="editor"] .hwbv-editor-apply').click()
    panel.locator('.wb-stages [data-hwb="stage"][data-edit="text"]').first.wait_for(timeout=180_000)
    idle(page)


# a view model mounted by a host without a kernel (the saved view, the .hlox viewer, the report): the components
# built into workbench/assets/views.js, in a page of their own
_SAVED = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body style="margin:0;padding:8px"><div id="view"></div><script type="module">
const views = await import(URL.createObjectURL(new Blob([{js}], {{type: "text/javascript"}})));
views.mount(document.getElementById("view"), {model});
document.documentElement.dataset.ready = "1";
</script></body></html>"""


def saved_view_page(browser, model: dict, width: int = 1280, height: int = 1000):
    """A new page of ``browser`` drawing ``model`` (a view model, as a saved notebook holds it) with the built
    components, once they said they are ready. The caller closes it."""
    from workbench.views.widgets.component import views_module

    js, css = views_module()
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_content(_SAVED.format(css=css, js=json.dumps(js).replace("</", "<\\/"),
                                   model=json.dumps(model).replace("</", "<\\/")))
    page.wait_for_selector("html[data-ready='1']", timeout=30_000)
    return page


def saved_model_after(ex, tab_title: str) -> dict:
    """The view model a saved notebook keeps of ``ex``'s panel once its tab ``tab_title`` was opened and its work done
    (the panel made here, without a browser, and closed)."""
    from workbench.artifacts.viewmodel import MIME
    from workbench.views.widgets import Panel

    p = Panel(ex, background=False)
    try:
        p.tabs.selected_index = list(p.tabs.titles).index(tab_title)
        p.wait()
        return p._shown().bundle()[MIME]
    finally:
        p.close()
