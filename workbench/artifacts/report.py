"""The offline HTML report of an Exploration: ``write_report(ex, path)`` (``ex.report(path)``), the page of two
module texts' diff (``write_diff_page``: ``hlo-workbench diff A B --html``), and a page of any model the components
draw (``write_page``: a comparison's).

One file that needs no network and names no URL. It holds the view model (``viewmodel.view_model``,
``source="report"``) as JSON, drawn by the one set of components (``assets/views.js`` and ``views.css``,
inlined) through the report's host (``assets/reporthost.js``), whose ``diff(left, right)`` answers from
the structural diffs the report carries precomputed (``report_texts``); a pair not precomputed says so.
A Content-Security-Policy lets nothing load from anywhere: scripts only from the host's inline module,
by its hash, and the blob it imports the components from.

The components draw every fact the model holds, the cost of every stage listed (the model's ``cost``) and the
compile profile among them; the page adds, in Python, what no component draws: the report's limits, the
user's lines, the graph of one stage and the run profile taken; where the bytes go (``ex.memory()``) is in the
model, drawn by the components' memory section, and so are the TPU's kernels once ``ex.backend()`` read them
(its backend section). Every piece of text from the program or the
tools (names, pass strings, errors, paths) goes through markupsafe's ``Markup.format``, which escapes it; the
JSON in ``<script>`` elements has ``<``, ``>`` and ``&`` as ``\\u003c`` and the like; graphviz's SVG is
re-serialized here keeping only drawing elements and attributes (no scripts, handlers or links out), text
escaped.

What a report lists, reads, embeds and computes is bounded by its ``ReportLimits`` (``report_texts``),
stated in its header with what they left out: only the stages listed are read, costed, diffed and put in
the model, the runs of stages between them named in the header; the graph's layout gets ``graph_seconds``.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import numbers
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from markupsafe import Markup, escape

from ..analysis.cost import cost_table
from ..analysis.cost.table import summary_columns
from ..analysis.graph import stage_graph
from ..analysis.numbers import num
from ..analysis.profile import RUN_SUMMARY
from .assets import ASSETS, inlined
from .jsonout import WriteFailed, json_text, table_json, target_of, write_replacing
from .report_texts import LIMITS, REFERENCE, PackedTexts, ReportLimits, limits_note, pack_texts, shown_stages
from .viewmodel import backend_entry, memory_entry, view_model
from ..errors import ReportFileError
from ..stages import Stage

__all__ = ["ReportLimits", "render_report", "write_report", "render_diff_page", "write_diff_page", "write_page"]

_GRAPH_MAX_OPS = 300


def write_report(ex, path, graph=None, max_ops: int = _GRAPH_MAX_OPS, limits: ReportLimits = LIMITS) -> Path:
    """Write the report of ``ex`` to ``path`` (a temporary file in the same folder, then renamed, so a
    crash leaves any older report whole) and return the path. ``graph`` picks the stage drawn (default:
    the last MLIR stage that succeeded, ``ex.default_run_stage()``); above ``max_ops`` ops it is drawn
    one node per function. ``limits`` bound what the report reads, embeds and computes. A path that
    is a symbolic link is written through; one that holds a FIFO, a device or a folder is refused
    (ReportFileError, in words, before anything is rendered), as is one that cannot be written."""
    return _write(path, lambda: render_report(ex, graph=graph, max_ops=max_ops, limits=limits))


def write_diff_page(before: str, after: str, before_name: str, after_name: str, path) -> Path:
    """Write the structural diff of two module texts (both MLIR or both XLA HLO) as one self-contained
    HTML page drawn as the report is (``hlo-workbench diff A B --html OUT``); returns the path."""
    return _write(path, lambda: render_diff_page(before, after, before_name, after_name))


def write_page(path, title: str, made_by: str, model: dict, lead: Markup = Markup("")) -> Path:
    """Write ``model`` (a comparison model, ``comparison_model``) as one self-contained page drawn as the report
    is, ``lead`` (HTML) above it; returns the path."""
    return _write(path, lambda: _document(title, made_by, model, None, None, [], lead=lead))


def _write(path, render: Callable[[], str]) -> Path:
    """Write the page ``render()`` makes to ``path``; ReportFileError before any work when ``path`` holds anything
    but a regular file, or when it cannot be written."""
    path = Path(path)
    try:
        target_of(path)
        page = render().encode("utf-8")
        return write_replacing(path, lambda f: f.write(page))  # a new file as open() makes it
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
    profiles = getattr(ex, "profiles", {}) or {}
    model = view_model(ex, *first, stages=stages, source="report", runs=ex.history,
                       compile_profile=profiles.get("compile"))
    read = [s for s in stages if not s.error and s.text in packed.whole]
    left_out = [s.name for s in stages if not s.error and s.text not in packed.whole]
    gap_lines = [Markup("{:,} stage{} not listed, #{} <code>{}</code> to #{} <code>{}</code>").format(
        g.count, "s" if g.count > 1 else "", g.start, g.first, g.end, g.last) for g in gaps]
    if gaps:
        gap_lines.append(Markup("<code>ex.stages</code> has every one, <code>ex.diff(a, b)</code> compares any two, "
                                "and <code>ex.report(path, limits=ReportLimits(stages={}))</code> lists them all")
                         .format(len(every)))
    facts = [*(("not listed", g) for g in gap_lines), *(("warning", w) for w in getattr(ex, "warnings", ()))]
    model.update(_cost(ex, read, left_out))
    sections = [_your_lines(ex), _graph(drawn, max_ops, packed.whole, limits), _time(profiles.get("run")),
                _memory(ex, model)]
    kernels = backend_entry(getattr(ex, "_kernels", None))  # the TPU's kernels, where ex.backend() read them
    if kernels is not None:
        model["backend"] = kernels
    return _document(f"{ex.spec.title} \u2014 hlo-workbench report", "ex.report(path)", model, packed,
                     limits_note(limits, packed.usage), facts, Markup("").join(sections))


def render_diff_page(before: str, after: str, before_name: str, after_name: str,
                     limits: ReportLimits = LIMITS) -> str:
    """The structural diff of two module texts as one HTML document, drawn as the report is, the two texts
    its two stages."""
    group = "xla" if "HloModule" in before[:4000] else "mlir"
    stages = [Stage(before_name, group, before, "", False, None, None),
              Stage(after_name, group, after, "", before != after, None, before_name)]
    title = f"{before_name} \u2192 {after_name} \u2014 hlo-workbench diff"
    packed = pack_texts(stages, (before_name, after_name), limits)
    # the two texts, as view_model reads an exploration: no pipeline, toggle, device, run or edit
    spec = SimpleNamespace(title=title, pipeline="", device="", xla_disabled=(),
                           selection=SimpleNamespace(disabled=(), enabled=()))
    model = view_model(SimpleNamespace(spec=spec, error=None, xla_result=None), before_name, after_name,
                       stages=stages, source="report", runs=())
    return _document(title, "hlo-workbench diff --html", model, packed, limits_note(limits, packed.usage), [])


# -- the page --------------------------------------------------------------------------------------------
_PAGE = Markup("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{style}
</style></head>
<body>
<header><h1>{title}</h1><dl class="wb-facts">{facts}</dl>{lead}</header>
<div id="wb-view"><noscript><p class="wb-note">This view needs JavaScript; its facts are the JSON of <code>#wb-model</code> in this page.</p></noscript></div><p class="wb-note" id="wb-view-note"></p>
{sections}
<footer class="wb-note">Written by hlo-workbench's <code>{made_by}</code>. One file: no network access; the stage texts are inside it, normalized as <code>ex.diff</code> prints them.</footer>
<script type="application/json" id="wb-model">{model}</script>
<script type="application/json" id="wb-views">{views}</script>
<script type="text/plain" id="wb-diffs" data-encoding="gzip+base64">{diffs}</script>
<script type="module">{script}</script>
</body></html>
""")


def _document(title: str, made_by: str, model: dict, packed: PackedTexts | None, limits: str | None, facts,
              sections: Markup = Markup(""), lead: Markup = Markup("")) -> str:
    """The page: the components drawn from ``model`` (with the texts ``packed``, if any), ``sections`` below them;
    above, the header's ``facts`` (name, text or Markup), ``limits`` and ``lead``."""
    script = _asset(ASSETS / "reporthost.js", "script")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}' blob:; style-src 'unsafe-inline'; "
           "img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    views = ASSETS / "views.js"  # built by esbuild from extensions/hlo-workbench-lab/src/components
    style = Markup("\n").join(_asset(ASSETS / f, "style") for f in ("views.css", "report.css") if (ASSETS / f).is_file())
    facts = Markup("").join(Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in [
        ("written", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")), *facts,
        *([("limits", Markup('<span id="wb-limits">{}</span>').format(limits))] if limits else [])])
    return str(_PAGE.format(csp=csp, title=title, style=style, facts=facts, lead=lead, sections=sections,
                            made_by=made_by, model=_script_json(model),
                            views=_script_json(inlined(views) if views.is_file() else None),
                            diffs=packed.data if packed else "", script=script))


def _script_json(value) -> Markup:
    """``value`` as JSON that cannot end the ``<script>`` element holding it (nor start a comment there)."""
    text = json_text(value, "the report's JSON", allow_nan=False, separators=(",", ":"), ensure_ascii=True)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _asset(path: Path, tag: str) -> Markup:
    """A file of the workbench's (with the files it imports, ``assets.inlined``) put raw into a
    ``<script>``/``<style>`` element, which it must not be able to end."""
    text = inlined(path)
    if re.search(rf"</{tag}|<!--|<script", text, re.IGNORECASE):
        raise ValueError(f"{path.name} cannot be inlined into <{tag}>: it holds '</{tag}', '<!--' or '<script'")
    return Markup(text)


def _section(ident: str, title: str, *parts) -> Markup:
    return Markup('<section id="{}"><h2>{}</h2>{}</section>\n').format(ident, title, Markup("").join(parts))


def _note(text: str, *values) -> Markup:
    """A note of the workbench's own markup (``text``) with ``values`` escaped into its ``{}``."""
    return Markup('<p class="wb-note">{}</p>').format(Markup(text).format(*values))


def _cell(v) -> Markup:
    """One table cell: numbers right-aligned through ``num``, missing values blank."""
    try:
        import pandas as pd

        if v is None or pd.isna(v):
            return Markup("<td></td>")
    except (TypeError, ValueError):
        pass
    if isinstance(v, numbers.Number) and not isinstance(v, (bool, complex)):
        return Markup('<td class="wb-numeric">{}</td>').format(num(v))
    return Markup("<td>{}</td>").format(v)


def _table(columns, rows) -> Markup:
    """A table of ``rows`` (each a sequence of cell values) under ``columns``."""
    return Markup('<table class="wb-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>').format(
        Markup("").join(Markup("<th>{}</th>").format(c) for c in columns),
        Markup("").join(Markup("<tr>{}</tr>").format(Markup("").join(map(_cell, r))) for r in rows))


def _unavailable(what: str, err: BaseException) -> Markup:
    return Markup('<p class="wb-error">{}: {}: {}</p>').format(what, type(err).__name__, err)


# -- the sections always shown ------------------------------------------------------------------------------
def _first_pair(ex, stages) -> tuple[str, str]:
    """The pair the view opens on: the program as lowered against the last MLIR stage (what the
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


def _cost(ex, read, left_out: list[str]) -> dict:
    """The model's ``cost``: ``ex.cost()`` of the stages in ``read`` (those whose text the report read whole), and
    its ``cost_note``."""
    note = ("ex.cost(): the analytic model's ops, flops, transcendentals and bytes of each module stage, XLA's "
            "HloCostAnalysis (xla_*) of the same module and of each HLO stage, and the compiled module's temporary "
            "memory.")
    if left_out:
        note += (" Not costed here (their texts are over the report's limits, see the header; ex.cost() has them): "
                 + ", ".join(left_out))
    try:
        df = cost_table(ex, stages=read)
        return {"cost": table_json(df[summary_columns(df)]), "cost_note": note}
    except Exception as e:  # the rest of the report stands without it
        return {"cost": None, "cost_note": f"{note} The cost table could not be computed: {type(e).__name__}: {e}"}


_LINES_SHOWN = 40  # the report's table of the user's lines: the costliest ones


def _your_lines(ex) -> Markup:
    """The user's own lines (``ex.source_map()``), the costliest first: each with the library line it reached
    beside it, its ops per stage and the flops of the last MLIR stage."""
    from ..analysis.provenance import LIBRARY_ONLY, NO_LOCATION, short_path

    head = ("<code>ex.source_map()</code>: the lines of your own code (the innermost frame outside installed "
            "packages, the standard library, jax and the workbench) that the costliest ops came from{}, each with "
            "the library line it reached beside it; <code>*_inferred</code> counts ops with no location of their "
            "own whose line the dataflow gave.")
    try:
        sm = ex.source_map()
    except Exception as e:  # a module without locations, or a failed stage: the rest of the report stands
        return _section("lines", "Your lines", _note(head, ""), _unavailable("the source map could not be made", e))
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
    shown = f" ({len(rows)} of {len(sm)})" if len(rows) < len(sm) else ""
    return _section("lines", "Your lines", _note(head, shown), Markup('<div class="wb-scroll">{}</div>').format(
        _table(["your line", "code", "library line", *counts, flops], rows)))


def _drawn(ex, stages, graph):
    """The stage the graph draws and the one it is compared with (None: none), or the exception saying
    there is no stage to draw."""
    try:
        st = ex.default_run_stage() if graph is None else ex.stage(graph)
    except Exception as e:
        return e
    ref = next((s for s in stages if s.name == REFERENCE and s.is_module), None)
    return st, ref if ref is not None and ref.name != st.name and st.group == "mlir" else ex.parent_of(st)


def _graph(drawn, max_ops: int, whole, limits: ReportLimits) -> Markup:
    if not isinstance(drawn, tuple):
        return _section("graph", "Graph", _unavailable("no stage to draw", drawn))
    st, against = drawn
    vs = Markup(", ops new or changed since <b>{}</b> filled orange").format(against.name) if against else ""
    head = _note("<code>ex.graph({}, max_ops={})</code>: the dataflow of <b>{}</b>{}.", json.dumps(st.name), max_ops,
                 st.name, vs)
    if st.text not in whole or (against is not None and not against.error and against.text not in whole):
        return _section("graph", f"Graph of {st.name}", head, _note(
            "Not drawn: the text of {} or of the stage it is compared with is over the report's limits (see the "
            "header).", st.name))
    try:
        g = stage_graph(st, against, max_ops=max_ops, layout_seconds=limits.graph_seconds)
        svg = _clean_svg(g.pipe(format="svg").decode("utf-8"), "wb-graph-")
        return _section("graph", f"Graph of {st.name}", head, Markup('<div class="wb-graph wb-scroll">{}</div>')
                        .format(svg))
    except Exception as e:  # no graphviz, dot failing or too slow (GraphTooLargeError), a stage not drawable
        return _section("graph", f"Graph of {st.name}", head,
                        _unavailable(f"the graph of {st.name} could not be drawn", e))


def _time(run) -> Markup:
    """The "where the time goes" section: the last run profile (``ex.profiles["run"]``), or how to take one (the
    compile profile, ``ex.compile_profile()``, is the view's)."""
    if run is None:
        return _section("time", "Where the time goes", _note(
            "No run profile: none was taken on this Exploration before the report was written. <code>ex.profile()"
            "</code> measures each HLO instruction's run time and <code>ex.compile_profile()</code> each compile "
            "step's (shown in the view above), with JAX's profiler (<code>hlo-workbench report --profile</code> "
            "takes both)."))
    peak = Markup(" at {}'s peaks").format(run.peak) if run.peak else " (no peak known for this device)"
    t = run.table
    return _section("time", "Where the time goes", Markup("<h3>Run time per instruction</h3>"), _note(
        "<code>ex.profile()</code>: <b>{}</b> run {} times on {} untraced, then under JAX's profiler: {}. The "
        "times and shares below are under the profiler; its instructions' work covers {} % of the traced call. "
        "Each instruction's self time (median), its share of a call, XLA's flops and bytes, the roofline "
        "time{}, the user's lines and its ops in the stage; the 40 longest of {}.", run.stage, run.calls,
        run.device, run.call_said(), num(100 * run.coverage), peak, len(t)),
        Markup('<div class="wb-scroll">{}</div>').format(
            _table(RUN_SUMMARY, list(t[list(RUN_SUMMARY)].head(40).itertuples(index=False, name=None)))))


def _memory(ex, model: dict) -> Markup:
    """Where the bytes go: ``ex.memory()``'s facts in the model (``memory_entry``), drawn by the components' memory
    section as the panel's Memory tab and the saved view draw them; where there is no memory to read (a module given
    as text with no @main, a compile that failed, a saved exploration without XLA's live ranges), a section that
    says why."""
    try:
        model["memory"] = memory_entry(ex.memory().to_json())
    except Exception as e:  # no XLA compile to read: the rest of the report stands
        return _section("memory", "Where the bytes go", _note(
            "<code>ex.memory()</code> reads XLA's own buffer assignment and live ranges of <b>xla:optimized</b>."),
            _unavailable("no memory to show", e))
    return Markup("")


def _clean_svg(svg: str, prefix: str) -> Markup:
    """An SVG document (graphviz's) as inline markup: re-serialized from its parsed tree with only drawing elements
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
