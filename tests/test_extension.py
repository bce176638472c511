"""The JupyterLab extension (extensions/hlo-workbench-lab): its tokenizer tests (vitest, on real StableHLO,
Enzyme-JaX and XLA HLO texts), JupyterLab listing it as enabled, and a real browser opening a .mlir and
an .hlo file in JupyterLab's editor, highlighted with the diff view's token classes and colours.

scripts/setup.sh installs Node.js, runs `npm ci` and builds the extension; these tests use what it made.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXT = ROOT / "extensions" / "hlo-workbench-lab"
FIXTURES = EXT / "test" / "fixtures"
JUPYTER = pathlib.Path(sys.executable).parent / "jupyter"
CHROMIUM = "/usr/bin/chromium"
OUTPUT = ROOT / "test-output"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
NO_COLOR = re.compile(r"\x1b\[[0-9;]*m")


def test_the_tokenizer_unit_tests_pass():
    """`npm test` in the extension: vitest runs test/*.test.ts against the shared tokenizer and the
    CodeMirror language."""
    npm = shutil.which("npm")
    assert npm, "npm is missing: scripts/setup.sh installs Node.js and npm"
    assert (EXT / "node_modules" / ".bin" / "vitest").exists(), "run scripts/setup.sh (npm ci) first"
    p = subprocess.run([npm, "test", "--", "--reporter=verbose"], cwd=EXT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "NO_COLOR": "1", "CI": "1"})
    out = NO_COLOR.sub("", p.stdout + p.stderr)
    assert p.returncode == 0, out[-6000:]
    summary = re.search(r"^\s*Tests\s+(.*)$", out, re.M)
    assert summary and "failed" not in summary.group(1), out[-6000:]
    assert int(re.search(r"(\d+) passed", summary.group(1)).group(1)) >= 7, summary.group(0)
    for name in ("attention.stablehlo.mlir", "attention.enzyme.mlir", "attention.xla-optimized.hlo"):
        assert (FIXTURES / name).stat().st_size > 10_000, name


def test_jupyterlab_lists_the_extension_enabled_and_ok():
    p = subprocess.run([str(JUPYTER), "labextension", "list"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NO_COLOR": "1"})
    out = NO_COLOR.sub("", p.stdout + p.stderr)
    assert p.returncode == 0, out
    line = next((l for l in out.splitlines() if "hlo-workbench-lab" in l), None)
    assert line is not None, f"hlo-workbench-lab is not listed:\n{out}"
    assert re.search(r"hlo-workbench-lab v\S+ enabled OK", line), line
    assert "disabled" not in line, line


# -- a real browser: JupyterLab on localhost, Debian's chromium, playwright (as tests/test_browser.py) ---------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("chromium is missing: scripts/setup.sh --test installs it (Debian's chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a free localhost port, with its own config, data and settings dirs, serving a
    folder with real program texts: an Enzyme-JaX stage as .mlir and XLA's optimized HLO as .hlo."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "files"
    root.mkdir()
    shutil.copy(FIXTURES / "attention.enzyme.mlir", root / "attention.mlir")
    shutil.copy(FIXTURES / "attention.xla-optimized.hlo", root / "attention.hlo")
    settings = home / "settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = _free_port(), uuid.uuid4().hex
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        [str(JUPYTER), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", f"--LabApp.user_settings_dir={settings}",
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
        try:
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


def _open(browser, lab, name: str):
    """JupyterLab with only `name` open in its editor; the page and the editor's content locator."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(60_000)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{lab['base']}/lab/tree/{name}?reset&token={lab['token']}")
    content = page.locator(".jp-FileEditor:visible .cm-content")
    content.wait_for()
    return page, content, requests


def _colour(page, locator) -> str:
    return locator.first.evaluate("e => getComputedStyle(e).color")


def _status_bar_says(page, text: str) -> None:
    """Wait (up to 20 s) until JupyterLab's status bar shows `text` (the editor's language)."""
    page.locator(".jp-FileEditor:visible .cm-content").click()  # the focused editor's items show
    try:
        page.wait_for_function("t => document.querySelector('#jp-main-statusbar')?.innerText.includes(t)", arg=text,
                               timeout=20_000)
    except Exception:
        bar = page.locator("#jp-main-statusbar")
        pytest.fail(f"the status bar does not say {text!r}: {bar.first.inner_text() if bar.count() else '(none)'}")


def _diffview_colour(page, cls: str) -> str:
    """The colour JupyterLab's page gives a token of class `cls` outside any editor, as the diff view shows it."""
    return page.evaluate("""cls => {
        const s = document.createElement('span'); s.className = 'h-' + cls; s.textContent = 'x';
        document.body.appendChild(s); const c = getComputedStyle(s).color; s.remove(); return c; }""", cls)


@pytest.mark.slow
def test_jupyterlab_highlights_mlir_and_hlo_files_with_the_diff_views_classes(browser, lab):
    OUTPUT.mkdir(exist_ok=True)
    page, content, requests = _open(browser, lab, "attention.mlir")
    try:
        content.locator(".h-op").first.wait_for()
        ops = content.locator(".h-op").all_inner_texts()
        assert "func.func" in ops and "stablehlo.constant" in ops and "stablehlo.dot_general" in ops, ops
        types = content.locator(".h-type").all_inner_texts()
        assert "tensor<2x32x64xf32>" in types and "tensor<f32>" in types, types
        assert {"%cst", "%0", "%arg10"} <= set(content.locator(".h-ssa").all_inner_texts())
        assert "@main" in content.locator(".h-sym").all_inner_texts()
        assert {"jax.uses_shape_polymorphism", "contracting_dims"} <= set(content.locator(".h-attr").all_inner_texts())
        assert {"module", "dense"} <= set(content.locator(".h-kw").all_inner_texts())
        page.screenshot(path=str(OUTPUT / "extension_mlir_editor.png"))
        print(f"\nscreenshot: {OUTPUT / 'extension_mlir_editor.png'}")
        # the language is the extension's (the status bar names it), and the colours are the diff view's
        _status_bar_says(page, "mlir")
        for cls in ("op", "type", "ssa", "attr"):
            token = content.locator(f".h-{cls}")
            assert _colour(page, token) == _diffview_colour(page, cls), cls
        # an op is bold, as in the diff view, where JupyterLab's own keyword style would agree anyway
        assert content.locator(".h-op").first.evaluate("e => getComputedStyle(e).fontWeight") in ("600", "700")
    finally:
        page.close()
    assert all(u.startswith(lab["base"]) or u.startswith(("data:", "blob:")) for u in requests), \
        sorted({u for u in requests if not u.startswith(lab["base"])})

    page, content, _ = _open(browser, lab, "attention.hlo")
    try:
        content.locator(".h-type").first.wait_for()
        assert "HloModule" in content.locator(".h-kw").all_inner_texts()
        assert "f32[64,128]{1,0}" in content.locator(".h-type").all_inner_texts()
        assert "/*index=5*/" in content.locator(".h-com").all_inner_texts()
        assert "entry_computation_layout" in content.locator(".h-attr").all_inner_texts()
        _status_bar_says(page, "xla-hlo")
        page.screenshot(path=str(OUTPUT / "extension_hlo_editor.png"))
        print(f"screenshot: {OUTPUT / 'extension_hlo_editor.png'}")
    finally:
        page.close()
