"""The one view model: every fact a view of an Exploration shows, computed once, here, into one typed,
versioned JSON document (``format`` 2, described by ``assets/view.schema.json``).

Every view is drawn from it by the one set of TypeScript components (``extensions/hlo-workbench-lab/src/
components``, built into ``assets/views.js``): the panel and its saved view in a notebook, the offline report,
the JupyterLab extension's ``.hlox`` viewer and its Compare tab. None of them computes a fact again: what a
kernel-free view needs beyond the model (another pair's diff, a comparison of two files) it asks Python for
through the Jupyter server extension (``views/labserver.py``), which builds it here.

``stages`` are ``Exploration.table()``'s rows with each stage's parent and whether a hand edit made it
(``edit``); ``diff`` is the structural diff of the pair shown as the panel's Diff tab makes it
(``stage_diffs.carried``: normalized texts and runs), or a ``note`` saying why there is none; ``edits``
the exploration's edits in order; ``runs`` the session's runs, each with its check leaf by leaf (the
leaves of the program's outputs, as ``RunResult.check.table()`` lists them), its printed output (once
per call the user asked for) and whether its program is still the one shown (``stale``: why not);
``drift`` what ``ex.drift`` found, in one sentence and one place; ``compile`` XLA's compile profile.

The pair's own facts (``texts``, ``diff``, ``ops_delta``, ``cost``) are added by ``with_pair`` to a model made
without them (``view_model(..., pair=False)``, the panel's), so that the panel and its saved view share one model.
Each text is cut at a line boundary to ``TEXT_BYTES`` (UTF-8) and the whole JSON to about
``TOTAL_BYTES``; a text entry says whether it was cut (``cut``, ``kept_lines`` of ``lines``, a ``note``)
and its ``state`` (ok, failed, or missing: an XLA stage still compiling). The diff is whole or left out:
for a failed or missing stage, texts over ``DIFF_LINES`` lines, or one over ``DIFF_BYTES`` or what the
rest leaves of ``TOTAL_BYTES``. The analytic cost rows of the pair leave out a stage over ``DIFF_LINES``
lines too (``cost_note``).
"""
from __future__ import annotations

import functools
import json
from typing import Any, Sequence

from ..analysis.cost import cost_rows
from ..analysis.diff.result import ops_delta_rows
from ..ir.text import short_pass
from .assets import ASSETS
from .versions import versions
from .jsonout import json_text, plain_json, rows_json, table_json
from .stage_diffs import carried
from ..stages import Stage

__all__ = ["MIME", "FORMAT", "SCHEMA", "TEXT_BYTES", "TOTAL_BYTES", "DIFF_BYTES", "DIFF_LINES", "default_right",
           "view_model", "with_pair", "pair_diff", "validate_view", "cut_text", "run_entry",
           "drift_entry", "edit_entry", "compile_entry", "memory_entry", "backend_entry", "line_label", "finite",
           "view_text"]

MIME = "application/vnd.hlo-workbench.exploration+json"
SCHEMA = "hlo-workbench/view"
FORMAT = 2
TEXT_BYTES = 200_000  # per stage text, UTF-8
TOTAL_BYTES = 1_000_000  # the whole JSON, about: the texts give way (the table's cells are cut to CELL_CHARS)
CELL_CHARS = 16_000  # a pass string or an error in the stage table (a pattern list is about 12,000)
COLUMNS = ("stage", "group", "changed", "lines", "ms", "cached", "error", "produced_by")  # Exploration.table()'s
DIFF_LINES = 20_000  # bigger texts: no carried diff nor cost rows (they would cost seconds)
DIFF_BYTES = 400_000  # the carried diff (its normalized texts and runs, UTF-8 in the JSON), at most
PRINTED_CHARS = 20_000  # a run's printed output kept in the model, at most
RUNS_KEPT = 50  # the newest runs a model lists
DRIFT_VALUES = 200  # the values compared a drift lists (the first; ``more`` counts the rest)
DRIFT_INPUTS = 50  # the op's inputs a drift lists
MEMORY_BUFFERS = 50  # the largest buffers at the peak a model lists (the rest counted and summed)
MEMORY_LINES = 200  # the lines at the peak a model lists, largest first
BACKEND_ROWS = 200  # the TPU kernels' rows a model lists, the longest first
_MEMORY_BUFFER_KEYS = ("buffer", "bytes", "kind", "shape", "dtype", "line", "instruction", "computation", "at")


def default_right(stages: Sequence[Stage]) -> Stage:
    """The stage a user most likely wants to see first: a failed one, else the first MLIR stage that
    changed the module, else the last MLIR stage, else the last stage (the panel's first pick)."""
    for s in stages:
        if s.error:
            return s
    mlir = [s for s in stages if s.group == "mlir"]
    for s in mlir:
        if s.changed:
            return s
    return mlir[-1] if mlir else stages[-1]


def _pair(stages: Sequence[Stage], left: str | None, right: str | None) -> tuple[str, str]:
    if not right:
        right = default_right(stages).name
    if not left:
        left = next((s.parent for s in stages if s.name == right), None) or stages[0].name
    return left, right


def cut_text(text: str, limit: int) -> tuple[str, int, int]:
    """``text`` cut after its last whole line that ends within ``limit`` UTF-8 bytes:
    (the kept text, lines kept, lines in all, counted as ``Stage.lines`` counts them). A text within
    the limit comes back whole."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    if len(text) <= limit // 4 or len(text.encode()) <= limit:
        return text, len(lines), len(lines)
    size = kept = 0
    for line in lines:
        size += len(line.encode())
        if size > limit:
            break
        kept += 1
    return "".join(lines[:kept]), kept, len(lines)


def _cell(value: str, limit: int = CELL_CHARS) -> str:
    return value if len(value) <= limit else f"{value[:limit]}… (cut: {len(value):,} characters in all)"


def _row(s: Stage) -> dict[str, Any]:
    """A row of ``Exploration.table()`` (and the stage's parent), in JSON types."""
    return {"stage": s.name, "group": s.group, "changed": bool(s.changed), "lines": s.lines,
            "ms": None if s.seconds is None else round(s.seconds * 1e3, 2), "cached": bool(s.cached),
            "error": _cell(s.error or ""), "produced_by": _cell(s.produced_by), "parent": s.parent,
            "edit": s.edit}


def _text_entry(s: Stage | None, name: str, limit: int) -> dict[str, Any]:
    if s is None or s.error:
        return {"stage": name, "state": "failed" if s else "missing", "text": "", "lines": 0, "kept_lines": 0,
                "cut": False, "note": f"the stage failed: {_cell(s.error)}" if s else
                "XLA was compiling when this was saved: the stage has no text here"}
    text, kept, lines = cut_text(s.text, limit)
    cut = kept < lines
    note = (f"cut: the first {kept:,} of {lines:,} lines are kept ({limit // 1000:,} kB per text in a saved "
            "notebook)") if cut else ""
    return {"stage": name, "state": "ok", "text": text, "lines": lines, "kept_lines": kept, "cut": cut, "note": note}


def _ops_delta(a: Stage | None, b: Stage | None) -> list[dict[str, Any]]:
    """The ops whose count differs from ``a`` to ``b``, as ``Diff.ops_delta()`` counts them."""
    if a is None or b is None or a.error or b.error:
        return []
    return ops_delta_rows(a.text, b.text)


def view_model(ex, left: str | None = None, right: str | None = None, *, stages: Sequence[Stage] | None = None,
               wait: float | None = None, source: str = "panel", variable: str | None = None, runs: Sequence | None = None,
               drift=None, compile_profile=None, pair: bool = True) -> dict[str, Any]:
    """The view model of ``ex`` (an Exploration) with ``left`` and ``right`` shown (empty: the pair the panel
    shows first). ``stages``: those to list (default: every stage if XLA's are ready within ``wait``
    seconds, else the trace and MLIR stages: a slow compile does not hold a view up; ``wait`` None: every
    stage, XLA's compiled first). ``runs``: the runs to
    list (default ``ex.history``, the session's), ``drift`` a ``Drift`` found, ``compile_profile`` XLA's
    compile profile (a ``Profile``); ``source`` says which view it is for, ``variable`` the name that holds
    ``ex`` in the user's namespace (what the extension's "Save exploration…" saves). ``pair`` False: the pair's
    own facts (texts, structural diff, ops delta, cost rows) are neither made nor carried (``diff`` says so), for a
    view that draws the pair elsewhere (the panel's Diff and Cost tabs); ``with_pair`` adds them later."""
    complete = stages is not None or wait is None or ex.xla_ready(wait)
    stages = list(stages if stages is not None else ex.stages if complete else ex.pipeline_stages)
    left, right = _pair(stages, left, right)
    error = ex.error if complete else ex.pipeline_error
    spec = ex.spec
    data = plain_json({
        "schema": SCHEMA,
        "format": FORMAT,
        "source": source,
        "title": spec.title,
        "pipeline": spec.pipeline,
        "device": spec.device,
        "variable": variable,
        "toggles": {"patterns_disabled": sorted(spec.selection.disabled),
                    "patterns_enabled": sorted(spec.selection.enabled), "xla_disabled": list(spec.xla_disabled)},
        "versions": {k: v for k, v in versions().items() if v},  # installed ones only
        "complete": complete,
        "error": None if error is None else {"stage": error.stage, "message": _cell(str(error))},
        "columns": list(COLUMNS) + ["parent", "edit"],
        "stages": [_row(s) for s in stages],
        "shown": {"left": left, "right": right},
        "ops_delta": [],
        "cost": None,
        "edits": [edit_entry(e) for e in getattr(ex, "edits", ())],
        "runs": [run_entry(r, ex) for r in list(ex.history if runs is None else runs)[-RUNS_KEPT:]],
        "drift": None if drift is None else drift_entry(drift),
        "compile": compile_entry(compile_profile),
        "caps": {"text_bytes": TEXT_BYTES, "total_bytes": TOTAL_BYTES, "diff_bytes": DIFF_BYTES},
        "texts": {},
        "diff": {"left": left, "right": right, "note": "this view draws the pair elsewhere"},
    }, "view", allow_nan=False)
    return with_pair(ex, data, stages) if pair else data


def with_pair(ex, model: dict[str, Any], stages: Sequence[Stage] | None = None,
              memo: dict | None = None) -> dict[str, Any]:
    """``model`` (made with ``pair=False``, left as it is) with the facts of the pair it shows: the ops delta, the analytic cost rows, the
    structural diff and the texts, within ``TOTAL_BYTES``. ``stages``: where the pair's stages are (default:
    ``ex``'s, XLA's if the model lists them). ``memo``: a dict kept between calls for the same pair, whose facts
    are then made once (the saved view makes them before it waits for XLA's stages, and again after)."""
    left, right = model["shown"]["left"], model["shown"]["right"]
    names = list(dict.fromkeys((left, right)))
    if stages is None:
        stages = ex.stages if model["complete"] else ex.pipeline_stages
    by_name = {s.name: s for s in stages if s.name in names}
    a, b = by_name.get(left), by_name.get(right)
    memo = {} if memo is None else memo
    pair = memo.get("pair")
    if pair is None or pair[0] is not a or pair[1] is not b or pair[2] != (left, right):
        memo.clear()
        memo["pair"] = (a, b, (left, right))
        memo["facts"] = {"ops_delta": _ops_delta(a, b), **_cost(ex, [by_name[n] for n in names if n in by_name])}
    data = {**model, **memo["facts"]}
    data["diff"] = pair_diff(a, b, left, right, min(DIFF_BYTES, TOTAL_BYTES - _size(data)), DIFF_LINES, memo)
    limit = TEXT_BYTES
    while True:  # the texts share what the rest leaves of TOTAL_BYTES (JSON escapes count too)
        data["texts"] = {n: _text_entry(by_name.get(n), n, limit) for n in names}
        data = plain_json(data, "view", allow_nan=False)
        size = _size(data)
        if size <= TOTAL_BYTES or limit == 0:
            return data
        limit = max(0, int(limit * TOTAL_BYTES / size) - 1000)


def pair_diff(a: Stage | None, b: Stage | None, left: str, right: str, limit: int = DIFF_BYTES,
              lines: int | None = None, memo: dict | None = None) -> dict[str, Any]:
    """The structural diff of ``a`` and ``b`` as ``ex.diff(left, right)`` makes it, as a view carries it
    (``stage_diffs.carried``: ``before``, ``after``, ``runs``) when it takes at most ``limit`` bytes of JSON,
    else a ``note`` saying why not (a stage without a text, a text over ``lines`` lines, a diff over ``limit``).
    ``memo``: where the diff of this pair is kept once made (see ``with_pair``)."""
    head = {"left": left, "right": right}
    if a is None or b is None or a.error or b.error:
        return {**head, "note": "a stage shown has no text to compare"}
    if lines is not None and max(a.lines, b.lines) > lines:
        return {**head, "note": f"over {lines:,} lines, a saved notebook keeps no structural diff (it would take "
                                "seconds to make)"}
    from ..analysis.diff import diff_texts

    memo = {} if memo is None else memo
    if "diff" not in memo:
        memo["diff"] = carried(diff_texts(a.text, b.text, left, right))
    entry = {**head, **memo["diff"]}
    size = _size(entry)
    if size > limit:
        return {**head, "note": f"the structural diff takes {size:,} bytes, over the {max(limit, 0):,} a view "
                                "carries for it"}
    return entry


def edit_entry(e) -> dict[str, Any]:
    """One hand edit (``stages.Edit``): its kind, step, the stage it was made on, the pass it inserted or
    removed, how many lines a replaced text has, and the edit in words."""
    what = {"text": f"the text of {e.stage} replaced by hand",
            "insert": f"{e.pass_} inserted after {e.stage}",
            "remove": f"{e.stage} ({short_pass(e.pass_)}) left out"}[e.kind]
    return {"kind": e.kind, "at": e.at, "stage": e.stage, "pass": e.pass_,
            "text_lines": e.text.count("\n") + bool(e.text) if e.kind == "text" else 0, "what": what}


def finite(v) -> float | None:
    """``v`` as a float, None where it is none, not a number or not finite (JSON has no NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def _check(c) -> dict[str, Any] | None:
    """A run's check, leaf by leaf, as ``Check.table()`` lists it (the leaves of the program's outputs)."""
    if c is None:
        return None
    return {"passed": bool(c.passed), "reference": c.reference, "kind": c.kind, "source": c.source,
            "note": c.note, "max_abs": finite(c.max_abs), "max_rel": finite(c.max_rel),
            "lowered_abs": finite(c.lowered_abs),
            "leaves": [{"path": l.path, "shape": list(l.shape), "dtype": l.dtype, "max_abs": finite(l.max_abs),
                        "max_rel": finite(l.max_rel), "tolerance": finite(l.tolerance), "passed": bool(l.passed),
                        "rule": l.rule, "computed": l.computed or ""} for l in c.leaves]}


def run_entry(r, ex=None) -> dict[str, Any]:
    """One run (``RunResult``): its stage and device, the median, fastest and spread (IQR) of its times, the
    settings of the program it ran (pipeline, toggles, XLA options, in words), its check leaf by leaf,
    what it printed (host callbacks, warnings: once per call the user asked for) and, given ``ex``, why its
    program is not ``ex``'s any more ("" where it is)."""
    t = r.timing
    printed = "".join(getattr(r, "printed", ()) or ())
    program = getattr(r, "program", None)
    return {"stage": r.stage, "device": r.device, "repeat": len(t.times),
            "median_ms": finite(t.median * 1e3), "min_ms": finite(t.min * 1e3), "iqr_ms": finite(t.iqr * 1e3),
            "settings": program.settings if program is not None else "",
            "check": _check(r.check), "printed": printed[:PRINTED_CHARS],
            "printed_cut": len(printed) > PRINTED_CHARS, "stale": r.why_stale(ex) if ex is not None else ""}


def _first(df, kept: int) -> dict[str, Any]:
    """A DataFrame's first ``kept`` rows as a table (``table_json``), ``more`` the rows left out."""
    return {**table_json(df.head(kept)), "more": max(0, len(df) - kept)}


def drift_entry(d) -> dict[str, Any]:
    """What ``ex.drift`` found (``Drift``), said once: the sentence, the user's line, and the op with the
    stage and patterns that made it, its counterpart in the reference (``line`` 0-based, -1 none) and its
    inputs beside theirs (``differs`` null: not compared); ``values`` the values compared (``Drift.table()``,
    the first ``DRIFT_VALUES`` rows; ``drifts``: how many of all of them drift)."""
    import pandas as pd

    op = d.op
    values = d.table()
    return {"stage": d.stage, "reference": d.reference, "device": d.device, "found": d.found,
            "summary": d.summary(), "line": d.line, "runs": d.runs, "compared": d.compared, "ops": d.ops,
            "values": {**_first(values, DRIFT_VALUES), "drifts": int(values["drifts"].astype(bool).sum())},
            "op": None if op is None else {
                "counterpart": {"result": op.reference.get("result", ""), "op": op.reference.get("op", ""),
                                "line": op.reference.get("line", -1), "text": op.reference.get("text", "")[:2000]},
                "inputs": _first(pd.DataFrame([(i.position, i.here, i.reference, i.differs, i.max_abs, i.tolerance,
                                                i.what or i.note) for i in op.inputs],
                                              columns=["input", "here", "reference", "differs", "max_abs",
                                                       "tolerance", "note"]), DRIFT_INPUTS),
                "result": op.result, "op": op.op, "line": op.line, "text": op.text[:2000], "source": op.source,
                "made_by": op.made_by, "made_by_pass": short_pass(op.made_by_pass or ""),
                "changed_by": op.changed_by, "patterns": list(op.patterns), "blame": op.blame_note,
                "cause": None if getattr(op, "cause", None) is None else {
                    "kind": op.cause.kind, "stage": op.cause.stage, "patterns": list(op.cause.patterns),
                    "words": op.cause.words()},
                "max_abs": finite(op.check.max_abs), "tolerance": finite(op.check.tolerance)}}


def compile_entry(profile) -> dict[str, Any] | None:
    """XLA's compile profile (a ``CompileProfile`` or a ``Profile``) as its table, or None."""
    if profile is None:
        return None
    try:
        table = profile.table  # CompileProfile.table is the DataFrame; a Profile's is a method
        return {"table": table_json(table() if callable(table) else table, "compile")}
    except Exception:  # noqa: BLE001 -- a view goes without the compile profile rather than fail
        return None


def memory_entry(facts: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a model keeps of the memory the panel's Memory tab shows (``Memory.to_json()`` with each line's and
    buffer's ``at``): the peak, the timeline, the ``MEMORY_LINES`` largest lines and the ``MEMORY_BUFFERS`` largest
    buffers (the rest counted in ``more_buffers`` and summed in ``more_bytes``), the donation candidates, the peak
    reconciled in words."""
    if not facts:
        return None
    kept = facts["buffers"][:MEMORY_BUFFERS]
    rest = facts["buffers"][MEMORY_BUFFERS:]
    return plain_json({
        **{k: facts[k] for k in ("peak_bytes", "peak_at", "peak_instruction", "peak_computation", "space", "platform",
                                 "positions", "timeline", "summary")},
        "buffers": [{k: b.get(k) for k in _MEMORY_BUFFER_KEYS} for b in kept],
        "more_buffers": facts["more_buffers"] + len(rest),
        "more_bytes": facts["more_bytes"] + sum(int(b["bytes"]) for b in rest),
        "by_line": [{k: r.get(k) for k in ("line", "bytes", "share", "buffers", "kinds", "function", "at")}
                    for r in facts["by_line"][:MEMORY_LINES]],
        "more_lines": max(0, len(facts["by_line"]) - MEMORY_LINES),
        "donation": [{k: d.get(k) for k in ("argument", "shape", "bytes", "donated", "saves", "why")}
                     for d in facts.get("donation", [])[:MEMORY_BUFFERS]],
        "reported": {"explained": str(facts.get("reported", {}).get("explained", ""))},
    }, "view", allow_nan=False)


def backend_entry(kernels) -> dict[str, Any] | None:
    """What a model keeps of the TPU's kernels (``ex.backend()``, a ``Kernels``), as the panel's Backend tab lists
    them: one row per fusion, the longest first (measured time, else libtpu's estimate), with its kernel, bundles,
    bundles issued per call, each unit's slot occupancy, its busiest unit besides the MXU, its time and verdict and
    the user's line (``at``: where it is); the ``BACKEND_ROWS`` first (``more``: the rest). No LLO text. None
    where there are no kernels (``kernels.why`` says why)."""
    if kernels is None or not kernels.available:
        return None
    import math

    from ..analysis.backend import UNITS
    from ..analysis.memory import user_line
    from ..analysis.numbers import human_bytes

    def num(v):
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    rows = []
    for r in kernels.table().to_dict("records"):
        occupancy = {u: float(r[u]) for u in UNITS if u in r and num(r[u]) is not None}
        others = {u: v for u, v in occupancy.items() if u != "MXU"}
        busiest = max(others, key=others.__getitem__) if others else ""
        time = next(((float(r[k]), unit) for k, unit in (("measured_us", "µs"), ("estimated_us", "µs est."),
                                                         ("estimated_cycles", "cycles est."))
                     if num(r[k]) is not None), (None, ""))
        at = user_line(str(r["line"])) if r["line"] else None
        rows.append({"fusion": r["fusion"], "kernel": r["kernel"], "bundles": int(r["bundles"]),
                     "issued": None if num(r["issued"]) is None else int(r["issued"]),
                     "occupancy": occupancy, "busiest": busiest, "time": time[0], "unit": time[1],
                     "bound": r["bound"], "line": line_label(r["line"]), "at": at})
    order = {"µs": 0, "µs est.": 1, "cycles est.": 2, "": 3}
    rows.sort(key=lambda r: (order[r["unit"]], -(r["time"] or 0), -(r["issued"] or 0)))
    verdicts: dict[str, int] = {}
    for r in rows:
        verdict = r["bound"].split(" (")[0]
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    measured = sum(r["unit"] == "µs" for r in rows)
    saved = getattr(kernels, "source", None)  # a table a .hlox kept (analysis.backend.SavedKernels): no dump, no LLO
    origin = (f"from the table saved in {saved} (no LLO)" if saved else f"from libtpu's dump ({kernels.index.files:,} "
              f"files, {human_bytes(kernels.index.total_bytes)})")
    summary = (f"{len({r['kernel'] for r in rows}) if saved else len(kernels.index.kernels)} kernels for {len(rows)} "
               f"instructions{f' on a {kernels.device_kind}' if kernels.device_kind else ''}, {origin}; "
               + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), key=lambda x: -x[1])) + "; times: "
               + (f"measured for {measured} (ex.profile())" if measured else "libtpu's estimate (ex.profile() on the "
                                                                               "TPU measures them)"))
    return plain_json({"summary": summary, "device_kind": kernels.device_kind, "rows": rows[:BACKEND_ROWS],
                       "more": max(0, len(rows) - BACKEND_ROWS), "units": dict(UNITS)}, "view", allow_nan=False)


def line_label(line: str) -> str:
    """A user's ``file:line`` as the user knows it: a notebook cell's as IPython names it (``Cell In[3], line 4``)."""
    from ..pipeline.diagnose import source_label

    file, _, number = line.rpartition(":")
    label = source_label(file) if file and number.isdigit() else file
    return f"{label}, line {number}" if label != file else line


def _size(data: dict[str, Any]) -> int:
    return len(json_text(data, "view", ensure_ascii=False).encode())


def _cost(ex, shown: Sequence[Stage]) -> dict[str, Any]:
    """``cost``: the cost table's rows for the stages shown (the analytic model's; XLA's numbers are left
    to the live panel, as they take a compile per stage), as columns and rows, or None if it fails; and
    ``cost_note`` when a stage over ``DIFF_LINES`` lines is left out, as its diff is: the model takes
    seconds on such a module, and the cell's output waits for its bundle."""
    kept = [s for s in shown if s.lines <= DIFF_LINES]
    left_out = [s.name for s in shown if s.lines > DIFF_LINES]
    note = {"cost_note": f"{' and '.join(left_out)}: over {DIFF_LINES:,} lines, a saved notebook keeps no cost "
                         "rows (they would take seconds to make); the live panel's Cost tab has them"} if left_out else {}
    if not kept:
        return {"cost": None, **note}
    try:
        return {"cost": rows_json(*cost_rows(ex, xla=False, stages=kept), "cost"), **note}
    except Exception:  # noqa: BLE001 -- the saved view goes without a cost table rather than fail
        return {"cost": None, **note}


@functools.cache
def _schema(name: str) -> dict[str, Any]:
    return json.loads((ASSETS / name).read_text())


def validate_view(model: dict[str, Any], schema: str = "view.schema.json", what: str = "a view model") -> None:
    """ValueError naming the field where ``model`` is not ``what`` (a view model) as ``assets/<schema>`` says."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(_schema(schema)).iter_errors(model), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path) or "(the top)"
        raise ValueError(f"not {what} at {where}: {e.message[:300]}")


def view_text(model: dict[str, Any]) -> str:
    """The model in a few lines of plain text: what a saved notebook shows where no JavaScript draws the view
    (GitHub, nbviewer, nbconvert, a terminal): the program, its stages and failure, the toggles, the edits, and
    each run's verdict with the leaves that failed."""
    stages = model["stages"]
    lines = [f"hlo-workbench: {model['title']} on {model['device']}, {len(stages)} stages"
             + ("" if model["complete"] else " (XLA was still compiling)") + f"; pipeline {model['pipeline'][:200]}"]
    if model.get("error"):
        lines.append(f"  {model['error']['stage']} failed: {model['error']['message'].splitlines()[0][:200]}")
    t = model["toggles"]
    for label, names in (("patterns off", t["patterns_disabled"]), ("patterns added", t["patterns_enabled"]),
                         ("XLA passes off", t["xla_disabled"])):
        if names:
            more = f" and {len(names) - 20} more" if len(names) > 20 else ""
            lines.append(f"  {label}: {', '.join(names[:20])}{more}")
    lines += [f"  edit: {e['what']}" for e in model["edits"]]
    for r in model["runs"][-5:]:
        c = r["check"]
        verdict = "no check" if c is None else "check passed" if c["passed"] else \
            "check FAILED at " + ", ".join(leaf["path"] or "()" for leaf in c["leaves"] if not leaf["passed"])[:300]
        median = "no time" if r["median_ms"] is None else f"{r['median_ms']:.4g} ms median"
        lines.append(f"  run {r['stage']} on {r['device']}: {median}, {verdict}"
                     + (" (stale: " + r["stale"] + ")" if r["stale"] else ""))
    if model.get("drift"):
        lines.append(f"  drift: {model['drift']['summary'][:300]}")
    return "\n".join(lines)
