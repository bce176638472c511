"""XLA's device attributes, read as text: an HloSharding and a collective's replica groups.

An HloSharding is written inside braces, after ``sharding=`` in HLO and in the ``mhlo.sharding``
strings of an MLIR module: ``{replicated}``, ``{maximal device=0}``, ``{manual}``, ``{unknown}``, the
tiled ``{devices=[2,1,4]<=[8] last_tile_dim_replicate}`` (device counts per dimension; with
``last_tile_dim_replicate`` or ``last_tile_dims={manual, ...}`` the last counts are not dimensions of
the array but devices that hold the same part), or a tuple ``{{...}, {...}}`` of those, one per element
of a tuple shape. ``metadata={...}`` inside it is read past.

Replica groups: lists (``{{0,1,2,3},{4,5,6,7}}``), the iota form (``[2,4]<=[8]``: 2 groups of 4) and
the mesh form (``mesh['x'=2,'y'=4], device_ids=(...) {'y'}``: the named axes' sizes multiply);
``source_target_pairs`` name the devices a collective-permute moves between.

Whether an HLO module is SPMD-partitioned (each device's shapes) is read off its entry computation's
name: XLA's partitioner renames ``main.9`` to ``main.9_spmd``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from .text import skip_brackets

__all__ = ["HloSharding", "read_hlo_sharding", "tuple_shardings", "group_size", "is_partitioned",
           "partition_count", "has_tiled_mhlo_sharding"]

_METADATA = re.compile(r"\s*metadata=\{[^}]*\}")
_DEVICE = re.compile(r"device=(\d+)")
_TILES = re.compile(r"devices=\[([\d,\s]*)\]")
_LAST_TILE_DIMS = re.compile(r"last_tile_dims=\{([^}]*)\}")
_MESH_AXIS = re.compile(r"'([^']*)'=(\d+)")
_GROUP_AXIS = re.compile(r"'([^']*)'(?::\((\d+)\)(\d+))?")
_DIGITS = re.compile(r"\d+")
_NUMBER = re.compile(r"-?\d+")
_SPMD_ENTRY = re.compile(r"^ENTRY\s+%?[\w.\-]*_spmd\b", re.M)

Kind = Literal["replicated", "maximal", "manual", "unknown", "tiled", "unread"]


@dataclass(frozen=True)
class HloSharding:
    """One (non-tuple) HloSharding. ``tiled``: ``tiles`` are the device counts written in ``devices=[...]``,
    of which the last ``len(last_tile_dims)`` are not the array's dimensions but devices holding the same
    part, each named by its kind (``replicated``, ``manual``); ``maximal``: all on ``device`` (None when not
    written); ``unread``: none of the forms above."""

    kind: Kind
    tiles: tuple[int, ...] = ()
    last_tile_dims: tuple[str, ...] = ()
    device: int | None = None

    @property
    def rank(self) -> int:
        """How many of ``tiles`` split the array's dimensions."""
        return len(self.tiles) - len(self.last_tile_dims)


def read_hlo_sharding(text: str) -> HloSharding:
    """The sharding written ``{devices=[2,4]<=[8]}`` (braces optional; not a tuple: ``tuple_shardings``)."""
    s = _METADATA.sub("", text).strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    for kind in ("replicated", "maximal", "manual", "unknown"):
        if s.startswith(kind):
            device = _DEVICE.search(s) if kind == "maximal" else None
            return HloSharding(kind, device=int(device.group(1)) if device else None)
    m = _TILES.search(s)
    if not m:
        return HloSharding("unread")
    tiles = tuple(int(t) for t in m.group(1).split(",") if t.strip())
    last: tuple[str, ...] = ()
    if "last_tile_dim_replicate" in s:
        last = ("replicated",)
    elif (lt := _LAST_TILE_DIMS.search(s)) is not None:
        last = tuple(t.strip() for t in lt.group(1).split(",") if t.strip())
    return HloSharding("tiled", tiles, last)


def tuple_shardings(text: str) -> list[str]:
    """The element shardings, as written, of a tuple sharding ``{{...}, {...}}``."""
    inner = text.strip()[1:-1]
    out, k = [], 0
    while (k := inner.find("{", k)) >= 0:
        end = skip_brackets(inner, k)
        out.append(inner[k:end])
        k = end
    return out


def group_size(value: str | None, all_devices: int | None, pairs: bool = False) -> int | None:
    """The size of a group of the replica groups written ``value`` (absent or empty: every device, the
    given ``all_devices``); with ``pairs``, ``value`` is ``source_target_pairs`` and the answer how many
    devices they name (None when absent)."""
    if value is None or value.replace(" ", "") in ("{}", ""):
        return None if pairs else all_devices
    if pairs:
        return len(set(_DIGITS.findall(value)))
    if value.startswith("mesh["):
        mesh_end = skip_brackets(value, 4)
        sizes = {name: int(size) for name, size in _MESH_AXIS.findall(value[:mesh_end])}
        brace = value.rfind("{")
        named = _GROUP_AXIS.findall(value[brace:]) if brace > mesh_end else []
        found = [int(sub) if sub else sizes.get(name) for name, _, sub in named]
        return None if None in found else math.prod(found)
    if value.startswith("["):  # [num_groups, group_size]<=[...]
        return int(_DIGITS.findall(value[: value.index("]")])[-1])
    first = value.strip()[1:].lstrip()
    return len(_NUMBER.findall(first[: first.find("}") + 1]))


def is_partitioned(text: str) -> bool:
    """Whether HLO ``text`` is SPMD-partitioned code (each device's shapes): its entry computation carries
    the ``_spmd`` suffix XLA's partitioner gives it."""
    return _SPMD_ENTRY.search(text) is not None


# StableHLO's module attribute ``mhlo.num_partitions = 4 : i32`` or HLO's ``num_partitions=4`` in its header
_PARTITIONS = re.compile(r"mhlo\.num_partitions\s*=\s*(\d+)|num_partitions=(\d+)")


def partition_count(text: str) -> int | None:
    """The number of partitions the first ``mhlo.num_partitions = N`` (StableHLO) or ``num_partitions=N``
    (HLO) in ``text`` names; None when it names none (a program written for one device)."""
    m = _PARTITIONS.search(text)
    return None if m is None else int(m.group(1) or m.group(2))


# ``mhlo.sharding = "{devices=[...]...}"``: a tiled GSPMD sharding, not ``{replicated}`` or ``{maximal device=0}``
_TILED_MHLO_SHARDING = re.compile(r'mhlo\.sharding\s*=\s*"\{devices=')


def has_tiled_mhlo_sharding(text: str) -> bool:
    """Whether a StableHLO text holds a tiled GSPMD sharding (``mhlo.sharding = "{devices=[2,1]<=[2]}"``):
    a program split over devices. JAX writes ``{replicated}`` and ``{maximal device=0}`` into
    single-device programs (a PRNG key), which this does not count."""
    return _TILED_MHLO_SHARDING.search(text) is not None
