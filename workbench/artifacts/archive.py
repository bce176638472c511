"""Reading a zip archive a user may have been handed, within limits: the ``.hlox`` file and the
``arrays.npz`` inside it.

Every size a zip declares is a hint, never a licence to allocate: a member whose declared size is
over its limit is refused before a byte of it is read, and every member is read in pieces of at most
``PIECE`` bytes, counted, and refused as soon as the count passes the limit (zipfile itself stops at
the declared size and checks the CRC there). Before zipfile parses the central directory, its size
and entry count are read from the end record and bounded: a directory of millions of entries would
otherwise become gigabytes of ZipInfo objects. Member names must be plain file names (no folders,
no ``..``, no absolute paths), each at most once; members must be stored or deflated (bzip2 and lzma
decompress without a bound per read), never encrypted.

``read_npy`` reads one ``.npy`` member itself rather than through ``np.load``, which allocates the
array its header declares before reading any data: the header (at most ``NPY_HEADER_LIMIT`` bytes,
numpy's own fixed layout, no ``eval``) gives shape and dtype, their product is checked against the
room left, and only then is the array allocated and filled piece by piece. ``unpack_zstd``
decompresses one zstd frame through a streaming reader to exactly the size the caller expects,
refusing a frame that declares another size, needs a larger window than ``ZSTD_WINDOW_LIMIT``, or
goes on past the size.

Failures are ArchiveError (a ValueError) saying which member and why; ``saved.py`` turns them into
SavedFileError with the file's path.
"""
from __future__ import annotations

import math
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

__all__ = ["ArchiveError", "PIECE", "NPY_HEADER_LIMIT", "ZSTD_WINDOW_LIMIT", "size_text", "open_zip", "read_member",
           "copy_member", "read_npy", "unpack_zstd", "READ_ERRORS"]

PIECE = 1 << 20  # bytes read (or decompressed) at a time
NPY_HEADER_LIMIT = 4096  # numpy writes 128 bytes for an array of a few dimensions
ZSTD_WINDOW_LIMIT = 1 << 27  # the largest window saved.py's writer uses (window_log 27)

# what zipfile, zlib and the file system raise on a damaged archive, caught wherever one is read
READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError,
               struct.error, NotImplementedError, RuntimeError, OverflowError)

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")
_EOCD = struct.Struct("<4s4H2LH")
_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


class ArchiveError(ValueError):
    """A zip archive, or a member of it, that is refused: what and why are in the message."""


def size_text(n: int) -> str:
    """``n`` bytes, exactly and roughly: ``1,073,741,824 bytes (1.0 GiB)``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n:,} bytes ({n / scale:.1f} {unit})"
    return f"{n:,} bytes"


def _directory(fp: BinaryIO) -> tuple[int, int] | None:
    """(entries, bytes) of the central directory, as the end record says; None without an end
    record (zipfile then says what is wrong). A zip64 record whose location is garbled leaves the
    32-bit values, which are 0xFFFF... and so refused as too large."""
    fp.seek(0, 2)
    size = fp.tell()
    tail_len = min(size, _EOCD.size + 0xFFFF)
    fp.seek(size - tail_len)
    tail = fp.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return None
    _, _, _, _, entries, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
    if (entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF) and at >= _LOCATOR.size:
        sig, _, where, _ = _LOCATOR.unpack_from(tail, at - _LOCATOR.size)
        if sig == b"PK\x06\x07" and where < size:
            fp.seek(where)
            record = fp.read(_EOCD64.size)
            if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
                fields = _EOCD64.unpack(record)
                entries, cd_size = fields[7], fields[8]
    return entries, cd_size


def open_zip(file: str | Path | BinaryIO, what: str, max_entries: int) -> zipfile.ZipFile:
    """``file`` as a ZipFile whose directory holds at most ``max_entries`` entries, each a plain file
    name, once, stored or deflated, not encrypted. ``what`` names the archive in messages."""
    def directory(fp: BinaryIO) -> tuple[int, int] | None:
        try:
            return _directory(fp)
        except (OSError, ValueError, struct.error) as e:
            raise ArchiveError(f"{what} cannot be read ({e})") from None

    if isinstance(file, (str, Path)):
        with open(file, "rb") as fp:
            found = directory(fp)
    else:
        found = directory(file)
    if found is not None:
        entries, cd_size = found
        most = max_entries * (46 + 255 + 64)  # an entry: fixed part, a name, a zip64 extra field
        if entries > max_entries or cd_size > most:
            raise ArchiveError(f"{what}'s directory lists {entries:,} members in {size_text(cd_size)}; it may list at "
                               f"most {max_entries} in {size_text(most)}")
    try:
        z = zipfile.ZipFile(file)
    except READ_ERRORS as e:
        raise ArchiveError(f"{what} is not a readable zip archive ({type(e).__name__}: {e})") from None
    try:
        seen: set[str] = set()
        for info in z.infolist():
            name = info.filename
            if not _NAME.fullmatch(name) or ".." in name:
                raise ArchiveError(f"{what} holds a member named {name[:100]!r}, not a plain file name (no folders, "
                                   "no '..', no absolute paths)")
            if name in seen:
                raise ArchiveError(f"{what} holds the member {name!r} twice")
            seen.add(name)
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ArchiveError(f"{what}'s member {name!r} uses compression method {info.compress_type}; only "
                                   "stored (0) and deflated (8) members are read")
            if info.flag_bits & 0x1:
                raise ArchiveError(f"{what}'s member {name!r} is encrypted")
    except BaseException:
        z.close()
        raise
    return z


def _pieces(z: zipfile.ZipFile, name: str, limit: int, what: str):
    """The member's bytes, in pieces, refused past ``limit`` (declared or counted)."""
    info = z.getinfo(name)
    if info.file_size > limit:
        raise ArchiveError(f"{what} is {size_text(info.file_size)} uncompressed, over the limit of "
                           f"{size_text(limit)}; refused without reading it")
    seen, hint = 0, info.file_size  # zipfile returns no more than declared; asking for no more keeps pieces small
    try:
        with z.open(info) as f:
            while True:
                piece = f.read(max(1, min(PIECE, hint - seen, limit + 1 - seen)))
                if not piece:
                    return
                seen += len(piece)
                if seen > limit:
                    raise ArchiveError(f"{what} goes on past {size_text(limit)}, its limit; refused after reading "
                                       f"{size_text(seen)}")
                yield piece
    except ArchiveError:
        raise
    except READ_ERRORS as e:
        raise ArchiveError(f"{what} is corrupt or truncated ({type(e).__name__}: {e})") from None


def read_member(z: zipfile.ZipFile, name: str, limit: int, what: str) -> bytes:
    """The member ``name``'s bytes, refused (ArchiveError) past ``limit`` of them."""
    out = bytearray()
    for piece in _pieces(z, name, limit, what):
        out += piece
    return bytes(out)


def copy_member(z: zipfile.ZipFile, name: str, out: BinaryIO, limit: int, what: str) -> int:
    """Write the member ``name`` into ``out``, refused past ``limit`` bytes; returns the bytes written."""
    n = 0
    for piece in _pieces(z, name, limit, what):
        out.write(piece)
        n += len(piece)
    return n


_HEADER = re.compile(r"\{'descr': '([<>|=]?[A-Za-z][A-Za-z0-9]{0,15}(?:\[[A-Za-z0-9]{1,8}\])?)', "
                     r"'fortran_order': (True|False), 'shape': \(((?:\d{1,19}, )*(?:\d{1,19},?)?)\), \} *\n")


def _exactly(f, n: int, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ArchiveError(f"{what} is truncated")
    return data


def read_npy(z: zipfile.ZipFile, name: str, room: int, room_said: str, what: str) -> np.ndarray:
    """The array in the ``.npy`` member ``name``, refused when its bytes pass ``room`` (``room_said``
    says what that room is), before it is allocated."""
    info = z.getinfo(name)
    try:
        with z.open(info) as f:
            head = _exactly(f, 10, what)
            if head[:6] != b"\x93NUMPY" or head[6] not in (1, 2, 3):
                raise ArchiveError(f"{what} is not a .npy array of a version numpy writes")
            if head[6] == 1:
                length, start = struct.unpack("<H", head[8:10])[0], 10
            else:
                length, start = struct.unpack("<I", head[8:10] + _exactly(f, 2, what))[0], 12
            if length > NPY_HEADER_LIMIT:
                raise ArchiveError(f"{what} has a header of {size_text(length)}; at most {NPY_HEADER_LIMIT} are read")
            header = _exactly(f, length, what).decode("utf-8" if head[6] == 3 else "latin1")
            m = _HEADER.fullmatch(header)
            if m is None:
                raise ArchiveError(f"{what} has a header that is not numpy's: {header[:120]!r}")
            try:
                dtype = np.dtype(m.group(1))
            except TypeError as e:
                raise ArchiveError(f"{what} has a dtype numpy does not know ({m.group(1)!r}: {e})") from None
            shape = tuple(int(d) for d in re.findall(r"\d+", m.group(3)))
            if dtype.hasobject:
                raise ArchiveError(f"{what} holds Python objects (dtype {dtype}); only plain arrays are read, "
                                   "never pickles")
            count = math.prod(shape)
            if dtype.itemsize == 0 and count:
                raise ArchiveError(f"{what} is an array of {count:,} items of no size (dtype {dtype})")
            size = count * dtype.itemsize
            if size > room:
                raise ArchiveError(f"{what} is {dtype}{list(shape)}, {size_text(size)}, more than {room_said}; "
                                   "refused before allocating it")
            if info.file_size != start + length + size:
                raise ArchiveError(f"{what} declares {size_text(info.file_size)} for an array of "
                                   f"{size_text(size)} after a {start + length}-byte header")
            data = np.empty(size, np.uint8)
            with memoryview(data) as view:
                at = 0
                while at < size:
                    n = f.readinto(view[at: at + PIECE])
                    if not n:
                        raise ArchiveError(f"{what} is truncated: {size_text(at)} of {size_text(size)}")
                    at += n
            if f.read(1):
                raise ArchiveError(f"{what} holds more bytes than its array")
    except ArchiveError:
        raise
    except READ_ERRORS as e:
        raise ArchiveError(f"{what} is corrupt or truncated ({type(e).__name__}: {e})") from None
    return data.view(dtype).reshape(shape, order="F" if m.group(2) == "True" else "C")


def unpack_zstd(packed: bytes, size: int, what: str) -> bytearray:
    """The one zstd frame in ``packed``, decompressed: exactly ``size`` bytes, or ArchiveError."""
    import zstandard

    try:
        declared = zstandard.frame_content_size(packed)
        if declared != -1 and declared != size:
            raise ArchiveError(f"{what}'s zstd frame declares {size_text(declared)}, where the manifest says "
                               f"{size_text(size)}; refused before decompressing")
        reader = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW_LIMIT).stream_reader(
            packed, read_across_frames=False)
        out = bytearray()
        while True:
            piece = reader.read(min(PIECE, size + 1 - len(out)))  # never more than one byte past the size
            if not piece:
                break
            out += piece
            if len(out) > size:
                raise ArchiveError(f"{what} decompresses past the {size_text(size)} the manifest says; refused "
                                   f"after {size_text(len(out))}")
    except ArchiveError:
        raise
    except (zstandard.ZstdError, ValueError, OSError) as e:
        raise ArchiveError(f"{what} is corrupt or truncated (zstd: {e})") from None
    if len(out) != size:
        raise ArchiveError(f"{what} is truncated: it decompresses to {size_text(len(out))} of the {size_text(size)} "
                           "the manifest says")
    return out
