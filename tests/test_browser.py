"""The panel in a real browser: JupyterLab served on localhost, Debian's chromium driven by playwright.

A user runs a ``%%hlo`` cell, picks two stages, switches a pattern off, runs a stage on a device;
and a 50,000-line module scrolls in the diff view (render and frame times are printed, never
asserted). Screenshots go to the test's tmp dir and to test-output/ for a person to look at.
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid

import nbformat
import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
JUPYTER = pathlib.Path(sys.executable).parent / "jupyter"
OUTPUT = ROOT / "test-output"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]

TRANSPOSES = """\
%%hlo -o ex
def f(x, y):
    return jnp.dot(x.T, y.T).T
f(jnp.ones((8, 16)), jnp.ones((4, 8)))"""

# A real 50,000-line module: the gradient of a 4000-layer MLP as JAX lowers it. Renamed from @main,
# the module gets no XLA stages (compiling it would take minutes); its MLIR stages are the subject.
BIG_MODULE = """\
import jax, jax.numpy as jnp
import workbench as wb
import workbench.views.widgets

def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w) + x
    return (x ** 2).sum()

ws = [jnp.full((8, 8), 0.01) for _ in range(4000)]
text = jax.jit(jax.grad(mlp)).lower(ws, jnp.ones((4, 8))).as_text(debug_info=False).replace("@main(", "@mlp_grad(")
big = wb.explore_text(text, pipeline="canonicalize,cse", title="mlp_grad")
print("lines:", {s.name: s.lines for s in big.stages})"""

BIG_PANEL = 'wb.panel(big, name="big", left="input", right="cse#1")'


# -- what the tests need: chromium, playwright, a JupyterLab server ------------------------------------
def _apt_install(package: str) -> None:
    if os.geteuid() != 0:
        pytest.fail(f"{package} is missing and this user cannot install it: run `apt-get install -y {package}` as root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(["apt-get", "install", "-y", package], env=env).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, check=True)
        subprocess.run(["apt-get", "install", "-y", package], env=env, check=True)


@pytest.fixture(scope="module")
def chromium() -> str:
    if not os.path.exists(CHROMIUM):
        _apt_install("chromium")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "playwright"], check=True)
        from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(path: pathlib.Path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a free localhost port, with its own config, data and settings dirs."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    root.mkdir()
    _notebook(root / "test.ipynb", "%load_ext workbench\nimport jax.numpy as jnp", TRANSPOSES)
    _notebook(root / "big.ipynb", BIG_MODULE, BIG_PANEL)
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
        yield {"base": base, "token": token, "root": root}
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


@pytest.fixture
def shots(tmp_path):
    """save(page_or_locator, name): a screenshot in tmp_path and in test-output/."""
    OUTPUT.mkdir(exist_ok=True)

    def save(target, name: str) -> pathlib.Path:
        path = tmp_path / f"{name}.png"
        target.screenshot(path=str(path))
        shutil.copy(path, OUTPUT / path.name)
        print(f"screenshot: {OUTPUT / path.name}")
        return path

    return save


def open_notebook(browser, lab, name: str):
    page = browser.new_page(viewport={"width": 1500, "height": 1250})
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


def tab(panel, title: str) -> None:
    panel.locator(".lm-TabBar-tab", has_text=title).first.click()


def pane_text(panel, side: str) -> str:
    return panel.locator(f".wbd-{side} .wbd-rows").inner_text()


# -- the tests ---------------------------------------------------------------------------------------------
def test_the_panel_in_jupyterlab(browser, lab, shots):
    page = open_notebook(browser, lab, "test.ipynb")
    try:
        run_cell(page, 0)
        run_cell(page, 1)
        panel = page.locator(".wb-panel")
        panel.locator('.wbs-row[data-name="xla:optimized"]').wait_for(timeout=180_000)
        names = panel.locator(".wbs-row").evaluate_all("rows => rows.map(r => r.dataset.name)")
        assert names[:2] == ["jaxpr", "stablehlo"] and "enzyme-hlo-patterns#1" in names and "xla:optimized" in names
        assert panel.locator(".wbs-row.s-changed").count() >= 3 and panel.locator(".wbs-row.s-unchanged").count() >= 3
        page.wait_for_function("document.querySelector('.wb-status')?.textContent.includes('✓')")

        # pick two stages: the first pattern stage on the right, "stablehlo" on the left (shift-click)
        panel.locator('.wbs-row[data-name="xla:optimized"]').click()
        panel.locator(".wbd-head-r", has_text="xla:optimized").wait_for()
        panel.locator('.wbs-row[data-name="enzyme-hlo-patterns#1"]').click()
        panel.locator('.wbs-row[data-name="stablehlo"]').click(modifiers=["Shift"])
        panel.locator(".wbd-head-l", has_text="stablehlo").wait_for()
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#1").wait_for()
        deleted = panel.locator(".wbd-l .wbd-row.k-deleted").all_inner_texts()
        assert sum("stablehlo.transpose" in t for t in deleted) == 3
        assert "stablehlo.transpose" not in pane_text(panel, "r") and "stablehlo.dot_general" in pane_text(panel, "r")
        # highlighted: ops, SSA values, types
        assert "stablehlo.dot_general" in panel.locator(".wbd-r .h-op").all_inner_texts()
        assert panel.locator(".wbd-r .h-ssa").count() > 0 and panel.locator(".wbd-r .h-type").count() > 0
        assert "stablehlo.transpose 3→0 (-3)" in panel.locator(".wb-delta").inner_text()
        assert 'ex.diff("stablehlo", "enzyme-hlo-patterns#1")' in panel.locator(".wb-python pre").first.inner_text()
        shots(panel, "panel_diff")

        # the final MLIR stage against stablehlo, then switch dot_transpose off
        panel.locator('.wbs-row[data-name="enzyme-hlo-patterns#3"]').click()
        panel.locator('.wbs-row[data-name="stablehlo"]').click(modifiers=["Shift"])
        panel.locator(".wbd-head-l", has_text="stablehlo").wait_for()
        panel.locator(".wbd-head-r", has_text="enzyme-hlo-patterns#3").wait_for()
        assert "stablehlo.transpose" not in pane_text(panel, "r")
        final = panel.locator('.wbs-row[data-name="enzyme-hlo-patterns#3"] .wbs-lines')
        lines_before = final.inner_text()
        tab(panel, "Passes")
        search = panel.locator(".wbt-search").first
        search.fill("dot_transpose")
        item = panel.locator('.wbt-item[data-name="dot_transpose"]').first
        item.locator("input").click()
        page.wait_for_function("document.querySelector('.wbd-r .wbd-rows').textContent.includes('stablehlo.transpose')",
                               timeout=120_000)
        assert 'ex = ex.with_patterns(disable=["dot_transpose"])' in panel.locator(".wb-python pre").first.inner_text()
        assert "1 pattern off" in panel.locator(".wb-header").inner_text()
        assert int(final.inner_text()) > int(lines_before)  # the final stage kept some transposes
        panel.locator('.wbt-item.wbt-changed[data-name="dot_transpose"]').wait_for()
        assert not panel.locator('.wbt-item[data-name="dot_transpose"] input').first.is_checked()
        search.fill("transpose")
        shots(panel, "panel_passes")

        # run the final stage on cpu:0
        tab(panel, "Run")
        device = panel.locator(".widget-dropdown:has(label:text-is('device')) select:visible").first
        device.select_option("cpu:0")
        panel.locator("button.widget-button:visible", has_text="Run").click()
        panel.locator(".wb-chip.wb-pass", has_text="passed").wait_for(timeout=120_000)
        result = panel.locator(".wb-result").first.inner_text()
        assert "cpu:0" in result and "median" in result and "IQR" in result and "float32" in result
        python = panel.locator(".wb-python pre").first.inner_text()
        assert python == 'ex.run("enzyme-hlo-patterns#3", device="cpu:0", repeat=20)'
        shots(panel, "panel_run")

        # the cost and graph tabs fill when opened
        tab(panel, "Cost")
        panel.locator(".widget-output img").first.wait_for(timeout=120_000)
        assert "flops" in panel.locator(".wb-table:visible").first.inner_text()
        shots(panel, "panel_cost")
        tab(panel, "Graph")
        panel.locator(".wb-graph svg, .widget-html:has-text('not available')").first.wait_for(timeout=60_000)
        shots(panel, "panel_graph")

        # which patterns apply to stablehlo: a progress indicator while the scan runs, then the list
        tab(panel, "Analyze")
        panel.locator("button.widget-button:visible", has_text="Find applicable patterns").click()
        panel.locator(".wb-running progress").wait_for(timeout=30_000)
        panel.locator(".wb-result", has_text="patterns change").wait_for(timeout=180_000)
        assert "dot_transpose" in panel.locator(".wb-result", has_text="patterns change").inner_text()
        shots(panel, "panel_analyze")
    finally:
        page.close()


def test_a_50000_line_module_scrolls_in_the_diff_view(browser, lab, shots):
    page = open_notebook(browser, lab, "big.ipynb")
    try:
        run_cell(page, 0)
        page.locator(".jp-Cell-outputArea", has_text="lines:").first.wait_for(timeout=300_000)
        lines = page.locator(".jp-Cell-outputArea", has_text="lines:").first.inner_text()
        print(lines)
        start = time.perf_counter()
        run_cell(page, 1)
        view = page.locator(".wbd").first
        page.wait_for_function("Number(document.querySelector('.wbd')?.dataset.rows) > 50000", timeout=300_000)
        cell_to_rows = time.perf_counter() - start
        rows = int(view.get_attribute("data-rows"))
        browser_ms = float(view.get_attribute("data-render-ms"))
        assert view.locator(".wbd-l .wbd-row").count() < 200  # virtualized: only the rows in view
        assert "input" in view.locator(".wbd-head-l").inner_text()

        frames = page.evaluate("""async () => {
            const pane = document.querySelector('.wbd-l');
            const other = document.querySelector('.wbd-r');
            const scroll = async (step, n) => {  // step px per frame, n frames: the time between frames
                const deltas = [];
                let last = performance.now();
                for (let k = 0; k < n; k++) {
                    pane.scrollTop += step;
                    await new Promise(r => requestAnimationFrame(r));
                    const now = performance.now();
                    deltas.push(now - last);
                    last = now;
                }
                return deltas;
            };
            const gentle = await scroll(54, 300);  // 3 rows a frame: wheel scrolling
            const deltas = await scroll(540, 300);  // 30 rows a frame: a fast fling
            const jumps = [];
            for (let k = 0; k < 40; k++) {  // dragging the scrollbar: far jumps
                pane.scrollTop = (k * 7919 % 97) / 97 * (pane.scrollHeight - pane.clientHeight);
                const t = performance.now();
                await new Promise(r => requestAnimationFrame(r));
                jumps.push(performance.now() - t);
            }
            await new Promise(r => requestAnimationFrame(r));
            const top = Math.floor(pane.scrollTop / 18);
            const first = Number(pane.querySelector('.wbd-row .wbd-ln').textContent);
            return {gentle, deltas, jumps, synced: pane.scrollTop === other.scrollTop, top,
                    painted: pane.querySelectorAll('.wbd-row').length, first,
                    height: pane.scrollHeight};
        }""")
        j = frames["jumps"]
        print(f"\n50,000-line diff: {rows} rows; cell run -> rows painted {cell_to_rows:.2f} s "
              f"(kernel: diff + send; browser: split, index, first paint {browser_ms:.0f} ms)")
        for what, d in (("3 rows", frames["gentle"]), ("30 rows", frames["deltas"])):
            print(f"scrolling 300 frames of {what}: frame time median {statistics.median(d):.1f} ms, "
                  f"p95 {sorted(d)[int(0.95 * len(d))]:.1f} ms, max {max(d):.1f} ms")
        print(f"40 far jumps: median {statistics.median(j):.1f} ms, max {max(j):.1f} ms to the next frame")
        assert frames["synced"] and 0 < frames["painted"] < 200 and frames["height"] >= rows * 18
        assert frames["top"] > 0

        # next change, changes only, and the wheel scrolls both sides together
        view.locator(".wbd-next").click()
        assert "change " in view.locator(".wbd-pos").inner_text()
        view.locator(".wbd-fold").check()
        assert view.locator(".wbd-folded").count() > 0 or view.locator(".wbd-row.k-deleted").count() > 0
        view.locator(".wbd-fold").uncheck()
        view.locator(".wbd-r").hover()
        page.mouse.wheel(0, 5000)
        page.wait_for_function("document.querySelector('.wbd-l').scrollTop > 0 && "
                               "document.querySelector('.wbd-l').scrollTop === document.querySelector('.wbd-r').scrollTop")
        shots(page.locator(".wb-panel").first, "panel_50000_lines")

        # picking another pair re-sends the module: time from click to painted rows
        start = time.perf_counter()
        page.locator('.wbs-row[data-name="canonicalize#1"]').click()
        page.locator(".wbd-head-r", has_text="canonicalize#1").wait_for(timeout=120_000)
        page.wait_for_function("document.querySelector('.wbd').dataset.rows !== undefined && "
                               "document.querySelector('.wbd-head-r').textContent === 'canonicalize#1'")
        print(f"picking canonicalize#1: click -> rows painted {time.perf_counter() - start:.2f} s")
    finally:
        page.close()


def test_the_highlighter_and_the_change_marks_in_the_browser(browser):
    """The diff view's tokenizer, loaded from its file into a blank page: the text survives, classes fit."""
    src = (ROOT / "workbench" / "views" / "widgets" / "diffview.js").read_text()
    page = browser.new_page()
    try:
        out = page.evaluate("""async (src) => {
            const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
            const m = await import(url);
            const lines = [
              '    %3 = stablehlo.dot_general %1, %0, contracting_dims = [0] x [1] : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>',
              'module @jit_f attributes {mhlo.num_partitions = 1 : i32} {',
              '  %dot.3 = f32[4,16]{1,0} dot(f32[4,8]{1,0} %p.1, f32[8,16]{1,0} %p.2), lhs_contracting_dims={1} // note',
              '  %6 = "stablehlo.add"(%a) {x = #stablehlo<comparison_direction GT>} : (tensor<4x!stablehlo.token>) -> tensor<i1>',
            ];
            const toks = lines.map(l => m.tokenize(l));
            const a = m.tokenize(lines[0]), b = m.tokenize(lines[0].replace('%1, %0', '%0, %1'));
            return {
              roundtrip: toks.every((t, k) => t.map(x => x[0]).join('') === lines[k]),
              classes: toks.map(t => t.filter(x => x[1]).map(x => x[1] + ':' + x[0])),
              range: m.changedRange(a, b).map(k => k),
              marked: m.toHtml(a, ...m.changedRange(a, b).slice(0, 2)),
              escaped: m.toHtml(m.tokenize('x <script> & y')),
            };
        }""", src)
    finally:
        page.close()
    assert out["roundtrip"]
    c0, c1, c2, c3 = out["classes"]
    assert c0[:3] == ["ssa:%3", "op:stablehlo.dot_general", "ssa:%1"]
    assert "type:tensor<8x4xf32>" in c0 and "attr:contracting_dims" in c0
    assert c1[:4] == ["kw:module", "sym:@jit_f", "kw:attributes", "attr:mhlo.num_partitions"]
    assert "type:f32[4,16]{1,0}" in c2 and "op:dot" in c2 and "com:// note" in c2
    assert 'str:"stablehlo.add"' in c3 and "attr:#stablehlo<comparison_direction GT>" in c3
    assert "type:tensor<4x!stablehlo.token>" in c3
    marked = out["marked"]  # "%1, %0" became "%0, %1": those tokens are marked, nothing before them
    assert '<span class="h-ssa h-mark">%1</span>' in marked and '<span class="h-ssa h-mark">%0</span>' in marked
    assert marked.index("h-mark") > marked.index("stablehlo.dot_general") and marked.count("h-ssa h-mark") == 2
    assert "h-mark" not in marked[marked.index("contracting_dims"):]
    assert "<script>" not in out["escaped"] and "&lt;script&gt; &amp; y" in out["escaped"]
