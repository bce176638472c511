"""The one reader of Shardy's attributes: meshes and tensor shardings, read as text.

``sdy.mesh @mesh = <["data"=2, "model"=4]>`` names a mesh's axes and their sizes (``device_ids=[...]``
and an empty ``<[]>`` as JAX writes for a PRNG key are read past); a tensor sharding
``#sdy.sharding<@mesh, [{"data"}, {"model", ?}], replicated={"x"}, unreduced={"y"}>`` names its mesh
(by reference, or inline as ``mesh<["x"=2]>``) and, per dimension, the axes that split it -- a
sub-axis ``"x":(1)2`` (pre-size 1, size 2) included, ``?`` marks a dimension still open to
propagation, a priority ``p1`` after a dimension is read past. ``#sdy.sharding_per_value<[...]>``
holds one per result of an op.

Text, not jaxlib's ``sdy`` bindings, because the readers of it need both: the sharding panel reads
every stage's lines, also those jaxlib cannot parse (an Enzyme-JaX dialect, a mesh the module does
not define, a failed stage), and the collectives table reads the attributes jaxlib prints
(``str(op.attributes["out_sharding"])``), which are this same text. ``read_sharding`` gives None for
text that is not a tensor sharding; nothing here checks that the axes exist in the mesh (a caller
that needs a size gets None for an unknown axis).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .text import skip_angles, skip_brackets, skip_string, split_strings

__all__ = ["Mesh", "AxisRef", "DimSharding", "TensorSharding", "read_mesh", "read_meshes", "read_sharding",
           "sharding_list", "per_value_shardings", "axis_refs", "keyed_axes", "attribute_body",
           "names_mesh_with_axes", "without_shardings"]


@dataclass(frozen=True)
class Mesh:
    """A Shardy mesh: its axes (name, size) in order; ``name`` is "" for an inline mesh."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        return math.prod(s for _, s in self.axes) if self.axes else 1

    def axis_size(self, axis: str) -> int | None:
        return dict(self.axes).get(axis)


@dataclass(frozen=True)
class AxisRef:
    """One axis a dimension is split over: a whole mesh axis, or a sub-axis ``"x":(pre)size``."""

    name: str
    sub: tuple[int, int] | None = None  # (pre-size, size) of a sub-axis

    @property
    def written(self) -> str:
        """``x``, or ``x:(1)2`` for a sub-axis: how the workbench names it in words."""
        return self.name if self.sub is None else f"{self.name}:({self.sub[0]}){self.sub[1]}"

    def size(self, mesh: Mesh) -> int | None:
        """How many parts it splits into: a sub-axis's own size, else the mesh axis's (None: not in ``mesh``)."""
        return self.sub[1] if self.sub is not None else mesh.axis_size(self.name)


@dataclass(frozen=True)
class DimSharding:
    """The axes one dimension is split over, major first; ``open``: ``?``, propagation may add more."""

    axes: tuple[AxisRef, ...]
    open: bool = False


@dataclass(frozen=True)
class TensorSharding:
    """One tensor's sharding: its mesh (``mesh_name``, or ``inline_mesh`` written in the sharding itself),
    one ``DimSharding`` per dimension, and the axes it names ``replicated`` and ``unreduced``."""

    mesh_name: str
    inline_mesh: Mesh | None
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()

    def mesh(self, meshes: Mapping[str, Mesh]) -> Mesh:
        """The mesh it is over: the inline one, the one ``meshes`` holds by its name, else one of that name
        without axes (a mesh the text does not define: its axes' sizes are unknown)."""
        if self.inline_mesh is not None:
            return self.inline_mesh
        return meshes.get(self.mesh_name) or Mesh(self.mesh_name, ())


_MESH_DEF = re.compile(r"^\s*sdy\.mesh\s+@([\w$.\-]+)\s*=\s*")
_MESH_AXES = re.compile(r'"([^"]*)"\s*=\s*(\d+)')
_MESH_REF = re.compile(r"@([\w$.\-]+)")
_DIM = re.compile(r"\{([^{}]*)\}")
_AXIS = re.compile(r'"([^"]*)"(?::\((\d+)\)(\d+))?')
_SUB_AXIS = re.compile(r":\((\d+)\)(\d+)")
_FLAT_SHARDING = re.compile(r"<[^<>]*>")
_FLAT_PER_VALUE = re.compile(r"#sdy\.sharding_per_value<\[((?:<[^<>]*>,?\s*)*)\]>")
_KEYED_AXES = {key: re.compile(rf"\b{key}\s*=\s*\{{([^{{}}]*)\}}") for key in ("replicated", "unreduced", "manual_axes")}
_ATTRIBUTE = re.compile(r"#sdy<\w+(.*)>$", re.DOTALL)


def read_mesh(text: str, name: str = "") -> Mesh:
    """The mesh ``<["data"=2, "model"=4], device_ids=[...]>`` (also ``#sdy.mesh<...>``, ``mesh<...>``) named
    ``name``; a text without an axis list gives a mesh without axes."""
    axes = text[text.index("["):skip_brackets(text, text.index("["))] if "[" in text else ""
    return Mesh(name, tuple((a, int(s)) for a, s in _MESH_AXES.findall(axes)))


def read_meshes(lines: Iterable[str]) -> dict[str, Mesh]:
    """The meshes the module's lines define (``sdy.mesh @mesh = <[...]>``), by name."""
    meshes: dict[str, Mesh] = {}
    for line in lines:
        m = _MESH_DEF.match(line) if "sdy.mesh" in line else None
        if m and line.startswith("<", m.end()):
            meshes[m.group(1)] = read_mesh(line[m.end():skip_angles(line, m.end())], m.group(1))
    return meshes


# a mesh definition whose axis list opens with an axis name: not JAX's ``<[]>`` nor a device-ids-only mesh
_MESH_WITH_AXES = re.compile(r'^\s*sdy\.mesh\s+@[\w.$-]+\s*=\s*<\s*\[\s*"', re.M)


def names_mesh_with_axes(text: str) -> bool:
    """Whether ``text`` defines a Shardy mesh with at least one axis (``sdy.mesh @mesh = <["x"=2]>``).
    JAX writes ``sdy.mesh @empty_mesh = <[]>`` into single-device programs too (a PRNG key), which is
    no sign of sharding; a search of the whole text, without reading every line as ``read_meshes`` does."""
    return _MESH_WITH_AXES.search(text) is not None


def _axes(items: Iterable[str]) -> tuple[AxisRef, ...]:
    """The axis references among ``items`` (``"x"``, ``"x":(1)2``); anything else (``?``) is skipped."""
    found = (_AXIS.match(s) for s in items)
    return tuple(AxisRef(a.group(1), (int(a.group(2)), int(a.group(3))) if a.group(3) else None) for a in found if a)


def keyed_axes(text: str, key: str) -> tuple[AxisRef, ...]:
    """The axes of the first ``key={"x", "y"}`` in ``text``, for ``key`` one of ``replicated``, ``unreduced``
    (a tensor sharding's) and ``manual_axes`` (a ``sdy.manual_computation``'s); () when there is none."""
    m = _KEYED_AXES[key].search(text)
    return _axes(s.strip() for s in m.group(1).split(",")) if m else ()


def read_sharding(text: str) -> TensorSharding | None:
    """The tensor sharding written ``<@mesh, [{"data"}, {}]>`` (``#sdy.sharding<...>`` too, or the bare inside
    ``@mesh, [...]``); None when the mesh is not followed by a list of dimensions."""
    body = text.strip().removeprefix("#sdy.sharding")
    body = body[1:-1] if body.startswith("<") and body.endswith(">") else body
    inline = None
    if body.startswith("mesh<"):
        end = skip_angles(body, 4)
        inline, name, rest = read_mesh(body[4:end]), "", body[end:]
    else:
        ref = _MESH_REF.match(body)
        name, rest = (ref.group(1), body[ref.end():]) if ref else ("", body)
    rest = rest.lstrip().removeprefix(",").lstrip()
    if not rest.startswith("["):
        return None
    end = skip_brackets(rest, 0)
    dims = []
    for m in _DIM.finditer(rest[1:end - 1]):
        items = [s.strip() for s in m.group(1).split(",") if s.strip()]
        dims.append(DimSharding(_axes(items), "?" in items))
    extra = rest[end:]
    return TensorSharding(name, inline, tuple(dims), keyed_axes(extra, "replicated"),
                          keyed_axes(extra, "unreduced"))


def sharding_list(text: str, i: int) -> list[str]:
    """The ``<...>`` shardings, as written, of the list that opens at ``text[i] == '['``
    (``in_shardings=[<@mesh, ...>, ...]``, the inside of ``#sdy.sharding_per_value<[...]>``)."""
    end = skip_brackets(text, i)
    if "mesh<" not in text[i:end]:  # no inline mesh: no angle bracket nests
        return _FLAT_SHARDING.findall(text, i, end)
    out, k = [], i + 1
    while k < end:
        if text[k] == "<":
            close = skip_angles(text, k)
            out.append(text[k:close])
            k = close
        elif text[k] == '"':
            k = skip_string(text, k)
        else:
            k += 1
    return out


def per_value_shardings(text: str, i: int = 0) -> list[str]:
    """The shardings, as written, of the ``#sdy.sharding_per_value<[...]>`` that starts at ``text[i]``."""
    flat = _FLAT_PER_VALUE.match(text, i)  # the common form, without an inline mesh: one regex
    if flat:
        return _FLAT_SHARDING.findall(flat.group(1))
    return sharding_list(text, i + len("#sdy.sharding_per_value<"))


def axis_refs(text: str) -> list[AxisRef]:
    """Every axis reference written in ``text``, in order: ``{"model"}``, ``[{"data"}, {}]``,
    ``[{"x"}: 0->1]`` (an all-to-all's), ``{"x":(1)2}``, or jaxlib's ``#sdy<axis_ref_list{"model"}>``."""
    pieces = split_strings(text)
    out = []
    for k in range(1, len(pieces), 2):
        sub = _SUB_AXIS.match(pieces[k + 1]) if k + 1 < len(pieces) else None
        out.append(AxisRef(pieces[k][1:-1], (int(sub.group(1)), int(sub.group(2))) if sub else None))
    return out


def attribute_body(text: str) -> str:
    """What an op writes for an attribute jaxlib prints as ``#sdy<axis_ref_list{"model"}>``: ``{"model"}``
    (other text as it is)."""
    m = _ATTRIBUTE.match(text)
    return m.group(1) if m else text


_SHARDING_ATTR = "sdy.sharding = #sdy.sharding"
_ONE_RESULT = re.compile(r"-> \(([^(),{}]*)\)")


def without_shardings(line: str) -> str:
    """``line`` without its ``sdy.sharding = #sdy.sharding...<...>`` attributes, and without the
    attribute dictionary they leave empty; an ``sdy.mesh`` line without jaxlib's ``{stablehlo.mesh = ...}``."""
    if "sdy.sharding" not in line:
        at = line.find(" {stablehlo.mesh = ")
        if at < 0 or not line.lstrip().startswith("sdy.mesh"):
            return line
        return line[:at] + line[skip_brackets(line, at + 1):]
    out, k = [], 0
    while (at := line.find(_SHARDING_ATTR, k)) >= 0 and (opening := line.find("<", at)) >= 0:
        out.append(line[k:at])
        k = skip_angles(line, opening)
    out.append(line[k:])
    text = "".join(out).replace(" {}", "").replace("{, ", "{").replace(", }", "}")
    return _ONE_RESULT.sub(r"-> \1", text)  # "-> (T)" once T's sharding is gone: "-> T", as written without it
