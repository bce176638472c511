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
XLA's HloCostAnalysis per instruction of every computation that runs (``hlo_op_costs``: loop bodies
times their trip counts, the same rule as the model's), so a loop body's lines carry its flops in the
``xla_*`` columns too: a fusion counts at its own line (XLA
writes its root's), and every line with an instruction inside it lists it under ``fusions``.
"""
from __future__ import annotations

import functools
import linecache
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UnknownNameError, WorkbenchError
from ..ir.attribution import NOT_FOUND, OWN, attribute, own_frame, short_path
from ..ir.locations import (
    Frame,
    OpLocation,
    Origin,
    hlo_dataflow,
    hlo_instruction_locations,
    mlir_dataflow,
    mlir_op_locations,
    user_frame,
)
from ..stages import Stage
from .cost import hlo_op_costs, located_op_costs

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["LIBRARY_ONLY", "LOCATION_COLUMNS", "NO_LOCATION", "Located", "counts", "coverage", "lineage",
           "located_ops", "op_locations", "short_path", "source_map", "source_words", "stage_ops", "users_frame",
           "your_frame"]

NO_LOCATION = "(no location)"
LIBRARY_ONLY = "(library code only)"  # an op whose every frame is a library's: no line of the user's own
LOCATION_COLUMNS = ("op", "result", "func", "fusion", "text_line", "your_file", "your_line", "your_function", "file",
                    "line", "column", "function", "name", "origins", "how", "via")
_PACKAGE = Path(__file__).resolve().parents[1]
_TOOL_DIRS = (str(_PACKAGE) + "/",)  # the workbench's own frames are not the user's ...
# ... but its built-in examples and the course's lessons are user code: a lesson's program is the student's
_USER_DIRS = (str(_PACKAGE / "examples") + "/", str(_PACKAGE / "course") + "/")


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


# -- which ops count, and the line each counts at ------------------------------------------------------------
# Ops that are no computation of the program: a function and its terminators (a return has no line of the
# user's: it hands values back), a region's yield, Shardy's mesh declaration; in HLO a parameter (a
# computation's input, as a function's argument in MLIR is no op). Every other op counts, constants too.
_NOT_COUNTED_MLIR = frozenset(("func.func", "return", "func.return", "stablehlo.return", "mhlo.return",
                               "sdy.mesh", "sdy.return", "builtin.module"))


def counts(kind: str, op: str) -> bool:
    """Whether an op of a stage of ``kind`` ("mlir" or "hlo") is one the coverage of lines counts (see above)."""
    return op != "parameter" if kind == "hlo" else op not in _NOT_COUNTED_MLIR


@dataclass(frozen=True)
class Located:
    """One op of a stage and the line it counts at: ``frame`` the innermost frame outside the workbench
    (often a library's), ``yours`` the user's own frame (``your_frame``: None when every frame is a
    library's), ``origin`` the origin they are in, ``how`` whether the line is the op's own ("own"), inferred
    through the dataflow ("inferred from a user", ...: ``ir.attribution``) or "none", ``via`` the op it was
    inferred from (its result), ``counted`` whether the op counts (``counts``)."""

    op: OpLocation
    frame: Frame | None
    yours: Frame | None
    origin: Origin | None
    how: str
    via: str
    counted: bool


def your_frame(origin: Origin) -> Frame | None:
    """The user's own frame of ``origin``: the innermost frame not in an installed package, the standard
    library, jax or the workbench (its examples are user code); None when every frame is one of those."""
    return own_frame(origin, _TOOL_DIRS, _USER_DIRS)


@functools.lru_cache(maxsize=8)
def _chains(mlir_text: str) -> dict[tuple, tuple[Frame, ...]]:
    """{Origin.key: its frames} of an MLIR stage's ops, whose locations keep the whole call chain."""
    out: dict[tuple, tuple[Frame, ...]] = {}
    for o in mlir_op_locations(mlir_text):
        for g in o.origins:
            if len(g.frames) > len(out.get(g.key, ())):
                out[g.key] = g.frames
    return out


@functools.lru_cache(maxsize=32)
def _located(kind: str, text: str, hlo_text: str, chains_text: str = "") -> tuple[Located, ...]:
    ops = mlir_op_locations(text) if kind == "mlir" else hlo_instruction_locations(hlo_text)
    flow = mlir_dataflow(text) if kind == "mlir" else hlo_dataflow(hlo_text)
    frames = [_frame(o.origins) for o in ops]
    counted = [counts(kind, o.op) for o in ops]
    found = attribute(flow, [f is not None for f, _ in frames], counted)
    out = []
    for o, a, c in zip(ops, found, counted):
        f, origin = frames[a.source] if a.source >= 0 else (None, (o.origins[0] if o.origins else None))
        yours = your_frame(origin) if f is not None and origin is not None else None
        if yours is None and f is not None and chains_text:  # XLA keeps fewer frames than the MLIR it came from
            whole = _chains(chains_text).get(origin.key)
            yours = your_frame(Origin(origin.name, whole)) if whole else None
        out.append(Located(o, f, yours, origin if f is not None else origin, a.how,
                           _named(ops[a.via]) if a.via >= 0 else "", c))
    return tuple(out)


def _named(o: OpLocation) -> str:
    """An op as ``via`` names it: its result, or for an op without one its kind and line in the text."""
    return o.result or f"{o.op} (line {o.line + 1})"


def located_ops(stage: Stage, chains: Stage | None = None) -> tuple[Located, ...]:
    """Every op of ``stage`` (as ``stage_ops``) with the line it counts at: its own, or one inferred through
    the dataflow and marked so (``Located.how``). Linear in the stage's size. XLA's metadata may keep fewer
    frames than JAX wrote: ``chains``, an MLIR stage of the same program, gives an XLA instruction's user's
    frame from its op's whole call chain there (matched by ``Origin.key``)."""
    if _kind(stage) == "mlir":
        return _located("mlir", stage.text_with_locations or stage.text, "")
    more = (chains.text_with_locations or chains.text) if chains is not None and _kind(chains) == "mlir" else ""
    return _located("hlo", "", stage.text, more)



def coverage(stage: Stage) -> dict:
    """How many of ``stage``'s ops that count (``counts``) have a line of the user's code: ``ops`` those that
    count, ``own`` with their own line, ``inferred`` with one inferred through the dataflow, ``none`` with
    none, ``unattributed`` the share with none (0..1), ``by_how`` the counts by ``Located.how``."""
    rows = [x for x in located_ops(stage) if x.counted]
    by_how: dict[str, int] = {}
    for x in rows:
        by_how[x.how] = by_how.get(x.how, 0) + 1
    none = by_how.get(NOT_FOUND, 0)
    own = by_how.get(OWN, 0)
    return {"stage": stage.name, "ops": len(rows), "own": own, "inferred": len(rows) - own - none, "none": none,
            "unattributed": none / len(rows) if rows else 0.0, "by_how": by_how}


def source_words(frame: Frame | None, yours: Frame | None) -> str:
    """The user's line first and the innermost frame's beside it: ``train.py:42 (optax/_src/transform.py:507)``;
    one ``file:line`` where they are the same; ``optax/...:507 (library code only)`` where no frame is the
    user's; "" without a frame."""
    if frame is None:
        return ""
    inner = f"{short_path(frame.file)}:{frame.line}"
    if yours is None:
        return f"{inner} ({LIBRARY_ONLY[1:-1]})"
    mine = f"{yours.file}:{yours.line}"
    return mine if (yours.file, yours.line) == (frame.file, frame.line) else f"{mine} ({inner})"


def stage_ops(stage: Stage) -> tuple[OpLocation, ...]:
    """Every op of ``stage`` (MLIR ops, or HLO instructions with those of fused computations) with its origins."""
    return _ops(stage)


def users_frame(origin: Origin) -> Frame | None:
    """The frame of the user's code an origin counts at (the workbench's own frames skipped, its examples
    kept), or None."""
    return user_frame(origin, _TOOL_DIRS, _USER_DIRS)


def op_locations(stage: Stage, chains: Stage | None = None) -> pd.DataFrame:
    """One row per op of ``stage`` (MLIR ops, or XLA HLO instructions, those of fused computations too):
    ``op, result, func, fusion, text_line, file, line, column, function, name, origins`` -- ``text_line`` its
    line in the stage's text (0-based), ``file``/``line``/``column``/
    ``function`` the user's frame it counts at (empty and 0 when none), ``name`` JAX's name stack,
    ``origins`` how many source positions it carries (a fused location: more than one)."""
    import pandas as pd

    rows = []
    for x in located_ops(stage, chains):
        o, f, y, origin = x.op, x.frame, x.yours, x.origin
        your_file = (y.file if y else LIBRARY_ONLY) if f else ""
        rows.append({"op": o.op, "result": o.result, "func": o.func, "fusion": o.fusion, "text_line": o.line,
                     "your_file": your_file, "your_line": y.line if y and f else 0,
                     "your_function": y.function if y and f else "",
                     "file": f.file if f else "", "line": f.line if f else 0, "column": f.column if f else 0,
                     "function": f.function if f else "", "name": origin.name if origin else "",
                     "origins": len(o.origins), "how": x.how, "via": x.via})
    df = pd.DataFrame(rows, columns=list(LOCATION_COLUMNS))
    return df.astype({"text_line": "int64", "your_line": "int64", "line": "int64", "column": "int64",
                      "origins": "int64"})


# -- the source map ------------------------------------------------------------------------------------------
def _bare(op: str) -> str:
    return op[5:] if op.startswith("func.") else op


def _costed(stage: Stage, chains: Stage | None = None) -> pd.DataFrame:
    """One row per costed op of ``stage``: your_file, your_line, your_function (the user's own frame),
    file, line, function (the innermost frame outside the workbench), inferred (whether the line was inferred
    through the dataflow), flops, bytes (and the fusion it is, for XLA)."""
    import pandas as pd

    located = located_ops(stage, chains)
    if _kind(stage) == "mlir":
        df = located_op_costs(stage.text_with_locations or stage.text)
        # the cost model walks the ops in the text's order, a function's once: the k-th op of a kind in a
        # function there is the k-th here
        by_kind: dict[tuple[str, str], list[Located]] = {}
        for x in located:
            by_kind.setdefault((x.op.func, _bare(x.op.op)), []).append(x)
        taken: dict[tuple[str, str], int] = {}
        rows: list[Located | None] = []
        for func, op in zip(df["func"], df["op"]):
            key = (func, _bare(op))
            k = taken.get(key, 0)
            taken[key] = k + 1
            its = by_kind.get(key, ())
            rows.append(its[k] if k < len(its) else None)
        out = pd.DataFrame({"flops": df["flops"], "bytes": df["bytes"], "fusion": ""})
    else:
        df = hlo_op_costs(stage.text)
        where = {(x.op.func, x.op.result): x for x in located}
        rows = [where.get((comp, name)) for comp, name in zip(df["computation"], df["name"])]
        out = pd.DataFrame({"flops": df["flops"], "bytes": df["bytes"],
                            "fusion": [n if op == "fusion" else "" for n, op in zip(df["name"], df["op"])]})
    for column, value in _frame_columns(rows).items():
        out[column] = value
    return out


def _frame_columns(rows: Sequence[Located | None]) -> dict[str, list]:
    """The columns of the lines ``rows`` count at (a row with no line: ``NO_LOCATION``)."""
    out: dict[str, list] = {c: [] for c in ("your_file", "your_line", "your_function", "file", "line", "function",
                                            "inferred")}
    for x in rows:
        f = x.frame if x is not None else None
        y = x.yours if f is not None else None
        out["your_file"].append(NO_LOCATION if f is None else y.file if y else LIBRARY_ONLY)
        out["your_line"].append(y.line if y else 0)
        out["your_function"].append(y.function if y else "")
        out["file"].append(f.file if f else NO_LOCATION)
        out["line"].append(f.line if f else 0)
        out["function"].append(f.function if f else "")
        out["inferred"].append(f is not None and x.how != OWN)
    return out


def _key_of(x: Located, by: str) -> tuple:
    y = x.yours
    your_file = y.file if y else LIBRARY_ONLY
    if by == "line":
        return (your_file, y.line if y else 0, x.frame.file, x.frame.line)
    return (your_file, y.function if y else "", x.frame.file, x.frame.function)


def _fusions_by_line(stage: Stage, by: str, chains: Stage | None) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for x in located_ops(stage, chains):
        if not x.op.fusion or x.frame is None:
            continue
        names = out.setdefault(_key_of(x, by), [])
        if x.op.fusion not in names:
            names.append(x.op.fusion)
    return out


def _functions_at(stage: Stage, chains: Stage | None) -> dict[tuple, tuple[str, str]]:
    """(your_function, function) of each line key of ``stage``'s ops."""
    out: dict[tuple, tuple[str, str]] = {}
    for x in located_ops(stage, chains):
        if x.frame is not None:
            out.setdefault(_key_of(x, "line"), (x.yours.function if x.yours else "", x.frame.function))
    return out


def _code(file: str, line: int) -> str:
    return linecache.getline(file, line).strip() if file not in (NO_LOCATION, LIBRARY_ONLY) and line else ""


def _mlir_of(stages) -> Stage | None:
    """The last MLIR stage among ``stages`` (its locations keep the whole call chains XLA's metadata shortens)."""
    found = None
    for s in stages:
        try:
            if _kind(s) == "mlir":
                found = s
        except WorkbenchError:
            continue
    return found


def _col(prefix: str, name: str) -> str:
    return f"{prefix}_{name}" if prefix else name


def source_map(stages: dict[str, Stage], by: str = "line") -> pd.DataFrame:
    """One row per line of the user's own code and the line it reached a library through (``by="line"``),
    or per function (``by="function"``), and a ``(no location)`` row when some op has none.

    The row leads with the user's own line -- ``your_file, your_line, your_function, your_code``: the innermost
    frame outside installed packages, the standard library, jax and the workbench (``LIBRARY_ONLY`` in
    ``your_file`` where every frame is a library's) -- and keeps the innermost frame beside it: ``file, line,
    function, code`` (``flax/linen/linear.py:422`` for a Dense layer; the same line as the user's where the op
    was made there). ``stages`` maps a column prefix to a stage: for each, the columns ``{prefix}_ops``,
    ``{prefix}_flops``, ``{prefix}_bytes`` (its ops counted at that line, and what they cost),
    ``{prefix}_inferred`` (how many of those ops have no location of their own and count here through the
    dataflow: ``op_locations``' ``how``), and for XLA stages ``{prefix}_fusions`` (the fusions with an
    instruction from it); an empty prefix gives ``ops``, ``flops``, ``bytes``, ``inferred`` (and ``fusions``)."""
    import pandas as pd
    if by not in ("line", "function"):
        raise WorkbenchError(f"source_map(by={by!r}): by is 'line' or 'function'")
    keys = ["your_file", "your_line", "file", "line"] if by == "line" else ["your_file", "your_function", "file",
                                                                               "function"]
    named = ["your_function", "function"] if by == "line" else []  # what a line's key does not hold
    tables = {}
    chains = _mlir_of(stages.values())
    for prefix, stage in stages.items():
        _require_locations(stage, _ops(stage))
        df = _costed(stage, chains)
        g = df.groupby(keys, sort=False, dropna=False)
        t = pd.DataFrame({_col(prefix, "ops"): g.size(), _col(prefix, "flops"): g["flops"].sum(min_count=0),
                          _col(prefix, "bytes"): g["bytes"].sum(min_count=0),
                          _col(prefix, "inferred"): g["inferred"].sum()})
        for c in named:
            t[c] = g[c].first()
        if _kind(stage) == "hlo":  # a line whose instructions all sit in fusions counted elsewhere: listed too
            fusions = _fusions_by_line(stage, by, chains)
            more = [k for k in fusions if k not in t.index]
            if more:
                extra = pd.DataFrame(index=pd.MultiIndex.from_tuples(more, names=keys), columns=t.columns)
                for c in t.columns:
                    extra[c] = 0 if c not in named else None
                if by == "line":
                    at = _functions_at(stage, chains)
                    extra["your_function"] = [at.get(k, ("", ""))[0] for k in more]
                    extra["function"] = [at.get(k, ("", ""))[1] for k in more]
                t = pd.concat([t, extra])
            t[_col(prefix, "fusions")] = [", ".join(fusions.get(k, [])) for k in t.index]
        tables[prefix] = t
    out = _joined(tables, by, keys, named)
    out.attrs["stages"] = {p: s.name for p, s in stages.items()}
    return out


def _joined(tables: dict, by: str, keys: list[str], named: list[str]) -> pd.DataFrame:
    """The per-stage tables of ``source_map`` joined on their line keys, the user's lines first (then lines
    only libraries reached, then the ``(no location)`` row), the descriptive columns leading."""
    import pandas as pd

    merged = None
    for prefix, t in tables.items():
        if merged is None:
            merged = t
            continue
        extra = t.drop(columns=[c for c in named if c in t.columns and c in merged.columns])
        merged = merged.join(extra, how="outer")
        for c in named:
            if c in t.columns:
                merged[c] = merged[c].fillna(t[c])
    merged = merged.reset_index()
    for prefix in tables:
        for c in ("ops", "flops", "bytes", "inferred"):
            merged[_col(prefix, c)] = merged[_col(prefix, c)].astype("Int64").fillna(0)
        if _col(prefix, "fusions") in merged.columns:
            merged[_col(prefix, "fusions")] = merged[_col(prefix, "fusions")].fillna("")
    none = merged["file"] == NO_LOCATION
    library = merged["your_file"] == LIBRARY_ONLY
    if by == "line":
        merged["code"] = [_code(f, int(n)) for f, n in zip(merged["file"], merged["line"])]
        merged["your_code"] = [_code(f, int(n)) for f, n in zip(merged["your_file"], merged["your_line"])]
        merged["line"] = merged["line"].astype("int64")
        merged["your_line"] = merged["your_line"].astype("int64")
        for c in named:
            merged[c] = merged[c].fillna("")
        lead = ["your_file", "your_line", "your_function", "your_code", "file", "line", "function", "code"]
    else:
        for c in ("function", "your_function"):
            merged[c] = merged[c].fillna("")
            merged.loc[none, c] = ""
        lead = ["your_file", "your_function", "file", "function"]
    mine = ~none & ~library
    merged = pd.concat([merged[mine].sort_values(keys, kind="stable"), merged[library & ~none].sort_values(
        keys, kind="stable"), merged[none]], ignore_index=True)
    rest = [c for c in merged.columns if c not in lead]
    return merged[lead + rest].reset_index(drop=True)


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

    Columns ``stage, group, result, op, source, line, text``: one row per counterpart (``source``: the user's
    own line, the innermost frame's beside it, ``source_words``; ``line``: its line in
    the stage's text, 0-based), and for a stage with none, one row with an empty result (line -1) whose
    ``text`` says so. ``attrs["removed_by"]`` names the first stage
    after ``stage`` that has no counterpart left while its parent had (None when the op lives on), and
    ``attrs["sources"]`` the lines (file:line of the innermost frame) the op came from, ``attrs["your_sources"]``
    the same led by the user's own line, ``attrs["how"]`` "own", or how the line of an op without a location
    of its own was inferred (``op_locations``' ``how`` and ``via``)."""
    import pandas as pd

    ops = _ops(stage)
    target = _find(stage, ops, op)
    keys = _origin_keys(stage, ops, target)
    chains = _mlir_of(stages)
    located = located_ops(stage, chains)
    mine = next(x for x in located if x.op is target)
    how = OWN
    if not keys and mine.frame is not None and mine.origin is not None:  # no location of its own: the one
        keys, how = {mine.origin.key}, f"{mine.how} {mine.via}"  # the dataflow gives it, said so
    if not keys:
        raise WorkbenchError(f"op {target.result} of stage {stage.name!r} ({target.op}) has no source location "
                             "of the user's code, and none of the ops it is joined to has one, so it has no "
                             "counterparts to follow")
    sources = sorted({f"{k[1]}:{k[2]}" for k in keys})
    yours = list(dict.fromkeys(source_words(x.frame, x.yours) for x in located
                               if x.origin is not None and x.frame is not None and x.origin.key in keys))
    rows = []
    found: dict[str, int] = {}
    for s in stages:
        try:
            s_ops = _ops(s)
        except WorkbenchError:
            continue
        here = _counterparts(s, s_ops, keys, _chains(chains.text_with_locations or chains.text) if chains else {})
        found[s.name] = len(here)
        rows += here or [{"stage": s.name, "group": s.group, "result": "", "op": "", "source": "", "line": -1,
                          "text": "no counterpart: no op here has its source position"}]
    df = pd.DataFrame(rows, columns=["stage", "group", "result", "op", "source", "line", "text"])
    df.attrs["removed_by"] = _mark_removal(df, stages, stage, found)
    df.attrs["sources"] = sources
    df.attrs["your_sources"] = yours  # the user's own line first, the innermost frame's beside it
    df.attrs["how"] = how  # "own", or how the op's line was inferred (it has no location of its own)
    return df


def _counterparts(s: Stage, s_ops: Sequence[OpLocation], keys: set[tuple], chains: dict) -> list[dict]:
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
                     "source": source_words(f, your_frame(hits[0]) or your_frame(
                         Origin(hits[0].name, chains.get(hits[0].key, ())))) if f else "", "line": line,
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
