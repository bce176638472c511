"""The values a drift search compares (``drift.find_drift``), and the tap modules that make them.

``Probe`` fetches values of both sides of a search: the stage's from its tap module, the reference's and its
yardstick (the reference promoted to float64, else run on nudged inputs) from theirs, each module compiled for
its device (``execute.tap_program``), and compares pairs with the numeric check's rule (``check.check_leaf``).

Where the time goes is XLA's compile of the tap modules: 7.7 of the 8.8 seconds of a search of the tour's
attention example with a hand edit (cProfile), 9 compiles of three modules a round (the stage's tap module, the
reference's, its float64 promotion), each about a compile of the whole program plus a little for each value
returned (0.8 CPU seconds with none, 2.7 with all 180). So:
- a side whose values all fit (``TAP_ALL`` values and the search's budget of bytes) is tapped whole, once: the
  search's rounds and the inputs of the op found then read its values without another compile or run. Three
  compiles take about the CPU the nine did (bench/bench_panel.py: 11.3 s against 11.6); what changes is that
  the modules are known before the search starts, so they can be compiled ahead and kept:
- ``TapCache`` keeps, for the searches of one trace, the compiled tap modules (by text, device and XLA
  options; the last ``KEPT``) and the reference's measured values (by text, device and arguments): a second
  search, of another stage or after a toggle, compiles its stage's module only;
- ``Probe.warm`` compiles a search's first modules without running anything (no callback of the user's
  fires), in the background where the panel offers the search, so that the click finds them ready.
The values compared are those the search compared before (its modules compiled with the same options): on
the drift tests' programs the op, its line and every verdict are the same as the bisection's; and what a
search finds does not depend on whether its modules were cached or warmed.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field

import jax
import numpy as np

from ...backends import float64_device
from ...errors import WorkbenchError
from ...ir.promote import computed_in, promote_to_f64
from ...ir.taps import Value, tapped, value_bytes, value_shape
from ...ir.text import text_hash
from ...pipeline.array_limit import ArrayTooLargeError, Planned, refuse_large
from .check import NOISE_TRIES, LeafCheck, check_leaf
from .execute import args_key, tap_program
from .reference import WIDE_OPTIONS, nudged_arguments
from .tapping import Side

__all__ = ["Probe", "TapCache", "TAP_ALL", "TAP_BYTES", "KEPT", "cache_of", "whole_values"]

TAP_BYTES = 64 * 2**20  # bytes of tapped values a side may return in one probe
TAP_ALL = 256  # a side of at most this many values (within the budget) is tapped whole, in one module
KEPT = 8  # compiled tap modules a TapCache keeps (the least recently used go first)
_KEPT_VALUES = 2  # measured references it keeps: each holds up to TAP_BYTES a copy, in float64 too
_COPIES = 2 + NOISE_TRIES  # arrays of one tapped value a round keeps at most


@dataclass
class _Measured:
    """The reference's values of some fetches, by ``Value``: as lowered (``low``), promoted to float64
    (``wide``), on nudged inputs (``nudged``: a list per value), the narrowest type each was computed through,
    and the rule they were measured by."""

    low: dict = field(default_factory=dict)
    wide: dict = field(default_factory=dict)
    nudged: dict = field(default_factory=dict)
    computed: dict = field(default_factory=dict)
    rule: str = ""

    def merge(self, other: "_Measured") -> None:
        for mine, theirs in ((self.low, other.low), (self.wide, other.wide), (self.nudged, other.nudged),
                             (self.computed, other.computed)):
            mine.update(theirs)
        self.rule = other.rule or self.rule


class TapCache:
    """Compiled tap modules and measured reference values, shared by the drift searches of one trace (and by
    a background ``warm``): thread-safe; a module being compiled is waited for, not compiled twice.
    ``compiles`` counts the modules it compiled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._programs: OrderedDict = OrderedDict()  # key -> Future of the compiled program
        self._measured: OrderedDict = OrderedDict()  # key -> _Measured (the reference's whole tap)
        self.compiles = 0

    def program(self, key: tuple, make):
        """The program of ``key``, made by ``make()`` once (an error is raised to each waiter, and not kept)."""
        with self._lock:
            future = self._programs.get(key)
            mine = future is None
            if mine:
                future = self._programs[key] = Future()
                done = [k for k, f in self._programs.items() if f.done()]
                for k in done[:max(0, len(self._programs) - KEPT)]:
                    del self._programs[k]
            else:
                self._programs.move_to_end(key)
        if mine:
            try:
                program = make()
            except BaseException as e:
                with self._lock:
                    if self._programs.get(key) is future:
                        del self._programs[key]
                future.set_exception(e)
                raise
            with self._lock:
                self.compiles += 1
            future.set_result(program)
        return future.result()

    def measured(self, key: tuple) -> "_Measured | None":
        with self._lock:
            return self._measured.get(key)

    def keep(self, key: tuple, m: "_Measured") -> None:
        with self._lock:
            self._measured[key] = m
            while len(self._measured) > _KEPT_VALUES:
                self._measured.popitem(last=False)


def whole_values(side: Side, budget: int) -> list[Value] | None:
    """Every value of ``side`` a tap module can return (its tensor arguments and op results), where they fit
    ``TAP_ALL``, ``budget`` bytes and ``array_limit()`` as a round keeps them; None where they do not."""
    tap = side.tap
    values = [("arg", i) for i, t in enumerate(tap.arguments) if value_shape(t) is not None]
    values += [("op", p.index, r) for p in tap.points for r, t in enumerate(p.types) if value_shape(t) is not None]
    if len(values) > TAP_ALL or sum(value_bytes(tap.value_type(v)) for v in values) > budget:
        return None
    try:
        refuse_large([Planned(f"tapped value {v}", *value_shape(tap.value_type(v)), _COPIES) for v in values],
                     "tapping every value")
    except ArrayTooLargeError:
        return None
    return values


def cache_of(ex) -> TapCache | None:
    """The TapCache of ``ex``'s trace, shared by every exploration made from it (toggles, edits, bisect's
    candidates); None for a module given as text (its explorations share no trace)."""
    traced = ex.spec.traced
    if traced is None:
        return None
    with _MEMO_LOCK:
        return traced.memo.setdefault("drift taps", TapCache())


_MEMO_LOCK = threading.Lock()


class Probe:
    """The values of one search: ``probe(pairs)`` compares pairs (a round), fetching the values not fetched
    yet; ``runs`` counts module executions, ``probes`` rounds. ``whole_here``, ``whole_there``: that side may be
    tapped whole (a search does; a one-value question such as ``value_drifts`` taps the stage's value alone,
    and the reference whole only where the cache keeps it for the next question)."""

    def __init__(self, ex, here: Side, there: Side, device: str, args, reference_device: str | None = None,
                 cache: TapCache | None = None, budget: int = TAP_BYTES, whole_here: bool = True,
                 whole_there: bool = True):
        self.ex, self.here, self.there, self.device, self.args = ex, here, there, device, args
        self.reference_device = reference_device or device
        self.cache = cache if cache is not None else TapCache()
        self.runs = 0
        self.probes = 0
        self.rule = ""
        self.nudged, self.why_not_nudged = None, ""
        self.mine: dict = {}  # the stage's values, by Value
        self.theirs = _Measured()
        self._whole_here = whole_values(here, budget) if whole_here else None
        self._whole_there = whole_values(there, budget) if whole_there else None
        self._key: tuple | None = None  # the whole reference's key in the cache (``_there_key``)

    # -- what is fetched ---------------------------------------------------------------------------
    def preload(self) -> None:
        """Fetch the sides that are tapped whole, so that the first round can compare every pair."""
        if self._whole_here:
            self._fetch_here(self._whole_here[:1])
        if self._whole_there:
            self._fetch_there(self._whole_there[:1])

    def covers(self, pairs) -> bool:
        """Whether every value of ``pairs`` is fetched already (comparing them runs nothing)."""
        return all(p.here in self.mine and p.there in self.theirs.low for p in pairs)

    def probe(self, pairs) -> list[LeafCheck]:
        """One round: the stage's and the reference's values of ``pairs``, compared. ArrayTooLargeError
        before anything runs where the values of one round (the stage's, the reference's and its float64
        or nudged evaluations) pass ``array_limit()``."""
        self.probes += 1
        refuse_large([Planned(f"tapped value {p.label}", *value_shape(self.here.tap.value_type(p.here)), _COPIES)
                      for p in pairs], "finding where the numbers drift would keep intermediate values of "
                      "several runs", "Search on smaller arguments, or a stage of a smaller program.")
        self._fetch_here([p.here for p in pairs])
        self._fetch_there([p.there for p in pairs])
        t = self.theirs
        return [check_leaf(p.label, np.asarray(self.mine[p.here]), np.asarray(t.low[p.there]),
                           None if p.there not in t.wide else np.asarray(t.wide[p.there]),
                           [np.asarray(n) for n in t.nudged.get(p.there, ())], t.computed.get(p.there))
                for p in pairs]

    def warm(self, here: bool = True) -> None:
        """Compile, and run nothing, the modules a search's first round takes where its sides are tapped
        whole (the rest are compiled when asked; ``here`` False: the reference's only, which every search of
        the trace shares), side by side in threads: they wait in the cache for the
        search. Errors are left for the search to meet."""
        jobs = [self._here_job(self._whole_here)] if self._whole_here and here else []
        if self._whole_there and self.cache.measured(self._there_key()) is None:
            jobs += self._there_jobs(self._whole_there)[0]

        def compile_one(job):
            try:
                self._program(*job)
            except Exception:  # noqa: BLE001 -- the search compiles it again and says why it fails
                pass

        threads = [threading.Thread(target=compile_one, args=(job,), daemon=True) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # -- the stage's side ----------------------------------------------------------------------------
    def _fetch_here(self, values: list[Value]) -> None:
        missing = [v for v in dict.fromkeys(values) if v not in self.mine]
        if not missing:
            return
        if self._whole_here and self._whole_here[0] not in self.mine:
            missing = list(dict.fromkeys(self._whole_here + missing))
        got = self._call(self._program(*self._here_job(missing)))
        self.mine.update(zip(missing, got))

    def _here_job(self, values: list[Value]) -> tuple:
        return (f"the tap module of {self.here.stage.name!r}", tapped(self.here.tap, values),
                self._avals(self.here, values), self.device, None)

    # -- the reference's side ------------------------------------------------------------------------
    def _there_key(self) -> tuple:
        if self._key is None:
            args = "explored" if self.args is None else args_key(self.args)
            self._key = (text_hash(tapped(self.there.tap, self._whole_there)), self.reference_device, args)
        return self._key

    def _fetch_there(self, values: list[Value]) -> None:
        missing = [v for v in dict.fromkeys(values) if v not in self.theirs.low]
        if not missing:
            return
        if self._whole_there and self._whole_there[0] not in self.theirs.low:
            key = self._there_key()
            m = self.cache.measured(key)
            if m is None:
                m = self._measure(self._whole_there)
                self.cache.keep(key, m)
            self.theirs.merge(m)
            self.rule = m.rule
            missing = [v for v in missing if v not in self.theirs.low]
            if not missing:
                return
        self.theirs.merge(self._measure(missing))

    def _there_jobs(self, values: list[Value]) -> tuple[list[tuple], str, object]:
        """The reference's jobs (its tap module, and its float64 promotion where it can be promoted), the
        text of the first, and the promotion."""
        text, avals = tapped(self.there.tap, values), self._avals(self.there, values)
        promotion = promote_to_f64(text)
        jobs = [(f"the tap module of {self.there.stage.name!r}", text, avals, self.reference_device, ())]
        if promotion.ok:  # a yardstick: compiled to be quick to compile (WIDE_OPTIONS)
            jobs.append(("the reference promoted to float64", promotion.text, avals,
                         float64_device(self.reference_device), WIDE_OPTIONS))
        return jobs, text, promotion

    def _measure(self, values: list[Value]) -> _Measured:
        jobs, text, promotion = self._there_jobs(values)
        programs = [self._program(*job) for job in jobs]
        low = self._call(programs[0])
        wide, nudged = self._yardstick(programs[0], programs[1] if promotion.ok else None, promotion.refused)
        computed = computed_in(text)
        computed = computed[-len(values):] if computed and len(computed) >= len(values) else [None] * len(values)
        return _Measured(dict(zip(values, low)), dict(zip(values, wide)) if wide is not None else {},
                         {v: [n[k] for n in nudged] for k, v in enumerate(values)} if nudged else {},
                         dict(zip(values, computed)), self.rule)

    def _yardstick(self, reference, promoted, refused: str):
        """(the reference's tapped values promoted to float64, []) or (None, the values of the reference's tap
        module run again on nudged inputs: compiled once, run ``NOISE_TRIES`` times)."""
        if promoted is not None:
            try:
                wide = self._call(promoted)
                self.rule = "against the reference promoted to float64"
                return wide, []
            except WorkbenchError as e:
                refused = f"the promoted module did not run ({str(e).splitlines()[0][:200]})"
        if self.nudged is None:
            self.nudged, self.why_not_nudged = nudged_arguments(self.ex, self.there.stage, self.args, NOISE_TRIES)
        if not self.nudged:
            self.rule = f"per-dtype tolerances ({refused or 'no float64 evaluation'}; {self.why_not_nudged})"
            return None, []
        self.rule = (f"against the reference's noise, its inputs moved by one ulp ({NOISE_TRIES} tries): it cannot "
                     f"be promoted to float64 ({refused})")
        return None, [self._call(reference, a) for a in self.nudged]

    # -- compiling and running -----------------------------------------------------------------------
    def _avals(self, side: Side, values):
        out = []
        for v in values:
            found = value_shape(side.tap.value_type(v))
            if found is None:
                raise WorkbenchError(f"value of type {side.tap.value_type(v)} cannot be tapped")
            out.append(jax.ShapeDtypeStruct(found[0], found[1]))
        return out

    def _program(self, label: str, text: str, avals, device: str, options):
        """``tap_program`` of ``text`` for ``device`` (XLA ``options``; None: the exploration's), from the cache;
        where ``device`` is another platform than the reference's and the module does not compile there (a
        TPU program's host callbacks are send/recv ops the CPU does not have), for the reference's."""
        resolved = dict(self.ex.spec.xla_options if options is None else options)
        key = (text_hash(text), device, repr(sorted(resolved.items())), self.reference_device)

        def make():
            try:
                return tap_program(self.ex, label, text, avals, device, xla_options=options)
            except WorkbenchError:
                if device == self.reference_device:
                    raise
                return tap_program(self.ex, label, text, avals, self.reference_device, xla_options=options)

        return self.cache.program(key, make)

    def _call(self, program, args=None) -> list:
        self.runs += 1
        return program(self.args if args is None else args)
