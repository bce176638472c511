"""Flax programs, written as Flax's own guides write them.

- NNX (flax 0.12): a one-block transformer classifier (embedding, multi-head self-attention,
  LayerNorm, MLP) trained with AdamW through ``@nnx.jit def train_step(model, optimizer, batch)``;
  ``nnx.Optimizer(model, tx, wrt=nnx.Param)`` and ``optimizer.update(model, grads)``.
- Linen: a small conv net with BatchNorm and Dropout in train mode, its ``batch_stats`` mutable
  and a dropout rng folded in per step, stepped by a ``TrainState`` under ``jax.jit``.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax import nnx
from flax.training import train_state

from .program import Instance

VOCAB, SEQ, D_MODEL, HEADS, HIDDEN, CLASSES, BATCH = 64, 8, 32, 4, 64, 5, 4


class Block(nnx.Module):
    def __init__(self, d: int, heads: int, hidden: int, *, rngs: nnx.Rngs):
        self.ln1 = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(d, rngs=rngs)
        self.up = nnx.Linear(d, hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, d, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.down(nnx.gelu(self.up(self.ln2(x))))


class Classifier(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(VOCAB, D_MODEL, rngs=rngs)
        self.block = Block(D_MODEL, HEADS, HIDDEN, rngs=rngs)
        self.head = nnx.Linear(D_MODEL, CLASSES, rngs=rngs)

    def __call__(self, tokens):
        x = self.block(self.embed(tokens))
        return self.head(x.mean(axis=1))


@nnx.jit
def train_step(model: Classifier, optimizer: nnx.Optimizer, batch):
    def loss_fn(model):
        logits = model(batch["tokens"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["labels"]).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def nnx_batch():
    k1, k2 = jax.random.split(jax.random.key(1))
    return {"tokens": jax.random.randint(k1, (BATCH, SEQ), 0, VOCAB),
            "labels": jax.random.randint(k2, (BATCH,), 0, CLASSES)}


def nnx_transformer() -> Instance:
    model = Classifier(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    return Instance(train_step, (model, optimizer, nnx_batch()))


class ConvNet(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Conv(features=8, kernel_size=(3, 3))(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(features=32)(x)
        x = nn.Dropout(rate=0.2, deterministic=not train)(x)
        x = nn.relu(x)
        return nn.Dense(features=CLASSES)(x)


class TrainState(train_state.TrainState):
    batch_stats: Any


@jax.jit
def linen_train_step(state: TrainState, batch, dropout_key):
    dropout_rng = jax.random.fold_in(dropout_key, state.step)

    def loss_fn(params):
        logits, updates = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, batch["image"], train=True,
            rngs={"dropout": dropout_rng}, mutable=["batch_stats"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        return loss, updates

    (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state = state.apply_gradients(grads=grads)
    state = state.replace(batch_stats=updates["batch_stats"])
    return state, loss


def linen_convnet() -> Instance:
    model = ConvNet()
    init_key, data_key, dropout_key = jax.random.split(jax.random.key(0), 3)
    images = jax.random.normal(data_key, (BATCH, 12, 12, 1))
    variables = model.init(init_key, images, train=False)
    state = TrainState.create(apply_fn=model.apply, params=variables["params"],
                              batch_stats=variables["batch_stats"], tx=optax.sgd(0.05, momentum=0.9))
    labels = jnp.arange(BATCH) % CLASSES
    return Instance(linen_train_step, (state, {"image": images, "label": labels}, dropout_key))
