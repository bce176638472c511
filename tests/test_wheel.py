"""The wheel is complete: built from this checkout and installed into a fresh virtual environment, its
``hlo-workbench`` runs a built-in example from any folder (the examples live inside the package).

The fresh environment borrows the dependencies (jax, jaxlib, enzyme-ad: about 1.5 GB) from the
environment running the tests instead of downloading them: a ``.pth`` file in its site-packages names
ours. A path line in a ``.pth`` file is only appended to ``sys.path``; the ``.pth`` files inside that
folder are not processed, so our editable install of workbench (a finder loaded by a ``.pth``) stays
inactive there, and the fresh environment's own site-packages comes first.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

ROOT = Path(__file__).resolve().parent.parent
# Left out of the source copy: VCS data, environments, and build outputs (a stale build/ leaks into a wheel).
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                    "test-output", "node_modules", ".ipynb_checkpoints")
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
ENV["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

PROBE = """
import json, sys, importlib.metadata as md
import workbench, workbench.examples
print(json.dumps({"path": sys.path, "workbench": workbench.__file__, "examples": workbench.examples.__file__,
                  "dist": str(md.distribution("hlo-workbench").locate_file("")),
                  "editable": [m for m in sys.modules if m.startswith("__editable__")]
                              + [type(f).__module__ for f in sys.meta_path if "editable" in type(f).__module__]}))
"""


def sh(*cmd, **kw) -> str:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV, timeout=600, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p.stdout


def builds_offline() -> bool:
    """Whether this environment has a setuptools that builds wheels by itself (>= 70.1), so no download is needed."""
    try:
        major, minor = (int(x) for x in re.findall(r"\d+", metadata.version("setuptools"))[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1)


def build_wheel(tmp: Path) -> Path:
    src, dist = tmp / "src", tmp / "dist"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCE)
    isolation = ["--no-build-isolation", "--no-index"] if builds_offline() else []  # else pip fetches the backend
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src)
    (wheel,) = dist.glob("hlo_workbench-*.whl")
    return wheel


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_venv_and_runs_a_builtin_example_from_any_folder(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = [p.relative_to(ROOT).as_posix() for ext in ("*.js", "*.css") for p in (ROOT / "workbench/views/widgets").glob(ext)]
    examples = [p.relative_to(ROOT).as_posix() for p in (ROOT / "workbench/examples").glob("*.py")]
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    missing = {"workbench/examples/attention.py", *examples, *assets} - names
    assert not missing, f"the wheel lacks {sorted(missing)}"

    ours = list(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))  # this venv's site-packages
    ours_before = {p: sorted(x.name for x in Path(p).glob("*hlo_workbench*")) for p in ours}
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    paths = json.loads(sh(py, "-c", "import json, sysconfig; print(json.dumps(sysconfig.get_paths()))"))
    site = Path(paths["purelib"])
    (site / "_test_wheel_deps.pth").write_text("# the test environment's packages, as plain paths\n"
                                               + "".join(f"{p}\n" for p in ours))
    report = tmp_path / "install.json"
    sh(py, "-m", "pip", "install", "-q", "--no-index", "--no-input", "--report", report, wheel)
    installed = [i["metadata"]["name"] for i in json.loads(report.read_text())["install"]]
    assert installed == ["hlo-workbench"]  # every dependency was already satisfied, checked against the metadata
    assert ours_before == {p: sorted(x.name for x in Path(p).glob("*hlo_workbench*")) for p in ours}  # ours untouched

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = json.loads(sh(py, "-c", PROBE, cwd=elsewhere))
    for key in ("workbench", "examples", "dist"):
        assert Path(probe[key]).is_relative_to(site) and not Path(probe[key]).is_relative_to(ROOT), probe[key]
    assert not probe["editable"]
    assert str(site) in probe["path"] and all(p in probe["path"] for p in ours)
    assert probe["path"].index(str(site)) < min(probe["path"].index(p) for p in ours)
    assert not any(Path(p).resolve() == ROOT for p in probe["path"] if p)  # nor the checkout

    out = sh(Path(paths["scripts"]) / "hlo-workbench", "report", "attention", cwd=elsewhere)
    assert "enzyme-hlo-patterns#1" in out and "stablehlo.dot_general" in out and "Final MLIR stage" in out

    # installing the wheel installed the JupyterLab extension: this environment's JupyterLab lists it
    # (from the environment's own share/jupyter/labextensions, which only the wheel can have filled)
    labext = Path(paths["data"]) / "share" / "jupyter" / "labextensions" / "hlo-workbench-lab"
    assert (labext / "package.json").is_file() and (labext / "install.json").is_file()
    listed = subprocess.run([str(py), "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True,
                            env={**ENV, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "NO_COLOR": "1"},
                            cwd=elsewhere, timeout=120)
    text = listed.stdout + listed.stderr
    assert str(labext.parent) in text, text
    assert re.search(r"hlo-workbench-lab v\S+ \S*enabled\S* \S*OK\S* \(python, hlo-workbench\)", text), text


LABEXT = "hlo_workbench-0.1.0.data/data/share/jupyter/labextensions/hlo-workbench-lab/"  # the data-files route
BUILT = ROOT / "extensions" / "hlo-workbench-lab" / "labextension"  # scripts/setup.sh builds it


@pytest.mark.slow
def test_the_wheel_ships_the_prebuilt_jupyterlab_extension_under_1_mb(tmp_path):
    """The built extension (package.json, install.json, static/*.js with the remote entry) is in the wheel,
    where an installer puts it into share/jupyter/labextensions/hlo-workbench-lab; the bundle is small and
    fetches nothing from elsewhere."""
    assert (BUILT / "package.json").is_file(), "the extension is not built: run scripts/setup.sh"
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        infos = {i.filename: i for i in z.infolist()}
        ours = {n[len(LABEXT):]: i for n, i in infos.items() if n.startswith(LABEXT)}
        assert {"package.json", "install.json"} <= set(ours), sorted(ours)
        scripts = {n: i.file_size for n, i in ours.items() if n.startswith("static/") and n.endswith(".js")}
        assert any(n.startswith("static/remoteEntry.") for n in scripts), sorted(ours)
        built = {p.relative_to(BUILT).as_posix() for p in BUILT.rglob("*") if p.is_file()}
        assert built <= set(ours), f"the wheel lacks {sorted(built - set(ours))}"
        meta = json.loads(z.read(LABEXT + "package.json"))
        install = json.loads(z.read(LABEXT + "install.json"))
        assert meta["name"] == "hlo-workbench-lab" and meta["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")
        assert (LABEXT + meta["jupyterlab"]["_build"]["load"]) in infos
        assert install["packageName"] == "hlo-workbench" and install["packageManager"] == "python"
        code = "".join(z.read(LABEXT + n).decode() for n in scripts)
    size = sum(scripts.values())
    print(f"\nthe JupyterLab extension's bundle: {len(scripts)} scripts, {size} bytes ({size / 1024:.1f} KiB)")
    assert size < 1_000_000
    # the bundle holds the tokenizer's rules as workbench/assets/diffview.js has them (one copy, bundled
    # from there), and no address: nothing is fetched from anywhere at run time
    rules = re.findall(r"String\.raw`([^`]*)`", (ROOT / "workbench" / "assets" / "diffview.js").read_text())
    assert len(rules) >= 10 and all(r in code for r in rules), [r for r in rules if r not in code]
    assert not re.search(r"https?://", code), re.findall(r"https?://\S{0,60}", code)
