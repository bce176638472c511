"""The wheel is complete: built from this checkout and installed into a fresh virtual environment, its
``hlo-workbench`` runs a built-in example from any folder (the examples live inside the package).

The fresh environment borrows the dependencies (jax, jaxlib, enzyme-ad: about 1.5 GB) from the
environment running the tests instead of downloading them: a ``.pth`` file in its site-packages names
ours. A path line in a ``.pth`` file is only appended to ``sys.path``; the ``.pth`` files inside that
folder are not processed, so our editable install of workbench (a finder loaded by a ``.pth``) stays
inactive there, and the fresh environment's own site-packages comes first.

The wheel builds the JupyterLab extension itself (build_backend/hlo_workbench_build.py wraps
setuptools.build_meta) when its labextension/ folder is missing or stale, as from the sdist, which has
the extension's sources only. The source copies borrow the checkout's node_modules through a link
(when it is current for package-lock.json, so no ``npm ci`` runs), so the builds download nothing.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
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


EXT = Path("extensions", "hlo-workbench-lab")
LABEXT = "hlo_workbench-0.1.0.data/data/share/jupyter/labextensions/hlo-workbench-lab/"  # the data-files route


def backend():
    """The in-tree build backend (pyproject.toml's build-backend), imported from the checkout."""
    spec = importlib.util.spec_from_file_location("hlo_workbench_build", ROOT / "build_backend" / "hlo_workbench_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def link_node_modules(src: Path) -> bool:
    """Give src's extension the checkout's node_modules (a link) when it is current for src's
    package-lock.json, as scripts/setup.sh leaves it: then the build runs no `npm ci` (which would
    download, and replace the checkout's folder)."""
    ours = ROOT / EXT / "node_modules"
    installed, lock = ours / ".package-lock.json", src / EXT / "package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        return False
    (src / EXT / "node_modules").symlink_to(ours, target_is_directory=True)
    return True


def pip_wheel(src: Path, dist: Path) -> Path:
    isolation = ["--no-build-isolation", "--no-index"] if builds_offline() else []  # else pip fetches the backend
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src)
    (wheel,) = dist.glob("hlo_workbench-*.whl")
    return wheel


def build_wheel(tmp: Path) -> tuple[Path, Path]:
    """A wheel from a copy of this checkout as it is (its labextension/ built, stale or missing); and the copy."""
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCE)
    if not link_node_modules(src) and backend().stale(src):
        pytest.skip("the extension needs a build and the checkout's node_modules is missing or older than "
                    "package-lock.json: run scripts/setup.sh")
    return pip_wheel(src, tmp / "dist"), src


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory):
    """One wheel for the tests that read it: (the wheel, the source copy it was built from)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def check_the_extension(wheel: Path, built_dir: Path) -> dict[str, zipfile.ZipInfo]:
    """The wheel has the built extension of built_dir (a labextension/ folder), every file of it, where an
    installer puts it into share/jupyter/labextensions/hlo-workbench-lab; its files by name there."""
    with zipfile.ZipFile(wheel) as z:
        ours = {i.filename[len(LABEXT):]: i for i in z.infolist() if i.filename.startswith(LABEXT)}
        assert {"package.json", "install.json"} <= set(ours), sorted(ours)
        assert any(n.startswith("static/remoteEntry.") and n.endswith(".js") for n in ours), sorted(ours)
        built = {p.relative_to(built_dir).as_posix() for p in built_dir.rglob("*") if p.is_file()}
        assert built and built <= set(ours), f"the wheel lacks {sorted(built - set(ours))}"
        meta = json.loads(z.read(LABEXT + "package.json"))
        assert meta == json.loads((built_dir / "package.json").read_text())
        assert meta["name"] == "hlo-workbench-lab" and meta["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")
        assert meta["jupyterlab"]["_build"]["load"] in ours
        # the view components the panel and the offline report load (build-views.mjs, run by build:prod)
        assert {"workbench/assets/views.js", "workbench/assets/editor.js", "workbench/assets/views.css"} <= set(z.namelist())
        assert b"mount" in z.read("workbench/assets/views.js")
    return ours


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_venv_and_runs_a_builtin_example_from_any_folder(wheel_build, tmp_path):
    wheel, src = wheel_build
    check_the_extension(wheel, src / EXT / "labextension")
    names = set(zipfile.ZipFile(wheel).namelist())
    # every data file of the package (front-end code, report templates, the manifest's schema, the course's texts
    # and lesson 11's TPU recording)
    assets = [p.relative_to(ROOT).as_posix() for p in (ROOT / "workbench").rglob("*")
              if p.is_file() and p.suffix in (".js", ".css", ".j2", ".json", ".toml", ".hlox", ".xz")]
    assert "workbench/course/exercises.toml" in assets and "workbench/assets/reporthost.js" in assets
    assert "workbench/course/data/mlp_bf16.hlox" in assets
    examples = [p.relative_to(ROOT).as_posix() for p in (ROOT / "workbench/examples").glob("*.py")]
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    missing = {"workbench/examples/attention.py", *examples, *assets} - names
    assert not missing, f"the wheel lacks {sorted(missing)}"
    course = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} | {"README.md"}
    shipped = {Path(n).name for n in names if "/share/hlo-workbench/notebooks/" in n}
    assert shipped == course, f"the wheel's course: {sorted(shipped)}"

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

    # the --json documents' schemas come with the wheel: a document of the installed command validates
    doc = json.loads(sh(Path(paths["scripts"]) / "hlo-workbench", "memory", "mlp", "--json", cwd=elsewhere))
    schema = json.loads(sh(Path(paths["scripts"]) / "hlo-workbench", "schema", "memory", cwd=elsewhere))
    import jsonschema

    jsonschema.validate(doc, schema)
    assert doc["command"] == "memory" and doc["exit"] == 0 and doc["peak_bytes"] > 0

    # the course comes with the wheel: `hlo-workbench course` copies it out of the environment's share/
    out = sh(Path(paths["scripts"]) / "hlo-workbench", "course", "my-course", cwd=elsewhere)
    assert str(Path(paths["data"]) / "share" / "hlo-workbench" / "notebooks") in out, out
    assert sorted(p.name for p in (elsewhere / "my-course").iterdir()) == sorted(course)

    # installing the wheel installed the JupyterLab extension: this environment's JupyterLab lists it
    # (from the environment's own share/jupyter/labextensions, which only the wheel can have filled)
    labext = Path(paths["data"]) / "share" / "jupyter" / "labextensions" / "hlo-workbench-lab"
    assert (labext / "package.json").is_file() and (labext / "install.json").is_file()
    assert list((labext / "static").glob("remoteEntry.*.js"))
    if sh(py, "-c", "import importlib.util; print(importlib.util.find_spec('jupyterlab') is not None)").strip() != "True":
        pytest.skip("no jupyterlab in the fresh environment (nor in the borrowed one) to list the extension")
    listed = subprocess.run([str(py), "-m", "jupyterlab.labextensions", "list"], capture_output=True, text=True,
                            env={**ENV, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "NO_COLOR": "1"},
                            cwd=elsewhere, timeout=120)
    text = listed.stdout + listed.stderr
    assert str(labext.parent) in text, text
    assert re.search(r"hlo-workbench-lab v\S+ \S*enabled\S* \S*OK\S* \(python, hlo-workbench\)", text), text


@pytest.mark.slow
def test_the_wheel_ships_the_built_jupyterlab_extension_under_1_mb(wheel_build):
    """The built extension (package.json, install.json, static/*.js with the remote entry) is in the wheel,
    where an installer puts it into share/jupyter/labextensions/hlo-workbench-lab; the bundle is small and
    fetches nothing from elsewhere."""
    wheel, src = wheel_build
    ours = check_the_extension(wheel, src / EXT / "labextension")
    with zipfile.ZipFile(wheel) as z:
        scripts = {n: i.file_size for n, i in ours.items() if n.startswith("static/") and n.endswith(".js")}
        install = json.loads(z.read(LABEXT + "install.json"))
        assert install["packageName"] == "hlo-workbench" and install["packageManager"] == "python"
        code = "".join(z.read(LABEXT + n).decode() for n in scripts)
    size = sum(scripts.values())
    print(f"\nthe JupyterLab extension's bundle: {len(scripts)} scripts, {size} bytes ({size / 1024:.1f} KiB)")
    assert size < 1_000_000
    # the bundle holds the tokenizer's rules as workbench/assets/diffview.js has them (one copy, bundled
    # from there), and nothing is fetched from anywhere at run time: no network call at all, and the only
    # addresses are names (JSON Schema's and Ajv's $id/$schema identifiers, the manifest schema's own $id,
    # the links in Ajv's error texts), never something loaded
    rules = re.findall(r"String\.raw`([^`]*)`", (ROOT / "workbench" / "assets" / "diffview.js").read_text())
    assert len(rules) >= 10 and all(r in code for r in rules), [r for r in rules if r not in code]
    calls = re.findall(r"\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|sendBeacon|"
                       r"\bimport\s*\(\s*[\"'`]https?:", code)
    assert not calls, calls
    hosts = {re.match(r"https?://([\w.-]*)", u).group(1) for u in re.findall(r"https?://[\w.-]*", code)}
    assert hosts <= IDENTIFIER_HOSTS, hosts - IDENTIFIER_HOSTS


# hosts whose addresses the bundle may hold as names: JSON Schema's meta-schema ids, the manifest schema's
# own $id, Ajv's $data meta-schema id, the issue and RFC links in Ajv's messages, and "http://" + host in the
# URI parser Ajv resolves $refs with ("" below)
IDENTIFIER_HOSTS = {"json-schema.org", "hlo-workbench.invalid", "raw.githubusercontent.com", "github.com",
                    "datatracker.ietf.org", ""}

SDIST_FRONTEND = """
import importlib, sys, tomllib
out = sys.argv[1]  # before setuptools rewrites sys.argv
system = tomllib.load(open("pyproject.toml", "rb"))["build-system"]
sys.path[:0] = system.get("backend-path", [])
print(importlib.import_module(system["build-backend"]).build_sdist(out))
"""


@pytest.mark.slow
def test_the_sdist_has_the_extension_sources_and_its_wheel_builds_the_extension(wheel_build, tmp_path):
    """The sdist, made from a tree with the extension built (labextension/, lib/, node_modules), has the
    extension's sources and none of those; a wheel built from it (no labextension/ there) builds the
    extension on the way and ships it."""
    _, src = wheel_build
    assert (src / EXT / "labextension" / "package.json").is_file() and (src / EXT / "lib").is_dir()
    assert (src / EXT / "node_modules").is_dir()
    name = sh(sys.executable, "-c", SDIST_FRONTEND, tmp_path / "sdist", cwd=src).strip().splitlines()[-1]
    with tarfile.open(tmp_path / "sdist" / name) as tar:
        top = name.removesuffix(".tar.gz")
        names = {n.removeprefix(top + "/") for n in tar.getnames()}
        tar.extractall(tmp_path / "unpacked", filter="tar")
    sources = {(EXT / p).as_posix() for p in ("package.json", "package-lock.json", "tsconfig.json",
                                               "build-labextension.mjs", "install.json", "src/index.ts",
                                               "style/index.css")}
    assert {"build_backend/hlo_workbench_build.py", "workbench/assets/diffview.js", *sources} - names == set()
    assert {p.relative_to(src).as_posix() for p in (src / EXT / "src").rglob("*") if p.is_file()} <= names
    built_output = [n for n in names if n.startswith(tuple(f"{EXT.as_posix()}/{d}" for d in
                                                           ("node_modules", "lib/", "labextension", "tsconfig.tsbuildinfo")))]
    assert not built_output, built_output

    unpacked = tmp_path / "unpacked" / top
    assert not (unpacked / EXT / "labextension").exists()
    if not link_node_modules(unpacked):
        pytest.skip("the checkout's node_modules is missing or older than package-lock.json: run scripts/setup.sh")
    wheel = pip_wheel(unpacked, tmp_path / "dist")
    check_the_extension(wheel, unpacked / EXT / "labextension")  # built there, during the wheel's build


def fake_extension(root: Path, old: float) -> None:
    """A source tree with the files the backend's staleness check reads, all dated `old`."""
    for f in ("src/index.ts", "style/index.css", "schema/commands.json", "package.json", "package-lock.json",
              "tsconfig.json", "build-labextension.mjs", "install.json"):
        (root / EXT / f).parent.mkdir(parents=True, exist_ok=True)
        (root / EXT / f).write_text("{}")
    (root / "workbench" / "assets").mkdir(parents=True)
    for f in ("diffview.js", "diffview.css", "views.js", "editor.js", "views.css"):
        (root / "workbench" / "assets" / f).write_text("")
    for p in root.rglob("*"):
        os.utime(p, (old, old))


def test_the_build_backend_builds_the_extension_when_missing_unfinished_or_older_than_a_source(tmp_path):
    b, old = backend(), 1_000_000_000
    fake_extension(tmp_path, old)
    assert "is missing" in b.stale(tmp_path)
    out = tmp_path / EXT / "labextension"
    (out / "static").mkdir(parents=True)
    (out / "package.json").write_text('{"name": "hlo-workbench-lab", "jupyterlab": {}}')  # what a build writes first
    assert "not a finished build" in b.stale(tmp_path)
    (out / "package.json").write_text(json.dumps({"jupyterlab": {"_build": {"load": "static/remoteEntry.1.js"}}}))
    assert "static/remoteEntry.1.js, which is missing" in b.stale(tmp_path)
    (out / "static" / "remoteEntry.1.js").write_text("")
    assert b.stale(tmp_path) is None
    views = tmp_path / "workbench" / "assets" / "views.js"  # the view components, built by build:prod too
    views.unlink()
    assert b.stale(tmp_path) == "workbench/assets/views.js is missing"
    views.write_text("")
    for built in (out / "package.json", views, views.with_suffix(".css"), views.with_name("editor.js")):
        os.utime(built, (old + 5, old + 5))  # built after its sources
    assert b.stale(tmp_path) is None
    for source in ("extensions/hlo-workbench-lab/src/index.ts", "extensions/hlo-workbench-lab/package-lock.json",
                   "extensions/hlo-workbench-lab/schema/commands.json", "workbench/assets/diffview.css"):
        os.utime(tmp_path / source, (old + 10, old + 10))
        assert b.stale(tmp_path) == f"{source} is newer than extensions/hlo-workbench-lab/labextension/package.json"
        os.utime(tmp_path / source, (old, old))
    os.utime(out / "package.json", (old + 20, old + 20))  # the views are the older build: a source newer than them
    os.utime(tmp_path / "extensions/hlo-workbench-lab/src/index.ts", (old + 10, old + 10))
    assert b.stale(tmp_path) == "extensions/hlo-workbench-lab/src/index.ts is newer than workbench/assets/views.js"
    os.utime(tmp_path / "extensions/hlo-workbench-lab/src/index.ts", (old, old))
    assert b.build_labextension(tmp_path) is False  # nothing to do: no node needed


def test_the_build_backend_says_what_to_install_without_node(tmp_path, monkeypatch):
    b = backend()
    fake_extension(tmp_path, 1_000_000_000)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(b.LabextensionBuildError) as err:
        b.build_labextension(tmp_path)
    message = str(err.value)
    assert "needs node and npm" in message and "apt-get install nodejs npm" in message and "scripts/setup.sh" in message


def test_the_build_backend_asks_for_jupyterlab_only_when_it_must_build_without_it(tmp_path, monkeypatch):
    b = backend()
    fake_extension(tmp_path, 1_000_000_000)
    monkeypatch.setattr(b, "ROOT", tmp_path)
    monkeypatch.delenv("JUPYTERLAB_CORE_PATH", raising=False)
    monkeypatch.setattr(b.importlib.util, "find_spec", lambda name: None)  # a build environment without jupyterlab
    assert b._requires(["x"]) == ["x", b.JUPYTERLAB]
    monkeypatch.setenv("JUPYTERLAB_CORE_PATH", str(tmp_path))
    assert b._requires(["x"]) == ["x"]
