"""A corpus of real programs written with the libraries people compile with jax.jit: Flax (NNX and
linen), Equinox, Diffrax, Optax, dm-haiku, and JAX's own features that real code leans on (remat, scans, bf16,
linear algebra, attention, host callbacks, donation, FFTs with complex constants, sparse arrays, custom
derivative rules, Pallas in interpret mode).

``PROGRAMS`` is the registry; each entry's ``build()`` returns the function exactly as a user would
pass it to ``wb.explore`` (an ``nnx.jit`` step, an ``eqx.filter_jit`` function, a ``jax.jit`` one,
or a plain function) and fresh example arguments. Each is small enough that ``wb.explore`` with the
default pipeline takes seconds on a CPU. ``tests/test_corpus.py`` runs them through the workbench;
``bench/bench_real.py`` times them.
"""
from __future__ import annotations

from . import diffrax_programs, equinox_programs, flax_programs, jax_programs, numerics_programs, optax_programs
from . import loop_programs
from .program import Instance, Program

__all__ = ["Instance", "Program", "PROGRAMS", "program", "names"]


def _haiku_resnet() -> Instance:
    # dm-haiku is imported when the program is built, so the rest of the corpus loads where it is not installed
    # (the TPU machine's staged packages)
    from . import haiku_programs

    return haiku_programs.haiku_resnet()


PROGRAMS: tuple[Program, ...] = (
    Program("nnx_transformer", flax_programs.nnx_transformer, "nnx.jit",
            "Flax NNX one-block transformer classifier (Embed, MultiHeadAttention, LayerNorm, MLP), one AdamW "
            "step: @nnx.jit train_step(model, optimizer, batch) with nnx.value_and_grad and optimizer.update; "
            "nnx.jit splits the graph state from the modules and writes it back, so the function it jits is not "
            "train_step's Python body"),
    Program("linen_convnet", flax_programs.linen_convnet, "jax.jit",
            "Flax linen conv net with BatchNorm (mutable batch_stats) and Dropout in train mode (a dropout rng "
            "folded with the step), SGD with momentum through a TrainState; random bits inside"),
    Program("eqx_filter_jit", equinox_programs.eqx_filter_jit, "eqx.filter_jit",
            "Equinox encoder (MultiheadAttention, LayerNorm, MLP holding activation functions) applied by "
            "@eqx.filter_jit predict(model, x): filter_jit makes the non-array leaves static"),
    Program("eqx_module_argument", equinox_programs.eqx_module_argument, "plain",
            "a plain function taking an Equinox conv-net module (all leaves arrays, hyperparameters static) "
            "and a batch: loss and gradient by eqx.filter_value_and_grad"),
    Program("diffrax_ode", diffrax_programs.diffrax_ode, "jax.jit",
            "Diffrax Tsit5 + PIDController adaptive solve of a damped oscillator, saved at 11 times: a while "
            "loop of at most 4096 steps, and Equinox's runtime error check (a host callback) from throw=True"),
    Program("optax_chain", optax_programs.optax_chain, "jax.jit",
            "Optax MultiSteps(apply_if_finite(chain(clip_by_global_norm, adamw(warmup-cosine schedule)))) on an "
            "MLP regression: lax.cond on the accumulation step, integer counters in the state"),
    Program("checkpoint_scan_bf16", jax_programs.checkpoint_scan_bf16, "jax.jit",
            "value_and_grad of a lax.scan over 4 stacked layers whose body is jax.checkpoint'ed "
            "(nothing_saveable), computing the matmuls in bfloat16"),
    Program("linalg", jax_programs.linalg, "jax.jit",
            "jnp.linalg: Cholesky (GP likelihood via cho_solve), eigh, SVD, QR (least squares); LAPACK custom "
            "calls on CPU; outputs comparable with numpy"),
    Program("dot_product_attention", jax_programs.dot_product_attention, "jax.jit",
            "causal multi-head self-attention by jax.nn.dot_product_attention, with input and output "
            "projections"),
    Program("debug_print_loop", jax_programs.debug_print_loop, "jax.jit",
            "power iteration in a lax.fori_loop that jax.debug.prints each step: a host callback in a loop "
            "body, which jax.export cannot serialize"),
    Program("pure_callback", jax_programs.pure_callback, "jax.jit",
            "robust normalisation whose median comes from numpy on the host by jax.pure_callback"),
    Program("donated_step", jax_programs.donated_step, "jax.jit",
            "an SGD step jitted with donate_argnums=(0,): the parameters' buffers alias the outputs "
            "(tf.aliasing_output in StableHLO)"),
    Program("spectral_burgers", numerics_programs.spectral_burgers, "jax.jit",
            "a pseudo-spectral viscous Burgers solver: FFTs with complex constants (1j * k), four right-hand sides "
            "per Runge-Kutta step in a lax.fori_loop of 20 steps"),
    Program("bcoo_matvec", numerics_programs.bcoo_matvec, "jax.jit",
            "jax.experimental.sparse: a BCOO matrix (a pytree of data and indices) times a vector inside a loss, "
            "and its gradient: gathers and a scatter-add"),
    Program("custom_rules", numerics_programs.custom_rules, "jax.jit",
            "a loss with a jax.custom_vjp (gradient clipping) and a jax.custom_jvp (a stable softplus), and its "
            "value_and_grad"),
    Program("pallas_interpret", numerics_programs.pallas_interpret, "jax.jit",
            "a Pallas kernel run by pallas_call(..., interpret=True), as a kernel writer tries one on a CPU: the "
            "kernel's body is lowered as ordinary HLO"),
    Program("haiku_resnet", _haiku_resnet, "jax.jit",
            "dm-haiku residual conv net with BatchNorm (transform_with_state: batch statistics as state), one "
            "Optax SGD-with-momentum step"),
    Program("metropolis_sampler", loop_programs.metropolis_sampler, "jax.jit",
            "random-walk Metropolis vmapped over 64 chains, each a lax.fori_loop of 50 steps that splits its key "
            "(new-style key arrays) every step, proposes, and accepts with jnp.where: a loop whose trip count, "
            "not its module, sets a call's time and its profile's events"),
)


def names() -> list[str]:
    return [p.name for p in PROGRAMS]


def program(name: str) -> Program:
    for p in PROGRAMS:
        if p.name == name:
            return p
    raise KeyError(f"no corpus program {name!r}; the programs are {', '.join(names())}")
