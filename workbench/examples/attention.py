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


def mesh(shape=(2, 4), axes=("data", "model")):
    """A device mesh for the sharded form of the block: 2 x 4 by default, which needs 8 devices (on a
    CPU, start Python with ``XLA_FLAGS=--xla_force_host_platform_device_count=8``)."""
    import numpy as np
    from jax.sharding import Mesh

    need = int(np.prod(shape))
    devices = jax.devices()
    if len(devices) < need:
        raise RuntimeError(f"a {'x'.join(map(str, shape))} mesh needs {need} devices and JAX has {len(devices)}; "
                           f"on a CPU set XLA_FLAGS=--xla_force_host_platform_device_count={need} before JAX starts")
    return Mesh(np.array(devices[:need]).reshape(shape), axes)


def sharded_args(m=None, **sizes):
    """``args()`` placed on a mesh as tensor-parallel blocks are (Megatron's layout): the batch over
    ``data``; the q/k/v and first MLP projections split by column over ``model``, the output and
    second MLP projections by row, so each head group and hidden slice lives on one column of the
    mesh and XLA's SPMD partitioner must insert all-reduces after the row-split products."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    m = m if m is not None else mesh()
    data, model = m.axis_names[0], m.axis_names[-1]
    p, x = args(**sizes)
    spec = {"wq": P(None, model), "wk": P(None, model), "wv": P(None, model), "wo": P(model, None),
            "w1": P(None, model), "w2": P(model, None)}
    put = lambda v, s: jax.device_put(v, NamedSharding(m, s))
    p = {k: put(v, spec.get(k, P())) for k, v in p.items()}
    return (p, put(x, P(data, None, None)))
