"""What XLA says each instruction of an HLO stage costs: its own HloCostAnalysis, one instruction at a time,
every computation that runs counted as often as it runs.

jaxlib reports HloCostAnalysis for a whole module only. To get it per instruction, each instruction is put
alone into a module of its own: its operands become parameters of the same shapes, and the computations it
calls (a fusion's fused computation, a reduce's reducer) come along. XLA parses that module and analyses it.

Which instructions are rows, and how often each runs -- the one loop-counting rule of the cost tables, the
analytic model's in the MLIR stages (``model.py``) and this one in XLA's:

* a ``call`` is opened up: its callee's instructions are rows, once per call (an unoptimized module's entry
  is one call of the lowered function);
* a ``while`` is opened up: its body's instructions are rows that run ``trip count`` times, its condition's
  ``trip count + 1`` times, the trip count read by ``loops.hlo_trip_count`` (XLA's own
  ``known_trip_count`` where its while-loop analysis wrote one, else the loop's counter read from its
  condition). Where it cannot be read the body and condition count once, as XLA counts every loop, and
  the while's row says so (``loops_unknown`` in the totals);
* a ``conditional`` is opened up: the branch with the most flops (per run, its own loops multiplied) counts,
  whole, once per run, as the analytic model counts ``stablehlo.case``; the other branches' rows are
  listed, counting 0, and say why (XLA itself takes each property's maximum over the branches);
* a ``fusion`` is one row (one kernel): XLA's cost of its fused computation, at the fusion instruction;
  reducers, sort comparators and other applied computations are counted by XLA in the instruction that
  applies them.

A computation reached from several places is listed once, at its first call, with ``runs`` its runs per
execution of the module summed over the places that run it (each times the trip counts around it), so the
rows stay as many as the module's instructions where the call tree is exponential.

XLA's own total for the whole module (``hlo_module_cost``, and ``xla_*`` in the cost table) counts each loop
body once: that is XLA's number, kept beside the workbench's. ``hlo_loop_costs`` gives the workbench's totals
for many modules at once, cheaper than the rows: one module per computation that runs (its while, call and
conditional instructions and its custom calls turned into parameters, so that XLA costs its own
instructions only), each analysed once however many stages share it; HloCostAnalysis adds up over
instructions, so those totals equal the rows' sums (the tests check it).

XLA's HLO parser and analysis run in the worker process: a module put together this way can fail a
CHECK inside XLA, which would end the kernel. An instruction that does is reported in its row.

The work stays linear in the module's text: the module is read once, each computation's shapes are
mapped and each called computation printed at most once, each loop's trip count read from a constant
number of its instructions, and each instruction's module holds its own line, its operands' shapes and
the computations it calls. ``hlo_work`` counts that work (without asking XLA), as ``model.model_work``
does for the analytic model. Only a computation that many analysed instructions call (one reducer shared
by many reduces) is copied into each of their modules.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import ModuleParseError
from ...ir.hlo import (Computation, HloModule, Instruction, attribute_value, drop_attribute, has_opcode, read_hlo,
                       strip_debug_info)
from ...ir.text import text_hash
from .hlo_whole import hlo_module_cost, hlo_module_costs
from .loops import HloIndex, hlo_trip_count
from .work import counter

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["HLO_COLUMNS", "HloLoopCost", "HloWork", "hlo_loop_costs", "hlo_op_costs", "hlo_module_cost",
           "hlo_module_costs", "hlo_work"]

HLO_COLUMNS = ("computation", "name", "op", "shape", "runs", "flops", "transcendentals", "bytes", "note")

# Instructions whose callees run in their place: their instructions are the rows (see the module's docstring).
_OPENED = ("call", "while", "conditional")
_KEYS = ("flops", "transcendentals", "bytes accessed")


@dataclasses.dataclass(frozen=True)
class HloWork:
    """What ``hlo_op_costs`` does to one module before XLA sees it, counted as it does it.

    ``instructions``: the module's instructions as read; ``visited``: instruction visits of the walks
    that pick the rows and weigh their runs (about two per instruction of each computation that runs);
    ``shapes_mapped``: instructions entered into the per-computation maps of operand shapes (each
    computation mapped once); ``indexed``: instructions entered into the per-computation maps that loops'
    trip counts are read from (each computation at most once); ``computations_printed``: called
    computations printed for the modules (each at most once); ``fused_counted``: instructions counted for
    the fusions' notes (each fused computation once); ``modules`` and ``module_chars``: the
    one-instruction modules sent to XLA and their size; ``opened``: the while and conditional
    instructions, rows that XLA does not see (their callees' instructions are rows);
    ``computation_modules`` and ``computation_chars``: the one-computation modules ``hlo_loop_costs``
    would send for the same module, and their size.
    """

    instructions: int
    visited: int
    shapes_mapped: int
    indexed: int
    computations_printed: int
    fused_counted: int
    modules: int
    module_chars: int
    opened: int
    computation_modules: int
    computation_chars: int


# the fields of HloWork counted while the work is done (the others are read at the end)
_Counter = counter(HloWork, "visited", "shapes_mapped", "indexed", "computations_printed", "fused_counted")


@dataclasses.dataclass(frozen=True)
class _Opening:
    """An instruction whose callees run in its place: a call (its callee), a while (condition, body; its trip
    count, None where unknown, and where it was read or why not) or a conditional (its branches, in order)."""

    kind: str
    name: str
    callees: tuple[str, ...]
    trips: int | None = None
    how: str = ""


@dataclasses.dataclass(frozen=True)
class _Weights:
    """How often each computation runs per execution of the module (``runs``), the branch each conditional
    counts (by (computation, instruction)), and why each computation runs as often as it does (a few words)."""

    runs: dict[str, int]
    chosen: dict[tuple[str, str], str]
    why: dict[str, str]


def _line(ins: Instruction, root: bool | None = None) -> str:
    attrs = drop_attribute(drop_attribute(ins.attributes, "metadata"), "control-predecessors")
    head = "ROOT " if (ins.root if root is None else root) else ""
    return f"  {head}%{ins.name} = {ins.shape} {ins.opcode}({ins.operands})" + (f", {attrs}" if attrs else "")


def _computation_text(c: Computation) -> str:
    return f"%{c.name} {{\n" + "\n".join(_line(i) for i in c.instructions) + "\n}"


class _Module:
    """The parsed HLO text, with what building one-instruction modules needs."""

    def __init__(self, text: str):
        self.hlo: HloModule = read_hlo(strip_debug_info(text))
        if self.hlo.entry is None:
            raise ModuleParseError("this is not XLA HLO text: it has no ENTRY computation")
        self.by_name = {c.name: c for c in self.hlo.computations}
        self.position = {c.name: i for i, c in enumerate(self.hlo.computations)}
        self.callees: dict[tuple[str, str], list[str]] = {}  # (computation, instruction) -> callees
        self.named: dict[tuple[str, str], dict[str, list[str]]] = {}  # ... -> {attribute: callees}
        self.calls_of: dict[str, list[str]] = {}
        for call in self.hlo.calls:
            self.callees.setdefault((call.caller, call.instruction.name), []).append(call.callee)
            self.named.setdefault((call.caller, call.instruction.name), {}).setdefault(call.attribute, []).append(
                call.callee)
            self.calls_of.setdefault(call.caller, []).append(call.callee)
        self._shapes: dict[str, dict[str, str]] = {}
        self._texts: dict[str, str] = {}
        self._fused_ops: dict[str, int] = {}
        self._indexes: dict[str, HloIndex] = {}
        self.openings: dict[str, list[_Opening]] = {}  # per computation that runs, filled by the walk
        self.order: list[str] = []  # the computations that run, each before those it opens
        self.count = _Counter()

    def reachable(self, names: list[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.calls_of.get(n, ()))
        return seen

    def alone(self, comp: Computation, ins: Instruction) -> str:
        """A module whose entry computes ``ins`` from parameters shaped like its operands."""
        if comp.name not in self._shapes:
            self._shapes[comp.name] = {i.name: i.shape for i in comp.instructions}
            self.count.shapes_mapped += len(comp.instructions)
        shapes = self._shapes[comp.name]
        operands = [o for o in dict.fromkeys(ins.operand_names) if o in shapes]
        params = [f"  %{o} = {shapes[o]} parameter({k})" for k, o in enumerate(operands)]
        entry = "ENTRY %one_instruction {\n" + "\n".join(params + [_line(ins, root=True)]) + "\n}"
        return self._with_callees(self.callees.get((comp.name, ins.name), []), entry)

    def computation_alone(self, name: str) -> tuple[str, int]:
        """A module whose entry is computation ``name`` with its opened instructions (while, call,
        conditional) and its custom calls made parameters, so that XLA costs its own instructions only;
        and how many custom calls it has."""
        comp = self.by_name[name]
        opened = {o.name for o in self.openings.get(name, ())}
        k = sum(i.opcode == "parameter" for i in comp.instructions)
        lines, need, custom = [], [], 0
        for ins in comp.instructions:
            if ins.name in opened or ins.opcode == "custom-call":
                custom += ins.opcode == "custom-call"
                lines.append(f"  {'ROOT ' if ins.root else ''}%{ins.name} = {ins.shape} parameter({k})")
                k += 1
            else:
                lines.append(_line(ins))
                need += self.callees.get((name, ins.name), [])
        self.count.visited += len(comp.instructions)
        entry = "ENTRY %one_computation {\n" + "\n".join(lines) + "\n}"
        return self._with_callees(need, entry), custom

    def _with_callees(self, callees: list[str], entry: str) -> str:
        need = sorted(self.reachable(callees), key=self.position.__getitem__)
        return "HloModule one_instruction\n\n" + "\n\n".join([self._text(n) for n in need] + [entry]) + "\n"

    def _text(self, name: str) -> str:
        if name not in self._texts:
            self._texts[name] = _computation_text(self.by_name[name])
            self.count.computations_printed += 1
        return self._texts[name]

    def _index(self, name: str) -> HloIndex:
        if name not in self._indexes:
            self._indexes[name] = HloIndex(self.by_name[name])
            self.count.indexed += len(self.by_name[name].instructions)
        return self._indexes[name]

    def fused_ops(self, name: str) -> int:
        """The instructions of fused computation ``name``, parameters aside (counted once per computation)."""
        if name not in self._fused_ops:
            instructions = self.by_name[name].instructions
            self._fused_ops[name] = sum(i.opcode != "parameter" for i in instructions)
            self.count.fused_counted += len(instructions)
        return self._fused_ops[name]

    def _opening(self, comp: Computation, ins: Instruction) -> _Opening | None:
        """What runs in place of ``ins``: a call's callee, a while's condition and body, a conditional's
        branches; None for any other instruction (and one whose callees cannot be told apart)."""
        if ins.opcode not in _OPENED:
            return None
        named = self.named.get((comp.name, ins.name), {})
        if ins.opcode == "call":
            callees = self.callees.get((comp.name, ins.name), [])
            return _Opening("call", ins.name, (callees[0],)) if len(callees) == 1 else None
        if ins.opcode == "while":
            (cond,), (body,) = named.get("condition", [None]), named.get("body", [None])
            if cond is None or body is None:
                return None
            trips, how = hlo_trip_count(ins, self._index(comp.name), self._index(cond), self._index(body))
            return _Opening("while", ins.name, (cond, body), trips, how)
        branches = named.get("branch_computations") or (named.get("true_computation", []) +
                                                         named.get("false_computation", []))
        return _Opening("conditional", ins.name, tuple(branches)) if branches else None

    def rows(self) -> list[tuple[Computation, Instruction, _Opening | None]]:
        """The instructions to cost, in the order met: those of the entry and of every computation it runs
        (calls, loops and conditionals opened up, see the module's docstring), each with its opening if it
        is a while or a conditional (a row that XLA does not see); ``openings`` and ``order`` filled.
        One depth-first walk that opens each computation at its first call; iterative: no stack limit
        on a deep chain."""
        entry = self.hlo.entry
        found: list[tuple[Computation, Instruction, _Opening | None]] = []
        opened = {entry.name}
        self.openings = {entry.name: []}
        stack = [(entry, iter(entry.instructions))]
        while stack:
            comp, pending = stack[-1]
            ins = next(pending, None)
            self.count.visited += 1
            if ins is None:
                stack.pop()
                continue
            opening = self._opening(comp, ins)
            if opening is None:
                if ins.opcode != "parameter":
                    found.append((comp, ins, None))
                continue
            self.openings[comp.name].append(opening)
            if opening.kind != "call":
                found.append((comp, ins, opening))
            for callee in reversed(opening.callees):
                if callee not in opened:
                    opened.add(callee)
                    self.openings[callee] = []
                    stack.append((self.by_name[callee], iter(self.by_name[callee].instructions)))
        self.order = self._callers_first()
        return found

    def _callers_first(self) -> list[str]:
        """The computations that run, each after every computation that opens it (Kahn's order)."""
        waiting = dict.fromkeys(self.openings, 0)
        for ops in self.openings.values():
            for o in ops:
                for callee in set(o.callees):
                    waiting[callee] += 1
        ready = [self.hlo.entry.name]
        order: list[str] = []
        while ready:
            name = ready.pop()
            order.append(name)
            for o in self.openings[name]:
                for callee in set(o.callees):
                    waiting[callee] -= 1
                    if waiting[callee] == 0:
                        ready.append(callee)
        return order

    def weights(self, own: dict[str, tuple[int, int, int]], once: bool = False) -> _Weights:
        """How often each computation runs, from ``own`` (each computation's own cost per run: flops,
        transcendentals, bytes); with ``once`` every loop body and condition counts once, as XLA counts them."""
        per: dict[str, tuple[int, int, int]] = {}
        chosen: dict[tuple[str, str], str] = {}
        for name in reversed(self.order):  # callees first: a callee's cost per run is final when read
            total = list(own.get(name, (0, 0, 0)))
            for o in self.openings[name]:
                if o.kind == "conditional":
                    pick = max(o.callees, key=lambda b: (per[b][0], per[b][2]))
                    chosen[name, o.name] = pick
                    parts = [(pick, 1)]
                elif o.kind == "while":
                    trips = 1 if o.trips is None else o.trips
                    parts = [(o.callees[0], trips + (o.trips is not None)), (o.callees[1], trips)]
                else:
                    parts = [(o.callees[0], 1)]
                for callee, times in parts:
                    total = [t + times * c for t, c in zip(total, per[callee])]
            per[name] = (total[0], total[1], total[2])
        runs = dict.fromkeys(self.order, 0)
        runs[self.hlo.entry.name] = 1
        why: dict[str, list[str]] = {}
        for name in self.order:  # callers first: a caller's runs are final when read
            self.count.visited += len(self.openings[name])
            for o in self.openings[name]:
                if o.kind == "conditional":
                    pick = chosen[name, o.name]
                    parts = [(b, int(b == pick), f"the branch of %{o.name} that counts" if b == pick else
                              f"a branch of %{o.name} that does not count (%{pick} has more flops)")
                             for b in dict.fromkeys(o.callees)]
                elif o.kind == "while":
                    trips = 1 if o.trips is None or once else o.trips
                    cond = trips + (o.trips is not None and not once)
                    known = "" if o.trips is None else f"trip count {o.trips}"
                    parts = [(o.callees[0], cond, f"condition of %{o.name}" + (f", {known} + 1" if known else "")),
                             (o.callees[1], trips, f"body of %{o.name}" + (f", {known}" if known else ""))]
                else:
                    parts = [(o.callees[0], 1, f"called by %{o.name}")]
                for callee, times, words in parts:
                    runs[callee] += runs[name] * times
                    why.setdefault(callee, []).append(words)
        return _Weights(runs, chosen, {k: "; ".join(v[:3]) + (f"; {len(v) - 3} more" if len(v) > 3 else "")
                                       for k, v in why.items()})


def _count(value: float | None) -> int | None:
    """XLA's float count as an integer; XLA writes -1 for what it cannot cost (custom calls)."""
    if value is None or value < 0:
        return None
    return int(round(value))


_Row = tuple[Computation, Instruction, "_Opening | None"]


def _prepared(text: str) -> tuple[_Module, list[_Row], list[str]]:
    """The module read, the instructions to cost (with their openings), and the module of each for XLA (the
    opened while and conditional instructions have none: their callees' instructions are rows)."""
    module = _Module(text)
    found = module.rows()
    return module, found, [module.alone(c, i) for c, i, o in found if o is None]


def _add(into: dict[str, tuple[int, int, int]], name: str, values: Sequence[int | None]) -> None:
    old = into.get(name, (0, 0, 0))
    into[name] = (old[0] + (values[0] or 0), old[1] + (values[1] or 0), old[2] + (values[2] or 0))


@functools.lru_cache(maxsize=64)
def _op_costs(_key: str, text: str) -> pd.DataFrame:
    import pandas as pd

    module, found, texts = _prepared(text)
    analyses = iter(hlo_module_costs(texts))
    costs: list[tuple[int | None, ...] | str] = []
    own: dict[str, tuple[int, int, int]] = {}
    for comp, ins, opening in found:
        if opening is not None:  # its callees' rows cost it
            costs.append((0, 0, 0))
            continue
        a = next(analyses)
        if not isinstance(a, str):
            a = tuple(_count(a.get(k, 0.0)) for k in _KEYS)
            _add(own, comp.name, a)
        costs.append(a)
    weights = module.weights(own)
    rows = []
    for (comp, ins, opening), c in zip(found, costs):
        runs = weights.runs[comp.name]
        row = {"computation": comp.name, "name": ins.name, "op": ins.opcode, "shape": ins.shape, "runs": runs}
        if isinstance(c, str):
            row.update(flops=None, transcendentals=None, bytes=None, note=c)
        else:
            unknown = c[0] is None or c[2] is None
            note = "XLA cannot cost it (custom call)" if unknown else _note(module, comp, ins, opening, weights)
            if runs != 1:
                note = "; ".join(n for n in (note, _runs_note(comp.name, runs, weights)) if n)
            row.update(flops=_times(c[0], runs), transcendentals=_times(c[1], runs), bytes=_times(c[2], runs),
                       note=note)
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(HLO_COLUMNS))
    for c in ("runs", "flops", "transcendentals", "bytes"):
        df[c] = pd.array(df[c].tolist(), dtype="Int64")
    whiles = [o for ops in module.openings.values() for o in ops if o.kind == "while"]
    df.attrs["loops"] = len(whiles)
    df.attrs["loops_unknown"] = sum(o.trips is None for o in whiles)
    return df


def _times(value: int | None, runs: int) -> int | None:
    return None if value is None else value * runs


def _runs_note(name: str, runs: int, weights: _Weights) -> str:
    why = weights.why.get(name, "")
    if runs == 0:
        return f"counts 0 times: %{name} is {why or 'never run'}"
    return f"%{name} runs {runs} times ({why}): XLA's cost of one run, x{runs}"


def _note(module: _Module, comp: Computation, ins: Instruction, opening: _Opening | None = None,
          weights: _Weights | None = None) -> str:
    if opening is not None and opening.kind == "while":
        cond, body = opening.callees
        if opening.trips is None:
            return (f"loop of unknown trip count ({opening.how}): its body %{body} and condition %{cond} count "
                    "once, as XLA counts every loop")
        return (f"loop: trip count {opening.trips} ({opening.how}); its body %{body} runs x{opening.trips}, its "
                f"condition x{opening.trips + 1}: their instructions are rows")
    if opening is not None:
        pick = weights.chosen.get((comp.name, ins.name), "") if weights else ""
        return (f"conditional of {len(opening.callees)} branches: its costliest branch (by flops) %{pick} counts, "
                "whole, its others 0 (XLA's own analysis takes each number's maximum over the branches)")
    callees = module.callees.get((comp.name, ins.name), [])
    if ins.opcode == "fusion" and callees:
        kind = attribute_value(ins.attributes, "kind") or ""
        return f"{kind + ' ' if kind else ''}fusion of {module.fused_ops(callees[0])} ops"
    return ""


def hlo_op_costs(text: str) -> pd.DataFrame:
    """One row per instruction of an HLO module that runs, costed by XLA's own HloCostAnalysis on CPU:
    ``computation, name, op, shape, runs, flops, transcendentals, bytes, note``.

    The rows are the entry's instructions and those of every computation it runs in their place -- calls,
    while loops and conditionals opened up (the module's docstring says how) --, each costed for all its
    ``runs`` in one execution of the module (loop bodies times their trip counts, condition times trip count
    + 1; where a trip count is unknown, once, and the while's row says so). A fusion is one row (one kernel);
    a while or conditional instruction is a row that costs 0 and says what it runs. Unknown costs (custom
    calls, an instruction XLA refused to analyse alone) are ``<NA>`` with the reason in ``note``.
    ``attrs["loops"]`` and ``attrs["loops_unknown"]``: the while loops that run, and those of unknown trip
    count. Raises ModuleParseError for text that is not HLO.
    """
    df = _op_costs(text_hash(text), text)
    out = df.copy()
    out.attrs = dict(df.attrs)
    return out


def hlo_work(text: str) -> HloWork:
    """The work ``hlo_op_costs(text)`` and ``hlo_loop_costs([text])`` do on their side, before and besides XLA's
    analyses: counted by the same code, without asking XLA (see ``HloWork``). For tests and benchmarks: it
    must grow with the module's text, never with its square."""
    module, found, texts = _prepared(text)
    for comp, ins, opening in found:
        _note(module, comp, ins, opening)
    module.weights({})
    pieces = [module.computation_alone(name)[0] for name in module.order]
    return module.count.done(modules=len(texts), module_chars=sum(map(len, texts)),
                             opened=sum(o is not None for _, _, o in found), computation_modules=len(pieces),
                             computation_chars=sum(map(len, pieces)),
                             instructions=sum(len(comp.instructions) for comp in module.hlo.computations))


@dataclasses.dataclass(frozen=True)
class HloLoopCost:
    """The workbench's totals for one HLO module: XLA's HloCostAnalysis of each computation that runs, times
    its runs (loop bodies x trip count, conditions x trip count + 1, a conditional's costliest branch): the
    sums of ``hlo_op_costs``'s rows. ``*_body_once``: the same with every loop body and condition counted
    once, as XLA's own total counts them. ``loops``: the while loops that run; ``loops_unknown``: those of
    unknown trip count (counted once). ``unknown_custom_calls``: custom calls that run (XLA cannot cost
    them; they add nothing), counted once per instruction. ``flops`` and ``bytes`` are None where XLA could
    not cost some other instruction (``note`` says)."""

    flops: int | None
    transcendentals: int | None
    bytes: int | None
    flops_body_once: int | None
    transcendentals_body_once: int | None
    bytes_body_once: int | None
    loops: int
    loops_unknown: int
    unknown_custom_calls: int
    note: str = ""


def _loop_cost(module: _Module, own: dict[str, tuple[int, int, int]], custom: dict[str, int], note: str,
               unknown: bool) -> HloLoopCost:
    def total(w: _Weights) -> list[int | None]:
        sums = [sum(w.runs[n] * own[n][k] for n in module.order) for k in range(3)]
        return [None if unknown and k != 1 else v for k, v in enumerate(sums)]

    rule, once = total(module.weights(own)), total(module.weights(own, once=True))
    whiles = [o for n in module.order for o in module.openings[n] if o.kind == "while"]
    runs = module.weights(own).runs
    return HloLoopCost(*rule, *once, loops=len(whiles), loops_unknown=sum(o.trips is None for o in whiles),
                       unknown_custom_calls=sum(custom[n] for n in module.order if runs[n]), note=note)


def hlo_loop_costs(texts: Sequence[str], whole: Sequence[dict | str] | None = None) -> list[HloLoopCost | str]:
    """The workbench's totals (``HloLoopCost``) of each HLO module, or why there are none: one module per
    computation that runs is sent to XLA (see the module's docstring), each distinct one once over all
    ``texts`` (the stages of a pipeline share most of their computations).

    ``whole``: XLA's analysis of each whole module (``hlo_module_costs(texts)``), where the caller has it. A
    module with no while, conditional or custom call then takes its totals from that: each computation in it runs
    once per call, as XLA's total counts it, and no instruction is charged -1, so the loop rule's sums are XLA's
    own: on each of the corpus programs' 211 loop-free HLO stages both ways agree (a test compares them). Neither
    the module's text is read nor its computations analysed again: on a GPT-2 training step,
    34 loop-free stages of 48 MB."""
    plans: list[tuple[_Module, list[str], list[int]] | HloLoopCost | str] = []
    for k, text in enumerate(texts):
        taken = _from_whole(text, whole[k]) if whole is not None else None
        if taken is not None:
            plans.append(taken)
            continue
        try:
            module = _Module(text)
            module.rows()
            pieces = [module.computation_alone(name) for name in module.order]
        except ModuleParseError as e:
            plans.append(str(e))
            continue
        plans.append((module, [p[0] for p in pieces], [p[1] for p in pieces]))
    unique = list(dict.fromkeys(t for p in plans if isinstance(p, tuple) for t in p[1]))
    analysed = dict(zip(unique, hlo_module_costs(unique))) if unique else {}
    out: list[HloLoopCost | str] = []
    for plan in plans:
        if not isinstance(plan, tuple):
            out.append(plan)
            continue
        module, pieces, customs = plan
        own, failed, unknown = {}, "", False
        for name, piece in zip(module.order, pieces):
            a = analysed[piece]
            if isinstance(a, str):
                failed = failed or f"XLA could not analyse %{name}: {a}"
                continue
            values = tuple(_count(a.get(k, 0.0)) for k in _KEYS)
            unknown = unknown or values[0] is None or values[2] is None
            _add(own, name, values)
        for name in module.order:
            own.setdefault(name, (0, 0, 0))
        if failed:
            out.append(failed)
            continue
        note = "flops and bytes unknown: XLA charges an instruction it cannot cost (a custom call) -1" if unknown else ""
        out.append(_loop_cost(module, own, dict(zip(module.order, customs)), note, unknown))
    return out


_NOT_AS_XLA_COUNTS = ("while", "conditional", "custom-call")  # where the loop rule's totals differ from XLA's


def _from_whole(text: str, analysis: dict | str) -> HloLoopCost | None:
    """The loop rule's totals of a module XLA counts as the rule does, from XLA's analysis of it whole; None
    where the rule must be applied (a loop, a conditional, a custom call, a count XLA could not make)."""
    if not isinstance(analysis, dict) or any(has_opcode(text, op) for op in _NOT_AS_XLA_COUNTS):
        return None
    values = [_count(analysis.get(k, 0.0)) for k in _KEYS]
    if None in values:
        return None
    return HloLoopCost(*values, *values, loops=0, loops_unknown=0, unknown_custom_calls=0)
