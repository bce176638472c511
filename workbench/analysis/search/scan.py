"""Which patterns apply to a stage, how long each group takes, and stepping one pattern at a time.

A pattern *applies* to a module when applying it alone (one ``enzyme-hlo-patterns`` run with that
one pattern) changes the module: the outputs are compared without locations, with the input's
public functions kept public (the worker's ``run_each``), starting from the module as enzyme-ad
prints it (so that text laid out by hand does not make every pattern seem to change it).
``exact=True`` asks exactly that, one run per pattern. The default asks it of batches first (group
testing), since few patterns apply to any one module; ``step_patterns`` finds the first pattern that
applies the same way (see there):

- A batch is one run of its patterns together. A batch that comes out unchanged, and without an
  error, decides that none of its patterns applies alone (why that holds, and where it may not, is
  below). Every other batch -- changed, failed, crashed its worker, or past the batch time limit --
  is split in halves, and so on down to single patterns; a single pattern's run is the one-by-one
  run itself (same pipeline, same comparison), so what applies, what fails and with which error,
  and what crashes or times out (with the user's timeout) are decided exactly as one by one.
- When the first half of a batch that changed comes out unchanged, the change must come from the
  second half, which is split without being run as a whole.

Why an unchanged batch can be trusted. enzyme-ad runs a pattern list with MLIR's greedy rewrite
driver, and ``enzyme-hlo-generate-td`` sets no limit on its iterations or rewrites: the run returns
only at a fixpoint, where every op has been tried with every pattern of the list after its last
change and none matched. If that fixpoint prints as the input, then no pattern of the batch matches
any op of the input; applied alone to the input, each meets the same ops again, matches none, and
changes nothing and raises nothing -- the one-by-one answer. Patterns that undo each other cannot
make a batch look unchanged: they rewrite back and forth and the run never returns (the transpose-up
``transpose_elementwise`` and the transpose-down ``elementwise_all_transpose_operands_simplify`` on
``sin(x.T + y.T)`` do this). So patterns share a batch only with patterns enzyme-ad itself runs
together (its list under the options, the other directions' extras, the remaining extras), and a
batch past the batch time limit, ``min(timeout, max(5 s, 100 x an empty list's run))``, is split.

Where the two answers can differ: only where a pattern's match depends on something the compared
text does not show -- its locations, the order of a value's uses, or state kept between runs. Such
a pattern can apply alone and yet sit in an unchanged batch; none of the catalog's is known to. If
an empty pattern list already changes the module (the driver folds or erases ops by itself), every
batch would change, and the scan runs one by one instead.

``seconds`` is a pattern's own time when it ran alone (``batch`` 1: every pattern that applies or
fails) and NaN when an unchanged batch of ``batch`` patterns decided it: it never ran alone.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

from ...errors import StageError, WorkbenchError
from ...ir.text import public_functions, publish_functions, strip_locations
from ...pipeline.steps import failed_stage, stage_from_run, stage_name
from ...pipeline.catalog import Pattern, catalog, pattern_list, pattern_name, patterns_pass
from ...pipeline.remote import resolve, route
from ...pipeline.runner import default_runner
from ...pipeline.worker import ItemFailure, PassOutcome, PoolResult, Pool, WorkerCrash, WorkerTimeout
from ...stages import Stage
from ..progress import OnProgress, Progress

from .explored import Explored  # what the facade hands down (analysis never imports the facade)

__all__ = ["ScanRow", "PatternScan", "StepRun", "FirstChange", "scan", "scan_patterns", "first_change",
           "step_patterns", "pattern_timing", "family"]

BATCH = 48  # patterns per first batch: a run's cost hardly grows up to ~128 patterns, splits grow as log2
MIN_BATCH_LIMIT = 5.0  # seconds a batch may run before it counts as one that never returns


@dataclass(frozen=True)
class ScanRow:
    """One pattern on one module: whether it changes it alone, its own seconds (NaN when it did not
    run alone), the error it raised alone, and the size of the smallest batch it ran in (1: alone)."""

    name: str
    group: str
    changed: bool
    seconds: float
    error: str | None
    batch: int = 1


@dataclass(frozen=True)
class PatternScan:
    """A scan: one row per pattern (catalog order), the pipeline runs it took, how many batches ran
    past the batch time limit (and were split), and whether every pattern ran alone (``exact``)."""

    rows: tuple[ScanRow, ...]
    runs: int
    exact: bool
    limited: int = 0


def _module_stage(ex: Explored, stage) -> Stage:
    st = ex.stage(stage)
    if not st.is_module:
        raise WorkbenchError(f"stage {st.name!r} is not an MLIR module the patterns can run on; pick "
                             "'stablehlo' or an MLIR pipeline stage")
    return st


def scan(ex: Explored, stage, patterns: Sequence[Pattern] | None = None, exact: bool = False,
         progress: bool = True, on_progress: OnProgress | None = None, chunk: int = 24,
         families: Callable[[Pattern], Hashable] | None = None, batch_limit: float | None = None,
         executor=None) -> PatternScan:
    """Which of ``patterns`` (default: the whole catalog) change ``stage`` alone: group-tested, or with
    ``exact`` one run per pattern (``chunk`` of them per request); see the module's docstring.

    ``families(pattern)`` says which patterns may share a batch (default ``family``); ``batch_limit``
    overrides the batch time limit. ``on_progress(done, total)`` hears the patterns decided so far.
    ``executor`` runs the requests (``workbench.pipeline.remote``: default the built-in pool).
    """
    st = _module_stage(ex, stage)
    pool = resolve(executor)
    pats = list(patterns if patterns is not None else catalog(ex.spec.selection.options))
    # locations do not change what a pattern does, and the module parses faster without
    text, empty, calibration = _prepared(pool, st.text, ex.spec.timeout, calibrate=not exact)
    desc = f"patterns on {st.name}"
    if not exact and empty is not None and not empty.changed and not empty.error:
        return _group_scan(pool, text, pats, families or family, desc, progress, on_progress, ex.spec.timeout,
                           _batch_limit(empty, ex.spec.timeout, batch_limit), calibration)
    # exact, or the empty list changed the module or failed (every batch would): one by one
    by_pass = {patterns_pass((p.spec,)): p for p in pats}
    passes = list(by_pass)
    chunks = [passes[i:i + chunk] for i in range(0, len(passes), chunk)]
    raw = _run_each(pool, text, chunks, desc, progress, ex.spec.timeout, on_progress)
    rows = {}
    for o in raw.results:
        p = by_pass[o.pipeline]
        rows[p.name] = ScanRow(p.name, p.group, o.changed, o.seconds, o.error)
    for f in raw.failures:
        p = by_pass[f.item]
        rows[p.name] = ScanRow(p.name, p.group, False, float("nan"), _failure_note(f))
    return PatternScan(tuple(rows[p.name] for p in pats if p.name in rows), calibration + len(passes), True)


def scan_patterns(ex: Explored, stage, patterns: list[Pattern] | None = None, progress: bool = True,
                  chunk: int = 24, on_progress: OnProgress | None = None, exact: bool = False,
                  executor=None) -> list[ScanRow]:
    """``scan``'s rows: one per pattern, whether it changes ``stage`` when applied alone."""
    return list(scan(ex, stage, patterns, exact=exact, progress=progress, on_progress=on_progress, chunk=chunk,
                     executor=executor).rows)


def family(p: Pattern) -> str:
    """Which patterns may share a batch: those enzyme-ad runs together -- its list under the options
    ("on"), and of the others, those of the up-propagating groups, of the down-propagating groups,
    and the rest. An up and a down pattern can undo each other, and a batch of both may never return."""
    if p.default_enabled:
        return "on"
    return next((d for d in ("up", "down") if p.group.endswith(" " + d)), "extra")


@dataclass(frozen=True)
class _Batch:
    """Patterns (indices) to run together; ``then``: patterns that hold one that changes the module
    alone if these turn out clean (their batch changed it), to split without running them whole."""

    items: tuple[int, ...]
    then: tuple[int, ...] | None = None


def _halves(items: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    half = len(items) // 2
    return items[:half], items[half:]


def _known_to_change(items: tuple[int, ...]) -> list[_Batch]:
    """The tasks for a batch known to change the module: one pattern runs alone; more are split."""
    if len(items) == 1:
        return [_Batch(items)]
    left, right = _halves(items)
    return [_Batch(left, then=right)]


def _prepared(pool: Pool, text: str, timeout: float, calibrate: bool = True
              ) -> tuple[str, PassOutcome | None, int]:
    """The module to scan, as enzyme-ad's runner prints it, the empty pattern list's outcome on it
    (with ``calibrate``), and the runs that took.

    A run's output is printed text; a module given in another layout (text typed by hand, another
    printer's spacing) would differ from every output, and every pattern would seem to change it.
    So the scan starts from the module as printed: the same module, compared like with like. Text
    that enzyme-ad printed already stays as it is (its empty pattern list comes back unchanged)."""
    runs = 0
    if calibrate:
        empty = _calibrate(pool, text, timeout)
        runs += 1
        if empty is not None and not empty.changed and not empty.error:
            return text, empty, runs
    printed = _as_printed(pool, text, timeout)
    runs += 1
    if printed is None or printed == text:
        return text, (empty if calibrate else None), runs
    if calibrate:
        return printed, _calibrate(pool, printed, timeout), runs + 1
    return printed, None, runs


def _as_printed(pool: Pool, text: str, timeout: float) -> str | None:
    """``text`` parsed and printed by enzyme-ad's runner (no pass), compared as ``run_each`` compares
    outputs: without locations, its public functions public. None when it does not parse."""
    try:
        out = pool.call("run_pipeline", text, "", timeout=timeout).value.text
    except Exception:  # noqa: BLE001 -- then the patterns will say what is wrong with it
        return None
    return strip_locations(publish_functions(out, public_functions(text)))


def _calibrate(pool: Pool, text: str, timeout: float) -> PassOutcome | None:
    """The empty pattern list run on ``text``: what the driver does without any pattern, and how long
    a run takes at the least. None when it failed or crashed."""
    try:
        return pool.call("run_each", text, [patterns_pass(())], False, timeout=timeout).value[0]
    except Exception:  # noqa: BLE001 -- a crash, a time-out, a failure: then one by one
        return None


def _batch_limit(empty: PassOutcome, timeout: float, given: float | None) -> float:
    return given if given is not None else min(timeout, max(MIN_BATCH_LIMIT, 100 * empty.seconds))


def _group_scan(pool: Pool, text: str, pats: list[Pattern], families: Callable[[Pattern], Hashable],
                desc: str, progress: bool, on_progress: OnProgress | None, timeout: float, limit: float,
                runs: int) -> PatternScan:
    """Group testing (see the module's docstring) of ``pats`` on ``text`` over ``pool``, after ``runs``
    runs that prepared it; a batch may run ``limit`` seconds."""
    members: dict[Hashable, list[int]] = {}
    for i, p in enumerate(pats):
        members.setdefault(families(p), []).append(i)
    tasks = [_Batch(tuple(ix[j:j + BATCH])) for ix in members.values() for j in range(0, len(ix), BATCH)]
    rows: dict[int, ScanRow] = {}
    count = {"runs": runs, "limited": 0}

    with Progress(len(pats), desc, progress, on_progress, unit="pattern") as bar:
        def on_result(task: _Batch, value, error: Exception | None) -> list[_Batch]:
            count["runs"] += 1
            o: PassOutcome | None = value[0] if error is None else None
            clean = o is not None and not o.changed and not o.error
            if len(task.items) == 1:
                p = pats[task.items[0]]
                rows[task.items[0]] = (ScanRow(p.name, p.group, o.changed, o.seconds, o.error) if o is not None
                                       else ScanRow(p.name, p.group, False, math.nan, _error_note(error)))
                bar.update(1)
            elif clean:
                for i in task.items:
                    rows[i] = ScanRow(pats[i].name, pats[i].group, False, math.nan, None, len(task.items))
                bar.update(len(task.items))
            more: list[_Batch] = []
            if not clean and len(task.items) > 1:
                count["limited"] += isinstance(error, WorkerTimeout)
                left, right = _halves(task.items)
                # a change has a pattern behind it that changes the module alone; a failure may not
                more += [_Batch(left, then=right)] if o is not None and o.changed else [_Batch(left), _Batch(right)]
            if task.then is not None:
                more += _known_to_change(task.then) if clean else [_Batch(task.then)]
            return more

        pool.work("run_each", tasks, lambda t: (text, [patterns_pass(tuple(pats[i].spec for i in t.items))], False),
                  on_result, timeout=lambda t: timeout if len(t.items) == 1 else limit)
    return PatternScan(tuple(rows[i] for i in range(len(pats))), count["runs"], False, count["limited"])


def _error_note(error: Exception | None) -> str:
    """A request's failure as a row's error: a crash or time-out as one by one reports it."""
    if isinstance(error, (WorkerCrash, WorkerTimeout)):
        kind = "crash" if isinstance(error, WorkerCrash) else "timeout"
        return _failure_note(ItemFailure(kind, None, error.diagnostics))
    return f"{type(error).__name__}: {error}"


def _run_each(pool: Pool, text: str, chunks: list[list[str]], desc: str, progress: bool, timeout: float,
              on_progress: OnProgress | None = None) -> PoolResult:
    """Each pipeline of ``chunks`` alone on ``text`` over ``pool``: one bar for the whole scan,
    advanced as each batch comes back (see ``progress``: none when there is nowhere to draw it)."""
    with Progress(sum(len(c) for c in chunks), desc, progress, on_progress, unit="pattern") as bar:
        return pool.map("run_each", chunks, lambda c: (text, c, False), on_done=bar.update, timeout=timeout)


def _failure_note(f: ItemFailure) -> str:
    return f"{f.kind}: {f.diagnostics.strip()[-300:]}"


@dataclass(frozen=True)
class StepRun:
    """What stepping produced: the stages (the start, then ``pattern:<name>#k`` each), the stage one
    greedy run of the whole list makes from the same start, the patterns that raised, the
    pipeline runs spent finding the pattern of each step (applying it and the greedy run not counted),
    and the pattern each step applied, in order (one per stage after the start)."""

    stages: tuple[Stage, ...]
    reference: Stage
    skipped: tuple[str, ...]
    runs: int = 0
    applied: tuple[str, ...] = ()


def step_patterns(ex: Explored, stage, max_steps: int = 200, progress: bool = True,
                  on_progress: OnProgress | None = None, exact: bool = False,
                  batch_limit: float | None = None, executor=None) -> StepRun:
    """Apply the enabled patterns one at a time, the first applicable one each step, to a fixpoint.

    Each step is what a serial one-by-one scan does: try the patterns in list order, each alone on the
    module (compared as ``scan`` compares), and apply the first that changes it; those that raised
    before it are skipped from then on. ``exact`` does just that (each worker tries a share of the
    list, stopping at its first hit; the earliest hit wins). The default finds the same pattern by
    group testing (see the module's docstring): it runs pieces of the list still in question, one
    per worker, and narrows to the first piece that is not unchanged; only a single pattern's own run
    decides that it applies or raises, so the pattern found, and the skipped ones, are those of the
    serial scan wherever ``scan``'s two answers agree.

    The number of steps is not known in advance: ``on_progress(steps, None)`` hears each pattern
    applied, and the bar counts steps without an end. With ``executor``, the searches' requests and
    the runs that apply a step go there (``workbench.pipeline.remote``)."""
    pool = resolve(executor)
    with route(pool):
        return _step(ex, stage, max_steps, progress, on_progress, exact, batch_limit, pool)


def _step(ex: Explored, stage, max_steps: int, progress: bool, on_progress: OnProgress | None, exact: bool,
          batch_limit: float | None, pool: Pool) -> StepRun:
    st = _module_stage(ex, stage)
    specs = list(pattern_list(ex.spec.selection))
    runner, timeout = default_runner(), ex.spec.timeout
    current = dataclasses.replace(st, parent=None, changed=False)
    stages = [current]
    applied: list[str] = []  # the pattern of each stage after the start
    skipped: list[str] = []  # patterns that raised on this module: reported, not retried
    # the start as printed (see _prepared), and one batch time limit for the whole stepping
    text, empty, runs = _prepared(pool, st.text, timeout, calibrate=not exact and batch_limit is None)
    if not exact and batch_limit is None:
        batch_limit = _batch_limit(empty, timeout, None) if empty is not None else min(timeout, MIN_BATCH_LIMIT)
    with Progress(None, f"stepping patterns on {st.name}", progress, on_progress, unit="step") as bar:
        for _ in range(max_steps):
            candidates = [s for s in specs if pattern_name(s) not in skipped]
            found = first_change(text, candidates, timeout, exact=exact, batch_limit=batch_limit, executor=pool)
            runs += found.runs
            skipped += [pattern_name(candidates[k]) for k in found.raised]
            if found.index is None:
                break
            name, pipeline = pattern_name(candidates[found.index]), patterns_pass((candidates[found.index],))
            base = f"pattern:{name}"
            try:
                out = runner.run(base, current.text_with_locations, pipeline, timeout=timeout)
            except StageError:  # it changed the module without locations, and fails with them
                skipped.append(name)
                continue
            made = stage_from_run(stage_name(base, stages), current, out, pipeline)
            if not made.changed:  # the same, with locations: nothing to step to
                skipped.append(name)
                continue
            current, text = made, made.text
            stages.append(current)
            applied.append(name)
            bar.update(1)
    everything = patterns_pass(tuple(specs))
    try:
        full = runner.run("all patterns", st.text_with_locations, everything, timeout=timeout)
        reference = stage_from_run("all patterns", st, full, everything)
    except StageError as e:
        reference = failed_stage("all patterns", st, everything, e)
    return StepRun(tuple(stages), reference, tuple(skipped), runs, tuple(applied))


@dataclass(frozen=True)
class FirstChange:
    """The first pattern of a list that changes a module alone (its index; None: none does), the
    earlier ones that raised, crashed or timed out alone (indices), and the pipeline runs it took."""

    index: int | None
    raised: tuple[int, ...]
    runs: int


def first_change(text: str, specs: Sequence[str], timeout: float = 600.0, exact: bool = False,
                 batch_limit: float | None = None, executor=None) -> FirstChange:
    """What a serial scan of ``specs`` (pattern entries) finds on ``text``, trying each alone in
    order until one changes it: by group testing, or with ``exact`` by running them alone; see
    ``step_patterns``. ``batch_limit`` (default: measured with an empty list, one more run) is how
    long a batch may run before it counts as one that never returns. ``executor``: see ``scan``."""
    pool, specs, extra = resolve(executor), list(specs), 0
    if exact:
        return FirstChange(*_first_alone(pool, text, specs, timeout))
    if batch_limit is None:
        empty = _calibrate(pool, text, timeout)
        batch_limit = _batch_limit(empty, timeout, None) if empty is not None else min(timeout, MIN_BATCH_LIMIT)
        extra = 1
    index, raised, runs = _first_grouped(pool, text, specs, timeout, batch_limit)
    return FirstChange(index, raised, runs + extra)


def _first_alone(pool: Pool, text: str, specs: list[str], timeout: float
                 ) -> tuple[int | None, tuple[int, ...], int]:
    """The first of ``specs`` that changes ``text`` alone, the earlier ones that raised, and the runs:
    each worker runs a contiguous share alone, stopping at its first hit, and the earliest hit wins
    (every pattern before it was run, so the ones that raised are those a serial scan meets)."""
    if not specs:
        return None, (), 0
    passes = [patterns_pass((s,)) for s in specs]
    order = {p: k for k, p in enumerate(passes)}
    size = -(-len(passes) // pool.width)
    shares = [passes[i:i + size] for i in range(0, len(passes), size)]
    raw = pool.map("run_each", shares, lambda c: (text, c, True), timeout=timeout)
    hits = [order[o.pipeline] for o in raw.results if o.changed]
    first = min(hits) if hits else len(passes)
    raised = sorted({order[o.pipeline] for o in raw.results if o.error} | {order[f.item] for f in raw.failures})
    return (first if hits else None), tuple(k for k in raised if k < first), len(raw.results) + len(raw.failures)


def _pieces(lo: int, hi: int, n: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut into ``n`` contiguous pieces of nearly equal size."""
    cuts = [lo + (hi - lo) * k // n for k in range(n + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _first_grouped(pool: Pool, text: str, specs: list[str], timeout: float, limit: float
                   ) -> tuple[int | None, tuple[int, ...], int]:
    """``_first_alone``'s answer by group testing: ``specs[:lo]`` are decided (unchanged or raised
    alone); ``hint``, when set, ends a range ``[lo, hint)`` known to hold a piece that is not
    unchanged. Each round runs one piece per worker: of ``[lo, n)``, or of ``[lo, hint)`` but its
    last piece (which holds the change if the others are clean), or each pattern of a short range
    alone. A piece that comes out unchanged is decided; the first that does not becomes the range."""
    w = pool.width
    lo, hint, raised, runs = 0, None, [], 0
    while lo < len(specs):
        hi = len(specs) if hint is None else hint
        if hi - lo <= w:
            pieces = [(k, k + 1) for k in range(lo, hi)]
        elif hint is None:
            pieces = _pieces(lo, hi, w)
        else:
            pieces = _pieces(lo, hi, w + 1)[:-1]
        answers: dict[tuple[int, int], tuple] = {}
        pool.work("run_each", pieces, lambda pc: (text, [patterns_pass(tuple(specs[pc[0]:pc[1]]))], False),
                  lambda pc, value, error: answers.__setitem__(pc, (value, error)),
                  timeout=lambda pc: timeout if pc[1] - pc[0] == 1 else limit)
        runs += len(pieces)
        for a, b in pieces:
            value, error = answers[(a, b)]
            o = value[0] if error is None else None
            if o is not None and not o.changed and not o.error:
                lo = b
            elif b - a > 1:
                lo, hint = a, b
                break
            elif o is not None and o.changed:
                return a, tuple(raised), runs
            else:  # raised, crashed or timed out alone: skipped, as a serial scan skips it
                raised.append(a)
                lo, hint = b, None
        if hint is not None and lo >= hint:
            hint = None
    return None, tuple(raised), runs


def pattern_timing(ex: Explored, stage, per_pattern: bool = False, progress: bool = True,
                   on_progress: OnProgress | None = None, executor=None):
    """Seconds each pattern group (or, with ``per_pattern``, each pattern) takes on ``stage``, run alone.

    Groups are applied with their enabled patterns only, in one greedy run each, so a slow group
    stands out; the rows are sorted slowest first. ``on_progress(done, total)`` counts the groups
    (or the patterns) run so far. With ``executor`` (see ``scan``) the seconds are the remote machine's.
    """
    import pandas as pd

    st = _module_stage(ex, stage)
    if per_pattern:
        rows = scan_patterns(ex, st, progress=progress, on_progress=on_progress, exact=True,  # own seconds
                             executor=executor)
        df = pd.DataFrame([dataclasses.asdict(r) for r in rows])
        return df.sort_values("seconds", ascending=False, ignore_index=True)
    enabled = set(pattern_list(ex.spec.selection))
    groups: dict[str, list[str]] = {}
    for p in catalog(ex.spec.selection.options):
        if p.spec in enabled:
            groups.setdefault(p.group, []).append(p.spec)
    by_pass = {patterns_pass(tuple(v)): k for k, v in groups.items()}
    text = st.text_with_locations or st.text
    raw = _run_each(resolve(executor), text, [[p] for p in by_pass], f"pattern groups on {st.name}", progress,
                    ex.spec.timeout, on_progress)
    rows = [{"group": by_pass[o.pipeline], "patterns": len(groups[by_pass[o.pipeline]]), "seconds": o.seconds,
             "changed": o.changed, "error": o.error or ""} for o in raw.results]
    rows += [{"group": by_pass[f.item], "patterns": len(groups[by_pass[f.item]]), "seconds": float("nan"),
              "changed": False, "error": _failure_note(f)} for f in raw.failures]
    return pd.DataFrame(rows).sort_values("seconds", ascending=False, ignore_index=True)
