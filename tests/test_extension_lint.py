"""The JupyterLab extension's code follows the extension template's conventions: ESLint
(extensions/hlo-workbench-lab/eslint.config.mjs: typescript-eslint's recommended rules) reports nothing and
Prettier (its .prettierrc) would change nothing, in the files of CHECKED. `npm run lint` in the extension
fixes what the two can; `npm run lint:check` is this check over everything they cover.

scripts/setup.sh installs Node.js and runs `npm ci`; these tests use what it installed.
"""
import os
import shutil
import subprocess

import pytest

from tests.browser_pages import ROOT

EXT = ROOT / "extensions" / "hlo-workbench-lab"
# What is checked, from the repository root: what `npm run lint:check` covers (the extension's folder, its
# build outputs and dependencies left out by .gitignore and .prettierignore, and workbench/assets' JavaScript).
CHECKED = ["extensions/hlo-workbench-lab", "workbench/assets/*.js"]
IGNORES = {"prettier": ["--ignore-path", str(ROOT / ".gitignore"), "--ignore-path", str(EXT / ".prettierignore")]}


def _check(tool: str, *args: str) -> None:
    exe = EXT / "node_modules" / ".bin" / tool
    if not shutil.which("node") or not exe.exists():
        pytest.skip(f"no node or no {tool} in the extension's node_modules: run scripts/setup.sh")
    p = subprocess.run([str(exe), *args, *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NO_COLOR": "1"})
    assert p.returncode == 0, f"{tool} {' '.join(args)}: (`npm run lint` fixes what it can)\n{p.stdout}{p.stderr}"


@pytest.mark.subprocess  # node
def test_eslint_reports_nothing():
    _check("eslint", "--config", str(EXT / "eslint.config.mjs"), "--max-warnings=0", "--no-warn-ignored")  # JSON, Markdown


@pytest.mark.subprocess
def test_prettier_would_change_nothing():
    _check("prettier", "--config", str(EXT / ".prettierrc"), *IGNORES["prettier"], "--check")
