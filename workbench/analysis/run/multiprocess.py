"""Run a sharded stage as several processes joined by ``jax.distributed``: locally (``processes=N``)
or as this host's share of a real multi-host cluster (``coordinator=``, ``num_processes=``,
``process_id=``).

The stage's module goes into the traced ``jax.export.Exported`` (as ``run_stage`` does), which is
serialized (``Exported.serialize``) into a temporary folder with the full input arrays (numpy
``.npz``, no pickle) and the mesh's shape. The processes are fresh interpreters
(``python -P -m workbench.analysis.run.multiprocess_child``: ``children.command``; never a fork: JAX is
not fork-safe), each in its own process group with the workbench's child environment
(``children.child_env``): ``JAX_PLATFORMS=cpu`` and ``XLA_FLAGS`` giving it its share of the CPU
devices (the user's other XLA flags kept). They talk to each other through ``jax.distributed``, not
to this process: what they leave in the folder is their answer. Each joins the cluster, builds the
global arrays with the shardings the Exported expects on the global mesh, calls the module, gathers
the outputs and (the one that writes) leaves them and its timings in the folder. See
``multiprocess_child``.

Every run is bounded by ``timeout``: when it passes, or when any process fails, every process group
is killed, and the error names the process and shows the end of its stderr (kept in a log file per
process). No process outlives the call, whatever happens (``try``/``finally``).

Cluster mode: JAX must join a cluster before it first uses a backend, which in a notebook has long
happened (the Exploration was traced on its devices). So this host's share of the cluster runs in
ONE child process, the same child as above, started here with the cluster's coordinator, size and
this host's process id; the other hosts run the same notebook or script with their own
``process_id``. Every host gets the gathered outputs.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

import jax
import numpy as np

from ... import children
from ...children import DEVICE_COUNT_FLAG, command, ended, leftovers
from ...errors import ProcessRunError, WorkbenchError
from ...ir.dtypes import numpy_dtype, with_dtype
from ...pipeline.array_limit import Planned, refuse_large, write_npz
from ...pipeline.xla import check_options
from .execute import Timing, runnable_exported

__all__ = ["ProcessRunError", "DEFAULT_TIMEOUT", "DEVICE_COUNT_FLAG", "run_processes", "child_env",
           "free_port", "as_dtype"]

DEFAULT_TIMEOUT = 300.0  # seconds a multi-process run may take, start-up and compiles included
CHILD = "workbench.analysis.run.multiprocess_child"
_TAIL_LINES = 30


@dataclass(frozen=True)
class _Plan:
    """Who runs what: the cluster's size, the processes started here (their ids), which of them
    writes the outputs, the coordinator's address and each process's CPU device count."""

    num_processes: int
    local_ids: tuple[int, ...]
    writer: int
    coordinator: str
    local_devices: int
    cluster: bool

    def label(self) -> str:
        what = f"{self.num_processes} process{'es' * (self.num_processes != 1)} x {self.local_devices} cpu devices"
        if self.cluster:
            what += f" (process {self.local_ids[0]}, coordinator {self.coordinator})"
        return what


def free_port() -> int:
    """A TCP port on localhost that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(local_devices: int, base: dict | None = None) -> dict:
    """The environment of one process: ``children.child_env`` on the CPU alone with ``local_devices``
    CPU devices (``JAX_PLATFORMS=cpu``; ``XLA_FLAGS``' device count replaced, the user's other XLA
    flags kept), ``base`` (default: this process's) underneath."""
    return children.child_env(local_devices, base, platforms="cpu")


def as_dtype(a, name: str):
    """The array with its dtype back: numpy's .npz keeps bfloat16 and float8 as raw bytes (void)."""
    if str(a.dtype) == name:
        return a
    if a.dtype.kind == "V":
        return with_dtype(a, name)
    return a.astype(numpy_dtype(name))


def _count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise WorkbenchError(f"{name} must be an integer >= {least}, not {value!r}")
    return int(value)


def _plan(nr_devices: int, processes, coordinator, num_processes, process_id) -> _Plan:
    if coordinator is None:
        if num_processes is not None or process_id is not None:
            raise WorkbenchError("num_processes= and process_id= go with coordinator='host:port' (one host of a "
                                 "cluster); for processes on this machine alone pass processes=N")
        n = _count(processes, "processes", 1)
        ids, writer, address, cluster = tuple(range(n)), 0, f"127.0.0.1:{free_port()}", False
    else:
        if processes is not None:
            raise WorkbenchError("pass either processes=N (local processes) or coordinator= with num_processes= "
                                 "and process_id= (one host of a cluster), not both")
        if num_processes is None or process_id is None:
            raise WorkbenchError("coordinator= needs num_processes= (the cluster's size) and process_id= (this "
                                 "host's, 0 to num_processes - 1; host 0 runs the coordinator)")
        n = _count(num_processes, "num_processes", 1)
        k = _count(process_id, "process_id", 0)
        if k >= n:
            raise WorkbenchError(f"process_id {k} is not below num_processes {n}")
        host, _, port = str(coordinator).rpartition(":")
        if not host or not port.isdigit():
            raise WorkbenchError(f"coordinator must be 'host:port' (host 0's address), not {coordinator!r}")
        ids, writer, address, cluster = (k,), k, str(coordinator), True
    if nr_devices <= 1:
        raise WorkbenchError(
            "processes= and coordinator= run a module sharded over several devices, one share per process; this "
            "stage runs on a single device. Explore the function with its arguments placed with NamedSharding on "
            "a Mesh of several devices (then each process gets devices / processes of them), or run it with "
            "ex.run() alone.")
    if nr_devices % n:
        raise WorkbenchError(f"the module is sharded over {nr_devices} devices, which {n} processes cannot share "
                             f"evenly: pick a number of processes that divides {nr_devices}")
    return _Plan(n, ids, writer, address, nr_devices // n, cluster)


def _mesh_of(trees, nr_devices: int) -> dict:
    """The mesh the arguments are placed on (axis names, sizes and types), for the children to rebuild
    over all processes' devices."""
    meshes = {}
    for tree in trees:
        for leaf in jax.tree_util.tree_leaves(tree):
            sharding = getattr(leaf, "sharding", None)
            if isinstance(sharding, jax.sharding.NamedSharding):
                m = sharding.mesh
                desc = (tuple(m.axis_names), tuple(int(s) for s in m.axis_sizes), tuple(t.name for t in m.axis_types))
                meshes[desc] = None
        if meshes:
            break
    if not meshes:
        raise WorkbenchError("processes= rebuilds the arguments' Mesh over every process's devices, and no argument "
                             "is placed with a NamedSharding on a Mesh: place them with "
                             "jax.device_put(x, NamedSharding(mesh, spec))")
    if len(meshes) > 1:
        raise WorkbenchError(f"the arguments are placed on {len(meshes)} different meshes; processes= runs one mesh")
    names, sizes, types = next(iter(meshes))
    if int(np.prod(sizes)) != nr_devices:
        raise WorkbenchError(f"the arguments' mesh has {int(np.prod(sizes))} devices, but the module is sharded "
                             f"over {nr_devices}")
    return {"names": list(names), "sizes": list(sizes), "types": list(types)}


def _stage_args(ex, args):
    traced = ex.spec.traced
    if traced is None:
        if args is not None:
            return tuple(args)
        raise WorkbenchError("processes= runs a traced program; this Exploration has no trace (text or a saved file)")
    return traced.executable_args(None if args is None else tuple(args))[0]


def _write_inputs(folder: str, exported, args) -> list[str]:
    """Write the arguments, whole (gathered from their shards), to ``inputs.npz`` for the children;
    ArrayTooLargeError before any is gathered when they pass ``array_limit()``."""
    leaves, tree = jax.tree_util.tree_flatten((tuple(args), {}))
    if tree != exported.in_tree or len(leaves) != len(exported.in_avals):
        raise WorkbenchError(f"the arguments do not match the module's: {tree} vs {exported.in_tree}")
    for i, leaf in enumerate(leaves):
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", np.float32), jax.dtypes.extended):
            raise WorkbenchError(f"argument leaf {i} is a typed PRNG key, which processes= cannot ship; pass "
                                 "jax.random.key_data(key) and wrap it inside the function")
    doing = "processes= would write the arguments to inputs.npz for its processes"
    refuse_large([Planned(f"argument leaf {i}", np.shape(leaf), leaf.dtype if hasattr(leaf, "dtype") else
                          np.asarray(leaf).dtype) for i, leaf in enumerate(leaves)], doing, "Run it on smaller arrays.")
    arrays = {f"a{i}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
    write_npz(os.path.join(folder, "inputs.npz"), arrays, doing)
    return [str(a.dtype) for a in arrays.values()]


def _indent(text: str) -> str:
    return "    " + "\n    ".join(text.splitlines()) if text.strip() else "    (nothing on stderr)"


def _stop(procs) -> None:
    """Kill every child's process group (the child and anything it started) and reap the children."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def _start(folder: str, plan: _Plan, timeout: float, procs: dict) -> None:
    """Start the processes of ``plan`` here, each into ``procs`` as soon as it exists (so that one
    that cannot start leaves the others to be stopped)."""
    env = child_env(plan.local_devices)
    init = str(max(1, int(min(timeout, 300))))
    for pid in plan.local_ids:
        cmd = command(CHILD, "--dir", folder, "--coordinator", plan.coordinator,
                      "--num-processes", str(plan.num_processes), "--process-id", str(pid), "--init-timeout", init,
                      "--parent", str(os.getpid()))
        if pid == plan.writer:
            cmd.append("--write")
        with open(os.path.join(folder, f"process{pid}.out"), "wb") as out, \
                open(os.path.join(folder, f"process{pid}.err"), "wb") as err:
            procs[pid] = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                          cwd=folder, start_new_session=True)


def _wait(folder: str, procs: dict, plan: _Plan, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        codes = {pid: p.poll() for pid, p in procs.items()}
        failed = [pid for pid, c in codes.items() if c not in (None, 0)]
        if failed:
            # the process that failed first is the one killed by a signal, if any (the others then notice)
            pid = min(failed, key=lambda i: (codes[i] >= 0, i))
            _stop(procs.values())
            tail = leftovers.tail(os.path.join(folder, f"process{pid}.err"), _TAIL_LINES)
            others = [i for i in failed if i != pid]
            also = f" (process {', '.join(map(str, others))} failed too)" if others else ""
            raise ProcessRunError(
                f"process {pid} of {plan.num_processes} (pid {procs[pid].pid}) {ended(codes[pid])}{also}; every "
                f"process of the run was stopped. The end of its stderr:\n{_indent(tail)}",
                pid, codes[pid], tail)
        if all(c == 0 for c in codes.values()):
            return
        if time.monotonic() > deadline:
            running = [pid for pid, c in codes.items() if c is None]
            _stop(procs.values())
            tails = "\n".join(f"  process {pid}:\n"
                              f"{_indent(leftovers.tail(os.path.join(folder, f'process{pid}.err'), 12))}"
                              for pid in running)
            hint = (" Are the other hosts running the same call with their process_id, and can they reach the "
                    f"coordinator {plan.coordinator}?" if plan.cluster else "")
            raise ProcessRunError(
                f"the run did not finish within {timeout:g} s (still running: process "
                f"{', '.join(map(str, running))}); every process of the run was stopped.{hint} The end of their "
                f"stderr:\n{tails}", None, None, tails)
        time.sleep(0.05)


def _serialized(exported) -> bytes:
    try:
        return bytes(exported.serialize())
    except ImportError as e:  # jax.export's serialization needs the flatbuffers package
        raise WorkbenchError(f"processes= ships the stage as a serialized jax.export.Exported, and JAX cannot "
                             f"serialize here: {e} (pip install flatbuffers)") from None


def _read_outputs(folder: str, exported):
    with np.load(os.path.join(folder, "outputs.npz"), allow_pickle=False) as z:
        leaves = [z[f"o{i}"] for i in range(len(exported.out_avals))]
    leaves = [as_dtype(a, str(np.dtype(aval.dtype))) for a, aval in zip(leaves, exported.out_avals)]
    with open(os.path.join(folder, "timings.json")) as f:
        timings = json.load(f)
    return jax.tree_util.tree_unflatten(exported.out_tree, leaves), timings


def run_processes(ex, stage, *, processes: int | None = None, coordinator: str | None = None,
                  num_processes: int | None = None, process_id: int | None = None, repeat: int = 20, args=None,
                  timeout: float = DEFAULT_TIMEOUT):
    """Run ``stage`` of ``ex`` (a module sharded over several devices) as ``processes`` local processes,
    or as process ``process_id`` of a ``num_processes``-process cluster whose process 0 serves
    ``coordinator`` ("host:port"). Returns (outputs as numpy arrays in the user's pytree, Timing of
    the ``repeat`` calls after a warm-up as measured inside the writing process, what ran where:
    "2 processes x 4 cpu devices"). The processes compile with the Exploration's XLA options.

    A module on a single device is refused (WorkbenchError): processes= splits a mesh, so explore
    the function with its arguments placed on one. ProcessRunError when a process fails or the run
    outlives ``timeout`` seconds; no process is left running either way.
    """
    traced = ex.spec.traced
    if traced is not None and traced.exporter is None:
        raise WorkbenchError(f"run(processes=N) ships the program to its processes serialized with jax.export, "
                             f"which this one cannot be: {traced.why_not_exported}. Run it in this process "
                             "(ex.run(device=...)), or without the callbacks.")
    exported = runnable_exported(ex, stage)
    plan = _plan(exported.nr_devices, processes, coordinator, num_processes, process_id)
    if "cpu" not in exported.platforms:
        raise WorkbenchError(f"processes= runs on CPU devices; stage {stage.name!r} was lowered for "
                             f"{', '.join(exported.platforms)}: explore with device='cpu:0'")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise WorkbenchError(f"timeout must be a positive number of seconds, not {timeout!r}")
    args = _stage_args(ex, args)
    traced = ex.spec.traced
    mesh = _mesh_of([args] + ([traced.args] if traced is not None else []), exported.nr_devices)
    options = check_options(dict(ex.spec.xla_options))
    folder = tempfile.mkdtemp(prefix="workbench-processes-")
    procs: dict = {}
    try:
        dtypes = _write_inputs(folder, exported, args)
        with open(os.path.join(folder, "exported.bin"), "wb") as f:
            f.write(_serialized(exported))
        with open(os.path.join(folder, "meta.json"), "w") as f:
            json.dump({"mesh": mesh, "dtypes": dtypes, "repeat": max(1, int(repeat)), "xla_options": options,
                       "stage": stage.name}, f)
        _start(folder, plan, timeout, procs)
        _wait(folder, procs, plan, timeout)
        outputs, timings = _read_outputs(folder, exported)
    finally:
        _stop(procs.values())
        shutil.rmtree(folder, ignore_errors=True)
    return outputs, Timing(tuple(timings["times"])), plan.label()
