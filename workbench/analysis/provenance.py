"""Provenance: from a line of the user's Python to the ops it became, in every stage down to XLA's fusions.

* ``op_locations(stage)`` -- one row per op of a stage (MLIR: its ``loc(...)``; XLA HLO: its metadata):
  op, result, func, fusion, file, line, column, function, name (the name stack), origins.
* ``source_map(stages, by)`` -- one row per source line (or function) of the user's code: the ops, flops
  and bytes it accounts for in each stage given, and for an XLA stage the fusions that hold it.
* ``lineage(stages, stage, op)`` -- an op's counterparts in every stage: the ops with an origin in common.

An op counts towards the line of its first origin's innermost frame outside the workbench's own package
(frames there are how the workbench called JAX: a constant JAX made at the function's boundary has no
line of the user's). An op with none counts in the ``(no location)`` row, so every stage's per-line
totals add up to its total. MLIR stages are costed by the analytic model (``op_costs``), XLA stages by
XLA's HloCostAnalysis per entry instruction (``hlo_op_costs``): a fusion counts at its own line (XLA
writes its root's), and every line with an instruction inside it lists it under ``fusions``.
"""
from __future__ import annotations

import linecache
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UnknownNameError, WorkbenchError
from ..ir.locations import (
    Frame,
    OpLocation,
    Origin,
    call_sites,
    hlo_instruction_locations,
    mlir_op_locations,
    read_location,
    user_frame,
)
from ..stages import Stage
from .cost import hlo_op_costs, located_op_costs

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["LOCATION_COLUMNS", "NO_LOCATION", "lineage", "op_locations", "source_map", "stage_ops", "users_frame"]

NO_LOCATION = "(no location)"
LOCATION_COLUMNS = ("op", "result", "func", "fusion", "text_line", "file", "line", "column", "function", "name",
                    "origins")
_PACKAGE = Path(__file__).resolve().parents[1]
_TOOL_DIRS = (str(_PACKAGE) + "/",)  # the workbench's own frames are not the user's ...
_USER_DIRS = (str(_PACKAGE / "examples") + "/",)  # ... but its built-in examples are user code


def _kind(stage: Stage) -> str:
    """"mlir" or "hlo": how a stage's ops carry their locations; WorkbenchError for a stage without ops."""
    if stage.error:
        raise WorkbenchError(f"stage {stage.name!r} failed, so it has no ops to locate: {stage.error.splitlines()[0]}")
    if stage.group in ("trace", "mlir") and stage.name != "jaxpr":
        return "mlir"
    if stage.group == "xla" or (stage.group == "backend" and "HloModule" in stage.text[:200]):
        return "hlo"
    raise WorkbenchError(f"stage {stage.name!r} ({stage.group}) holds no ops with locations: locations are read "
                         "from the MLIR stages (their loc(...)) and XLA's HLO stages (their metadata)")


def _ops(stage: Stage) -> tuple[OpLocation, ...]:
    if _kind(stage) == "mlir":
        return mlir_op_locations(stage.text_with_locations or stage.text)
    return hlo_instruction_locations(stage.text)


def _frame(origins: Sequence[Origin]) -> tuple[Frame | None, Origin | None]:
    """The user's frame an op counts at (see the module's docstring) and the origin it is in."""
    for o in origins:
        f = user_frame(o, _TOOL_DIRS, _USER_DIRS)
        if f is not None:
            return f, o
    return None, (origins[0] if origins else None)


def _require_locations(stage: Stage, ops: Sequence[OpLocation]) -> None:
    if ops and not any(_frame(o.origins)[0] for o in ops):
        raise WorkbenchError(
            f"stage {stage.name!r} has no source locations: none of its {len(ops)} ops says which line of "
            "Python made it (a module given as text without loc(...) -- explore_text of a stripped module, "
            "wb.opt's output -- or one whose locations a tool dropped); trace the function with wb.explore "
            "to get them")


def stage_ops(stage: Stage) -> tuple[OpLocation, ...]:
    """Every op of ``stage`` (MLIR ops, or HLO instructions with those of fused computations) with its origins."""
    return _ops(stage)


def users_frame(origin: Origin) -> Frame | None:
    """The frame of the user's code an origin counts at (the workbench's own frames skipped, its examples
    kept), or None."""
    return user_frame(origin, _TOOL_DIRS, _USER_DIRS)


def op_locations(stage: Stage) -> pd.DataFrame:
    """One row per op of ``stage`` (MLIR ops, or XLA HLO instructions, those of fused computations too):
    ``op, result, func, fusion, text_line, file, line, column, function, name, origins`` -- ``text_line`` its
    line in the stage's text (0-based), ``file``/``line``/``column``/
    ``function`` the user's frame it counts at (empty and 0 when none), ``name`` JAX's name stack,
    ``origins`` how many source positions it carries (a fused location: more than one)."""
    import pandas as pd

    rows = []
    for o in _ops(stage):
        f, origin = _frame(o.origins)
        rows.append({"op": o.op, "result": o.result, "func": o.func, "fusion": o.fusion, "text_line": o.line,
                     "file": f.file if f else "", "line": f.line if f else 0, "column": f.column if f else 0,
                     "function": f.function if f else "", "name": origin.name if origin else "",
                     "origins": len(o.origins)})
    df = pd.DataFrame(rows, columns=list(LOCATION_COLUMNS))
    return df.astype({"text_line": "int64", "line": "int64", "column": "int64", "origins": "int64"})


# -- the source map ------------------------------------------------------------------------------------------
def _costed(stage: Stage) -> pd.DataFrame:
    """One row per costed op of ``stage``: file, line, function, flops, bytes (and the fusion it is, for XLA)."""
    import pandas as pd

    if _kind(stage) == "mlir":
        text = stage.text_with_locations or stage.text
        df = located_op_costs(text)
        sites = call_sites(text)
        seen: dict[tuple[str, str], Frame | None] = {}  # ops of one line of code print one location string
        frames = []
        for loc, func in zip(df["location"], df["func"]):
            if (loc, func) not in seen:
                seen[loc, func] = _frame(sites.attribute(func, read_location(loc)))[0]
            frames.append(seen[loc, func])
        out = pd.DataFrame({"flops": df["flops"], "bytes": df["bytes"], "fusion": ""})
    else:
        df = hlo_op_costs(stage.text)
        where = {(o.func, o.result): o for o in hlo_instruction_locations(stage.text)}
        frames = []
        for comp, name in zip(df["computation"], df["name"]):
            o = where.get((comp, name))
            frames.append(_frame(o.origins)[0] if o else None)
        out = pd.DataFrame({"flops": df["flops"], "bytes": df["bytes"],
                            "fusion": [n if op == "fusion" else "" for n, op in zip(df["name"], df["op"])]})
    out["file"] = [f.file if f else NO_LOCATION for f in frames]
    out["line"] = [f.line if f else 0 for f in frames]
    out["function"] = [f.function if f else "" for f in frames]
    return out


def _fusions_by_line(stage: Stage, by: str) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for o in hlo_instruction_locations(stage.text):
        if not o.fusion:
            continue
        for origin in o.origins:
            f = user_frame(origin, _TOOL_DIRS, _USER_DIRS)
            if f is None:
                continue
            key = (f.file, f.line) if by == "line" else (f.file, f.function)
            names = out.setdefault(key, [])
            if o.fusion not in names:
                names.append(o.fusion)
    return out


def _function_at(stage: Stage, key: tuple) -> str:
    for o in hlo_instruction_locations(stage.text):
        for origin in o.origins:
            f = user_frame(origin, _TOOL_DIRS, _USER_DIRS)
            if f is not None and (f.file, f.line) == key:
                return f.function
    return ""


def _code(file: str, line: int) -> str:
    return linecache.getline(file, line).strip() if file != NO_LOCATION and line else ""


def _col(prefix: str, name: str) -> str:
    return f"{prefix}_{name}" if prefix else name


def source_map(stages: dict[str, Stage], by: str = "line") -> pd.DataFrame:
    """One row per source line (``by="line"``) or function (``by="function"``) of the user's code, and a
    ``(no location)`` row when some op has none. ``stages`` maps a column prefix to a stage: for each, the
    columns ``{prefix}_ops``, ``{prefix}_flops``, ``{prefix}_bytes`` (its ops counted at that line, and what
    they cost), and for XLA stages ``{prefix}_fusions`` (the fusions with an instruction from it); an empty
    prefix gives ``ops``, ``flops``, ``bytes`` (and ``fusions``)."""
    import pandas as pd
    if by not in ("line", "function"):
        raise WorkbenchError(f"source_map(by={by!r}): by is 'line' or 'function'")
    keys = ["file", "line"] if by == "line" else ["file", "function"]
    tables = {}
    for prefix, stage in stages.items():
        _require_locations(stage, _ops(stage))
        df = _costed(stage)
        g = df.groupby(keys, sort=False, dropna=False)
        t = pd.DataFrame({_col(prefix, "ops"): g.size(), _col(prefix, "flops"): g["flops"].sum(min_count=0),
                          _col(prefix, "bytes"): g["bytes"].sum(min_count=0)})
        if by == "line":
            t["function"] = g["function"].first()
        if _kind(stage) == "hlo":  # a line whose instructions all sit in fusions counted elsewhere: listed too
            fusions = _fusions_by_line(stage, by)
            more = [k for k in fusions if k not in t.index]
            if more:
                extra = pd.DataFrame(index=pd.MultiIndex.from_tuples(more, names=keys), columns=t.columns)
                for c in t.columns:
                    extra[c] = 0 if c != "function" else None
                if by == "line":
                    extra["function"] = [_function_at(stage, k) for k in more]
                t = pd.concat([t, extra])
            t[_col(prefix, "fusions")] = [", ".join(fusions.get(k, [])) for k in t.index]
        tables[prefix] = t
    merged = None
    for prefix, t in tables.items():
        if merged is None:
            merged = t
            continue
        extra = t.drop(columns=[c for c in ("function",) if c in t.columns and c in merged.columns])
        merged = merged.join(extra, how="outer")
        if "function" in t.columns:
            merged["function"] = merged["function"].fillna(t["function"])
    merged = merged.reset_index()
    for prefix in tables:
        for c in ("ops", "flops", "bytes"):
            merged[_col(prefix, c)] = merged[_col(prefix, c)].astype("Int64").fillna(0)
        if _col(prefix, "fusions") in merged.columns:
            merged[_col(prefix, "fusions")] = merged[_col(prefix, "fusions")].fillna("")
    none = merged["file"] == NO_LOCATION
    if by == "line":
        merged["code"] = [_code(f, int(n)) for f, n in zip(merged["file"], merged["line"])]
        merged["line"] = merged["line"].astype("int64")
        lead = ["file", "line", "function", "code"]
    else:
        merged["function"] = merged["function"].fillna("")
        merged.loc[none, "function"] = ""
        lead = ["file", "function"]
    merged = pd.concat([merged[~none].sort_values(keys, kind="stable"), merged[none]], ignore_index=True)
    rest = [c for c in merged.columns if c not in lead]
    out = merged[lead + rest].reset_index(drop=True)
    out.attrs["stages"] = {p: s.name for p, s in stages.items()}
    return out


# -- lineage ---------------------------------------------------------------------------------------------------
def _find(stage: Stage, ops: Sequence[OpLocation], op: str) -> OpLocation:
    want = op.strip()
    for o in ops:
        if o.result and (o.result == want or o.result.lstrip("%") == want.lstrip("%")):
            return o
    known = [o.result for o in ops if o.result][:400]
    raise UnknownNameError(f"op of stage {stage.name!r}", op, known, known_note=(
        "an op is named by its result as the stage's text shows it (e.g. %12), an XLA instruction by its name "
        "(e.g. fusion.3)"))


def _origin_keys(stage: Stage, ops: Sequence[OpLocation], target: OpLocation) -> set[tuple]:
    origins = list(target.origins)
    if _kind(stage) == "hlo" and target.op == "fusion":  # a fusion: what its fused computation holds
        origins += [g for o in ops if o.fusion == target.result for g in o.origins]
    return {o.key for o in origins if user_frame(o, _TOOL_DIRS, _USER_DIRS) is not None}


def lineage(stages: Sequence[Stage], stage: Stage, op: str) -> pd.DataFrame:
    """The counterparts of op ``op`` of ``stage`` in every stage of ``stages`` that has ops: the ops (XLA:
    the entry instructions, a fusion for what it holds) with a source position in common with it.

    Columns ``stage, group, result, op, source, line, text``: one row per counterpart (``line``: its line in
    the stage's text, 0-based), and for a stage with none, one row with an empty result (line -1) whose
    ``text`` says so. ``attrs["removed_by"]`` names the first stage
    after ``stage`` that has no counterpart left while its parent had (None when the op lives on), and
    ``attrs["sources"]`` the user's lines (file:line) the op came from."""
    import pandas as pd

    ops = _ops(stage)
    target = _find(stage, ops, op)
    keys = _origin_keys(stage, ops, target)
    if not keys:
        raise WorkbenchError(f"op {target.result} of stage {stage.name!r} ({target.op}) has no source location "
                             "of the user's code, so it has no counterparts to follow")
    sources = sorted({f"{k[1]}:{k[2]}" for k in keys})
    rows = []
    found: dict[str, int] = {}
    for s in stages:
        try:
            s_ops = _ops(s)
        except WorkbenchError:
            continue
        here = _counterparts(s, s_ops, keys)
        found[s.name] = len(here)
        rows += here or [{"stage": s.name, "group": s.group, "result": "", "op": "", "source": "", "line": -1,
                          "text": "no counterpart: no op here has its source position"}]
    df = pd.DataFrame(rows, columns=["stage", "group", "result", "op", "source", "line", "text"])
    df.attrs["removed_by"] = _mark_removal(df, stages, stage, found)
    df.attrs["sources"] = sources
    return df


def _counterparts(s: Stage, s_ops: Sequence[OpLocation], keys: set[tuple]) -> list[dict]:
    """The rows of stage ``s``'s ops with an origin among ``keys``, each once (an instruction inside a
    fusion counts as the fusion; functions and parameters do not count)."""
    lines = s.text.splitlines()
    rows = []
    seen: set[str] = set()
    for o in s_ops:
        hits = [g for g in o.origins if g.key in keys]
        if not hits or o.op in ("func.func", "parameter"):
            continue
        result, what, line = o.result, o.op, o.line
        if o.fusion:  # an instruction inside a fusion: the fusion is the counterpart
            result, what = o.fusion, "fusion"
            line = next((x.line for x in s_ops if x.result == o.fusion and not x.fusion), o.line)
        if result in seen:
            continue
        seen.add(result)
        f = hits[0].frame
        rows.append({"stage": s.name, "group": s.group, "result": result, "op": what,
                     "source": f"{f.file}:{f.line}" if f else "", "line": line,
                     "text": _clean(lines[line]) if line < len(lines) else ""})
    return rows


def _mark_removal(df: pd.DataFrame, stages: Sequence[Stage], stage: Stage, found: dict[str, int]) -> str | None:
    """The first stage after ``stage`` with no counterpart while its parent had some (None if none),
    its row in ``df`` saying so."""
    names = [s.name for s in stages]
    start = names.index(stage.name) if stage.name in names else 0
    by_name = {s.name: s for s in stages}
    for name in names[start + 1:]:
        parent = by_name[name].parent
        if found.get(name) == 0 and parent in found and found[parent] > 0:
            df.loc[(df["stage"] == name) & (df["result"] == ""), "text"] = (
                f"no counterpart: removed by {name} (its parent {parent} had {found[parent]})")
            return name
    return None


def _clean(line: str) -> str:
    """An op's line as the stage's text shows it, XLA's metadata left out."""
    text = line.strip()
    i = text.find(", metadata={")
    return text[:i] if i >= 0 else text
