"""The panel's Collectives tab: the ops that move data between devices, for a sharded program.

It is always a tab of the panel. For a program that is not sharded (no Shardy mesh, one partition) it
says why it is empty and how to get collectives, and reads nothing. For a sharded one, shown, it
lists the collectives of the right-hand stage B (``ex.collectives(B)``: op, group, bytes each device
moves, the user's line) and, per stage, how many there are and how many bytes they move per device
(``ex.collectives()``), B's row marked: where the partitioner put them, and which pass combined or
removed them. It fills when shown and anew when the stage picked or the Exploration changes (a toggle
re-ran the pipeline); while XLA compiles, the stages so far are counted and XLA's come with them.
Work runs on the panel's worker; an error is said in the tab.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import ipywidgets as W
from markupsafe import Markup

from ...errors import WorkbenchError
from ...exploration import Exploration
from ...ir.hlo_sharding import partition_count
from ...pipeline.shardy import is_sharded
from .html import num, table
from .pending import late_name

__all__ = ["CollectivesTab", "TITLE", "is_sharded_program", "stage_summary"]

TITLE = "Collectives"
_ONE_DEVICE = ('<div class="wb-note wb-collectives-none"><b>No collectives: this program runs on one device.</b> '
               "Collectives are the ops that move data between devices (all-reduce, all-gather, reduce-scatter, "
               "collective-permute). They appear when the program is sharded: its arguments placed with a "
               "<code>NamedSharding</code> on a <code>jax.sharding.Mesh</code> of several devices, or "
               "<code>jax.lax.with_sharding_constraint</code> inside it. Lesson 9 (09_sharding.ipynb) shows how, on "
               "8 CPU devices.</div>")
# the columns of ``ex.collectives()`` the table of one stage shows, in this order
_COLUMNS = ("kind", "op", "dialect", "func", "result", "shape", "dtype", "replica_groups", "mesh_axes", "group_size",
            "buffer_bytes", "bytes_per_device", "source", "note")


def is_sharded_program(ex: Exploration) -> bool:
    """Whether ``ex``'s program is sharded, as explore decides it (``pipeline.shardy.is_sharded``: a traced
    program spans several devices; a text names a mesh with axes), or its text has more than one
    partition (read off the first module stage, without waiting for XLA)."""
    traced = ex.spec.traced
    if traced is not None:
        return is_sharded(traced.stablehlo, traced.nr_devices)
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


class CollectivesTab:
    """The tab (its ``widget``); ``show`` is called each time the panel shows a pair or a tab (``visible``:
    this one is selected)."""

    def __init__(self, name: str, submit: Callable):
        self.name, self._submit = name, submit
        self.note = W.HTML()
        self.stage_table = W.HTML(layout=W.Layout(max_height="320px", overflow="auto"))
        self.summary = W.HTML(layout=W.Layout(max_height="320px", overflow="auto"))
        self.widget = W.VBox([self.note, self.stage_table, self.summary])
        self.widget.add_class("wb-collectives")
        self._sharded: tuple | None = None  # (Exploration, is sharded) last decided
        self._key: tuple | None = None  # (Exploration, right stage, pending) shown

    def show(self, ex: Exploration, right: str, *, visible: bool, pending: bool) -> None:
        if not visible:
            return
        if self._sharded is None or self._sharded[0] is not ex:
            self._sharded = (ex, is_sharded_program(ex))
        if not self._sharded[1]:
            self._key = None
            self.note.value, self.stage_table.value, self.summary.value = _ONE_DEVICE, "", ""
            return
        key = (ex, right, pending)
        if self._key is not None and self._key[0] is ex and self._key[1:] == key[1:]:
            return
        self._key = key
        self._fill(ex, right, pending)

    def _fill(self, ex: Exploration, right: str, pending: bool) -> None:
        n = self.name
        python = f'{n}.collectives("{right}")'
        self.note.value = '<div class="wb-note">reading the collectives…</div>'

        def work():
            try:
                stages = ex.pipeline_stages if pending else ex.stages  # XLA compiling: the stages so far
                names, failed = [s.name for s in stages], {s.name for s in stages if s.error}
                if pending:
                    import pandas as pd

                    every = pd.concat([ex.collectives(s) for s in names], ignore_index=True)
                else:
                    every = ex.collectives()
                here = None if pending and late_name(right) else "failed" if right in failed else every[every["stage"] == right]
            except WorkbenchError as e:
                self.note.value = str(Markup('<div class="wb-error">{}</div>').format(e))
                self.stage_table.value = self.summary.value = ""
                return
            self._draw(every, names, failed, right, here, pending, python)

        self._submit(f"reading the collectives of {right}", python, work, busy=False)

    def _draw(self, every, names: list[str], failed: set, right: str, here, pending: bool, python: str) -> None:
        self.note.value = str(Markup(
            '<div class="wb-note">the ops that move data between devices: <code>{}</code> for stage B, '
            "<code>{}.collectives()</code> for every stage. <b>bytes_per_device</b> is what one device "
            "sends by the ring estimates (all-reduce 2(n-1)/n S, all-gather and reduce-scatter (n-1)/n S, "
            "collective-permute S).</div>{}").format(
            python, self.name, "" if len(every) else Markup('<div class="wb-note">no stage of this program has a '
                                                            "collective op</div>")))
        self.stage_table.value = str(_stage_table(right, here))
        summary = stage_summary(every, [s for s in names if s != "jaxpr"], failed)
        body = Markup("").join(_summary_row(run, right) for run in _runs(summary, right))
        self.summary.value = str(Markup(
            "<style>{}</style>"
            '<div class="wb-caption"><b>per stage</b>: how many collectives, and the bytes they move per device '
            "(stages in a row that have the same are one line){}</div>"
            '<table class="wb-table wb-coll-stages"><thead><tr><th>stage</th><th>collectives</th>'
            "<th>bytes per device</th><th>kinds</th></tr></thead><tbody>{}</tbody></table>").format(
            _STYLE, " (XLA is compiling: its stages come with it)" if pending else "", body))


def _stage_table(right: str, here) -> Markup:
    """The collectives of stage B (``right``): ``here``, its rows of ``ex.collectives()``; None while XLA
    compiles it, "failed" for a failed stage."""
    if here is None:
        return Markup('<div class="wb-note">XLA is compiling: the collectives of {} are listed when its stages '
                      "arrive</div>").format(right)
    if isinstance(here, str):
        return Markup('<div class="wb-caption"><b>{}</b> failed: it has no program to read</div>').format(right)
    if not len(here):
        return Markup('<div class="wb-caption"><b>{}</b>: no collective ops</div>').format(right)
    shown = here[[c for c in _COLUMNS if c in here.columns]].copy()
    for c in ("buffer_bytes", "bytes_per_device"):
        if c in shown.columns:
            shown[c] = [_bytes(v) for v in shown[c]]
    moved = here["bytes_per_device"].dropna().sum()
    return Markup('<div class="wb-caption"><b>{}</b>: {} collective{}, {} per device</div>{}').format(
        right, len(here), "s" * (len(here) != 1), _bytes(moved), Markup(table(shown)))


_STYLE = Markup(".wb-coll-stages tr.wb-coll-b td { font-weight: 700; background: rgba(26, 115, 232, 0.14); } "
                ".wb-collectives .wb-table td { white-space: nowrap; }")


def _runs(summary, right: str) -> list[list]:
    """The summary's rows, consecutive stages with the same count, bytes and kinds in one run (stage B alone)."""
    def key(r):
        return tuple(None if isinstance(v, float) and math.isnan(v) else v for v in (r.collectives, r.bytes_per_device, r.kinds))

    runs: list[list] = []
    for r in summary.itertuples():
        if runs and right not in (r.stage, runs[-1][-1].stage) and key(r) == key(runs[-1][-1]):
            runs[-1].append(r)
        else:
            runs.append([r])
    return runs


def _summary_row(run: list, right: str) -> Markup:
    first, last = run[0], run[-1]
    stage = first.stage if len(run) == 1 else Markup("{} … {} ({} stages)").format(first.stage, last.stage, len(run))
    count = "" if math.isnan(first.collectives) else num(first.collectives)
    return Markup('<tr class="{}" data-stages="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>').format(
        "wb-coll-b" if first.stage == right else "", len(run), stage, count, _bytes(first.bytes_per_device),
        first.kinds)
