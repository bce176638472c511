"""Lesson 9, sharding: a matmul and a two-layer MLP placed on a 2 x 4 mesh, and the transformer block's
gradient in Megatron's layout (notebooks/09_sharding).

The sharded programs need 8 devices, and JAX fixes its device count when it starts. The notebook's
first cell asks for 8 CPU devices, so in the student's kernel the checkers explore in-process; in a
Python that has fewer (the test suite's), they compute every expected answer of this lesson at once in
one child Python started with ``--xla_force_host_platform_device_count=8``, and keep them.
"""
from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

import workbench as wb
from workbench.analysis.run.multiprocess import child_env
from workbench.examples import attention

from ..errors import WorkbenchError
from .exercises import exercise, number_exercise
from .judge import close, names_of, right, wrong

DEVICES = 8
MESH_SHAPE = (2, 4)
AXES = ("data", "model")
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "collective-broadcast")


def layer(x, w):
    """One dense layer: a matmul and a tanh."""
    return jnp.tanh(x @ w)


def mlp(x, w1, w2):
    """Two dense layers, as a transformer's MLP block has them (without the bias)."""
    return jnp.tanh(x @ w1) @ w2


def mesh():
    """The lesson's 2 x 4 mesh: axis "data" of 2 devices, axis "model" of 4."""
    return attention.mesh(MESH_SHAPE, AXES)


def placed(m, value, spec):
    """``value`` put on mesh ``m`` as PartitionSpec ``spec`` says (a tuple: one mesh axis or None per dimension)."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return jax.device_put(value, NamedSharding(m, P(*spec)))


def _normal(seed, shape):
    return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float32) / math.sqrt(shape[0])


def layer_args(m, x_spec, w_spec):
    """``layer``'s arguments, x (16, 64) and w (64, 32), placed as ``x_spec`` and ``w_spec`` say."""
    return placed(m, _normal(0, (16, 64)), x_spec), placed(m, _normal(1, (64, 32)), w_spec)


def mlp_args(m):
    """``mlp``'s arguments in Megatron's layout: x (32, 64) split by rows over "data", w1 (64, 128) by
    columns over "model", w2 (128, 48) by rows over "model"."""
    return (placed(m, _normal(2, (32, 64)), ("data", None)), placed(m, _normal(3, (64, 128)), (None, "model")),
            placed(m, _normal(4, (128, 48)), ("model", None)))


@cache
def explorations() -> dict:
    """The lesson's explorations (8 devices needed): ``layer`` with w split over its contracting dimension
    (the notebook's first example) and over its columns, ``mlp`` in Megatron's layout, and the
    transformer block's gradient on ``attention.sharded_args``."""
    m = mesh()
    return {"contracting": wb.explore(layer, *layer_args(m, ("data", "model"), ("model", None))),
            "columns": wb.explore(layer, *layer_args(m, ("data", None), (None, "model"))),
            "mlp": wb.explore(mlp, *mlp_args(m)),
            "attention": wb.explore(attention.fn, *attention.sharded_args(m))}


def mesh_axes_of(groups: str | None, group_size: int | None) -> list[str]:
    """The mesh axes along which the devices of each replica group differ: the groups as XLA writes them
    (``{{0,1,2,3},{4,5,6,7}}``) compared with the groups every set of axes makes on the mesh's device ids;
    for a form without lists, the axes whose sizes multiply to ``group_size`` (when only one set does)."""
    ids = np.arange(math.prod(MESH_SHAPE)).reshape(MESH_SHAPE)
    written = {frozenset(int(d) for d in g.split(",") if d.strip())
               for g in re.findall(r"\{([\d,\s]+)\}", groups or "")}
    combos = [c for r in range(1, len(AXES) + 1) for c in itertools.combinations(range(len(AXES)), r)]
    for combo in combos:
        size = math.prod(MESH_SHAPE[i] for i in combo)
        made = {frozenset(int(d) for d in row)
                for row in np.moveaxis(ids, combo, range(-len(combo), 0)).reshape(-1, size)}
        if written and made == written:
            return [AXES[i] for i in combo]
    by_size = [c for c in combos if math.prod(MESH_SHAPE[i] for i in c) == group_size]
    return [AXES[i] for i in by_size[0]] if len(by_size) == 1 else []


def expected_here() -> dict:
    """Every expected answer of the lesson, computed in this process (it must see 8 devices)."""
    ex = explorations()
    mlp_rows = ex["mlp"].collectives("xla:optimized")
    first = mlp_rows.iloc[0]
    out = jax.eval_shape(mlp, *mlp_args(mesh()))  # the whole result, as one device would hold it unsharded
    att = ex["attention"]
    return {
        "columns": {"optimized": len(ex["columns"].collectives("xla:optimized")),
                    "contracting": len(ex["contracting"].collectives("xla:optimized"))},
        "mlp": {"count": len(mlp_rows), "kinds": sorted(set(mlp_rows.kind)), "kind": str(first.kind),
                "axes": mesh_axes_of(first.replica_groups, int(first.group_size)),
                "group_size": int(first.group_size), "bytes_per_device": int(first.bytes_per_device),
                "buffer_bytes": int(first.buffer_bytes), "global_bytes": int(np.prod(out.shape)) * out.dtype.itemsize},
        "attention": {"optimized": len(att.collectives("xla:optimized")),
                      "partitioned": len(att.collectives("xla:spmd-partitioning#1"))},
    }


def _in_child() -> dict:
    """``expected_here()`` in a fresh Python that sees 8 CPU devices (the environment a multi-process run's
    child gets: its other XLA flags kept)."""
    env = child_env(DEVICES)
    code = ("import json; from workbench.course import lesson09 as L; "
            "print('RESULT' + json.dumps(L.expected_here()))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900,
                          check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        raise WorkbenchError(f"lesson 9's answers could not be computed on {DEVICES} CPU devices in a child "
                             f"Python: {proc.stderr.strip()[-2000:]}")
    return json.loads(line[len("RESULT"):])


@cache
def expected() -> dict:
    """The expected answers: here when this process has 8 devices, else from one child Python."""
    return expected_here() if len(jax.devices()) >= DEVICES else _in_child()


def _collectives(placement: str, misread: str, why: str) -> tuple[int, dict]:
    """The collectives of xla:optimized for one of the lesson's placements, and the count of ``misread``
    (another stage or placement) as the near miss that ``why`` explains."""
    e = expected()[placement]
    return e["optimized"], {e[misread]: why}


@number_exercise("l9.q1", rel_close=0.0)
def q1():
    return _collectives("columns", "contracting", "w is split over the contracting dimension, as in the notebook's "
                                                  "first example: that is where partial sums appear")


@exercise("l9.q2")
def q2(answer):
    e = expected()["mlp"]
    names = names_of(answer)
    if names is None or len(names) != 2:
        return wrong(f"{answer!r} is not a (kind, mesh axis) pair",
                     "write two strings: the collective's kind as ex.collectives() writes it, and a mesh axis")
    kind, axis = (n.lower() for n in names)
    if kind in AXES and axis.replace("_", "-") in KINDS:  # written the other way round
        kind, axis = axis, kind
    kind = kind.replace("_", "-")
    if kind not in KINDS:
        return wrong(f"{names[0]!r} is not a collective kind", f"the kinds are {', '.join(KINDS)}")
    if axis not in AXES:
        return wrong(f"{names[1]!r} is not an axis of the mesh", f"the mesh's axes are {', '.join(AXES)}")
    kind_ok, axis_ok = kind in e["kinds"], [axis] == e["axes"]
    what = f"{e['kind']} over '{'+'.join(e['axes'])}' (groups of {e['group_size']} devices)"
    if kind_ok and axis_ok:
        return right(f"{what}: the row-split w2 leaves each device of a group with a partial sum of the same "
                     "output block")
    if kind_ok:
        return close("the kind is right, the axis is not", "compare the replica groups' device ids with "
                     "the mesh: np.arange(8).reshape(2, 4); which axis changes inside one group?")
    if axis_ok:
        return close("the axis is right, the kind is not", "read the kind column of "
                     "ex.collectives('xla:optimized')")
    return wrong(f"({kind!r}, {axis!r}) is not what XLA inserts",
                 "explore mlp on lesson.mlp_args(m) and read ex.collectives('xla:optimized')")


@number_exercise("l9.q3", rel_close=0.05)
def q3():
    e = expected()["mlp"]
    n, s = e["group_size"], e["buffer_bytes"]
    near = {s: "you take the buffer itself: a ring all-reduce is a reduce-scatter and an all-gather, each moving "
               "(n-1)/n of it",
            round((n - 1) * s / n): "you count one ring pass: an all-reduce makes two (reduce-scatter, then "
                                    "all-gather)"}
    near.setdefault(e["global_bytes"], "you take the whole output; each device holds only its rows of it")
    return e["bytes_per_device"], near


@number_exercise("l9.q4", rel_close=0.0)
def q4():
    return _collectives("attention", "partitioned", "you count them right after SPMD partitioning: a later XLA pass "
                                                    "merges all-reduces over the same devices into one")
