"""How a child process compiles for accelerator chips it must not open: a compile-only topology.

libtpu lets one process hold the chip. A child that only compiles can still target it: with
``ALLOW_MULTIPLE_LIBTPU_LOAD=1`` it loads libtpu beside the holder and asks for a compile-only
topology (``jax.experimental.topologies.get_topology_desc``) of the same generation and shape, whose
devices take ``jax.jit(...).lower(...).compile()`` as real ones do (measured on a v5e: "v5e:1x1" with
``chips_per_host_bounds=[1, 1, 1]``; the name alone is refused). The topology's name is made from
the parent's devices: their generation (``device_kind``) and the extent of their coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Topology", "topology_of", "tpu_generation"]

# JAX's device_kind -> the generation's name in topology names; 2D generations name "XxY", 3D "XxYxZ"
_TPU_KINDS = (("v5 lite", "v5e", 2), ("v5e", "v5e", 2), ("v6 lite", "v6e", 2), ("v6e", "v6e", 2),
              ("v5p", "v5p", 3), ("v5", "v5p", 3), ("v4", "v4", 3))


@dataclass(frozen=True)
class Topology:
    """A compile-only topology: ``platform``, ``name`` ("v5e:1x1") and ``chips_per_host_bounds``; plain
    values, so a parent can send it to a child."""

    platform: str
    name: str
    chips_per_host_bounds: tuple[int, int, int]

    def devices(self) -> list:
        """The topology's compile-only devices (in the process that calls it: a child)."""
        from jax.experimental import topologies

        desc = topologies.get_topology_desc(topology_name=self.name, platform=self.platform,
                                            chips_per_host_bounds=list(self.chips_per_host_bounds))
        return list(desc.devices)


def tpu_generation(device_kind: str) -> tuple[str, int] | None:
    """The TPU generation's short name and its number of torus dimensions for a ``device_kind`` ("TPU v5
    lite" -> ("v5e", 2)); None for a kind not known here."""
    kind = device_kind.lower()
    return next(((name, dims) for key, name, dims in _TPU_KINDS if key in kind), None)


def topology_of(platform: str, devices) -> Topology | None:
    """The compile-only topology of ``devices`` (JAX devices of one host), or None where the platform has
    none (the CPU and GPU compile in a child on their own devices) or the chips are not known here."""
    if platform != "tpu" or not devices:
        return None
    found = tpu_generation(str(getattr(devices[0], "device_kind", "")))
    coords = [tuple(getattr(d, "coords", ()) or ()) for d in devices]
    if found is None or not all(len(c) == 3 for c in coords):
        return None
    name, dims = found
    extent = tuple(max(c[i] for c in coords) + 1 for i in range(3))
    shape = "x".join(str(n) for n in extent[:dims])
    return Topology("tpu", f"{name}:{shape}", extent)
