"""What measuring costs (issue 29): the profiler's overhead, measured side by side in one run.

Per program, interleaved rounds, medians:
  call: profiled / plain   the median call of ``ex.profile(repeat=R)`` (its own clock around each call, the
                           profiler tracing) over the median call of ``ex.run(repeat=R, check=False)``: what
                           tracing every thunk adds to the time it measures
  profile / run            the whole ``ex.profile()`` (compile, warm-up, R calls traced, reading the trace,
                           the joins) over the whole ``ex.run(check=False)`` (compile, warm-up, R calls)
  explore+cp / explore     an explore with every stage made, then ``ex.compile_profile()`` (one more XLA
                           compile under the profiler, read and matched to the stages), over the explore alone
  coverage                 the share of a call the profiled instructions cover (median of the calls)
  cp total / explore       compile_profile's total (the exploration's clocks for the trace, lowering and MLIR
                           passes; the profiler's for one more XLA compile) over what the exploration's own
                           clocks measured for the same work, its XLA compile waited for alone (target: within
                           15 %)
Programs: the attention example (a transformer block's gradient) and a Flax NNX transformer block's AdamW
training step (d=128, seq 64, batch 8).

Run:  .venv/bin/python bench/bench_profile.py [--repeat 3] [--calls 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import examples  # noqa: E402
from workbench.pipeline.build import clear_caches  # noqa: E402


def attention():
    fn, args = examples.load("attention")
    return fn, args


def nnx_block():
    import optax
    from flax import nnx

    from tests.corpus.flax_programs import Block

    model = Block(128, 4, 512, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    x = jax.random.normal(jax.random.key(1), (8, 64, 128))
    y = jax.random.normal(jax.random.key(2), (8, 64, 128))
    return train_step, (model, optimizer, x, y)


PROGRAMS = {"attention": attention, "nnx_block": nnx_block}


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def measure(make, repeat: int, calls: int) -> dict:
    fn, args = make()
    ex = wb.explore(fn, *args)
    ex.stages  # noqa: B018
    ex.profile(repeat=1)  # warm-up: the CPU's measured peaks, the profiler's first start
    rows = {k: [] for k in ("call_plain", "call_profiled", "run", "profile", "explore", "explore_cp", "coverage",
                            "cp_ratio")}
    for _ in range(repeat):
        s, r = timed(lambda: ex.run(repeat=calls, check=False))
        rows["run"].append(s)
        rows["call_plain"].append(r.timing.median)
        s, p = timed(lambda: ex.profile(repeat=calls))
        rows["profile"].append(s)
        rows["call_profiled"].append(p.timing.median)
        rows["coverage"].append(p.coverage)
        for key, extra in (("explore", False), ("explore_cp", True)):
            clear_caches()
            jax.clear_caches()
            fn, args = make()

            def one():
                e = wb.explore(fn, *args)
                e.stages  # noqa: B018
                if extra:
                    cp = e.compile_profile()
                    rows["cp_ratio"].append(cp.total_s / cp.explore_s)

            rows[key].append(timed(one)[0])
    return {k: statistics.median(v) for k, v in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--only", nargs="*", default=list(PROGRAMS))
    ns = ap.parse_args()
    print(f"profiling overhead: medians of {ns.repeat} interleaved rounds, {ns.calls} calls each")
    print(f"{'program':12s} {'call µs':>9s} {'profiled/plain':>15s} {'profile s':>10s} {'run s':>7s} "
          f"{'profile/run':>12s} {'explore s':>10s} {'+cp s':>7s} {'(explore+cp)/explore':>21s} {'coverage':>9s} "
          f"{'cp total/explore':>17s}")
    for name in ns.only:
        m = measure(PROGRAMS[name], ns.repeat, ns.calls)
        print(f"{name:12s} {1e6 * m['call_plain']:9.1f} {m['call_profiled'] / m['call_plain']:15.2f} "
              f"{m['profile']:10.2f} {m['run']:7.2f} {m['profile'] / m['run']:12.2f} {m['explore']:10.2f} "
              f"{m['explore_cp']:7.2f} {m['explore_cp'] / m['explore']:21.2f} {m['coverage']:9.3f} "
              f"{m['cp_ratio']:17.2f}", flush=True)


if __name__ == "__main__":
    main()
