"""The offline HTML report of an Exploration: ``write_report(ex, path)`` (``ex.report(path)``).

One file that needs no network and names no URL: its CSS and JavaScript are inlined, and a
Content-Security-Policy lets nothing load from anywhere (scripts only from the report's own inline
module, by its hash, and the blob it imports). Static HTML, readable with JavaScript off: the
header (title, pipeline, device, versions), the stage table (a failed stage with its error), the
cost table and chart (inline SVG), the graph of one stage (inline SVG from graphviz's ``dot``) and
the runs made so far with their checks. With JavaScript on, the panel's own diff viewer
(``assets/diffview.js``, the one copy the DiffView widget loads too) shows any two stages
picked in two menus.

Stage texts are never written as markup: they travel as gzip + base64 inside a non-executed
``<script type="text/plain">`` (the browser unpacks them with ``DecompressionStream``), every other
piece of text from the program or the tools is HTML-escaped, JSON blocks have ``<``, ``>``, ``&``
escaped as ``\\u003c``, and the SVGs are re-serialized from their parsed trees keeping only drawing
elements and attributes (no scripts, handlers or links out). The texts and the precomputed diffs
are packed by ``report_texts``: each distinct text once, normalized as the diff shows it.

What a report reads, embeds and computes is bounded by its ``ReportLimits`` (``report_texts``),
stated in the report's header with what they left out: a stage text over ``text_chars`` is embedded
cut and is neither diffed, costed nor drawn; past ``total_chars`` of distinct texts in all, the same;
structural diffs are precomputed up to ``diff_lines`` and ``diff_budget``; the graph's layout gets
``graph_seconds``. So the report's work grows with the program up to those caps and no further.
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import html
import io
import json
import numbers
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..analysis.cost import cost_table, plot_cost
from ..analysis.graph import stage_graph
from ..analysis.numbers import num
from .versions import versions_line
from .report_texts import LIMITS, REFERENCE, ReportLimits, limits_note, pack_texts, pairs_note
from .jsonout import json_text, write_replacing
from ..stages import Stage

__all__ = ["ReportLimits", "render_report", "write_report", "render_diff_page", "write_diff_page"]

_PACKAGE = Path(__file__).resolve().parent.parent
_ASSETS = _PACKAGE / "assets"  # the report's own page script and style
_VIEWER = _ASSETS  # diffview.js / .css: the panel's DiffView widget loads the same files
_COST_COLUMNS = ("stage", "group", "ops", "flops", "transcendentals", "bytes", "xla_flops", "xla_bytes",
                 "collective_bytes", "temp_bytes", "seconds", "note")  # collective_bytes: a sharded program's only
_GRAPH_MAX_OPS = 300
_DIFF_HEIGHT = 600
_FOOTER = ('<footer class="wb-note">Written by hlo-workbench\'s <code>ex.report(path)</code>. One file: no network '
           "access; the stage texts are inside it, normalized as <code>ex.diff</code> prints them.</footer>")


def write_report(ex, path, graph=None, max_ops: int = _GRAPH_MAX_OPS, limits: ReportLimits = LIMITS) -> Path:
    """Write the report of ``ex`` to ``path`` (a temporary file in the same folder, then renamed, so a
    crash leaves any older report whole) and return the path. ``graph`` picks the stage drawn (default:
    the last MLIR stage that succeeded, ``ex.default_run_stage()``); above ``max_ops`` ops it is drawn
    one node per function. ``limits`` bound what the report reads, embeds and computes."""
    return _write(Path(path), render_report(ex, graph=graph, max_ops=max_ops, limits=limits))


def write_diff_page(before: str, after: str, before_name: str, after_name: str, path) -> Path:
    """Write the structural diff of two module texts (both MLIR or both XLA HLO) as one self-contained
    HTML page with the report's diff viewer (``hlo-workbench diff A B --html OUT``); returns the path."""
    return _write(Path(path), render_diff_page(before, after, before_name, after_name))


def _write(path: Path, page: str) -> Path:
    return write_replacing(path, lambda f: f.write(page.encode("utf-8")), mode=0o644)


def render_report(ex, graph=None, max_ops: int = _GRAPH_MAX_OPS, limits: ReportLimits = LIMITS) -> str:
    """The report of ``ex`` as one HTML document (see the module docstring)."""
    stages = ex.stages
    first = _first_pair(ex, stages)
    packed = pack_texts(stages, first, limits)
    whole = packed.whole
    read = [s for s in stages if not s.error and s.text in whole]
    body = "\n".join([
        _header(ex, stages, limits_note(limits, packed.usage)),
        _stage_table(stages),
        _diff_section(stages, first, packed.first_diff, whole),
        _cost_section(ex, read, [s.name for s in stages if not s.error and s.text not in whole]),
        _graph_section(ex, stages, graph, max_ops, whole, limits),
        _runs_section(ex),
        _FOOTER,
    ])
    return _document(f"{ex.spec.title} \u2014 hlo-workbench report", body, packed.data, stages, first,
                     packed.precomputed)


def render_diff_page(before: str, after: str, before_name: str, after_name: str,
                     limits: ReportLimits = LIMITS) -> str:
    """The structural diff of two module texts as one HTML document: the diff viewer and the ops delta."""
    group = "xla" if "HloModule" in before[:4000] else "mlir"
    stages = [Stage(before_name, group, before, "", True, None, None),
              Stage(after_name, group, after, "", True, None, before_name)]
    first = (before_name, after_name)
    packed = pack_texts(stages, first, limits)
    note = limits_note(limits, packed.usage)
    body = "\n".join([f"<h1>{_esc(before_name)} \u2192 {_esc(after_name)}</h1>",
                      f'<p class="wb-note" id="wb-limits">{_esc(note)}</p>',
                      _diff_section(stages, first, packed.first_diff, packed.whole),
                      _FOOTER.replace("ex.report(path)", "hlo-workbench diff --html")])
    return _document(f"{before_name} \u2192 {after_name} \u2014 hlo-workbench diff", body, packed.data, stages, first,
                     packed.precomputed)


def _document(title: str, body: str, packed: str, stages, first, precomputed) -> str:
    config = {
        "diffview": (_VIEWER / "diffview.js").read_text(encoding="utf-8"),
        "stages": [{"name": s.name, "parent": s.parent, "failed": bool(s.error), "error": s.error or ""}
                   for s in stages],
        "first": list(first),
        "height": _DIFF_HEIGHT,
        "pairs_note": pairs_note(precomputed),
    }
    script = _asset(_ASSETS / "report.js", "script")
    style = _asset(_VIEWER / "diffview.css", "style") + "\n" + _asset(_ASSETS / "report.css", "style")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}' blob:; style-src 'unsafe-inline'; "
           "img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>\n{style}\n</style></head>\n<body>\n{body}\n"
        f'<script type="application/json" id="wb-config">{_json_for_html(config)}</script>\n'
        f'<script type="text/plain" id="wb-data" data-encoding="gzip+base64">{packed}</script>\n'
        f'<script type="module">{script}</script>\n</body></html>\n'
    )


# -- escaping -----------------------------------------------------------------------------------------
class _Html(str):
    """Markup built here, already escaped."""


def _esc(x) -> str:
    return x if isinstance(x, _Html) else html.escape(str(x), quote=True)


def _json_for_html(obj) -> str:
    """JSON that cannot end or open anything inside a ``<script>`` element."""
    text = json_text(obj, "the report's settings", allow_nan=False, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(path: Path, tag: str) -> str:
    """A file inlined raw into a ``<script>``/``<style>`` element, which must not be able to end it."""
    text = path.read_text(encoding="utf-8")
    if re.search(rf"</{tag}|<!--|<script", text, re.IGNORECASE):
        raise ValueError(f"{path.name} cannot be inlined into <{tag}>: it holds '</{tag}', '<!--' or '<script'")
    return text


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


# -- numbers and tables -------------------------------------------------------------------------------
def _cell(v) -> tuple[str, bool]:
    """(escaped text, numeric) of one table cell; missing values blank."""
    if isinstance(v, _Html):
        return v, False
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
    return _esc(v), False


def _table(columns, rows, cls: str = "wb-table", row_attrs=None) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = []
    for k, row in enumerate(rows):
        cells = []
        for v in row:
            text, numeric = _cell(v)
            cells.append(f'<td class="wb-numeric">{text}</td>' if numeric else f"<td>{text}</td>")
        attrs = row_attrs[k] if row_attrs else ""
        body.append(f"<tr{attrs}>{''.join(cells)}</tr>")
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _section(ident: str, title: str, content: str) -> str:
    return f'<section id="{ident}"><h2>{_esc(title)}</h2>\n{content}\n</section>'


def _folded(text: str, limit: int = 90) -> _Html:
    """Short text as code; long text's start as the summary of a <details> holding all of it."""
    if len(text) <= limit:
        return _Html(f"<code>{_esc(text)}</code>")
    return _Html(f"<details><summary><code>{_esc(text[:limit])}</code>\u2026 ({len(text):,} characters)</summary>"
                 f"<pre>{_esc(text)}</pre></details>")


# -- the sections --------------------------------------------------------------------------------------
def _header(ex, stages, limits_note: str) -> str:
    spec = ex.spec
    groups = {}
    for s in stages:
        groups[s.group] = groups.get(s.group, 0) + 1
    changed = sum(1 for s in stages if s.changed)
    counts = ", ".join(f"{n} {g}" for g, n in groups.items())
    facts = [("function", _Html(f"<code>{_esc(spec.title)}</code>")), ("pipeline", _folded(spec.pipeline)),
             ("device", spec.device),
             ("stages", f"{len(stages)} ({counts}); {changed} changed the program")]
    pipeline = getattr(ex, "pipeline_string", "")
    if pipeline and pipeline != spec.pipeline:
        facts.append(("pass pipeline", _folded(pipeline)))
    sel = spec.selection
    if sel.disabled:
        facts.append(("patterns off", ", ".join(sorted(sel.disabled))))
    if sel.enabled:
        facts.append(("patterns added", ", ".join(sorted(sel.enabled))))
    if spec.xla_options:
        facts.append(("XLA options", "; ".join(f"{k}={v}" for k, v in spec.xla_options)))
    facts += [("versions", versions_line()),
              ("written", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")),
              ("limits", _Html(f'<span id="wb-limits">{_esc(limits_note)}</span>'))]
    dl = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in facts)
    error = ex.error
    failed = (f'<div class="wb-error"><b>Stage {_esc(error.stage)} failed</b> (the stages before it are '
              f"usable)<pre>{_esc(error)}</pre></div>") if error else ""
    warnings = "".join(f'<div class="wb-warn">warning: {_esc(w)}</div>' for w in getattr(ex, "warnings", ()))
    toc = ('<nav class="wb-toc"><a href="#stages">stages</a><a href="#diff">diff</a><a href="#cost">cost</a>'
           '<a href="#graph">graph</a><a href="#runs">runs</a></nav>')
    return (f"<header><h1>{_esc(spec.title)} \u2014 every compiler stage</h1>{toc}"
            f'<dl class="wb-facts">{dl}</dl>{failed}{warnings}</header>')


def _stage_table(stages) -> str:
    rows, attrs = [], []
    for k, s in enumerate(stages):
        ms = "" if s.seconds is None else num(s.seconds * 1e3) + (" (cached)" if s.cached else "")
        error = _Html(f'<details open class="wb-error"><summary>failed</summary><pre>{_esc(s.error)}</pre></details>'
                      if s.error else "")
        name = _Html(f'<span class="wb-name"><code>{_esc(s.name)}</code></span>')
        group = _Html(f'<span class="wb-group wb-group-{_esc(s.group)}">{_esc(s.group)}</span>')
        rows.append([k, name, group, "yes" if s.changed else "no", s.lines, _Html(_esc(ms)),
                     _folded(s.produced_by or "", 60) if s.produced_by else "", error])
        cls = "wb-failed" if s.error else ("" if s.changed else "wb-unchanged")
        attrs.append(f' data-stage="{_esc(s.name)}"' + (f' class="{cls}"' if cls else ""))
    table = _table(["#", "stage", "group", "changed", "lines", "ms", "produced by", "error"], rows,
                   "wb-table wb-stages", attrs)
    note = ('<p class="wb-note">"changed": the stage\'s text differs from its parent\'s (the row above, or the '
            'stage it was made from); "ms": the time of the step, "(cached)" when it was served from a cache '
            "and timed on its first run. With JavaScript on, each row's <b>diff</b> button shows it against its "
            "parent below.</p>")
    return _section("stages", f"Stages ({len(stages)})", note + table)


def _ops_delta(d, why: str) -> str:
    if d is None:
        return f'<div class="wb-note">ops: {_esc(why)}</div>'
    try:
        df = d.ops_delta()
    except Exception as e:
        return f'<div class="wb-note">ops delta unavailable: {_esc(e)}</div>'
    if df.empty:
        return '<div class="wb-note">ops: the same ops (rewired, or with other attributes)</div>'
    chips = "".join(f'<span class="wb-chip {"wb-up" if r.delta > 0 else "wb-down"}"><code>{_esc(r.op)}</code> '
                    f"{r.before}&rarr;{r.after} ({r.delta:+d})</span>" for r in df.itertuples())
    return f'<div class="wb-delta">ops: {chips}</div>'


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


def _diff_section(stages, first, first_diff, whole) -> str:
    def picker(ident: str, label: str, chosen: str) -> str:
        options = "".join(f'<option value="{_esc(s.name)}"{" selected" if s.name == chosen else ""}>'
                          f'{_esc(s.name)}{" (failed)" if s.error else ""}</option>' for s in stages)
        return f'<label>{label} <select id="{ident}" disabled>{options}</select></label>'

    pickers = (f'<div class="wb-pickers">{picker("wb-pick-a", "before", first[0])}'
               f'<button type="button" id="wb-swap" disabled title="swap the two stages">&#8646;</button>'
               f'{picker("wb-pick-b", "after", first[1])}</div>')
    delta = (f'<p class="wb-note">What {_esc(first[0])} \u2192 {_esc(first[1])} changed, by op '
             f"(<code>ex.diff({_esc(json.dumps(first[0]))}, {_esc(json.dumps(first[1]))}).ops_delta()</code>):</p>"
             + _ops_delta(first_diff, _why_no_diff(stages, first, whole)))
    return _section("diff", "Diff of two stages", (
        pickers + '<noscript><p>The diff viewer needs JavaScript; everything else in this report is static.</p>'
        '</noscript><div class="wb-note" id="wb-diff-note"></div><div id="wb-diff"></div>' + delta))


def _clean_svg(svg: str, prefix: str) -> str:
    """An SVG document as inline markup: re-serialized from its parsed tree with only drawing elements
    and attributes (no scripts, styles, handlers, foreign content or links out), ids prefixed so that
    two SVGs on one page do not clash, no XML declaration, doctype or namespace declarations."""
    root = ET.fromstring(svg.encode("utf-8"))
    out: list[str] = []
    _svg_element(root, prefix, out)
    return "".join(out)


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
        attrs.append(f' {key}="{html.escape(value, quote=True)}"')
    out.append(f"<{name}{''.join(attrs)}>")
    if el.text:
        out.append(html.escape(el.text))
    for child in el:
        _svg_element(child, prefix, out)
        if child.tail:
            out.append(html.escape(child.tail))
    out.append(f"</{name}>")


def _unavailable(what: str, err: BaseException) -> str:
    return f'<p class="wb-error">{_esc(what)}: {_esc(type(err).__name__)}: {_esc(err)}</p>'


def _cost_section(ex, read, left_out: list[str]) -> str:
    """The cost table and chart of the stages in ``read`` (those whose text the report read whole)."""
    try:
        df = cost_table(ex, stages=read)
        cols = [c for c in _COST_COLUMNS if c in df and (c != "collective_bytes" or df[c].fillna(0).gt(0).any())]
        table = _table(cols, df[cols].itertuples(index=False, name=None))
    except Exception as e:  # the rest of the report stands without it
        table = _unavailable("the cost table could not be computed", e)
    try:
        import matplotlib

        fig = plot_cost(ex, stages=read)
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "hlo-workbench"}):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        plot = f'<div class="wb-plot">{_clean_svg(buf.getvalue(), "wb-cost-")}</div>'
    except Exception as e:
        plot = _unavailable("the cost chart could not be drawn", e)
    note = ('<p class="wb-note"><code>ex.cost()</code>: the analytic model\'s ops, flops, transcendentals and '
            "bytes of each module stage, XLA's HloCostAnalysis (<code>xla_*</code>) of the same module and of "
            "each HLO stage, and the compiled module's temporary memory.</p>")
    if left_out:
        note += (f'<p class="wb-note">Not costed here (their texts are over the report\'s limits, see the header; '
                 f"<code>ex.cost()</code> has them): {_esc(', '.join(left_out))}</p>")
    return _section("cost", "Cost", note + plot + '<div class="wb-scroll">' + table + "</div>")


def _graph_section(ex, stages, graph, max_ops: int, whole, limits: ReportLimits) -> str:
    try:
        st = ex.default_run_stage() if graph is None else ex.stage(graph)
    except Exception as e:
        return _section("graph", "Graph", _unavailable("no stage to draw", e))
    ref = next((s for s in stages if s.name == REFERENCE and s.is_module), None)
    against = ref if ref is not None and ref.name != st.name and st.group == "mlir" else ex.parent_of(st)
    what = (f"<code>ex.graph({_esc(json.dumps(st.name))}, max_ops={max_ops})</code>: the dataflow of "
            f"<b>{_esc(st.name)}</b>" + (f", ops new or changed since <b>{_esc(against.name)}</b> filled orange"
                                           if against is not None else "") + ".")
    if st.text not in whole or (against is not None and not against.error and against.text not in whole):
        drawn = (f'<p class="wb-note">Not drawn: the text of {_esc(st.name)} or of the stage it is compared with is '
                 "over the report's limits (see the header).</p>")
        return _section("graph", f"Graph of {st.name}", f'<p class="wb-note">{what}</p>' + drawn)
    try:
        g = stage_graph(st, against, max_ops=max_ops, layout_seconds=limits.graph_seconds)
        svg = g.pipe(format="svg").decode("utf-8")
        drawn = f'<div class="wb-graph wb-scroll">{_clean_svg(svg, "wb-graph-")}</div>'
    except Exception as e:  # no graphviz, dot failing or too slow (GraphTooLargeError), a stage not drawable
        drawn = _unavailable(f"the graph of {st.name} could not be drawn", e)
    return _section("graph", f"Graph of {st.name}", f'<p class="wb-note">{what}</p>' + drawn)


def _runs_section(ex) -> str:
    runs = list(getattr(ex, "runs", ()))
    if not runs:
        return _section("runs", "Runs", '<p class="wb-note">No runs: this Exploration was not run before the '
                        "report was written (<code>ex.run(stage)</code> runs a stage and checks its numbers).</p>")
    rows, details = [], []
    for r in runs:
        t, c = r.timing, r.check
        if c is None:
            verdict = _Html('<span class="wb-chip">not checked</span>')
        elif c.passed:
            verdict = _Html('<span class="wb-chip wb-pass">&#10003; passed</span>')
        else:
            verdict = _Html('<span class="wb-chip wb-fail">&#10006; FAILED</span>')
        rows.append([r.stage, r.device, t.median * 1e3, t.min * 1e3, t.iqr * 1e3, len(t.times), verdict,
                     c.reference if c else "", c.max_abs if c else None, c.lowered_abs if c else None,
                     c.max_rel if c else None])
        if c is not None:
            leaves = _table(["output", "shape", "dtype", "max abs err", "as lowered", "max rel err", "tolerance",
                             "check"], [[leaf.path, str(tuple(leaf.shape)), leaf.dtype, leaf.max_abs, leaf.lowered_abs,
                                         leaf.max_rel, leaf.tolerance, "passed" if leaf.passed else "FAILED"]
                                        for leaf in c.leaves])
            note = f'<div class="wb-note">{_esc(c.note)}</div>' if c.note else ""
            details.append(f'<details class="wb-run"><summary><b>{_esc(r.stage)}</b> on {_esc(r.device)}: '
                           f"{verdict} against <code>{_esc(c.reference)}</code> ({_esc(c.kind)} reference)"
                           f"</summary>{note}{leaves}</details>")
    table = _table(["stage", "device", "median ms", "min ms", "IQR ms", "n", "check", "against", "max abs err",
                    "as lowered", "max rel err"], rows)
    note = ('<p class="wb-note">Each <code>ex.run</code> made before the report: time per call after one warm-up '
            "call, and the check of its outputs (per output below).</p>")
    return _section("runs", f"Runs ({len(runs)})", note + table + "".join(details))
