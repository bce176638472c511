"""Programs of the kinds held-out users brought, each stressing something the first corpus did not:

- a pseudo-spectral solver: FFTs and complex constants (``1j * k``), time-stepped in a ``lax.fori_loop``;
- ``jax.experimental.sparse``: a BCOO matrix (a pytree of data and indices) times a dense vector, and the
  gradient through it;
- ``jax.custom_vjp`` and ``jax.custom_jvp`` rules inside a loss;
- a Pallas kernel run in interpret mode (``pallas_call(..., interpret=True)``), as a kernel writer tries one on
  a laptop before the accelerator.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental import sparse

from .program import Instance

# -- a pseudo-spectral solver of viscous Burgers' equation, u_t + u u_x = nu u_xx, periodic on [0, 2 pi) ---------
POINTS, NU, DT, STEPS = 64, 0.05, 1e-3, 20


def burgers(u0):
    k = jnp.asarray(np.fft.fftfreq(POINTS, 1.0 / POINTS))  # integer wavenumbers

    def rhs(u):
        u_hat = jnp.fft.fft(u)
        u_x = jnp.fft.ifft(1j * k * u_hat).real  # a complex constant: 1j * k
        u_xx = jnp.fft.ifft(-(k**2) * u_hat).real
        return -u * u_x + NU * u_xx

    def step(_, u):  # classical Runge-Kutta
        a = rhs(u)
        b = rhs(u + 0.5 * DT * a)
        c = rhs(u + 0.5 * DT * b)
        d = rhs(u + DT * c)
        return u + DT / 6 * (a + 2 * b + 2 * c + d)

    return lax.fori_loop(0, STEPS, step, u0)


def spectral_burgers() -> Instance:
    x = jnp.linspace(0.0, 2 * jnp.pi, POINTS, endpoint=False)
    return Instance(jax.jit(burgers), (jnp.sin(x) + 0.5 * jnp.cos(2 * x),))


# -- a BCOO sparse matrix times a vector, and the gradient ------------------------------------------------------
def sparse_energy(a, x):
    y = a @ x  # BCOO @ dense: a gather, a multiply and a scatter-add
    return jnp.sum(jnp.tanh(y) ** 2)


def bcoo_matvec() -> Instance:
    rng = np.random.default_rng(11)
    dense = rng.standard_normal((24, 16)).astype(np.float32)
    dense[rng.random((24, 16)) < 0.8] = 0.0  # about a fifth of the entries kept
    a = sparse.BCOO.fromdense(jnp.asarray(dense))
    return Instance(jax.jit(jax.value_and_grad(sparse_energy, argnums=1)), (a, jnp.asarray(rng.standard_normal(16),
                                                                                           jnp.float32)))


# -- custom_vjp and custom_jvp in a loss -----------------------------------------------------------------------------
@jax.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@jax.custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jax.nn.sigmoid(x) * t


def custom_rules_loss(w, x, y):
    logits = clip_gradient(x @ w)
    return jnp.mean(softplus(-y * logits[:, 0]))


def custom_rules() -> Instance:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(21), 3)
    x = jax.random.normal(k1, (32, 8)) * 4.0  # big enough that some gradients are clipped
    y = jnp.sign(jax.random.normal(k2, (32,)))
    return Instance(jax.jit(jax.value_and_grad(custom_rules_loss)), (jax.random.normal(k3, (8, 1)), x, y))


# -- a Pallas kernel in interpret mode -----------------------------------------------------------------------------
def _scaled_add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + jnp.sin(y_ref[...])


def pallas_scaled_add(x, y):
    kernel = pl.pallas_call(_scaled_add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                            interpret=True)
    return jnp.sum(kernel(x, y) ** 2, axis=1)


def pallas_interpret() -> Instance:
    k1, k2 = jax.random.split(jax.random.PRNGKey(5))
    return Instance(jax.jit(pallas_scaled_add), (jax.random.normal(k1, (8, 128)), jax.random.normal(k2, (8, 128))))
