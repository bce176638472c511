"""A GPT-2-small training step through the workbench, measured side by side with a bare compile.

The model is GPT-2 small written in plain jax.numpy: token and position embeddings, 12 pre-norm
blocks (layer norm, causal multi-head attention, GELU MLP), a final layer norm, the logits from the
tied token embedding and a cross-entropy loss; the step is the gradient of that loss with respect to
every parameter (about 124 M of them).

Prints, from one run with every side measured in turn (interleaved, medians of --repeat rounds, a
fresh function object each time, the pass-step and XLA caches cleared, the worker warm):
  fresh / bare            a fresh explore of all stages vs bare jax.jit(f).lower(*a).compile()
  toggle / fresh          re-explore after a pattern toggle that changes the final module, all stages
                          and MLIR stages alone, next to the bound (bare compile of the changed
                          module / fresh) + 0.05
and the stage and line counts and the peak memory (VmHWM) of this process and of the workers.
Run:  .venv/bin/python bench/bench_gpt2.py [--layers 12] [--repeat 3]   (--layers 2 for a quick run)
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax
import jax.numpy as jnp

from bench_core import final_mlir, measure, report
from memory import peak_rss_mib  # bench/memory.py
from workbench.examples.attention import layer_norm  # the same pre-norm layer norm as the example block
from workbench.pipeline.worker import default_pool, default_worker

VOCAB, CONTEXT, D_MODEL, HEADS = 50257, 1024, 768, 12


def init(layers: int, key=jax.random.PRNGKey(0)) -> dict:
    """GPT-2's parameter shapes, drawn as GPT-2 draws them (normal, 0.02; the residual projections
    scaled by 1/sqrt(2 * layers)); layer-norm gains one, biases zero."""
    d = D_MODEL
    keys = iter(jax.random.split(key, 2 + 4 * layers))
    normal = lambda shape, scale=0.02: scale * jax.random.normal(next(keys), shape, jnp.float32)
    resid = 0.02 / (2 * layers) ** 0.5
    blocks = [{
        "ln1_g": jnp.ones((d,)), "ln1_b": jnp.zeros((d,)),
        "w_qkv": normal((d, 3 * d)), "b_qkv": jnp.zeros((3 * d,)),
        "w_proj": normal((d, d), resid), "b_proj": jnp.zeros((d,)),
        "ln2_g": jnp.ones((d,)), "ln2_b": jnp.zeros((d,)),
        "w_fc": normal((d, 4 * d)), "b_fc": jnp.zeros((4 * d,)),
        "w_out": normal((4 * d, d), resid), "b_out": jnp.zeros((d,)),
    } for _ in range(layers)]
    return {"wte": normal((VOCAB, d)), "wpe": normal((CONTEXT, d), 0.01), "blocks": blocks,
            "lnf_g": jnp.ones((d,)), "lnf_b": jnp.zeros((d,))}


def attention(p, x):
    bsz, seq, d = x.shape
    dh = d // HEADS
    q, k, v = jnp.split(x @ p["w_qkv"] + p["b_qkv"], 3, axis=-1)
    heads = lambda t: t.reshape(bsz, seq, HEADS, dh).transpose(0, 2, 1, 3)
    q, k, v = heads(q), heads(k), heads(v)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(dh))
    causal = jnp.tril(jnp.ones((seq, seq), bool))
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    out = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)
    return out.transpose(0, 2, 1, 3).reshape(bsz, seq, d) @ p["w_proj"] + p["b_proj"]


def block(p, x):
    x = x + attention(p, layer_norm(x, p["ln1_g"], p["ln1_b"]))
    h = jax.nn.gelu(layer_norm(x, p["ln2_g"], p["ln2_b"]) @ p["w_fc"] + p["b_fc"], approximate=True)
    return x + h @ p["w_out"] + p["b_out"]


def loss(params, tokens, targets):
    seq = tokens.shape[1]
    x = params["wte"][tokens] + params["wpe"][:seq]
    for p in params["blocks"]:
        x = block(p, x)
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["wte"].T  # tied embedding
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def train_step(params, tokens, targets):
    """The full training-step gradient: d loss / d every parameter."""
    return jax.grad(loss)(params, tokens, targets)


def make(layers: int, batch: int = 1, seq: int = 128):
    params = init(layers)
    tokens = jax.random.randint(jax.random.PRNGKey(1), (batch, seq + 1), 0, VOCAB, jnp.int32)
    return train_step, (params, tokens[:, :-1], tokens[:, 1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--toggle", default="dot_transpose", help="the pattern to disable (one that changes the final module)")
    a = ap.parse_args()
    f, args = make(a.layers, a.batch, a.seq)
    m = measure(f, args, a.toggle, a.repeat)
    base = m.base
    counts = {g: sum(s.group == g for s in base.stages) for g in ("trace", "mlir", "xla", "backend")}
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(args[0]))
    print(f"GPT-2-small training step: {a.layers} layers, d_model {D_MODEL}, {HEADS} heads, vocab {VOCAB}, "
          f"batch {a.batch}, sequence {a.seq}; {n_params:,} parameters")
    print(f"stages: {len(base.stages)} = " + " + ".join(f"{n} {g}" for g, n in counts.items()))
    print(f"lines: StableHLO {base['stablehlo'].lines:,}, final MLIR ({final_mlir(base).name}) "
          f"{final_mlir(base).lines:,}, optimized HLO {base['xla:optimized'].lines:,}")
    report(m, a.toggle)
    cost_at_scale(base)
    workers = ", ".join(f"pid {w.pid} {peak_rss_mib(w.pid):.0f} MiB" for w in live_workers()) or "none running"
    print(f"peak RSS (VmHWM): this process {peak_rss_mib(os.getpid()):.0f} MiB; workers: {workers}")


def cost_at_scale(ex) -> None:
    """``ex.cost()`` of every stage, its caches cleared first (the first cost() of a session), then again."""
    from workbench.analysis.cost import table

    table._model_cost.cache_clear()
    table._xla_cost.cache_clear()
    table._hlo_cached.cache_clear()
    table._loops_cached.cache_clear()
    t = time.perf_counter()
    df = ex.cost()
    first = time.perf_counter() - t
    t = time.perf_counter()
    ex.cost()
    again = time.perf_counter() - t
    chars = sum(len(s.text) for s in ex.stages)
    print(f"cost() of all {len(df)} stages ({chars / 1e6:.0f} M characters): {first:.2f} s the first time, "
          f"{again:.2f} s again   target <= 1.5 s (issue 28)")
    cost_floor(ex)


def cost_floor(ex) -> None:
    """What XLA alone takes for the numbers cost() shows, each distinct text once, one after another in this
    process: parsing each HLO stage's text (debug info stripped) and its HloCostAnalysis, as the pool's
    workers do, and each MLIR stage's conversion to HLO and HloCostAnalysis (``xla_cost``, as cost() asks). Their
    sum over the cores is the least any cost() that asks XLA for every stage can take."""
    from workbench.analysis.cost.xla import xla_cost
    from workbench.pipeline.worker_methods import _hlo_costs  # what a pool worker runs for cost(), here in this process

    hlo = {s.text: None for s in ex.stages if s.group == "xla" and not s.error}
    mlir = {s.text: None for s in ex.stages if s.is_module and not s.error and "@main" in s.text}
    t = time.perf_counter()
    _hlo_costs(list(enumerate(hlo)))
    parse = time.perf_counter() - t
    t = time.perf_counter()
    for text in mlir:
        xla_cost(text)
    through_jax = time.perf_counter() - t
    cores = os.cpu_count() or 1
    print(f"  floor: XLA's parse + analysis of the {len(hlo)} distinct HLO stages {parse:.2f} s and its analysis of "
          f"the {len(mlir)} distinct MLIR stages {through_jax:.2f} s, one after another; over {cores} cores at "
          f"best {(parse + through_jax) / cores:.2f} s")


def live_workers():
    """The pass workers with a live process: the shared one, and the pool's if a scan started them."""
    return [w for w in dict.fromkeys([default_worker(), *default_pool().workers]) if w.pid is not None]


if __name__ == "__main__":
    main()
