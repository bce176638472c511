"""Saved explorations: the ``.hlox`` file, written by ``ex.save(path)`` and read by ``wb.load(path)``.

A ``.hlox`` file is a zip archive holding data only -- no pickle, no code (the texts' member is
stored, as it is compressed already; the others are deflated):

    manifest.json   format, what wrote it (workbench, jax, jaxlib, enzyme-ad, Python, date), the spec
                    (pipeline, pattern options and toggles, XLA options, device), one entry per stage
                    (name, group, pass string, parent, changed, seconds, cached, error, the hashes of
                    its text and of its text with locations; no diff: a view without a kernel asks the
                    Jupyter server extension, views/labserver.py), XLA's passes and analyses, the
                    session's runs (``ex.history``: each with the program it ran and what it printed; those
                    made on the explorations it was made from marked ``earlier``), the example arguments' shapes
                    and dtypes, the cost table (``cost``: columns and rows, for viewers without a
                    kernel), the TPU's kernel table (``backend``, saved_backend.py), and where each distinct
                    text lies in ``texts.zst``
    texts.zst       one zstd frame: every distinct text once, concatenated as UTF-8. An unchanged
                    stage names its parent's text, and one frame with long-distance matching lets a
                    pass's module refer to the last pass's (consecutive XLA stages differ in few lines)
    arrays.npz      with ``save(..., arrays=True)``: the example arguments (``arg0``, ``arg1``, ... in
                    the module's argument order) and each run's outputs (``run0_0``, ...); numpy's own
                    format, read with ``allow_pickle=False``

Reading treats the file as possibly hostile and checks everything before it builds anything: the
zip's layout and names (archive.py), the manifest against its one schema (manifest.py; a file from a
newer workbench says so first), the zip's CRCs and the SHA-256 of every text. Each member is read
in pieces and counted against a limit -- ``MANIFEST_LIMIT`` for the manifest, the size the manifest
declares for the texts (at most ``TEXTS_LIMIT``) and for the arrays (at most ``ARRAYS_LIMIT``) --
and refused past it, before that much is allocated. Anything wrong is a SavedFileError naming the
member or the field.

Saving writes a temporary file in the same folder and renames it over the target, so a crash
mid-save leaves the old file whole; a symbolic link is saved through (the file it leads to is
replaced), and a path that holds anything but a regular file (a FIFO, a device, a socket) is refused in
words. The manifest is encoded and checked against the same schema before anything is written, and
a value that cannot be is a SavedFileError naming it; the arrays are counted by their logical size
first (refused past ``ARRAYS_LIMIT``) and then streamed into the file in numpy's 16 MiB pieces, never
assembled in memory.

``save_exploration`` reads an exploration only through ``Saveable``, the few members it writes;
``load_exploration`` gives a ``SavedExploration``: the stages to make an Exploration of and the runs
as RunResults, built from the checked manifest. The manifest's JSON is ``jsonout.plain_json``'s, the
one encoder of what the workbench writes.
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math
import tempfile
import time
import zipfile
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from ..errors import SavedFileError, StageError
from ..ir.dtypes import with_dtype
from ..options import PatternOptions, PatternSelection
from ..stages import Loaded, Spec, Stage, Staged
from .archive import ArchiveError, copy_member, open_zip, read_member, read_npy, size_text, unpack_zstd
from ..pipeline.build import Built
from .versions import versions
from .jsonout import WriteFailed, plain_json, table_json, target_of, write_replacing
from .manifest import PRINTED_LINES, PROGRAM, ManifestError, check_field, check_manifest, parse_manifest
from .saved_xla import SavedXla
from .saved_edits import edits_from, edits_json
from .saved_signature import signature_from, signature_json
from .saved_agree import check_agreement
from .saved_profiles import TRACE_LIMIT, profiles_from, profiles_json, trace_members
from .saved_backend import backend_from
from ..analysis.backend import Kernels
from ..pipeline.xla import XlaResult
from ..analysis.run.execute import Check, LeafCheck, RunResult, Timing
from ..analysis.run.history import RunProgram, program_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "SUFFIX", "MANIFEST_LIMIT", "TEXTS_LIMIT", "ARRAYS_LIMIT", "Saveable", "SavedExploration",
           "save_exploration", "load_exploration", "versions"]

FORMAT = 1  # the manifest's "format": bump it when a reader of this version could misread a new file
SUFFIX = ".hlox"
KIND = "hlo-workbench exploration"
_ZSTD_LEVEL = 9  # measured on a 3-layer block's 8 MB of stage texts: 0.02-0.03 of their size in ~0.05 s
# What a .hlox may hold, written and read: the reader refuses more before allocating it, the writer
# refuses to write it (a file it wrote must read back)
MANIFEST_LIMIT = 32 * 2**20  # a 200-stage exploration's manifest is ~0.5 MB, most of it pass strings
TEXTS_LIMIT = 2**30  # the distinct stage texts, decompressed (a 3-layer block: 8 MB)
ARRAYS_LIMIT = 2 * 2**30  # the example arguments and run outputs of save(arrays=True), by logical size
_MEMBERS = ("manifest.json", "texts.zst", "arrays.npz")


class Saveable(Staged, Protocol):
    """What ``save_exploration`` reads of an exploration, and all it reads: its stages as built
    (``Staged``), its XLA result and its runs. The facade's ``Exploration`` has each member
    (tests/test_architecture.py checks it), and this layer never imports the facade."""

    @property
    def xla_result(self) -> XlaResult | None: ...

    @property
    def runs(self) -> list[RunResult]: ...

    @property
    def history(self) -> list[RunResult]: ...


@dataclasses.dataclass(frozen=True)
class SavedExploration:
    """What ``load_exploration`` read from a ``.hlox``: ``built``, the stages to make an Exploration of
    (its XLA stages as saved, never compiled); ``runs``, the runs saved with it, oldest first, whose
    ``outputs`` are the saved output arrays (flattened) or None when the file holds no arrays;
    ``saved_by``, the versions and date the file records; ``arrays``, whether it holds the arrays;
    ``earlier``, the runs of the explorations it was made from (its ``history`` before ``runs``).
    Every run has its ``program``: a file from before runs recorded it gets its stage's, as saved."""

    built: Built
    runs: tuple[RunResult, ...]
    saved_by: dict[str, str | None]
    arrays: bool
    earlier: tuple[RunResult, ...] = ()
    profiles: dict = dataclasses.field(default_factory=dict)  # ex.profiles, when saved with profile=True
    compile_time: dict | None = None  # save(compile_time=True): CompileTime.as_json()
    # saved after ex.backend(): the kernel table (SavedKernels), or a Kernels saying why it cannot be read
    backend: Kernels | None = None


# -- writing ------------------------------------------------------------------------------------------
class _Texts:
    """The distinct texts of a file, each once, keyed by content hash."""

    def __init__(self) -> None:
        self.order: list[tuple[str, bytes]] = []
        self.seen: dict[str, str] = {}  # id-free: by hash

    def add(self, text: str) -> str | None:
        if not text:
            return None
        data = text.encode("utf-8", "surrogatepass")
        h = hashlib.sha256(data).hexdigest()
        if h not in self.seen:
            self.seen[h] = h
            self.order.append((h, data))
        return h

    def blob(self) -> tuple[bytes, list[dict]]:
        index, at = [], 0
        for h, data in self.order:
            index.append({"sha256": h, "offset": at, "length": len(data)})
            at += len(data)
        return b"".join(d for _, d in self.order), index


def _spec_json(spec: Spec) -> dict:
    sel = spec.selection
    return {"title": spec.title, "pipeline": spec.pipeline, "inline": spec.inline,
            "pattern_options": dataclasses.asdict(sel.options), "disabled": sorted(sel.disabled),
            "enabled": sorted(sel.enabled), "xla_options": [list(kv) for kv in spec.xla_options],
            "device": spec.device, "timeout": spec.timeout, "shardy_passes": spec.shardy,
            "optimize_communications": spec.optimize_communications,
            "source": "function" if spec.traced is not None else "saved" if spec.loaded is not None else "text"}


def _error_json(e: StageError | None) -> dict | None:
    return None if e is None else {"stage": e.stage, "produced_by": e.produced_by, "reason": e.reason,
                                   "diagnostics": e.diagnostics, "summary": e.summary, "detail": e.detail}


def _avals(spec: Spec) -> list[dict]:
    """The example arguments' shapes and dtypes, flattened in the module's argument order."""
    if spec.traced is not None:
        return [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in spec.traced.module_args()]
    if spec.loaded is not None:
        return [{"shape": list(s), "dtype": d} for s, d in spec.loaded.avals]
    from ..pipeline.exported import main_signature

    try:
        ins, _ = main_signature(spec.input_text)
    except Exception:  # noqa: BLE001 -- text without a @main the signature can be read from: no arguments known
        return []
    return [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in ins]


def _arg_values(spec: Spec) -> list:
    if spec.traced is not None:
        values = spec.traced.module_args()
    elif spec.loaded is not None:
        values = spec.loaded.args
    else:
        return []
    return [_array(x, f"example argument {i}") for i, x in enumerate(values)]


def _run_json(r: RunResult, k: int, arrays: dict | None, earlier: bool) -> dict:
    # printed: the first lines; earlier: made on an exploration this one was made from (its stage may be gone here)
    out = {"stage": r.stage, "device": r.device, "times": list(r.timing.times), "check": r.check,
           "printed": list(r.printed[:PRINTED_LINES]), **({"earlier": True} if earlier else {})}
    if r.program is not None:
        out["program"] = {f: getattr(r.program, f) for f in PROGRAM.required}
    # the module's own results (a user's pytree may hold a model's functions and settings among its arrays)
    produced = r.program_outputs if r.program_outputs is not None else r.outputs
    if arrays is not None and produced is not None:
        import jax

        leaves = jax.tree_util.tree_leaves(produced)
        for i, leaf in enumerate(leaves):
            arrays[f"run{k}_{i}"] = _array(leaf, f"output {i} of run {k} (on {r.stage!r})")
        out["outputs"] = len(leaves)
        out["dtypes"] = [str(arrays[f"run{k}_{i}"].dtype) for i in range(len(leaves))]  # .npy keeps bf16 as void
    return out


class _Unsaveable(Exception):
    """What ``save_exploration`` cannot write, in words; it becomes a SavedFileError with the path."""


def _array(value, what: str):
    from ..pipeline.program import host_array

    try:
        return host_array(value)
    except (TypeError, ValueError) as e:
        raise _Unsaveable(f"{what} cannot be saved as an array: {e}") from None


def _xla_json(r: XlaResult | None) -> dict | None:
    if r is None:
        return None
    return {"passes": list(r.passes), "seconds": r.seconds, "options": dict(r.options), "cost": r.cost,
            "memory": r.memory, "warnings": list(r.warnings)}


def save_exploration(ex: Saveable, path, arrays: bool = False, cost: pd.DataFrame | None = None,
                     arrays_limit: int = ARRAYS_LIMIT, profiles: dict | None = None,
                     compile_time: dict | None = None, backend: dict | None = None) -> Path:
    """Write ``ex`` to ``path`` as a ``.hlox`` file (see the module docstring); returns the path.
    ``cost``: the cost table (a DataFrame) to store for viewers without a kernel. ``arrays_limit``:
    the most bytes of arrays (logical: a broadcast view counts its full shape) ``arrays=True`` writes.
    ``profiles``: ``ex.profiles`` to keep, their traces with them (saved_profiles.py); ``compile_time``: a
    measured compile time to keep (``CompileTime.as_json()``), the golden of a compile-time limit; ``backend``: the
    TPU's kernel table to keep (``saved_backend.backend_json``).

    Every stage is computed first (XLA's too). Nothing touches ``path`` until the whole file is
    written: it is written next to it under a temporary name, then renamed over it."""
    import zstandard

    path = Path(path)
    if path.is_dir():
        raise SavedFileError(path, "is a folder; give the path of the .hlox file to write")
    try:
        target_of(path)  # a FIFO, a device: refused before any stage is computed
    except WriteFailed as e:
        raise SavedFileError(path, f"cannot save: {e.reason}") from None
    stages = ex.stages  # computes XLA's stages: "every stage"
    texts = _Texts()
    rows = []
    for s in stages:
        rows.append({"name": s.name, "group": s.group, "produced_by": s.produced_by, "changed": s.changed,
                     "seconds": s.seconds, "parent": s.parent, "error": s.error, "cached": s.cached,
                     "text": texts.add(s.text),
                     "located": texts.add(s.text_with_locations) if s.text_with_locations != s.text else None,
                     **({"edit": s.edit} if s.edit else {})})
    input_hash = texts.add(ex.spec.input_text)
    edits = edits_json(ex.spec.edits, texts.add)
    blob, index = texts.blob()
    try:
        if len(blob) > TEXTS_LIMIT:
            raise _Unsaveable(f"the stage texts are {size_text(len(blob))}, over the {size_text(TEXTS_LIMIT)} a "
                              ".hlox holds")
        part, traces = profiles_json(profiles or {})
        extra = {"edits": edits, "compile_time": compile_time, "backend": backend}
        manifest, array_data = _encoded(ex, rows, input_hash, index, blob, arrays, cost, arrays_limit, part, extra)
    except _Unsaveable as e:
        raise SavedFileError(path, f"cannot save: {e}; nothing was written") from None
    # a window of at most 2**27 bytes: what the reader allows (archive.ZSTD_WINDOW_LIMIT)
    params = zstandard.ZstdCompressionParameters.from_level(_ZSTD_LEVEL, enable_ldm=True,
                                                             window_log=max(20, min(27, len(blob).bit_length())))
    packed = zstandard.ZstdCompressor(compression_params=params).compress(blob)
    return _write_atomically(path, manifest, array_data, packed, traces)


def _logical_bytes(a) -> int:
    """An array's bytes by its shape and dtype (a broadcast view counts them all), in Python integers."""
    return math.prod(int(d) for d in a.shape) * a.dtype.itemsize


def _saved_arrays(spec: Spec, runs_arrays: dict, limit: int) -> tuple[dict, int]:
    """The arrays ``arrays=True`` writes (numpy arrays, views where they can be), and their total
    logical bytes; _Unsaveable when that passes ``limit``, counted from shapes and dtypes before any
    array is copied, or when an array holds Python objects (which only a pickle could write)."""
    out = {f"arg{i}": a for i, a in enumerate(_arg_values(spec))}
    out.update(runs_arrays)
    total = 0
    for name, a in out.items():
        if a.dtype.hasobject:
            raise _Unsaveable(f"the array {name} holds Python objects (dtype {a.dtype}), which a .hlox does not "
                              "store; save without arrays=True")
        total += _logical_bytes(a)
    if total > limit:
        raise _Unsaveable(f"the arrays (example arguments and run outputs) take {size_text(total)}, over the limit "
                          f"of {size_text(limit)}; save without arrays=True to keep their shapes and dtypes only")
    return out, total


def _encoded(ex: Saveable, rows: list[dict], input_hash: str | None, index: list[dict], blob: bytes, arrays: bool,
             cost: pd.DataFrame | None, arrays_limit: int, profiles: dict | None,
             extra: dict) -> tuple[str, dict | None]:
    """The manifest's JSON text, checked against the manifest's schema, and the arrays to write (None
    without ``arrays``): all of the file but the texts, made before anything is written.
    _Unsaveable says what cannot be encoded."""
    runs_arrays: dict | None = {} if arrays else None
    history, own = ex.history, {id(r) for r in ex.runs}  # in this order: a run made meanwhile is own
    manifest = {
        "format": FORMAT, "kind": KIND, "saved_by": {**versions(), "date": datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec="seconds")},
        "spec": {**_spec_json(ex.spec), **({"edits": extra["edits"]} if extra["edits"] else {})}, "early": len(ex.pipeline_stages), "stages": rows, "input": input_hash,
        "pipeline_error": _error_json(ex.pipeline_error),
        "xla_error": _error_json(ex.error) if ex.pipeline_error is None else None, "signature": signature_json(ex.spec),
        "xla": _xla_json(ex.xla_result), "args": _avals(ex.spec), "arrays": bool(arrays),
        "runs": [_run_json(r, k, runs_arrays, id(r) not in own) for k, r in enumerate(history)],
        "texts": index, "texts_bytes": len(blob), "texts_sha256": hashlib.sha256(blob).hexdigest(),
    }
    array_data = None
    if runs_arrays is not None:
        array_data, manifest["arrays_bytes"] = _saved_arrays(ex.spec, runs_arrays, arrays_limit)
    try:
        # ex.cost(), for viewers without a kernel; wb.load recomputes its own
        manifest["cost"] = table_json(cost, "the cost table's row")
        if profiles:
            manifest["profiles"] = profiles
        if extra["compile_time"]:
            manifest["compile_time"] = extra["compile_time"]
        if extra["backend"]:
            manifest["backend"] = extra["backend"]
        plain = plain_json(manifest, "manifest", allow_nan=True)
    except (TypeError, ValueError) as e:
        raise _Unsaveable(e) from None
    try:
        check_manifest(plain)  # what wb.load reads back: a file this writes must pass it
    except ManifestError as e:
        raise _Unsaveable(f"the manifest would not read back: {e}") from None
    text = json.dumps(plain, allow_nan=True, separators=(",", ":"))
    if len(text.encode()) > MANIFEST_LIMIT:
        raise _Unsaveable(f"the manifest is {size_text(len(text.encode()))}, over the {size_text(MANIFEST_LIMIT)} a "
                          ".hlox holds")
    return text, array_data


def _write_atomically(path: Path, manifest: str, arrays: dict | None, packed: bytes, traces: dict) -> Path:
    def write(f: BinaryIO) -> None:
        import numpy as np

        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            # the manifest repeats the long pattern-list pass strings: deflate takes them down
            z.writestr("manifest.json", manifest, compress_type=zipfile.ZIP_DEFLATED)
            z.writestr("texts.zst", packed)
            for name, data in traces.items():  # the profiler's own files (compressed already)
                z.writestr(name, data)
            if arrays is not None:
                # streamed: numpy writes each array in 16 MiB pieces into the member, deflated on the way
                # to the file; a zero-stride view is never expanded. Zip64 records where it may pass 2 GiB.
                info = zipfile.ZipInfo("arrays.npz", time.localtime()[:6])
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o600 << 16
                most = sum(_logical_bytes(a) for a in arrays.values()) + 1024 * (len(arrays) + 1)
                with z.open(info, "w", force_zip64=most * 1.05 > zipfile.ZIP64_LIMIT) as member:
                    np.savez(member, allow_pickle=False, **arrays)

    try:
        return write_replacing(path, write)
    except WriteFailed as e:  # in words, naming the path asked for (never the temporary file)
        raise SavedFileError(path, f"cannot save: {e.reason}") from None


# -- reading ------------------------------------------------------------------------------------------
def _refused(path: Path, e: ArchiveError | ManifestError) -> SavedFileError:
    if isinstance(e, ManifestError):
        return SavedFileError(path, f"corrupt manifest.json: {e}")
    return SavedFileError(path, f"corrupt or refused: {e}")


def _open(path: Path) -> tuple[dict, zipfile.ZipFile]:
    """The checked manifest and the open archive (the caller closes it)."""
    if not path.exists():
        raise SavedFileError(path, "no such file")
    if path.is_dir():
        raise SavedFileError(path, "is a folder, not a saved exploration (.hlox)")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            head = f.read(4)
        why = "it is empty" if not head else ("it looks truncated (a zip's start without its end)"
                                             if head.startswith(b"PK") else "it is not a zip archive")
        raise SavedFileError(path, f"not a saved exploration (.hlox): {why}")
    try:
        z = open_zip(path, "the file", max_entries=16)  # a bound on the directory; each name is checked below
    except ArchiveError as e:
        raise _refused(path, e) from None
    try:
        if "manifest.json" not in z.namelist():
            raise SavedFileError(path, "not a saved exploration (.hlox): the zip has no manifest.json")
        manifest = parse_manifest(read_member(z, "manifest.json", MANIFEST_LIMIT, "manifest.json"))
        if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
            raise SavedFileError(path, "not a saved exploration (.hlox): its manifest is not an hlo-workbench one")
        check_field("format", manifest)
        if manifest["format"] > FORMAT:
            by = manifest.get("saved_by")
            by = by.get("workbench") if isinstance(by, dict) else None
            raise SavedFileError(path, f"written by hlo-workbench {by if isinstance(by, str) else 'a newer version'} "
                                 f"in file format {manifest['format']}; this hlo-workbench reads format {FORMAT} and "
                                 "older: upgrade hlo-workbench to open it")
        check_manifest(manifest)
        wanted = set(_MEMBERS[: 3 if manifest["arrays"] else 2]) | trace_members(manifest)
        for name in z.namelist():
            if name not in wanted:
                why = ("but its manifest says no arrays were saved" if name == "arrays.npz" else
                       f"which a .hlox of format {FORMAT} does not have (it holds {', '.join(_MEMBERS)})")
                raise SavedFileError(path, f"corrupt or refused: the zip holds a member {name!r}, {why}")
        missing = sorted(wanted - set(z.namelist()))
        if missing:
            raise SavedFileError(path, f"corrupt: the member {missing[0]} is missing")
    except (ArchiveError, ManifestError) as e:
        z.close()
        raise _refused(path, e) from None
    except BaseException:
        z.close()
        raise
    return manifest, z


def _texts(path: Path, z: zipfile.ZipFile, manifest: dict) -> dict[str, str]:
    """Each distinct text by its hash, decompressed within the size the manifest declares."""
    size = manifest["texts_bytes"]
    if size > TEXTS_LIMIT:
        raise SavedFileError(path, f"refused: the manifest says the stage texts are {size_text(size)}, over the "
                             f"limit of {size_text(TEXTS_LIMIT)}")
    # a zstd frame is at most its content plus 1/256 of it and a few headers
    packed = read_member(z, "texts.zst", size + size // 256 + 1024, "texts.zst")
    blob = unpack_zstd(packed, size, "texts.zst")
    if hashlib.sha256(blob).hexdigest() != manifest["texts_sha256"]:
        raise SavedFileError(path, "corrupt: the stage texts do not match their checksum")
    out: dict[str, str] = {}
    with memoryview(blob) as view:
        for t in manifest["texts"]:  # they tile the blob (check_manifest): each byte decoded once
            data = view[t["offset"]: t["offset"] + t["length"]]
            if hashlib.sha256(data).hexdigest() != t["sha256"]:
                raise SavedFileError(path, "corrupt: a stage text does not match its checksum")
            try:
                out[t["sha256"]] = str(data, "utf-8", "surrogatepass")
            except UnicodeDecodeError as e:
                raise SavedFileError(path, f"corrupt: a stage text is not UTF-8 ({e.reason} at byte {e.start})") from None
    return out


def _arrays(path: Path, z: zipfile.ZipFile, manifest: dict, limit: int) -> dict:
    """The arrays the manifest lists (``arg<i>``, ``run<k>_<i>``), each refused before it is allocated
    when it would pass the arrays' declared total or ``limit``."""
    names = [f"arg{i}" for i in range(len(manifest["args"]))]
    names += [f"run{k}_{i}" for k, r in enumerate(manifest["runs"]) for i in range(r.get("outputs", 0))]
    room, said = limit, "the arrays' limit"
    declared = manifest.get("arrays_bytes")
    if declared is not None:
        if declared > room:
            raise SavedFileError(path, f"refused: the manifest says the arrays take {size_text(declared)}, over "
                                 f"the limit of {size_text(room)}")
        room, said = declared, "the arrays' total the manifest declares"
    out, used = {}, 0
    with tempfile.TemporaryFile(prefix="hlox-arrays-") as tmp:  # the npz is a zip: zipfile needs to seek in it
        copy_member(z, "arrays.npz", tmp, room + 8192 * (len(names) + 1), "arrays.npz")
        with open_zip(tmp, "arrays.npz", max_entries=len(names) + 16) as npz:
            listed = {f"{n}.npy" for n in names}
            for member in npz.namelist():
                if member not in listed:
                    raise ArchiveError(f"arrays.npz holds {member!r}, which the manifest does not list")
            for n in names:
                if f"{n}.npy" not in npz.namelist():
                    raise ArchiveError(f"arrays.npz lacks {n}.npy, which the manifest lists")
                left = room - used
                a = read_npy(npz, f"{n}.npy", left, f"the {size_text(left)} left of {said}", f"arrays.npz/{n}.npy")
                used += a.nbytes
                out[n] = a
    if declared is not None and used != declared:
        raise SavedFileError(path, f"corrupt: arrays.npz's arrays take {size_text(used)}, the manifest says "
                             f"{size_text(declared)}")
    for i, aval in enumerate(manifest["args"]):
        if list(out[f"arg{i}"].shape) != aval["shape"]:
            raise SavedFileError(path, f"corrupt: arrays.npz/arg{i}.npy has the shape {list(out[f'arg{i}'].shape)}, "
                                 f"the manifest's args[{i}] says {aval['shape']}")
    typed = {f"arg{i}": aval["dtype"] for i, aval in enumerate(manifest["args"])}
    typed.update({f"run{k}_{i}": d for k, r in enumerate(manifest["runs"]) for i, d in enumerate(r.get("dtypes", ()))})
    for name, dtype in typed.items():
        try:  # bfloat16 and float8 arrays come out of .npy as raw bytes: their saved type's name restores them
            out[name] = with_dtype(out[name], dtype)
        except (TypeError, KeyError) as e:
            raise SavedFileError(path, f"corrupt: arrays.npz/{name}.npy does not hold the type the manifest "
                                 f"says ({e})") from None
    return out


def _error(e: dict | None) -> StageError | None:
    return None if e is None else StageError(e["stage"], e["produced_by"], e["reason"], e.get("diagnostics", ""),
                                             e.get("summary", ""), e.get("detail", ""))


def _spec(d: dict, loaded: Loaded) -> Spec:
    options = PatternOptions(**d["pattern_options"])
    sel = PatternSelection(options, frozenset(d["disabled"]), frozenset(d["enabled"]))
    return Spec(d["title"], d["pipeline"], bool(d["inline"]), sel, tuple((k, v) for k, v in d["xla_options"]),
                d["device"], float(d["timeout"]), loaded, str(d.get("shardy_passes", "none")),
                bool(d.get("optimize_communications", True)))


def _xla_result(d: dict | None, stages: tuple[Stage, ...]) -> XlaResult | None:
    if d is None:
        return None
    done: Future = Future()
    done.set_result((dict(d.get("cost") or {}), dict(d.get("memory") or {})))
    return XlaResult(tuple(stages), tuple(d.get("passes") or ()), float(d.get("seconds") or 0.0),
                     dict(d.get("options") or {}), done, tuple(d.get("warnings") or ()))


def _leaf(d: dict) -> LeafCheck:
    lowered = d.get("lowered_abs")
    return LeafCheck(**{**d, "shape": tuple(d["shape"]), "max_abs": float(d["max_abs"]), "max_rel": float(d["max_rel"]),
                        "tolerance": float(d["tolerance"]), "lowered_abs": None if lowered is None else float(lowered)})


def _run(entry: dict, outputs: tuple | None, spec: Spec, stages: dict[str, Stage]) -> RunResult:
    """A saved run as the RunResult it was; ``outputs``: its output arrays, flattened (the pytree's
    structure is not saved), or None when the file holds no arrays. The manifest's check and leaves
    have exactly Check's and LeafCheck's fields (manifest.CHECK and LEAF are closed records), its
    program RunProgram's; a run saved without its program ran the file's stage of its name."""
    check = entry["check"]
    if check is not None:
        check = Check(**{**check, "leaves": tuple(_leaf(leaf) for leaf in check["leaves"])})
    saved = entry.get("program")
    if saved is not None:
        program = RunProgram(entry["stage"], saved["text_sha256"], saved["pipeline"], tuple(saved["patterns_off"]),
                             tuple(saved["patterns_added"]), tuple(tuple(kv) for kv in saved["xla_options"]))
    else:
        program = program_of(spec, stages[entry["stage"]]) if entry["stage"] in stages else None
    return RunResult(entry["stage"], entry["device"], outputs, Timing(tuple(float(t) for t in entry["times"])), check,
                     program=program, printed=tuple(entry.get("printed", ())))  # files before it: none


def _stages(manifest: dict, texts: dict[str, str]) -> list[Stage]:
    out = []
    for r in manifest["stages"]:
        text = texts[r["text"]] if r["text"] else ""
        located = texts[r["located"]] if r.get("located") else (text if r["group"] in ("trace", "mlir")
                                                                 and r["name"] != "jaxpr" else "")
        out.append(Stage(r["name"], r["group"], text, r["produced_by"], r["changed"], r["seconds"], r["parent"],
                         r["error"], text_with_locations=located, cached=r["cached"], edit=r.get("edit", "")))
    return out


def load_exploration(path, arrays_limit: int = ARRAYS_LIMIT) -> SavedExploration:
    """Read a ``.hlox`` file: its stages as a Built and its runs as RunResults (``SavedExploration``).
    SavedFileError, before anything is built, for a file that is missing, not a .hlox, from a newer
    workbench, corrupt, truncated, or over a limit (the module's MANIFEST_LIMIT, TEXTS_LIMIT and
    ``arrays_limit``): members are read in pieces, counted, and refused past their limit before that
    much is allocated; the manifest is checked against its schema (manifest.py) before anything is
    built from it."""
    path = Path(path)
    manifest, z = _open(path)
    with z:
        try:
            texts = _texts(path, z, manifest)
            arrays = _arrays(path, z, manifest, arrays_limit) if manifest["arrays"] else {}
            profiles = profiles_from(manifest.get("profiles"), lambda name: read_member(z, name, TRACE_LIMIT, name))
        except (ArchiveError, ManifestError) as e:
            raise _refused(path, e) from None
    check_agreement(path, manifest["stages"], texts)  # what it stores twice agrees, or SavedFileError
    try:
        stages = _stages(manifest, texts)
        early, late = tuple(stages[: manifest["early"]]), tuple(stages[manifest["early"]:])
        first = tuple(s for s in early if s.group == "trace")
        input_text = texts[manifest["input"]] if manifest.get("input") else (first[-1].text_with_locations
                                                                            if first else "")
        avals = tuple((tuple(a["shape"]), a["dtype"]) for a in manifest["args"])
        args = tuple(arrays[f"arg{i}"] for i in range(len(avals))) if manifest["arrays"] else ()
        saved_by = dict(manifest["saved_by"])
        loaded = Loaded(first, input_text, avals, args, saved_by, str(path), signature_from(manifest))
        spec = dataclasses.replace(_spec(manifest["spec"], loaded), edits=edits_from(manifest["spec"].get("edits"),
                                                                                      texts))
        pipeline_error = _error(manifest["pipeline_error"])
        xla_error = _error(manifest["xla_error"])
        result = _xla_result(manifest.get("xla"), late)
        by_name = {s.name: s for s in stages}
        runs = [_run(r, tuple(arrays[f"run{k}_{i}"] for i in range(r.get("outputs", 0))) if manifest["arrays"]
                     else None, spec, by_name) for k, r in enumerate(manifest["runs"])]
        earlier = tuple(run for run, r in zip(runs, manifest["runs"]) if r.get("earlier"))
    except (KeyError, TypeError, ValueError, IndexError) as e:  # a gap in manifest.py's description
        raise SavedFileError(path, f"corrupt: the manifest passed its checks but cannot be built from "
                             f"({type(e).__name__}: {e})") from None
    late_fn = None if pipeline_error is not None else SavedXla(late, xla_error, result)
    own = tuple(run for run, r in zip(runs, manifest["runs"]) if not r.get("earlier"))
    return SavedExploration(Built(spec, early, pipeline_error, late_fn), own, saved_by, manifest["arrays"], earlier,
                            profiles, manifest.get("compile_time"), backend_from(manifest.get("backend"), path.name))
