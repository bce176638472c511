"""The suite's tiers and its shared, costly parts.

Tiers: a test is marked by the resources it uses (pyproject.toml declares the markers), and the marks are
put on here, at collection, from the fixtures the test asks for (``RESOURCES``). A test, or a fixture of
its file, that starts interpreters or other programs itself gets ``subprocess`` (a kernel: ``notebook``;
a Dask cluster: ``cluster``): explicitly where its file says so, else from its code (``SIGNS``: it names
``subprocess`` or ``Popen``, directly or through a function of the test folder). A test that still starts
a process itself without any resource marker fails, naming the command, so that the unmarked tier stays
fast: ``pytest -m "not (browser or notebook or subprocess or cluster or wheel or gpu or tpu or slow)"``
(``scripts/test.sh --fast``). The processes the workbench starts for its own work (its pass worker,
XLA's probe) are the workbench's, not the test's. Tests measured long are ``slow`` (``SLOW``,
``SLOW_FIXTURES``, or their file's own mark).

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

pytest_plugins = ["pytester"]  # tests/test_gates.py runs pytest on a sample project

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
    "tpu": ("tpu",),  # a TPU (skipped without one)
}
TIERS = (*RESOURCES, "slow")
FAST = "not (" + " or ".join(TIERS) + ")"  # the -m expression of the fast tier: scripts/test.sh --fast
# names that, in a test's code, start the resource: a test that names one gets the marker
SIGNS = {
    "subprocess": {"subprocess", "Popen"},
    "notebook": {"NotebookClient", "start_new_kernel", "KernelManager"},
    "cluster": {"LocalCluster"},
}


# Long tests (``slow``), by file: each took over 2 s (or a parametrized group over 1.5 s a case) in
# `pytest --durations=0` of the fast tier on this 2-core machine (2 December, load 1.5-4). A name is a test
# function (every case of it), one case ("name[id]"), or "*", every test of the file. A file may instead
# mark its own tests @pytest.mark.slow, as test_cli.py and test_course.py do; these files were being
# edited by others when the tiers were made. tests/test_tiers.py checks every name here still names a test.
SLOW = {
    "test_bisect_joint.py": {"*"},  # bisects over patterns and XLA passes together: many pipelines and compiles
    "test_bounds.py": {
        "test_a_report_reads_diffs_and_embeds_no_more_than_its_limits",
        "test_dot_past_its_time_limit_is_stopped_with_a_named_error_and_a_note",
    },
    "test_viewmodel.py": {
        "test_a_60000_line_text_is_cut_to_the_cap_and_says_so",
        "test_a_bundle_made_while_xla_compiles_lists_the_mlir_stages_and_says_so",
        "test_the_whole_bundle_stays_within_its_total",
    },
    "test_check.py": {
        "test_a_bf16_program_is_held_to_bf16_precision_not_its_float32_outputs",
        "test_a_changed_constant_still_fails_against_the_float64_reference",
        "test_a_constant_changed_in_a_real_program_fails",
        "test_a_nan_the_program_removes_is_a_miscompile_under_no_nan",
        "test_a_near_constant_loss_gradient_passes_on_every_changed_stage",
        "test_a_real_program_passes_on_every_changed_stage_against_its_promoted_module",
        "test_text_random_numbers_and_pinned_dtypes_are_checked_against_a_promoted_module",
        "test_the_nnx_key_bias_update_is_rounding_noise_and_passes",
        "test_the_noise_rule_alone_tells_the_nnx_steps_rounding_from_its_planted_miscompile",
        "test_without_a_wider_evaluation_the_tolerance_is_the_programs_own_noise",
    },
    "test_children.py": {
        "test_a_child_serves_its_method_table_restarts_and_ends_without_leftovers",
        "test_an_executor_pool_is_a_pool_of_its_own_with_the_width_it_is_given",
    },
    "test_core.py": {
        "test_a_crashed_worker_is_replaced",
        "test_a_pass_that_runs_too_long_is_stopped_and_the_worker_restarts",
        "test_a_toggle_recomputes_only_later_stages",
        "test_disabling_dot_transpose_matches_enzyme_ad_excluding_it",
        "test_enable_adds_a_pattern_that_is_off_by_default",
        "test_every_preset_produces_its_stages",
        "test_reactant_and_enzyme_ad_option_names_shape_the_pattern_list",
        "test_stepping_a_module_no_pattern_applies_to_says_so",
        "test_whole_default_pipeline_matches_enzyme_ad",
        "test_xla_stages_have_pass_names",
    },
    "test_corpus.py": {"*"},  # real Flax, Optax, Equinox and Diffrax programs: built, explored, run, reported
    "test_cost.py": {
        "test_analytic_totals_agree_with_xla_on_loop_free_programs[mlp_grad]",
    },
    "test_execute.py": {
        "test_a_scan_isolates_a_crashing_request_and_keeps_going",
        "test_builtin_predicates",
        "test_compare_tabulates_stages",
        "test_every_example_runs_on_cpu_and_matches_the_unoptimized_program",
        "test_pattern_timing_by_group_and_by_pattern",
        "test_stages_that_cannot_run_say_why",
    },
    "test_graph.py": {
        "test_a_10k_op_module_draws_a_bounded_top_level_in_one_pass",
        "test_a_flax_model_shows_its_modules_and_its_gradient_the_transformations",
    },
    "test_hlo_cost.py": {
        "test_the_panels_cost_tab_shows_an_hlo_stage_per_instruction",
    },
    "test_hostile_files.py": {
        "test_a_manifest_field_of_the_wrong_type_or_range_is_named",
        "test_a_manifest_that_is_not_plain_json_is_refused_before_json_recurses",
        "test_a_truncated_or_garbled_zstd_frame_is_refused",
        "test_an_arrays_member_that_is_not_a_zip_is_refused",
        "test_bad_arrays_are_refused",
        "test_kind_and_format_say_what_the_file_is",
        "test_manifest_text_garbled_at_random_loads_or_is_refused",
        "test_missing_members_are_refused",
        "test_other_compressions_and_encryption_are_refused",
        "test_saving_a_200_mb_array_streams_it",
        "test_truncated_and_foreign_files_are_refused",
    },
    "test_interrupts.py": {
        "test_a_pass_worker_killed_by_sigkill_is_said_to_be_killed_not_a_crashing_pass",
        "test_a_probe_child_killed_by_sigkill_is_not_a_verdict",
        "test_a_probe_that_gives_no_answer_in_time_is_ended_and_not_a_verdict",
        "test_a_stale_reply_is_discarded",
        "test_an_interrupted_explore_leaves_every_later_answer_right",
        "test_an_interrupted_pool_scan_ends_its_busy_requests_and_the_pool_answers_right_after",
        "test_an_interrupted_request_leaves_no_process_behind",
    },
    "test_ir.py": {
        "test_op_counts_agree_with_the_cost_models_walk_of_the_parsed_module[attention]",
    },
    "test_leftovers.py": {
        "test_a_worker_log_stays_bounded",
        "test_a_worker_nobody_references_is_collected_with_its_process_and_log",
        "test_a_worker_started_and_closed_leaves_no_log",
    },
    "test_perf_identity.py": {
        "test_the_text_scanners_give_what_the_plain_ones_give",
        "test_tracing_runs_the_function_once_for_the_jaxpr_and_the_module",
        "test_unchanged_stages_share_their_parents_text_objects",
        "test_xla_stages_and_analyses_are_a_plain_reading_of_xlas_own_compile",
    },
    "test_pipelines_compare.py": {
        "test_one_row_per_pipeline_with_time_check_cost_and_ops",
    },
    "test_progress.py": {
        "test_on_progress_hears_every_long_call",
    },
    "test_promote.py": {
        "test_bfloat16_and_branches_and_loops_promote",
    },
    "test_provenance.py": {
        "test_locations_name_each_op_its_line_of_the_users_code",
        "test_ops_of_private_functions_count_at_the_line_that_called_them",
        "test_per_line_costs_add_up_to_each_stages_total",
    },
    "test_reduce.py": {
        "test_the_reduced_module_runs_on_seeded_inputs_of_its_new_arguments",
        "test_the_transformer_gradient_reduces_to_a_transpose_feeding_a_dot",
    },
    "test_report.py": {
        "test_a_bigger_program_stays_a_sane_size",
        "test_the_report_is_one_file_with_no_url_in_it_and_runs_only_its_own_script",
    },
    "test_saved.py": {
        "test_a_loaded_exploration_has_every_stage_and_needs_no_pass_nor_compile",
        "test_a_loaded_program_with_a_prng_key_runs_from_its_saved_arrays",
        "test_a_per_dtype_tolerance_of_an_all_zero_output_is_saved_as_a_number",
        "test_a_run_with_an_all_zero_output_saves_and_loads_with_the_same_check",
        "test_runs_and_arguments_come_back",
        "test_the_file_is_small_on_a_3_layer_block",
        "test_toggles_recompute_from_the_saved_input",
        "test_without_arrays_the_shapes_remain_and_a_run_uses_seeded_ones",
    },
    "test_scan.py": {
        "test_a_pattern_that_fails_alone_shows_its_error_as_one_by_one_does",
        "test_group_testing_finds_exactly_what_one_by_one_finds",
        "test_patterns_that_undo_each_other_never_return_and_never_share_a_batch",
        "test_stepping_by_group_testing_takes_the_steps_one_by_one_takes",
        "test_the_first_change_and_the_failures_before_it_are_the_serial_scans",
        "test_the_pool_hands_crashes_to_the_caller_and_keeps_serving",
    },
    "test_speculative.py": {
        "test_the_panel_shows_the_mlir_stages_while_xla_compiles_then_the_xla_stages",
    },
    "test_stagecost.py": {
        "test_every_stage_is_costed_and_agrees_with_xla_on_loop_free_programs",
        "test_plot_cost_draws_three_panels",
    },
    "test_user_jit.py": {
        "test_a_library_jits_run_returns_what_the_function_returns_and_checks_all_the_program_returns",
        "test_a_step_that_returns_its_next_prng_key_runs_checks_and_saves_with_its_arrays",
        "test_an_eqx_filter_jit_step_that_returns_the_updated_module_explores_and_runs",
        "test_eqx_filter_jit_and_an_equinox_module_as_an_argument",
        "test_nnx_jit_explores_the_program_it_compiles_and_leaves_the_model_alone",
    },
    "test_xla_abort.py": {
        "test_a_run_follows_the_xla_toggles",
        "test_disabling_every_xla_pass_is_a_failed_stage_not_a_dead_kernel",
    },
}


# Fixtures of those files whose making is long: every test that uses one is slow (its cost would only move to
# the next test that uses it).
SLOW_FIXTURES = {
    "test_diff.py": {"mlp_20k"},  # a 20,000-line module before and after two passes
    "test_ir.py": {"example_stages"},  # every built-in example explored (convnet's XLA compile)
    "test_reduce.py": {"reduced"},  # the attention gradient reduced to a minimal module
    "test_pipelines_compare.py": {"mlp_table"},  # the mlp example under every pipeline, each run and costed
    "test_report.py": {"attention", "attention_report"},  # the attention gradient run; its full report
    "test_saved.py": {"attention", "saved_file"},  # the attention gradient run; saved with its arrays
    "test_profile.py": {"block_step"},  # a Flax NNX transformer block's training step explored
}


# What each costly file took, in minutes of one pytest process (the junit times of a whole run under
# `pytest -n 2 --dist loadfile`, 4 December, on this 2-core machine). Only the order depends on it: the
# suite hands out its files costliest first (scripts/test.sh turns off pytest-xdist's own order, which is
# by the number of tests), so that no long file starts last and leaves one core idle at the end; the browser
# files, last of all, are likewise handed out costliest first (tests/test_browser_graph.py is split from
# tests/test_browser.py so that both processes share their minutes). A file not named here costs less than
# 0.25 minutes; a stale figure only makes the order worse, never a result.
MINUTES = {
    "test_notebooks.py": 2.5, "test_corpus.py": 2.1, "test_browser.py": 1.9, "test_readme.py": 1.2,
    "test_processes.py": 1.2, "test_execute.py": 0.9, "test_scan.py": 0.9, "test_hostile_files.py": 0.9,
    "test_reproducer.py": 0.9, "test_check.py": 0.8, "test_interrupts.py": 0.8, "test_course.py": 0.7,
    "test_bisect_joint.py": 0.7, "test_browser_graph.py": 0.7, "test_wheel.py": 0.5, "test_core.py": 0.5,
    "test_browser_sharding.py": 0.4, "test_extension_views.py": 0.4, "test_shardy.py": 0.4, "test_saved.py": 0.4,
    "test_cli.py": 0.4, "test_report.py": 0.3, "test_extension_notebook7.py": 0.3, "test_extension.py": 0.3,
    "test_user_jit.py": 0.3, "test_start.py": 0.3, "test_viewmodel.py": 0.3, "test_progress.py": 0.3,
    "test_provenance.py": 0.3, "test_extension_commands.py": 0.3, "test_browser_source.py": 0.3,
    "test_loop_costs.py": 3.0,
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
        long = SLOW.get(item.path.name, ())
        if ("*" in long or item.originalname in long or item.name in long
                or names & SLOW_FIXTURES.get(item.path.name, set())) and not item.get_closest_marker("slow"):
            item.add_marker("slow")
    # the browser tests last (see the module's docstring); before them, the costliest files first
    items[:] = sorted(items, key=lambda item: (item.get_closest_marker("browser") is not None,
                                               -MINUTES.get(item.path.name, 0.0)))


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


@pytest.fixture
def xla_idle():
    """The XLA compiles that tests before this one began (in its file or another) have ended: a test that counts
    compiles, or the files in a temporary folder it points tempfile at, sees only its own."""
    import threading

    from workbench.pipeline.compile_queue import XLA_QUEUE

    idle = threading.Event()
    XLA_QUEUE.when_idle(idle.set)
    assert idle.wait(300), "the compiles earlier tests began never ended"


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


def _first_device(platform: str, why_none: str):
    """The first device of ``platform`` JAX sees; the test is skipped, saying ``why_none``, where there is none."""
    import jax

    try:
        found = jax.devices(platform)
    except RuntimeError:
        found = []
    if not found:
        pytest.skip(f"no {platform.upper()} here: jax.devices({platform!r}) finds none; {why_none}")
    return found[0]


@pytest.fixture(scope="session")
def gpu():
    """The first GPU JAX sees; the test is skipped where there is none."""
    return _first_device("gpu", "jaxlib without CUDA, or no device; these tests run on a machine with one")


@pytest.fixture(scope="session")
def tpu():
    """The first TPU JAX sees; the test is skipped where there is none."""
    return _first_device("tpu", "these tests run on the TPU machine (../shared/device/README.md), and "
                                "tests/fixtures/tpu test the TPU's readers everywhere")


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


@pytest.fixture
def kernel_shell():
    """IPython's shell with the compiler ipykernel gives it, which names cells /tmp/ipykernel_<pid>/<hash>.py
    and shows them as ``Cell In[n]``."""
    from IPython.core.interactiveshell import InteractiveShell
    from ipykernel.compiler import XCachingCompiler

    shell = InteractiveShell.instance()
    before = shell.compile
    shell.compile = XCachingCompiler()
    try:
        yield shell
    finally:
        shell.compile = before
