"""The offline HTML report of an Exploration: ``write_report(ex, path)`` (``ex.report(path)``).

One file that needs no network and names no URL: its CSS and JavaScript are inlined, and a
Content-Security-Policy lets nothing load from anywhere (scripts only from the report's own inline
module, by its hash, and the blob it imports). Static HTML, readable with JavaScript off: the
header (title, pipeline, device, versions), the stage table (a failed stage with its error), the
cost table and chart (inline SVG), the graph of one stage (inline SVG from graphviz's ``dot``) and
the session's runs (``ex.history``) with their settings and checks, each marked stale where the
exploration reported no longer has the program it ran. With JavaScript on, the panel's own diff viewer
(``assets/diffview.js``, the one copy the DiffView widget loads too) shows any two stages
picked in two menus.

The page is written by Jinja2 templates with autoescape on (``assets/report.html.j2``, the diff
page ``assets/report_diff.html.j2``, both around ``report_page.html.j2`` with the pieces of
``report_macros.html.j2``): every piece of text from the program or the tools (names, pass strings,
errors, paths) is escaped by the template, never by hand here. Stage texts are never written as
markup: they travel as gzip + base64 inside a non-executed ``<script type="text/plain">`` (the
browser unpacks them with ``DecompressionStream``); the settings go through Jinja's ``tojson``
(``<``, ``>``, ``&``, ``'`` as ``\\u0027`` and the like); only the workbench's own markup is passed as
``Markup``: its inlined script and style, and the SVGs, re-serialized here from their parsed trees
keeping only drawing elements and attributes (no scripts, handlers or links out), text escaped.
The texts and the precomputed diffs are packed by ``report_texts``: each distinct text once,
normalized as the diff shows it.

What a report lists, reads, embeds and computes is bounded by its ``ReportLimits`` (``report_texts``),
stated in the report's header with what they left out: past ``stages`` stages the first and last are
listed (and the pair the diff and the graph open on), the runs between them each one row of the stage
table naming its first and last stage and how many it holds, and only the stages listed are read,
costed, diffed and offered to the diff viewer; a stage text over ``text_chars`` is embedded
cut and is neither diffed, costed nor drawn; past ``total_chars`` of distinct texts in all, the same;
structural diffs are precomputed up to ``diff_lines`` and ``diff_budget``; the graph's layout gets
``graph_seconds``. So the report's work grows with the program up to those caps and no further.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import io
import json
import numbers
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ..analysis.cost import cost_table, plot_cost
from ..analysis.cost.table import summary_columns
from ..analysis.graph import stage_graph
from ..analysis.numbers import num
from ..analysis.profile import COMPILE_SUMMARY, RUN_SUMMARY
from .assets import ASSETS, inlined  # the templates, the page script and style, and diffview.js/.css
from .jsonout import WriteFailed, target_of, write_replacing
from .report_texts import (LIMITS, REFERENCE, Gap, PackedTexts, ReportLimits, limits_note, pack_texts, pairs_note,
                           shown_stages)
from .versions import versions_line
from ..errors import ReportFileError
from ..stages import Stage

__all__ = ["ReportLimits", "render_report", "write_report", "render_diff_page", "write_diff_page"]

_GRAPH_MAX_OPS = 300
_DIFF_HEIGHT = 600


def write_report(ex, path, graph=None, max_ops: int = _GRAPH_MAX_OPS, limits: ReportLimits = LIMITS) -> Path:
    """Write the report of ``ex`` to ``path`` (a temporary file in the same folder, then renamed, so a
    crash leaves any older report whole) and return the path. ``graph`` picks the stage drawn (default:
    the last MLIR stage that succeeded, ``ex.default_run_stage()``); above ``max_ops`` ops it is drawn
    one node per function. ``limits`` bound what the report reads, embeds and computes. A path that
    is a symbolic link is written through; one that holds a FIFO, a device or a folder is refused
    (ReportFileError, in words, before anything is rendered), as is one that cannot be written."""
    path = Path(path)
    _check_target(path)
    return _write(path, render_report(ex, graph=graph, max_ops=max_ops, limits=limits))


def write_diff_page(before: str, after: str, before_name: str, after_name: str, path, **page) -> Path:
    """Write the structural diff of two module texts (both MLIR or both XLA HLO) as one self-contained
    HTML page with the report's diff viewer (``hlo-workbench diff A B --html OUT``); returns the path.
    ``page``: ``render_diff_page``'s header, title and made_by."""
    path = Path(path)
    _check_target(path)
    return _write(path, render_diff_page(before, after, before_name, after_name, **page))


def _check_target(path: Path) -> None:
    """ReportFileError before any work when ``path`` holds anything but a regular file."""
    try:
        target_of(path)
    except WriteFailed as e:
        raise ReportFileError(path, f"cannot write the report: {e.reason}") from None


def _write(path: Path, page: str) -> Path:
    try:
        return write_replacing(path, lambda f: f.write(page.encode("utf-8")))  # a new file as open() makes it
    except WriteFailed as e:  # in words, naming the user's path, never the temporary file beside it
        raise ReportFileError(path, f"cannot write the report: {e.reason}") from None


def render_report(ex, graph=None, max_ops: int = _GRAPH_MAX_OPS, limits: ReportLimits = LIMITS) -> str:
    """The report of ``ex`` as one HTML document (see the module docstring)."""
    every = ex.stages
    first = _first_pair(ex, every)
    drawn = _drawn(ex, every, graph)
    keep = [*first, *(s.name for s in drawn if s is not None)] if isinstance(drawn, tuple) else first
    listed, gaps = shown_stages(every, limits.stages, keep)  # the stages listed, read, costed and diffed
    stages = [s for _, s in listed]
    packed = pack_texts(stages, first, limits)
    packed.usage.stages_left = sum(g.count for g in gaps)
    whole = packed.whole
    read = [s for s in stages if not s.error and s.text in whole]
    left_out = [s.name for s in stages if not s.error and s.text not in whole]
    page = _page(f"{ex.spec.title} \u2014 hlo-workbench report", "ex.report(path)", packed, stages, first)
    return _templates().get_template("report.html.j2").render(
        page=page, title=ex.spec.title, facts=_facts(ex, every, limits_note(limits, packed.usage)),
        error=ex.error, warnings=list(getattr(ex, "warnings", ())), stages=every,
        rows=_stage_rows(listed, gaps), most=limits.stages,
        diff=_diff(stages, first, packed), cost=_cost(ex, read, left_out),
        graph=_graph(drawn, max_ops, whole, limits), runs=_runs(ex), time=_time(ex), lines=_your_lines(ex))


@dataclass(frozen=True)
class _Row:
    """One row of the stage table: stage ``stage`` at ``index`` in ``ex.stages``, or (``gap``) a run of
    stages the report does not list."""

    index: int
    stage: object = None
    gap: Gap | None = None


def _stage_rows(listed, gaps) -> list[_Row]:
    rows = [_Row(k, s) for k, s in listed] + [_Row(g.start, gap=g) for g in gaps]
    return sorted(rows, key=lambda r: r.index)


def render_diff_page(before: str, after: str, before_name: str, after_name: str,
                     limits: ReportLimits = LIMITS, header: Markup | None = None, title: str | None = None,
                     made_by: str = "hlo-workbench diff --html") -> str:
    """The structural diff of two module texts as one HTML document: the diff viewer and the ops delta;
    ``header`` (HTML) above them, under ``title`` (a comparison of two explorations puts its tables there)."""
    group = "xla" if "HloModule" in before[:4000] else "mlir"
    stages = [Stage(before_name, group, before, "", True, None, None),
              Stage(after_name, group, after, "", True, None, before_name)]
    first = (before_name, after_name)
    packed = pack_texts(stages, first, limits)
    page = _page(title or f"{before_name} \u2192 {after_name} \u2014 hlo-workbench diff", made_by, packed,
                 stages, first)
    return _templates().get_template("report_diff.html.j2").render(
        page=page, limits=limits_note(limits, packed.usage), diff=_diff(stages, first, packed),
        header=header or Markup(""), heading=title or "")


# -- the templates and what they are given -----------------------------------------------------------
@functools.cache
def _templates() -> jinja2.Environment:
    """The report's templates, escaping every value they print unless it is ``Markup``; a name a
    template reads that its caller did not give is an error (StrictUndefined), not a blank."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ASSETS), autoescape=True, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters.update(cell=_cell, num=num, quoted=json.dumps, grouped="{:,}".format, leaf_cells=_leaf_cells)
    # tojson: compact, and strict JSON (a browser's JSON.parse reads no NaN)
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "allow_nan": False, "ensure_ascii": True}
    return env


@dataclass(frozen=True)
class _Page:
    """The document around a report or diff page: ``style`` and ``script`` are the workbench's own
    files, inlined; ``config`` the settings report.js reads; ``data`` the packed stage texts."""

    title: str
    made_by: str
    csp: str
    style: Markup
    script: Markup
    config: dict
    data: str


@dataclass(frozen=True)
class _Fact:
    """One line of the header: ``shown`` is "text", "code", "folded" (code, a long one folded) or "limits"."""

    name: str
    value: str
    shown: str = "text"


@dataclass(frozen=True)
class _Unavailable:
    """A part of the report that could not be made, and why."""

    what: str
    error: str

    @classmethod
    def of(cls, what: str, err: BaseException) -> _Unavailable:
        return cls(what, f"{type(err).__name__}: {err}")


@dataclass(frozen=True)
class _Run:
    """One run of the session: the RunResult, its settings in words, and why it is stale for the
    exploration reported ("" when that exploration has the program it ran)."""

    run: object
    settings: str
    stale: str


def _runs(ex) -> list[_Run]:
    """The session's runs (``ex.history``: those of the explorations ``ex`` was made from, then its own)."""
    runs = getattr(ex, "history", None)
    runs = list(getattr(ex, "runs", ()) if runs is None else runs)
    return [_Run(r, r.program.settings if r.program is not None else "", r.why_stale(ex)) for r in runs]


@dataclass(frozen=True)
class _Time:
    """The "where the time goes" section: the profiles taken on the exploration (``ex.profiles``), as rows."""

    run: object = None  # the Profile, or None
    run_columns: tuple = ()
    run_rows: tuple = ()
    compile: object = None  # the CompileProfile, or None
    compile_columns: tuple = ()
    compile_rows: tuple = ()
    left_out: int = 0  # XLA pass rows under 0.5 % not listed


def _time(ex) -> _Time:
    """The last run and compile profiles of ``ex`` (none taken: an empty section that says how)."""
    profiles = getattr(ex, "profiles", {}) or {}
    run, cp = profiles.get("run"), profiles.get("compile")
    out = {}
    if run is not None:
        t = run.table
        out.update(run=run, run_columns=RUN_SUMMARY,
                   run_rows=tuple(t[list(RUN_SUMMARY)].head(40).itertuples(index=False, name=None)))
    if cp is not None:
        t = cp.table
        keep = (t["kind"] != "xla pass") | (t["share"] >= 0.005) | (t["stage"] != "")
        out.update(compile=cp, compile_columns=COMPILE_SUMMARY, left_out=int((~keep).sum()),
                   compile_rows=tuple(t[keep][list(COMPILE_SUMMARY)].itertuples(index=False, name=None)))
    return _Time(**out)


@dataclass(frozen=True)
class _Diff:
    """The diff section: the stages to pick from, the pair shown first and its ops delta (``ops``, rows
    with op, before, after, delta; empty: ``why`` says why there is none)."""

    stages: list
    first: tuple[str, str]
    ops: list
    why: str


@dataclass(frozen=True)
class _Cost:
    columns: list
    rows: list
    table_error: _Unavailable | None
    plot: Markup
    plot_error: _Unavailable | None
    left_out: list[str]


@dataclass(frozen=True)
class _Graph:
    """The graph section: ``stage`` drawn against ``against``; ``svg`` empty and no ``error``: not drawn,
    the texts being over the report's limits."""

    title: str
    stage: str = ""
    against: str = ""
    max_ops: int = _GRAPH_MAX_OPS
    svg: Markup = Markup("")
    error: _Unavailable | None = None


def _page(title: str, made_by: str, packed: PackedTexts, stages, first) -> _Page:
    config = {
        "diffview": inlined(ASSETS / "diffview.js"),
        "stages": [{"name": s.name, "parent": s.parent, "failed": bool(s.error), "error": s.error or ""}
                   for s in stages],
        "first": list(first),
        "height": _DIFF_HEIGHT,
        "pairs_note": pairs_note(packed.precomputed),
    }
    script = _asset(ASSETS / "report.js", "script")
    style = Markup("\n").join([_asset(ASSETS / "diffview.css", "style"), _asset(ASSETS / "report.css", "style")])
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}' blob:; style-src 'unsafe-inline'; "
           "img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    return _Page(title, made_by, csp, style, script, config, packed.data)


def _asset(path: Path, tag: str) -> Markup:
    """A file of the workbench's (with the files it imports, ``assets.inlined``) put raw into a
    ``<script>``/``<style>`` element, which it must not be able to end."""
    text = inlined(path)
    if re.search(rf"</{tag}|<!--|<script", text, re.IGNORECASE):
        raise ValueError(f"{path.name} cannot be inlined into <{tag}>: it holds '</{tag}', '<!--' or '<script'")
    return Markup(text)


def _cell(v) -> tuple[str, bool]:
    """(text, numeric) of one table cell: numbers through ``num``, missing values blank."""
    if v is None:
        return "", False
    try:
        import pandas as pd

        if pd.isna(v):
            return "", False
    except (TypeError, ValueError):
        pass
    if isinstance(v, numbers.Number) and not isinstance(v, (bool, complex)):
        return num(v), True
    return str(v), False


def _leaf_cells(leaf) -> list:
    """The cells of one output's row of a run's check."""
    return [leaf.path, str(tuple(leaf.shape)), leaf.dtype, leaf.max_abs, leaf.lowered_abs, leaf.max_rel,
            leaf.tolerance, "passed" if leaf.passed else "FAILED"]


def _first_pair(ex, stages) -> tuple[str, str]:
    """The pair the diff viewer opens on: the program as lowered against the last MLIR stage (what the
    MLIR pipeline did), else the first stage that changed against its parent."""
    ok = [s for s in stages if not s.error]
    ref = next((s for s in ok if s.name == REFERENCE), None) or next((s for s in ok if s.is_module), None)
    try:
        last = ex.default_run_stage()
    except IndexError:  # no module stage at all
        last = None
    if ref is not None and last is not None and ref.name != last.name:
        return ref.name, last.name
    changed = next((s for s in ok if s.changed and s.parent), None)
    if changed is not None:
        return changed.parent, changed.name
    return stages[0].name, stages[-1].name


# -- the sections --------------------------------------------------------------------------------------
def _facts(ex, stages, limits: str) -> list[_Fact]:
    """The header's lines: the function, the pipeline, the device, the stages, what is switched, the
    versions, when, and the report's limits."""
    spec = ex.spec
    groups: dict[str, int] = {}
    for s in stages:
        groups[s.group] = groups.get(s.group, 0) + 1
    changed = sum(1 for s in stages if s.changed)
    counts = ", ".join(f"{n} {g}" for g, n in groups.items())
    facts = [_Fact("function", spec.title, "code"), _Fact("pipeline", spec.pipeline, "folded"),
             _Fact("device", spec.device),
             _Fact("stages", f"{len(stages)} ({counts}); {changed} changed the program")]
    pipeline = getattr(ex, "pipeline_string", "")
    if pipeline and pipeline != spec.pipeline:
        facts.append(_Fact("pass pipeline", pipeline, "folded"))
    sel = spec.selection
    if sel.disabled:
        facts.append(_Fact("patterns off", ", ".join(sorted(sel.disabled))))
    if sel.enabled:
        facts.append(_Fact("patterns added", ", ".join(sorted(sel.enabled))))
    if spec.xla_options:
        facts.append(_Fact("XLA options", "; ".join(f"{k}={v}" for k, v in spec.xla_options)))
    if spec.edits:
        facts.append(_Fact("edited by hand", "; ".join(repr(e)[5:-1] for e in spec.edits)))
    return facts + [_Fact("versions", versions_line()),
                    _Fact("written", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")),
                    _Fact("limits", limits, "limits")]


def _diff(stages, first, packed: PackedTexts) -> _Diff:
    d = packed.first_diff
    if d is None:
        return _Diff(stages, first, [], "ops: " + _why_no_diff(stages, first, packed.whole))
    try:
        df = d.ops_delta()
    except Exception as e:
        return _Diff(stages, first, [], f"ops delta unavailable: {e}")
    if df.empty:
        return _Diff(stages, first, [], "ops: the same ops (rewired, or with other attributes)")
    return _Diff(stages, first, list(df.itertuples()), "")


def _why_no_diff(stages, pair, whole) -> str:
    by_name = {s.name: s for s in stages}
    failed = [n for n in pair if by_name[n].error]
    if failed:
        return f"stage {failed[0]} failed, so it has no text to compare"
    la, lb = (whole.get(by_name[n].text) for n in pair)
    if la is None or lb is None:
        return "not compared: a text is over the report's limits (see the header)"
    if la == lb:
        return "no change (up to value names and locations)"
    return "the structural diff failed, or is over the report's diff limits (see the header)"


_LINES_SHOWN = 40  # the report's table of the user's lines: the costliest ones


@dataclass(frozen=True)
class _Lines:
    columns: list[str]
    rows: list[tuple]
    shown: int
    total: int
    error: object = None


def _your_lines(ex) -> _Lines:
    """The user's own lines (``ex.source_map()``), the costliest first: each with the library line it reached
    beside it, its ops per stage and the flops of the last MLIR stage."""
    from ..analysis.provenance import LIBRARY_ONLY, NO_LOCATION, short_path

    try:
        sm = ex.source_map()
    except Exception as e:  # a module without locations, or a failed stage: the rest of the report stands
        return _Lines([], [], 0, 0, _Unavailable.of("the source map could not be made", e))
    flops = "mlir_flops" if "mlir_flops" in sm.columns else "stablehlo_flops"
    ordered = sm.sort_values(flops, ascending=False, kind="stable")
    counts = [c for c in ("stablehlo_ops", "mlir_ops", "xla_ops", "mlir_inferred", "xla_inferred") if c in sm.columns]
    rows = []
    for r in ordered.head(_LINES_SHOWN).to_dict("records"):
        if r["file"] == NO_LOCATION:
            yours, code, through = NO_LOCATION, "", ""
        elif r["your_file"] == LIBRARY_ONLY:
            yours, code, through = LIBRARY_ONLY, "", f"{short_path(r['file'])}:{r['line']}"
        else:
            yours, code = f"{r['your_file']}:{r['your_line']}", r["your_code"]
            same = (r["your_file"], r["your_line"]) == (r["file"], r["line"])
            through = "" if same else f"{short_path(r['file'])}:{r['line']}"
        rows.append((yours, code, through, *(int(r[c]) for c in counts), int(r[flops])))
    return _Lines(["your line", "code", "library line", *counts, flops], rows, len(rows), len(sm))


def _cost(ex, read, left_out: list[str]) -> _Cost:
    """The cost table and chart of the stages in ``read`` (those whose text the report read whole)."""
    columns, rows, table_error, plot, plot_error = [], [], None, Markup(""), None
    try:
        df = cost_table(ex, stages=read)
        columns = summary_columns(df)
        rows = list(df[columns].itertuples(index=False, name=None))
    except Exception as e:  # the rest of the report stands without it
        table_error = _Unavailable.of("the cost table could not be computed", e)
    try:
        import matplotlib

        fig = plot_cost(ex, stages=read)
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "hlo-workbench"}):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        plot = _clean_svg(buf.getvalue(), "wb-cost-")
    except Exception as e:
        plot_error = _Unavailable.of("the cost chart could not be drawn", e)
    return _Cost(columns, rows, table_error, plot, plot_error, left_out)


def _drawn(ex, stages, graph) -> tuple | _Graph:
    """The stage the graph draws and the one it is compared with (None: none), or the section saying
    there is no stage to draw."""
    try:
        st = ex.default_run_stage() if graph is None else ex.stage(graph)
    except Exception as e:
        return _Graph("Graph", error=_Unavailable.of("no stage to draw", e))
    ref = next((s for s in stages if s.name == REFERENCE and s.is_module), None)
    return st, ref if ref is not None and ref.name != st.name and st.group == "mlir" else ex.parent_of(st)


def _graph(drawn, max_ops: int, whole, limits: ReportLimits) -> _Graph:
    if isinstance(drawn, _Graph):
        return drawn
    st, against = drawn
    shown = _Graph(f"Graph of {st.name}", st.name, against.name if against is not None else "", max_ops)
    if st.text not in whole or (against is not None and not against.error and against.text not in whole):
        return shown  # not drawn: over the report's limits
    try:
        g = stage_graph(st, against, max_ops=max_ops, layout_seconds=limits.graph_seconds)
        svg = g.pipe(format="svg").decode("utf-8")
        return replace(shown, svg=_clean_svg(svg, "wb-graph-"))
    except Exception as e:  # no graphviz, dot failing or too slow (GraphTooLargeError), a stage not drawable
        return replace(shown, error=_Unavailable.of(f"the graph of {st.name} could not be drawn", e))


# -- SVG -----------------------------------------------------------------------------------------------
def _clean_svg(svg: str, prefix: str) -> Markup:
    """An SVG document as inline markup: re-serialized from its parsed tree with only drawing elements
    and attributes (no scripts, styles, handlers, foreign content or links out), ids prefixed so that
    two SVGs on one page do not clash, no XML declaration, doctype or namespace declarations."""
    root = ET.fromstring(svg.encode("utf-8"))
    out: list[str] = []
    _svg_element(root, prefix, out)
    return Markup("".join(out))  # tags and attribute names from the lists above, every value escaped


_SVG = "{http://www.w3.org/2000/svg}"
_XLINK = "{http://www.w3.org/1999/xlink}"
_SVG_TAGS = frozenset(("svg", "g", "path", "polygon", "polyline", "ellipse", "circle", "rect", "line", "text", "tspan",
                       "title", "desc", "defs", "clipPath", "use", "a", "symbol", "marker", "linearGradient",
                       "radialGradient", "stop", "pattern", "mask"))
_ATTR_NAME = re.compile(r"[A-Za-z][\w.:-]*\Z")
_URL_REF = re.compile(r"url\(\s*(['\"]?)#([\w.:-]+)\1\s*\)")


def _svg_element(el, prefix: str, out: list[str]) -> None:
    tag = el.tag if isinstance(el.tag, str) else ""
    name = tag[len(_SVG):] if tag.startswith(_SVG) else ""
    if name not in _SVG_TAGS:
        return
    attrs = []
    for key, value in el.attrib.items():
        if key.startswith(_XLINK):
            key = "xlink:" + key[len(_XLINK):]
        if not _ATTR_NAME.match(key) or key.lower().startswith("on"):
            continue
        if key in ("href", "xlink:href"):
            if not value.startswith("#"):
                continue
            value = "#" + prefix + value[1:]
        elif key == "id":
            value = prefix + value
        if "url(" in value:
            value = _URL_REF.sub(lambda m: f"url(#{prefix}{m.group(2)})", value)
            if "url(" in _URL_REF.sub("", value):
                continue  # a url() to anything but an element of this SVG
        if re.search(r"(?i)javascript:|expression\(", value):
            continue
        attrs.append(f' {key}="{escape(value)}"')
    out.append(f"<{name}{''.join(attrs)}>")
    if el.text:
        out.append(escape(el.text))
    for child in el:
        _svg_element(child, prefix, out)
        if child.tail:
            out.append(escape(child.tail))
    out.append(f"</{name}>")
