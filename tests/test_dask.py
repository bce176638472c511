"""Scans on a cluster: the long calls with ``executor=`` give the answers of the built-in pool, through
a real ``dask.distributed.LocalCluster`` (two worker processes, each running enzyme-ad in its own
warm worker subprocess) and through a plain ThreadPoolExecutor; a pass that kills its worker process
on a Dask worker is isolated as it is here, and the Dask worker lives on."""
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.search.scan import scan
from workbench.pipeline.catalog import catalog
from workbench.pipeline.remote import ExecutorPool, requests_served, resolve
from workbench.pipeline.runner import default_runner
from workbench.pipeline.worker import ItemFailure, PassFailure, WorkerCrash, WorkerTimeout, default_pool

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client(dask_client):
    """tests/conftest.py's LocalCluster (two worker processes, one thread each) and its client."""
    return dask_client


@pytest.fixture(scope="module")
def threads():
    with ThreadPoolExecutor(2) as pool:
        yield pool


@pytest.fixture(scope="module")
def mlp():
    fn, args = examples.load("mlp")
    return wb.explore(fn, *args, pipeline="none")


@pytest.fixture(scope="module")
def transposes(transposes_ex):
    """tests/conftest.py's three transposes that the patterns remove."""
    return transposes_ex


def served(client) -> int:
    """Requests the cluster's processes have run (``remote.run_request``), all workers together."""
    return sum(client.run(requests_served).values())


def _rows(df):
    return [tuple(r) for r in df[["name", "group", "changed", "error", "batch"]].itertuples(index=False)]


def test_the_worker_errors_pickle_with_their_fields():
    import pickle

    for e in (WorkerCrash(-6, "abort here"), WorkerTimeout(3.0, "still running"), PassFailure("bad", "diag")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.diagnostics == e.diagnostics


def test_applicable_through_the_cluster_is_the_local_answer(client, mlp):
    local = mlp.applicable(details=True, progress=False)
    before = served(client)
    t = time.perf_counter()
    remote = mlp.applicable(details=True, progress=False, executor=client)
    seconds = time.perf_counter() - t
    assert _rows(remote) == _rows(local) and local.changed.any()
    assert served(client) - before >= 10, "the requests ran on the cluster's workers"
    # an address string makes (and keeps) a Client of its own
    address = client.scheduler.address
    assert mlp.applicable(progress=False, executor=address) == list(local[local.changed].name)
    assert resolve(address).client is resolve(address).client
    print(f"applicable on the mlp example: {seconds:.2f} s through the LocalCluster")


@pytest.mark.slow  # two bisects from an empty cache
def test_a_thread_pool_executor_gives_the_same_answers(threads, mlp, transposes):
    local = mlp.applicable(details=True, progress=False)
    assert _rows(mlp.applicable(details=True, progress=False, executor=threads)) == _rows(local)
    pred = wb.op_count_at_most("stablehlo.transpose", 0)
    default_runner().clear()
    there = transposes.bisect(pred, progress=False, executor=threads)
    default_runner().clear()
    here = transposes.bisect(pred, progress=False)
    assert there.patterns == here.patterns and there.patterns
    assert (there.runs, there.log) == (here.runs, here.log)


def test_bisect_through_the_cluster_is_the_local_answer(client, transposes):
    pred = wb.op_count_at_most("stablehlo.transpose", 0)
    default_runner().clear()  # else every subset's pipeline is a cache hit and nothing need go there
    before = served(client)
    there = transposes.bisect(pred, progress=False, executor=client)
    assert served(client) - before >= there.runs, "each subset's pattern pipeline ran on the cluster"
    default_runner().clear()
    here = transposes.bisect(pred, progress=False)
    assert there.patterns == here.patterns and there.patterns
    assert (there.runs, there.log, there.xla_passes) == (here.runs, here.log, here.xla_passes)


def test_step_timing_reduce_and_pipelines_through_the_cluster(client, transposes):
    ex = transposes
    assert ex.step(progress=False, executor=client).applied() == ex.step(progress=False).applied()
    there, here = (ex.pattern_timing(progress=False, executor=e).sort_values("group", ignore_index=True)
                   for e in (client, None))
    assert list(there.group) == list(here.group) and list(there.changed) == list(here.changed)
    pred = wb.has_op("stablehlo.dot_general")
    r_there = ex.reduce(pred, progress=False, executor=client)
    r_here = ex.reduce(pred, progress=False)
    assert (r_there.text, r_there.runs, r_there.skipped) == (r_here.text, r_here.runs, r_here.skipped)
    assert r_there.ops_after < r_there.ops_before
    names = ["all", "none"]
    a = wb.compare_pipelines(ex, pipelines=names, repeat=2, executor=client)
    b = wb.compare_pipelines(ex, pipelines=names, repeat=2)
    cols = ["pipeline", "stage", "ops", "check_passed", "error"]
    assert a[cols].equals(b[cols])


def test_a_crash_on_a_dask_worker_is_isolated_and_the_worker_lives(client):
    pids = client.run(os.getpid)
    pool = resolve(client)
    assert isinstance(pool, ExecutorPool) and pool.width == 2
    # chunks whose request kills the remote worker process are split until each crasher stands alone
    out = pool.map("crash", [["abort"], ["abort", "abort"]], lambda chunk: ("abort",))
    assert out.results == () and [f.kind for f in out.failures] == ["crash", "crash", "crash"]
    assert all(isinstance(f, ItemFailure) and f.item == "abort" for f in out.failures)
    heard = []
    pool.work("crash", ["abort", "segv"], lambda t: (t,), lambda t, v, e: heard.append((t, type(e).__name__)))
    assert sorted(heard) == [("abort", "WorkerCrash"), ("segv", "WorkerCrash")]
    assert client.run(os.getpid) == pids, "the Dask workers are the same processes"
    ok = pool.map("run_each", [["canonicalize"], ["cse"]], lambda chunk: ("module {\n}\n", chunk, False))
    assert ok.failures == () and sorted(o.pipeline for o in ok.results) == ["canonicalize", "cse"]


def _up_down(x, y):  # a transpose-up and a transpose-down pattern undo each other here: never returns
    return jnp.sin(x.T + y.T)


def test_a_batch_that_never_returns_is_killed_there_and_split(client):
    ex = wb.explore(_up_down, jnp.ones((4, 3)), jnp.ones((4, 3)), pipeline="none")
    by_name = {p.name: p for p in catalog()}
    pats = [by_name[n] for n in ("transpose_elementwise", "elementwise_all_transpose_operands_simplify",
                                 "transpose_transpose", "add_simplify")]
    pids = client.run(os.getpid)
    exact = scan(ex, "stablehlo", patterns=pats, exact=True, progress=False)
    together = scan(ex, "stablehlo", patterns=pats, families=lambda p: 0, batch_limit=1.0, progress=False,
                    executor=client)
    assert together.limited >= 1  # the batch of all four ran past its limit there, and was split
    answers = [(r.name, r.changed, r.error) for r in together.rows]
    assert answers == [(r.name, r.changed, r.error) for r in exact.rows]
    assert client.run(os.getpid) == pids


def test_config_sets_the_default_executor(client, mlp):
    assert wb.config() == {"executor": None}
    local = mlp.applicable(progress=False)
    try:
        assert wb.config(executor=client) == {"executor": client}
        before = served(client)
        with distributed.get_task_stream(client) as stream:
            assert mlp.applicable(progress=False) == local
        assert served(client) - before >= 10
        assert sum(1 for t in stream.data if t["key"].startswith("run_request")) >= 10
        # a call's own executor wins: "local" is the built-in pool
        before = served(client)
        assert mlp.applicable(progress=False, executor="local") == local
        assert served(client) == before
        assert wb.config(executor=client.scheduler.address)["executor"] == client.scheduler.address
        assert isinstance(resolve(), ExecutorPool)
    finally:
        wb.config(executor=None)
    assert resolve() is default_pool()
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        wb.config(executor=42)
    with pytest.raises(ValueError, match="tcp://host:port"):
        wb.config(executor="scheduler:8786")
    assert wb.config() == {"executor": None}


def test_an_address_without_dask_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails, as where it is not installed
    with pytest.raises(ImportError) as e:
        wb.config(executor="tcp://scheduler:8786")
    assert str(e.value) == "executor='tcp://scheduler:8786' needs dask.distributed: pip install 'hlo-workbench[cluster]'"
    assert wb.config() == {"executor": None}
