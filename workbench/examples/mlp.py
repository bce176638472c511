"""A three-layer tanh MLP: the loss and its gradient with respect to the weights."""
import jax
import jax.numpy as jnp


def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    pred = h @ w + b
    return jnp.mean((pred - y) ** 2)


def fn(params, x, y):
    """Loss value and gradient, as a training step computes them."""
    return jax.value_and_grad(loss)(params, x, y)


def args(batch: int = 32, sizes=(64, 128, 128, 16)):
    k = jax.random.split(jax.random.PRNGKey(0), len(sizes) + 1)
    params = [(jax.random.normal(k[i], (a, b), jnp.float32) / jnp.sqrt(a), jnp.zeros((b,), jnp.float32))
              for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))]
    x = jax.random.normal(k[-2], (batch, sizes[0]), jnp.float32)
    y = jax.random.normal(k[-1], (batch, sizes[-1]), jnp.float32)
    return (params, x, y)
