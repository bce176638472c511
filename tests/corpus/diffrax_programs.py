"""A Diffrax adaptive ODE solve under ``jax.jit``, as Diffrax's getting-started page writes one.

A damped harmonic oscillator y' = A y, integrated with Tsit5 and a PID step-size controller, saved
at fixed times. Linear, so the exact solution is expm(A t) y0 (``exact`` gives it in float64).
Diffrax's defaults are kept: ``throw=True`` puts Equinox's runtime error check (a host callback)
into the program, and the adaptive loop is a while loop of at most ``max_steps`` steps.
"""
from __future__ import annotations

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .program import Instance

T1 = 5.0
SAVE_AT = np.linspace(0.0, T1, 11)


def vector_field(t, y, args):
    omega, zeta = args
    position, velocity = y[0], y[1]
    return jnp.stack([velocity, -omega**2 * position - 2.0 * zeta * omega * velocity])


@jax.jit
def solve(y0, params):
    term = diffrax.ODETerm(vector_field)
    solution = diffrax.diffeqsolve(
        term, diffrax.Tsit5(), t0=0.0, t1=T1, dt0=0.1, y0=y0, args=params,
        saveat=diffrax.SaveAt(ts=jnp.asarray(SAVE_AT, dtype=jnp.float32)),
        stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6))
    return solution.ys


def exact(y0, params) -> np.ndarray:
    """expm(A t) y0 at every saved time, in float64."""
    from scipy.linalg import expm

    omega, zeta = (float(p) for p in params)
    a = np.array([[0.0, 1.0], [-omega**2, -2.0 * zeta * omega]])
    y0 = np.asarray(y0, dtype=np.float64)
    return np.stack([expm(a * t) @ y0 for t in SAVE_AT])


def diffrax_ode() -> Instance:
    return Instance(solve, (jnp.array([1.0, 0.0]), (jnp.float32(2.0), jnp.float32(0.1))))
