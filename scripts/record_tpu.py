"""Record what a TPU makes, for the tests that read it on a machine without one.

Run on the TPU machine (``../shared/device/README.md``), from the project's root:

    bash .device/p2/tpu-run.sh python3 scripts/record_tpu.py OUT_FOLDER

It writes into OUT_FOLDER:
- ``tpu_fixtures.tar.xz``: what ``tests/fixtures/tpu/`` holds -- a small program's XLA dump folder (every
  pass that changed the module, the optimized module, the buffer assignment, the memory-usage report),
  XLA's cost and memory analyses of its executable, the profiler's trace of three calls on the chip, the
  profiler's trace of its compile, and ``facts.json`` (the device, its kind, the platform version);
- ``study.tar.xz``: larger recordings to study, not to commit (a Flax NNX step's run trace);
- ``record.json``: what each step found (a compile-only child's compile, times), printed too.

Each step is tried on its own: one that fails is written down with its error and the others go on.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RECORD: dict = {}
ONLY = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else set()


def step(name):
    def wrap(fn):
        if ONLY and name not in ONLY and name != "facts":
            return fn
        t0 = time.perf_counter()
        try:
            RECORD[name] = {"ok": True, "found": fn()}
        except Exception as e:  # noqa: BLE001 -- written down, the next step goes on
            RECORD[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:2000],
                            "traceback": traceback.format_exc()[-3000:]}
        RECORD[name]["seconds"] = round(time.perf_counter() - t0, 3)
        print(f"[record] {name}: {'ok' if RECORD[name]['ok'] else RECORD[name]['error'][:300]} "
              f"({RECORD[name]['seconds']} s)", flush=True)
        return fn
    return wrap


def small(x, w, b):
    """The recorded program: a dense layer, a softmax and a reduction (a dot, a fusion, a reduce)."""
    import jax
    import jax.numpy as jnp

    h = jnp.tanh(x @ w + b)
    return jax.nn.softmax(h, axis=-1).sum(0)


def small_args():
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    return (jnp.asarray(rng.standard_normal((128, 256)), jnp.float32),
            jnp.asarray(rng.standard_normal((256, 512)) / 16, jnp.float32),
            jnp.asarray(rng.standard_normal((512,)), jnp.float32))


CHILD = r"""
import json, os, sys, time, tempfile
t0 = time.perf_counter()
import jax, jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
out = {"jax_platforms": os.environ.get("JAX_PLATFORMS")}
try:
    topo = topologies.get_topology_desc(topology_name="v5e:1x1", platform="tpu", chips_per_host_bounds=[1, 1, 1])
    dev = topo.devices[0]
    out["topology_device"] = [str(dev), dev.platform, getattr(dev, "device_kind", None)]
    out["client"] = [type(dev.client).__name__, [m for m in dir(dev.client) if not m.startswith("_")]]
    def f(x, w, b):
        h = jnp.tanh(x @ w + b)
        return jax.nn.softmax(h, axis=-1).sum(0)
    args = [jax.ShapeDtypeStruct(s, jnp.float32, sharding=SingleDeviceSharding(dev)) for s in ((128, 256), (256, 512), (512,))]
    d = tempfile.mkdtemp()
    t1 = time.perf_counter()
    c = jax.jit(f).lower(*args).compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_pass_re": ".*",
        "xla_dump_hlo_as_text": True, "xla_disable_hlo_passes": "algsimp"})
    out["compile_s"] = time.perf_counter() - t1
    out["dumps"] = len(os.listdir(d))
    out["cost"] = {k: float(v) for k, v in (c.cost_analysis() or {}).items() if isinstance(v, (int, float))}
    try:
        m = c.memory_analysis()
        out["memory"] = str(m)
    except Exception as e:
        out["memory"] = repr(e)
    out["algsimp_dumped"] = any("algsimp" in n for n in os.listdir(d))
except Exception as e:
    import traceback
    out["error"] = traceback.format_exc()[-2500:]
out["total_s"] = time.perf_counter() - t0
print("CHILD" + json.dumps(out))
"""


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    fixtures = tempfile.mkdtemp(prefix="tpu-fixtures-")
    study = tempfile.mkdtemp(prefix="tpu-study-")

    import jax

    @step("facts")
    def _():
        devs = jax.devices()
        d = devs[0]
        facts = {"default_backend": jax.default_backend(), "devices": [str(x) for x in devs],
                 "platform": d.platform, "device_kind": d.device_kind, "coords": list(getattr(d, "coords", []) or []),
                 "num_cores": getattr(d, "num_cores", None), "jax": jax.__version__,
                 "platform_version": getattr(d.client, "platform_version", None),
                 "memory_stats": {k: v for k, v in (d.memory_stats() or {}).items() if "limit" in k}}
        with open(os.path.join(fixtures, "facts.json"), "w") as f:
            json.dump(facts, f, indent=1)
        return facts

    args = small_args()

    @step("dumps_and_costs")
    def _():
        d = os.path.join(fixtures, "dumps")
        os.makedirs(d)
        lowered = jax.jit(small).lower(*args)
        t0 = time.perf_counter()
        compiled = lowered.compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_pass_re": ".*",
                                                     "xla_dump_hlo_as_text": True})
        seconds = time.perf_counter() - t0
        cost = compiled.cost_analysis()
        mem = compiled.memory_analysis()
        costs = {"cost_analysis": {k: (float(v) if isinstance(v, (int, float)) else str(v)) for k, v in (cost or {}).items()},
                 "memory_analysis": {k: int(getattr(mem, k)) for k in dir(mem)
                                     if k.endswith("_in_bytes") and isinstance(getattr(mem, k), int)}}
        with open(os.path.join(fixtures, "costs.json"), "w") as f:
            json.dump(costs, f, indent=1)
        names = sorted(os.listdir(d))
        # big side files (the graph dumps, the protos) are not what the readers read: keep the texts
        inside = {}
        for n in names:
            path = os.path.join(d, n)
            if os.path.isdir(path):
                inside[n] = sorted(os.listdir(path))[:200]
                shutil.rmtree(path)
            elif not n.endswith(".txt"):
                os.remove(path)
        return {"seconds": seconds, "files": len(names), "names": names[:400], "folders": inside,
                "bytes": sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))}

    from workbench.analysis.profile.capture import Capture

    def kept(c, name: str, shown: int) -> dict:
        """Write capture ``c``'s trace as fixture ``name``; its size and, per plane and line, its events."""
        with open(os.path.join(fixtures, name), "wb") as fh:
            fh.write(c.trace or b"")
        lines: dict = {}
        for e in c.events:
            lines.setdefault(f"{e.plane} | {e.line}", []).append(e.name[:120])
        return {"events": len(c.events), "bytes": len(c.trace or b""),
                "lines": {k: [len(v), v[:shown]] for k, v in lines.items()}}

    @step("run_trace")
    def _():
        f = jax.jit(small)
        jax.block_until_ready(f(*args))
        with Capture() as c:
            for _ in range(3):
                jax.block_until_ready(f(*args))
        return {**kept(c, "run.xplane.pb", 6),
                "stats_examples": [[e.plane, e.line, e.name[:100], [list(s) for s in e.stats][:12]]
                                   for e in c.events if e.plane.startswith("/device")][:40]}

    @step("compile_trace")
    def _():
        d = tempfile.mkdtemp()
        lowered = jax.jit(small).lower(*args)
        with Capture() as c:
            lowered.compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_pass_re": ".*",
                                              "xla_dump_hlo_as_text": True})
        return {**kept(c, "compile.xplane.pb", 10),
                "module_stat_events": [[e.line, e.name, [list(s) for s in e.stats]] for e in c.events
                                       if any(k == "module" for k, _ in e.stats)][:30]}

    @step("nnx_step_trace")
    def _():
        from tests.corpus import program

        inst = program("nnx_transformer").build()
        fn = inst.fn
        jax.block_until_ready(fn(*inst.args))
        with Capture() as c:
            for _ in range(10):
                jax.block_until_ready(fn(*inst.args))
        with open(os.path.join(study, "nnx_run.xplane.pb"), "wb") as fh:
            fh.write(c.trace or b"")
        return {"events": len(c.events), "bytes": len(c.trace or b""), "wall_ms": c.wall_ns / 1e6}

    @step("compile_only_child")
    def _():
        results = {}
        for name, extra in (("cpu_platforms", {"JAX_PLATFORMS": "cpu"}), ("no_platforms", {})):
            env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
            env.update({"ALLOW_MULTIPLE_LIBTPU_LOAD": "1", **extra})
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=240)
            line = next((ln for ln in p.stdout.splitlines() if ln.startswith("CHILD")), None)
            results[name] = {"rc": p.returncode, "wall_s": time.perf_counter() - t0,
                             "reply": json.loads(line[5:]) if line else None, "stderr": p.stderr[-1500:]}
        return results

    @step("workbench_user_road")
    def _():
        import cProfile
        import io
        import pstats

        import workbench as wb

        t0 = time.perf_counter()
        ex = wb.explore(small, *args)
        stages = ex.stages
        t_explore = time.perf_counter() - t0
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        r = ex.run()
        prof.disable()
        t_run = time.perf_counter() - t0
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
        with open(os.path.join(study, "first_run.pstats.txt"), "w") as fh:
            fh.write(s.getvalue())
        t0 = time.perf_counter()
        ex.run()
        t_second = time.perf_counter() - t0
        return {"device": getattr(ex, "device", None), "stages": len(stages),
                "names": [st.name for st in stages][-30:], "explore_s": t_explore, "first_run_s": t_run,
                "second_run_s": t_second, "check": str(getattr(r, "check", None))[:400]}

    @step("explore_profile")
    def _():
        import cProfile
        import io
        import pstats

        import workbench as wb
        from workbench import examples
        from workbench.pipeline.build import clear_caches

        found = {}
        for name in ("attention", "scan"):
            fn, a = examples.load(name)
            wb.explore(fn, *a).stages  # warm: the worker, the first compile's code paths
            jax.clear_caches()
            clear_caches()
            fn, a = examples.load(name)
            t0 = time.perf_counter()
            jax.jit(fn).lower(*a).compile()
            bare = time.perf_counter() - t0
            jax.clear_caches()
            clear_caches()
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            ex = wb.explore(fn, *a)
            ex.stages
            prof.disable()
            took = time.perf_counter() - t0
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(60)
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
            with open(os.path.join(study, f"explore_{name}.pstats.txt"), "w") as fh:
                fh.write(s.getvalue())
            found[name] = {"bare_s": bare, "explore_s": took, "xla_s": ex["xla:optimized"].seconds,
                           "steps": ex.xla_steps()}
        return found

    with open(os.path.join(out, "record.json"), "w") as f:
        json.dump(RECORD, f, indent=1, default=str)
    for folder, name in ((fixtures, "tpu_fixtures.tar.xz"), (study, "study.tar.xz")):
        with tarfile.open(os.path.join(out, name), "w:xz") as tar:
            tar.add(folder, arcname=".")
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "traceback"} for k, v in RECORD.items()},
                     default=str)[:6000])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tpu-record")
