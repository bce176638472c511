"""Lesson 11, accelerators and memory: where the bytes go at XLA's peak (``ex.memory()``), how
``jax.checkpoint`` and donation move that peak, and on a TPU the tiled layouts, their padding and the
bundles of each fusion's kernel (``ex.backend()``), read from a compile recorded on a TPU v5e that ships
with the course (notebooks/11_accelerators_and_memory)."""
from __future__ import annotations

import atexit
import importlib.resources
import shutil
import tarfile
import tempfile
from functools import cache
from pathlib import Path

import jax
import jax.numpy as jnp

import workbench as wb

from .exercises import exercise, number_exercise
from .judge import judge_choice, right, wrong

LAYERS, BATCH, WIDTH, HIDDEN = 6, 1024, 128, 512
RECORDED = "mlp_bf16"  # workbench/examples/mlp.py's loss and gradient in bfloat16, compiled on a TPU v5e
VERDICTS = ("MXU-bound", "issue-bound", "DMA-bound", "latency-bound")


def block(h, p):
    """One residual layer: up to a 4x wider hidden layer, gelu, and back down."""
    up = jax.nn.gelu(h @ p[0])
    return h + up @ p[1], None


def loss(params, x):
    """``LAYERS`` blocks run by ``lax.scan`` over the stacked weights, then a squared mean."""
    x, _ = jax.lax.scan(block, x, params)
    return (x * x).mean()


def loss_checkpointed(params, x):
    """The same loss, each block under ``jax.checkpoint``: its backward pass recomputes the block's insides
    from its input instead of keeping them from the forward pass."""
    x, _ = jax.lax.scan(jax.checkpoint(block), x, params)
    return (x * x).mean()


def grads(params, x):
    return jax.grad(loss)(params, x)


def grads_checkpointed(params, x):
    return jax.grad(loss_checkpointed)(params, x)


def step(params, x):
    """A training step: the checkpointed gradient, then plain SGD on the weights."""
    g = jax.grad(loss_checkpointed)(params, x)
    return jax.tree.map(lambda p, d: p - 0.01 * d, params, g)


def sgd(params, g):
    """The update alone: the new weights from the old ones and their gradient."""
    return jax.tree.map(lambda p, d: p - 0.01 * d, params, g)


def inputs():
    """``(params, x)``: the two stacked weight arrays (f32[6,128,512], f32[6,512,128]) and a batch f32[1024,128]."""
    k1, k2 = jax.random.split(jax.random.key(0))
    params = (jax.random.normal(k1, (LAYERS, WIDTH, HIDDEN)) / 16, jax.random.normal(k2, (LAYERS, HIDDEN, WIDTH)) / 32)
    return params, jnp.ones((BATCH, WIDTH))


@cache
def explored(name: str):
    """The lesson's programs explored on the CPU (the figures the notebook states are the CPU's on every
    machine): "grads", "checkpointed", "step", "sgd", and "sgd donated" (``donate_argnums=0``)."""
    params, x = inputs()
    fn, args = {"grads": (grads, (params, x)), "checkpointed": (grads_checkpointed, (params, x)),
                "step": (step, (params, x)), "sgd": (sgd, (params, params)),
                "sgd donated": (jax.jit(sgd, donate_argnums=0), (params, params))}[name]
    return wb.explore(fn, *args, device="cpu")


@cache
def memory(name: str):
    """``explored(name).memory()``: XLA's buffers and peak of that program on the CPU."""
    return explored(name).memory()


def fusions(text: str):
    """The fusions of an optimized HLO module (``ex["xla:optimized"].text``), one row each: its name, the
    computation it runs in, XLA's kind (kLoop: elementwise work in one loop; kOutput: a product with the work
    after it fused into its output, as a TPU fuses; kCustom: a library's kernel, as the CPU's products), its
    shape with the layout, and the ops fused into it."""
    import pandas as pd

    from workbench.ir.hlo import attribute_value, read_hlo

    module = read_hlo(text)
    bodies = {c.name: c for c in module.computations}
    rows = []
    for call in module.calls:
        ins = call.instruction
        if ins.opcode != "fusion" or call.attribute != "calls":
            continue
        ops = [i.opcode for i in bodies[call.callee].instructions if i.opcode not in ("parameter", "tuple")]
        rows.append({"fusion": ins.name, "in": call.caller, "kind": attribute_value(ins.attributes, "kind"),
                     "shape": ins.shape, "ops": len(ops), "fused": " ".join(ops)})
    return pd.DataFrame(rows, columns=["fusion", "in", "kind", "shape", "ops", "fused"])


# -- the TPU, recorded ----------------------------------------------------------------------------------


def recorded_file(suffix: str) -> Path:
    """A file of the TPU v5e recording shipped with the course: ``.hlox`` (the saved exploration: every stage,
    the buffer assignment, the live ranges, the kernel table) or ``.llo.tar.xz`` (libtpu's LLO dump)."""
    return Path(str(importlib.resources.files(__package__).joinpath("data", RECORDED + suffix)))


@cache
def _dump_folder() -> str:
    folder = Path(tempfile.mkdtemp(prefix="lesson11-llo-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with tarfile.open(recorded_file(".llo.tar.xz")) as tf:
        tf.extractall(folder, filter="data")
    return str(folder)


@cache
def recorded():
    """The recorded TPU compile: the loaded Exploration of workbench/examples/mlp.py's step in bfloat16."""
    return wb.load(str(recorded_file(".hlox")))


@cache
def recorded_kernels():
    """``recorded().backend()`` read from the recorded LLO dump (on any machine)."""
    return recorded().backend(dump=_dump_folder())


def on_tpu() -> bool:
    """Whether JAX computes on a TPU here: then the notebook also explores the program live."""
    return jax.default_backend() == "tpu"


def live_program():
    """``(fn, args)`` of the recorded program, to explore live on a TPU: workbench/examples/mlp.py in bfloat16."""
    from workbench import examples

    fn, args = examples.load("mlp")
    return fn, jax.tree.map(lambda a: a.astype(jnp.bfloat16) if a.dtype == jnp.float32 else a, args)


# -- the exercises ----------------------------------------------------------------------------------------


@number_exercise("l11.q1")
def q1():
    plain, ckpt = memory("grads"), memory("checkpointed")
    saved = plain.peak_bytes - ckpt.peak_bytes
    return saved, {ckpt.peak_bytes: "you give the checkpointed peak itself, not what it saves",
                   round(saved / 2**20, 1): "you give MiB: the answer is in bytes"}


@number_exercise("l11.q2")
def q2():
    before, after = memory("sgd"), memory("sgd donated")
    saved = before.peak_bytes - after.peak_bytes
    step_saves = int(memory("step").donation().attrs["saves"])
    return saved, {0: "you donate in step, whose peak lies inside the backward loop where donation does not reach "
                      "(sgd's peak is its end, where the arguments and the new weights are all live)",
                   before.peak_bytes: "you give sgd's peak, not how far it falls",
                   after.peak_bytes: "you give the donated sgd's peak, not how far it falls",
                   step_saves * 2: "you count params and g: only params was donated"}


def _x_argument():
    peak = recorded().memory().at_peak()
    return peak[peak["argument"] == "x"].iloc[0]


@number_exercise("l11.q3")
def q3():
    row = _x_argument()
    size, padding = int(row["bytes"]), int(row["padding_bytes"])
    return padding, {size: "you give the whole buffer, data and padding together",
                     size - padding: "you give the bytes of data (32 x 64 x 2), not the padding"}


def _matmul_row():
    table = recorded_kernels().table()
    return table.sort_values("MXU", ascending=False).iloc[0]


@exercise("l11.q4")
def q4(answer):
    row = _matmul_row()
    verdict = str(row["bound"]).split(" ")[0]
    said = (f"{row['fusion']} fills {row['MXU']:.0%} of its MXU slots and issues {int(row['issued'])} bundles "
            f"({row['issue_us']:.3f} us at the clock) in {row['measured_us']:.3f} us measured")
    value = answer.strip() if isinstance(answer, str) else answer
    if isinstance(value, str) and value.lower() == "mxu-bound" and verdict != "MXU-bound":
        return wrong(f"not MXU-bound: {said}, so it waits most of the time",
                     "a kernel is MXU-bound when it issues most of its time and its MXU slots are mostly full")
    if isinstance(value, str) and value.lower() == "dma-bound" and verdict != "DMA-bound":
        return wrong(f"not DMA-bound: {said}; it moves {int(row['hbm_bytes']):,} bytes of HBM, which at the "
                     "chip's bandwidth takes far less than its wait",
                     "DMA-bound is a wait that moving the kernel's HBM bytes explains")
    verdict_said = judge_choice(value, verdict, VERDICTS, what=f"the verdict on {row['fusion']}",
                                hint="k.table()'s bound column; README's 'The TPU's kernels' says how it is decided")
    if verdict_said.status == "right":
        return right(f"{verdict}: {said}")
    return verdict_said
