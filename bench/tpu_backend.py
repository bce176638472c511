"""The TPU's kernels, checked on the chip and recorded for CI: ``ex.backend()`` on programs whose bound is known.

For each program: explore it on the TPU, profile it (measured time per fusion), read its kernels (the LLO child
compiles it again with libtpu's dump flags) and print, per fusion, its bundles, MXU occupancy, libtpu's estimate,
the measured time and the verdict; for the matmuls the measured FLOP/s against the chip's bf16 peak. Expected:
the bf16 matmul's fusion MXU-bound with an MXU occupancy >= 80 %, the elementwise chain DMA-bound.

With ``--record DIR`` it writes, per recorded program, ``DIR/<name>.hlox`` (the exploration, saved) and
``DIR/<name>.llo.tar.xz`` (its LLO dump: every kernel's final bundles, slot usage and fingerprints, the top-level
program's files, and the LLO after each pass of the ``--passes-of`` largest kernels), read on any machine by
tests/test_backend.py and the browser test.

Run (on the TPU machine, through ../shared/device):  python3 bench/tpu_backend.py [--record DIR] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import examples  # noqa: E402

RECORDED = ("attention_bf16", "mlp_bf16", "nnx_transformer")
# the files of every kernel a recording keeps (the LLO after each pass only for the largest kernels)
_SUMMARY = ("final_bundles", "final_hlo-static-per-bundle-utilization", "fingerprints", "deduplication-map",
            "hlo-static-bundle-profile", "schedule-analysis_final_bundles")


def _bf16(tree):
    return jax.tree.map(lambda a: a.astype(jnp.bfloat16) if getattr(a, "dtype", None) == jnp.float32 else a, tree)


def programs(only):
    def matmul(a, b):
        return a @ b

    def chain(x):
        return ((x * 1.5 + 2.0) * x - 0.5) * x + 0.25

    def printed(x, w):
        y = jnp.tanh(x @ w)
        jax.debug.print("mean {m}", m=y.mean())
        return y.sum(axis=0)

    key = jax.random.PRNGKey(0)
    out = {}
    fn, args = examples.load("attention")
    out["attention_bf16"] = (fn, _bf16(args))
    fn, args = examples.load("mlp")
    out["mlp_bf16"] = (fn, _bf16(args))
    from tests.corpus import program

    inst = program("nnx_transformer").build()
    out["nnx_transformer"] = (inst.fn, inst.args)
    n = 8192
    out["matmul_bf16_8192"] = (matmul, (jax.random.normal(key, (n, n), jnp.bfloat16),
                                        jax.random.normal(key, (n, n), jnp.bfloat16)))
    out["elementwise_8192"] = (chain, (jax.random.normal(key, (n, n), jnp.float32),))
    out["debug_print"] = (printed, (jnp.ones((64, 128)), jnp.ones((128, 128)) / 128))
    return {k: v for k, v in out.items() if not only or k in only}


def record(name: str, ex, kernels, folder: str, passes_of: int) -> None:
    os.makedirs(folder, exist_ok=True)
    ex.save(os.path.join(folder, f"{name}.hlox"), cost=False)
    table = kernels.table()
    largest = set(table["kernel"].head(passes_of))
    with tarfile.open(os.path.join(folder, f"{name}.llo.tar.xz"), "w:xz") as tf:
        for comp, files in kernels.index.components.items():
            for f in files:
                if comp in largest or any(k in f.what for k in _SUMMARY):
                    tf.add(os.path.join(kernels.folder, f.name), arcname=f.name)
        if kernels.index.hlo:
            tf.add(os.path.join(kernels.folder, kernels.index.hlo), arcname=kernels.index.hlo)
    print(f"  recorded {name}: {os.path.getsize(os.path.join(folder, name + '.llo.tar.xz')):,} bytes of LLO, "
          f"{os.path.getsize(os.path.join(folder, name + '.hlox')):,} of .hlox", flush=True)


def corpus() -> int:
    """Every corpus program (Flax, Equinox, Diffrax, Optax, haiku, loops, callbacks, Pallas ...) through ex.backend():
    its kernels, or why none, in words; an exception is a failure."""
    from tests.corpus import PROGRAMS

    bad = 0
    print("\ncorpus:", flush=True)
    for p in PROGRAMS:
        try:
            inst = p.build()
            t = time.perf_counter()
            ex = wb.explore(inst.fn, *inst.args)
            ex.stages  # noqa: B018
            k = ex.backend()
            if not k.available:
                print(f"  {p.name:22s} no kernels: {k.why}", flush=True)
                continue
            table = k.table()
            unknown = int(table["issued"].isna().sum())
            print(f"  {p.name:22s} {len(table):3d} fusions, {len(k.index.kernels):3d} kernels, {unknown} with a loop of "
                  f"unknown trips, busiest {table['fusion'].iloc[0]} ({table['bound'].iloc[0]}); "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001
            bad += 1
            print(f"  {p.name:22s} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
    return bad


def main() -> int:
    import pandas as pd

    pd.set_option("display.width", 220)
    pd.set_option("display.max_columns", 30)
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--record", default="")
    ap.add_argument("--passes-of", type=int, default=2)
    ap.add_argument("--corpus", action="store_true", help="also every program of tests/corpus: kernels read or why not")
    ap.add_argument("--report", default="", help="write the NNX step's HTML report (with its kernels) here")
    a = ap.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev} ({dev.device_kind})", flush=True)
    bad = 0
    for name, (fn, args) in programs(a.only).items():
        try:
            t = time.perf_counter()
            ex = wb.explore(fn, *args)
            ex.stages  # noqa: B018
            explore_s = time.perf_counter() - t
            prof = ex.profile()
            t = time.perf_counter()
            k = ex.backend()
            backend_s = time.perf_counter() - t
            if not k.available:
                print(f"{name}: no kernels: {k.why}", flush=True)
                bad += 1
                continue
            t = time.perf_counter()
            table = k.table()
            table_s = time.perf_counter() - t
            fusions_with_stages = sum(bool(k.kernel(f).stages()) for f in table["fusion"])
            print(f"\n{name}: explore {explore_s:.1f} s, LLO compile {backend_s:.1f} s (child {k.seconds:.1f} s), "
                  f"table {table_s:.2f} s; {len(table)} fusions, {fusions_with_stages} with LLO stages; dump "
                  f"{k.index.files:,} files {k.index.total_bytes / 1e6:.1f} MB, read {k.bytes_read / 1e6:.2f} MB; "
                  f"call {prof.untraced_call_us or prof.call_us:.1f} us", flush=True)
            print(table.drop(columns=["line"]).head(8).to_string(), flush=True)
            top = table.iloc[0]
            if name.startswith("matmul"):
                n = args[0].shape[0]
                us = top["measured_us"]
                rate = 2 * n ** 3 / (us * 1e-6) if us else float("nan")
                print(f"  {top['fusion']}: MXU occupancy {top['MXU']:.2f}, measured {us:.0f} us = {rate / 1e12:.1f} "
                      f"TFLOP/s of the v5e's 197 ({rate / 197e12:.0%}); {top['bound']}", flush=True)
                bad += not (top["MXU"] >= 0.8 and top["bound"] == "MXU-bound")
            if name.startswith("elementwise"):
                us = top["measured_us"]
                print(f"  {top['fusion']}: {top['hbm_bytes'] / 1e6:.0f} MB to and from HBM in {us:.0f} us = "
                      f"{top['hbm_bytes'] / (us * 1e-6) / 1e9:.0f} GB/s (peak 819); {top['bound']}", flush=True)
                bad += top["bound"] != "DMA-bound"
            kk = k.kernel(top["fusion"])
            print(f"  {kk!r}; lines {kk.lines()[:2]}; {len(kk.stages())} LLO stages of {len(kk.passes())} passes",
                  flush=True)
            if a.record and name in RECORDED:
                record(name, ex, k, a.record, a.passes_of)
            if a.report and name == "nnx_transformer":
                print(f"  report: {ex.report(a.report)}", flush=True)
        except Exception as e:  # noqa: BLE001 -- one program's failure is printed, the others go on
            import traceback

            traceback.print_exc()
            bad += 1
            print(f"{name}: ERROR {type(e).__name__}: {str(e)[:400]}", flush=True)
    if a.corpus:
        bad += corpus()
    print(f"\n{'all as expected' if not bad else f'{bad} unexpected'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
