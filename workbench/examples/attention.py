"""The gradient of a pre-norm transformer block with causal (masked) multi-head attention."""
import jax
import jax.numpy as jnp

HEADS = 4


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * g + b


def attention(p, x):
    bsz, seq, d = x.shape
    dh = d // HEADS

    def heads(t):  # (b, s, d) -> (b, h, s, dh)
        return t.reshape(bsz, seq, HEADS, dh).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ p["wq"]), heads(x @ p["wk"]), heads(x @ p["wv"])
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(dh).astype(x.dtype)
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    scores = jnp.where(mask, scores, -1e9)
    out = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)
    return out.transpose(0, 2, 1, 3).reshape(bsz, seq, d) @ p["wo"]


def block(p, x):
    x = x + attention(p, layer_norm(x, p["ln1_g"], p["ln1_b"]))
    h = jax.nn.gelu(layer_norm(x, p["ln2_g"], p["ln2_b"]) @ p["w1"])
    return x + h @ p["w2"]


def loss(p, x):
    return jnp.mean(block(p, x) ** 2)


def fn(p, x):
    """Gradient of the block's loss with respect to its parameters."""
    return jax.grad(loss)(p, x)


def args(batch: int = 2, seq: int = 32, d: int = 64, hidden: int = 128):
    ks = jax.random.split(jax.random.PRNGKey(1), 8)
    n = lambda k, shape: jax.random.normal(k, shape, jnp.float32) / jnp.sqrt(shape[0])
    p = {
        "wq": n(ks[0], (d, d)), "wk": n(ks[1], (d, d)), "wv": n(ks[2], (d, d)), "wo": n(ks[3], (d, d)),
        "w1": n(ks[4], (d, hidden)), "w2": n(ks[5], (hidden, d)),
        "ln1_g": jnp.ones((d,)), "ln1_b": jnp.zeros((d,)), "ln2_g": jnp.ones((d,)), "ln2_b": jnp.zeros((d,)),
    }
    x = jax.random.normal(ks[6], (batch, seq, d), jnp.float32)
    return (p, x)
