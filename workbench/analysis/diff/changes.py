"""What a toggle changed: one exploration of a program against the one it was derived from.

``changes_between(before, after)`` (``Exploration.changes_since``) compares two explorations' specs
and stages and gives a ``Changes``: the settings that differ, in words; which of ``after``'s trace
and MLIR stages ran anew and which were served from a cache or kept as they were; whether XLA
compiled anew; and two ``ModuleChange`` values, for the final MLIR module (the last MLIR stage that
is a module: the one XLA compiles) and for ``xla:optimized``, each with its structural diff (SSA
names and locations do not count) and the op counts that differ. The panel shows its summary after
every toggle, and its two diffs on a click.

XLA's per-pass stages all come from one compile, so ``Changes`` says of them only whether that
compile ran (``xla_compiled``). Without ``wait``, an exploration whose XLA compile is still under
way is read without its XLA stages, and the XLA part says so (``xla_note``) instead of waiting.

Where both explorations have the TPU's kernels, ``kernels_change`` says how each fusion's bundles and MXU
occupancy changed (the summary names the fusions that changed most; ``kernels()`` gives the table). The facade
hands it in (``exploration/backend_change.py`` says when the kernels after a toggle are computed for it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from markupsafe import Markup

from ...errors import UnknownNameError, WorkbenchError
from ...options import PatternSelection
from ...stages import Spec, Stage, Staged
from ..numbers import human_bytes, signed_bytes
from .compare import diff_texts
from .result import Diff

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Changes", "ModuleChange", "Comparable", "changes_between", "XLA_OPTIMIZED"]

XLA_OPTIMIZED = "xla:optimized"
NO_KERNELS = ("neither side has the TPU's kernels computed or saved (ex.backend() on the TPU, or a .hlox saved after "
              "it)")
SHOWN = 4  # the names, ops and passes a summary lists before "and N more"
_PARTS = ("mlir", "xla")


class Comparable(Staged, Protocol):
    """What ``changes_between`` reads of an exploration: its stages as built (``Staged``), and whether
    its XLA stages can be read without waiting for XLA's compile."""

    def xla_ready(self, wait: float = 0.0) -> bool: ...


@dataclass(frozen=True)
class ModuleChange:
    """One module of the program before and after: ``what`` it is ("final MLIR", "xla:optimized"),
    the stage ``before`` and the stage ``after`` (the names differ where another pipeline ends on
    another stage). ``changed``: the structural diff holds a change; ``ops``: the op counts that
    differ, as ``(op, before, after, delta)``, largest change first (``Diff.ops_delta``)."""

    what: str
    before: Stage
    after: Stage

    @cached_property
    def diff(self) -> Diff:
        """The structural diff of the two stages' texts, named "<stage> (before)" and "<stage> (after)"."""
        return diff_texts(self.before.text, self.after.text, f"{self.before.name} (before)",
                          f"{self.after.name} (after)")

    @property
    def changed(self) -> bool:
        return self.before.text != self.after.text and not self.diff.is_empty

    @cached_property
    def ops(self) -> tuple[tuple[str, int, int, int], ...]:
        if not self.changed:
            return ()
        return tuple((str(r.op), int(r.before), int(r.after), int(r.delta))
                     for r in self.diff.ops_delta().itertuples(index=False))

    def ops_delta(self) -> "pd.DataFrame":
        """The op counts that differ, as a DataFrame (op, before, after, delta)."""
        return self.diff.ops_delta()

    @property
    def label(self) -> str:
        """``what`` and the stage, as "final MLIR (cse#3)" or "final MLIR (cse#3 → canonicalize#2)"."""
        names = self.after.name if self.before.name == self.after.name else f"{self.before.name} → {self.after.name}"
        return self.what if names == self.what else f"{self.what} ({names})"

    def words(self) -> str:
        """This module's change in one phrase: unchanged, or changed and the op counts that moved."""
        if not self.changed:
            return f"{self.label} unchanged"
        if not self.ops:
            return f"{self.label} changed: the same ops, rewired or with other attributes"
        return f"{self.label} changed: {_listed([f'{op} {d:+d}' for op, _, _, d in self.ops])}"


@dataclass(frozen=True)
class Changes:
    """What differs between an exploration and one it was derived from (see the module's docstring).

    ``settings``: each setting that differs, in words ("dot_transpose off", "XLA pass algsimp off",
    "pipeline all → only_enzyme"); none when the specs agree. ``recomputed`` and ``reused``: the
    names of ``after``'s trace and MLIR stages that ran anew, and those served from a cache (or the
    very stages ``before`` has). ``xla_compiled``: whether XLA compiled ``after`` anew (False: its
    compile was served from the cache; None: no XLA stages to say of, see ``xla_note``).
    ``mlir`` and ``xla`` compare the final MLIR module and ``xla:optimized``; where there is no
    pair to compare, they are None and ``mlir_note``/``xla_note`` say why. ``failed``: the stage of
    ``after`` that failed, "" when none did. ``diff("mlir")``/``diff("xla")`` give their Diffs.
    """

    settings: tuple[str, ...]
    recomputed: tuple[str, ...]
    reused: tuple[str, ...]
    xla_compiled: bool | None
    mlir: ModuleChange | None
    xla: ModuleChange | None
    mlir_note: str = ""
    xla_note: str = ""
    failed: str = ""
    # XLA's peak memory before and after (``analysis.memory``), None where either side has none to read
    memory_peaks: tuple[int, int] | None = None
    memory_of: Any = field(default=None, repr=False, compare=False)  # makes memory()
    # each fusion's kernel before and after (analysis.backend.KernelsChange), where both sides have kernels; else why not
    kernels_change: Any = field(default=None, repr=False, compare=False)
    kernels_note: str = ""

    def kernels(self) -> "pd.DataFrame":
        """How each fusion's kernel changed (``Kernels.compare``: bundles, bundles issued per call and MXU occupancy
        before and after); WorkbenchError saying why where a side has no kernels."""
        if self.kernels_change is None:
            raise WorkbenchError(f"no kernels to compare: {self.kernels_note or NO_KERNELS}")
        return self.kernels_change.table()

    def memory(self):
        """What the change did to the peak memory, with the buffers that appeared at the peak or left it, each
        with its user's line (``analysis.memory.MemoryChange``); None where either side has no memory to read."""
        return self.memory_of() if self.memory_of is not None else None

    def part(self, which: str) -> ModuleChange | None:
        """The ModuleChange of ``which``: "mlir" (the final MLIR module) or "xla" (xla:optimized)."""
        if which not in _PARTS:
            raise UnknownNameError("part", which, list(_PARTS), known_note='the parts are "mlir" and "xla"')
        return self.mlir if which == "mlir" else self.xla

    def diff(self, which: str = "mlir") -> Diff:
        """The structural diff of the final MLIR module ("mlir") or of xla:optimized ("xla") before
        and after; WorkbenchError saying why when there is no pair to compare."""
        part = self.part(which)
        if part is None:
            raise WorkbenchError(f"no {which} diff: {self.mlir_note if which == 'mlir' else self.xla_note}")
        return part.diff

    def parts(self) -> list[str]:
        """The summary's phrases: the settings, a failed stage, the work done, then each module."""
        phrases = [", ".join(self.settings) or "the same settings"]
        if self.failed:
            phrases.append(f"{self.failed} failed (see .error)")
        phrases.append(self._work())
        phrases.append(self.mlir.words() if self.mlir else f"final MLIR: {self.mlir_note}")
        phrases.append(self.xla.words() if self.xla else f"{XLA_OPTIMIZED}: {self.xla_note}")
        if self.memory_peaks is not None and self.memory_peaks[0] != self.memory_peaks[1]:
            a, b = self.memory_peaks
            phrases.append(f"peak memory {human_bytes(a)} → {human_bytes(b)} ({signed_bytes(b - a)})")
        if self.kernels_change is not None and not self.kernels_change.unchanged:
            phrases.append(self.kernels_change.words())
        return phrases

    @property
    def summary(self) -> str:
        """One line: "dot_transpose off: 10 stages recomputed (...), 13 reused, XLA compiled anew;
        final MLIR (enzyme-hlo-patterns#3) changed: stablehlo.transpose +2; xla:optimized unchanged"."""
        first, *rest = self.parts()
        return f"{first}: {'; '.join(rest)}"

    def _work(self) -> str:
        n = len(self.recomputed)
        if n:
            work = (f"{n} stage{'s' * (n != 1)} recomputed ({_listed(self.recomputed)}), "
                    f"{len(self.reused)} reused")
        else:
            work = f"nothing recomputed ({len(self.reused)} stage{'s' * (len(self.reused) != 1)} reused)"
        if self.xla_compiled is not None:
            work += ", XLA compiled anew" if self.xla_compiled else ", XLA's compile reused"
        return work

    def __str__(self) -> str:
        return self.summary

    def __repr__(self) -> str:
        return f"Changes({self.summary})"

    def _repr_html_(self) -> str:
        first, *rest = self.parts()
        items = Markup("").join(Markup("<li>{}</li>").format(p) for p in rest)
        return str(Markup('<div class="wb-changes"><b>{}</b><ul>{}</ul></div>').format(first, items))


def _listed(items: Sequence[str]) -> str:
    """The first few items and how many more: "a, b, c, d and 3 more"."""
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


# -- building it -----------------------------------------------------------------------------------------
def changes_between(before: Comparable, after: Comparable, wait: bool = True,
                    kernels: tuple[Any, str] = (None, "")) -> Changes:
    """What ``after`` changed against ``before`` (see ``Changes``). With ``wait``, both explorations'
    XLA stages are read, waiting for (or running) their compiles; without it, an exploration whose
    compile is still under way is compared without them. ``kernels``: the KernelsChange of the two, or None
    and why not."""
    old, old_pending = _stages_now(before, wait)
    new, new_pending = _stages_now(after, wait)
    recomputed, reused = _work(before.spec, old, after.spec, new)
    mlir_old, mlir_new = _final_module(old), _final_module(new)
    mlir = ModuleChange("final MLIR", mlir_old, mlir_new) if mlir_old and mlir_new else None
    xla, xla_note = _xla(old, old_pending, new, new_pending)
    peaks = _peaks(before, after) if xla is not None else None
    return Changes(
        settings=tuple(setting_changes(before.spec, after.spec)), recomputed=recomputed, reused=reused,
        xla_compiled=_compiled(old, new), mlir=mlir, xla=xla,
        mlir_note="" if mlir else "no MLIR module to compare (a stage failed before any ran)", xla_note=xla_note,
        failed=next((s.name for s in new if s.error), ""), memory_peaks=peaks,
        memory_of=(lambda: before.memory().compare(after.memory())) if peaks is not None else None,
        kernels_change=kernels[0], kernels_note=kernels[1])


def _peaks(before: Comparable, after: Comparable) -> tuple[int, int] | None:
    """Both sides' peak memory (read from XLA's buffer assignment and live ranges: no provenance, cheap), None
    where either has none."""
    try:
        return before.memory().peak_bytes, after.memory().peak_bytes
    except (WorkbenchError, AttributeError):
        return None


def _stages_now(ex: Comparable, wait: bool) -> tuple[list[Stage], bool]:
    """``ex``'s stages, and whether XLA's are left out because its compile is still under way."""
    if wait or ex.xla_ready():
        return ex.stages, False
    return ex.pipeline_stages, True


def _same_source(a: Any, b: Any) -> bool:
    return a is b or (isinstance(a, str) and a == b)


def _work(old_spec: Spec, old: Sequence[Stage], new_spec: Spec, new: Sequence[Stage]) -> tuple[tuple, tuple]:
    """The names of ``new``'s trace and MLIR stages that ran anew, and of those that did not: served
    from a cache, the very stage ``old`` has, or a trace stage of the same trace."""
    by_name = {s.name: s for s in old}
    same_trace = _same_source(old_spec.source, new_spec.source)
    recomputed, reused = [], []
    for s in new:
        if s.group not in ("trace", "mlir"):
            continue
        was = by_name.get(s.name)
        kept = s.cached or was is s or (s.group == "trace" and same_trace and was is not None and was.text == s.text)
        (reused if kept else recomputed).append(s.name)
    return tuple(recomputed), tuple(reused)


def _compiled(old: Sequence[Stage], new: Sequence[Stage]) -> bool | None:
    """Whether XLA compiled ``new`` anew (a failed compile too); None when ``new`` has no XLA stages."""
    late = [s for s in new if s.group not in ("trace", "mlir")]
    if not late:
        return None
    opt = next((s for s in late if s.name == XLA_OPTIMIZED), None)
    if opt is None:
        return True  # a failed compile (its stage says why)
    return not (opt.cached or any(s is opt for s in old))


def _final_module(stages: Sequence[Stage]) -> Stage | None:
    """The last trace or MLIR stage that is a module: what XLA compiles."""
    return next((s for s in reversed(stages) if s.is_module), None)


def _xla(old: Sequence[Stage], old_pending: bool, new: Sequence[Stage], new_pending: bool
         ) -> tuple[ModuleChange | None, str]:
    """The xla:optimized pair, or None and why there is none."""
    a = next((s for s in old if s.name == XLA_OPTIMIZED and not s.error), None)
    b = next((s for s in new if s.name == XLA_OPTIMIZED and not s.error), None)
    if a is not None and b is not None:
        return ModuleChange(XLA_OPTIMIZED, a, b), ""
    if new_pending:
        return None, "XLA has not compiled it yet"
    if any(s.group == "xla" and s.error for s in new):
        return None, "XLA failed (see .error)"
    if b is None:
        return None, "no XLA stages (the MLIR pipeline failed, or the module has no @main)"
    if old_pending:
        return None, "not compared: XLA has not compiled the program before (changes_since(..., wait=True) waits)"
    return None, "not compared: XLA gave no stages before"


# -- the settings, in words ------------------------------------------------------------------------------
def setting_changes(before: Spec, after: Spec) -> list[str]:
    """Each setting of ``after`` that differs from ``before``'s, in words."""
    out = [] if _same_source(before.source, after.source) else ["another program"]
    if before.pipeline != after.pipeline:
        out.append(f"pipeline {_short(before.pipeline)} → {_short(after.pipeline)}")
    out += _pattern_changes(before.selection, after.selection)
    old_xla, new_xla = set(before.xla_disabled), set(after.xla_disabled)
    out += _switched("XLA pass", new_xla - old_xla, old_xla - new_xla)
    out += _xla_option_changes(dict(before.xla_options), dict(after.xla_options))
    for name in ("device", "inline", "shardy", "optimize_communications"):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            out.append(f"{name} {old} → {new}")
    n = len(before.edits)
    if after.edits[:n] == before.edits:
        out += [repr(e)[5:-1] for e in after.edits[n:]]  # the edits made since, as ex.edits says them
    else:
        out.append(f"hand edits: {len(before.edits)} → {len(after.edits)}")
    return out


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _pattern_changes(before: PatternSelection, after: PatternSelection) -> list[str]:
    out = [f"pattern option {f} {getattr(before.options, f)} → {getattr(after.options, f)}"
           for f in (field.name for field in fields(before.options))
           if getattr(before.options, f) != getattr(after.options, f)]
    off = (after.disabled - before.disabled) | (before.enabled - after.enabled)
    on = (before.disabled - after.disabled) | (after.enabled - before.enabled)
    return out + _switched("pattern", off, on)


def _switched(noun: str, off: set[str], on: set[str]) -> list[str]:
    """What went off and what came back on, as "dot_transpose off", "XLA pass algsimp off" or
    "3 patterns on (a, b, c)"."""
    out = []
    for names, state in ((sorted(off), "off"), (sorted(on), "on")):
        if len(names) == 1:
            out.append(f"{names[0]} {state}" if noun == "pattern" else f"{noun} {names[0]} {state}")
        elif names:
            out.append(f"{len(names)} {noun}{'es' if noun.endswith('s') else 's'} {state} ({_listed(names)})")
    return out


def _xla_option_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for key in sorted((before.keys() | after.keys()) - {"xla_disable_hlo_passes"}):
        old, new = before.get(key), after.get(key)
        if old != new:
            out.append(f"XLA option {key} unset" if new is None else f"XLA option {key}={new}")
    return out
