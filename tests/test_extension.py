"""The JupyterLab extension (extensions/hlo-workbench-lab): its tokenizer tests (vitest, on real StableHLO,
Enzyme-JaX and XLA HLO texts), JupyterLab listing it as enabled, and a real browser opening a .mlir and
an .hlo file in JupyterLab's editor, highlighted with the diff view's token classes and colours.

scripts/setup.sh installs Node.js, runs `npm ci` and builds the extension; these tests use what it made.
"""
import os
import re
import shutil
import subprocess

import pytest

from tests.browser_pages import JUPYTER, OUTPUT, ROOT

EXT = ROOT / "extensions" / "hlo-workbench-lab"
FIXTURES = EXT / "test" / "fixtures"
NO_COLOR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.subprocess  # npm, vitest
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


@pytest.mark.subprocess
def test_jupyterlab_lists_the_extension_enabled_and_ok():
    p = subprocess.run([str(JUPYTER), "labextension", "list"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NO_COLOR": "1"})
    out = NO_COLOR.sub("", p.stdout + p.stderr)
    assert p.returncode == 0, out
    line = next((l for l in out.splitlines() if "hlo-workbench-lab" in l), None)
    assert line is not None, f"hlo-workbench-lab is not listed:\n{out}"
    assert re.search(r"hlo-workbench-lab v\S+ enabled OK", line), line
    assert "disabled" not in line, line


# -- a real browser: the session's JupyterLab and Chromium (tests/conftest.py) ------------------------------
@pytest.fixture(scope="module")
def program_files(lab_server):
    """Real program texts in the server's folder: an Enzyme-JaX stage as .mlir and XLA's optimized HLO as .hlo."""
    shutil.copy(FIXTURES / "attention.enzyme.mlir", lab_server["root"] / "attention.mlir")
    shutil.copy(FIXTURES / "attention.xla-optimized.hlo", lab_server["root"] / "attention.hlo")


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
def test_jupyterlab_highlights_mlir_and_hlo_files_with_the_diff_views_classes(browser, lab, program_files):
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
