"""A dm-haiku program: a small residual conv net with BatchNorm (``hk.transform_with_state``: the batch
statistics are state, updated by the step) trained one step with Optax's SGD + momentum under ``jax.jit``."""
from __future__ import annotations

import haiku as hk
import jax
import jax.numpy as jnp
import optax

from .program import Instance

CLASSES, WIDTH = 10, 16


class Block(hk.Module):
    def __call__(self, x, is_training):
        y = hk.Conv2D(WIDTH, 3, with_bias=False)(x)
        y = hk.BatchNorm(True, True, 0.9)(y, is_training)
        y = jax.nn.relu(y)
        y = hk.Conv2D(WIDTH, 3, with_bias=False)(y)
        y = hk.BatchNorm(True, True, 0.9)(y, is_training)
        return jax.nn.relu(x + y)


def resnet(x, is_training):
    x = hk.Conv2D(WIDTH, 3, with_bias=False)(x)
    x = jax.nn.relu(hk.BatchNorm(True, True, 0.9)(x, is_training))
    for _ in range(2):
        x = Block()(x, is_training)
    return hk.Linear(CLASSES)(jnp.mean(x, axis=(1, 2)))


net = hk.transform_with_state(resnet)
optimizer = optax.sgd(0.05, momentum=0.9)


def loss_fn(params, state, images, labels):
    logits, state = net.apply(params, state, None, images, True)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, state


@jax.jit
def train_step(params, state, opt_state, images, labels):
    (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), state, opt_state, loss


def haiku_resnet() -> Instance:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(8), 3)
    images = jax.random.normal(k1, (4, 16, 16, 3))
    labels = jax.random.randint(k2, (4,), 0, CLASSES)
    params, state = net.init(k3, images, True)
    return Instance(train_step, (params, state, optimizer.init(params), images, labels))
