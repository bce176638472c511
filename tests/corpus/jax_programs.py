"""Programs in JAX alone, each built around one feature real code leans on.

- ``jax.checkpoint`` on the body of a ``lax.scan`` over stacked layers, computing in bfloat16, and
  its gradient (the rematerialized backward pass);
- ``jnp.linalg``: a Gaussian-process likelihood (Cholesky), PCA spectra (eigh, SVD) and a
  least-squares fit by QR; every output is unique, so numpy's answers can be compared;
- ``jax.nn.dot_product_attention``: causal multi-head self-attention with projections;
- ``jax.debug.print`` inside a ``lax.fori_loop``;
- ``jax.pure_callback`` to a numpy function on the host, in the middle of a jitted computation;
- a ``jax.jit`` step with ``donate_argnums=(0,)``: the parameters' buffers are reused for the output.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .program import Instance


# -- jax.checkpoint + lax.scan + bf16 --------------------------------------------------------------
LAYERS, WIDTH, ROWS = 4, 32, 8


def scanned_loss(weights, x):
    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)
    def layer(h, w):
        out = jnp.tanh(jnp.dot(h.astype(jnp.bfloat16), w.astype(jnp.bfloat16)))
        return out.astype(jnp.float32) + h, None

    h, _ = lax.scan(layer, x, weights)
    return jnp.mean(h**2)


scanned_grad = jax.jit(jax.value_and_grad(scanned_loss))


def checkpoint_scan_bf16() -> Instance:
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    weights = jax.random.normal(k1, (LAYERS, WIDTH, WIDTH)) / jnp.sqrt(WIDTH)
    return Instance(scanned_grad, (weights, jax.random.normal(k2, (ROWS, WIDTH))))


# -- jnp.linalg ------------------------------------------------------------------------------------
NOISE, LENGTH = 0.1, 1.5


def rbf(x):
    sq = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    return jnp.exp(-0.5 * sq / LENGTH**2)


@jax.jit
def linalg_stats(x, y):
    """GP negative log-likelihood by Cholesky, the kernel's spectrum by eigh, x's singular values,
    the least-squares fit of y on x by QR."""
    n = x.shape[0]
    k = rbf(x) + NOISE * jnp.eye(n)
    chol = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    nll = 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol))) + 0.5 * n * jnp.log(2 * jnp.pi)
    eigenvalues = jnp.linalg.eigh(k)[0]
    singular = jnp.linalg.svd(x, compute_uv=False)
    q, r = jnp.linalg.qr(x)
    coef = jax.scipy.linalg.solve_triangular(r, q.T @ y)
    return nll, eigenvalues, singular, coef


def linalg_numpy(x, y) -> tuple[np.ndarray, ...]:
    """``linalg_stats`` in float64 numpy, for comparison."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n = x.shape[0]
    sq = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    k = np.exp(-0.5 * sq / LENGTH**2) + NOISE * np.eye(n)
    chol = np.linalg.cholesky(k)
    nll = 0.5 * y @ np.linalg.solve(k, y) + np.sum(np.log(np.diag(chol))) + 0.5 * n * np.log(2 * np.pi)
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    return nll, np.linalg.eigvalsh(k), np.linalg.svd(x, compute_uv=False), coef


def linalg() -> Instance:
    k1, k2 = jax.random.split(jax.random.PRNGKey(4))
    x = jax.random.normal(k1, (12, 3))
    y = x @ jnp.array([1.0, -2.0, 0.5]) + 0.1 * jax.random.normal(k2, (12,))
    return Instance(linalg_stats, (x, y))


# -- jax.nn.dot_product_attention ------------------------------------------------------------------
B, T, H, HEAD_DIM = 2, 16, 4, 8


@jax.jit
def causal_self_attention(params, x):
    def heads(w):
        return (x @ w).reshape(B, T, H, HEAD_DIM)

    out = jax.nn.dot_product_attention(heads(params["wq"]), heads(params["wk"]), heads(params["wv"]),
                                       is_causal=True)
    return out.reshape(B, T, H * HEAD_DIM) @ params["wo"]


def dot_product_attention() -> Instance:
    d = H * HEAD_DIM
    keys = jax.random.split(jax.random.PRNGKey(5), 5)
    params = {name: jax.random.normal(k, (d, d)) / jnp.sqrt(d) for name, k in zip(("wq", "wk", "wv", "wo"), keys)}
    return Instance(causal_self_attention, (params, jax.random.normal(keys[4], (B, T, d))))


# -- jax.debug.print in a fori_loop ----------------------------------------------------------------
STEPS = 3
PRINTED = "power iteration {i}: estimate {estimate}"


@jax.jit
def power_iteration(a, v):
    def body(i, v):
        w = a @ v
        estimate = jnp.linalg.norm(w)
        jax.debug.print(PRINTED, i=i, estimate=estimate)
        return w / estimate

    v = lax.fori_loop(0, STEPS, body, v)
    return v, v @ a @ v


def debug_print_loop() -> Instance:
    m = jax.random.normal(jax.random.PRNGKey(6), (6, 6))
    return Instance(power_iteration, (m @ m.T, jnp.ones(6) / jnp.sqrt(6.0)))


# -- jax.pure_callback -----------------------------------------------------------------------------
def host_median(x: np.ndarray) -> np.ndarray:
    """A numpy function with no JAX counterpart of the same name: runs on the host."""
    return np.median(x, axis=-1).astype(x.dtype)


@jax.jit
def robust_normalize(x):
    median = jax.pure_callback(host_median, jax.ShapeDtypeStruct(x.shape[:-1], x.dtype), x,
                               vmap_method="sequential")
    centered = x - median[..., None]
    return centered / (jnp.mean(jnp.abs(centered), axis=-1, keepdims=True) + 1e-6)


def pure_callback() -> Instance:
    return Instance(robust_normalize, (jax.random.normal(jax.random.PRNGKey(7), (4, 9)),))


# -- donation ---------------------------------------------------------------------------------------
def sgd_update(params, x, y):
    def loss(params):
        return jnp.mean((jnp.tanh(x @ params["w"]) + params["b"] - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


donating_step = jax.jit(sgd_update, donate_argnums=(0,))


def donated_step() -> Instance:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(8), 3)
    params = {"w": jax.random.normal(k1, (16, 4)) / 4.0, "b": jnp.zeros(4)}
    return Instance(donating_step, (params, jax.random.normal(k2, (32, 16)), jax.random.normal(k3, (32, 4))))
