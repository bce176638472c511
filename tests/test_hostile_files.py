"""A saved exploration (.hlox) handed over by someone else is safe to load: every damaged, hostile or
oversized file is a SavedFileError (never another exception), each member is read within a limit
(bombs are refused after reading at most that much: counted as tracemalloc's peak, in bytes), and
saving arrays streams them into the file instead of building it in memory.

Every input starts as a real saved exploration, then is tampered with: its manifest rewritten, its
members replaced, or the zip written by hand (``write_zip``) where zipfile would not write it."""
import dataclasses
import gc
import io
import json
import os
import random
import struct
import tracemalloc
import typing
import zipfile
import zlib

import jax.numpy as jnp
import numpy as np
import pytest
import zstandard

import workbench as wb
from workbench.analysis.run import check as check_module
from workbench.errors import SavedFileError
from workbench.exploration.core import Exploration
from workbench.artifacts import manifest as schema
from workbench.artifacts import saved
from workbench.artifacts.archive import PIECE

GiB, MiB = 2**30, 2**20
SLACK = 8 * PIECE  # what a load allocates besides what it keeps: a few pieces (compressed, inflated, copied)


# -- building inputs ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good(tmp_path_factory):
    ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(3))
    ex.run(repeat=2)
    return ex.save(tmp_path_factory.mktemp("hostile") / "good.hlox", arrays=True)


@pytest.fixture(scope="module")
def members(good):
    with zipfile.ZipFile(good) as z:
        return {name: z.read(name) for name in z.namelist()}


@pytest.fixture(scope="module")
def manifest(members):
    return json.loads(members["manifest.json"])


@dataclasses.dataclass
class Member:
    """A zip member as written by hand: ``payload`` as stored, ``size`` and ``crc`` as declared."""

    name: str | bytes
    payload: bytes
    size: int
    crc: int
    method: int = 8
    flags: int = 0


def deflated(name: str, data: bytes) -> Member:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return Member(name, c.compress(data) + c.flush(), len(data), zlib.crc32(data))


def stored(name: str, data: bytes) -> Member:
    return Member(name, data, len(data), zlib.crc32(data), method=0)


def deflate_bomb(name: str, size: int, declared: int | None = None) -> Member:
    """``size`` zero bytes deflated (~1 MB per GiB), built from one compressed 16 MiB piece repeated:
    after a full flush the compressor starts afresh, so each piece compresses to the same bytes.
    ``declared``: the uncompressed size the zip claims (the truth unless given); the CRC is the
    declared prefix's, so zipfile's own check passes on what it is willing to read."""
    piece = 16 * MiB
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(piece)) + c.flush(zlib.Z_FULL_FLUSH)
    payload = block * (size // piece) + c.compress(bytes(size % piece)) + c.flush()
    declared = size if declared is None else declared
    return Member(name, payload, declared, zlib.crc32(bytes(min(declared, 64 * MiB))) if declared <= 64 * MiB else 0)


def zstd_bomb(size: int, content_size: bool) -> bytes:
    """One zstd frame of ``size`` zero bytes (~32 KB per GiB); ``content_size``: whether its header says so."""
    cctx = zstandard.ZstdCompressor(level=1, write_content_size=content_size)
    chunker = cctx.chunker(size=size if content_size else -1)
    zeros = bytes(16 * MiB)
    out = []
    for _ in range(size // len(zeros)):
        out += chunker.compress(zeros)
    out += chunker.finish()
    return b"".join(out)


def write_zip(path, parts: list[Member]) -> None:
    """A zip archive of ``parts``, local headers, directory and end record written field by field."""
    body, directory = bytearray(), bytearray()
    for m in parts:
        name = m.name if isinstance(m.name, bytes) else m.name.encode("utf-8")
        offset = len(body)
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, m.flags, m.method, 0, 0x21, m.crc, len(m.payload),
                            m.size, len(name), 0) + name + m.payload
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, m.flags, m.method, 0, 0x21, m.crc,
                                 len(m.payload), m.size, len(name), 0, 0, 0, 0, 0, offset) + name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(parts), len(parts), len(directory), len(body), 0)
    path.write_bytes(bytes(body + directory + end))


def usual(members: dict, **replace) -> list[Member]:
    """The good file's members as hand-written parts, with some replaced (a Member) or left out (None)."""
    parts = []
    for name, data in members.items():
        part = replace.get(name.replace(".", "_"), stored(name, data) if name == "texts.zst" else deflated(name, data))
        if part is not None:
            parts.append(part)
    return parts


def with_manifest(members: dict, m) -> dict:
    text = m if isinstance(m, (str, bytes)) else json.dumps(m)
    return {**members, "manifest.json": text.encode() if isinstance(text, str) else text}


def write_members(path, members: dict) -> None:
    write_zip(path, usual(members))


# -- checking outcomes -----------------------------------------------------------------------------
def refused(path, *words, measure: bool = False) -> SavedFileError:
    """wb.load(path) raises SavedFileError (pytest.raises lets any other exception fail the test)
    whose message holds ``words``, and the file is unchanged. ``measure``: also return the peak of
    memory allocated while loading (tracemalloc, bytes), as (error, peak)."""
    before = path.read_bytes()
    gc.collect()
    if measure:
        tracemalloc.start()
    try:
        with pytest.raises(SavedFileError) as e:
            wb.load(path)
        peak = tracemalloc.get_traced_memory()[1] if measure else None
    finally:
        if measure:
            tracemalloc.stop()
    message = str(e.value)
    for w in words:
        assert w in message, message
    assert "passed its checks" not in message, message  # the schema caught it, not the loader's net
    assert path.read_bytes() == before
    if not measure:
        return e.value
    print(f"{path.name}: refused with a peak of {peak:,} bytes allocated: {message}")
    return e.value, peak


def refused_within(path, *words) -> tuple[SavedFileError, int]:
    return refused(path, *words, measure=True)


# -- the round trip is unchanged -------------------------------------------------------------------
def test_a_good_file_loads_and_its_manifest_passes_the_schema(good, manifest):
    schema.check_manifest(manifest)
    ex = wb.load(good)
    assert ex.runs[0].check.passed and ex.runs[0].outputs[0].shape == (3,)
    assert ex.table().shape[0] == len(manifest["stages"])
    assert manifest["arrays_bytes"] == 12 + 12  # arg0 and run0_0: three float32s each


def test_the_schema_of_a_check_is_the_checks_own_fields():
    # wb.load builds Check(**check) and LeafCheck(**leaf): the closed records must match them exactly
    for record, cls in ((schema.CHECK, check_module.Check), (schema.LEAF, check_module.LeafCheck)):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(record.required) | set(record.optional) == set(fields)
        assert set(record.required) == {n for n, f in fields.items() if f.default is dataclasses.MISSING}
    assert schema.CHECK.optional["kind"].choices == typing.get_args(check_module.ReferenceKind)
    assert schema.CHECK.optional["source"].choices == typing.get_args(check_module.ReferenceSource)
    assert schema.LEAF.optional["rule"].choices == typing.get_args(check_module.LeafRule)


# -- bombs: each member is read within its limit ---------------------------------------------------
def test_a_manifest_bomb_is_refused_by_its_declared_size_before_reading(members, tmp_path):
    path = tmp_path / "bomb.hlox"
    write_zip(path, usual(members, manifest_json=deflate_bomb("manifest.json", GiB)))
    assert path.stat().st_size < 2 * MiB
    err, peak = refused_within(path, "manifest.json", "1,073,741,824 bytes", f"{saved.MANIFEST_LIMIT:,} bytes",
                               "without reading")
    assert peak < SLACK, peak


def test_a_manifest_bomb_that_declares_a_small_size_is_read_no_further(members, tmp_path):
    path = tmp_path / "liar.hlox"
    write_zip(path, usual(members, manifest_json=deflate_bomb("manifest.json", GiB, declared=100_000)))
    err, peak = refused_within(path, "manifest.json")
    assert peak < 100_000 + SLACK, peak


def test_a_zstd_bomb_that_declares_its_size_is_refused_before_decompressing(members, manifest, tmp_path):
    path = tmp_path / "zbomb.hlox"
    write_zip(path, usual(members, texts_zst=stored("texts.zst", zstd_bomb(GiB, content_size=True))))
    assert path.stat().st_size < 200_000
    err, peak = refused_within(path, "texts.zst", "1,073,741,824 bytes", "before decompressing")
    assert peak < SLACK, peak


def test_a_zstd_bomb_without_its_size_is_decompressed_only_to_the_declared_size(members, manifest, tmp_path):
    path = tmp_path / "zbomb2.hlox"
    write_zip(path, usual(members, texts_zst=stored("texts.zst", zstd_bomb(GiB, content_size=False))))
    err, peak = refused_within(path, "texts.zst", "decompresses past")
    assert peak < manifest["texts_bytes"] + PIECE + SLACK, peak


def test_a_texts_member_that_inflates_past_a_zstd_frames_bound_is_refused_unread(members, tmp_path):
    path = tmp_path / "tbomb.hlox"
    write_zip(path, usual(members, texts_zst=deflate_bomb("texts.zst", GiB)))
    err, peak = refused_within(path, "texts.zst", "1,073,741,824 bytes", "without reading")
    assert peak < SLACK, peak


def test_the_texts_declared_size_is_bounded(members, manifest, tmp_path):
    path = tmp_path / "huge_texts.hlox"
    m = json.loads(json.dumps(manifest))
    m["texts_bytes"] = 3 * GiB
    m["texts"][-1]["length"] += 3 * GiB - manifest["texts_bytes"]
    write_members(path, with_manifest(members, m))
    err, peak = refused_within(path, "stage texts", "3,221,225,472 bytes", f"{saved.TEXTS_LIMIT:,} bytes")
    assert peak < SLACK, peak


def test_an_arrays_bomb_is_refused_by_its_declared_size(members, tmp_path):
    path = tmp_path / "abomb.hlox"
    write_zip(path, usual(members, arrays_npz=deflate_bomb("arrays.npz", GiB)))
    err, peak = refused_within(path, "arrays.npz", "1,073,741,824 bytes", "without reading")
    assert peak < SLACK, peak


def npz(arrays: dict[str, bytes]) -> bytes:
    """An npz of raw .npy members, as given."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in arrays.items():
            z.writestr(name, data)
    return buf.getvalue()


def npy(shape, dtype="<f4", data: bytes | None = None, fortran=False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": fortran, "shape": shape})
    return buf.getvalue() + (bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize) if data is None else data)


def good_npz(members) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(members["arrays.npz"])) as z:
        return {n: z.read(n) for n in z.namelist()}


def test_an_array_that_declares_a_gigabyte_is_refused_before_it_is_allocated(members, tmp_path):
    path = tmp_path / "big_header.hlox"
    inner = {**good_npz(members), "arg0.npy": npy((2**28,), data=bytes(12))}
    write_members(path, {**members, "arrays.npz": npz(inner)})
    err, peak = refused_within(path, "arrays.npz/arg0.npy", "1,073,741,824 bytes", "before allocating")
    assert peak < SLACK, peak


def test_an_array_member_that_inflates_past_its_header_is_refused(members, tmp_path):
    path = tmp_path / "inner_bomb.hlox"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("run0_0.npy", good_npz(members)["run0_0.npy"])
        with z.open("arg0.npy", "w", force_zip64=True) as f:
            f.write(npy((3,)))
            f.write(bytes(16 * MiB))  # 16 MiB of zeros after 3 floats' header: 16 KB deflated
    write_members(path, {**members, "arrays.npz": buf.getvalue()})
    err, peak = refused_within(path, "arrays.npz/arg0.npy", "declares")
    assert peak < SLACK, peak


def test_an_unknown_member_is_refused_unread_even_a_bomb(members, tmp_path):
    path = tmp_path / "extra.hlox"
    write_zip(path, usual(members) + [deflate_bomb("notes.txt", GiB)])
    err, peak = refused_within(path, "notes.txt", "does not have")
    assert peak < SLACK, peak


def test_a_directory_of_many_members_is_refused_before_zipfile_parses_it(members, tmp_path):
    path = tmp_path / "crowd.hlox"
    write_zip(path, usual(members) + [stored(f"m{i}", b"") for i in range(20_000)])
    err, peak = refused_within(path, "directory lists 20,003 members")
    assert peak < SLACK, peak


# -- the zip's layout --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, words", [
    ("../manifest.json", "not a plain file name"), ("/etc/passwd", "not a plain file name"),
    ("a/b.json", "not a plain file name"), ("..", "not a plain file name"), ("C:\\x", "not a plain file name"),
    ("x\\..\\y", "not a plain file name"), ("", "not a plain file name"),
    ("texts.zst\x00.exe", "'texts.zst' twice"),  # zipfile cuts a name at NUL
])
def test_a_member_name_that_is_not_a_plain_file_name_is_refused(members, tmp_path, name, words):
    path = tmp_path / "names.hlox"
    write_zip(path, usual(members) + [stored(name, b"x")])
    refused(path, words)


def test_a_member_name_that_is_not_utf8_though_flagged_so_is_refused(members, tmp_path):
    path = tmp_path / "surrogate_name.hlox"
    write_zip(path, usual(members) + [dataclasses.replace(stored("x", b"x"), name=b"\xed\xa0\x80.json", flags=0x800)])
    refused(path, "not a readable zip archive", "UnicodeDecodeError")


def test_a_member_twice_is_refused(members, tmp_path):
    path = tmp_path / "twice.hlox"
    write_zip(path, usual(members) + [deflated("manifest.json", members["manifest.json"])])
    refused(path, "'manifest.json' twice")


@pytest.mark.parametrize("method, flags, words", [(12, 0, "compression method 12"), (14, 0, "compression method 14"),
                                                  (8, 1, "encrypted")])
def test_other_compressions_and_encryption_are_refused(members, tmp_path, method, flags, words):
    path = tmp_path / "method.hlox"
    m = deflated("manifest.json", members["manifest.json"])
    write_zip(path, usual(members, manifest_json=dataclasses.replace(m, method=method, flags=flags)))
    refused(path, words)


def test_truncated_and_foreign_files_are_refused(good, tmp_path):
    data = good.read_bytes()
    for n in (1, 4, 30, 100, len(data) // 3, len(data) - 23, len(data) - 1):
        (tmp_path / "cut.hlox").write_bytes(data[:n])
        refused(tmp_path / "cut.hlox")
    (tmp_path / "text.hlox").write_bytes(b"not a zip at all\n" * 100)
    refused(tmp_path / "text.hlox", "not a zip")
    (tmp_path / "npz.hlox").write_bytes(npz({"a.npy": npy((2,))}))
    refused(tmp_path / "npz.hlox", "no manifest.json")


def test_a_truncated_or_garbled_zstd_frame_is_refused(members, tmp_path):
    packed = members["texts.zst"]
    path = tmp_path / "z.hlox"
    for bad, words in ((packed[: len(packed) // 2], "texts.zst"), (packed[:-4], "texts.zst"),
                       (b"\x28\xb5\x2f\xfd" + bytes(40), "texts.zst"), (b"garbage", "texts.zst"), (b"", "texts.zst")):
        write_members(path, {**members, "texts.zst": bad})
        refused(path, words)


def test_a_zstd_frame_asking_for_a_huge_window_is_refused(members, manifest, tmp_path):
    blob = zstandard.ZstdDecompressor().decompress(members["texts.zst"])
    params = zstandard.ZstdCompressionParameters(window_log=31, write_content_size=False)
    with io.BytesIO() as out:
        with zstandard.ZstdCompressor(compression_params=params).stream_writer(out, closefd=False) as w:
            w.write(blob)
        frame = out.getvalue()
    assert zstandard.get_frame_parameters(frame).window_size == 2**31
    path = tmp_path / "window.hlox"
    write_members(path, {**members, "texts.zst": frame})
    refused(path, "texts.zst")


def test_missing_members_are_refused(members, tmp_path):
    path = tmp_path / "missing.hlox"
    write_zip(path, usual(members, texts_zst=None))
    refused(path, "texts.zst is missing")
    write_zip(path, usual(members, arrays_npz=None))
    refused(path, "arrays.npz is missing")


def test_an_arrays_member_the_manifest_does_not_announce_is_refused(members, manifest, tmp_path):
    m = json.loads(json.dumps(manifest))
    m["arrays"] = False
    path = tmp_path / "unannounced.hlox"
    write_members(path, with_manifest(members, m))
    refused(path, "arrays.npz", "no arrays were saved")


# -- the arrays inside arrays.npz --------------------------------------------------------------------
@pytest.mark.parametrize("change, words", [
    ({"arg0.npy": npy((3,), "|O")}, "Python objects"),
    ({"arg0.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4} \n"}, "not numpy's"),
    ({"arg0.npy": b"\x93NUMPY\x01\x00\x76\x00" + b" " * 100}, "truncated"),
    ({"arg0.npy": b"\x93NUMPY\x01\x00\xff\xff" + b" " * 100}, "at most 4096"),
    ({"arg0.npy": b"\x93NUMPY\x02\x00\xff\xff\xff\x7f"}, "at most 4096"),
    ({"arg0.npy": b"PK\x03\x04 not an array"}, "not a .npy"),
    ({"arg0.npy": npy((3,), data=bytes(8))}, "declares"),
    ({"arg0.npy": npy((3,), "<q0", data=bytes(12))}, "does not know"),
    ({"arg0.npy": npy((4,))}, "12 bytes, more than the 8 bytes left"),
    ({"arg0.npy": npy((2,))}, "arrays take 20 bytes, the manifest says 24 bytes"),
    ({"arg0.npy": npy((1, 3), data=bytes(12))}, "shape [1, 3]"),
    ({"extra.npy": npy((1,))}, "does not list"),
    ({"run0_0.npy": None}, "lacks run0_0.npy"),
])
def test_bad_arrays_are_refused(members, tmp_path, change, words):
    inner = {**good_npz(members), **change}
    path = tmp_path / "arrays.hlox"
    write_members(path, {**members, "arrays.npz": npz({k: v for k, v in inner.items() if v is not None})})
    refused(path, "arrays.npz", words)


def test_the_array_reader_reads_what_numpy_writes(tmp_path):
    import ml_dtypes

    from workbench.artifacts.archive import open_zip, read_npy

    arrays = {"f": np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)), "s": np.array(2.5, np.float32),
              "b": np.arange(6, dtype=ml_dtypes.bfloat16).reshape(2, 3), "e": np.zeros((0, 5), np.int8),
              "u": np.array(["ab", "c"]), "k": np.arange(4, dtype=np.uint32).reshape(2, 2)[:, ::-1]}
    np.savez(tmp_path / "a.npz", **arrays)
    with open_zip(tmp_path / "a.npz", "a.npz", max_entries=8) as z, np.load(tmp_path / "a.npz") as want:
        for name in arrays:
            got = read_npy(z, f"{name}.npy", 10**6, "room", name)
            assert got.dtype == want[name].dtype and got.shape == want[name].shape, name
            np.testing.assert_array_equal(got, want[name])
            assert got.flags.f_contiguous == want[name].flags.f_contiguous


def test_an_arrays_member_that_is_not_a_zip_is_refused(members, tmp_path):
    path = tmp_path / "arrays2.hlox"
    for bad in (b"", b"junk" * 100, members["arrays.npz"][:-10]):
        write_members(path, {**members, "arrays.npz": bad})
        refused(path, "arrays.npz")


# -- the manifest: one schema, every field class -----------------------------------------------------
DELETE = object()


def changed(manifest: dict, where: tuple, value) -> dict:
    m = json.loads(json.dumps(manifest))
    target = m
    for key in where[:-1]:
        target = target[key]
    if value is DELETE:
        del target[where[-1]]
    else:
        target[where[-1]] = value
    return m


WRONG = [
    (("format",), True, "format: expected an integer, got bool"),
    (("format",), -5, "format: expected an integer >= 1, got -5"),
    (("format",), "1", "format: expected an integer, got str"),
    (("saved_by",), ["jax"], "saved_by: expected an object, got list"),
    (("saved_by", "jax"), 10, "saved_by.jax: expected a string or null, got int"),
    (("spec",), None, "spec: expected an object, got null"),
    (("spec", "title"), 5, "spec.title: expected a string, got int"),
    (("spec", "inline"), "yes", "spec.inline: expected true or false, got str"),
    (("spec", "timeout"), "600", "spec.timeout: expected a number, got str"),
    (("spec", "timeout"), -1, "spec.timeout: expected a number >= 0"),
    (("spec", "device"), "", "spec.device: expected a non-empty string"),
    (("spec", "xla_options"), [["xla_cpu_enable_fast_math"]], "spec.xla_options[0]: expected 2 to 2 items, got 1"),
    (("spec", "disabled"), "dot_transpose", "spec.disabled: expected a list, got str"),
    (("spec", "pattern_options", "no_nan"), 1, "spec.pattern_options.no_nan: expected true or false, got int"),
    (("spec", "pattern_options", "transpose_propagate"), "sideways", "spec.pattern_options.transpose_propagate"),
    (("spec", "pattern_options", "max_constant_threshold"), 1.5, "max_constant_threshold: expected an integer"),
    (("spec", "pattern_options", "warp_drive"), True, "spec.pattern_options.warp_drive: is not a field"),
    (("early",), 10**6, "early: 1000000 stages"),
    (("early",), -1, "early: expected an integer >= 0"),
    (("stages",), {}, "stages: expected a list, got object"),
    (("stages", 0), "jaxpr", "stages[0]: expected an object, got str"),
    (("stages", 0, "name"), 7, "stages[0].name: expected a string, got int"),
    (("stages", 1, "name"), "jaxpr", "stages[1].name: 'jaxpr' is also stages[0]'s name"),
    (("stages", 3, "seconds"), "0.1", "stages[3].seconds: expected a number or null, got str"),
    (("stages", 3, "seconds"), float("inf"), "stages[3].seconds: expected a finite number"),
    (("stages", 1, "group"), "gpu", "stages[1].group: expected one of ['trace', 'mlir', 'xla', 'backend']"),
    (("stages", 1, "parent"), "nowhere", "stages[1].parent: 'nowhere' is not an earlier stage"),
    (("stages", 0, "parent"), "stablehlo", "stages[0].parent: 'stablehlo' is not an earlier stage"),
    (("stages", 0, "text"), "zz", "stages[0].text: expected [0-9a-f]{64}"),
    (("stages", 0, "text"), "0" * 64, "stages[0].text: names no text"),
    (("stages", 0, "changed"), None, "stages[0].changed: expected true or false, got null"),
    (("stages", 1, "cached"), DELETE, "stages[1].cached: missing"),
    (("stages", 1, "error"), ["x"], "stages[1].error: expected a string or null, got list"),
    # a stage's diff and shape, which only files of earlier workbenches carry (manifest.Legacy): their form is checked
    (("stages", 1, "diff"), "=3", "stages[1].diff: expected an object, got str"),
    (("stages", 1, "diff"), {"before": None, "after": None, "runs": "=3x"},
     "stages[1].diff.runs: expected (?:[-=~+<>]"),
    (("stages", 1, "diff"), {"before": None, "after": None, "runs": "=0"}, "stages[1].diff.runs: expected"),
    (("stages", 1, "diff"), {"before": None, "after": None}, "stages[1].diff.runs: missing"),
    (("stages", 1, "diff"), {"before": None, "after": "0" * 64, "runs": "=3"}, "stages[1].diff.after: names no text"),
    (("stages", 1, "normalized"), "zz", "stages[1].normalized: expected [0-9a-f]{64}"),
    (("input",), 3, "input: expected a string or null, got int"),
    (("pipeline_error",), {"stage": 1}, "pipeline_error.stage: expected a string, got int"),
    (("xla_error",), {"stage": "x", "produced_by": "y", "reason": "z", "why": 1}, "xla_error.why: is not a field"),
    (("xla",), ["algsimp"], "xla: expected an object or null, got list"),
    (("xla", "passes"), "algsimp", "xla.passes: expected a list, got str"),
    (("xla", "cost"), {"flops": "many"}, "xla.cost.flops: expected a number, got str"),
    (("xla", "options"), {"a": [1]}, "xla.options.a: expected null, a boolean, a number or a string, got list"),
    (("args",), "x", "args: expected a list, got str"),
    (("args", 0, "shape"), [-1], "args[0].shape[0]: expected an integer >= 0, got -1"),
    (("args", 0, "shape"), [1] * 65, "args[0].shape: expected 0 to 64 items"),
    (("args", 0, "dtype"), None, "args[0].dtype: expected a string, got null"),
    (("arrays",), "yes", "arrays: expected true or false, got str"),
    (("arrays_bytes",), -1, "arrays_bytes: expected an integer >= 0"),
    (("runs",), [{}], "runs[0].stage: missing"),
    (("runs", 0, "times"), [], "runs[0].times: expected 1 to 100000 items, got 0"),
    (("runs", 0, "times"), ["fast"], "runs[0].times[0]: expected a number, got str"),
    (("runs", 0, "outputs"), -1, "runs[0].outputs: expected an integer >= 0"),
    (("runs", 0, "stage"), "nowhere", "runs[0].stage: 'nowhere' is not a stage"),
    (("runs", 0, "check"), "passed", "runs[0].check: expected an object or null, got str"),
    (("runs", 0, "check", "leaves"), DELETE, "runs[0].check.leaves: missing"),
    (("runs", 0, "check", "passed"), True, "runs[0].check.passed: is not a field"),
    (("runs", 0, "check", "kind"), "float32", "runs[0].check.kind: expected one of ['float64', 'stage']"),
    (("runs", 0, "check", "leaves", 0, "shape"), "3", "runs[0].check.leaves[0].shape: expected a list, got str"),
    (("runs", 0, "check", "leaves", 0, "max_abs"), None, "runs[0].check.leaves[0].max_abs: expected a number"),
    (("runs", 0, "check", "leaves", 0, "passed"), DELETE, "runs[0].check.leaves[0].passed: missing"),
    (("runs", 0, "program", "text_sha256"), DELETE, "runs[0].program.text_sha256: missing"),
    (("runs", 0, "program", "xla_options"), [["a"]], "runs[0].program.xla_options[0]: expected 2 to 2 items, got 1"),
    (("runs", 0, "program", "colour"), "red", "runs[0].program.colour: is not a field"),
    (("runs", 0, "earlier"), "yes", "runs[0].earlier: expected true or false, got str"),
    (("texts",), None, "texts: expected a list, got null"),
    (("texts", 0, "offset"), 5, "texts[0].offset: expected 0, got 5"),
    (("texts", 1, "offset"), 0, "texts[1].offset: expected"),
    (("texts", 0, "length"), 0, "texts[0].length: expected an integer >= 1"),
    (("texts", 0, "sha256"), 42, "texts[0].sha256: expected a string, got int"),
    (("texts_bytes",), "16k", "texts_bytes: expected an integer, got str"),
    (("texts_bytes",), 1, "texts_bytes: the texts' index covers"),
    (("texts_sha256",), "abc", "texts_sha256: expected [0-9a-f]{64}"),
    (("cost",), "table", "cost: expected an object or null, got str"),
    (("cost", "rows", 0), [1, 2], "cells, got 2"),
    (("cost", "rows", 0, 0), {"stage": "jaxpr"}, "cost.rows[0][0]: expected null, a boolean, a number or a string"),
    (("profiles",), "fast", "profiles: expected an object, got str"),
    (("compile_time",), "fast", "compile_time: expected an object, got str"),
    (("compile_time",), {"seconds": 1.0}, "compile_time.bare_seconds: missing"),
    (("compile_time",), {"seconds": -1.0, "bare_seconds": 1.0, "pipeline_seconds": 0.0, "xla_seconds": 0.0,
                         "repeat": 3}, "compile_time.seconds: expected a number >= 0"),
    (("signature",), "mm", "signature: expected an object or null, got str"),
    (("signature", "function"), 3, "signature.function: expected a string or null, got int"),
    (("signature", "args", 0, "shape"), [-2], "signature.args[0].shape[0]: expected an integer >= 0, got -2"),
    (("signature", "args", 0, "kind"), "leaf", "signature.args[0].kind: is not a field"),
    (("profiles",), {"gpu": {}}, "profiles.gpu: is not a field"),
    (("profiles",), {"run": {"stage": "x"}}, "profiles.run.device: missing"),
    (("profiles",), {"compile": {"total_s": 1, "explore_s": 1, "xla_wall_s": 1, "table": {"columns": [], "rows": []},
                                 "trace": "../../etc/passwd"}},
     "profiles.compile.trace: expected one of ['profile_compile.xplane.pb']"),
    (("stages", 0, "name"), "\ud800", "stages[0].name: holds a lone surrogate"),
    (("spec", "title"), "ab\udfff", "spec.title: holds a lone surrogate"),
    (("saved_by",), {"\udc80": "x"}, "lone surrogate"),
]


@pytest.mark.parametrize("where, value, words", WRONG, ids=[f"{'.'.join(map(str, w))}={v!r:.20}" for w, v, _ in WRONG])
def test_a_manifest_field_of_the_wrong_type_or_range_is_named(members, manifest, tmp_path, where, value, words):
    m = changed(manifest, where, value)
    assert json.dumps(m) != json.dumps(manifest)
    path = tmp_path / "field.hlox"
    write_members(path, with_manifest(members, m))
    err = refused(path, "corrupt manifest.json: ", words)
    assert str(path) in str(err)


def test_every_field_class_of_the_schema_is_exercised():
    kinds = set()

    def walk(node):
        kinds.add(type(node).__name__)
        for child in (getattr(node, "item", None), getattr(node, "value", None), getattr(node, "inner", None)):
            if child is not None:
                walk(child)
        for child in [*getattr(node, "required", {}).values(), *getattr(node, "optional", {}).values()]:
            walk(child)

    walk(schema.MANIFEST)
    assert kinds == {"Record", "Int", "Str", "Map", "Opt", "Bool", "Num", "List", "Scalar", "Legacy"}
    named = {w[0] for w, _, _ in WRONG}
    assert named == (set(schema.MANIFEST.required) | set(schema.MANIFEST.optional)) - {"kind"}


def test_kind_and_format_say_what_the_file_is(members, manifest, tmp_path):
    path = tmp_path / "kind.hlox"
    write_members(path, with_manifest(members, changed(manifest, ("kind",), "something else")))
    refused(path, "not a saved exploration", "not an hlo-workbench one")
    write_members(path, with_manifest(members, [manifest]))
    refused(path, "not an hlo-workbench one")
    newer = changed(changed(manifest, ("format",), 7), ("saved_by",), ["not", "an", "object"])
    newer["stages"] = "a newer file may look different"
    write_members(path, with_manifest(members, newer))
    refused(path, "format 7", "upgrade hlo-workbench", "a newer version")


@pytest.mark.parametrize("text, words", [
    ('{"kind": "hlo-workbench exploration", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests 100001 levels"),
    ('{"a": ' * 50 + "1" + "}" * 50, "nests 50 levels"),
    ("[" + "[]," * 4_500_000 + "0]", "at most 4,000,000"),
    ('{"format": 1, "format": 1}', "the key 'format' twice"),
    ('{"format": ' + "9" * 5000 + "}", "cannot be read"),
    ('{"format": 1,', "is not JSON"),
    (b'{"title": "\xed\xa0\x80"}', "not UTF-8"),
    (b'{"title": "\xff"}', "not UTF-8"),
    ("", "is not JSON"),
])
def test_a_manifest_that_is_not_plain_json_is_refused_before_json_recurses(members, tmp_path, text, words):
    path = tmp_path / "json.hlox"
    write_members(path, with_manifest(members, text))
    refused(path, "corrupt manifest.json", words)


def test_a_stage_text_that_is_not_utf8_is_refused(members, manifest, tmp_path):
    import hashlib

    blob = zstandard.ZstdDecompressor().decompress(members["texts.zst"])
    first = manifest["texts"][0]
    bad = b"\xff" * first["length"]
    blob = bad + blob[first["length"]:]
    m = changed(manifest, ("texts", 0, "sha256"), hashlib.sha256(bad).hexdigest())
    m["texts_sha256"] = hashlib.sha256(blob).hexdigest()
    for s in m["stages"]:
        for holder, key in [(s, "text"), (s, "located"), *((s["diff"], k) for k in ("before", "after") if "diff" in s)]:
            if holder.get(key) == first["sha256"]:
                holder[key] = m["texts"][0]["sha256"]
    path = tmp_path / "latin.hlox"
    write_members(path, {**with_manifest(members, m), "texts.zst": zstandard.ZstdCompressor().compress(blob)})
    refused(path, "not UTF-8")


# -- fuzzing: whatever the damage, a SavedFileError or a good load -------------------------------------
def loads_or_refuses(path) -> bool:
    try:
        wb.load(path)
        return True
    except SavedFileError as e:
        assert "passed its checks" not in str(e), str(e)
        return False


def test_every_byte_of_the_zip_structure_flipped_loads_or_is_refused(good, tmp_path):
    data = good.read_bytes()
    with zipfile.ZipFile(good) as z:
        headers = [(i.header_offset, i.header_offset + 30 + len(i.filename)) for i in z.infolist()]
    (directory,) = struct.unpack_from("<L", data, data.rindex(b"PK\x05\x06") + 16)
    spots = [p for a, b in headers for p in range(a, b)] + list(range(directory, len(data)))
    path = tmp_path / "flip.hlox"
    outcomes = []
    for p in spots:
        flipped = bytearray(data)
        flipped[p] ^= 0xFF
        path.write_bytes(bytes(flipped))
        outcomes.append(loads_or_refuses(path))
    assert len(outcomes) > 250 and not all(outcomes)


def test_manifest_text_garbled_at_random_loads_or_is_refused(members, tmp_path):
    text = members["manifest.json"].decode()
    rng = random.Random(25)
    path = tmp_path / "garbled.hlox"
    refusals = 0
    for _ in range(300):
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice('[]{}",:0123456789-.etfn \\')
        write_members(path, with_manifest(members, "".join(chars)))
        refusals += not loads_or_refuses(path)
    assert refusals >= 100


# -- saving arrays: streamed, bounded, refused past the limit ----------------------------------------
def test_saving_a_200_mb_array_streams_it(tmp_path):
    x = jnp.zeros(50_000_000, jnp.float32)  # 200 MB
    ex = wb.explore(lambda x: x * 2, x, pipeline="canonicalize")
    ex.stages  # compile first: the save is what is measured
    gc.collect()
    tracemalloc.start()
    try:
        path = ex.save(tmp_path / "big.hlox", arrays=True, cost=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"save(arrays=True) of a 200 MB argument: peak {peak / MiB:.1f} MiB traced, file {path.stat().st_size:,} bytes")
    assert peak < 64 * MiB, peak  # numpy's 16 MiB pieces and their copies, never the 200 MB
    with zipfile.ZipFile(path) as z:
        assert json.loads(z.read("manifest.json"))["arrays_bytes"] == 200_000_000
    back = wb.load(path)
    arg = back.spec.loaded.args[0]
    assert arg.shape == (50_000_000,) and arg.dtype == np.float32 and not arg.any()


def test_arrays_over_the_limit_are_refused_and_the_old_file_stays(good, tmp_path):
    ex = wb.load(good)
    path = tmp_path / "keep.hlox"
    path.write_bytes(good.read_bytes())
    with pytest.raises(SavedFileError) as e:
        saved.save_exploration(ex, path, arrays=True, arrays_limit=20)
    assert "24 bytes, over the limit of 20 bytes" in str(e.value) and "nothing was written" in str(e.value)
    assert path.read_bytes() == good.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["keep.hlox"]


def test_a_broadcast_view_is_refused_by_its_logical_size_without_touching_it(good, tmp_path):
    built = saved.load_exploration(good).built
    huge = np.broadcast_to(np.float32(1), (10_000_000_000,))  # 40 GB to numpy, 4 bytes of memory
    loaded = dataclasses.replace(built.spec.loaded, args=(huge,), avals=(((10_000_000_000,), "float32"),))
    ex = Exploration(dataclasses.replace(built, spec=dataclasses.replace(built.spec, source=loaded)))
    path = tmp_path / "keep.hlox"
    path.write_bytes(good.read_bytes())
    gc.collect()
    tracemalloc.start()
    try:
        with pytest.raises(SavedFileError) as e:
            ex.save(path, arrays=True, cost=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "40,000,000,000 bytes" in str(e.value) and f"{saved.ARRAYS_LIMIT:,} bytes" in str(e.value)
    assert peak < SLACK, peak
    assert path.read_bytes() == good.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["keep.hlox"]


def test_a_manifest_that_would_not_read_back_is_not_written(tmp_path):
    ex = wb.explore_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n",
                         pipeline="canonicalize", title="half a pair \ud800")
    with pytest.raises(SavedFileError) as e:
        ex.save(tmp_path / "t.hlox", cost=False)
    assert "spec.title: holds a lone surrogate" in str(e.value) and "nothing was written" in str(e.value)
    assert os.listdir(tmp_path) == []


# -- the same description as a JSON Schema, for readers in other languages -------------------------------
def test_the_committed_json_schema_is_the_manifests_description(manifest):
    """workbench/assets/hlox-manifest.schema.json is made from MANIFEST (json_schema()), never edited by hand;
    a good file's manifest passes it under a real JSON Schema validator."""
    import importlib.resources

    import jsonschema

    committed = json.loads(importlib.resources.files("workbench.assets").joinpath("hlox-manifest.schema.json")
                           .read_text())
    assert committed == schema.json_schema(), (
        "regenerate it: python -c 'import json; from workbench.artifacts.manifest import json_schema; "
        "print(json.dumps(json_schema(), indent=1))' > workbench/assets/hlox-manifest.schema.json")
    jsonschema.Draft202012Validator.check_schema(committed)
    jsonschema.Draft202012Validator(committed).validate(manifest)


@pytest.mark.parametrize("where, value, words", WRONG, ids=[f"{'.'.join(map(str, w))}={v!r:.20}" for w, v, _ in WRONG])
def test_the_json_schema_refuses_what_the_field_description_refuses(manifest, where, value, words):
    """Each wrong field the loader names is refused by the JSON Schema too, and each manifest that passes the
    field description but breaks a rule between fields (check_manifest's) passes the JSON Schema: the two
    say the same of every field. JSON has no lone surrogates and no infinities, so those cases are Python's."""
    import jsonschema

    m = changed(manifest, where, value)
    if "surrogate" in words or (isinstance(value, float) and not np.isfinite(value)):
        pytest.skip("not expressible in JSON Schema: checked by the loader alone")
    try:
        schema.check(schema.MANIFEST, m, "")
        field_wrong = False
    except schema.ManifestError:
        field_wrong = True
    errors = list(jsonschema.Draft202012Validator(schema.json_schema()).iter_errors(m))
    assert bool(errors) == field_wrong, (words, [e.message for e in errors])
