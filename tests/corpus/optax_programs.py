"""An Optax optimizer as Optax's docs compose one: a warm-up cosine schedule, global-norm clipping
and AdamW in a chain, skipped on non-finite updates (``optax.apply_if_finite``) and accumulated over
two micro-batches (``optax.MultiSteps``), driving a two-layer MLP regression under ``jax.jit``.
The optimizer state carries integer counters and a boolean-driven ``lax.cond`` (MultiSteps), so
the step's outputs mix floats and integers.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from .program import Instance

IN, HIDDEN, OUT, BATCH = 8, 32, 2, 16


def make_optimizer() -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(init_value=0.0, peak_value=1e-2, warmup_steps=10,
                                                  decay_steps=100, end_value=1e-4)
    chain = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(learning_rate=schedule, weight_decay=1e-4))
    return optax.MultiSteps(optax.apply_if_finite(chain, max_consecutive_errors=3), every_k_schedule=2)


OPTIMIZER = make_optimizer()


def mlp(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(params):
        return jnp.mean(optax.l2_loss(mlp(params, x), y))

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def optax_chain() -> Instance:
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(2), 4)
    params = {"w1": jax.random.normal(k1, (IN, HIDDEN)) / jnp.sqrt(IN), "b1": jnp.zeros(HIDDEN),
              "w2": jax.random.normal(k2, (HIDDEN, OUT)) / jnp.sqrt(HIDDEN), "b2": jnp.zeros(OUT)}
    x = jax.random.normal(k3, (BATCH, IN))
    y = jax.random.normal(k4, (BATCH, OUT))
    return Instance(train_step, (params, OPTIMIZER.init(params), x, y))
