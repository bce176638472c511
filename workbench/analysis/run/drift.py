"""Where the numbers drift: the first op of a stage whose value leaves its counterpart's in the reference.

``find_drift(ex, stage, reference, device)`` taps both modules (``ir.taps``: ``@main`` also returns chosen
intermediate values), pairs each op of the stage with its counterpart in the reference (``tapping``: the same
source positions and result types), and compares each pair with the numeric check's own rule
(``check.check_leaf``): against the reference promoted to float64 where it can be, next to the reference's own
error; else against the reference's noise (its inputs moved by one ulp); integers exactly.

The search. The pairs are listed in the stage's order (a topological order: ``@main`` is one block), the
program's outputs last. A side whose values all fit (``drift_values.TAP_ALL`` values, ``TAP_BYTES``) is tapped
whole, once: then one round compares every pair, and the inputs of the op found are read from the same runs
(three modules compiled and run in all, none where a search of the same trace measured the reference before
and a background ``warm`` compiled them; ``drift_values`` says why). Else each probe runs the two tap modules
(and the reference's float64 or nudged evaluation) once, tapping pairs of the interval still in question spread
evenly over it; the first drifting pair and the last good one before it bound the next interval. Where
everything fits (``TAP_VALUES`` values, ``TAP_BYTES`` a side), one probe decides; where it does not, a round taps
as many as fit and at least seven
(refused beyond ``array_limit()``), so the interval shrinks eight- to sixty-five-fold a round: the runs grow
with log(ops), and memory with the budget, never with the program's size. The first round compares the
outputs too; where they agree, nothing is looked for (what differs inside is computed otherwise, and the
result says how many such values there are). A last probe taps the inputs of the op found, next to its
counterpart's: an input that already differs, computed here by an op the reference lacks (or the other way
round), says where the values entered -- the reference's op that a rewrite removed is then the first wrong
value, and its line the user's. An input that differs and was an earlier pair (the values can drift and come
back) restarts the search before it; one that agrees with its own counterpart but not with the paired op's
operand shows the pair is none, and it is set aside.

Tapping changes what XLA compiles (an intermediate returned is no longer fused away), so ``outputs_drift``
says whether the outputs drift in the tapped runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...errors import WorkbenchError
from ...ir.taps import TapPoint, Value, value_bytes, value_shape
from ...stages import Stage
from .check import LeafCheck
from .drift_values import TAP_BYTES, Probe, TapCache, cache_of
from .tapping import Side, counterparts, made_by, removed_by, result_pairs

__all__ = ["Cause", "Drift", "DriftOp", "DriftInput", "find_drift", "TAP_BYTES", "value_drifts"]

# values a probe taps at most: each one returned keeps XLA from fusing it away, and a module returning all
# of a 720-op program's values compiled 3x slower than with 16 (3.5 s against 1.1 s, the NNX transformer)
TAP_VALUES = 64
_RESTARTS = 3
_LEAST = 7  # a round of 7 values cuts the interval 8 ways: 3 runs buy what 3 halvings do
_CONTROL_FLOW = ("stablehlo.while", "stablehlo.case", "stablehlo.if")


@dataclass(frozen=True)
class _Pair:
    here: Value
    there: Value
    point: TapPoint | None  # None: an output of @main
    other: TapPoint | None
    label: str
    nbytes: int


@dataclass(frozen=True)
class DriftInput:
    """One operand of the op found, next to its counterpart's operand: ``here``/``reference`` say what each
    is (an op and its line, or an argument), ``differs`` whether their values differ beyond noise (None:
    not compared, their types differ), ``note`` where a value entered that the other side computes otherwise."""

    position: int
    here: str
    reference: str
    differs: bool | None
    max_abs: float | None
    tolerance: float | None
    note: str = ""
    source: str = ""
    changed_by: str | None = None  # the stage that removed the reference's op (or made this stage's)
    change: tuple = ()  # (kind, source positions, removed?) of that op, for ``patterns_that``
    what: str = ""  # ``note`` without the stage that did it: where the value entered (the explanation's words)
    keys: frozenset = frozenset()  # the source positions of both operands' ops (where a hand edit is looked for)


CauseKind = Literal["edit", "patterns", "stage"]


@dataclass(frozen=True)
class Cause:
    """The one cause a drift's explanation names: ``kind`` "edit", the hand edit of ``stage``
    (``ex.with_text``); "patterns", ``patterns`` of ``stage``'s pattern pass (found by running that pass again
    on its parent with subsets of them: ``analysis.search.blame``); "stage", ``stage`` made or removed the op
    the values came through and no pattern of it is named (``how`` says why). ``how``: how it was found."""

    kind: CauseKind
    stage: str
    patterns: tuple[str, ...] = ()
    how: str = ""

    def words(self) -> str:
        if self.kind == "edit":
            return f"the cause: your hand edit of {self.stage}"
        if self.kind == "patterns":
            return (f"the cause: {self.stage}'s pattern{'s' * (len(self.patterns) > 1)} "
                    f"{', '.join(self.patterns)}")
        return f"the cause: {self.stage}" + (f" (no pattern named: {self.how})" if self.how else "")


@dataclass(frozen=True)
class DriftOp:
    """The op found: in the stage (``result``, ``op``, ``line`` 0-based in the stage's text, ``text``, the user's
    ``source``) and its counterpart in the reference (``reference``: the same keys), the compared value
    (``check``), its inputs, and the stage that made it (``made_by``, with its pass) where one did."""

    stage: str
    result: str
    op: str
    line: int
    text: str
    source: str
    reference: dict
    check: LeafCheck
    inputs: tuple[DriftInput, ...] = ()
    made_by: str | None = None
    made_by_pass: str = ""
    in_region: bool = False
    key: tuple = ()  # (source positions, result types, kind): what ``drifts_at`` finds the op by
    patterns: tuple[str, ...] = ()  # the patterns of the stage that made the change (``changed_by``)
    changed_by: str | None = None  # that stage: the one that removed an input's op, else made this op
    blame_note: str = ""  # how the patterns were found, or why none
    change: tuple = field(default=(), repr=False)  # (kind, source positions, removed?) of ``changed_by``'s op
    cause: Cause | None = None  # the one cause the explanation names (None: no stage changed these ops)


def _at_line(source: str) -> str:
    """``source`` (``tapping.source_of``) in words: "; at your line train.py:42 (optax/_src/transform.py:507)",
    or where no frame is the user's, "; at optax/_src/transform.py:507 (library code only)"."""
    if not source:
        return ""
    return f"; at {source}" if source.endswith("(library code only)") else f"; at your line {source}"


@dataclass(frozen=True)
class Drift:
    """What ``ex.drift`` found. ``op`` is the first op whose value drifts (None: none does), ``line`` the
    user's line where the values first go wrong (the op's, or that of the reference's op whose value came in
    otherwise), ``outputs_drift`` whether the program's outputs drift in the tapped runs, ``runs`` the module
    executions the search made, ``probes`` its rounds, ``ops`` the stage's ops, ``compared`` those with a
    counterpart, ``rule`` the yardstick, ``rows`` every compared value (``table()``)."""

    stage: str
    reference: str
    device: str
    op: DriftOp | None
    line: str
    outputs_drift: bool
    runs: int
    probes: int
    ops: int
    compared: int
    rule: str
    rows: tuple[dict, ...] = field(default=(), repr=False)
    note: str = ""
    module_args: tuple = field(default=(), repr=False)  # the arrays @main was run with (for ``drifts_at``)

    @property
    def found(self) -> bool:
        return self.op is not None

    def table(self):
        """Every compared value, in the stage's order: the op and its line here and in the reference, the
        user's line, the error, the tolerance and the verdict, and the probe that compared it."""
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=["order", "result", "op", "line", "reference_result",
                                                      "reference_op", "reference_line", "source", "max_abs",
                                                      "tolerance", "rule", "drifts", "probe"])

    def summary(self) -> str:
        if self.op is None:
            head = (f"no drift: the {self.compared} values of {self.stage!r} ({self.ops} ops) compared with {self.reference!r}"
                    f" agree within noise")
        else:
            o = self.op
            where = (f"{o.result} = {o.op} (line {o.line + 1}{_at_line(o.source)})" if o.op
                     else f"{o.result} of @main (no op inside it has a counterpart to compare)")
            head = (f"{self.stage!r} drifts from {self.reference!r} at {where}: error {o.check.max_abs:.3g} over a tolerance of "
                    f"{o.check.tolerance:.3g}")
            entered = [i.what or i.note for i in o.inputs if i.differs and (i.what or i.note)]
            if entered:
                head += f"; {entered[0]}"
            if o.cause is not None:
                head += f"; {o.cause.words()}"
            if o.in_region:
                head += "; the drift is inside its region (a loop or a branch)"
        tail = (f" ({self.runs} run{'s' * (self.runs != 1)}, {self.probes} probe{'s' * (self.probes != 1)}, "
                f"{self.rule})")
        if self.note:
            tail += f". {self.note}"
        return head + tail

    def __repr__(self) -> str:
        return f"Drift({self.summary()})"

    def _repr_html_(self) -> str:
        import html

        parts = [f"<p><b>{html.escape(self.summary())}</b></p>"]
        if self.op is not None:
            o = self.op
            parts.append("<table><tr><th></th><th>op</th><th>line</th><th>text</th></tr>"
                         f"<tr><td>{html.escape(self.stage)}</td><td>{html.escape(o.result)}</td><td>{o.line + 1}</td>"
                         f"<td><code>{html.escape(o.text[:160])}</code></td></tr>"
                         f"<tr><td>{html.escape(self.reference)}</td><td>{html.escape(o.reference['result'])}</td>"
                         f"<td>{o.reference['line'] + 1}</td><td><code>{html.escape(o.reference['text'][:160])}"
                         "</code></td></tr></table>")
            if o.inputs:
                rows = "".join(f"<tr><td>{i.position}</td><td>{html.escape(i.here)}</td><td>{html.escape(i.reference)}"
                               f"</td><td>{'yes' if i.differs else ('no' if i.differs is False else '?')}</td>"
                               f"<td>{html.escape(i.what or i.note)}</td></tr>" for i in o.inputs)
                parts.append("<table><tr><th>input</th><th>here</th><th>reference</th><th>differs</th><th></th></tr>"
                             f"{rows}</table>")
        bad = [r for r in self.rows if r["drifts"]]
        parts.append(f"<details><summary>{len(self.rows)} values compared, {len(bad)} drift</summary>"
                     f"{self.table().to_html(index=False, max_rows=200)}</details>")
        return "".join(parts)


def _pairs(here: Side, there: Side, cps: dict[int, int]) -> list[_Pair]:
    """Every value of the stage with a counterpart (``cps``: ``counterparts(here, there)``), in the stage's
    order, then the outputs of @main."""
    out: list[_Pair] = []
    seen: set = set()
    for p in here.tap.points:
        q = there.tap.points[cps[p.index]] if p.index in cps else None
        for r, k in (result_pairs(p, q) if q is not None else ()):
            t = p.types[r]
            if value_shape(t) is None:
                continue
            d = here.describe(p)
            name = d["result"] or p.op
            out.append(_Pair(("op", p.index, r), ("op", q.index, k), p, q,
                             f"{name}#{r} ({p.op})" if len(p.types) > 1 else f"{name} ({p.op})", value_bytes(t)))
            seen.add((("op", p.index, r), ("op", q.index, k)))
    for i, (a, b) in enumerate(zip(here.tap.results, there.tap.results)):
        ta, tb = here.tap.value_type(a) if a[0] != "other" else "", there.tap.value_type(b) if b[0] != "other" else ""
        if (a, b) in seen or ta != tb or value_shape(ta) is None:
            continue
        out.append(_Pair(a, b, None, None, f"output {i}", value_bytes(ta)))
    return out


def _spread(candidates: list[int], pairs: list[_Pair], budget: int) -> list[int]:
    """As many of ``candidates`` as fit ``budget`` bytes and ``TAP_VALUES``, evenly spread over them; all of
    them where they fit. At least ``_LEAST`` (seven values cost little more than one, and a round then cuts
    the interval eight ways), where ``array_limit()`` allows them (``probe`` checks)."""
    if len(candidates) <= TAP_VALUES and sum(pairs[i].nbytes for i in candidates) <= budget:
        return list(candidates)
    k = min(len(candidates), TAP_VALUES + 1)
    while k > _LEAST:
        k = max(_LEAST, k - 1 if k > TAP_VALUES else k // 2)
        picked = _evenly(candidates, k)
        if sum(pairs[i].nbytes for i in picked) <= budget:
            return picked
    return _evenly(candidates, min(_LEAST, len(candidates)))


def _evenly(candidates: list[int], k: int) -> list[int]:
    """``k`` of ``candidates`` cutting them into ``k + 1`` near-equal parts."""
    n = len(candidates)
    return sorted({candidates[min(n - 1, (j + 1) * n // (k + 1))] for j in range(k)})


def _locate(search: Probe, pairs: list[_Pair], budget: int, good: int, bad: int | None,
            checks: dict[int, tuple[LeafCheck, int]], first: tuple[int, ...] = (),
            excluded: frozenset | set = frozenset()) -> tuple[int, int | None]:
    """Narrow (good, bad) -- the last pair known good and the first known to drift (None: none yet) --
    until they are neighbours or nothing in between drifts. ``first``: pairs the first round compares too
    (the outputs: they come back from every run anyway); ``excluded``: pairs found not to be counterparts."""
    end = len(pairs)
    while True:
        hi = bad if bad is not None else end
        candidates = [i for i in range(good + 1, hi) if i not in checks and i not in excluded]
        if not candidates:
            return good, bad
        if search.covers([pairs[i] for i in candidates]):  # fetched already (a side tapped whole): all at once
            picked = sorted(set(candidates) | {i for i in first if i not in checks})
        else:
            picked = sorted(set(_spread(candidates, pairs, budget)) | {i for i in first if i not in checks})
        first = ()
        for i, c in zip(picked, search.probe([pairs[i] for i in picked])):
            checks[i] = (c, search.probes)
        drifting = [i for i in picked if not checks[i][0].passed and i not in excluded and (bad is None or i < bad)]
        if drifting:
            bad = drifting[0]
        good = max([good] + [i for i in picked if checks[i][0].passed and (bad is None or i < bad)])
        if bad is None:  # nothing drifts among the values compared (all of them, where they fit)
            return good, None
        if all(i in checks or i in excluded for i in range(good + 1, bad)):
            return good, bad


def _describe_value(side: Side, value: Value) -> tuple[str, str]:
    """(what a value is, in words; the user's line it came from)."""
    if value[0] == "arg":
        return f"argument {value[1]} of @main", ""
    if value[0] != "op":
        return "a value of an enclosing region", ""
    d = side.describe(side.tap.points[value[1]])
    return f"{d['result'] or '?'} = {d['op']} (line {d['line'] + 1})", d["source"]


_COMMUTATIVE = {"stablehlo." + n for n in ("add", "multiply", "maximum", "minimum", "and", "or", "xor")}


def _matches(a: Value, b: Value, paired: dict[int, int]) -> bool:
    return a == b if a[0] == "arg" else (a[0] == "op" == b[0] and paired.get(a[1]) == b[1] and a[2] == b[2])


def _aligned(p: TapPoint, q: TapPoint, paired: dict[int, int]) -> tuple:
    """``q``'s operands in the order of ``p``'s: a commutative op whose operands a pass swapped, swapped back."""
    ops = tuple(q.operands)
    if p.op in _COMMUTATIVE and len(ops) == 2:
        direct = _matches(p.operands[0], ops[0], paired) + _matches(p.operands[1], ops[1], paired)
        if _matches(p.operands[0], ops[1], paired) + _matches(p.operands[1], ops[0], paired) > direct:
            return ops[::-1]
    return ops


def _inputs(search: Probe, pair: _Pair, paired: dict[int, int], stages: list[Stage]) -> list[DriftInput]:
    """The operands of the op found next to its counterpart's, compared in one probe; each differing one
    made by an op without a counterpart says which stage made (or removed) that op."""
    here, there = search.here, search.there
    p, q = pair.point, pair.other
    if p is None or q is None or len(p.operands) != len(q.operands):
        return []
    rows, todo = [], []
    for k, (a, b) in enumerate(zip(p.operands, _aligned(p, q, paired))):
        ok = "other" not in (a[0], b[0]) and here.tap.value_type(a) == there.tap.value_type(b) \
            and value_shape(here.tap.value_type(a)) is not None
        rows.append((k, a, b, ok))
        if ok:
            todo.append(_Pair(a, b, None, None, f"input {k}", value_bytes(here.tap.value_type(a))))
    checks = dict(zip([r[0] for r in rows if r[3]], search.probe(todo))) if todo else {}
    out = []
    for k, a, b, ok in rows:
        mine, source = _describe_value(here, a)
        theirs, their_source = _describe_value(there, b)
        c = checks.get(k)
        note, what, changed, change = _entered(search, a, b, paired, stages) if c is None or not c.passed \
            else ("", "", None, ())
        out.append(DriftInput(k, mine, theirs, None if c is None else not c.passed, None if c is None else c.max_abs,
                              None if c is None else c.tolerance, note, their_source or source, changed, change,
                              what, _operand_keys(here, a) | _operand_keys(there, b)))
    return out


def _entered(search: Probe, a: Value, b: Value, paired: dict[int, int], stages: list[Stage]):
    """Where a differing (or incomparable) input came from, when one side computes it with an op the other
    lacks: (words -- what it is here, an argument, a constant, an op a pass made, and what the reference
    computes it with, an op a pass removed, each with the stage that did it --, the same words without those
    stages, the stage that removed or made that op, (kind, source positions, removed?)); ("", "", None, ())
    where both sides' ops are counterparts."""
    here, there = search.here, search.there
    names = {s.name for s in stages}
    theirs, their_who, changed, change = "", "", None, ()
    if b[0] == "op" and b[1] not in paired.values():
        q = there.tap.points[b[1]]
        d = there.describe(q)
        gone = removed_by(stages, there.stage.name, here.stage.name, q.op, there.keys(q)) \
            if {there.stage.name, here.stage.name} <= names else None
        theirs = (f"the reference computes it with {d['result']} = {q.op} (line {d['line'] + 1}"
                  f"{', ' + d['source'] if d['source'] else ''}), which has no counterpart here")
        if gone is not None:
            their_who, changed, change = f": {_by(gone, 'removed')}", gone.name, (q.op, there.keys(q), True)
    mine, my_who = "", ""
    if a[0] == "op" and a[1] not in paired:
        p = here.tap.points[a[1]]
        d = here.describe(p)
        if p.op == "stablehlo.constant":
            mine = f"here it is the constant {d['result']} = {p.value} (line {d['line'] + 1})"
        else:
            made = made_by(stages, here.stage.name, p.op, here.keys(p)) if here.stage.name in names else None
            mine = f"here it is {d['result']} = {p.op} (line {d['line'] + 1}), which the reference does not have"
            if made is not None:
                my_who = f": {_by(made, 'made')}"
            if made is not None and changed is None:
                changed, change = made.name, (p.op, here.keys(p), False)
    elif a[0] == "arg" and theirs:
        mine = f"here it is argument {a[1]} of @main as given"
    said = "; ".join(x for x in (mine + my_who, theirs + their_who) if x)
    return said, "; ".join(x for x in (mine, theirs) if x), changed, change


def _operand_keys(side: Side, value: Value) -> frozenset:
    return side.keys(side.tap.points[value[1]]) if value[0] == "op" else frozenset()


def _by(stage: Stage, did: str) -> str:
    """Which stage made or removed an op, in words: a stage edited by hand says so."""
    return f"{did} by the hand edit of {stage.name}" if stage.edit == "text" else f"{did} by {stage.name}"


def _described(side: Side, point: TapPoint | None, label: str) -> dict:
    """``side.describe(point)``; for an output of @main (no point), its label as the result."""
    return side.describe(point) if point is not None else {**side.describe(None), "result": label}


def _row(k: int, pair: _Pair, check: LeafCheck, probe: int, here: Side, there: Side) -> dict:
    d, e = _described(here, pair.point, pair.label), _described(there, pair.other, pair.label)
    return {"order": k, "result": d["result"], "op": d["op"], "line": d["line"] + 1 if d["line"] >= 0 else None,
            "reference_result": e["result"], "reference_op": e["op"],
            "reference_line": e["line"] + 1 if e["line"] >= 0 else None, "source": d["source"],
            "max_abs": check.max_abs, "tolerance": check.tolerance, "rule": check.rule, "drifts": not check.passed,
            "probe": probe}


def find_drift(ex, here: Side, there: Side, device: str, args=None, budget: int | None = None,
               reference_device: str | None = None, cache: TapCache | None = None) -> Drift:
    """The first op of ``here``'s stage whose value drifts from its counterpart in ``there`` (see the
    module's docstring), on ``device`` with ``args`` (None: the run's own), tapping at most ``budget``
    bytes a side a round (default ``TAP_BYTES``); ``there`` runs on ``reference_device`` (default: the
    same), so a TPU's values can be held against the CPU's. ``cache``: the compiled tap modules and reference
    values of earlier searches of the same trace (``drift_values.TapCache``)."""
    budget = TAP_BYTES if budget is None else budget
    paired = counterparts(here, there)
    pairs = _pairs(here, there, paired)
    if not pairs:
        raise WorkbenchError(f"no value of {here.stage.name!r} has a counterpart in {there.stage.name!r} to compare "
                             "(no op with the same source position and type, and no output of the same type)")
    search = Probe(ex, here, there, device, args, reference_device, cache if cache is not None else cache_of(ex),
                   budget)
    search.preload()
    checks: dict[int, tuple[LeafCheck, int]] = {}
    returned = set(here.tap.results)
    outputs = tuple(i for i, p in enumerate(pairs) if p.here in returned)
    good, bad = _locate(search, pairs, budget, -1, None, checks, first=outputs)
    outputs_drift = any(not checks[i][0].passed for i in outputs if i in checks)
    quiet = [i for i, (c, _) in checks.items() if not c.passed] if not outputs_drift else []
    if not outputs_drift:  # nothing to localize: what differs is computed otherwise, and the outputs agree
        bad = None
    stages = list(ex.stages)
    settled, excluded = _settle(search, pairs, budget, good, bad, checks, paired, stages)
    bad, inputs = settled if settled is not None else (None, [])
    rows = tuple(_row(k, pairs[k], c, n, here, there) for k, (c, n) in sorted(checks.items()))
    found = _found(pairs[bad], checks[bad][0], inputs, here, there, stages) if bad is not None else None
    note = (f"the reference ran on {reference_device}, the stage on {device}. "
            if reference_device and reference_device != device else "")
    if quiet:
        note += (f"the outputs agree within noise, and {len(quiet)} intermediate value(s) differ from the op paired "
                "with them (a rewrite computes them otherwise, or a difference the program masks): see table(); "
                "a drift is looked for where the outputs drift")
    if excluded:
        note += (" " if note else "") + (f"{len(excluded)} pair(s) set aside: an input agreed with its own "
                                         "counterpart and not with the paired op's, so they were not counterparts")
    line = found.source if found is not None else ""
    for i in (found.inputs if found is not None else ()):
        if i.differs and i.note and i.source:
            line = i.source
            break
    return Drift(here.stage.name, there.stage.name, device, found, line, outputs_drift, search.runs, search.probes,
                 len(here.tap.points), len(pairs), search.rule, rows, note, _module_args(ex, args))


def _module_args(ex, args) -> tuple:
    """The arrays ``@main`` took in the search: a traced function's as its module sees them, a text
    module's as given (or saved); () where they were seeded (they can be made again)."""
    traced = ex.spec.traced
    if traced is not None:
        return tuple(traced.module_args(args))
    loaded = ex.spec.loaded
    given = args if args is not None else (loaded.args if loaded is not None and loaded.args else None)
    return tuple(given) if given is not None else ()


def _settle(search: Probe, pairs: list[_Pair], budget: int, good: int, bad: int | None, checks: dict,
            paired: dict[int, int], stages: list[Stage]):
    """((the pair found, its inputs) or None, the pairs set aside): the inputs of the pair found are compared;
    where one drifted before it unseen (the values drifted and came back), the search goes on before it; where
    one agrees with its own counterpart but not with the paired op's operand, the pair is no pair (set aside)
    and the next drifting pair is taken. At most ``_RESTARTS`` times: then the last pair stands."""
    excluded: set[int] = set()
    for attempt in range(_RESTARTS + 1):
        if bad is None:
            return None, excluded
        inputs = _inputs(search, pairs[bad], paired, stages)
        verdict, k = _consistency(pairs, bad, inputs, checks)
        if verdict == "ok" or attempt == _RESTARTS:  # the last try stands as found
            return (bad, inputs), excluded
        if verdict == "earlier" and k not in checks:  # compared as an input only: compared as itself now
            checks[k] = (search.probe([pairs[k]])[0], search.probes)
            verdict = "earlier" if not checks[k][0].passed else "inconsistent"
        if verdict == "earlier":
            good = max([-1] + [i for i in checks if i < k and checks[i][0].passed])
            good, bad = _locate(search, pairs, budget, good, k, checks, excluded=excluded)
            continue
        excluded.add(bad)
        bad = min([i for i, (c, _) in checks.items() if not c.passed and i not in excluded], default=None)
        good = max([-1] + [i for i in checks if (bad is None or i < bad) and checks[i][0].passed])
        if bad is not None:
            good, bad = _locate(search, pairs, budget, good, bad, checks, excluded=excluded)
    return None, excluded


def _consistency(pairs: list[_Pair], bad: int, inputs: list[DriftInput], checks: dict) -> tuple[str, int | None]:
    """"ok"; "earlier", k: input pair k drifts and was not seen to; "inconsistent", k: input pair k agrees
    with its own counterpart, and differs from the operand of the op paired with the one found."""
    p = pairs[bad].point
    if p is None:
        return "ok", None
    index = {pair.here: k for k, pair in enumerate(pairs)}
    for i in inputs:
        k = index.get(p.operands[i.position])
        if not i.differs or k is None or k >= bad:
            continue
        if k in checks and checks[k][0].passed:
            return "inconsistent", k
        return "earlier", k
    return "ok", None


def _found(pair: _Pair, check: LeafCheck, inputs: list[DriftInput], here: Side, there: Side,
           stages: list[Stage]) -> DriftOp:
    p = pair.point
    d, e = _described(here, p, pair.label), _described(there, pair.other, pair.label)
    made = None
    if p is not None and here.stage.name in {s.name for s in stages}:
        made = made_by(stages, here.stage.name, p.op, here.keys(p))
    key = (here.keys(p), p.types, p.op) if p is not None else ()
    changed, change = next(((i.changed_by, i.change) for i in inputs if i.changed_by), (None, ()))
    if changed is None and made is not None:
        changed, change = made.name, (p.op, here.keys(p), False)
    edited = {s.name for s in stages if s.edit == "text"}
    cause = None if changed is None else Cause("edit" if changed in edited else "stage", changed)
    return DriftOp(here.stage.name, d["result"], d["op"], d["line"], d["text"], d["source"], e, check, tuple(inputs),
                   made.name if made is not None else None, (made.produced_by or "") if made is not None else "",
                   bool(p is not None and p.op in _CONTROL_FLOW), key, changed_by=changed, change=change, cause=cause)


def value_drifts(ex, here: Side, there: Side, key: tuple, device: str, args=None,
                 cache: TapCache | None = None) -> bool | None:
    """Whether the op of ``here`` known by ``key`` (``DriftOp.key``) drifts from its counterpart: one probe
    (the reference's values from ``cache`` where an earlier question measured them). None where the stage has
    no such op with a counterpart."""
    pairs = [p for p in _pairs(here, there, counterparts(here, there)) if p.point is not None
             and (here.keys(p.point), p.point.types, p.point.op) == key]
    if not pairs:
        return None
    cache = cache if cache is not None else cache_of(ex)
    search = Probe(ex, here, there, device, args, cache=cache, whole_here=False, whole_there=cache is not None)
    return not search.probe(pairs[:1])[0].passed
