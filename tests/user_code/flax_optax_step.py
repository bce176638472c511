"""A Flax linen MLP and an Optax AdamW training step, as a user writes one in a train.py of their own."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(32)(x)  # LINE: first dense
        x = nn.relu(x)
        return nn.Dense(4)(x)  # LINE: second dense


model = MLP()
opt = optax.adamw(1e-3)


def train_step(params, opt_state, x, y):
    def loss_fn(p):
        pred = model.apply(p, x)
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = opt.update(grads, opt_state, params)  # LINE: opt.update
    params = optax.apply_updates(params, updates)  # LINE: apply_updates
    return params, opt_state, loss


def example():
    x = jax.random.normal(jax.random.key(0), (8, 16))
    y = jax.random.normal(jax.random.key(1), (8, 4))
    params = model.init(jax.random.key(2), x)
    return train_step, (params, opt.init(params), x, y)


def line(marker: str) -> int:
    """The line of this file that ends with ``# LINE: marker``."""
    with open(__file__, encoding="utf-8") as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# LINE: {marker}"))
