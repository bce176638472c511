"""Which patterns apply, and stepping: group testing against one run per pattern, side by side.

Three programs: the attention-block gradient of the examples (~260 StableHLO lines), an MLP training
step (~300 lines) and a 2-layer GPT-2-like training step (~700 lines). For each, in one run, with
the worker pool warm and the two ways interleaved (medians of --repeat rounds):

  applicable  ex.applicable(stage) (group testing) vs ex.applicable(stage, exact=True): seconds,
              the ratio exact / group, and the pipeline runs each used; the answers must be equal
  step        ex.step(stage) to the end (at most --steps steps), both ways, --step-repeat rounds:
              seconds per step (the search, the application, the greedy reference run at the end),
              and the steps must be the same

and the floor of a scan that asks a batch only "does this change the module": at least
log2(C(patterns, applying)) runs (each answer is one bit), each at least as long as the empty pattern
list's run (enzyme-ad parsing and printing the module), spread over the workers.

Targets on a quiet machine: applicable <= 1.0 s at ~300 lines, <= 1.5 s at ~700 lines; step <= 0.2 s
per step.
Run:  .venv/bin/python bench/bench_patterns.py [--repeat 3] [--steps 200] [--step-repeat 1]
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import jax.numpy as jnp

import workbench as wb
from workbench import examples
from workbench.analysis.search.scan import scan, step_patterns
from workbench.pipeline.catalog import patterns_pass
from workbench.pipeline.worker import default_pool


def mlp_step(layers: int = 7, d: int = 128, batch: int = 32):
    """An MLP's training step: loss, gradient and an SGD update of every weight and bias."""
    k = jax.random.split(jax.random.PRNGKey(0), layers + 2)
    params = [(jax.random.normal(k[i], (d, d)) / d ** 0.5, jnp.zeros((d,))) for i in range(layers)]
    x, y = jax.random.normal(k[-2], (batch, d)), jax.random.normal(k[-1], (batch, d))

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.gelu(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree.map(lambda p, g: p - 1e-2 * g, params, grads)

    return step, (params, x, y)


def gpt2_step(layers: int = 2, d: int = 64, heads: int = 4, seq: int = 32, vocab: int = 128, batch: int = 2):
    """A small GPT-2-like training step: embeddings, pre-norm causal attention + GELU MLP blocks, tied
    logits, cross-entropy, gradient and an SGD update."""
    keys = iter(jax.random.split(jax.random.PRNGKey(3), 8 * layers + 4))
    n = lambda shape: jax.random.normal(next(keys), shape) * 0.02
    block = lambda: {"ln1_g": jnp.ones((d,)), "ln1_b": jnp.zeros((d,)), "qkv": n((d, 3 * d)), "proj": n((d, d)),
                     "ln2_g": jnp.ones((d,)), "ln2_b": jnp.zeros((d,)), "fc": n((d, 4 * d)), "out": n((4 * d, d))}
    params = {"wte": n((vocab, d)), "wpe": n((seq, d)), "lnf_g": jnp.ones((d,)), "lnf_b": jnp.zeros((d,)),
              "blocks": [block() for _ in range(layers)]}
    tokens = jax.random.randint(next(keys), (batch, seq), 0, vocab)

    def norm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

    def attend(p, x):
        b, s, _ = x.shape
        split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = (split(t) for t in jnp.split(norm(x, p["ln1_g"], p["ln1_b"]) @ p["qkv"], 3, axis=-1))
        att = jnp.where(jnp.tril(jnp.ones((s, s), bool)), q @ k.transpose(0, 1, 3, 2) / (d // heads) ** 0.5, -1e9)
        x = x + (jax.nn.softmax(att, -1) @ v).transpose(0, 2, 1, 3).reshape(b, s, d) @ p["proj"]
        return x + jax.nn.gelu(norm(x, p["ln2_g"], p["ln2_b"]) @ p["fc"]) @ p["out"]

    def loss(params, tokens):
        x = params["wte"][tokens] + params["wpe"][None]
        for p in params["blocks"]:
            x = attend(p, x)
        logp = jax.nn.log_softmax((norm(x, params["lnf_g"], params["lnf_b"]) @ params["wte"].T)[:, :-1])
        return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1).mean()

    def step(params, tokens):
        value, grads = jax.value_and_grad(loss)(params, tokens)
        return value, jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)

    return step, (params, tokens)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200, help="at most this many steps of ex.step, both ways")
    ap.add_argument("--step-repeat", type=int, default=1, help="rounds of stepping (one by one takes a while)")
    a = ap.parse_args()
    pool = default_pool()  # start every worker before timing, as a warm session has them
    pool.map("run_each", [["canonicalize"] for _ in pool.workers], lambda c: ("module {\n}\n", c, False))
    programs = {"attention gradient": examples.load("attention"), "MLP training step": mlp_step(),
                "GPT-2-like 2-layer training step": gpt2_step()}
    print(f"{len(wb.patterns())} patterns, {len(pool.workers)} workers, medians of {a.repeat}")
    for title, (fn, args) in programs.items():
        ex = wb.explore(fn, *args, pipeline="none")
        lines = ex["stablehlo"].lines
        scans = {"group": [], "exact": []}
        steps = {"group": [], "exact": []}
        empty_run = []  # enzyme-ad's time for the empty pattern list on this module: a run's least
        for _ in range(a.repeat):
            for way in scans:  # interleaved, so that a busy moment hits both
                scans[way].append(timed(lambda: scan(ex, "stablehlo", exact=way == "exact", progress=False)))
            empty_run.append(pool.workers[0].call("run_each", ex["stablehlo"].text, [patterns_pass(())], False
                                                  ).value[0].seconds)
        for _ in range(a.step_repeat):
            for way in steps:
                steps[way].append(timed(lambda: step_patterns(ex, "stablehlo", max_steps=a.steps, progress=False,
                                                              exact=way == "exact")))
        med = {w: statistics.median(t for t, _ in v) for w, v in scans.items()}
        runs = {w: v[0][1].runs for w, v in scans.items()}
        answers = {w: [(r.name, r.changed, r.error) for r in v[0][1].rows] for w, v in scans.items()}
        found = sum(r.changed for r in scans["group"][0][1].rows)
        print(f"\n{title}: {lines} StableHLO lines, {found} patterns apply")
        print(f"  applicable  group {med['group']:.2f} s ({runs['group']} runs)   exact {med['exact']:.2f} s "
              f"({runs['exact']} runs)   exact / group = {med['exact'] / med['group']:.1f}   runs ratio "
              f"{runs['exact'] / runs['group']:.1f}   same answer: {answers['group'] == answers['exact']}")
        least = math.ceil(math.log2(math.comb(len(wb.patterns()), found))) if found else 1
        run = statistics.median(empty_run)
        print(f"  floor       {least * run / len(pool.workers):.2f} s = at least {least} runs x {run * 1e3:.1f} ms "
              f"(the empty pattern list's run) / {len(pool.workers)} workers;  group / floor = "
              f"{med['group'] / (least * run / len(pool.workers)):.1f}")
        n = {w: len(v[0][1].stages) - 1 for w, v in steps.items()}
        per = {w: statistics.median(t for t, _ in v) / max(n[w], 1) for w, v in steps.items()}
        same = [s.text for s in steps["group"][0][1].stages] == [s.text for s in steps["exact"][0][1].stages]
        print(f"  step        group {per['group']:.3f} s/step   exact {per['exact']:.3f} s/step   "
              f"exact / group = {per['exact'] / per['group']:.1f}   ({n['group']} steps, "
              f"{steps['group'][0][1].runs} vs {steps['exact'][0][1].runs} search runs; same steps: {same})")
    print("\ntargets (quiet machine): applicable <= 1.0 s at ~300 lines, <= 1.5 s at ~700; step <= 0.2 s per step")


if __name__ == "__main__":
    main()
