"""Find what to blame: delta debugging over the enabled Enzyme-JaX patterns, XLA's HLO passes, or both.

``bisect(ex, predicate, over=...)`` returns a 1-minimal set of culprits for which ``predicate`` holds:
it holds with that set alone enabled, and fails when any one of them is removed. The search is
Zeller's ddmin, so one culprit among n costs O(log n) tries, k culprits O(k log n) in typical cases.

- ``over="patterns"`` (the default): subsets of the enabled patterns (``ex.with_only_patterns``), one
  MLIR pipeline run each (and an XLA compile where the predicate reads XLA's stages);
- ``over="xla"``: subsets of the HLO passes XLA's compile ran (``ex.xla_passes``), every other one
  disabled with ``xla_disable_hlo_passes`` (``ex.with_xla(disable=...)``): one XLA compile each;
- ``over="all"``: both in one ddmin: a subset enables its patterns and its XLA passes, every other
  pattern is off and every other candidate XLA pass disabled.

Some XLA passes cannot be disabled: without them the compile fails, or XLA aborts the process (a
CHECK failure; e.g. an RNG program compiled on CPU with every pass off). Before the search, the
module is compiled with every candidate XLA pass disabled in a child process (a fresh interpreter,
so an abort takes only it down); if that fails, a small set that must stay enabled is found by
binary search: the shortest run of the candidates (in XLA's order) with which it compiles, one needed
pass at a time -- about k (log2 n + 1) child compiles for k needed passes among n. That is cheaper
than both alternatives: one try per pass costs n compiles, and ddmin over "the compile succeeds with
only these enabled" took 30 compiles where this takes 13 (an RNG program on CPU: 37 passes, 2
needed; a compile that aborts costs a fresh child, about a second). Those are ``always_needed``,
enabled in every subset and never culprits; ``always_needed_how`` says what was tried and
``probe_compiles`` counts the child's compiles.
The search's own compiles run in this process after the same child-process try as every compile with
disabled passes (``pipeline/xla_probe.py``), so a subset XLA aborts on is a failed compile, not a dead
kernel.

Predicates that run the program (``miscompiles``, ``differs_from(..., numbers=True)``) run it as
``ex.run`` does: compiled with the Exploration's XLA options, so over XLA's passes they ask about the
toggled program (its reference, the as-lowered program, runs with XLA's defaults).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ...errors import NothingToSearchError, UnknownNameError, WorkbenchError
from ...ir.ops import op_counts
from ...ir.text import text_hash
from ...pipeline.build import xla_compiles
from ...pipeline.catalog import pattern_list, pattern_name
from ...pipeline.remote import Prefetch, resolve
from ...pipeline.xla_probe import probe_compile, probe_payload, release_spare
from ..run.execute import compare_outputs
from ..progress import OnProgress, Progress

from .explored import Explored  # what the facade hands down (analysis never imports the facade)

__all__ = ["BisectResult", "BuiltinPredicate", "bisect", "ddmin", "miscompiles", "crashes", "slower_than",
           "op_count_above", "op_count_at_most", "differs_from", "has_op", "lacks_op", "OVER"]

Predicate = Callable[["Explored"], bool]
OVER = ("patterns", "xla", "all")


def ddmin(items: list, holds: Callable[[list], bool], ahead: Callable[[list[list]], None] | None = None) -> list:
    """A 1-minimal sublist of ``items`` for which ``holds`` is True (``holds(items)`` must be True).
    ``ahead(subsets)`` hears, before each series of tries, the subsets it will try in that order
    until one holds (to prepare them at once: ``holds`` is still asked of each, in the same order)."""
    current, n = list(items), 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[i * size // n:(i + 1) * size // n] for i in range(n)]
        chunks = [c for c in chunks if c]
        if ahead:
            ahead(chunks)
        for c in chunks:
            if holds(c):
                current, n = c, 2
                break
        else:
            if ahead and len(chunks) > 2:
                ahead([[x for x in current if x not in d] for d in map(set, chunks)])
            for c in chunks:
                dropped = set(c)
                rest = [x for x in current if x not in dropped]
                if len(chunks) > 2 and holds(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= size:
                    break
                n = min(size, 2 * n)
    return current


@dataclass
class BisectResult:
    """The culprits (``patterns``, ``xla_passes``), the tries the search needed (``runs``: one pipeline
    run or XLA compile per subset; ``compiles``: XLA compiles in this process, ``probe_compiles``: in
    the child that looked for ``always_needed``), and what the culprits change (``table()``, ``diff``)."""

    patterns: list[str]
    runs: int
    seconds: float
    log: list[tuple[int, bool]] = field(default_factory=list, repr=False)  # (set size, predicate held)
    _ex: Explored | None = field(default=None, repr=False)
    xla_passes: list[str] = field(default_factory=list)
    always_needed: list[str] = field(default_factory=list)
    always_needed_how: str = ""
    over: str = "patterns"
    compiles: int = 0
    probe_compiles: int = 0
    _xla_candidates: tuple[str, ...] = field(default=(), repr=False)

    def _config(self, patterns, xla_on):
        """The Exploration with exactly these patterns and XLA passes of the search enabled."""
        return _configure(self._ex, self.over, self._xla_candidates, patterns, set(xla_on) | set(self.always_needed))

    def table(self):
        """One row per culprit: ``kind`` (pattern or xla), ``name``, and ``changes``: the ops that
        removing it from the culprit set changes (of the last MLIR stage for a pattern, of
        ``xla:optimized`` for an XLA pass), or how many lines change when no op count does."""
        import pandas as pd

        rows = []
        if self._ex is not None and (self.patterns or self.xla_passes):
            full = self._config(self.patterns, self.xla_passes)
            for kind, names in (("pattern", self.patterns), ("xla", self.xla_passes)):
                for name in names:
                    less = self._config([p for p in self.patterns if p != name] if kind == "pattern" else self.patterns,
                                        [p for p in self.xla_passes if p != name] if kind == "xla" else self.xla_passes)
                    rows.append({"kind": kind, "name": name, "changes": _changes(less, full, kind)})
        return pd.DataFrame(rows, columns=["kind", "name", "changes"])

    @property
    def diff(self):
        """Final MLIR stage with every pattern vs. with every pattern but the culprits; when the
        culprits are XLA passes only, ``xla:optimized`` with them vs. with them disabled too."""
        from ..diff import diff_texts

        ex = self._ex
        if not self.patterns and self.xla_passes:
            without = ex.with_xla(disable=self.xla_passes)
            return diff_texts(without.stage("xla:optimized").text, ex.stage("xla:optimized").text,
                              f"without {', '.join(self.xla_passes)}", "with every XLA pass")
        names = {pattern_name(p) for p in pattern_list(ex.spec.selection)}
        without = ex.with_only_patterns(names - set(self.patterns))
        a = [s for s in without.stages if s.group == "mlir"][-1]
        b = [s for s in ex.stages if s.group == "mlir"][-1]
        return diff_texts(a.text, b.text, f"without {', '.join(self.patterns)}", "with all patterns")


def _changes(less: Explored, full: Explored, kind: str) -> str:
    from ..diff import diff_texts

    try:
        a, b = ((less.default_run_stage(), full.default_run_stage()) if kind == "pattern"
                else (less.stage("xla:optimized"), full.stage("xla:optimized")))
    except WorkbenchError as e:
        return f"(not compared: {str(e).splitlines()[0]})"
    d = diff_texts(a.text, b.text, "without", "with")
    delta = d.ops_delta()
    if len(delta):
        return ", ".join(f"{r.op} {r.delta:+d}" for r in delta.itertuples())
    n = len(d.changes)
    return "no change" if d.is_empty else f"{n} change{'s' * (n != 1)}, no op count"


def _configure(ex: Explored, over: str, xla_candidates, patterns, xla_on) -> Explored:
    """``ex`` with exactly ``patterns`` enabled (unless over="xla") and every candidate XLA pass not in
    ``xla_on`` disabled (unless over="patterns")."""
    out = ex if over == "xla" else ex.with_only_patterns(frozenset(patterns))
    if over != "patterns":
        out = out.with_xla(disable=[p for p in xla_candidates if p not in xla_on])
    return out


def bisect(ex: Explored, predicate: Predicate, candidates=None, progress: bool = True,
           on_progress: OnProgress | None = None, over: str = "patterns", executor=None) -> BisectResult:
    """ddmin over ``candidates`` (default: the enabled patterns, the XLA passes ``ex.xla_passes``, or
    both, by ``over``), one try per subset. For ``over="all"``, ``candidates`` may mix pattern names
    and XLA pass names (a name among ``ex.xla_passes`` is an XLA pass). How many tries a search takes
    is not known in advance: ``on_progress(runs, None)`` hears each.

    With ``executor`` (``workbench.pipeline.remote``), the MLIR pipeline runs of the subsets go there,
    those of each series of tries built at once (``ddmin``'s ``ahead``); XLA's compiles and the
    predicate run here, one subset at a time in ddmin's order, so the answer, ``runs`` and ``log``
    are those of the built-in pool. Over XLA's passes alone nothing goes there."""
    if over not in OVER:
        raise UnknownNameError("bisect domain (over=)", str(over), list(OVER), "over is one of " + ", ".join(OVER))
    start, compiled = time.perf_counter(), xla_compiles()
    pats, xla = _candidates(ex, over, candidates)
    needed, how, probes = [], "", 0
    if over != "patterns":
        needed, how, probes = _always_needed(ex, xla)
        xla = [p for p in xla if p not in needed]
    items = [("pattern", p) for p in pats] + [("xla", p) for p in xla]
    bar = Progress(None, "bisect runs", progress, on_progress, unit="run")
    tries = _Tries(ex, predicate, over, xla, needed, bar, Prefetch(resolve(executor)))
    with tries.prefetch:
        try:
            tries.ahead([items, []] if over != "xla" else [])
            _check_ends(tries.holds, items, over, needed)
            culprits = ddmin(items, tries.holds, tries.ahead if over != "xla" else None)
        finally:
            bar.close()
    return BisectResult(sorted(n for k, n in culprits if k == "pattern"), len(tries.cache),
                        time.perf_counter() - start, tries.log, ex, sorted(n for k, n in culprits if k == "xla"),
                        needed, how, over, xla_compiles() - compiled, probes, tuple(xla))


def _candidates(ex: Explored, over: str, candidates) -> tuple[list[str], list[str]]:
    """The candidate patterns and XLA passes, each once: the given ones (for ``over="all"``, a name
    among ``ex.xla_passes`` is an XLA pass), else the enabled patterns and the passes XLA ran."""
    passes = list(dict.fromkeys(ex.xla_passes)) if over != "patterns" else []
    if candidates is None:
        return ([] if over == "xla" else [pattern_name(p) for p in pattern_list(ex.spec.selection)]), passes
    given = list(dict.fromkeys(candidates))
    xla = [c for c in given if over == "xla" or (over == "all" and c in passes)]
    return [c for c in given if c not in xla], xla


class _Tries:
    """The tries of one bisection: each subset (of ``("pattern" | "xla", name)`` items) configured as an
    Exploration (built ahead by ``prefetch`` where there is an executor), the predicate's answer on it
    asked once and remembered (``cache``), and each answer in order (``log``: set size, held)."""

    def __init__(self, ex: Explored, predicate: Predicate, over: str, xla: list[str], needed: list[str],
                 bar: Progress, prefetch: Prefetch):
        self.ex, self.predicate, self.over, self.xla, self.needed = ex, predicate, over, xla, needed
        self.bar, self.prefetch = bar, prefetch
        self.cache: dict[frozenset, bool] = {}
        self.log: list[tuple[int, bool]] = []

    def trial(self, key: frozenset) -> Callable[[], Explored]:
        """What builds the subset's Exploration: its patterns on, its XLA passes and the needed ones on."""
        on = {n for k, n in key if k == "xla"} | set(self.needed)
        return lambda: _configure(self.ex, self.over, self.xla, [n for k, n in key if k == "pattern"], on)

    def ahead(self, subsets: list[list]) -> None:
        """ddmin's ``ahead``: build the next series' subsets not tried yet, dropping the last series' rest."""
        self.prefetch.drop()  # the last series' builds that were not needed
        for key in map(frozenset, subsets):
            if key not in self.cache:
                self.prefetch.want(key, self.trial(key))

    def holds(self, subset: list) -> bool:
        """Whether the predicate holds with this subset enabled (asked once per subset)."""
        key = frozenset(subset)
        if key not in self.cache:
            self.cache[key] = bool(self.predicate(self.prefetch.take(key, self.trial(key))))
            self.log.append((len(key), self.cache[key]))
            self.bar.update(1)
        return self.cache[key]


def _check_ends(holds: Callable[[list], bool], items: list, over: str, needed: list[str]) -> None:
    """WorkbenchError unless the predicate holds with every candidate enabled and fails with none (the
    panel's Analyze tab reads "does not hold with all" and "holds with no pattern" in these)."""
    what = {"patterns": ("patterns", "pattern"), "xla": ("XLA passes", "XLA pass"),
            "all": ("patterns and XLA passes", "pattern or XLA pass")}[over]
    if not holds(items):
        raise NothingToSearchError(f"the predicate does not hold with all candidate {what[0]} enabled: "
                                   "nothing to bisect")
    if holds([]):
        cause = ("look at the upstream passes or XLA: over='xla' or 'all'" if over == "patterns" else
                 "look at the MLIR passes" + (f", or at the XLA passes it cannot do without ({', '.join(needed)})"
                                              if needed else ""))
        raise WorkbenchError(f"the predicate holds with no {what[1]} enabled: the cause is not a {what[1]} ({cause})")


# ---- the XLA passes that cannot be disabled: probed in a child process --------------------------------


def _always_needed(ex: Explored, passes: list[str]) -> tuple[list[str], str, int]:
    """(the passes that must stay enabled, how they were found, child compiles made)."""
    if not passes:
        return [], "no XLA pass is a candidate, so none was probed", 0
    if ex.error is not None:
        return [], f"not probed: the program does not compile with every pass enabled ({ex.error.stage})", 0
    traced = ex.spec.traced
    if traced is not None and traced.nr_devices > 1:
        return [], ("not probed: the module is sharded, which the probe's child process does not set up "
                    "(the compiles of the search run in this process, unprotected from XLA's aborts)"), 0
    source = ex.pipeline_stages[-1].text_with_locations or ex.pipeline_stages[-1].text
    base = {k: v for k, v in ex.spec.xla_options if k != "xla_disable_hlo_passes"}
    payload = probe_payload(source, ex.spec.device)
    failures: dict[frozenset, str | None] = {frozenset(passes): None}  # ex's own compile: every pass enabled

    def compiles(enabled: list[str]) -> bool:
        key = frozenset(enabled)
        if key not in failures:
            off = sorted(set(ex.spec.xla_disabled) | (set(passes) - key))
            failures[key] = probe_compile({**payload, "options": {**base, "xla_disable_hlo_passes": ",".join(off)}},
                                          ex.spec.timeout)
        return failures[key] is None

    try:
        return _search_needed(passes, failures, compiles)
    finally:
        release_spare()


def _search_needed(passes: list[str], failures: dict, compiles: Callable[[list[str]], bool]):
    n = len(passes)
    if compiles([]):
        return [], (f"XLA compiled the module with all {n} candidate passes disabled (1 compile in a child "
                    "process), so none has to stay enabled"), 1
    first = failures[frozenset()]
    needed = sorted(_needed(passes, compiles))
    return needed, (f"with all {n} candidate passes disabled, XLA's compile failed ({first}); a binary search for "
                    f"the shortest run of passes (in XLA's order) that lets it compile, one needed pass at a time, "
                    f"found {len(needed)} that must stay enabled, in {len(failures) - 1} compiles in a child "
                    "process"), len(failures) - 1


def _needed(passes: list[str], compiles: Callable[[list[str]], bool]) -> list[str]:
    """A small set of passes with which (and no other) the module compiles: while it does not compile with
    those found so far, binary-search the shortest prefix of the rest that lets it, and keep that prefix's
    last pass (the earlier ones stay candidates). k needed passes cost about k (log2 n + 1) compiles."""
    needed, rest = [], list(passes)
    while rest and not compiles(needed):
        lo, hi = 0, len(rest)  # with needed: rest[:lo] does not compile, rest[:hi] does
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if compiles(needed + rest[:mid]) else (mid, hi)
        needed.append(rest[hi - 1])
        rest = rest[:hi - 1]
    return needed


# ---- built-in predicates ---------------------------------------------------------------------
#
# Each is a small callable object with a readable repr (``op_count_above('stablehlo.transpose', 0)``),
# ``__name__`` (the same, as when they were functions) and ``recipe``: a JSON-able description of what it
# checks (its ``kind`` and arguments), from which ``ex.reproducer`` writes a standalone script that
# decides the same question.

_REQUIRED = object()


class BuiltinPredicate:
    """A built-in predicate: ``pred(ex)`` is True when it holds for Exploration ``ex``."""

    kind = ""
    params: tuple = ()  # (name, default, positional): the signature, for the repr

    def __init__(self, **args):
        self.args = args

    @property
    def recipe(self) -> dict:
        return {"kind": self.kind, **self.args}

    @property
    def __name__(self) -> str:  # as the functions these objects replaced had
        return repr(self)

    def __repr__(self) -> str:
        shown, in_order = [], True  # positional while every earlier parameter was shown positionally
        for name, default, positional in self.params:
            value = self.args[name]
            if positional and in_order and (default is _REQUIRED or value != default):
                shown.append(repr(value))
            elif value != default:
                shown.append(f"{name}={value!r}")
                in_order = False
            else:
                in_order = False
        return f"{self.kind}({', '.join(shown)})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.args == self.args

    def __hash__(self) -> int:
        return hash((self.kind, tuple(sorted(self.args.items()))))

    def __call__(self, ex: Explored) -> bool:
        raise NotImplementedError


class _Miscompiles(BuiltinPredicate):
    kind, params = "miscompiles", (("device", None, True), ("repeat", 1, False))

    def __call__(self, ex: Explored) -> bool:
        if ex.error and ex.error.stage != "xla:compile":
            return False
        return not ex.run(device=self.args["device"], repeat=self.args["repeat"]).check.passed


class _Crashes(BuiltinPredicate):
    kind, params = "crashes", (("include_xla", False, False),)

    def __call__(self, ex: Explored) -> bool:
        return ex.pipeline_error is not None or (self.args["include_xla"] and ex.error is not None)


class _SlowerThan(BuiltinPredicate):
    kind, params = "slower_than", (("seconds", _REQUIRED, True),)

    @property
    def recipe(self) -> dict:
        return {"kind": self.kind, "seconds": float(self.args["seconds"])}

    def __call__(self, ex: Explored) -> bool:
        return sum(s.seconds or 0.0 for s in ex.pipeline_stages if s.group == "mlir") > self.args["seconds"]


class _OpCountAbove(BuiltinPredicate):
    kind, params = "op_count_above", (("name", _REQUIRED, True), ("n", _REQUIRED, True))

    def __call__(self, ex: Explored) -> bool:
        above = op_counts(ex.default_run_stage().text)[self.args["name"]] > self.args["n"]
        return above if self.kind == "op_count_above" else not above


class _OpCountAtMost(_OpCountAbove):
    kind = "op_count_at_most"


def _stage_text(ex: Explored, stage: str | None) -> str | None:
    """The text of ``stage`` (None: the last MLIR stage), or None when it is an XLA stage that does not
    exist because XLA's compile failed (or the MLIR pipeline did); any other unknown name raises."""
    if stage is None:
        return ex.default_run_stage().text
    if stage.startswith(("xla:", "backend:")) and ex.error is not None:
        return None
    s = ex.stage(stage)
    return None if s.error else s.text


class _HasOp(BuiltinPredicate):
    kind, params = "has_op", (("name", _REQUIRED, True), ("stage", None, False))

    def __call__(self, ex: Explored) -> bool:
        text = _stage_text(ex, self.args["stage"])
        if text is None:
            return False
        present = op_counts(text)[self.args["name"]] > 0
        return present if self.kind == "has_op" else not present


class _LacksOp(_HasOp):
    kind = "lacks_op"


class _DiffersFrom(BuiltinPredicate):
    kind, params = "differs_from", (("stage", _REQUIRED, True), ("numbers", False, False), ("device", None, False))

    def __init__(self, **args):
        super().__init__(**args)
        self._outputs: dict = {}  # the given stage's outputs, by (text, device, trace): one run per bisection

    def __call__(self, ex: Explored) -> bool:
        last = ex.default_run_stage()
        if not self.args["numbers"]:
            return not ex.diff(self.args["stage"], last).is_empty
        device = self.args["device"] or ex.spec.device
        ref = ex.stage(self.args["stage"])
        key = (text_hash(ref.text_with_locations or ref.text), device, id(ex.spec.traced))
        if key not in self._outputs:
            self._outputs[key] = (ex.run(ref, device=device, repeat=1, check=False).program_outputs, ex.spec.traced)
        got = ex.run(last, device=device, repeat=1, check=False).program_outputs
        try:
            return not compare_outputs(got, self._outputs[key][0], ref.name).passed
        except WorkbenchError:  # another structure of outputs: they differ
            return True


def miscompiles(device: str | None = None, repeat: int = 1) -> BuiltinPredicate:
    """Holds when the last MLIR stage, run on ``device``, fails ``ex.run``'s numeric check: its error against
    the as-lowered module promoted to float64 (or the function evaluated in float64) is materially larger
    than the as-lowered program's own (where no float64 evaluation exists, its difference from "stablehlo"
    is materially larger than the program's own noise; ``workbench.analysis.run.check`` has the rules)."""
    return _Miscompiles(device=device, repeat=repeat)


def crashes(include_xla: bool = False) -> BuiltinPredicate:
    """Holds when a pass crashes its worker, fails verification or raises (MLIR stages; XLA too on request)."""
    return _Crashes(include_xla=bool(include_xla))


def slower_than(seconds: float) -> BuiltinPredicate:
    """Holds when the MLIR pipeline's passes take longer than ``seconds`` in total."""
    return _SlowerThan(seconds=seconds)


def op_count_above(name: str, n: int) -> BuiltinPredicate:
    """Holds when the last MLIR stage has more than ``n`` ops called ``name`` (e.g. "stablehlo.transpose"),
    counted by ``workbench.ir.ops.op_counts``: a name in a string or an attribute is not an op."""
    return _OpCountAbove(name=name, n=n)


def op_count_at_most(name: str, n: int) -> BuiltinPredicate:
    """Holds when the last MLIR stage has at most ``n`` ops called ``name``: which patterns remove an op
    (the opposite of ``op_count_above``)."""
    return _OpCountAtMost(name=name, n=n)


def has_op(name: str, stage: str | None = None) -> BuiltinPredicate:
    """Holds when ``stage`` (default: the last MLIR stage) holds an op called ``name``, counted by
    ``workbench.ir.ops.op_counts``: MLIR op names ("stablehlo.transpose"), or for an XLA HLO stage
    ("xla:optimized") its opcodes ("fusion", "transpose"). An XLA stage that does not exist because
    XLA's compile failed holds no op (neither ``has_op`` nor ``lacks_op`` holds); another unknown stage
    name raises UnknownNameError."""
    return _HasOp(name=name, stage=stage)


def lacks_op(name: str, stage: str | None = None) -> BuiltinPredicate:
    """Holds when ``stage`` (default: the last MLIR stage) holds no op called ``name`` (see ``has_op``):
    with ``over="xla"``, which XLA pass removes an opcode, e.g. ``lacks_op("multiply", "xla:optimized")``."""
    return _LacksOp(name=name, stage=stage)


def differs_from(stage: str, numbers: bool = False, device: str | None = None) -> BuiltinPredicate:
    """Holds when the program's result differs from ``stage``'s (a trace or MLIR stage, e.g. "stablehlo").

    By text (the default): the last MLIR stage's text differs from ``stage``'s, compared as ``ex.diff``
    compares them (value names, numbering and locations ignored: ``not ex.diff(stage, last).is_empty``).
    With ``numbers=True``: the last MLIR stage's outputs on ``device`` (default: the explored one) fail
    the numeric check's per-dtype tolerance (``execute.compare_outputs``: ``|got - want| <= rtol(dtype) *
    max|want|``) against ``stage``'s outputs on the same arguments (run once per bisection)."""
    return _DiffersFrom(stage=stage, numbers=bool(numbers), device=device)
