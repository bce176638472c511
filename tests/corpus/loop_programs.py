"""Programs whose time is a loop's: what a call costs grows with its trip count, the module does not.

- ``metropolis_sampler``: random-walk Metropolis on a Gaussian, ``vmap``ped over chains, each chain a
  ``lax.fori_loop`` that splits its key every step, proposes, and accepts or rejects with ``jnp.where``
  (as a user writes one); ``sampler(steps)`` builds it at any number of steps (the profile's tests take it
  at 50, 200 and 400).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .program import Instance

CHAINS, DIM, STEP_SIZE = 64, 8, 0.5


def log_density(x):
    """An isotropic standard Gaussian, up to its constant."""
    return -0.5 * jnp.sum(x ** 2)


def sampler(steps: int):
    """A jitted sampler of ``steps`` Metropolis steps per chain: (x0 [chains, dim], keys [chains]) -> (the
    chains' last states, their acceptance rates)."""

    def step(i, carry):
        x, key, accepted = carry
        key, k_proposal, k_accept = jax.random.split(key, 3)
        proposal = x + STEP_SIZE * jax.random.normal(k_proposal, x.shape)
        log_ratio = log_density(proposal) - log_density(x)
        accept = jnp.log(jax.random.uniform(k_accept)) < log_ratio
        return jnp.where(accept, proposal, x), key, accepted + accept

    def chain(x0, key):
        x, _, accepted = jax.lax.fori_loop(0, steps, step, (x0, key, 0))
        return x, accepted / steps

    @jax.jit
    def sample(x0, keys):
        return jax.vmap(chain)(x0, keys)

    return sample


def sampler_args(chains: int = CHAINS, dim: int = DIM) -> tuple:
    return jnp.zeros((chains, dim)), jax.random.split(jax.random.key(0), chains)


def metropolis_sampler() -> Instance:
    return Instance(sampler(50), sampler_args())
