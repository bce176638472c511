"""The panel's Collectives tab: the ops that move data between devices, for a sharded program.

It is always a tab of the panel. For a program that is not sharded (no Shardy mesh, one partition) it
says why it is empty and how to get collectives, and reads nothing. For a sharded one, shown, it
lists the collectives of the right-hand stage B (``ex.collectives(B)``: op, group, bytes each device
moves, the user's line) and, per stage, how many there are and how many bytes they move per device
(``ex.collectives()``), B's row marked: where the partitioner put them, and which pass combined or
removed them. It fills when shown and anew when the stage picked or the Exploration changes (a toggle
re-ran the pipeline); while XLA compiles, the stages so far are counted and XLA's come with them.
Work runs on the panel's worker; an error is said in the tab.

Python computes the facts (``tab_data``: notes, B's table, the per-stage lines, as JSON) and the view
component ``collectives`` (extensions/hlo-workbench-lab/src/components/collectives.ts) draws them. A click
on one of B's collectives shows the Diff tab with that op's line marked on B's side (``DiffView.mark``); a
click on a stage of the per-stage table makes it B (``pick``).
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ...analysis.diff import shown_lines
from ...artifacts.jsonout import table_json
from ...errors import WorkbenchError
from ...exploration import Exploration
from ...ir.hlo_sharding import partition_count
from ...pipeline.shardy import is_sharded
from .component import Component
from .diffview import DiffView
from .pending import late_name

__all__ = ["CollectivesTab", "ONE_DEVICE", "TITLE", "is_sharded_program", "stage_lines", "stage_summary", "tab_data"]

TITLE = "Collectives"
ONE_DEVICE = ("No collectives: this program runs on one device. Collectives are the ops that move data between "
              "devices (all-reduce, all-gather, reduce-scatter, collective-permute). They appear when the program "
              "is sharded: its arguments placed with a NamedSharding on a jax.sharding.Mesh of several devices, or "
              "jax.lax.with_sharding_constraint inside it. Lesson 9 (09_sharding.ipynb) shows how, on 8 CPU devices.")
# the columns of ``ex.collectives()`` the table of one stage shows, in this order (those with no value left out)
_COLUMNS = ("kind", "op", "dialect", "func", "result", "shape", "dtype", "replica_groups", "mesh_axes", "group_size",
            "buffer_bytes", "bytes_per_device", "source", "note")


def is_sharded_program(ex: Exploration) -> bool:
    """Whether ``ex``'s program is sharded, as explore decides it (``pipeline.shardy.is_sharded``: a traced
    program spans several devices; a text names a mesh with axes), or its text has more than one
    partition (read off the first module stage, without waiting for XLA)."""
    traced = ex.spec.traced
    if traced is not None:
        return is_sharded("", traced.nr_devices)  # a trace's devices say it
    first = next((s for s in ex.pipeline_stages if s.is_module and s.text), None)
    if first is None:
        return False
    head = first.text[:20000]  # the module's attributes and its meshes come first
    return is_sharded(head) or (partition_count(head) or 0) > 1


def _bytes(n) -> str:
    if n is None or math.isnan(float(n)):  # not known
        return ""
    n = float(n)
    for size, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def stage_summary(df, stages: list[str], failed=()):
    """One row per stage of ``stages``, in order: how many collectives it has and the bytes they move
    per device (``bytes_per_device`` summed; None when a row's is unknown); a ``failed`` stage has none."""
    import pandas as pd

    rows = []
    for name in stages:
        if name in failed:
            rows.append({"stage": name, "collectives": None, "bytes_per_device": None, "kinds": "(the stage failed)"})
            continue
        part = df[df["stage"] == name]
        known = part["bytes_per_device"].dropna()
        total = int(known.sum()) if len(known) == len(part) else None
        rows.append({"stage": name, "collectives": len(part), "bytes_per_device": total,
                     "kinds": ", ".join(f"{k} {n}" for k, n in part["kind"].value_counts(sort=False).items())})
    return pd.DataFrame(rows, columns=["stage", "collectives", "bytes_per_device", "kinds"])


def _stage_b(right: str, here) -> dict:
    """The collectives of stage B (``right``): ``here``, its rows of ``ex.collectives()``; None while XLA
    compiles it, "failed" for a failed stage. ``table``: the columns that have a value, bytes in words."""
    if here is None:
        return {"status": "compiling", "caption": f"XLA is compiling: the collectives of {right} are listed when "
                                                  "its stages arrive"}
    if isinstance(here, str):
        return {"status": "failed", "caption": f"{right} failed: it has no program to read"}
    if not len(here):
        return {"status": "none", "caption": f"{right}: no collective ops"}
    shown = here[[c for c in _COLUMNS if c in here.columns]].copy()
    shown = shown[[c for c in shown.columns if c in ("kind", "result") or shown[c].notna().any()]]
    for c in ("buffer_bytes", "bytes_per_device"):
        if c in shown.columns:
            shown[c] = [_bytes(v) for v in shown[c]]
    caption = (f"{right}: {len(here)} collective{'s' * (len(here) != 1)}, "
               f"{_bytes(here['bytes_per_device'].dropna().sum())} per device")
    return {"status": "listed", "caption": caption, "table": table_json(shown, "collectives")}


def stage_lines(summary, right: str) -> list[dict]:
    """The per-stage table's lines: consecutive stages with the same count, bytes and kinds are one line (``first``,
    ``last``, how many ``stages``; stage B alone, ``b``), its count (None for a failed stage), bytes in words, kinds."""
    lines, keys = [], []
    for r in summary.itertuples():
        key = tuple(None if v is None or (isinstance(v, float) and math.isnan(v)) else v
                    for v in (r.collectives, r.bytes_per_device, r.kinds))
        if lines and right not in (r.stage, lines[-1]["last"]) and key == keys[-1]:
            lines[-1].update(last=r.stage, stages=lines[-1]["stages"] + 1)
            continue
        keys.append(key)
        count = None if key[0] is None else int(key[0])
        lines.append({"first": r.stage, "last": r.stage, "stages": 1, "collectives": count, "bytes": _bytes(key[1]),
                      "kinds": r.kinds, "b": r.stage == right})
    return lines


def tab_data(name: str, every, names: list[str], failed: set, right: str, here, pending: bool) -> dict:
    """What the tab shows of a sharded program, as JSON: ``every`` is ``ex.collectives()`` (or the stages so far
    while XLA compiles), ``names`` the stages in order, ``here`` B's rows (see ``_stage_b``)."""
    note = (f'the ops that move data between devices: {name}.collectives("{right}") for stage B, '
            f"{name}.collectives() for every stage. bytes_per_device is what one device sends by the ring estimates "
            "(all-reduce 2(n-1)/n S, all-gather and reduce-scatter (n-1)/n S, collective-permute S).")
    summary = stage_summary(every, [s for s in names if s != "jaxpr"], failed)
    caption = ("per stage: how many collectives, and the bytes they move per device (stages in a row that have the "
               "same are one line; click one to make it B)" + (" (XLA is compiling: its stages come with it)"
                                                                 if pending else ""))
    return {"state": "shown", "stage": right, "pending": pending,
            "notes": [note] + ([] if len(every) else ["no stage of this program has a collective op"]),
            "here": _stage_b(right, here), "summary": {"caption": caption, "lines": stage_lines(summary, right)}}


class CollectivesTab:
    """The tab (its ``widget``, a view component); ``show`` is called each time the panel shows a pair or a tab
    (``visible``: this one is selected). ``pick(stage)`` makes a stage B; an op clicked is marked in
    ``diff_view``, which ``show_diff()`` brings into view."""

    def __init__(self, name: str, submit: Callable, pick: Callable[[str], None], diff_view: DiffView,
                 show_diff: Callable[[], None]):
        self.name, self._submit, self._pick, self._diff_view, self._show_diff = name, submit, pick, diff_view, show_diff
        self.widget = Component("collectives", {"state": "empty"}, on_action=self._on_action)
        self._sharded: tuple | None = None  # (Exploration, is sharded) last decided
        self._key: tuple | None = None  # (Exploration, right stage, pending) shown

    def show(self, ex: Exploration, right: str, *, visible: bool, pending: bool) -> None:
        if not visible:
            return
        if self._sharded is None or self._sharded[0] is not ex:
            self._sharded = (ex, is_sharded_program(ex))
        if not self._sharded[1]:
            self._key = None
            self.widget.data = {"state": "one-device", "notes": [ONE_DEVICE]}
            return
        key = (ex, right, pending)
        if self._key is not None and self._key[0] is ex and self._key[1:] == key[1:]:
            return
        self._key = key
        self._fill(ex, right, pending)

    def _fill(self, ex: Exploration, right: str, pending: bool) -> None:
        python = f'{self.name}.collectives("{right}")'
        self.widget.data = {**self.widget.data, "busy": f"reading the collectives of {right}…"}

        def work():
            try:
                stages = ex.pipeline_stages if pending else ex.stages  # XLA compiling: the stages so far
                names, failed = [s.name for s in stages], {s.name for s in stages if s.error}
                if pending:
                    import pandas as pd

                    every = pd.concat([ex.collectives(s) for s in names], ignore_index=True)
                else:
                    every = ex.collectives()
                here = (None if pending and late_name(right) else "failed" if right in failed
                        else every[every["stage"] == right])
            except WorkbenchError as e:
                self.widget.data = {"state": "error", "error": str(e)}
                return
            self.widget.data = tab_data(self.name, every, names, failed, right, here, pending)

        self._submit(f"reading the collectives of {right}", python, work, busy=False)

    def _on_action(self, action: str, payload: dict) -> None:
        """A click in the component: an op of B to mark in the diff, or a stage to make B."""
        try:
            if action == "op" and self._key is not None:
                stage, result, func = (str(payload.get(k) or "") for k in ("stage", "result", "func"))
                self.mark_op(self._key[0], stage, result, func)
            elif action == "stage":
                self._pick(str(payload["stage"]))
        except (WorkbenchError, KeyError) as e:  # a stage of an Exploration replaced meanwhile: said in the tab
            self._say(f"{action}: {e}")

    def _say(self, error: str) -> None:
        self.widget.data = {**self.widget.data, "error": error}

    def mark_op(self, ex: Exploration, stage: str, result: str, func: str = "") -> None:
        """The Diff tab, op ``result`` (of function ``func``) of ``stage`` marked on B's side and scrolled to."""
        view = self._diff_view
        self._show_diff()

        def work():
            name, text = view.side("after")
            try:
                rows = ex.locations(stage) if name == stage else None
            except WorkbenchError:  # a stage without ops to locate
                rows = None
            shown = {t: k for k, t in enumerate(shown_lines(ex.stage(stage).text))}
            if rows is None or len(shown) != text.count("\n") + 1:  # the diff does not show this text as B
                self._say(f"{result} of {stage} cannot be marked: the diff does not show {stage}'s ops as B")
                return
            same = rows[rows["result"] == result]
            own = same[same["func"] == func]  # a name is unique in its function (HLO: its computation)
            lines = (own if len(own) else same)["text_line"][:1]
            view.mark(after=[shown[t] for t in lines if t in shown], focus="after")

        self._submit(f"marking {result} of {stage} in the diff", None, work, busy=False)
