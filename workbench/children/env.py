"""The environment and command line of every child interpreter the workbench starts.

A child imports the same workbench as its parent, not one that happens to lie in its current folder:
``command`` runs ``python -P`` (the current folder stays off ``sys.path``) and ``child_env`` puts this
workbench first on ``PYTHONPATH``. A child that needs the parent's CPU devices (the XLA probe child
compiling a sharded module for as many partitions) or a share of them (one process of a multi-process
run) gets XLA's device-count flag rewritten, the user's other XLA flags kept.
"""
from __future__ import annotations

import os
import sys
from typing import Mapping

__all__ = ["DEVICE_COUNT_FLAG", "ROOT", "child_env", "command", "in_a_kernel"]

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
# the folder that holds this workbench's package
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def in_a_kernel() -> bool:
    """Whether this process is a notebook kernel (the running IPython shell is ipykernel's): a user who
    explores there is about to look and toggle, so children worth having warm are started early. A plain
    IPython shell (a terminal, a test) is not one."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and type(shell).__module__.startswith("ipykernel.")


def child_env(cpu_devices: int | None = None, base: Mapping[str, str] | None = None, *,
              platforms: str | None = "cpu") -> dict[str, str]:
    """The environment of a child: ``base`` (default: this process's) with this workbench first on
    ``PYTHONPATH`` and ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (a child that compiles, or runs on the
    CPU, must not take most of a GPU's memory from the notebook).

    ``platforms``: ``JAX_PLATFORMS`` for the child, "cpu" unless said otherwise: no child opens the chip
    the notebook computes on (a TPU allows one process; a second one fails to start). None keeps the
    parent's (a GPU child that compiles for its GPU). What the backends installed here add comes too
    (``backends.child_env_extra``: on a TPU host, leave to load libtpu for a compile-only topology).
    ``cpu_devices``: the child's number of CPU devices -- any device-count flag in ``XLA_FLAGS``
    replaced by one giving that many, the other flags kept, and ``JAX_NUM_CPU_DEVICES`` (which wins
    over the flag in JAX) set to the same."""
    from ..backends import child_env_extra

    env = dict(os.environ if base is None else base)
    env.update(child_env_extra())
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    flags = env.get("XLA_FLAGS", "").split()
    if cpu_devices is not None:
        flags = [f for f in flags if not f.startswith(DEVICE_COUNT_FLAG)] + [f"{DEVICE_COUNT_FLAG}={int(cpu_devices)}"]
        env["JAX_NUM_CPU_DEVICES"] = str(int(cpu_devices))
    if flags or "XLA_FLAGS" in env:
        env["XLA_FLAGS"] = " ".join(flags)
    if platforms is not None:
        env["JAX_PLATFORMS"] = platforms
    return env


def command(module: str, *args: str) -> list[str]:
    """The command line that runs ``module`` in a fresh interpreter (never a fork: JAX and XLA are not
    fork-safe once initialised, and unlike multiprocessing's ``spawn`` nothing re-imports the user's
    ``__main__``)."""
    return [sys.executable, "-P", "-m", module, *args]
