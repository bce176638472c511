"""``ex.run(stage, processes=N)``: a sharded stage as N real processes joined by ``jax.distributed``,
and ``coordinator=``/``num_processes=``/``process_id=`` for one host of a cluster.

A sharded program needs its devices before JAX starts, and this pytest process's JAX has one CPU
device, so the sharded cases run as scripts in a fresh Python with 8 CPU devices (a 2 x 4 mesh),
as tests/test_execute.py's sharded test does; each script prints one RESULT line of JSON.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.run.multiprocess import DEVICE_COUNT_FLAG, child_env


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = "workbench.analysis.run.multiprocess_child"

PRELUDE = r"""
import json, os, signal, sys, threading, time
sys.path.insert(0, %(root)r)
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import workbench as wb
from workbench import examples

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))

def place(x):  # the MLP's batch over "data", its weights' columns and biases over "model"
    if x.ndim == 2 and x.shape[0] == 32:
        spec = P("data", None)
    elif x.shape[-1] %% 4 == 0:
        spec = P(*([None] * (x.ndim - 1) + ["model"]))
    else:
        spec = P()
    return jax.device_put(x, NamedSharding(mesh, spec))

fn, args = examples.load("mlp")
args = jax.tree_util.tree_map(place, args)
ex = wb.explore(fn, *args)

def children():
    # this process's children that run the multi-process child: pid -> argv
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = [a.decode() for a in open(f"/proc/{d}/cmdline", "rb").read().split(b"\0") if a]
            ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and %(child)r in argv:
            out[int(d)] = argv
    return out

def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
"""

RUN = PRELUDE + r"""
res = {"ndev": ex.spec.traced.exported.nr_devices}
single = ex.run(repeat=3)
t0 = time.perf_counter()
r = ex.run(processes=2, repeat=5)
res["wall"] = time.perf_counter() - t0
res.update(stage=r.stage, single_stage=single.stage, device=r.device, passed=r.check.passed, kind=r.check.kind,
           n=len(r.seconds), median=r.timing.median, left=len(children()), runs=len(ex.runs))
got, want = jax.tree_util.tree_leaves(r.outputs), jax.tree_util.tree_leaves(single.outputs)
res["same_tree"] = jax.tree_util.tree_structure(r.outputs) == jax.tree_util.tree_structure(single.outputs)
res["max_diff"] = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(got, want))
res["shapes"] = [list(np.shape(a)) == list(np.shape(b)) for a, b in zip(got, want)]
res["stablehlo"] = ex.run("stablehlo", processes=4, repeat=2).device  # 4 processes x 2 devices, another stage
for bad in (dict(processes=3), dict(processes=2, coordinator="127.0.0.1:1"), dict(num_processes=2, process_id=0),
            dict(coordinator="127.0.0.1:1", num_processes=2), dict(coordinator="nohost", num_processes=2, process_id=0),
            dict(processes=0)):
    try:
        ex.run(repeat=1, **bad)
        res.setdefault("refused", []).append("")
    except wb.WorkbenchError as e:
        res.setdefault("refused", []).append(str(e))
# float64 and bfloat16 go through the .npz files and come back with their dtypes
jax.config.update("jax_enable_x64", True)
import ml_dtypes
def h(a, b):
    return a * 2.0, b + b
a = jax.device_put(np.linspace(0, 1, 64).reshape(16, 4), NamedSharding(mesh, P("data", "model")))
b = jax.device_put(np.ones((8, 4), ml_dtypes.bfloat16), NamedSharding(mesh, P(None, "model")))
w = wb.explore(h, a, b).run(processes=2, repeat=1)
res["dtypes"] = [str(o.dtype) for o in w.outputs] + [w.check.passed]
res["f64_exact"] = bool(np.array_equal(w.outputs[0], np.asarray(a) * 2.0))
print("RESULT" + json.dumps(res))
"""

KILLED = PRELUDE + r"""
seen = {}
def killer():  # kills process 1 once it has started, as a crash would
    deadline = time.time() + 120
    while time.time() < deadline:
        seen.update(children())
        victim = [pid for pid, argv in seen.items() if argv[argv.index("--process-id") + 1] == "1"]
        if victim and len(seen) >= 2:
            time.sleep(1.0)
            seen.update(children())
            os.kill(victim[0], signal.SIGKILL)
            return
        time.sleep(0.02)
threading.Thread(target=killer, daemon=True).start()
res = {}
t0 = time.perf_counter()
try:
    ex.run(processes=2, repeat=100000, timeout=120)
    res["error"] = ""
except wb.WorkbenchError as e:
    res.update(error=str(e), type=type(e).__name__, process=e.process_id, code=e.returncode)
res["seconds"] = time.perf_counter() - t0
res["seen"] = len(seen)
res["alive"] = [pid for pid in seen if alive(pid)]
res["folders"] = [os.path.exists(argv[argv.index("--dir") + 1]) for argv in seen.values()]
# a coordinator nobody serves (this host claims to be process 1 of 2): bounded by the timeout
t0 = time.perf_counter()
try:
    ex.run(coordinator="127.0.0.1:%(port)d", num_processes=2, process_id=1, timeout=8)
    res["lonely"] = ""
except wb.WorkbenchError as e:
    res["lonely"] = str(e)
res["lonely_seconds"] = time.perf_counter() - t0
res["left"] = len(children())
print("RESULT" + json.dumps(res))
"""

ORPHANED = PRELUDE + r"""
print("STARTED", flush=True)
ex.run(processes=2, repeat=10 ** 6, timeout=600)   # killed from outside long before it ends
"""

CLUSTER = PRELUDE + r"""
k = int(sys.argv[1])
r = ex.run(coordinator="127.0.0.1:%(port)d", num_processes=2, process_id=k, repeat=3, timeout=240)
print("RESULT" + json.dumps({"device": r.device, "passed": r.check.passed, "n": len(r.seconds),
                             "left": len(children())}))
"""


def _env():
    return {**os.environ, "XLA_FLAGS": f"{DEVICE_COUNT_FLAG}=8", "TF_CPP_MIN_LOG_LEVEL": "1"}


def _script(tmp_path, name, template, **values):
    path = tmp_path / f"{name}.py"
    path.write_text(template % {"root": ROOT, "child": CHILD, "port": 0, **values})
    return path


def _result(proc) -> dict:
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, (proc.stdout[-2000:], proc.stderr[-4000:])
    return json.loads(line[len("RESULT"):])


def _free_port() -> int:
    from workbench.analysis.run.multiprocess import free_port

    return free_port()


@pytest.mark.slow
def test_a_sharded_stage_runs_as_two_processes_and_matches_the_single_process_run(tmp_path):
    script = _script(tmp_path, "run", RUN)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=600,
                          cwd=tmp_path)
    res = _result(proc)
    assert res["ndev"] == 8 and res["stage"] == res["single_stage"]
    assert res["device"] == "2 processes x 4 cpu devices"
    assert res["passed"] and res["kind"] == "float64"
    assert res["n"] == 5 and res["median"] > 0 and res["runs"] == 2
    # the same numbers as the single-process run, up to the order of the cross-process sums
    assert res["same_tree"] and all(res["shapes"]) and res["max_diff"] < 1e-5, res
    assert res["stablehlo"] == "4 processes x 2 cpu devices"
    assert res["left"] == 0  # no child outlives a run
    uneven, both, lonely_ids, no_id, no_port, zero = res["refused"]
    assert "8 devices, which 3 processes cannot share evenly" in uneven
    assert "not both" in both and "go with coordinator=" in lonely_ids and "needs num_processes=" in no_id
    assert "'host:port'" in no_port and "processes must be an integer >= 1" in zero
    assert res["dtypes"] == ["float64", "bfloat16", True] and res["f64_exact"]


@pytest.mark.slow
def test_a_killed_process_stops_the_run_with_its_name_and_leaves_nothing_behind(tmp_path):
    script = _script(tmp_path, "killed", KILLED, port=_free_port())
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=600,
                          cwd=tmp_path)
    res = _result(proc)
    assert res["type"] == "ProcessRunError" and res["process"] == 1 and res["code"] == -9, res
    assert "process 1 of 2" in res["error"] and "SIGKILL" in res["error"] and "every process" in res["error"]
    assert res["seconds"] < 100  # the other process did not hold the run until the timeout
    assert res["seen"] == 2 and res["alive"] == [] and not any(res["folders"]), res
    # nobody serves the coordinator: the run ends at its timeout, naming the process, with a hint
    assert "process 1" in res["lonely"] and res["lonely_seconds"] < 30, res
    assert res["left"] == 0


def _children_of(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        try:
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and CHILD.encode() in argv:
            out.append(int(d))
    return out


def _running(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_the_processes_exit_when_the_notebook_that_started_them_is_killed(tmp_path):
    script = _script(tmp_path, "orphaned", ORPHANED)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env=_env(), cwd=tmp_path, text=True)
    try:
        assert parent.stdout.readline().startswith("STARTED")
        deadline = time.time() + 120
        kids = []
        while len(kids) < 2 and time.time() < deadline:
            kids = _children_of(parent.pid)
            time.sleep(0.05)
        assert len(kids) == 2
        argv = open(f"/proc/{kids[0]}/cmdline", "rb").read().decode().split("\0")
        folder = argv[argv.index("--dir") + 1]
        time.sleep(2.0)  # well inside the run: joining the cluster, compiling or calling
        parent.kill()  # SIGKILL: no finally runs in the parent
        parent.wait(timeout=30)
        deadline = time.time() + 20
        while any(_running(k) for k in kids) and time.time() < deadline:
            time.sleep(0.1)
        left = [k for k in kids if _running(k)]
    finally:
        parent.kill()
        parent.wait()
    for k in left:  # do not leave them behind even when the test fails
        os.kill(k, signal.SIGKILL)
    time.sleep(0.5)
    gone = not os.path.exists(folder)
    shutil.rmtree(folder, ignore_errors=True)
    assert not left and gone  # the last one out removed the run's folder


@pytest.mark.slow
def test_two_hosts_of_a_cluster_each_start_one_process_and_get_the_outputs(tmp_path):
    port = _free_port()
    script = _script(tmp_path, "cluster", CLUSTER, port=port)
    procs = [subprocess.Popen([sys.executable, str(script), str(k)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=_env(), cwd=tmp_path) for k in (0, 1)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=600)
            outs.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for k, proc in enumerate(outs):
        res = _result(proc)
        assert res["device"] == f"2 processes x 4 cpu devices (process {k}, coordinator 127.0.0.1:{port})", res
        assert res["passed"] and res["n"] == 3 and res["left"] == 0


def test_a_single_device_stage_is_refused():
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, pipeline="canonicalize")
    with pytest.raises(wb.WorkbenchError, match="sharded over several devices"):
        ex.run(processes=2)
    with pytest.raises(wb.WorkbenchError, match="sharded over several devices"):
        ex.run(coordinator="127.0.0.1:1234", num_processes=2, process_id=0)
    assert ex.runs == []


def test_a_child_gets_its_share_of_devices_and_keeps_the_other_xla_flags():
    env = child_env(4, {"XLA_FLAGS": f"--xla_dump_to=/tmp/d {DEVICE_COUNT_FLAG}=8 --xla_cpu_use_thunk_runtime=true",
                        "JAX_PLATFORMS": "cuda", "PYTHONPATH": "/elsewhere"})
    assert env["XLA_FLAGS"].split() == ["--xla_dump_to=/tmp/d", "--xla_cpu_use_thunk_runtime=true",
                                        f"{DEVICE_COUNT_FLAG}=4"]
    assert env["JAX_PLATFORMS"] == "cpu" and env["JAX_NUM_CPU_DEVICES"] == "4"
    assert env["PYTHONPATH"].split(os.pathsep) == [ROOT, "/elsewhere"]
    assert child_env(2, {})["XLA_FLAGS"] == f"{DEVICE_COUNT_FLAG}=2"


@pytest.mark.subprocess
def test_the_child_refuses_to_run_without_its_folder(tmp_path):
    r = subprocess.run([sys.executable, "-m", CHILD, "--dir", str(tmp_path), "--coordinator", "127.0.0.1:1",
                        "--num-processes", "1", "--process-id", "0"], capture_output=True, text=True, timeout=120,
                       env=child_env(1), cwd=tmp_path)
    assert r.returncode != 0 and "meta.json" in r.stderr
