"""The one encoder of what the workbench writes for a reader without a kernel -- a ``.hlox``'s
manifest, a panel's saved bundle, a report's data -- and the one way those files are written.

``plain_json`` turns a value into the plain data ``json.dumps`` writes: numpy scalars and arrays
become numbers and lists, tuples lists, dataclasses dicts of their fields, and anything else is
refused with the path of the field that holds it (so a save says which field it could not write,
not only that one exists). ``table_json`` does the same for a DataFrame, cell by cell.
``write_replacing`` writes a file whole or not at all: into a temporary file beside it, renamed
over it at the end, so a crash mid-write leaves the old file as it was; through a symbolic link to the
file it leads to, and never over a folder, a FIFO, a device or a socket (``WriteFailed`` says so).
"""
from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

__all__ = ["WriteFailed", "plain_json", "json_text", "rows_json", "table_json", "target_of", "write_replacing"]


def plain_json(value: Any, where: str = "", allow_nan: bool = True) -> Any:
    """``value`` as the plain data ``json.dumps`` writes: None, bools, ints, floats, strings, lists
    and dicts with string keys. numpy scalars become Python numbers, numpy arrays (nested) lists,
    tuples lists, dataclass instances dicts of their fields. NaN and infinities stay floats where
    ``allow_nan`` (json writes them as ``NaN``/``Infinity``, which Python reads back, a browser's
    JSON.parse not), else are a ValueError. Anything else is a TypeError; both name the field that
    holds the value, as a path from ``where`` (``manifest.runs[0].check.leaves[1].tolerance``)."""
    import numpy as np

    def convert(v: Any, at: str) -> Any:
        if v is None or type(v) in (bool, str, int):
            return v
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, str):
            return str(v)
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            f = float(v)
            if not allow_nan and not math.isfinite(f):
                raise ValueError(f"{at or 'the value'} is {f}, which strict JSON has no form for")
            return f
        if isinstance(v, np.ndarray):
            return convert(v.tolist(), at)
        if isinstance(v, np.generic):
            return convert(v.item(), at)
        if isinstance(v, (list, tuple)):
            return [convert(x, f"{at}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"{at or 'the value'} has a key {k!r} of type {type(k).__name__}; "
                                    "JSON keys are strings")
                out[str(k)] = convert(x, f"{at}.{k}" if at else k)
            return out
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {f.name: convert(getattr(v, f.name), f"{at}.{f.name}" if at else f.name)
                    for f in dataclasses.fields(v)}
        raise TypeError(f"{at or 'the value'} holds a {type(v).__module__}.{type(v).__qualname__} ({v!r:.80}), "
                        "which has no JSON form")

    return convert(value, where)


def json_text(value: Any, where: str = "", allow_nan: bool = True, **dumps: Any) -> str:
    """``json.dumps`` of ``plain_json(value, where, allow_nan)``: the text every manifest, bundle and
    report writes; ``dumps``: json.dumps's layout options (separators, ensure_ascii, indent)."""
    return json.dumps(plain_json(value, where, allow_nan), allow_nan=allow_nan, **dumps)


def table_json(df, where: str = "table") -> dict | None:
    """A DataFrame as ``{"columns": [...], "rows": [[...], ...]}``, JSON-safe: NaN and NA are null,
    other cells as ``plain_json`` makes them (what a viewer without a kernel reads); ``where`` names
    the table in the error about a cell that has no JSON form."""
    if df is None:
        return None

    import pandas as pd

    def cell(v, at: str):
        try:
            if v is None or pd.isna(v):
                return None
        except (TypeError, ValueError):  # pd.isna of a list-like cell
            pass
        return _cell(v, at)

    columns = [str(c) for c in df.columns]
    return {"columns": columns, "rows": [[cell(v, f"{where}[{r}].{c}") for v, c in zip(row, columns)]
                                         for r, row in enumerate(df.itertuples(index=False))]}


def rows_json(columns: list[str], rows: list[dict], where: str = "table") -> dict:
    """Rows given as dicts (a column a row lacks is blank) as ``table_json`` writes a table, without pandas:
    NaN is null, other cells as ``plain_json`` makes them."""
    return {"columns": list(columns), "rows": [[_cell(row.get(c), f"{where}[{r}].{c}") for c in columns]
                                               for r, row in enumerate(rows)]}


def _cell(v, at: str):
    """A table's cell as plain JSON (``plain_json``), a NaN or infinity as null."""
    v = plain_json(v, at)
    return None if isinstance(v, float) and not math.isfinite(v) else v


class WriteFailed(OSError):
    """What ``write_replacing`` could not do, in words: ``path`` is the path it was given (never its
    temporary file), ``reason`` says what failed (``it is a FIFO (named pipe), not a regular file``,
    ``the folder 'out' does not exist``, ``writing it failed (No space left on device)``); whatever was
    at ``path`` is as it was. ``errno`` is the underlying error's, where there was one."""

    def __init__(self, path, reason: str, errno: int | None = None):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.errno = str(path), reason, errno


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a loop of symbolic links"))


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def target_of(path: Path) -> Path:
    """The file writing ``path`` replaces: ``path`` itself, or where its symbolic links lead. WriteFailed
    when that is there and is anything but a regular file (a folder, a FIFO, a device, a socket), which
    a write must never replace with a file of its own."""
    try:
        linked = stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return path  # nothing there: a new file
    except OSError as e:
        raise WriteFailed(path, f"cannot look at it ({e.strerror or e})", e.errno) from None
    real = Path(os.path.realpath(path))
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        return real  # a symbolic link to a file not made yet: it is made where the link leads
    except OSError as e:
        raise WriteFailed(path, f"cannot look at {str(real)!r}, where it leads ({e.strerror or e})", e.errno) from None
    if stat.S_ISREG(mode):
        return real
    what = f"it is a symbolic link to {str(real)!r}, which is {_kind(mode)}" if linked and not stat.S_ISLNK(mode) \
        else f"it is {_kind(mode)}"
    raise WriteFailed(path, f"{what}, not a regular file; nothing was written to it (give the path of a file)")


def write_replacing(path: Path, write: Callable[[BinaryIO], None], mode: int | None = None) -> Path:
    """Write ``path``'s new content with ``write(file)`` into a temporary file in the same folder,
    then rename it over ``path`` (``mode``: its permissions, else those ``path`` has, or a new file's
    under the process umask -- never mkstemp's 0600, which nobody else could read); if anything
    raises, the temporary file goes and ``path`` stays as it was. A symbolic link is written through:
    the file it leads to is replaced (the temporary file beside it), the link stays. Returns ``path``.

    WriteFailed, in words naming ``path``, when it is not a regular file or a missing one
    (``target_of``), when no file can be made in its folder, or when writing or renaming fails."""
    target = target_of(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except FileNotFoundError as e:
        raise WriteFailed(path, f"the folder {str(folder)!r} does not exist", e.errno) from None
    except OSError as e:
        raise WriteFailed(path, f"cannot make a file in the folder {str(folder)!r} ({e.strerror or e})",
                          e.errno) from None
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, _new_file_mode(target) if mode is None else mode)
            os.replace(tmp, target)
        except OSError as e:
            if isinstance(e, WriteFailed):
                raise
            raise WriteFailed(path, f"writing it failed ({e.strerror or e}); what was at the path, if anything, "
                              "is as it was", e.errno) from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def _new_file_mode(path: Path) -> int:
    """The permissions ``open(path, "w")`` would leave: an existing file's own, else 0666 less the umask
    (read from /proc where it can be, as setting the umask to read it is not thread-safe)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask
