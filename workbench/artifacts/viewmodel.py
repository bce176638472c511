"""The one view model: every fact a view of an Exploration shows, computed once, here, into one typed,
versioned JSON document (``format`` 2, described by ``assets/view.schema.json``).

Every view is drawn from it by the one set of TypeScript components (``extensions/hlo-workbench-lab/src/
components``, built into ``assets/views.js``): the panel's saved view in a notebook, the offline report,
the JupyterLab extension's ``.hlox`` viewer and its Compare tab. None of them computes a fact again:
what a kernel-free view needs beyond the model (another pair's diff, a comparison of two files) it asks
Python for through the Jupyter server extension (``views/labserver.py``), which builds it here.

    {"schema": "hlo-workbench/view", "format": 2, "source": "panel" | "saved" | "hlox" | "report",
     "title", "pipeline", "device", "variable", "toggles", "versions", "complete", "error",
     "columns", "stages", "shown": {"left", "right"}, "ops_delta", "cost", "caps", "texts", "diff",
     "edits", "runs", "drift", "compile", "notes"}

``stages`` are ``Exploration.table()``'s rows with each stage's parent and whether a hand edit made it
(``edited``); ``diff`` is the structural diff of the pair shown as the panel's Diff tab makes it
(``stage_diffs.carried``: normalized texts and runs), or a ``note`` saying why there is none; ``edits``
the exploration's edits in order; ``runs`` the session's runs, each with its check leaf by leaf (the
leaves of the program's outputs, as ``RunResult.check.table()`` lists them), its printed output (once
per call the user asked for) and whether its program is still the one shown (``stale``: why not);
``drift`` what ``ex.drift`` found, in one sentence and one place; ``compile`` XLA's compile profile.

Each text is cut at a line boundary to ``TEXT_BYTES`` (UTF-8) and the whole JSON to about
``TOTAL_BYTES``; a text entry says whether it was cut (``cut``, ``kept_lines`` of ``lines``, a ``note``)
and its ``state`` (ok, failed, or missing: an XLA stage still compiling). The diff is whole or left out:
for a failed or missing stage, texts over ``DIFF_LINES`` lines, or one over ``DIFF_BYTES`` or what the
rest leaves of ``TOTAL_BYTES``. The analytic cost rows of the pair leave out a stage over ``DIFF_LINES``
lines too (``cost_note``). ``text/html`` (``summary_html``) is a static summary that reads without
JavaScript (GitHub, nbviewer, nbconvert, an untrusted notebook); every piece of IR in it is escaped.

The panel carries the model beside its widget view in the same output, and sends it again
(``update_display``) after each action, so a saved notebook holds the panel as it ended, not as the
cell first showed it; the extension's renderer keeps the live panel through those updates.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from markupsafe import Markup

from ..analysis.cost import cost_table
from ..ir.ops import op_counts
from ..ir.text import short_pass
from .assets import ASSETS
from .versions import versions
from .jsonout import json_text, plain_json, table_json
from .stage_diffs import carried
from ..stages import Stage

if TYPE_CHECKING:
    from ..analysis.diff import Diff

__all__ = ["MIME", "FORMAT", "SCHEMA", "TEXT_BYTES", "TOTAL_BYTES", "DIFF_BYTES", "DIFF_LINES", "default_right",
           "view_model", "view_bundle", "view_schema", "validate_view", "summary_html", "cut_text",
           "run_entry", "drift_entry", "edit_entry"]

MIME = "application/vnd.hlo-workbench.exploration+json"
SCHEMA = "hlo-workbench/view"
FORMAT = 2
TEXT_BYTES = 200_000  # per stage text, UTF-8
TOTAL_BYTES = 1_000_000  # the whole JSON, about: the texts give way (the table's cells are cut to CELL_CHARS)
CELL_CHARS = 16_000  # a pass string or an error in the stage table (a pattern list is about 12,000)
COLUMNS = ("stage", "group", "changed", "lines", "ms", "cached", "error", "produced_by")  # Exploration.table()'s
PREVIEW_LINES = 80  # lines of diff (or of each text) in text/html
PREVIEW_LINE_CHARS = 300
DIFF_LINES = 20_000  # bigger texts: neither a diff in text/html nor a carried one (it would cost seconds)
DIFF_BYTES = 400_000  # the carried diff (its normalized texts and runs, UTF-8 in the JSON), at most
PRINTED_CHARS = 20_000  # a run's printed output kept in the model, at most
RUNS_KEPT = 50  # the newest runs a model lists


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
    names = [s.name for s in stages]
    if not right:
        right = default_right(stages).name
    if not left:
        parent = next((s.parent for s in stages if s.name == right), None)
        left = parent or names[0]
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
    if s is None:
        return {"stage": name, "state": "missing", "text": "", "lines": 0, "kept_lines": 0, "cut": False,
                "note": "XLA was compiling when this was saved: the stage has no text here"}
    if s.error:
        return {"stage": name, "state": "failed", "text": "", "lines": 0, "kept_lines": 0, "cut": False,
                "note": f"the stage failed: {_cell(s.error)}"}
    text, kept, lines = cut_text(s.text, limit)
    cut = kept < lines
    note = (f"cut: the first {kept:,} of {lines:,} lines are kept ({limit // 1000:,} kB per text in a saved "
            "notebook)") if cut else ""
    return {"stage": name, "state": "ok", "text": text, "lines": lines, "kept_lines": kept, "cut": cut, "note": note}


def _ops_delta(a: Stage | None, b: Stage | None) -> list[dict[str, Any]]:
    """The ops whose count differs from ``a`` to ``b``, as ``Diff.ops_delta()`` counts them."""
    if a is None or b is None or a.error or b.error:
        return []
    before, after = op_counts(a.text), op_counts(b.text)
    rows = [{"op": op, "before": before[op], "after": after[op], "delta": after[op] - before[op]}
            for op in sorted(before.keys() | after.keys()) if before[op] != after[op]]
    rows.sort(key=lambda r: (-abs(r["delta"]), r["op"]))
    return rows


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
    view that draws the pair elsewhere (the panel's Diff and Cost tabs)."""
    return _model(ex, left, right, stages, wait, source=source, variable=variable, runs=runs, drift=drift,
                  compile_profile=compile_profile, pair=pair)[0]


def _model(ex, left: str | None, right: str | None, stages: Sequence[Stage] | None, wait: float | None, *,
           source: str = "panel", variable: str | None = None, runs: Sequence | None = None, drift=None,
           compile_profile=None, pair: bool = True) -> tuple[dict[str, Any], "Diff | None"]:
    """``view_model``'s JSON, and the diff of the pair shown (None when there is none to make)."""
    complete = stages is not None or wait is None or ex.xla_ready(wait)
    stages = list(stages if stages is not None else ex.stages if complete else ex.pipeline_stages)
    left, right = _pair(stages, left, right)
    by_name = {s.name: s for s in stages}
    error = ex.error if complete else ex.pipeline_error
    spec = ex.spec
    data: dict[str, Any] = {
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
        "ops_delta": _ops_delta(by_name.get(left), by_name.get(right)) if pair else [],
        **(_cost(ex, [by_name[n] for n in dict.fromkeys((left, right)) if n in by_name]) if pair else {"cost": None}),
        "edits": [edit_entry(e) for e in getattr(ex, "edits", ())],
        "runs": _runs(ex, ex.history if runs is None else runs),
        "drift": None if drift is None else drift_entry(drift),
        "compile": _compile(compile_profile),
        "caps": {"text_bytes": TEXT_BYTES, "total_bytes": TOTAL_BYTES, "diff_bytes": DIFF_BYTES},
        "texts": {},
    }
    if not pair:
        data["diff"] = {"left": left, "right": right, "note": "this view draws the pair elsewhere"}
        return plain_json(data, "view", allow_nan=False), None
    diff, data["diff"] = _diff_entry(by_name.get(left), by_name.get(right), left, right,
                                     TOTAL_BYTES - _size(plain_json(data, "view")))
    names = list(dict.fromkeys((left, right)))
    limit = TEXT_BYTES
    while True:  # the texts share what the rest leaves of TOTAL_BYTES (JSON escapes count too)
        data["texts"] = {n: _text_entry(by_name.get(n), n, limit) for n in names}
        data = plain_json(data, "view", allow_nan=False)
        size = _size(data)
        if size <= TOTAL_BYTES or limit == 0:
            return data, diff
        limit = max(0, int(limit * TOTAL_BYTES / size) - 1000)


def edit_entry(e) -> dict[str, Any]:
    """One hand edit (``stages.Edit``): its kind, step, the stage it was made on, the pass it inserted or
    removed, how many lines a replaced text has, and the edit in words."""
    what = {"text": f"the text of {e.stage} replaced by hand",
            "insert": f"{e.pass_} inserted after {e.stage}",
            "remove": f"{e.stage} ({short_pass(e.pass_)}) left out"}[e.kind]
    return {"kind": e.kind, "at": e.at, "stage": e.stage, "pass": e.pass_,
            "text_lines": e.text.count("\n") + bool(e.text) if e.kind == "text" else 0, "what": what}


def _finite(v) -> float | None:
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
            "note": c.note, "max_abs": _finite(c.max_abs), "max_rel": _finite(c.max_rel),
            "lowered_abs": _finite(c.lowered_abs),
            "leaves": [{"path": l.path, "shape": list(l.shape), "dtype": l.dtype, "max_abs": _finite(l.max_abs),
                        "max_rel": _finite(l.max_rel), "tolerance": _finite(l.tolerance), "passed": bool(l.passed),
                        "rule": l.rule, "computed": l.computed or ""} for l in c.leaves]}


def run_entry(r, ex=None) -> dict[str, Any]:
    """One run (``RunResult``): its stage and device, the median, fastest and spread (IQR) of its times, the
    settings of the program it ran (pipeline, toggles, XLA options, in words), its check leaf by leaf,
    what it printed (host callbacks, warnings: once per call the user asked for) and, given ``ex``, why its
    program is not ``ex``'s any more ("" where it is)."""
    t = r.timing
    printed = "".join(getattr(r, "printed", ()) or ())
    cut = len(printed) > PRINTED_CHARS
    program = getattr(r, "program", None)
    return {"stage": r.stage, "device": r.device, "repeat": len(t.times),
            "median_ms": _finite(t.median * 1e3), "min_ms": _finite(t.min * 1e3), "iqr_ms": _finite(t.iqr * 1e3),
            "settings": program.settings if program is not None else "",
            "check": _check(r.check), "printed": printed[:PRINTED_CHARS],
            "printed_cut": cut, "stale": r.why_stale(ex) if ex is not None else ""}


def _runs(ex, runs: Sequence) -> list[dict[str, Any]]:
    return [run_entry(r, ex) for r in list(runs)[-RUNS_KEPT:]]


def drift_entry(d) -> dict[str, Any]:
    """What ``ex.drift`` found (``Drift``), said once: the sentence, the user's line, and the op with the
    stage and patterns that made it."""
    op = d.op
    return {"stage": d.stage, "reference": d.reference, "device": d.device, "found": d.found,
            "summary": d.summary(), "line": d.line, "runs": d.runs, "compared": d.compared, "ops": d.ops,
            "op": None if op is None else {
                "result": op.result, "op": op.op, "line": op.line, "text": op.text[:2000], "source": op.source,
                "made_by": op.made_by, "made_by_pass": short_pass(op.made_by_pass or ""),
                "changed_by": op.changed_by, "patterns": list(op.patterns), "blame": op.blame_note,
                "cause": None if getattr(op, "cause", None) is None else {
                    "kind": op.cause.kind, "stage": op.cause.stage, "patterns": list(op.cause.patterns),
                    "words": op.cause.words()},
                "max_abs": _finite(op.check.max_abs), "tolerance": _finite(op.check.tolerance)}}


def _compile(profile) -> dict[str, Any] | None:
    if profile is None:
        return None
    try:
        table = profile.table  # CompileProfile.table is the DataFrame; a Profile's is a method
        return {"table": table_json(table() if callable(table) else table, "compile")}
    except Exception:  # noqa: BLE001 -- a view goes without the compile profile rather than fail
        return None


def _size(data: dict[str, Any]) -> int:
    return len(json_text(data, "view", ensure_ascii=False).encode())


def _diff_entry(a: Stage | None, b: Stage | None, left: str, right: str, room: int) -> tuple[Diff | None, dict]:
    """The structural diff of ``a`` and ``b`` as the panel's Diff tab shows it (``ex.diff(left, right)``),
    as the bundle carries it (``stage_diffs.carried``: ``before``, ``after``, ``runs``) when it takes at
    most ``DIFF_BYTES`` and ``room`` bytes of JSON, else a ``note`` saying why not; and the Diff."""
    head = {"left": left, "right": right}
    if a is None or b is None or a.error or b.error:
        return None, {**head, "note": "a stage shown has no text to compare"}
    if max(a.lines, b.lines) > DIFF_LINES:
        return None, {**head, "note": f"over {DIFF_LINES:,} lines, a saved notebook keeps no structural diff "
                                      "(it would take seconds to make)"}
    from ..analysis.diff import diff_texts

    diff = diff_texts(a.text, b.text, left, right)
    entry = {**head, **carried(diff)}
    size = _size(entry)
    if size > min(DIFF_BYTES, room):
        return diff, {**head, "note": f"the structural diff takes {size:,} bytes, over the "
                                      f"{min(DIFF_BYTES, max(room, 0)):,} a saved notebook keeps for it"}
    return diff, entry


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
        return {"cost": table_json(cost_table(ex, xla=False, stages=kept)), **note}
    except Exception:  # noqa: BLE001 -- the saved view goes without a cost table rather than fail
        return {"cost": None, **note}


# -- text/html ---------------------------------------------------------------------------------------
# Written with markupsafe's Markup.format and Markup.join, as html.py is: every value they are given (a
# stage name, the title, a pass string, an error, an op, a note, a line of IR) is escaped, the markup
# written here is not; summary_html hands the result on as a plain str.
_STYLE = {"-": "color:#b31d28;background:#ffeef0", "+": "color:#22863a;background:#e6ffed", "@": "color:#6f42c1"}
_PRE = Markup('<pre style="max-height:32em;overflow:auto;font-family:monospace;font-size:12px;line-height:1.35;'
              'margin:4px 0">{}{}</pre>')
_TH = Markup('<th style="text-align:left;padding:1px 8px">{}</th>')
_TD = Markup('<td style="text-align:left;padding:1px 8px">{}</td>')


def _clip(line: str) -> str:
    return line if len(line) <= PREVIEW_LINE_CHARS else line[:PREVIEW_LINE_CHARS] + " …"


def _pre(lines: Sequence[str], more: int, marked: bool = False) -> Markup:
    out = []
    for line in lines:
        style = _STYLE.get(line[:1]) if marked and not line.startswith(("---", "+++")) else None
        body = _clip(line)
        out.append(Markup('<span style="{}">{}</span>').format(style, body) if style else body)
    tail = Markup("\n… {:,} more lines (the saved JSON has the texts; the live panel the whole diff)").format(
        more) if more else ""
    return _PRE.format(Markup("\n").join(out), tail)


def _preview(data: dict[str, Any], texts: dict[str, str], diff: Diff | None = None) -> Markup:
    """The beginning of the diff of the pair shown (unified, as ``Diff.unified()``; ``diff``: that diff, made
    already), or of their texts. ``texts``: the whole texts of the stages shown that have one."""
    left, right = data["shown"]["left"], data["shown"]["right"]
    if left != right and left in texts and right in texts and \
            max(data["texts"][n]["lines"] for n in (left, right)) <= DIFF_LINES:
        from ..analysis.diff import diff_texts

        unified = (diff or diff_texts(texts[left], texts[right], left, right)).unified()
        if not unified:
            return Markup("<div>stages <b>{}</b> and <b>{}</b> have the same text</div>").format(left, right)
        lines = unified.splitlines()
        return Markup("<div><b>diff</b> {} &rarr; {} (SSA names and locations ignored)</div>{}").format(
            left, right, _pre(lines[:PREVIEW_LINES], max(0, len(lines) - PREVIEW_LINES), marked=True))
    out = []
    for name in dict.fromkeys((left, right)):
        entry = data["texts"][name]
        note = Markup(" <i>({})</i>").format(entry["note"]) if entry["note"] else ""
        lines = entry["text"].splitlines()[:PREVIEW_LINES]
        out.append(Markup("<div><b>{}</b>, {:,} lines{}</div>{}").format(
            name, entry["lines"], note, _pre(lines, max(0, entry["lines"] - len(lines))) if lines else ""))
    return Markup("").join(out)


def _table(rows: Sequence[dict[str, Any]], shown: dict[str, str]) -> Markup:
    body = []
    for r in rows:
        mark = Markup(" &larr; B") if r["stage"] == shown["right"] else \
            Markup(" &larr; A") if r["stage"] == shown["left"] else ""
        cells = [Markup("<b>{}</b>{}").format(r["stage"], mark) if mark else r["stage"], r["group"],
                 "yes" if r["changed"] else "", r["lines"], "" if r["ms"] is None else format(r["ms"], "g"),
                 "yes" if r["cached"] else "", r["error"].splitlines()[0][:200] if r["error"] else "",
                 Markup("<code>{}</code>").format(short_pass(r["produced_by"]))]
        body.append(Markup("<tr>{}</tr>").format(Markup("").join(_TD.format(c) for c in cells)))
    return Markup('<table style="font-size:12px"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>').format(
        Markup("").join(_TH.format(c) for c in COLUMNS), Markup("").join(body))


_FOOTER = {"saved": "saved view of the pass-toggle panel; run the cell for the live panel",
           "panel": "saved view of the pass-toggle panel; run the cell for the live panel",
           "hlox": "a saved exploration (.hlox); wb.load(path) explores it again",
           "report": "an offline report of an exploration; its interactive view needs JavaScript"}


def summary_html(data: dict[str, Any], texts: dict[str, str] | None = None, diff: Diff | None = None) -> str:
    """The static summary of a bundle's JSON; ``texts``: the whole texts of the stages shown that have
    one, for the diff (default: the JSON's texts); ``diff``: their diff, if made already."""
    if texts is None:
        texts = {n: e["text"] for n, e in data["texts"].items() if e["state"] == "ok"}
    rows, shown = data["stages"], data["shown"]
    changed = sum(1 for r in rows if r["changed"])
    toggles = data["toggles"]
    bits = [Markup("<b>{}</b>").format(data["title"]), Markup("pipeline <code>{}</code>").format(data["pipeline"][:80]),
            (f"{len(rows)} stages{'' if data['complete'] else ' (XLA was still compiling: its stages are not listed)'}"
             f", {changed} changed"), data["device"]]
    if toggles["patterns_disabled"]:
        bits.append("patterns off: " + ", ".join(toggles["patterns_disabled"]))
    if toggles["patterns_enabled"]:
        bits.append("patterns added: " + ", ".join(toggles["patterns_enabled"]))
    if toggles["xla_disabled"]:
        bits.append("XLA off: " + ", ".join(toggles["xla_disabled"]))
    error = Markup('<pre style="color:#b00;white-space:pre-wrap">{}</pre>').format(
        data["error"]["message"][:2000]) if data["error"] else ""
    delta = Markup(", ").join(Markup("<code>{}</code> {}&rarr;{} ({:+d})").format(r["op"], r["before"], r["after"],
                                                                                 r["delta"])
                              for r in data["ops_delta"][:12])
    more = f" … {len(data['ops_delta']) - 12} more" if len(data["ops_delta"]) > 12 else ""
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    return str(Markup(
        '<div class="hlo-workbench-saved" data-format="{}"><div>hlo-workbench &middot; {}</div>{}'
        "<div>shown: A <b>{}</b> &rarr; B <b>{}</b>{}</div>{}"
        "<details><summary>the stage table ({} stages)</summary>{}</details>"
        '<div style="font-size:11px;color:#666">{} ({})</div></div>').format(
        data["format"], Markup(" &middot; ").join(bits), error, shown["left"], shown["right"],
        Markup(" &middot; ops: {}{}").format(delta, more) if delta else "", _preview(data, texts, diff), len(rows),
        _table(rows, shown), _FOOTER.get(data.get("source", "saved"), ""), versions))


def view_bundle(ex, left: str | None = None, right: str | None = None, *, stages: Sequence[Stage] | None = None,
                wait: float | None = None, **kw) -> dict[str, Any]:
    """The MIME bundle of ``ex`` with ``left`` and ``right`` shown: the view model (``view_model``; ``kw`` go
    to it), ``text/html`` (``summary_html``) and ``text/plain``."""
    data, diff = _model(ex, left, right, stages, wait, **kw)
    texts = {}
    for n, entry in data["texts"].items():
        if entry["state"] == "ok":
            texts[n] = ex.stage(n).text if entry["cut"] else entry["text"]
    shown = data["shown"]
    return {MIME: data, "text/html": summary_html(data, texts, diff),
            "text/plain": f"{ex!r}; shown: {shown['left']} -> {shown['right']}"}


@functools.cache
def view_schema() -> dict[str, Any]:
    """The view model's JSON Schema (``assets/view.schema.json``)."""
    return json.loads((ASSETS / "view.schema.json").read_text())


def validate_view(model: dict[str, Any]) -> None:
    """ValueError naming the field where ``model`` is not a view model as ``view_schema()`` says."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(view_schema()).iter_errors(model), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path) or "(the top)"
        raise ValueError(f"not a view model at {where}: {e.message[:300]}")
