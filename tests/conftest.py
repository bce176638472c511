"""The suite's tiers and its shared, costly parts.

Tiers: a test is marked by the resources it uses (pyproject.toml declares the markers), and the marks are
put on here, at collection, from the fixtures the test asks for (``RESOURCES``). A test, or a fixture of
its file, that starts interpreters or other programs itself gets ``subprocess`` (a kernel: ``notebook``;
a Dask cluster: ``cluster``): explicitly where its file says so, else from its code (``SIGNS``: it names
``subprocess`` or ``Popen``, directly or through a function of the test folder). A test that still starts
a process itself without any resource marker fails, naming the command, so that the unmarked tier stays
fast: ``pytest -m "not (browser or notebook or subprocess or cluster or wheel or gpu or slow)"``
(``scripts/test.sh --fast``). The processes the workbench starts for its own work (its pass worker,
XLA's probe) are the workbench's, not the test's.

Shared parts, made once per session: one Chromium (playwright) and one JupyterLab server for every
browser test file, and the example explorations several files read. Playwright's sync API keeps an event
loop running in the main thread, where ``asyncio.run`` then fails, so the browser tests run last, after
every other test (``pytest_collection_modifyitems``).
"""
import importlib.util
import os
import pathlib
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import pytest  # noqa: E402

from tests import browser_pages  # noqa: E402

TESTS = os.path.join(ROOT, "tests") + os.sep
# the workbench's own code, wherever it is installed (found without importing it)
WORKBENCH = os.path.join(importlib.util.find_spec("workbench").submodule_search_locations[0], "")

# marker -> the fixtures that bring its resource
RESOURCES = {
    "browser": ("browser", "lab_server", "lab"),  # Chromium driven by playwright; the JupyterLab server
    "notebook": ("run_notebook",),  # notebooks executed on fresh kernels (nbclient)
    "subprocess": ("cpu_devices",),  # interpreters: scripts on 8 CPU devices, the CLI as a user runs it
    "cluster": ("dask_client",),  # a Dask LocalCluster of worker processes
    "wheel": ("wheel_build",),  # the wheel and sdist built, installed into fresh virtual environments
    "gpu": ("gpu",),  # a GPU (skipped without one)
}
TIERS = (*RESOURCES, "slow")
FAST = "not (" + " or ".join(TIERS) + ")"  # the -m expression of the fast tier: scripts/test.sh --fast
# names that, in a test's code, start the resource: a test that names one gets the marker
SIGNS = {
    "subprocess": {"subprocess", "Popen"},
    "notebook": {"NotebookClient", "start_new_kernel", "KernelManager"},
    "cluster": {"LocalCluster"},
}


# -- the tiers -----------------------------------------------------------------------------------------
def _in_tests(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith(TESTS)


def names_used(fn, seen=None) -> set[str]:
    """The global and attribute names function ``fn`` of the test folder uses: in its own code, its nested
    functions, and (transitively) the functions of the test folder it names; empty for other functions."""
    seen = set() if seen is None else seen
    if not _in_tests(fn) or fn.__code__ in seen:
        return set()
    seen.add(fn.__code__)
    codes, names = [fn.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    for n in list(names):
        if isinstance(f := fn.__globals__.get(n), types.FunctionType):
            names |= names_used(f, seen)
    return names


def _resource_fixtures() -> set[str]:
    return {name for names in RESOURCES.values() for name in names}


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers
def pytest_collection_modifyitems(config, items):
    by_resource = _resource_fixtures()
    for item in items:
        names = set(item.fixturenames)
        for marker, fixtures in RESOURCES.items():
            if names & set(fixtures) and not item.get_closest_marker(marker):
                item.add_marker(marker)
        # the test's own code and its file's fixtures (those of RESOURCES are named by their marker already)
        defs = getattr(item, "_fixtureinfo", None)
        functions = [getattr(item, "function", None)] + [
            getattr(d.func, "__func__", d.func) for name in names - by_resource
            for d in (defs.name2fixturedefs.get(name, ()) if defs else ())]
        used = set().union(*(names_used(fn) for fn in functions if fn is not None))
        for marker, signs in SIGNS.items():
            if used & signs and not item.get_closest_marker(marker):
                item.add_marker(marker)
    # the browser tests last, in their order: see the module's docstring
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("browser") is not None)


# A test (with its fixtures) that starts a process itself must say so with a resource marker: an audit hook
# sees each process started, and whose code started it (the nearest frame in the test folder or the
# workbench decides: the workbench's own processes are not the test's).
_started: list[str] = []
_watching = False


def _audit(event, args):
    if not _watching or event not in ("subprocess.Popen", "os.posix_spawn", "os.system"):
        return
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(TESTS) and not name.endswith("conftest.py"):
            command = args[0] if event == "os.system" else args[1]
            _started.append((command if isinstance(command, str) else " ".join(map(str, command)))[:200])
            return
        if name.startswith(WORKBENCH):
            return
        frame = frame.f_back


def pytest_configure(config):
    sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    global _watching
    _started.clear()
    _watching = not any(item.get_closest_marker(m) for m in RESOURCES)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield  # a failing test fails as it is
    if _started:
        pytest.fail(f"this test started a process itself ({_started[0]}) but has no resource marker: mark it "
                    "@pytest.mark.subprocess (or use the fixture that brings the resource; tests/conftest.py's "
                    "RESOURCES), so that the fast tier stays fast", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    global _watching
    try:
        return (yield)
    finally:
        _watching = False


def _missing(why: str):
    """The test needs something the environment lacks: a skip that says how to get it, or a failure under
    scripts/test.sh (HLO_WORKBENCH_TEST_ALL=1), whose setup installs everything the suite uses."""
    if os.environ.get("HLO_WORKBENCH_TEST_ALL") == "1":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


# -- the resources ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's, driven by playwright) for the session; each test opens its own pages."""
    if not os.path.exists(browser_pages.CHROMIUM):
        _missing(f"no Chromium at {browser_pages.CHROMIUM}: `scripts/setup.sh --test` installs Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed: `scripts/setup.sh` installs the test extras (.[test])")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser_pages.CHROMIUM, headless=True, args=browser_pages.CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """One JupyterLab server for the session (it serves Notebook 7's pages too), on a free localhost port,
    with its own config, data and settings dirs; each test file writes the files it opens into its root."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "files"
    root.mkdir()
    with browser_pages.serve_lab(home, root) as server:
        yield server


@pytest.fixture
def lab(lab_server):
    """The session's JupyterLab server for one test: the kernels and sessions the test's pages started are
    shut down after it, so each test starts with none and no kernel piles up."""
    yield lab_server
    browser_pages.shut_down_kernels(lab_server)


@pytest.fixture
def shots(tmp_path):
    """save(page_or_locator, name): a screenshot in tmp_path and in test-output/."""
    import shutil

    browser_pages.OUTPUT.mkdir(exist_ok=True)

    def save(target, name: str) -> pathlib.Path:
        path = tmp_path / f"{name}.png"
        target.screenshot(path=str(path))
        shutil.copy(path, browser_pages.OUTPUT / path.name)
        print(f"screenshot: {browser_pages.OUTPUT / path.name}")
        return path

    return save


@pytest.fixture(scope="session")
def run_notebook():
    """execute(nb, folder, timeout=600): run notebook ``nb`` top to bottom on a fresh python3 kernel started
    in ``folder`` (nbclient); the notebook, with its outputs."""
    try:
        from nbclient import NotebookClient
    except ImportError:
        _missing("nbclient is not installed: `scripts/setup.sh` installs the test extras (.[test])")

    def execute(nb, folder, timeout: int = 600):
        NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
        return nb

    return execute


@pytest.fixture(scope="session")
def cpu_devices():
    """run(script, devices=8): tests/devices.py's run_on_cpu_devices, a script in a fresh Python that sees
    ``devices`` CPU devices; its RESULT line's JSON."""
    from tests.devices import run_on_cpu_devices

    return run_on_cpu_devices


@pytest.fixture(scope="session")
def dask_client():
    """A Dask LocalCluster of two worker processes (one thread each) and a client of it."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def gpu():
    """The first GPU JAX sees; the test is skipped where there is none."""
    import jax

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("no GPU here: jax.devices('gpu') finds none (jaxlib without CUDA, or no device); these tests "
                    "run on a machine with one")
    return gpus[0]


# -- the command, in this process -------------------------------------------------------------------------
class CliResult(types.SimpleNamespace):
    """What a run of the command gave: returncode, stdout, stderr (as subprocess.run's result has them)."""


@pytest.fixture
def cli(capsys, monkeypatch):
    """run(*args, input=None, cwd=None): the hlo-workbench command in this process, through
    ``workbench.views.cli.main`` (the console script's entry point), as an interpreter runs it: a
    ``SystemExit`` gives its exit status (its message on stderr, status 1), warnings are printed to stderr
    with the formatter main() sets, ``input`` is stdin, ``cwd`` the working directory. An exception out of
    main() is a traceback on a user's terminal: it fails the test. tests/test_cli.py runs the installed
    script and ``python -m workbench`` as a user does, once each."""
    import io
    import warnings

    from workbench.views.cli import main

    def run(*args, input: str | None = None, cwd=None) -> CliResult:
        capsys.readouterr()  # what the test printed before is not the command's
        monkeypatch.setattr(sys, "stdin", io.StringIO(input or ""))
        monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # main() sets its own; undone after
        if cwd is not None:
            monkeypatch.chdir(cwd)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # a fresh interpreter's filter: each warning once per place
            try:
                code = main([str(a) for a in args])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) or e.code is None else 1
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)
        for w in caught:  # as Python's showwarning writes them, after the command's own output
            sys.stderr.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
        out = capsys.readouterr()
        return CliResult(returncode=code or 0, stdout=out.out, stderr=out.err)

    return run


# -- the example explorations several files read (an Exploration is immutable; its runs list only grows) --
def transposes(x, y):  # three transposes that Enzyme-JaX's patterns remove; XLA has nothing to do with it
    import jax.numpy as jnp

    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="session")
def transposes_ex():
    import jax.numpy as jnp

    import workbench as wb

    return wb.explore(transposes, jnp.ones((8, 16)), jnp.ones((4, 8)))


@pytest.fixture(scope="session")
def attention_ex():
    """The built-in attention example (a transformer block's gradient), explored with the default pipeline."""
    import workbench as wb
    from workbench import examples

    fn, args = examples.load("attention")
    return wb.explore(fn, *args)
