"""One process of a multi-process run (``python -m workbench.analysis.run.multiprocess_child``).

The parent (``workbench.analysis.run.multiprocess``) writes a folder with the stage as a serialized
``jax.export.Exported`` (``exported.bin``), the full input arrays (``inputs.npz``, no pickle) and
``meta.json`` (the mesh's axis names, sizes and types, the inputs' dtypes, XLA options, repeats),
and starts this module once per process with its environment already set (``XLA_FLAGS`` with this
process's CPU device count, ``JAX_PLATFORMS=cpu``). Each process:

1. joins the cluster with ``jax.distributed.initialize(coordinator, num_processes, process_id)``
   before anything touches a JAX backend;
2. builds the global mesh over every process's devices, and each argument as a global array with the
   sharding the Exported expects (``Exported.in_shardings_jax(mesh)``; replicated where it has none),
   by ``jax.make_array_from_callback`` from the full numpy input;
3. calls ``Exported.call`` under ``jax.jit`` once to warm up, then ``repeat`` times, timing each call
   (all processes take part in every call: the program is one SPMD program over the global mesh);
4. gathers the outputs (``multihost_utils.process_allgather``); with ``--write`` it writes them
   (``outputs.npz``) and its timings (``timings.json``), each to a temporary name and then renamed.

Anything that fails exits non-zero with the traceback on stderr, which the parent shows; a process
whose parent is gone (``--parent``) exits at once.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m workbench.analysis.run.multiprocess_child")
    p.add_argument("--dir", required=True, help="the folder the parent wrote")
    p.add_argument("--coordinator", required=True, help="host:port of process 0's coordinator")
    p.add_argument("--num-processes", type=int, required=True)
    p.add_argument("--process-id", type=int, required=True)
    p.add_argument("--init-timeout", type=int, default=300, help="seconds to wait for the other processes")
    p.add_argument("--write", action="store_true", help="write the outputs and timings into --dir")
    p.add_argument("--parent", type=int, default=0, help="the parent's pid: exit when it is gone")
    return p.parse_args(argv)


def _watch_parent(pid: int, folder: str) -> None:
    """Exit as soon as the parent is gone (a killed notebook kernel cannot stop its children), removing
    the run's folder, which the parent can no longer remove."""
    import shutil
    import threading

    def watch():
        while os.getppid() == pid:
            time.sleep(0.5)
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(3)

    if pid:
        threading.Thread(target=watch, daemon=True, name="watch-parent").start()


def _load_inputs(folder: str, meta: dict):
    import numpy as np

    from .multiprocess import as_dtype

    with np.load(os.path.join(folder, "inputs.npz"), allow_pickle=False) as z:
        arrays = [z[f"a{i}"] for i in range(len(meta["dtypes"]))]
    return [as_dtype(a, name) for a, name in zip(arrays, meta["dtypes"])]


def _save(path: str, arrays: dict) -> None:
    import numpy as np

    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _write_json(path: str, value) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def main(argv=None) -> int:
    opts = _parse(sys.argv[1:] if argv is None else argv)
    _watch_parent(opts.parent, opts.dir)
    with open(os.path.join(opts.dir, "meta.json")) as f:
        meta = json.load(f)

    import jax

    jax.config.update("jax_enable_x64", True)  # the inputs keep their dtypes (float64 ones too)
    jax.distributed.initialize(coordinator_address=opts.coordinator, num_processes=opts.num_processes,
                               process_id=opts.process_id, initialization_timeout=opts.init_timeout,
                               heartbeat_timeout_seconds=max(10, min(100, opts.init_timeout)))
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

    with open(os.path.join(opts.dir, "exported.bin"), "rb") as f:
        exp = jax.export.deserialize(bytearray(f.read()))
    if jax.device_count() != exp.nr_devices:
        raise SystemExit(f"the module is sharded over {exp.nr_devices} devices, but the {opts.num_processes} "
                         f"processes have {jax.device_count()} devices together "
                         f"({jax.local_device_count()} in process {opts.process_id})")
    sizes = tuple(meta["mesh"]["sizes"])
    types = tuple(getattr(AxisType, t) for t in meta["mesh"]["types"])
    mesh = Mesh(np.array(jax.devices()).reshape(sizes), tuple(meta["mesh"]["names"]), axis_types=types)

    inputs = _load_inputs(opts.dir, meta)
    shardings = exp.in_shardings_jax(mesh)
    flat = []
    for full, sharding in zip(inputs, shardings):
        sharding = sharding if sharding is not None else NamedSharding(mesh, PartitionSpec())
        flat.append(jax.make_array_from_callback(full.shape, sharding, lambda index, full=full: full[index]))
    args, kwargs = jax.tree_util.tree_unflatten(exp.in_tree, flat)

    call = jax.jit(exp.call)
    if meta.get("xla_options"):
        call = call.lower(*args, **kwargs).compile(compiler_options=meta["xla_options"])
    t0 = time.perf_counter()
    out = jax.block_until_ready(call(*args, **kwargs))
    first = time.perf_counter() - t0
    times = []
    for _ in range(max(1, int(meta.get("repeat", 1)))):
        t = time.perf_counter()
        jax.block_until_ready(call(*args, **kwargs))
        times.append(time.perf_counter() - t)

    leaves = jax.tree_util.tree_leaves(out)
    gathered = multihost_utils.process_allgather(leaves, tiled=True)
    if opts.write:
        _save(os.path.join(opts.dir, "outputs.npz"), {f"o{i}": np.asarray(g) for i, g in enumerate(gathered)})
        _write_json(os.path.join(opts.dir, "timings.json"), {
            "times": times, "first_call": first, "process_id": opts.process_id,
            "local_devices": jax.local_device_count(), "devices": jax.device_count(),
            "out_dtypes": [str(np.asarray(g).dtype) for g in gathered]})
    multihost_utils.sync_global_devices("workbench-multiprocess-done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
