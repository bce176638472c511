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
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...ir.hlo import read_header, read_instruction
from ...ir.text import SSA_VALUE, input_kind, mask_strings, skip_angles, skip_brackets, skip_string

__all__ = ["Mesh", "ValueSharding", "Scope", "has_shardings", "read_shardings", "value_shardings",
           "describe_sdy", "describe_hlo", "is_partitioned"]


@dataclass(frozen=True)
class Mesh:
    """A Shardy mesh: its axes (name, size) in order."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        return math.prod(s for _, s in self.axes) if self.axes else 1

    def axis_size(self, axis: str) -> int | None:
        return dict(self.axes).get(axis)


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
        scopes = _read_hlo(lines, is_partitioned(text) if partitioned is None else partitioned)
    else:
        scopes = _read_mlir(lines)
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


def is_partitioned(text: str) -> bool:
    """Whether HLO ``text`` is SPMD-partitioned code (each device's shapes): its entry computation carries
    the ``_spmd`` suffix XLA's partitioner gives it."""
    return _SPMD_ENTRY.search(text) is not None


_SPMD_ENTRY = re.compile(r"^ENTRY\s+%?[\w.\-]*_spmd\b", re.M)


# -- shapes --------------------------------------------------------------------------------------------
_TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([A-Za-z]\w*)")
_HLO_SHAPE = re.compile(r"([a-z]\w*)\[([^\]]*)\]")


def _mlir_dims(type_text: str) -> list[int | None] | None:
    m = _TENSOR.match(type_text.strip())
    if not m:
        return None
    return [None if d == "?" else int(d) for d in m.group(1).split("x")[:-1]]


def _hlo_dims(shape: str) -> list[int | None] | None:
    m = _HLO_SHAPE.match(shape.strip())
    if not m:
        return None
    return [int(d) if d.isdigit() else None for d in m.group(2).split(",")] if m.group(2).strip() else []


def _shape(dims: Sequence[int | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) if dims else "scalar"


def _per_device(dims: Sequence[int | None] | None, parts: Sequence[int]) -> str:
    """"; per device 8x64 of 16x64" for a tensor of ``dims`` split in ``parts`` along each dimension."""
    if dims is None or len(dims) != len(parts) or any(d is None for d in dims):
        return ""
    local = [-(-d // p) for d, p in zip(dims, parts)]
    padded = any(d % p for d, p in zip(dims, parts))
    return f"; per device {_shape(local)} of {_shape(dims)}" + (" (padded: a dimension does not divide)" if padded else "")


# -- Shardy's TensorShardingAttr -------------------------------------------------------------------------
_AXIS = re.compile(r'"([^"]*)"(?::\((\d+)\)(\d+))?')
_MESH_AXES = re.compile(r'"([^"]*)"\s*=\s*(\d+)')
_MESH_DEF = re.compile(r"^\s*sdy\.mesh\s+@([\w$.\-]+)\s*=\s*")
_DIM = re.compile(r"\{([^{}]*)\}")
_FLAT_SHARDING = re.compile(r"<[^<>]*>")
_PER_VALUE = re.compile(r"#sdy\.sharding_per_value<\[((?:<[^<>]*>,?\s*)*)\]>")


def _read_meshes(lines: Sequence[str]) -> dict[str, Mesh]:
    meshes: dict[str, Mesh] = {}
    for line in lines:
        m = _MESH_DEF.match(line) if "sdy.mesh" in line else None
        if m and line.startswith("<", m.end()):
            body = line[m.end():skip_angles(line, m.end())]
            meshes[m.group(1)] = _mesh(m.group(1), body)
    return meshes


def _mesh(name: str, body: str) -> Mesh:
    """``<["data"=2, "model"=4], device_ids=[...]>`` -> Mesh."""
    axes = body[: skip_brackets(body, body.index("["))] if "[" in body else ""
    return Mesh(name, tuple((a, int(s)) for a, s in _MESH_AXES.findall(axes)))


def describe_sdy(sharding: str, dims: Sequence[int | None] | None, meshes: dict[str, Mesh]) -> str:
    """A Shardy tensor sharding (``<@mesh, [{"data"}, {}], replicated={"model"}>``) in words, for a
    tensor of global shape ``dims`` (None: unknown)."""
    body = sharding.strip()
    body = body[1:-1] if body.startswith("<") and body.endswith(">") else body
    if body.startswith("mesh<"):  # an inline mesh
        end = skip_angles(body, 4)
        mesh = _mesh("", body[4:end])
        rest = body[end:]
    else:
        ref = re.match(r"@([\w$.\-]+)", body)
        mesh = meshes.get(ref.group(1)) if ref else None
        mesh = mesh or Mesh(ref.group(1) if ref else "", ())
        rest = body[ref.end():] if ref else body
    start = rest.find("[")
    if start < 0:
        return "sharding not read"
    end = skip_brackets(rest, start)
    extra = rest[end:]
    parts, words, used, unknown = [], [], set(), False
    for d, m in enumerate(_DIM.finditer(rest[start + 1:end - 1])):
        items = [s.strip() for s in m.group(1).split(",") if s.strip()]
        open_ = "?" in items
        axes = [a for a in (_AXIS.match(s) for s in items) if a]
        size, names = 1, []
        for a in axes:
            n = int(a.group(3)) if a.group(3) else mesh.axis_size(a.group(1))
            size = size * n if (size is not None and n is not None) else None
            names.append(a.group(1) + (f":({a.group(2)}){a.group(3)}" if a.group(3) else ""))
            used.add(a.group(1))
        parts.append(size or 1)
        unknown = unknown or size is None  # an axis of a mesh not in the text: no per-device shape
        if names:
            words.append(f"dim {d} over {'×'.join(names)} ({size if size is not None else '?'})" + (", open" if open_ else ""))
        else:
            words.append(f"dim {d} open" if open_ else f"dim {d} replicated")
    unreduced = _axes_of(extra, "unreduced")
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


def _axes_of(text: str, key: str) -> list[str]:
    m = re.search(rf"\b{key}\s*=\s*\{{([^{{}}]*)\}}", text)
    return [a.group(1) for a in _AXIS.finditer(m.group(1))] if m else []


def _sdy_list(text: str, i: int) -> list[str]:
    """The ``<...>`` shardings of the list that opens at ``text[i] == '['``."""
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


# -- XLA's HloSharding text ------------------------------------------------------------------------------
_TILES = re.compile(r"devices=\[([\d,\s]*)\]")
_LAST_TILE_DIMS = re.compile(r"last_tile_dims=\{([^}]*)\}")


def describe_hlo(sharding: str, dims: Sequence[int | None] | None, partitioned: bool | None = None) -> str:
    """An HLO sharding's inside (``devices=[2,1,4]<=[8] last_tile_dim_replicate``, ``replicated``, ...)
    in words, for a tensor of the shape written ``dims``; ``partitioned``: that shape is already each
    device's."""
    s = re.sub(r"\s*metadata=\{[^}]*\}", "", sharding).strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    if s.startswith("replicated"):
        return f"replicated: the whole {_shape(dims) if dims is not None else 'array'} on every device"
    if s.startswith("maximal"):
        m = re.search(r"device=(\d+)", s)
        return f"on device {m.group(1) if m else '?'} only (maximal)"
    if s.startswith("manual"):
        return "manual: per-device code (shard_map); the shape is each device's own"
    if s.startswith("unknown"):
        return "unknown: left to XLA's sharding propagation"
    m = _TILES.search(s)
    if not m:
        return "sharding not read"
    tiles = [int(t) for t in m.group(1).split(",") if t.strip()]
    trailing: list[str] = []
    if "last_tile_dim_replicate" in s:
        trailing = ["replicated"]
    elif (lt := _LAST_TILE_DIMS.search(s)) is not None:
        trailing = [t.strip() for t in lt.group(1).split(",") if t.strip()]
    rank = len(tiles) - len(trailing)
    data, extra = tiles[:rank], tiles[rank:]
    words = [f"dim {d} in {t} parts" if t > 1 else f"dim {d} whole" for d, t in enumerate(data)]
    text = "sharded: " + ", ".join(words) if any(t > 1 for t in data) else "not split: " + ", ".join(words)
    for kind, n in zip(trailing, extra):
        if n > 1:
            text += f"; each part {kind} on {n} devices" if kind == "replicated" else f"; {kind} over {n} devices"
    if dims is not None and len(dims) == rank and all(d is not None for d in dims):
        if partitioned:
            whole = [d * t for d, t in zip(dims, data)]
            text += f"; per device {_shape(dims)} (this stage is partitioned; the whole is about {_shape(whole)})"
        elif partitioned is False:
            text += _per_device(dims, data)
    return text


def _hlo_tuple(text: str) -> list[str]:
    """The elements of a tuple sharding ``{{...}, {...}}``."""
    inner = text.strip()[1:-1]
    out, k = [], 0
    while (k := inner.find("{", k)) >= 0:
        end = skip_brackets(inner, k)
        out.append(inner[k:end])
        k = end
    return out


_COMMENT = re.compile(r"/\*.*?\*/")
_HLO_SHARDING = re.compile(r"(?<=[\s,])sharding=\{")
_HLO_HEAD = re.compile(r"\s*(?:ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=\s*([a-z]\w*\[[^\]\s]*\](?:\{[^}\s]*\})?)\s")


@functools.lru_cache(maxsize=4096)
def _hlo_summary(text: str, shape: str, partitioned: bool | None) -> str:
    if not text.startswith("{{"):
        return describe_hlo(text, _hlo_dims(shape), partitioned)
    shapes = _split_top(_COMMENT.sub("", shape).strip()[1:-1]) if shape.startswith("(") else []
    return "a tuple: " + "; ".join(
        f"element {i}: {describe_hlo(e, _hlo_dims(shapes[i]) if i < len(shapes) else None, partitioned)}"
        for i, e in enumerate(_hlo_tuple(text)))


def _read_hlo(lines: list[str], partitioned: bool | None) -> list[Scope]:
    scopes: list[Scope] = []
    current: Scope | None = None
    for k, line in enumerate(lines):
        if current is None:
            header = read_header(line.rstrip()) if line and not line[0].isspace() else None
            if header is not None:
                current = Scope(("ENTRY " if header[1] else "") + header[0], k, k)
            continue
        if line.strip() == "}":
            scopes.append(Scope(current.function, current.first, k, current.values))
            current = None
            continue
        m = _HLO_SHARDING.search(line) if "sharding={" in line else None
        if m is None or ('"' in line[:m.start()] and _HLO_SHARDING.search(mask_strings(line)) is None):
            continue
        head = _HLO_HEAD.match(line)  # name and shape, when the shape has no space in it (no tuple)
        if head is not None:
            name, shape = head.group(1), head.group(2)
        elif (ins := read_instruction(line)) is not None:
            name, shape = ins.name, ins.shape
        else:
            continue
        brace = m.end() - 1
        text = line[brace:skip_brackets(line, brace)]
        current.values["%" + name] = ValueSharding("%" + name, current.function, _hlo_summary(text, shape, partitioned),
                                                   f"sharding={text}", shape)
    return scopes


# -- MLIR: functions, their arguments and ops ------------------------------------------------------------
_FUNC = re.compile(r"^\s*func\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.\-]+)\s*\(")
_RESULTS = re.compile(rf"^\s*((?:{SSA_VALUE}(?::\d+)?\s*,\s*)*{SSA_VALUE}(?::\d+)?)\s*=\s*")
_RESULT = re.compile(rf"({SSA_VALUE})(?::(\d+))?")
_OP = re.compile(r'"?([A-Za-z_][\w$]*(?:\.[\w$]+)*)"?')
_ATTR = re.compile(r"(?<![\w.])(sdy\.sharding|mhlo\.sharding)\s*=\s*")
_STOPS = re.compile(r"[()\[\]{}<>]| : |->")
_CLOSERS = re.compile(r"[\s})]*[})]")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` cut at the ``sep`` characters outside brackets and strings."""
    code = mask_strings(text)
    pieces, depth, start = [], 0, 0
    for k, c in enumerate(code):
        if c in "([{<":
            depth += 1
        elif c in ")]}" or (c == ">" and code[k - 1:k] != "-"):
            depth -= 1
        elif c == sep and depth == 0:
            pieces.append(text[start:k].strip())
            start = k + 1
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _type_start(code: str, start: int) -> int:
    """Where the types begin: after the first `` : `` outside brackets from ``start``; -1 if none. The
    last `` : `` of the line nearly always is it (the types end an op), checked by its tail holding
    balanced angle brackets and no braces; else the line is walked."""
    last = code.rfind(" : ", start)
    if last < 0:
        return -1
    tail = code[last + 3:]
    if "{" not in tail and "}" not in tail and tail.count("<") == tail.count(">") - tail.count("->"):
        return last + 3
    depth = 0
    for m in _STOPS.finditer(code, start):
        c = m.group()
        if c in ("(", "[", "{", "<"):
            depth += 1
        elif c in (")", "]", "}", ">"):
            depth -= 1
        elif c == " : " and depth == 0:
            return m.end()
    return -1


_TYPE_ITEMS = re.compile(r"(?:[^,<>]|<[^<>]*>)+")
_NESTED = re.compile(r"<[^<>]*<")


def _result_types(code: str, text: str, start: int, count: int) -> list[str] | None:
    """The result types written after the first `` : `` outside brackets from ``start``: the part after
    ``->`` when there is one, else the last ``count`` of the types listed; None when the line has none."""
    at = _type_start(code, start)
    if at < 0:
        return None
    tail = _TYPE_TAIL.sub("", text[at:])  # a trailing dict, location, region
    cut = tail.rfind("->")
    outs = tail[cut + 2:].strip() if cut >= 0 else tail.strip()
    if outs.startswith("(") and outs.endswith(")"):
        outs = outs[1:-1]
    types = _split_top(outs) if _NESTED.search(outs) else [t.strip() for t in _TYPE_ITEMS.findall(outs) if t.strip()]
    return types[-count:] if len(types) >= count else None


_TYPE_TAIL = re.compile(r"\s+(?:attributes\s*\{.*|loc\(.*|\{)\s*$")


def _results(spec: str) -> list[tuple[str, int]]:
    return [(m.group(1), int(m.group(2) or 1)) for m in _RESULT.finditer(spec)]


class _Op:
    """An op with results, read from its first line and, for an op with regions, its closing line."""

    def __init__(self, results: list[tuple[str, int]], name: str, depth: int):
        self.results, self.name, self.depth = results, name, depth
        self.shardings: list[tuple[str, str]] | None = None  # (kind "sdy" | "hlo", text) per result
        self.types: list[str] | None = None
        self.manual: tuple[list[str], list[str], str] | None = None  # in_shardings, body args, manual axes

    @property
    def count(self) -> int:
        return sum(n for _, n in self.results)

    def read(self, line: str, start: int, code: str | None = None) -> None:
        code = mask_strings(line) if code is None else code
        if self.shardings is None:
            self.shardings = _op_shardings(self.name, line, code, start)
        if self.types is None:
            self.types = _result_types(code, line, start, self.count)

    def names(self) -> list[str]:
        """The name of each result as its users write it: ``%0``, or ``%5#1`` for a group ``%5:2``."""
        out = []
        for name, n in self.results:
            out += [name] if n == 1 else [f"{name}#{k}" for k in range(n)]
        return out


def _op_shardings(op: str, line: str, code: str, start: int) -> list[tuple[str, str]] | None:
    if op in ("sdy.reshard", "sdy.sharding_constraint"):
        k = code.find("<", start + len(op))
        return [("sdy", line[k:skip_angles(line, k)])] if k >= 0 else None
    if "out_sharding=<" in code:
        k = code.index("out_sharding=<") + len("out_sharding=")
        return [("sdy", line[k:skip_angles(line, k)])]
    if "out_shardings=[" in code:
        k = code.index("out_shardings=[") + len("out_shardings=")
        return [("sdy", s) for s in _sdy_list(line, k)]
    m = _ATTR.search(code, start)
    if m is None:
        return None
    k = m.end()
    if m.group(1) == "mhlo.sharding":
        value = line[k + 1:skip_string(line, k) - 1] if line.startswith('"', k) else ""
        if value.startswith("{{"):
            return [("hlo", e) for e in _hlo_tuple(value)]
        return [("hlo", value)]
    if line.startswith("#sdy.sharding_per_value<", k):
        flat = _PER_VALUE.match(line, k)  # the common form, without an inline mesh
        found = _FLAT_SHARDING.findall(flat.group(1)) if flat else _sdy_list(line, k + len("#sdy.sharding_per_value<"))
        return [("sdy", s) for s in found]
    if line.startswith("#sdy.sharding<", k):
        j = k + len("#sdy.sharding")
        return [("sdy", line[j:skip_angles(line, j)])]
    return None


def _describe(kind: str, sharding: str, type_text: str, meshes: dict[str, Mesh]) -> tuple[str, str]:
    """(summary, the sharding as written) of one value."""
    return _describe_once(kind, sharding, type_text, tuple(meshes.values()))


@functools.lru_cache(maxsize=4096)
def _describe_once(kind: str, sharding: str, type_text: str, meshes: tuple[Mesh, ...]) -> tuple[str, str]:
    """``_describe``, once per distinct sharding and type: a module repeats a few of them many times."""
    meshes = {m.name: m for m in meshes}
    if kind == "hlo":
        hlo_dims = _mlir_dims(type_text) if type_text else None
        return describe_hlo(sharding, hlo_dims, partitioned=False), f'mhlo.sharding = "{sharding}"'
    return describe_sdy(sharding, _mlir_dims(type_text) if type_text else None, meshes), sharding


def _func_arguments(line: str, start: int, function: str, meshes: dict[str, Mesh]) -> dict[str, ValueSharding]:
    """The arguments of the ``func.func`` whose ``(`` is at ``line[start]`` that carry a sharding."""
    out: dict[str, ValueSharding] = {}
    group = line[start + 1:skip_brackets(line, start) - 1]
    if "sharding" not in group:
        return out
    for arg in _split_top(group):
        m = re.match(rf"({SSA_VALUE})\s*:\s*", arg)
        if not m:
            continue
        code = mask_strings(arg)
        attrs = code.find("{", m.end())
        type_text = arg[m.end():attrs if attrs >= 0 else len(arg)].strip()
        found = _op_shardings("", arg, code, attrs if attrs >= 0 else len(arg))
        if found:
            summary, written = _describe(*found[0], type_text, meshes)
            out[m.group(1)] = ValueSharding(m.group(1), function, summary, written, type_text)
    return out


def _manual_body(op: _Op, line: str, function: str, meshes: dict[str, Mesh]) -> dict[str, ValueSharding]:
    """A ``sdy.manual_computation``'s body arguments: each device's own part of an operand."""
    out: dict[str, ValueSharding] = {}
    code = mask_strings(line)
    k = code.find("in_shardings=[")
    axes = _axes_of(line, "manual_axes")
    ins = _sdy_list(line, k + len("in_shardings=")) if k >= 0 else []
    close = code.rfind(")")
    opened = code.rfind("(", 0, close) if close >= 0 else -1
    if opened < 0:
        return out
    args = [a for a in _split_top(line[opened + 1:close]) if a.startswith("%")]
    for n, arg in enumerate(args):
        name, _, type_text = arg.partition(":")
        name, type_text = name.strip(), type_text.strip()
        whole = describe_sdy(ins[n], None, meshes) if n < len(ins) else "sharding not read"
        dims = _mlir_dims(type_text)
        summary = (f"manual over {', '.join(axes) or 'no axes'}: this is each device's own part"
                   + (f" ({_shape(dims)})" if dims is not None else "") + f"; the operand is {whole}")
        out[name] = ValueSharding(name, function, summary, ins[n] if n < len(ins) else "", type_text)
    return out


def _read_mlir(lines: list[str]) -> list[Scope]:
    meshes = _read_meshes(lines)
    scopes: list[Scope] = []
    current: Scope | None = None
    base = depth = 0
    pending: list[_Op] = []  # ops with regions, waiting for their closing line

    def finish(op: _Op) -> None:
        if not op.shardings:
            return
        types = op.types or []
        for k, name in enumerate(op.names()):
            if k >= len(op.shardings):
                break
            kind, text = op.shardings[k]
            type_text = types[k] if k < len(types) else ""
            summary, written = _describe(kind, text, type_text, meshes)
            current.values[name] = ValueSharding(name, current.function, summary, written, type_text)
        if len(op.names()) > 1:  # the group's own name (%5 of %5:2) shows them all
            for name, n in op.results:
                if n > 1:
                    parts = [current.values[f"{name}#{k}"] for k in range(n) if f"{name}#{k}" in current.values]
                    if parts:
                        current.values[name] = ValueSharding(
                            name, current.function, "; ".join(f"#{k}: {p.summary}" for k, p in enumerate(parts)),
                            ", ".join(p.sharding for p in parts), ", ".join(p.type for p in parts if p.type))

    for k, line in enumerate(lines):
        code = mask_strings(line) if '"' in line else line
        change = code.count("{") - code.count("}")
        if current is None:
            m = _FUNC.match(line)
            if m is not None:
                current = Scope(m.group(1), k, k, _func_arguments(line, m.end() - 1, m.group(1), meshes))
                base = depth
                depth += change
                if depth <= base:  # a declaration without a body
                    scopes.append(current)
                    current = None
            else:
                depth += change
            continue
        before = depth
        depth += change
        if pending and code.lstrip().startswith("}") and depth <= pending[-1].depth:
            op = pending.pop()
            op.read(line, _CLOSERS.match(code).end(), code)
            finish(op)
        if depth <= base:
            scopes.append(Scope(current.function, current.first, k, current.values))
            current, pending = None, []
            continue
        results = _RESULTS.match(line)
        if results is None:
            continue
        name = _OP.match(line, results.end())
        op = _Op(_results(results.group(1)), name.group(1) if name else "", before)
        if depth > before:  # regions follow: the sharding or the types may be on the closing line
            op.read(line, results.end(), code)
            if op.name == "sdy.manual_computation":
                current.values.update(_manual_body(op, line, current.function, meshes))
            pending.append(op)
        elif "sharding" in line:
            op.read(line, results.end(), code)
            finish(op)
    return scopes
