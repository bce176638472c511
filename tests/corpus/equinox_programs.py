"""Equinox programs, as Equinox's docs write them.

- ``eqx.filter_jit``: a model holding functions as well as arrays (``eqx.nn.MLP``'s activations,
  a multi-head attention layer, LayerNorm), applied to a batch with ``jax.vmap``; the function
  takes the module and x, and filter_jit splits the arrays from the rest before it jits.
- a plain function taking an Equinox module as an argument: a conv net whose leaves are all arrays
  (its hyperparameters are static fields), so it is an ordinary pytree to ``jax.jit``; the function
  is the loss and its gradient with respect to the module, by ``eqx.filter_value_and_grad``.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .program import Instance

SEQ, D, HEADS, BATCH = 8, 16, 2, 3


class Encoder(eqx.Module):
    attention: eqx.nn.MultiheadAttention
    norm: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.attention = eqx.nn.MultiheadAttention(num_heads=HEADS, query_size=D, key=k1)
        self.norm = eqx.nn.LayerNorm(D)
        self.mlp = eqx.nn.MLP(D, D, width_size=32, depth=2, activation=jax.nn.gelu, key=k2)

    def __call__(self, x):  # x: [SEQ, D], one example
        x = x + self.attention(x, x, x)
        x = jax.vmap(self.norm)(x)
        return x + jax.vmap(self.mlp)(x)


@eqx.filter_jit
def predict(model: Encoder, x):
    return jax.vmap(model)(x)


def eqx_filter_jit() -> Instance:
    model_key, data_key = jax.random.split(jax.random.PRNGKey(0))
    return Instance(predict, (Encoder(model_key), jax.random.normal(data_key, (BATCH, SEQ, D))))


class ConvNet(eqx.Module):
    conv1: eqx.nn.Conv2d
    conv2: eqx.nn.Conv2d
    norm: eqx.nn.LayerNorm
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.conv1 = eqx.nn.Conv2d(1, 4, kernel_size=3, padding=1, key=k1)
        self.conv2 = eqx.nn.Conv2d(4, 4, kernel_size=3, stride=2, key=k2)
        self.norm = eqx.nn.LayerNorm(4 * 4 * 4)
        self.head = eqx.nn.Linear(4 * 4 * 4, 3, key=k3)

    def __call__(self, x):  # x: [1, 10, 10], one image
        x = jax.nn.relu(self.conv1(x))
        x = jax.nn.relu(self.conv2(x))
        return self.head(self.norm(jnp.ravel(x)))


def loss_and_grad(model: ConvNet, images, labels):
    """The user's own function, not wrapped: the Equinox module is just its first argument."""

    def loss(model):
        logits = jax.vmap(model)(images)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))

    return eqx.filter_value_and_grad(loss)(model)


def eqx_module_argument() -> Instance:
    model_key, data_key = jax.random.split(jax.random.PRNGKey(1))
    images = jax.random.normal(data_key, (BATCH, 1, 10, 10))
    return Instance(loss_and_grad, (ConvNet(model_key), images, jnp.array([0, 2, 1])))
