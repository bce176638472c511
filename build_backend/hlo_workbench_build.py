"""hlo-workbench's build backend: setuptools.build_meta, with the JupyterLab extension built first.

pyproject.toml's data-files put the built extension (extensions/hlo-workbench-lab/labextension/) into
the wheel, under share/jupyter/labextensions/hlo-workbench-lab. Before setuptools collects them, the
wheel and editable hooks build that folder when it is missing or older than one of its sources
(``npm ci`` first when node_modules is missing or older than package-lock.json, then
``npm run build:prod``), so a wheel built from a fresh checkout or from the sdist has the extension.
The sdist carries the extension's sources (MANIFEST.in), never its builds. (setuptools' editable
wheels carry no data files, so an editable install serves the built folder through scripts/setup.sh's
link; build_editable still brings that folder up to date.)

The build needs Node.js and npm on PATH, and JupyterLab's core package (jupyterlab/staging in the
``jupyterlab`` Python package: build-labextension.mjs builds against it). It is found through
$JUPYTERLAB_CORE_PATH, else in the Python running this backend; when it is in neither, the
get_requires hooks ask for ``jupyterlab``, which pip's isolated build installs. With
--no-build-isolation the environment must have it (scripts/setup.sh installs it into .venv).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (hooks passed through unchanged)
    build_sdist,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
EXT = Path("extensions", "hlo-workbench-lab")
BUILT = EXT / "labextension" / "package.json"
# what the built extension is made of (scripts/setup.sh's list, and the settings schemas)
SOURCES = [EXT / p for p in ("src", "style", "schema", "package.json", "package-lock.json", "tsconfig.json",
                             "build-labextension.mjs", "build-views.mjs", "install.json")] \
    + [Path("workbench", "assets", name) for name in ("diffview.js", "diffview.css", "widgetkit.css")]
# the view components that build:prod bundles for the panel and the offline report (build-views.mjs): package
# data of workbench.assets, so the wheel ships them
VIEWS = [Path("workbench", "assets", name) for name in ("views.js", "editor.js", "views.css")]
JUPYTERLAB = "jupyterlab>=4,<5"
NODE_HELP = ("Install Node.js (18 or newer) and npm, e.g. on Debian: apt-get install nodejs npm "
             "(scripts/setup.sh does it, and builds the extension).")


class LabextensionBuildError(RuntimeError):
    """The JupyterLab extension could not be built for the wheel."""


def unfinished(root: Path) -> str | None:
    """What is missing from the built extension, or None when it is a whole build."""
    built = root / BUILT
    if not built.is_file():
        return f"{BUILT.as_posix()} is missing"
    try:  # the builder writes package.json at its start and again, with _build.load, at its end
        load = json.loads(built.read_text())["jupyterlab"]["_build"]["load"]
    except (ValueError, KeyError, TypeError):
        return f"{BUILT.as_posix()} is not a finished build"
    if not (built.parent / load).is_file():
        return f"{BUILT.as_posix()} names {load}, which is missing"
    return None


def stale(root: Path | None = None) -> str | None:
    """Why the built extension must be (re)built, or None when it is whole and newer than all of its sources."""
    root = root or ROOT
    if reason := unfinished(root):
        return reason
    for out in VIEWS:
        if not (root / out).is_file():
            return f"{out.as_posix()} is missing"
    oldest = min([BUILT, *VIEWS], key=lambda p: (root / p).stat().st_mtime)
    when = (root / oldest).stat().st_mtime
    for source in SOURCES:
        path = root / source
        for f in ([path] if path.is_file() else path.rglob("*") if path.is_dir() else []):
            if f.is_file() and f.stat().st_mtime > when:
                return f"{f.relative_to(root).as_posix()} is newer than {oldest.as_posix()}"
    return None


def core_path() -> str | None:
    """JupyterLab's core package (jupyterlab/staging): $JUPYTERLAB_CORE_PATH, else this Python's jupyterlab."""
    if os.environ.get("JUPYTERLAB_CORE_PATH"):
        return os.environ["JUPYTERLAB_CORE_PATH"]
    spec = importlib.util.find_spec("jupyterlab")
    if spec is None or not spec.origin:
        return None
    staging = Path(spec.origin).parent / "staging"
    return str(staging) if (staging / "package.json").is_file() else None


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    print(f"hlo-workbench build: {' '.join(cmd)}  (in {cwd})", flush=True)
    code = subprocess.run(cmd, cwd=cwd, env=env).returncode
    if code:
        raise LabextensionBuildError(f"`{' '.join(cmd)}` in {cwd} exited {code}: the JupyterLab extension "
                                     "was not built (its output is above)")


def build_labextension(root: Path | None = None) -> bool:
    """Build extensions/hlo-workbench-lab/labextension when stale(); True when it built."""
    root = root or ROOT
    reason = stale(root)
    if reason is None:
        return False
    ext = root / EXT
    if not (ext / "package.json").is_file():
        raise LabextensionBuildError(f"{reason}, and there are no extension sources to build it from ({EXT}/package.json)")
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
        raise LabextensionBuildError(f"building hlo-workbench's JupyterLab extension ({reason}) needs {missing}, "
                                     f"not found on PATH. {NODE_HELP}")
    major = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True)
    if major.returncode or not major.stdout.strip().isdigit() or int(major.stdout) < 18:
        raise LabextensionBuildError(f"Node.js {major.stdout.strip() or '?'} at {node} is too old to build the "
                                     f"JupyterLab extension. {NODE_HELP}")
    core = core_path()
    if core is None:
        raise LabextensionBuildError(
            "building hlo-workbench's JupyterLab extension needs JupyterLab's core package: install "
            f"{JUPYTERLAB!r} into the build environment (pip's isolated build does; with --no-build-isolation "
            "it must be installed already, as scripts/setup.sh does in .venv), or set JUPYTERLAB_CORE_PATH "
            "to a jupyterlab/staging folder")
    env = {**os.environ, "JUPYTERLAB_CORE_PATH": core}
    print(f"hlo-workbench build: building the JupyterLab extension: {reason}", flush=True)
    installed = ext / "node_modules" / ".package-lock.json"  # npm rewrites it on every install
    if not installed.is_file() or installed.stat().st_mtime < (ext / "package-lock.json").stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund"], ext, env)
    _run([npm, "run", "build:prod"], ext, env)
    if problem := unfinished(root) or next((f"{p.as_posix()} is missing" for p in VIEWS if not (root / p).is_file()), None):
        raise LabextensionBuildError(f"`npm run build:prod` ended, but {problem}")
    for p in [BUILT, *VIEWS]:
        (root / p).touch()  # the build's time stamp, as scripts/setup.sh's
    return True


def _requires(base: list[str]) -> list[str]:
    return base + ([JUPYTERLAB] if stale() is not None and core_path() is None else [])


def get_requires_for_build_wheel(config_settings=None):
    return _requires(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _requires(_setuptools.get_requires_for_build_editable(config_settings))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build_labextension()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    build_labextension()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
