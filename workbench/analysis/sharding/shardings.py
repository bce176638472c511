"""Each tensor's sharding in a stage: which dimensions are split over which devices, and what one
device holds, read off the text.

MLIR (Shardy): a function argument's ``sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>``, an op's
``sdy.sharding = #sdy.sharding_per_value<[<@mesh, ...>, ...]>`` (one sharding per result), the
``out_sharding=<...>`` of Shardy's collectives, the sharding written in ``sdy.reshard`` and
``sdy.sharding_constraint``, a ``sdy.manual_computation``'s ``out_shardings`` (its results) and
``in_shardings`` (its body's arguments, which are each device's own part), and the older
``mhlo.sharding = "{devices=[2,1]<=[2]}"`` strings. The mesh's axis sizes come from
``sdy.mesh @mesh = <["data"=2, "model"=4]>``. A value with none of these has no entry: in a Shardy
module that is a tensor whose sharding is left to propagation, not a statement that it is replicated.

XLA HLO: an instruction's ``sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}``,
``{replicated}``, ``{maximal device=0}``, ``{manual}``, or a tuple of those. Shapes in an HLO module
before SPMD partitioning are global and after it each device's: XLA's SPMD partitioner renames the
entry computation ``main.9`` to ``main.9_spmd``, and that is how a partitioned module is told (the
passes XLA runs inside the partitioner -- dce, cse -- dump partitioned modules before the
``spmd-partitioning`` dump itself, so a stage's place says less than its text). MLIR modules carry
global shapes (a manual computation's body excepted).

The text read is any module text; the panel reads the normalized text its diff view shows, so the
names are the ones the reader sees there. Names are per function (MLIR ``func.func``) or computation
(HLO), so ``read_shardings`` gives one ``Scope`` per function with the lines it spans.

The reading is ``workbench.ir``'s (``written_shardings`` finds each value's sharding in the lines,
``sdy`` and ``hlo_sharding`` read what they say); this module puts them in words.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...ir.hlo import array_sizes, tuple_shapes
from ...ir.hlo_sharding import is_partitioned, read_hlo_sharding, tuple_shardings
from ...ir.sdy import Mesh, read_meshes, read_sharding
from ...ir.text import input_kind
from ...ir.written_shardings import ShardedScope, WrittenSharding, hlo_shardings, mlir_shardings, tensor_dims

__all__ = ["Mesh", "ValueSharding", "Scope", "has_shardings", "read_shardings", "value_shardings",
           "describe_sdy", "describe_hlo", "is_partitioned"]


@dataclass(frozen=True)
class ValueSharding:
    """The sharding of one value: ``summary`` says it in words ("sharded: dim 0 over data (2), dim 1
    replicated; per device 8x64 of 16x64"), ``sharding`` is the text as written and ``type`` the value's
    type (``tensor<16x64xf32>``, ``f32[16,64]{1,0}``; "" when not read)."""

    name: str
    function: str
    summary: str
    sharding: str
    type: str = ""

    @property
    def description(self) -> str:
        """The summary, then the type and the sharding as written: what a hover shows."""
        return f"{self.summary}\n{(self.type + ' ') if self.type else ''}{self.sharding}"


@dataclass(frozen=True)
class Scope:
    """The values of one function (computation) with a sharding; ``first``..``last`` are the lines it
    spans (0-based, inclusive, as ``text.split("\\n")`` cuts them)."""

    function: str
    first: int
    last: int
    values: dict[str, ValueSharding] = field(default_factory=dict)


def has_shardings(text: str) -> bool:
    """Whether the text can hold a sharding at all: a cheap look, so an unsharded stage costs nothing."""
    return "sdy.sharding" in text or "sharding={" in text or "mhlo.sharding" in text or "_sharding=<" in text


def read_shardings(text: str, *, partitioned: bool | None = None) -> list[Scope]:
    """The functions (HLO computations) of ``text`` with the shardings of their values; [] when none.

    ``partitioned`` (HLO): whether the shapes are already each device's (after XLA's SPMD partitioner);
    None: read off the text (``is_partitioned``)."""
    if not has_shardings(text):
        return []
    lines = text.split("\n")
    if input_kind(text) == "hlo":
        partitioned = is_partitioned(text) if partitioned is None else partitioned
        scopes = [_hlo_scope(s, partitioned) for s in hlo_shardings(lines) if s.values]
    else:
        meshes = read_meshes(lines)
        scopes = [_mlir_scope(s, meshes) for s in mlir_shardings(lines) if s.values]
    return [s for s in scopes if s.values]


def value_shardings(text: str, function: str | None = None, *, partitioned: bool | None = None) -> dict[str, str]:
    """``{name: description}`` for the values of one function of ``text`` that have a sharding: ``function``,
    or by default the entry (``@main``, the HLO ``ENTRY``, else the first function with any)."""
    scopes = read_shardings(text, partitioned=partitioned)
    if function is None:
        entry = next((s for s in scopes if s.function == "main" or s.function.startswith("ENTRY ")), None)
        entry = entry or (scopes[0] if scopes else None)
        function = entry.function if entry else ""
    out: dict[str, str] = {}
    for s in scopes:
        if function in (s.function, s.function.removeprefix("ENTRY ")):
            out.update({n: v.description for n, v in s.values.items()})
    return out


# -- in words --------------------------------------------------------------------------------------------
def _shape(dims: Sequence[int | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) if dims else "scalar"


def _per_device(dims: Sequence[int | None] | None, parts: Sequence[int]) -> str:
    """"; per device 8x64 of 16x64" for a tensor of ``dims`` split in ``parts`` along each dimension."""
    if dims is None or len(dims) != len(parts) or any(d is None for d in dims):
        return ""
    local = [-(-d // p) for d, p in zip(dims, parts)]
    padded = any(d % p for d, p in zip(dims, parts))
    return f"; per device {_shape(local)} of {_shape(dims)}" + (" (padded: a dimension does not divide)" if padded else "")


def describe_sdy(sharding: str, dims: Sequence[int | None] | None, meshes: dict[str, Mesh]) -> str:
    """A Shardy tensor sharding (``<@mesh, [{"data"}, {}], replicated={"model"}>``) in words, for a
    tensor of global shape ``dims`` (None: unknown)."""
    read = read_sharding(sharding)
    if read is None:
        return "sharding not read"
    mesh = read.mesh(meshes)
    parts, words, used, unknown = [], [], set(), False
    for d, dim in enumerate(read.dims):
        size: int | None = 1
        for a in dim.axes:
            n = a.size(mesh)
            size = size * n if (size is not None and n is not None) else None
            used.add(a.name)
        parts.append(size or 1)
        unknown = unknown or size is None  # an axis of a mesh not in the text: no per-device shape
        if dim.axes:
            names = "×".join(a.written for a in dim.axes)
            words.append(f"dim {d} over {names} ({size if size is not None else '?'})" + (", open" if dim.open else ""))
        else:
            words.append(f"dim {d} open" if dim.open else f"dim {d} replicated")
    unreduced = [a.name for a in read.unreduced]
    if dims is not None and len(dims) != len(parts):
        dims = None
    per_device = "" if unknown else _per_device(dims, parts)
    sharded = any(p > 1 for p in parts) or any(w.startswith("dim") and " over " in w for w in words)
    if not sharded:
        whole = _shape(dims) if dims is not None else "tensor"
        devices = f"each of the {mesh.size} devices of @{mesh.name}" if mesh.axes and mesh.name else "every device"
        text = f"replicated: the whole {whole} on {devices}"
        if any("open" in w for w in words):
            text += " (" + ", ".join(w for w in words if "open" in w) + ": propagation may still shard it)"
    else:
        text = "sharded: " + ", ".join(words) + per_device
        spare = [f"{a} ({s})" for a, s in mesh.axes if a not in used and a not in unreduced and s > 1]
        if spare:
            text += "; replicated over " + ", ".join(spare)
    if unreduced:
        text += "; unreduced over " + ", ".join(unreduced) + " (partial sums still to add up)"
    return text


def describe_hlo(sharding: str, dims: Sequence[int | None] | None, partitioned: bool | None = None) -> str:
    """An HLO sharding's inside (``devices=[2,1,4]<=[8] last_tile_dim_replicate``, ``replicated``, ...)
    in words, for a tensor of the shape written ``dims``; ``partitioned``: that shape is already each
    device's."""
    read = read_hlo_sharding(sharding)
    if read.kind == "replicated":
        return f"replicated: the whole {_shape(dims) if dims is not None else 'array'} on every device"
    if read.kind == "maximal":
        return f"on device {read.device if read.device is not None else '?'} only (maximal)"
    if read.kind == "manual":
        return "manual: per-device code (shard_map); the shape is each device's own"
    if read.kind == "unknown":
        return "unknown: left to XLA's sharding propagation"
    if read.kind == "unread":
        return "sharding not read"
    data, extra = read.tiles[:read.rank], read.tiles[read.rank:]
    words = [f"dim {d} in {t} parts" if t > 1 else f"dim {d} whole" for d, t in enumerate(data)]
    text = "sharded: " + ", ".join(words) if any(t > 1 for t in data) else "not split: " + ", ".join(words)
    for kind, n in zip(read.last_tile_dims, extra):
        if n > 1:
            text += f"; each part {kind} on {n} devices" if kind == "replicated" else f"; {kind} over {n} devices"
    if dims is not None and len(dims) == read.rank and all(d is not None for d in dims):
        if partitioned:
            whole = [d * t for d, t in zip(dims, data)]
            text += f"; per device {_shape(dims)} (this stage is partitioned; the whole is about {_shape(whole)})"
        elif partitioned is False:
            text += _per_device(dims, data)
    return text


# -- one function's values ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _hlo_summary(text: str, shape: str, partitioned: bool | None) -> str:
    if not text.startswith("{{"):
        return describe_hlo(text, array_sizes(shape), partitioned)
    shapes = tuple_shapes(shape)
    return "a tuple: " + "; ".join(
        f"element {i}: {describe_hlo(e, array_sizes(shapes[i]) if i < len(shapes) else None, partitioned)}"
        for i, e in enumerate(tuple_shardings(text)))


def _hlo_scope(scope: ShardedScope, partitioned: bool | None) -> Scope:
    values = {}
    for v in scope.values:
        summary = _hlo_summary(v.sharding, v.type, partitioned)
        values[v.name] = ValueSharding(v.name, scope.function, summary, f"sharding={v.sharding}", v.type)
    return Scope(scope.function, scope.first, scope.last, values)


@functools.lru_cache(maxsize=4096)
def _describe(kind: str, sharding: str, type_text: str, meshes: tuple[Mesh, ...]) -> tuple[str, str]:
    """(summary, the sharding as written) of one value, once per distinct sharding and type: a module
    repeats a few of them many times."""
    by_name = {m.name: m for m in meshes}
    if kind == "hlo":
        return describe_hlo(sharding, tensor_dims(type_text), partitioned=False), f'mhlo.sharding = "{sharding}"'
    return describe_sdy(sharding, tensor_dims(type_text), by_name), sharding


def _manual(v: WrittenSharding, meshes: dict[str, Mesh]) -> str:
    """A manual computation's body argument in words: each device's own part of an operand."""
    whole = describe_sdy(v.sharding, None, meshes) if v.sharding else "sharding not read"
    dims = tensor_dims(v.type)
    return (f"manual over {', '.join(v.manual_axes) or 'no axes'}: this is each device's own part"
            + (f" ({_shape(dims)})" if dims is not None else "") + f"; the operand is {whole}")


def _mlir_scope(scope: ShardedScope, meshes: dict[str, Mesh]) -> Scope:
    values: dict[str, ValueSharding] = {}
    for v in scope.values:
        if v.kind == "group":  # the group's own name (%5 of %5:2) shows them all
            parts = [values[p] for p in v.parts]
            values[v.name] = ValueSharding(
                v.name, scope.function, "; ".join(f"#{k}: {p.summary}" for k, p in enumerate(parts)),
                ", ".join(p.sharding for p in parts), ", ".join(p.type for p in parts if p.type))
        elif v.kind == "manual":
            values[v.name] = ValueSharding(v.name, scope.function, _manual(v, meshes), v.sharding, v.type)
        else:
            summary, written = _describe(v.kind, v.sharding, v.type, tuple(meshes.values()))
            values[v.name] = ValueSharding(v.name, scope.function, summary, written, v.type)
    return Scope(scope.function, scope.first, scope.last, values)
