"""The panel's Passes tab: the pipeline (a preset or a pass pipeline string), and the Enzyme-JaX
patterns and XLA's HLO passes, each a switch.

The tab shows the Exploration the panel shows: its pipeline, which patterns are on, the XLA passes
the compiles reported with those switched off, and, when the pipeline applies no patterns, the
presets that do. It changes nothing itself: a pipeline picked goes to the panel's ``set_pipeline``,
and the two switch lists report their clicks to the panel (their ``handler``, which the panel sets:
a toggle is one of its actions), each a rebuild of the Exploration on the panel's worker.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import ipywidgets as W

from ...errors import WorkbenchError
from ...exploration import Exploration
from ...pipeline.presets import PRESETS, preset, resolve
from . import html
from .lists import ToggleList

__all__ = ["PassesTab"]

_CUSTOM = "(custom string)"
# the presets whose pipeline applies the Enzyme-JaX patterns (an enzyme-hlo-patterns step)
_WITH_PATTERNS = tuple(n for n in PRESETS if any(st.kind == "patterns" for st in preset(n).steps))


class PassesTab:
    """The tab's widgets (``widget``); ``show`` fills them for an Exploration. ``set_pipeline(text)``
    rebuilds with a preset or pipeline string; ``quiet()`` says whether a widget's value is being set
    by the panel, not the user."""

    def __init__(self, set_pipeline: Callable[[str], None], quiet: Callable[[], bool]):
        self._set_pipeline, self._quiet = set_pipeline, quiet
        self._xla_seen: list[str] = []  # the XLA passes any compile shown here reported, in order
        self._catalog: tuple | None = None  # (options, items, default-on names)
        pipeline_row = self._pipeline_row()
        switches = self._switches()
        self.patterns_unused = W.HTML()  # shown when the pipeline has no enzyme-hlo-patterns step
        self.pattern_presets = [W.Button(description=n, tooltip=f"rebuild with the preset {n!r}",
                                         layout=W.Layout(width="auto")) for n in _WITH_PATTERNS]
        for b in self.pattern_presets:
            b.on_click(lambda b: set_pipeline(b.description))
        self.patterns_note = W.VBox([self.patterns_unused, W.HBox(self.pattern_presets).add_class("wb-row")],
                                    layout=W.Layout(display="none"))
        self.widget = W.VBox([pipeline_row, self.patterns_note, switches])

    def _pipeline_row(self) -> W.HBox:
        """The preset menu, the pipeline string and its apply button."""
        L = W.Layout
        self.preset = W.Dropdown(options=list(PRESETS) + [_CUSTOM], description="pipeline", layout=L(width="260px"),
                                 style={"description_width": "initial"})
        self.pipeline_text = W.Text(placeholder="a preset or a pass pipeline: canonicalize,cse,enzyme-hlo-patterns",
                                    layout=L(flex="1 1 auto"))
        self.apply_pipeline = W.Button(description="apply", button_style="primary", layout=L(width="80px"),
                                       tooltip="rebuild with this pipeline")
        self.preset.observe(self._on_preset, "value")
        self.apply_pipeline.on_click(lambda _b: self._set_pipeline(self.pipeline_text.value))
        return W.HBox([self.preset, self.pipeline_text, self.apply_pipeline])

    def _switches(self) -> W.HBox:
        """The pattern switches beside the XLA pass switches, each list under its caption."""
        L = W.Layout
        self.patterns_view = ToggleList(noun="pattern", nouns="patterns")
        self.xla_view = ToggleList(noun="XLA pass", nouns="XLA passes")
        return W.HBox([W.VBox([W.HTML('<div class="wb-caption"><b>Enzyme-JaX rewrite patterns</b>: applied '
                                      "greedily in every <code>enzyme-hlo-patterns</code> stage</div>"),
                               self.patterns_view], layout=L(flex="3 1 0", min_width="0")),
                       W.VBox([W.HTML('<div class="wb-caption"><b>XLA HLO passes</b>: those the last compile '
                                      "ran</div>"), self.xla_view], layout=L(flex="2 1 0", min_width="0"))],
                      ).add_class("wb-row")

    def _on_preset(self, change) -> None:
        if self._quiet() or change["new"] == _CUSTOM:
            return
        self.pipeline_text.value = change["new"]
        self._set_pipeline(change["new"])

    # -- the Exploration shown -------------------------------------------------------------------------
    def show(self, ex: Exploration, pending: bool) -> None:
        """Show ``ex``'s pipeline and switches; ``pending``: its XLA compile has not ended, so its XLA
        passes are not known yet. The panel calls it with its widgets quiet (see ``quiet``)."""
        for p in [] if pending else ex.xla_passes:
            if p not in self._xla_seen:
                self._xla_seen.append(p)
        self.preset.value = ex.spec.pipeline if ex.spec.pipeline in PRESETS else _CUSTOM
        self.pipeline_text.value = ex.spec.pipeline
        self._show_patterns(ex)
        self._show_xla(ex, pending)

    def _pattern_catalog(self, ex: Exploration):
        from ...pipeline.catalog import patterns

        options = ex.spec.selection.options
        if self._catalog is None or self._catalog[0] != options:
            df = patterns(**dataclasses.asdict(options))
            items = [[n, g, bool(d)] for n, g, d in zip(df["name"], df["group"], df["default_enabled"])]
            self._catalog = (options, items, {n for n, _, d in items if d})
        return self._catalog[1], self._catalog[2]

    def _show_patterns(self, ex: Exploration) -> None:
        try:
            items, default_on = self._pattern_catalog(ex)
        except WorkbenchError as e:
            self.patterns_view.message = str(e)
            return
        sel = ex.spec.selection
        on = (default_on - sel.disabled) | sel.enabled
        used = any(st.kind == "patterns" for st in resolve(ex.spec.pipeline, inline=ex.spec.inline).steps)
        with self.patterns_view.hold_sync():
            if self.patterns_view.items != items:
                self.patterns_view.items = items
            self.patterns_view.enabled = sorted(on)
            self.patterns_view.message = "" if used else (
                f"the pipeline {ex.spec.pipeline!r} has no enzyme-hlo-patterns step: switching patterns has no "
                "effect on its stages")
        self.patterns_unused.value = "" if used else html.patterns_unused(ex.spec.pipeline)
        self.patterns_note.layout.display = "none" if used else ""

    def _show_xla(self, ex: Exploration, pending: bool) -> None:
        off = ex.spec.xla_disabled
        names = self._xla_seen + [p for p in off if p not in self._xla_seen]
        with self.xla_view.hold_sync():
            self.xla_view.items = [[n, "XLA HLO passes", True] for n in names]
            self.xla_view.enabled = [n for n in names if n not in off]
            self.xla_view.message = "" if names else ("XLA is compiling: its passes are listed when it ends"
                                                      if pending else
                                                      "no XLA compile (a module without @main, or XLA failed)")
