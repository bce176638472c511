"""The panel's Compile tab: where compile time goes, both pipelines in one list (``ex.compile_profile()``).

One row per step in the order they ran: the trace and the lowering, each MLIR pass (the workbench's clocks
in the pass worker), each XLA pass and backend step (JAX's profiler, over one more compile of the last
MLIR stage), and what no step holds (dumps, XLA's checks). Each row has a bar of its share of the whole;
a row that made a stage is a link: a click diffs that stage against its parent in the Diff tab. "only the
steps that made a stage or took 1 %" keeps the list short (XLA runs some 200 passes, most of them in
microseconds). It fills when first shown for an Exploration, after XLA's own compile (whose clocks it is
compared with); work runs on the panel's worker, and an error is said in the tab.
"""
from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W
import traitlets
from markupsafe import Markup

from ...errors import WorkbenchError
from ...exploration import Exploration
from . import actions
from .lists import Messages, time_label

__all__ = ["CompileTab", "CompileView", "compile_rows", "TITLE"]

TITLE = "Compile"


def compile_rows(table, stages: set[str]) -> list[dict]:
    """What the view shows of each row of ``CompileProfile.table``; ``stages``: the names a click can show."""
    top = max(float(table["share"].max()) if len(table) else 0.0, 1e-12)
    rows = []
    for r in table.to_dict("records"):
        changed = r.get("changed")
        rows.append({"kind": r["kind"], "name": str(r["name"]), "pipeline": r.get("pipeline") or "",
                     "stage": r.get("stage") or "", "link": (r.get("stage") or "") in stages,
                     "ms": time_label(float(r["seconds"]), r.get("cached")),
                     "share": round(float(r["share"]), 5), "frac": round(float(r["share"]) / top, 4),
                     "changed": "" if changed is None or changed != changed else ("changed" if changed else "")})
    return rows


_ESM = r"""
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
function render({ model, el }) {
  el.classList.add("wbc");
  el.innerHTML = `<div class="wbc-head"><label><input type="checkbox" class="wbc-few" checked> only the steps that ` +
    `made a stage or took 1 %</label><span class="wbc-count"></span></div><div class="wbc-list"></div>` +
    `<div class="wbc-msg"></div>`;
  const list = el.querySelector(".wbc-list"), few = el.querySelector(".wbc-few");
  const draw = () => {
    el.querySelector(".wbc-msg").textContent = model.get("message");
    const rows = model.get("rows");
    const shown = rows.filter((r) => !few.checked || r.link || r.share >= 0.01 || r.kind !== "xla pass");
    el.querySelector(".wbc-count").textContent = rows.length ? `${shown.length} of ${rows.length} steps` : "";
    list.innerHTML = shown.map((r) =>
      `<div class="wbc-row k-${esc(r.kind.replace(" ", "-"))}${r.link ? " wbc-link" : ""}" data-stage="${esc(r.stage)}" ` +
      `title="${esc(r.name + (r.pipeline ? " in " + r.pipeline : "") + ": " + r.ms + ", " + (100 * r.share).toFixed(2) + " %")}">` +
      `<span class="wbc-bar"><span style="width:${(100 * r.frac).toFixed(1)}%"></span></span>` +
      `<span class="wbc-kind">${esc(r.kind)}</span><span class="wbc-name">${esc(r.name)}</span>` +
      `<span class="wbc-stage">${esc(r.stage)}</span><span class="wbc-ms">${esc(r.ms)}</span>` +
      `<span class="wbc-share">${(100 * r.share).toFixed(1)} %</span><span class="wbc-changed">${esc(r.changed)}</span></div>`).join("");
  };
  few.addEventListener("change", draw);
  list.addEventListener("click", (e) => {
    const row = e.target.closest(".wbc-row.wbc-link");
    if (row) model.send({ type: "stage", name: row.dataset.stage });
  });
  for (const name of ["rows", "message"]) model.on("change:" + name, draw);
  draw();
}
export default { render };
"""

_CSS = """
.wbc-head { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; font-size: 12px; margin: 2px 0 4px; }
.wbc-list { max-height: 420px; overflow-y: auto; font-size: 12px; font-family: var(--jp-code-font-family, monospace); }
/* one grid per row, the same columns in every row: the names get what the fixed columns leave and wrap there
   (at their dashes, else anywhere) rather than be cut, so a narrow panel shows every step whole */
.wbc-row { display: grid; column-gap: 8px; align-items: center; padding: 1px 4px;
  grid-template-columns: minmax(32px, 0.6fr) 7em minmax(5em, 1fr) minmax(5em, 1fr) 6.5em 4em 4.5em; }
.wbc-row > span { min-width: 0; overflow-wrap: anywhere; }
.wbc-row.wbc-link { cursor: pointer; }
.wbc-row.wbc-link:hover { background: rgba(30, 120, 220, 0.10); }
.wbc-row.wbc-link .wbc-stage { text-decoration: underline; color: #1565c0; }
.wbc-bar { height: 12px; position: relative; background: rgba(0, 0, 0, 0.04); }
.wbc-bar span { position: absolute; left: 0; top: 0; bottom: 0; background: rgba(230, 120, 20, 0.6); }
.k-mlir-pass .wbc-bar span { background: rgba(90, 60, 200, 0.6); }
.k-trace .wbc-bar span, .k-lowering .wbc-bar span { background: rgba(40, 150, 80, 0.6); }
.k-xla-backend .wbc-bar span, .k-xla-other .wbc-bar span { background: rgba(120, 120, 120, 0.6); }
.wbc-kind { color: #666; }
.wbc-ms, .wbc-share { text-align: right; }
.wbc-share { color: #666; }
.wbc-changed { color: #2e7d32; }
.wbc-msg { font-size: 12px; color: #666; }
"""


class CompileView(Messages):
    """The list of steps: ``rows`` from ``compile_rows``, ``message`` under it. A click on a row that made a
    stage is sent to ``handler`` as ``{"type": "stage", "name": ...}``."""

    _esm = _ESM
    _css = _CSS
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)


class CompileTab:
    """The Compile tab's widgets (``widget``). ``submit(label, python, work, busy=...)`` queues work on the
    panel's worker; ``show_stage(name)`` diffs a stage against its parent in the Diff tab."""

    def __init__(self, name: str, submit: Callable, show_stage: Callable[[str], None]):
        self.name, self._submit, self._show_stage = name, submit, show_stage
        self.note = W.HTML()
        self.view = CompileView()
        self.view.handler = self._on_msg
        self.widget = W.VBox([self.note, self.view])
        self._for: Exploration | None = None
        self.profile = None  # the CompileProfile shown

    def show(self, ex: Exploration, *, visible: bool, pending: bool) -> None:
        if not visible or self._for is ex:
            return
        if pending:
            self.view.rows, self.view.message = [], ""
            self.note.value = ('<div class="wb-note">XLA is compiling: where its compile time goes is measured '
                               "when it is done (one more compile, under JAX's profiler)</div>")
            return
        self._for = ex
        act = actions.compile_profile(self.name)
        self.note.value = '<div class="wb-note">XLA compiles the last MLIR stage again under JAX\'s profiler…</div>'

        def work():
            try:
                cp = act.call(ex)
            except WorkbenchError as e:
                self.profile, self.view.rows = None, []
                self.note.value = str(Markup('<div class="wb-error">{}</div>').format(str(e)))
                return
            self.profile = cp
            names = {s.name for s in ex.stages}
            with self.view.hold_sync():
                self.view.rows = compile_rows(cp.table, names)
                self.view.message = "click a step that made a stage to diff it with its parent"
            self.note.value = str(Markup(
                '<div class="wb-note">compile time per step, <b>{} s</b> in all: the trace, the lowering and each MLIR '
                "pass by the workbench's clocks (a cached pass: its first run's), each XLA pass and backend step by "
                "JAX's profiler over one more compile (the exploration's own clocks measured {} s for the same "
                "work)</div>").format(f"{cp.total_s:.3f}", f"{cp.explore_s:.3f}"))

        self._submit(act.label, act.python, work, busy=False)

    def _on_msg(self, msg: dict) -> None:
        if msg.get("type") == "stage" and msg.get("name"):
            self._show_stage(str(msg["name"]))
