"""The collectives of a stage: which ops move data between devices, among how many, and how many bytes.

One row per collective op of an MLIR stage (StableHLO's ``stablehlo.all_reduce``, ``all_gather``,
``reduce_scatter``, ``all_to_all``, ``collective_permute``, ``collective_broadcast``; Shardy's
``sdy.all_gather``, ``all_slice``, ``all_reduce``, ``reduce_scatter``, ``all_to_all``,
``collective_permute``, ``reshard``) or of an XLA HLO stage (``all-reduce``, ``all-gather``,
``reduce-scatter``, ``all-to-all``, ``collective-permute``, ``collective-broadcast``; the async pairs
``all-reduce-start``/``-done``, ``all-gather-start``/``-done``, ``collective-permute-start``/``-done``
count once, at the start; an op wrapped in ``async-start`` counts once, in the computation it wraps).

``bytes_per_device`` is what one device sends (and, in these algorithms, receives as much) by the
standard ring estimates, with ``S`` the per-device buffer in bytes and ``n`` the group size:

* all-reduce: ``2 (n-1)/n S`` (a reduce-scatter and an all-gather);
* all-gather: ``(n-1)/n S_out`` (``S_out``: the gathered result on one device);
* reduce-scatter: ``(n-1)/n S_in`` (``S_in``: the operand on one device, before scattering);
* all-to-all: ``(n-1)/n S``;
* collective-permute and collective-broadcast: ``S`` (each device sends or receives its buffer once);
* Shardy's all-slice: 0 (each device keeps a slice of what it holds: nothing moves);
* Shardy's reshard: ``(n-1)/n S_out`` with ``n`` the size of the axes that leave a dimension's
  sharding -- an all-gather when axes are dropped, an all-to-all when they move between dimensions,
  nothing when axes are only added (a local slice). A rough estimate: Shardy lowers a reshard to
  several collectives (``sdy-reshard-to-collectives``).

``buffer_bytes`` is the ``S`` of the row's formula. Operands of several arrays (a combined all-reduce,
a tuple all-to-all) add up.

What is assumed about shapes: XLA's HLO after SPMD partitioning, and StableHLO collectives (they only
appear in per-device code: the body of a ``shard_map`` / ``sdy.manual_computation``, or a module
written per device), carry per-device shapes, so ``S`` is read off the types as written. Shardy's
collectives sit in a module of *global* shapes: their ``S`` is the per-device shard of the type under
the op's ``out_sharding`` (each dimension divided by the product of the mesh axes that shard it, rounded
up), and the group size is the product of the sizes of the mesh axes the op names (``sdy.mesh @mesh =
<["data"=2, "model"=4]>``; a sub-axis ``"x":(1)2`` counts its own size). For reduce-scatter ``S_in`` is
that shard times ``n``. A collective-permute or reshard reads its operand's sharding (a function
argument's ``sdy.sharding``, the defining op's ``sdy.sharding`` or ``out_sharding``); an operand with none
is taken as replicated, and the row's ``note`` says so. Replica groups that are empty (``{}``,
``dense<> : tensor<0x0xi64>``) or absent mean every device: the module's ``num_partitions`` times its
replica count. XLA's groups come as lists (``{{0,1,2,3},{4,5,6,7}}``), in the iota form
(``[2,4]<=[8]``, ``[4,2]<=[2,4]T(1,0)``: the second number is the group size) or in the mesh form
(``mesh['x'=2,'y'=4] {'y'}``: the product of the named axes' sizes). A collective-permute's
``group_size`` is how many devices its ``source_target_pairs`` name. Loop bodies count once, as in XLA's
cost analysis. Only collectives written as ops count: before ``sdy-insert-explicit-reshards`` /
``sdy-reshard-to-collectives`` the communication Shardy's shardings imply is not an op yet, and XLA's
partitioner writes it later (the ``xla:spmd-partitioning`` stage).

``source`` is the line of the user's Python that made the op (from the op's ``loc(...)``, or an HLO
instruction's metadata), as ``file:line``; None when the stage has no location for it.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from pathlib import Path

from jaxlib.mlir import ir
from typing import TYPE_CHECKING

from ...ir.dtypes import element_bytes
from ...ir.hlo import Instruction, arrays, attribute_text, attribute_value, read_hlo
from ...ir.hlo_sharding import group_size
from ...ir.locations import Origin, hlo_instruction_locations, mlir_op_locations, read_location, user_frame
from ...ir.sdy import Mesh, TensorSharding, attribute_body, axis_refs, per_value_shardings, read_mesh, read_sharding
from ...pipeline.exported import readable_module
from ...stages import Stage
from ..cost.tensors import nested_ops, static_tensor

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["COLLECTIVE_COLUMNS", "collective_table", "moved_bytes", "stage_collective_bytes", "stage_collectives"]

COLLECTIVE_COLUMNS = ("stage", "kind", "op", "dialect", "func", "result", "shape", "dtype", "replica_groups",
                      "mesh_axes", "group_size", "buffer_bytes", "bytes_per_device", "source", "note")

# op name -> the collective it is (the HLO opcode of the synchronous form)
_STABLEHLO = {f"stablehlo.{k.replace('-', '_')}": k for k in (
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "collective-broadcast")}
_SDY = {"sdy.all_gather": "all-gather", "sdy.all_slice": "all-slice", "sdy.all_reduce": "all-reduce",
        "sdy.reduce_scatter": "reduce-scatter", "sdy.all_to_all": "all-to-all",
        "sdy.collective_permute": "collective-permute", "sdy.reshard": "reshard"}
_MLIR = {**_STABLEHLO, **_SDY}
_HLO = {**{k: k for k in _STABLEHLO.values()}, "all-reduce-start": "all-reduce",
        "all-gather-start": "all-gather", "collective-permute-start": "collective-permute"}
# the attribute of a Shardy collective that names its mesh axes
_SDY_AXES = {"sdy.all_gather": "gathering_axes", "sdy.all_slice": "slicing_axes", "sdy.all_reduce": "reduction_axes",
             "sdy.reduce_scatter": "reduce_scatter_axes", "sdy.all_to_all": "params"}

_PACKAGE = Path(__file__).resolve().parents[1]
_TOOL_DIRS = (str(_PACKAGE) + "/",)  # the workbench's own frames are not the user's (as in provenance.py) ...
_USER_DIRS = (str(_PACKAGE / "examples") + "/",)  # ... but its built-in examples are user code


def moved_bytes(kind: str, n: int | None, s: int | None) -> int | None:
    """Bytes one device moves for collective ``kind`` among ``n`` devices on a buffer of ``s`` bytes
    (the ring estimates of the module's docstring); None when ``n`` or ``s`` is unknown."""
    if n is None or s is None:
        return None
    if n <= 1 or kind == "all-slice":
        return 0
    if kind == "all-reduce":
        return round(2 * (n - 1) * s / n)
    if kind in ("collective-permute", "collective-broadcast"):
        return s
    return round((n - 1) * s / n)  # all-gather (s = S_out), reduce-scatter (s = S_in), all-to-all, reshard


def _source(origins: Iterable[Origin]) -> str | None:
    """``file:line`` of the first origin's user frame (the workbench's own frames skipped), or None."""
    for o in origins:
        f = user_frame(o, _TOOL_DIRS, _USER_DIRS)
        if f is not None:
            return f"{f.file}:{f.line}"
    return None


def _row(kind, op, dialect, func, result, shape, dtype, groups, axes, n, s, source, note) -> dict:
    return {"kind": kind, "op": op, "dialect": dialect, "func": func, "result": result, "shape": shape,
            "dtype": dtype, "replica_groups": groups, "mesh_axes": axes, "group_size": n, "buffer_bytes": s,
            "bytes_per_device": moved_bytes(kind, n, s), "source": source, "note": note}


# -- MLIR: StableHLO and Shardy ----------------------------------------------------------------------------
def _int_attr(op, name: str, default: int) -> int:
    return ir.IntegerAttr(op.attributes[name]).value if name in op.attributes else default


def _types(values) -> tuple[str, str, int | None]:
    """Shape text (``8x16``; several arrays comma-separated), element types and total bytes of ``values``."""
    shapes, dtypes, total = [], [], 0
    for v in values:
        if not isinstance(v.type, ir.RankedTensorType):
            continue  # tokens carry no data
        shapes.append(_dims(v.type.shape))
        dtypes.append(str(v.type.element_type))
        t = static_tensor(v.type)
        total = None if t is None or total is None else total + t.nbytes
    return ",".join(shapes), ",".join(dict.fromkeys(dtypes)), total


def _groups(op, all_devices: int | None, key: str = "replica_groups") -> tuple[str | None, int | None]:
    """A ``dense<...>`` groups attribute as text, and the size of its first group (-1 pads uneven groups);
    for ``source_target_pairs``, how many devices the pairs name."""
    if key not in op.attributes:
        return None, all_devices
    attr = op.attributes[key]
    text = str(attr).split(" : ")[0]
    dense = ir.DenseIntElementsAttr(attr)
    values, shape = [int(x) for x in dense], list(dense.type.shape)
    if key == "source_target_pairs":
        return text, len(set(values))
    if not values:
        return text, all_devices
    return text, sum(1 for x in values[: shape[-1]] if x >= 0)


class _Shardy:
    """The meshes of a module and what Shardy's attributes say about a value's shard on one device: the
    attributes as jaxlib prints them, read by the workbench's one reader of Shardy's text (``ir.sdy``)."""

    def __init__(self, module):
        self.meshes: dict[str, Mesh] = {}
        for top in module.body.operations:
            if top.operation.name == "sdy.mesh":
                name = ir.StringAttr(top.operation.attributes["sym_name"]).value
                self.meshes[name] = read_mesh(str(top.operation.attributes["mesh"]), name)

    def dims(self, sharding: TensorSharding | None) -> list[list[tuple[str, int | None]]]:
        """Each dimension's axes as (name, size): a sub-axis ``"x":(1)2`` is named ``x:(1)2``, size 2."""
        if sharding is None:
            return []
        mesh = sharding.mesh(self.meshes)
        return [[(a.written, a.size(mesh)) for a in d.axes] for d in sharding.dims]

    def local(self, value, sharding: TensorSharding | None) -> tuple[int | None, str]:
        """Bytes of ``value``'s shard on one device under ``sharding`` (None: replicated), and its shape."""
        t = static_tensor(value.type)
        if t is None:
            return None, ""
        shape = list(t.shape)
        for k, axes in enumerate(self.dims(sharding)[: len(shape)]):
            sizes = [s for _, s in axes]
            if None in sizes:
                return None, ""
            shape[k] = -(-shape[k] // math.prod(sizes))
        return math.prod(shape) * t.element_bytes, _dims(shape)

    def sharding_of(self, value) -> TensorSharding | None:
        """The sharding a value carries (function argument, ``sdy.sharding`` of its op, or a Shardy op's
        ``out_sharding``/``sharding``), or None."""
        if isinstance(value, ir.BlockArgument):
            owner = value.owner.owner
            owner = getattr(owner, "operation", owner)
            if owner is None or owner.name != "func.func" or "arg_attrs" not in owner.attributes:
                return None
            attrs = ir.DictAttr(ir.ArrayAttr(owner.attributes["arg_attrs"])[value.arg_number])
            return read_sharding(str(attrs["sdy.sharding"])) if "sdy.sharding" in attrs else None
        op = value.owner
        op = getattr(op, "operation", op)
        for key in ("out_sharding", "sharding"):
            if key in op.attributes and op.name.startswith("sdy."):
                return read_sharding(str(op.attributes[key]))
        if "sdy.sharding" in op.attributes:
            per_value = per_value_shardings(str(op.attributes["sdy.sharding"]))
            return read_sharding(per_value[value.result_number]) if value.result_number < len(per_value) else None
        return None


def _named_axes(text: str, mesh: Mesh) -> list[tuple[str, int | None]]:
    """The axis references written in a Shardy attribute (``{"model"}``, ``[{"data"}, {}]``, ``[{"x"}: 0->1]``)."""
    return [(a.written, a.size(mesh)) for a in axis_refs(text)]


def _axes_text(axes: Iterable[str]) -> str:
    return "{" + ", ".join(f'"{a}"' for a in axes) + "}"


def _size(axes: Iterable[tuple[str, int | None]]) -> int | None:
    sizes = [s for _, s in dict(axes).items()]
    return None if None in sizes else math.prod(sizes)


def _sdy_row(op, shardy: _Shardy) -> dict:
    """A Shardy collective's row: per-device size under its out_sharding, group size from its axes."""
    name = op.name
    kind = _SDY[name]
    printed = str(op.attributes["sharding" if name == "sdy.reshard" else "out_sharding"])
    out = read_sharding(printed)
    mesh = out.mesh(shardy.meshes) if out is not None else Mesh("", ())
    s_out, local_shape = shardy.local(op.results[0], out)
    shape, dtype, _ = _types(op.operands[:1])
    note = f"per device {local_shape} under {printed}"
    if name in _SDY_AXES:
        text = str(op.attributes[_SDY_AXES[name]])
        axes_text = attribute_body(text)  # jaxlib prints '#sdy<axis_ref_list{"model"}>': the op writes '{"model"}'
        axes = _named_axes(text, mesh)
    else:  # collective_permute and reshard: the axes that differ from the operand's sharding
        before = shardy.sharding_of(op.operands[0])
        if before is None:
            note += "; operand sharding unknown: taken as replicated"
        old = shardy.dims(before)
        new = shardy.dims(out)
        old += [[] for _ in range(len(new) - len(old))]
        if name == "sdy.reshard":  # axes that leave a dimension: gathered, or moved to another one
            axes = [a for o, n in zip(old, new) for a in o if a not in n]
        else:  # devices among which the shards are permuted
            axes = [a for o, n in zip(old, new) for a in n if a not in o] or [a for n in new for a in n]
        axes = list(dict(axes).items())
        axes_text = _axes_text(a for a, _ in axes)
    n = _size(axes)
    s = None if s_out is None else (s_out * n if kind == "reduce-scatter" and n is not None else s_out)
    return _row(kind, name, "sdy", "", "", shape, dtype, None, axes_text, n, s, None, note)


def _stablehlo_row(op, all_devices: int | None) -> dict:
    name = op.name
    kind = _STABLEHLO[name]
    shape, dtype, s_in = _types(op.operands)
    if kind == "collective-permute":
        groups, n = _groups(op, all_devices, "source_target_pairs")
    else:
        groups, n = _groups(op, all_devices)
    s = _types(op.results)[2] if kind == "all-gather" else s_in
    return _row(kind, name, "stablehlo", "", "", shape, dtype, groups, None, n, s, None, "")


@functools.lru_cache(maxsize=64)
def _mlir_rows(text: str) -> tuple[dict, ...]:
    if not any(name.partition(".")[2] in text for name in _MLIR):
        return ()
    module = readable_module(text)
    top = module.operation
    all_devices = _int_attr(top, "mhlo.num_partitions", 1) * _int_attr(top, "mhlo.num_replicas", 1)
    shardy = _Shardy(module)
    found = [op for op in nested_ops(top) if op.name in _MLIR]
    located = [o for o in mlir_op_locations(text) if o.op in _MLIR]
    named = len(located) == len(found) and all(o.op == op.name for o, op in zip(located, found))
    rows = []
    for k, op in enumerate(found):
        row = _sdy_row(op, shardy) if op.name in _SDY else _stablehlo_row(op, all_devices)
        # the location as jaxlib reads it: an op with a region (all_reduce's reducer) writes its loc(...)
        # on its last line, where the text's reader (mlir_op_locations) does not look
        row["source"] = _source(read_location(str(op.location)))
        if named:  # the names as the stage's text writes them
            row.update(func=located[k].func, result=located[k].result)
        else:
            row.update(func=_function_of(op), result=op.results[0].get_name() if len(op.results) else "")
        rows.append(row)
    return tuple(rows)


def _function_of(op) -> str:
    """The symbol of the ``func.func`` that holds ``op``, or ""."""
    parent = op.parent
    while parent is not None and parent.operation.name != "func.func":
        parent = parent.operation.parent
    if parent is None or "sym_name" not in parent.operation.attributes:
        return ""
    return ir.StringAttr(parent.operation.attributes["sym_name"]).value


# -- XLA HLO ---------------------------------------------------------------------------------------------
def _hlo_types(shapes: list[str]) -> tuple[str, str, int | None]:
    """Shape text, element types and total bytes of the arrays of HLO ``shapes`` (a bounded dynamic
    dimension at its bound; tokens carry no data)."""
    found = [a for s in shapes for a in arrays(s) if a.dtype != "token"]
    total: int | None = 0
    for a in found:
        try:
            size = element_bytes(a.dtype)
        except TypeError:  # a type the table does not know: the buffer's size is unknown
            size = None
        known = size is not None and None not in a.bounds
        total = total + size * math.prod(a.bounds) if known and total is not None else None
    return ",".join(_dims(a.bounds) for a in found), ",".join(dict.fromkeys(a.dtype for a in found)), total


def _dims(shape) -> str:
    """``8x16`` (MLIR's way of writing a shape), "scalar" for rank 0, ``?`` for a dynamic dimension."""
    return "x".join(str(d) if d is not None and d >= 0 else "?" for d in shape) or "scalar"


def _hlo_row(ins: Instruction, shapes: dict[str, str], all_devices: int | None) -> dict:
    kind = _HLO[ins.opcode]
    operand_shapes = [shapes[o] for o in ins.operand_names if o in shapes]
    if not operand_shapes:  # operands printed with their shapes (``f32[8]{0} %a``), or none found
        operand_shapes = [ins.operands]
    shape, dtype, s_in = _hlo_types(operand_shapes)
    pairs = kind == "collective-permute"
    groups = attribute_text(ins.attributes, "source_target_pairs" if pairs else "replica_groups")
    n = group_size(groups, all_devices, pairs)
    s = s_in * n if kind == "all-gather" and s_in is not None and n is not None else s_in
    text = f"{'source_target_pairs' if pairs else 'replica_groups'}={groups}" if groups is not None else None
    return _row(kind, ins.opcode, "hlo", "", ins.name, shape, dtype, text, None, n, s, None, "")


@functools.lru_cache(maxsize=64)
def _hlo_rows(text: str) -> tuple[dict, ...]:
    if not any(op in text for op in _HLO):
        return ()
    module = read_hlo(text)
    header = next((line for line in text.splitlines() if line.startswith("HloModule")), "")
    all_devices = int(attribute_value(header, "num_partitions") or 1) * int(attribute_value(header, "replica_count") or 1)
    where = {(o.func, o.result): o.origins for o in hlo_instruction_locations(text)}
    rows = []
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode in _HLO:
                row = _hlo_row(ins, shapes, all_devices)
                row.update(func=comp.name, source=_source(where.get((comp.name, ins.name), ())))
                rows.append(row)
    return tuple(rows)


# -- per stage ------------------------------------------------------------------------------------------
def _reads(stage: Stage) -> str | None:
    """How a stage's collectives are read: "mlir", "hlo", or None (a jaxpr, backend output, a failed stage)."""
    if stage.error or not stage.text:
        return None
    if stage.is_module:
        return "mlir"
    if stage.group == "xla":
        return "hlo"
    return None


def stage_collectives(stage: Stage) -> list[dict]:
    """The collectives of one stage as rows (``COLLECTIVE_COLUMNS``); [] for a stage without IR to read."""
    kind = _reads(stage)
    if kind is None:
        return []
    rows = _mlir_rows(stage.text_with_locations or stage.text) if kind == "mlir" else _hlo_rows(stage.text)
    return [{"stage": stage.name, **r} for r in rows]


def stage_collective_bytes(stage: Stage) -> int | None:
    """The sum of ``bytes_per_device`` over the stage's collectives (those of unknown size left out): 0
    for a stage without any, None for a stage with no IR that is read (jaxpr, backend, failed)."""
    if _reads(stage) is None:
        return None
    return sum(r["bytes_per_device"] or 0 for r in stage_collectives(stage))


def collective_table(stages: Iterable[Stage]) -> pd.DataFrame:
    """One row per collective op of each of ``stages`` (columns ``COLLECTIVE_COLUMNS``); empty, with those
    columns, when there are none."""
    import pandas as pd

    rows = [r for s in stages for r in stage_collectives(s)]
    df = pd.DataFrame(rows, columns=list(COLLECTIVE_COLUMNS))
    for c in ("group_size", "buffer_bytes", "bytes_per_device"):
        df[c] = pd.array(df[c].tolist(), dtype="Int64")
    return df
