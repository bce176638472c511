"""A small convolutional net forward pass: two conv + relu layers, pooling, a dense head."""
import jax
import jax.numpy as jnp


def conv(x, w):
    return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def fn(w1, w2, wd, x):
    h = jax.nn.relu(conv(x, w1))
    h = jax.nn.relu(conv(h, w2))
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jnp.mean(h, axis=(1, 2)) @ wd


def args(batch: int = 4, size: int = 16, c1: int = 8, c2: int = 16, classes: int = 10):
    ks = jax.random.split(jax.random.PRNGKey(3), 4)
    w1 = jax.random.normal(ks[0], (3, 3, 3, c1), jnp.float32) * 0.2
    w2 = jax.random.normal(ks[1], (3, 3, c1, c2), jnp.float32) * 0.1
    wd = jax.random.normal(ks[2], (c2, classes), jnp.float32) * 0.1
    x = jax.random.normal(ks[3], (batch, size, size, 3), jnp.float32)
    return (w1, w2, wd, x)
