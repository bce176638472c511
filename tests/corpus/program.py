"""The two values of the corpus: a Program (a registry entry) and the Instance its builder makes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

__all__ = ["Instance", "Program", "Wrapper"]

# How the function reaches the user's hands: the wrapper, if any, that they would pass to wb.explore.
# "plain" functions run under jax.jit; the others are their own jit.
Wrapper = Literal["plain", "jax.jit", "nnx.jit", "eqx.filter_jit"]


@dataclass(frozen=True)
class Instance:
    """One fresh copy of a program: the function exactly as a user passes it to ``wb.explore`` (the
    ``nnx.jit``-decorated step itself, the ``eqx.filter_jit`` function itself, ...) and its example
    arguments. Fresh because programs consume their arguments: ``nnx.jit`` steps update the model and
    optimizer in place, a donated buffer is gone after the call."""

    fn: Callable
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Program:
    """A registry entry: ``build()`` makes a new Instance each call (with the same values: every seed
    is fixed). ``wrapper`` says how the program runs on its own (``jax.jit(fn)`` for a plain
    function, ``fn`` itself otherwise). ``notes`` says what in it is realistic, and what it stresses."""

    name: str
    build: Callable[[], Instance]
    wrapper: Wrapper
    notes: str

    def run_own(self, inst: Instance):
        """Run the program the way its own library (or plain jax.jit) does, outside the workbench, and wait
        for its outputs and its host callbacks (jax.debug.print prints asynchronously, after the call returns)."""
        import jax

        call = jax.jit(inst.fn) if self.wrapper == "plain" else inst.fn
        out = jax.block_until_ready(call(*inst.args))
        jax.effects_barrier()
        return out
