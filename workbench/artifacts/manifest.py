"""The manifest of a saved exploration (``manifest.json`` in a ``.hlox``), described once: every field
with its type and range (``MANIFEST``), and the few rules that tie fields together (``check_manifest``).

``load_exploration`` reads a manifest only through ``parse_manifest`` and ``check_manifest``, so
nothing is built from one that a hostile or damaged file garbles; ``save_exploration`` checks what it
is about to write against the same description, so a file it writes reads back. A refusal is a
ManifestError naming the field as a path from the top (``stages[3].seconds``) and saying what was
expected and what was found.

What the description promises: every field ``load_exploration`` reads has the type it builds from
(a run's ``check`` and its leaves have exactly the fields of ``Check`` and ``LeafCheck``, which it
builds with ``**`` into the RunResults it returns, and its ``program`` those of ``RunProgram`` but the
stage); stage names are distinct and a parent is an earlier stage (so walking parents ends); a run
is of a stage of the file, unless it is marked ``earlier`` (made on an exploration this one was made
from by a toggle, whose stage may be gone); every text a stage names (an older file's carried diff's
too) is in the texts' index, which tiles the decompressed texts exactly (no text is counted twice). What
it does not: it bounds no size the loader limits itself (the texts' and arrays' bytes, see ``saved.py``),
it does not say whether a pass string parses or a device exists (those fail when used, with their own
errors), and of the fields only older files have (``Legacy``: a stage's ``diff`` and ``normalized``,
which nothing reads now) it checks the form alone.

``parse_manifest`` is json.loads with bounds a hostile file cannot pass: UTF-8 only, no nesting
deeper than ``MAX_DEPTH`` (checked on the bytes, before json's recursive parser sees them), at most
``MAX_VALUES`` values (a 32 MiB file of ``[],`` would otherwise become a gigabyte of lists), and no
key twice in one object.
"""
from __future__ import annotations

import json
import math
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..analysis.diff.result import RUNS
from ..options import PROPAGATE, PatternOptions
from ..stages import StageKind

__all__ = ["ManifestError", "MANIFEST", "BACKEND", "EDITS", "CHECK", "LEAF", "PROGRAM", "PRINTED_LINES", "MAX_DEPTH", "MAX_VALUES", "check", "check_manifest",
           "check_field", "parse_manifest", "json_schema", "Str", "Int", "Num", "Bool", "Opt", "List", "Map", "Record",
           "Scalar", "Legacy"]

MAX_DEPTH = 32  # a manifest nests 7 deep (runs[].check.leaves[].shape[]); json recurses per level
MAX_VALUES = 4_000_000  # JSON values (objects, lists, scalars) in one manifest: ~100x a 200-stage one


class ManifestError(ValueError):
    """A manifest that does not match its description: ``where`` is the field's path, ``why`` what is
    wrong with it."""

    def __init__(self, where: str, why: str):
        self.where, self.why = where, why
        super().__init__(f"{where}: {why}" if where else why)


# -- the field types ----------------------------------------------------------------------------------
_JSON_NAMES = {dict: "object", list: "list", type(None): "null"}


def _got(v: Any) -> str:
    return _JSON_NAMES.get(type(v), type(v).__name__)


def _text_ok(s: str, where: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate (``"\ud800"`` is valid JSON, not valid text)
        raise ManifestError(where, f"holds a lone surrogate ({s[e.start]!r} at character {e.start})") from None


# Each field type says which JSON values it ``accepts`` (most by their type: ``_ByType``), its ``expected``
# in words, and checks the ``inside`` of a value it accepts (range, items, fields); ``check`` puts the two
# together.
def check(node: Any, v: Any, where: str) -> None:
    """Refuse ``v`` at ``where`` unless it matches ``node``: a ManifestError naming what was expected."""
    if not node.accepts(v):
        raise ManifestError(where, f"expected {node.expected}, got {_got(v)}")
    node.inside(v, where)


class _ByType:
    """A field type that accepts the values whose Python type, as json.loads builds them, is one of its
    ``types`` (exactly: True is no integer)."""

    types: typing.ClassVar[tuple[type, ...]]

    def accepts(self, v: Any) -> bool:
        return type(v) in self.types


@dataclass(frozen=True)
class Str(_ByType):
    """A string (never with a lone surrogate); ``choices``: the only values allowed; ``pattern``: a
    regular expression it must match whole; ``nonempty``: not ""."""

    choices: tuple[str, ...] = ()
    pattern: str | None = None
    nonempty: bool = False
    expected = "a string"
    types = (str,)

    def inside(self, v: str, where: str) -> None:
        _text_ok(v, where)
        if self.choices and v not in self.choices:
            raise ManifestError(where, f"expected one of {list(self.choices)}, got {v[:80]!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, v):
            raise ManifestError(where, f"expected {self.pattern}, got {v[:80]!r}")
        if self.nonempty and not v:
            raise ManifestError(where, "expected a non-empty string, got \"\"")

    def schema(self) -> dict:
        out: dict = {"type": "string"}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.pattern is not None:
            out["pattern"] = f"^(?:{self.pattern})$"
        if self.nonempty:
            out["minLength"] = 1
        return out


@dataclass(frozen=True)
class Int(_ByType):
    """An integer (not a boolean) in [least, most]."""

    least: int | None = 0
    most: int | None = None
    expected = "an integer"
    types = (int,)

    def inside(self, v: int, where: str) -> None:
        if self.least is not None and v < self.least:
            raise ManifestError(where, f"expected an integer >= {self.least}, got {v}")
        if self.most is not None and v > self.most:
            raise ManifestError(where, f"expected an integer <= {self.most}, got {v}")

    def schema(self) -> dict:
        out: dict = {"type": "integer"}
        if self.least is not None:
            out["minimum"] = self.least
        if self.most is not None:
            out["maximum"] = self.most
        return out


@dataclass(frozen=True)
class Num(_ByType):
    """A number (integer or float, not a boolean); ``finite``: no NaN or infinity; ``least``: the
    smallest value allowed."""

    finite: bool = True
    least: float | None = None
    expected = "a number"
    types = (int, float)

    def inside(self, v: float, where: str) -> None:
        if self.finite and not math.isfinite(v):
            raise ManifestError(where, f"expected a finite number, got {v}")
        if self.least is not None and v < self.least:  # NaN passes: only finite=True refuses it
            raise ManifestError(where, f"expected a number >= {self.least:g}, got {v}")

    def schema(self) -> dict:  # NaN and infinities are JSON extensions (Python's json writes them): not said here
        return {"type": "number"} if self.least is None else {"type": "number", "minimum": self.least}


@dataclass(frozen=True)
class Bool(_ByType):
    expected = "true or false"
    types = (bool,)

    def inside(self, v: bool, where: str) -> None:
        pass

    def schema(self) -> dict:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Scalar(_ByType):
    """A JSON scalar: null, a boolean, a number or a string (a table's cell, an option's value)."""

    expected = "null, a boolean, a number or a string"
    types = (type(None), bool, int, float, str)

    def inside(self, v: Any, where: str) -> None:
        if type(v) is str:
            _text_ok(v, where)

    def schema(self) -> dict:
        return {"type": ["null", "boolean", "number", "string"]}


@dataclass(frozen=True)
class Opt:
    """``inner`` or null."""

    inner: Any

    @property
    def expected(self) -> str:
        return f"{self.inner.expected} or null"

    def accepts(self, v: Any) -> bool:
        return v is None or self.inner.accepts(v)

    def inside(self, v: Any, where: str) -> None:
        if v is not None:
            self.inner.inside(v, where)

    def schema(self) -> dict:
        return {"anyOf": [self.inner.schema(), {"type": "null"}]}


@dataclass(frozen=True)
class List(_ByType):
    """A list of ``item``s, between ``least`` and ``most`` of them."""

    item: Any
    most: int
    least: int = 0
    expected = "a list"
    types = (list,)

    def inside(self, v: list, where: str) -> None:
        if not self.least <= len(v) <= self.most:
            raise ManifestError(where, f"expected {self.least} to {self.most} items, got {len(v)}")
        for i, x in enumerate(v):
            check(self.item, x, f"{where}[{i}]")

    def schema(self) -> dict:
        return {"type": "array", "items": self.item.schema(), "minItems": self.least, "maxItems": self.most}


@dataclass(frozen=True)
class Map(_ByType):
    """An object of any string keys (at most ``most``) whose values are all ``value``s."""

    value: Any
    most: int = 10_000
    expected = "an object"
    types = (dict,)

    def inside(self, v: dict, where: str) -> None:
        if len(v) > self.most:
            raise ManifestError(where, f"expected at most {self.most} keys, got {len(v)}")
        for k, x in v.items():
            _text_ok(k, f"{where} (a key)")
            check(self.value, x, f"{where}.{k}")

    def schema(self) -> dict:
        return {"type": "object", "additionalProperties": self.value.schema(), "maxProperties": self.most}


@dataclass(frozen=True)
class Legacy:
    """``inner``, a field that only files of earlier workbenches have: this one neither writes nor reads it,
    and checks its form still (a file is refused whole or loaded whole). The JSON Schema marks it
    ``deprecated`` and says ``why`` in its description."""

    inner: Any
    why: str

    @property
    def expected(self) -> str:
        return self.inner.expected

    def accepts(self, v: Any) -> bool:
        return self.inner.accepts(v)

    def inside(self, v: Any, where: str) -> None:
        self.inner.inside(v, where)

    def schema(self) -> dict:
        return {**self.inner.schema(), "deprecated": True, "description": self.why}


@dataclass(frozen=True)
class Record(_ByType):
    """An object with named fields: ``required`` ones must be there, ``optional`` ones may be; other
    keys are ignored, or refused when ``closed`` (a record built with ``**``, where an unknown key
    would be a TypeError)."""

    required: Mapping[str, Any]
    optional: Mapping[str, Any] = field(default_factory=dict)
    closed: bool = False
    expected = "an object"
    types = (dict,)

    def inside(self, v: dict, where: str) -> None:
        at = f"{where}." if where else ""
        for name, node in self.required.items():
            if name not in v:
                raise ManifestError(f"{at}{name}", "missing")
            check(node, v[name], f"{at}{name}")
        for name, node in self.optional.items():
            if name in v:
                check(node, v[name], f"{at}{name}")
        if self.closed:
            unknown = sorted(k for k in v if k not in self.required and k not in self.optional)
            if unknown:
                _text_ok(unknown[0], f"{where} (a key)")
                raise ManifestError(f"{at}{unknown[0][:80]}", f"is not a field of {where or 'the manifest'} "
                                    f"(its fields: {', '.join([*self.required, *self.optional])})")

    def schema(self) -> dict:
        out = {"type": "object", "properties": {k: n.schema() for k, n in {**self.required, **self.optional}.items()},
               "required": list(self.required)}
        if self.closed:
            out["additionalProperties"] = False
        return out


# -- the manifest -------------------------------------------------------------------------------------
SHA256 = Str(pattern="[0-9a-f]{64}")
_DIM = Int(0, 2**62)
_SHAPE = List(_DIM, most=64)
_MANY = 100_000
PRINTED_LINES = 10_000  # the lines of what a run printed that a file keeps: the first ones


def _options_record() -> Record:
    """PatternOptions' fields by their annotations: the options a file may set, each optional (an
    older file lacks the newer ones, which keep their defaults); one this workbench lacks is refused."""
    kinds = {"bool": Bool(), "int": Int(None), "str": Str(choices=tuple(PROPAGATE))}  # the str ones: *_propagate
    return Record({}, {f.name: kinds[str(f.type)] for f in PatternOptions.__dataclass_fields__.values()},
                  closed=True)


_STAGE_ERROR = Record({"stage": Str(), "produced_by": Str(), "reason": Str()},
                      {"diagnostics": Str(), "summary": Str(), "detail": Str()}, closed=True)

# load_exploration builds analysis.run.check.LeafCheck(**leaf) and Check(**check) from these: closed, and the
# same fields (tests/test_hostile_files.py checks them against the dataclasses)
LEAF = Record(
    {"path": Str(), "shape": _SHAPE, "dtype": Str(), "max_abs": Num(finite=False), "max_rel": Num(finite=False),
     "tolerance": Num(finite=False), "passed": Bool()},
    {"lowered_abs": Opt(Num(finite=False)), "rule": Str(choices=("float64", "noise", "dtype", "exact")),
     "computed": Str()}, closed=True)
CHECK = Record(
    {"reference": Str(), "leaves": List(LEAF, _MANY)},
    {"kind": Str(choices=("float64", "stage")), "note": Str(),
     "source": Str(choices=("promoted", "traced", "as-lowered")), "why_not_promoted": Str()}, closed=True)

# load_exploration builds analysis.run.history.RunProgram from this and the run's stage: its fields but the stage
PROGRAM = Record(
    {"text_sha256": SHA256, "pipeline": Str(), "patterns_off": List(Str(), _MANY), "patterns_added": List(Str(), _MANY),
     "xla_options": List(List(Str(), most=2, least=2), _MANY)}, closed=True)

# ex.diff(parent, stage), which files of earlier workbenches carry per stage for the JupyterLab extension of then
# (stage_diffs.carried): its normalized texts, stored among the texts (null: an empty one), and its rows as
# Diff.runs(); and the stage's module_shape (analysis/diff/explorations.py). Nothing writes or reads them now: the
# extension asks the Jupyter server extension (views/labserver.py), which loads the file and diffs in Python
STAGE_DIFF = Legacy(Record({"before": Opt(SHA256), "after": Opt(SHA256), "runs": Str(pattern=RUNS)}),
                    "earlier workbenches' carried diff of the stage against its parent (its normalized texts' hashes "
                    "and its rows as runs); no longer written, nor read")
STAGE_SHAPE = Legacy(SHA256, "earlier workbenches' SHA-256 of the stage's normalized module; no longer written, "
                             "nor read")

# the profiles of save(profile=True) (saved_profiles.py): each one's table and figures, and the zip member
# holding the profiler's own trace file (absent where the trace was over the kept limit)
PROFILE_TRACES = ("profile_run.xplane.pb", "profile_compile.xplane.pb")
_TABLE = Record({"columns": List(Str(), 1000), "rows": List(List(Scalar(), 1000), _MANY)})  # table_json's
_FRAME = List(Scalar(), most=3, least=3)  # file, line, function
PROFILES = Record({}, {
    "run": Record({"stage": Str(), "device": Str(), "call_us": Num(least=0.0), "coverage": Num(least=0.0),
                   "calls": Int(1), "table": _TABLE},
                  {"peak": Opt(Str()), "trace": Str(choices=PROFILE_TRACES[:1]),
                   "lines": Map(List(_FRAME, _MANY), _MANY),
                   # the untraced calls' median and the profiler's measured overhead (files before them lack both)
                   "untraced_call_us": Opt(Num(least=0.0)), "overhead": Opt(Num(least=0.0))}, closed=True),
    "compile": Record({"total_s": Num(least=0.0), "explore_s": Num(least=0.0), "xla_wall_s": Num(least=0.0),
                       "table": _TABLE},
                      {"patterns": Opt(_TABLE), "trace": Str(choices=PROFILE_TRACES[1:])}, closed=True),
}, closed=True)

# the spec's hand edits (stages.Edit, artifacts/saved_edits.py): a text edit's module is stored with the texts
EDITS = List(Record({"kind": Str(choices=("text", "insert", "remove")), "at": Int(least=-1), "stage": Str(nonempty=True),
                     "pass": Str(), "text": Opt(SHA256)}, closed=True), _MANY)

# save(compile_time=True): the compile time against a bare compile's, measured side by side (analysis/run/compile_time.py)
COMPILE_TIME = Record({k: Num(least=0.0) for k in ("seconds", "bare_seconds", "pipeline_seconds", "xla_seconds")}
                      | {"repeat": Int(1)}, closed=True)

# the manifest's "backend", written by save() after ex.backend(): the TPU's kernel table (saved_backend.py:
# Kernels.table()'s rows, no LLO) and the chip's figures. Not a field of MANIFEST, which refuses a file whole: it is
# checked apart (saved_backend.backend_from), so a damaged one costs only itself; json_schema() describes it
BACKEND = Record({"format": Int(1), "device_kind": Str(), "clock_hz": Opt(Num(least=0.0)),
                  "hbm_bytes_per_s": Opt(Num(least=0.0)), "table": _TABLE}, closed=True)

# the traced function's name and its arguments' leaves (stages.Signature), which a golden check holds a program to
SIGNATURE = Opt(Record({"function": Opt(Str()), "args": Opt(List(Record(
    {"path": Str(), "shape": _SHAPE, "dtype": Str(nonempty=True)}, closed=True), _MANY))}, closed=True))

MANIFEST = Record({
    "format": Int(1),
    "kind": Str(),
    "saved_by": Map(Opt(Str()), most=64),
    "spec": Record({
        "title": Str(), "pipeline": Str(), "inline": Bool(), "pattern_options": _options_record(),
        "disabled": List(Str(), _MANY), "enabled": List(Str(), _MANY),
        "xla_options": List(List(Str(), most=2, least=2), _MANY), "device": Str(nonempty=True),
        "timeout": Num(least=0.0)},
        {"shardy_passes": Str(), "optimize_communications": Bool(),
         "source": Str(choices=("function", "saved", "text")), "edits": EDITS}),
    "early": Int(0),
    "stages": List(Record(
        {"name": Str(nonempty=True), "group": Str(choices=typing.get_args(StageKind)), "produced_by": Str(),
         "changed": Bool(), "seconds": Opt(Num(least=0.0)), "parent": Opt(Str()), "error": Opt(Str()),
         "cached": Bool(), "text": Opt(SHA256)},
        {"located": Opt(SHA256), "edit": Str(choices=("text", "inserted", "after-removed")),
         "diff": STAGE_DIFF, "normalized": STAGE_SHAPE}), _MANY),
    "pipeline_error": Opt(_STAGE_ERROR),
    "xla_error": Opt(_STAGE_ERROR),
    "args": List(Record({"shape": _SHAPE, "dtype": Str(nonempty=True)}), _MANY),
    "arrays": Bool(),
    "runs": List(Record(
        {"stage": Str(), "device": Str(), "times": List(Num(least=0.0), _MANY, least=1), "check": Opt(CHECK)},
        {"outputs": Int(0, _MANY), "dtypes": List(Str(nonempty=True), _MANY), "program": PROGRAM,
         "earlier": Bool(), "printed": List(Str(), PRINTED_LINES)}), 10_000),  # printed: files before it lack it
    "texts": List(Record({"sha256": SHA256, "offset": Int(0), "length": Int(1)}), 2 * _MANY + 1),
    "texts_bytes": Int(0),
    "texts_sha256": SHA256,
}, {
    "input": Opt(SHA256),
    "xla": Opt(Record({}, {
        "passes": List(Str(), _MANY), "seconds": Opt(Num(least=0.0)), "options": Map(Scalar()),
        "cost": Map(Num(finite=False)), "memory": Map(Opt(Num(finite=False))), "warnings": List(Str(), _MANY)})),
    "cost": Opt(_TABLE),
    "arrays_bytes": Int(0),  # the arrays' total bytes; files saved before it was written lack it
    "profiles": PROFILES,  # save(profile=True); files saved without it lack it
    "compile_time": COMPILE_TIME,  # save(compile_time=True); files saved without it lack it
    "signature": SIGNATURE,  # null: a program given as text; files saved before it was written lack it
})


SCHEMA_ID = "https://hlo-workbench.invalid/hlox-manifest.schema.json"


def json_schema() -> dict:
    """``MANIFEST`` as a JSON Schema (draft 2020-12): the document ``workbench/assets/hlox-manifest.schema.json``
    holds, for readers in other languages (the JupyterLab extension reads no .hlox: it asks views/labserver.py,
    which loads the file here). It says every field's type and range, the fields only older files have
    marked ``deprecated``; the rules between fields (``check_manifest``: distinct stage names, parents before
    children, the texts' index) and the bounds on the JSON itself (``parse_manifest``) are not JSON Schema's
    to say."""
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
           "title": "the manifest.json of a saved hlo-workbench exploration (.hlox), format 1",
           **MANIFEST.schema()}
    out["properties"]["backend"] = {**BACKEND.schema(), "description": (
        "the TPU's kernel table (after ex.backend()); a reader checks it apart from the rest and, where it is damaged "
        "or of a newer format, loads the file without it")}
    return out


def check_field(name: str, manifest: dict) -> None:
    """Check one top-level field alone (``format`` is read before the rest: a newer file may differ)."""
    if name not in manifest:
        raise ManifestError(name, "missing")
    check(MANIFEST.required.get(name) or MANIFEST.optional[name], manifest[name], name)


def check_manifest(manifest: Any) -> None:
    """Refuse, with a ManifestError, a manifest that does not match ``MANIFEST`` or breaks a rule
    between its fields (see the module docstring)."""
    check(MANIFEST, manifest, "")
    names: dict[str, int] = {}
    for i, s in enumerate(manifest["stages"]):
        if s["name"] in names:
            raise ManifestError(f"stages[{i}].name", f"{s['name']!r} is also stages[{names[s['name']]}]'s name")
        if s["parent"] is not None and s["parent"] not in names:
            raise ManifestError(f"stages[{i}].parent", f"{s['parent'][:80]!r} is not an earlier stage")
        names[s["name"]] = i
    if manifest["early"] > len(manifest["stages"]):
        raise ManifestError("early", f"{manifest['early']} stages, more than the {len(manifest['stages'])} there are")
    at, hashes = 0, set()
    for i, t in enumerate(manifest["texts"]):
        if t["offset"] != at:
            raise ManifestError(f"texts[{i}].offset", f"expected {at} (where texts[{i - 1}] ends), got {t['offset']}"
                                if i else f"expected 0, got {t['offset']}")
        if t["sha256"] in hashes:
            raise ManifestError(f"texts[{i}].sha256", "is also an earlier text's")
        hashes.add(t["sha256"])
        at += t["length"]
    if at != manifest["texts_bytes"]:
        raise ManifestError("texts_bytes", f"the texts' index covers {at} bytes, not {manifest['texts_bytes']}")
    for i, s in enumerate(manifest["stages"]):
        named = {key: s.get(key) for key in ("text", "located")}
        named.update({f"diff.{key}": s["diff"][key] for key in ("before", "after") if "diff" in s})
        for key, sha in named.items():
            if sha is not None and sha not in hashes:
                raise ManifestError(f"stages[{i}].{key}", "names no text in the texts' index")
    if manifest.get("input") is not None and manifest["input"] not in hashes:
        raise ManifestError("input", "names no text in the texts' index")
    for k, r in enumerate(manifest["runs"]):
        if r["stage"] not in names and not r.get("earlier"):  # an earlier exploration's stage may be gone
            raise ManifestError(f"runs[{k}].stage", f"{r['stage'][:80]!r} is not a stage of the file")
    cost = manifest.get("cost")
    for r, row in enumerate(cost["rows"] if cost else ()):
        if len(row) != len(cost["columns"]):
            raise ManifestError(f"cost.rows[{r}]", f"expected {len(cost['columns'])} cells, got {len(row)}")


# -- parsing ------------------------------------------------------------------------------------------
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_PIECE = 1 << 20


def _shape_of_json(data: bytes) -> tuple[int, int]:
    """(the deepest nesting of brackets, how many values there are at most) in JSON ``data``, strings
    aside; linear, and never recursive. Counts brackets and commas in 1 MiB pieces with numpy."""
    bare = _STRING.sub(b"0", data)  # a string is one value; its brackets and commas are text
    depth, deepest, values = 0, 0, 1
    for start in range(0, len(bare), _PIECE):
        piece = np.frombuffer(bare, np.uint8, min(_PIECE, len(bare) - start), start)
        opens = (piece == ord("[")) | (piece == ord("{"))
        running = depth + np.cumsum(opens.astype(np.int64) - ((piece == ord("]")) | (piece == ord("}"))))
        if running.size:
            deepest, depth = max(deepest, int(running.max())), int(running[-1])
        values += int(np.count_nonzero(opens | (piece == ord(","))))
    return deepest, values


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:  # json.loads would keep the last silently: which one a reader sees is ambiguous
            raise ManifestError("", f"an object has the key {k[:80]!r} twice")
        out[k] = v
    return out


def parse_manifest(data: bytes) -> Any:
    """The JSON value in ``data`` (UTF-8), or a ManifestError saying why it cannot be read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError("", f"is not UTF-8 text (byte {e.start}: {e.reason})") from None
    deepest, values = _shape_of_json(data)
    if deepest > MAX_DEPTH:
        raise ManifestError("", f"nests {deepest} levels deep; a manifest nests at most {MAX_DEPTH}")
    if values > MAX_VALUES:
        raise ManifestError("", f"holds about {values:,} values; a manifest holds at most {MAX_VALUES:,}")
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys)
    except ManifestError:
        raise
    except json.JSONDecodeError as e:
        raise ManifestError("", f"is not JSON ({e})") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise ManifestError("", f"cannot be read: {e}") from None
