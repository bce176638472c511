"""The one encoder of what the workbench writes for a reader without a kernel -- a ``.hlox``'s
manifest, a panel's saved bundle, a report's data -- and the one way those files are written.

``plain_json`` turns a value into the plain data ``json.dumps`` writes: numpy scalars and arrays
become numbers and lists, tuples lists, dataclasses dicts of their fields, and anything else is
refused with the path of the field that holds it (so a save says which field it could not write,
not only that one exists). ``table_json`` does the same for a DataFrame, cell by cell.
``write_replacing`` writes a file whole or not at all: into a temporary file beside it, renamed
over it at the end, so a crash mid-write leaves the old file as it was.
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

__all__ = ["plain_json", "json_text", "table_json", "write_replacing"]


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
        v = plain_json(v, at)
        return None if isinstance(v, float) and not math.isfinite(v) else v

    columns = [str(c) for c in df.columns]
    return {"columns": columns, "rows": [[cell(v, f"{where}[{r}].{c}") for v, c in zip(row, columns)]
                                         for r, row in enumerate(df.itertuples(index=False))]}


def write_replacing(path: Path, write: Callable[[BinaryIO], None], mode: int | None = None,
                    cannot_open: Callable[[OSError], BaseException] | None = None) -> Path:
    """Write ``path``'s new content with ``write(file)`` into a temporary file in the same folder,
    then rename it over ``path`` (``mode``: its permissions, else those ``path`` has, or a new file's
    under the process umask -- never mkstemp's 0600, which nobody else could read); if anything
    raises, the temporary file goes and ``path`` stays as it was. ``cannot_open(error)`` is raised
    instead when the temporary file cannot be made. Returns the path."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        if cannot_open is None:
            raise
        raise cannot_open(e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _new_file_mode(path) if mode is None else mode)
        os.replace(tmp, path)
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
