"""A recurrent cell run with lax.scan (a while loop with a fixed trip count) plus a fori_loop."""
import jax
import jax.numpy as jnp

STEPS = 16


def fn(w, u, xs):
    def cell(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, h.sum()

    h0 = jnp.zeros((xs.shape[1], w.shape[0]), xs.dtype)
    h, sums = jax.lax.scan(cell, h0, xs)
    decay = jax.lax.fori_loop(0, 8, lambda i, a: a * 0.5 + 1.0, h)
    return decay, sums


def args(d: int = 32, batch: int = 8):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(2), 3)
    w = jax.random.normal(k1, (d, d), jnp.float32) / jnp.sqrt(d)
    u = jax.random.normal(k2, (d, d), jnp.float32) / jnp.sqrt(d)
    xs = jax.random.normal(k3, (STEPS, batch, d), jnp.float32)
    return (w, u, xs)
