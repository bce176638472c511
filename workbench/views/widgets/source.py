"""The panel's Source tab: the user's code, each line with what it became in the right-hand stage B --
a heat bar of its flops or bytes and the count of its ops -- and the link between a line, its ops and
their counterparts in every stage.

* The tab lists the functions as written (from the ``def`` of the first line with ops in each file to
  the end of the last one's function, read with ``linecache``), from ``ex.source_map(stage=B)``; the
  ``(no location)`` row comes last. XLA stages are costed by XLA's own analysis, MLIR stages by the
  analytic model: the tab says which.
* Clicking a line selects its ops: the diff view marks the rows of A's ops (left) and B's (right)
  whose user line it is (``ex.locations(stage)``).
* Clicking an op in the diff view marks it, its counterparts on the other side and its source line
  here, and shows its lineage: one line per stage with its counterparts, and which stage removed it
  (``ex.lineage(stage, op)``).

The diff view and the lineage (``area``) sit in the Diff tab (``home``) and move into this tab while it
is shown, so a click on a line shows its ops at once. Work runs on the panel's worker; a stage without
locations, a failed or text stage or the jaxpr is said in the tab, and the panel goes on working. Python
makes the facts; the view component "source" (extensions/hlo-workbench-lab/src/components/source.ts) draws them.
"""
from __future__ import annotations

import linecache
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable

import ipywidgets as W

from ...analysis.diff import shown_lines
from ...analysis.provenance import LIBRARY_ONLY, NO_LOCATION, short_path
from ...errors import WorkbenchError
from ...exploration import Exploration
from ...pipeline.diagnose import source_label
from . import actions
from .component import Component
from .diffview import DiffView

__all__ = ["METRICS", "SourceTab", "cost_note", "lineage_rows", "listing_rows", "measured_note"]

METRICS = ("flops", "bytes", "measured")  # what the heat bars can show

_DEF = re.compile(r"\s*(?:async\s+)?def\s")
_GAP = 40  # a run of more lines without ops than this is folded
_WIDEN = 120  # how far up (down) a line's function is looked for


# -- the listing (pure: a source map in, the rows SourceView shows out) -----------------------------------
def _si(x: float) -> str:
    """4726784 -> "4.73M": what a heat bar is labelled with."""
    x = float(x)
    for size, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.3g}" if x else "0"


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _function_bounds(file: str, first: int, last: int, getline=linecache.getline) -> tuple[int, int]:
    """``first``..``last`` widened to the whole functions around them: up to the ``def`` (and its
    decorators) of ``first``'s function, down to the end of ``last``'s (its last non-blank line)."""
    start, base = first, None
    top = getline(file, first)
    for n in range(first, max(0, first - _WIDEN), -1):
        text = getline(file, n)
        if _DEF.match(text) and (n == first or _indent(text) < _indent(top)):
            start, base = n, _indent(text)
            while start > 1 and getline(file, start - 1).lstrip().startswith("@"):
                start -= 1
            break
    if base is None:
        return first, last
    end, scope = last, base  # the def around ``last``, if it is another one than ``first``'s
    for n in range(last, max(0, last - _WIDEN), -1):
        text = getline(file, n)
        if _DEF.match(text) and _indent(text) <= _indent(getline(file, last)):
            scope = _indent(text)
            break
    for n in range(last + 1, last + _WIDEN):
        text = getline(file, n)
        if not text:
            break  # the end of the file
        if text.strip() and _indent(text) <= scope:
            break
        if text.strip():
            end = n
    return start, end


def listing_rows(sm, metric: str = "flops", getline=linecache.getline) -> list[dict]:
    """The rows of ``SourceView`` for ``Exploration.source_map(stage=...)``: per file a ``file`` row, then
    each line of its functions (``line``: ``file, line, code``, and for a line with ops ``ops``, ``value``
    (its ``metric``), ``label`` and ``frac``, its share of the costliest line's), a ``gap`` row for a long
    run of lines without ops, and the ``(no location)`` row (``none``) last."""
    by_file: dict[str, dict[int, dict]] = defaultdict(dict)
    none = None
    unit = " µs" if metric == "measured_us" else ""
    for r in sm.to_dict("records"):
        # the user's own line leads; a line reached only through libraries is listed at the library's line
        mine = r.get("your_file", r["file"]) not in (NO_LOCATION, LIBRARY_ONLY)
        file, line = (r["your_file"], int(r["your_line"])) if mine and "your_file" in r else (r["file"], int(r["line"]))
        lib = f"{short_path(r['file'])}:{int(r['line'])}" if (file, line) != (r["file"], int(r["line"])) else ""
        if r["file"] != NO_LOCATION and not mine:
            lib = "library code only"
        slot = none if r["file"] == NO_LOCATION else by_file[file].get(line)
        if slot is None:
            slot = {"ops": 0, "value": 0.0, "flops": 0, "bytes": 0, "inferred": 0, "fusions": [], "lib": [],
                    "measured": [], "code": (r.get("your_code") if mine else r.get("code")) or "",
                    "function": (r.get("your_function") if mine else r.get("function")) or ""}
            if r["file"] == NO_LOCATION:
                none = slot
            else:
                by_file[file][line] = slot
        slot["ops"] += int(r["ops"])
        slot["value"] += float(r[metric])
        slot["flops"] += int(r["flops"])
        slot["bytes"] += int(r["bytes"])
        slot["inferred"] += int(r.get("inferred", 0) or 0)
        for f in str(r.get("fusions") or "").split(", "):
            if f and f not in slot["fusions"]:
                slot["fusions"].append(f)
        if lib and lib not in slot["lib"]:
            slot["lib"].append(lib)
        if "measured_us" in r:
            slot["measured"].append(f"{_si(r['measured_us'])} µs ({r.get('measured_how') or 'no instruction'})")
    slots = [x for lines in by_file.values() for x in lines.values()] + ([none] if none else [])
    top = max((x["value"] for x in slots), default=0.0) or 1.0
    for x in slots:
        x.update(_info(x, top, unit))
    rows: list[dict] = []
    for file, lines in by_file.items():
        first, last = _function_bounds(file, min(lines), max(lines), getline)
        rows.append({"k": "file", "file": file, "line": 0, "code": source_label(file)})  # a cell: "Cell In[3]"
        quiet: list[dict] = []  # lines without ops since the last line with some
        for n in range(first, last + 1):
            info = lines.get(n)
            code = getline(file, n).rstrip("\r\n")
            if info is None:
                quiet.append({"k": "line", "file": file, "line": n, "code": code, "ops": 0, "frac": 0.0, "label": ""})
                continue
            rows += quiet if len(quiet) <= _GAP else [{"k": "gap", "file": file, "line": quiet[0]["line"],
                                                       "code": f"… {len(quiet)} lines without ops …"}]
            quiet = []
            rows.append(dict(info, k="line", file=file, line=n, code=code or info["code"]))
        rows += quiet
    if none is not None:
        rows.append(dict(none, k="none", file="", line=0, code=NO_LOCATION + ": ops with no line of your code"))
    return rows


def _info(slot: dict, top: float, unit: str) -> dict:
    """What a line of the listing shows of the rows of the source map it sums (``slot``)."""
    lib, fusions = slot.pop("lib"), slot.pop("fusions")
    inferred, measured = slot.pop("inferred"), slot.pop("measured")
    title = (f"{slot['ops']} ops, {_si(slot.pop('flops'))} flops, {_si(slot.pop('bytes'))} bytes"
             + (f" ({inferred} with no location of their own: inferred through the dataflow)" if inferred else "")
             + (f"; through {', '.join(lib)}" if lib else "") + (f"; in fusions: {', '.join(fusions)}" if fusions else "")
             + (f"; measured {', '.join(measured)}" if measured else ""))
    return {"label": _si(slot["value"]) + unit, "frac": round(slot["value"] / top, 4), "title": title,
            "lib": ", ".join(lib)}


def measured_note(stage, profile) -> str:
    """What the heat bars measure when they show measured time (``profile``: the Profile they come from)."""
    return (f"the bars: measured run time per line, from JAX's profiler: {profile.stage} run {profile.calls} times on "
            f"{profile.device} ({profile.call_said()}; the times and shares are under the profiler, and the "
            f"instructions cover {round(100 * profile.coverage, 1)}% of the traced call); an instruction made from "
            "several lines is split by their flops, else bytes; the count is how many ops the line became in "
            f"{stage.name}. Click a line to mark its ops in the diff below.")


def cost_note(stage, metric: str) -> str:
    """What the heat bars measure, for stage ``stage``."""
    if stage.group in ("xla", "backend"):
        what = (f"XLA's own cost analysis (HloCostAnalysis) of each instruction of {stage.name}; a fusion counts at "
                "its root's line, and its lines list it")
    else:
        what = (f"the workbench's analytic cost model of each op of {stage.name} (XLA's own numbers are those of the "
                "xla: stages)")
    return (f"the bars: {metric} per line, from {what}; the count is how many ops the line became there. Click a "
            "line to mark its ops in the diff below.")


def lineage_rows(df, stage: str, result: str, op: str, pair: tuple[str, str]) -> dict:
    """``Exploration.lineage(stage, result)`` as the tab shows it: the op followed, the user's lines it came from
    (``sources``), the stage that removed it (``removed_by``, "" when it lives on to the last stage), and one
    row per stage: the side it is in the diff (``pair``: A, B), its counterparts there (``count``, the first 8
    in ``ops``: result, op, the IR line as ``text``; ``more``), or why it has none (``state`` "removed" or
    "none", ``note``)."""
    removed = df.attrs.get("removed_by") or ""
    rows = []
    for name, part in df.groupby("stage", sort=False):
        found = part[part["result"] != ""]
        ops = [{"result": r, "op": o.rpartition(".")[2], "text": t}
               for r, o, t in zip(found["result"], found["op"], found["text"])]
        rows.append({"stage": name, "side": " ".join(t for t, s in zip("AB", pair) if s == name), "count": len(ops),
                     "state": "found" if ops else "removed" if name == removed else "none",
                     "note": "" if ops else str(part["text"].iloc[0]), "ops": ops[:8], "more": max(0, len(ops) - 8)})
    return {"stage": stage, "result": result, "op": op, "sources": list(df.attrs.get("sources", [])),
            "removed_by": removed, "rows": rows}


def _same(key: tuple, other: tuple | None) -> bool:
    """Whether two keys (an Exploration, then names and numbers) are one: the Exploration by identity."""
    return other is not None and key[0] is other[0] and key[1:] == other[1:]


def _key(file: str, line: int) -> str:
    return f"{file}:{int(line)}"


def _said(text: str, error: bool = False) -> dict:
    """A line of what the tab says under the diff view (``error``: drawn as an error)."""
    return {"text": text, "error": error}


class SourceTab:
    """The Source tab's widgets (``widget``; ``home`` holds the diff view in the Diff tab) and actions.
    ``exploration()`` is the Exploration shown, ``pair()`` its two stages (A, B), ``submit(label, python,
    work, busy=...)`` queues work on the panel's worker; ``diff_view`` is the panel's, whose marks this
    tab sets (the panel hands its clicks on ops to ``select_op``).

    ``view`` (the listing) and ``trail`` (under the diff view) are components whose ``data`` holds what they
    show: ``view.data``: ``metric`` (one of METRICS), ``unit`` (what the bars' values are), ``note``,
    ``message`` (why there are no rows), ``rows`` (``listing_rows``), ``selected`` ("file:line" of the lines
    marked); ``trail.data``: ``status`` (what is marked, and why something is not: ``{"text", "error"}``) and
    ``lineage`` (``lineage_rows``, ``{"error": ...}`` when there is none to show, or None). The component
    sends "line" ({file, line}: file "" for the ops with no line) and "metric" ({metric}). ``on_line(file, line)``
    hears each line selected (the Backend tab selects the fusions it went into)."""

    def __init__(self, name: str, exploration: Callable[[], Exploration], pair: Callable[[], tuple[str, str]],
                 submit: Callable, diff_view: DiffView, on_line: Callable[[str, int], None] | None = None):
        self.name, self._on_line = name, on_line
        self._exploration, self._pair, self._submit = exploration, pair, submit
        self.diff_view = diff_view
        self.view = Component("source", {"part": "listing", "metric": "flops", "unit": "flops", "note": "",
                                          "message": "", "rows": [], "selected": []}, on_action=self._on_action)
        self.trail = Component("source", {"part": "trail", "status": [], "lineage": None})
        self.area = W.VBox([diff_view, self.trail])  # the diff view and what goes with it
        self.home = W.VBox([self.area])  # in the Diff tab
        self._slot = W.VBox([])  # in this tab, while it is shown
        self.widget = W.VBox([self.view, self._slot])
        self.selection: tuple | None = None  # ("line", file, line) or ("op", stage, result)
        self._sm = self._sm_stage = None  # the source map listed, and its stage
        self._listed = self._marked = None  # the (Exploration, ...) the listing and the marks are for
        self._lineage = None  # (Exploration, stage, result, op, df) of the op selected
        self._seen: Exploration | None = None  # the Exploration the caches below are of
        self._located: dict[str, tuple] = {}  # stage -> (ex.locations(stage), shown_lines, their inverse)

    @property
    def metric(self) -> str:
        """What the heat bars show: one of METRICS."""
        return self.view.data["metric"]

    # -- the panel's calls ----------------------------------------------------------------------------
    def show(self, ex: Exploration, left: str, right: str, *, visible: bool, waiting: str = "") -> None:
        """Follow the panel: the diff view in this tab while it is ``visible``; the listing of ``right``
        (when visible: ``waiting`` names a stage whose XLA compile is under way); the selection marked
        anew in a new diff."""
        self._place(visible)
        listed = (ex, right, waiting)
        if visible and not _same(listed, self._listed):
            self._listed = listed
            self._fill(ex, right, waiting)
        marked = (ex, left, right, self.diff_view.data["shown"])
        if _same(marked, self._marked):
            return
        self._marked = marked
        if self._lineage is not None and self._lineage[0] is not ex:  # another Exploration: its ops are others
            self._lineage = None
            _set(self.trail, lineage=None)
            if self.selection and self.selection[0] == "op":
                self.selection = None
                _set(self.view, selected=[])
        if self.selection and not waiting:
            self._submit("marking the selection", None, self._remark, busy=False)

    def set_metric(self, metric: str) -> None:
        """The heat bars by ``metric`` (one of METRICS): flops and bytes are in every source map; measured
        time is profiled and mapped when first asked for."""
        if metric not in METRICS:
            raise ValueError(f"the bars show one of {', '.join(METRICS)}, not {metric!r}")
        _set(self.view, metric=metric)
        if metric == "measured" and self._listed is not None and (self._sm is None
                                                                   or "measured_us" not in self._sm.columns):
            self._fill(*self._listed)
        else:
            self._draw()

    def select_line(self, file: str, line: int) -> None:
        """Select the ops of line ``line`` of ``file`` (file "": those with no line): marked in the diff."""
        ex, (left, right) = self._exploration(), self._pair()
        self.selection = ("line", file, int(line))
        _set(self.view, selected=[_key(file, line)])
        if self._on_line is not None:
            self._on_line(file, int(line))
        act = actions.ops_at(self.name, right, file, int(line))
        self._submit(act.label, act.python, lambda: self._mark_line(ex, left, right, file, int(line)), busy=False)

    def select_op(self, side: str, line: int) -> None:
        """The op on line ``line`` (0-based, as the diff view shows it) of the diff's ``side`` ("before": A,
        "after": B): it, its counterparts and its source line marked, its lineage shown."""
        ex, (left, right) = self._exploration(), self._pair()
        stage = left if side == "before" else right

        def find():
            try:
                df, shown, _ = self._locate(ex, stage)
            except WorkbenchError as e:
                _set(self.trail, status=[_said(f"{stage} has no ops to follow: {e}", error=True)])
                return
            text_line = shown[line] if 0 <= line < len(shown) else -1
            hit = df[(df["text_line"] == text_line) & (df["result"] != "") & (df["op"] != "func.func")]
            if hit.empty:
                _set(self.trail, status=[_said(f"line {line + 1} of {stage} is not an op: click the line of an op to "
                                                "follow it")])
                return
            self.pick_op(stage, hit["result"].iloc[0], ex)

        self._submit(f"finding the op at line {line + 1} of {stage}", None, find, busy=False)

    def pick_op(self, stage: str, result: str, ex: Exploration | None = None) -> None:
        """Follow op ``result`` of ``stage``: its lineage, its counterparts marked in the diff, its line here."""
        ex = ex or self._exploration()
        act = actions.lineage(self.name, stage, result)

        def work():
            try:
                located = self._locate(ex, stage)[0]
                df = act.call(ex)
            except WorkbenchError as e:  # an op with no line of the user's, a stage without ops: said here
                self.selection, self._lineage = ("op", stage, result), None
                _set(self.trail, lineage={"error": str(e)})
                try:
                    self._mark_op(ex, stage, result, None)
                except WorkbenchError:
                    self.diff_view.mark()
                return
            op = next(iter(located[located["result"] == result]["op"]), "")
            self.selection, self._lineage = ("op", stage, result), (ex, stage, result, op, df)
            _set(self.view, selected=[_key(*s.rsplit(":", 1)) for s in df.attrs.get("sources", [])])
            _set(self.trail, lineage=lineage_rows(df, stage, result, op, self._pair()))
            self._mark_op(ex, stage, result, df)

        self._submit(act.label, act.python, work, busy=False)

    # -- events from the browser -------------------------------------------------------------------------
    def _on_action(self, action: str, payload: dict) -> None:
        if action == "line":
            self.select_line(str(payload.get("file", "")), int(payload.get("line", 0)))
        elif action == "metric" and payload.get("metric") in METRICS:
            self.set_metric(payload["metric"])

    # -- the work (on the panel's worker) ----------------------------------------------------------------
    def _place(self, here: bool) -> None:
        """The diff view in this tab (``here``) or in the Diff tab."""
        if (self.area in self._slot.children) != here:
            self._slot.children, self.home.children = ((self.area,), ()) if here else ((), (self.area,))

    def _fill(self, ex: Exploration, right: str, waiting: str) -> None:
        if waiting:
            self._sm = None
            _set(self.view, rows=[], note="", message=f"XLA is compiling: stage {waiting!r} is mapped to your code "
                                                      "when its stages arrive")
            return
        act = actions.source_map(self.name, right, measured=self.metric == "measured")

        def work():
            try:
                sm, stage = act.call(ex), ex.stage(right)
            except WorkbenchError as e:
                self._sm = None
                _set(self.view, rows=[], note="", message=f"{right}: {e}")
                return
            self._sm, self._sm_stage = sm, stage
            self._draw()

        self._submit(act.label, act.python, work, busy=False)

    def _draw(self) -> None:
        sm, stage, metric = self._sm, self._sm_stage, self.metric
        if sm is None:
            return
        measured = metric == "measured"
        if measured and "measured_us" not in sm.columns:
            return  # the measured map is on its way (set_metric asked for it)
        _set(self.view, message="" if len(sm) else f"{stage.name} has no ops", unit="µs" if measured else metric,
             rows=listing_rows(sm, "measured_us" if measured else metric),
             note=measured_note(stage, sm.attrs["profile"]) if measured else cost_note(stage, metric))

    def _locate(self, ex: Exploration, stage: str) -> tuple:
        """(``ex.locations(stage)``, the text line of each line the diff view shows, its inverse), kept per
        stage of the Exploration shown; WorkbenchError for a stage without ops."""
        if ex is not self._seen:
            self._seen, self._located = ex, {}
        if stage not in self._located:
            df = ex.locations(stage)
            shown = shown_lines(ex.stage(stage).text)
            self._located[stage] = (df, shown, {t: k for k, t in enumerate(shown)})
        return self._located[stage]

    def _shown(self, ex: Exploration, side: str, stage: str, text_lines: Iterable[int]) -> list[int]:
        """The lines of the diff view's ``side`` that show ``text_lines`` of ``stage`` (none when the
        diff view does not show that stage there)."""
        name, text = self.diff_view.side(side)
        if name != stage or not text:
            return []
        inverse = self._locate(ex, stage)[2]
        if len(inverse) != text.count("\n") + 1:  # the diff's lines are not the text's: mark nothing wrongly
            return []
        return [inverse[t] for t in text_lines if t in inverse]

    def _remark(self) -> None:
        """The selection marked in the diff shown now (another pair, the same selection)."""
        ex, (left, right) = self._exploration(), self._pair()
        if self.selection and self.selection[0] == "line":
            self._mark_line(ex, left, right, self.selection[1], self.selection[2])
        elif self.selection and self._lineage is not None and self._lineage[0] is ex:
            _, stage, result, op, df = self._lineage
            _set(self.trail, lineage=lineage_rows(df, stage, result, op, (left, right)))
            self._mark_op(ex, stage, result, df)

    def _mark_line(self, ex: Exploration, left: str, right: str, file: str, line: int) -> None:
        marks, counts, notes = {}, {}, []
        for side, stage in (("before", left), ("after", right)):
            try:
                df = self._locate(ex, stage)[0]
            except WorkbenchError as e:
                marks[side], counts[side] = [], None
                notes.append(f"{stage}: {e}")
                continue
            if file:  # the ops of the user's line, or of a library's line no user's line reached
                rows = df[((df["your_file"] == file) & (df["your_line"] == line))
                          | ((df["your_file"] == LIBRARY_ONLY) & (df["file"] == file) & (df["line"] == line))]
            else:
                rows = df[(df["file"] == "") & (df["op"] != "func.func")]
            counts[side] = len(rows)
            marks[side] = self._shown(ex, side, stage, rows["text_line"])
        self.diff_view.mark(marks["before"], marks["after"], focus="after")
        where = f"line {line}" if file else "the ops with no line of your code"
        said = [f"{'no' if n == 0 else n} op{'s' * (n != 1)} in {t} ({s})"
                for t, s, n in (("B", right, counts["after"]), ("A", left, counts["before"])) if n is not None]
        _set(self.trail, status=[_said(f"{where}: " + ", ".join(said) + " (marked in the diff)" if said else where)]
             + [_said(n, error=True) for n in notes])

    def _mark_op(self, ex: Exploration, stage: str, result: str, df) -> None:
        """Mark op ``result`` of ``stage`` and, from its lineage ``df``, its counterparts in the diff's stages."""
        left, right = self._pair()
        marks: dict[str, list[int]] = {"before": [], "after": []}
        for side, name in (("before", left), ("after", right)):
            lines = [] if df is None else [int(t) for t in df[(df["stage"] == name) & (df["line"] >= 0)]["line"]]
            if name == stage:
                located = self._locate(ex, stage)[0]
                lines += [int(t) for t in located[located["result"] == result]["text_line"][:1]]
            if lines:
                marks[side] = self._shown(ex, side, name, lines)
        own = "before" if stage == left else "after"
        self.diff_view.mark(marks["before"], marks["after"], focus="after" if own == "before" else "before")
        if df is None:
            _set(self.trail, status=[_said(f"{result} of {stage}: marked; it has no counterparts to follow")])
            return
        n = {side: len(df[(df["stage"] == s) & (df["result"] != "")]) for side, s in (("A", left), ("B", right))}
        removed = df.attrs.get("removed_by")
        _set(self.trail, status=[_said(f"{result} of {stage} and its counterparts (the ops from its source position): "
                                       f"{n['A']} in A, {n['B']} in B (marked)"
                                       + (f"; removed by {removed}" if removed else ""))])


_SETTING = threading.Lock()  # the panel's worker and the user's clicks both set facts


def _set(component: Component, **facts) -> None:
    """Some of ``component``'s facts anew (its data is sent whole: a new dict)."""
    with _SETTING:
        component.data = {**component.data, **facts}
