"""What XLA says each instruction of an HLO stage costs: its own HloCostAnalysis, one instruction at a time.

jaxlib reports HloCostAnalysis for a whole module only. To get it per instruction, each instruction of
the entry computation is put alone into a module of its own: its operands become parameters of the
same shapes, and the computations it calls (a fusion's fused computation, a reduce's reducer, a while
loop's body) come along. XLA parses that module and analyses it; a ``call`` is opened up and its
callee's instructions are costed instead, so an unoptimized module (whose entry is one call) shows
its real ops; a computation called several times is listed once, its costs times its calls.
HloCostAnalysis adds up over instructions, so the rows sum to XLA's total for the whole module
(``hlo_module_cost``), which the tests check.

XLA's HLO parser and analysis run in the worker process: a module put together this way can fail a
CHECK inside XLA, which would end the kernel. An instruction that does is reported in its row.

The work stays linear in the module's text: the module is read once, each computation's shapes are
mapped and each called computation printed at most once, and each instruction's module holds its
own line, its operands' shapes and the computations it calls. ``hlo_work`` counts that work (without
asking XLA), as ``model.model_work`` does for the analytic model. Only a computation that many
analysed instructions call (one reducer shared by many reduces) is copied into each of their modules.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from ...errors import ModuleParseError
from ...ir.hlo import (Computation, HloModule, Instruction, attribute_value, drop_attribute, read_hlo,
                       strip_debug_info)
from ...ir.text import text_hash
from ...pipeline.worker import default_pool
from .work import counter

if TYPE_CHECKING:  # pandas is imported where a table is made, not with the module (a first explore needs none)
    import pandas as pd

__all__ = ["HLO_COLUMNS", "HloWork", "hlo_op_costs", "hlo_module_cost", "hlo_module_costs", "hlo_work"]

HLO_COLUMNS = ("computation", "name", "op", "shape", "flops", "transcendentals", "bytes", "note")

# A call's callee runs in its place: its instructions are the rows.
_OPENED = ("call",)


@dataclasses.dataclass(frozen=True)
class HloWork:
    """What ``hlo_op_costs`` does to one module before XLA sees it, counted as it does it.

    ``instructions``: the module's instructions as read; ``visited``: instruction visits of the two
    walks that pick the rows and count their calls (about two per instruction of the entry and of
    each opened call); ``shapes_mapped``: instructions entered into the per-computation maps of
    operand shapes (each computation mapped once); ``computations_printed``: called computations
    printed for the modules (each at most once); ``fused_counted``: instructions counted for the
    fusions' notes (each fused computation once); ``modules`` and ``module_chars``: the
    one-instruction modules sent to XLA and their size.
    """

    instructions: int
    visited: int
    shapes_mapped: int
    computations_printed: int
    fused_counted: int
    modules: int
    module_chars: int


# the fields of HloWork counted while the work is done (the others are read at the end)
_Counter = counter(HloWork, "visited", "shapes_mapped", "computations_printed", "fused_counted")


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
        self.calls_of: dict[str, list[str]] = {}
        for call in self.hlo.calls:
            self.callees.setdefault((call.caller, call.instruction.name), []).append(call.callee)
            self.calls_of.setdefault(call.caller, []).append(call.callee)
        self._shapes: dict[str, dict[str, str]] = {}
        self._texts: dict[str, str] = {}
        self._fused_ops: dict[str, int] = {}
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
        need = sorted(self.reachable(self.callees.get((comp.name, ins.name), [])), key=self.position.__getitem__)
        called = [self._text(name) for name in need]
        entry = "ENTRY %one_instruction {\n" + "\n".join(params + [_line(ins, root=True)]) + "\n}"
        return "HloModule one_instruction\n\n" + "\n\n".join(called + [entry]) + "\n"

    def _text(self, name: str) -> str:
        if name not in self._texts:
            self._texts[name] = _computation_text(self.by_name[name])
            self.count.computations_printed += 1
        return self._texts[name]

    def fused_ops(self, name: str) -> int:
        """The instructions of fused computation ``name``, parameters aside (counted once per computation)."""
        if name not in self._fused_ops:
            instructions = self.by_name[name].instructions
            self._fused_ops[name] = sum(i.opcode != "parameter" for i in instructions)
            self.count.fused_counted += len(instructions)
        return self._fused_ops[name]

    def _opened(self, comp: Computation, ins: Instruction) -> str | None:
        """The callee whose instructions stand for ``ins``: a call's, else None."""
        callees = self.callees.get((comp.name, ins.name), [])
        return callees[0] if ins.opcode in _OPENED and len(callees) == 1 else None

    def rows(self) -> list[tuple[Computation, Instruction, int]]:
        """The instructions to cost, in order: the entry's, with calls opened up; and how many calls
        reach each. A computation called from several places is listed once, at its first call, and
        its rows count every call, so the rows stay as many as the module's instructions where its
        call tree is exponential (a chain of computations each calling the next twice)."""
        found, finished = self._walk()
        calls = dict.fromkeys(finished, 0)
        calls[self.hlo.entry.name] = 1
        for name in reversed(finished):  # callers before callees: a caller's count is final when read
            comp = self.by_name[name]
            self.count.visited += len(comp.instructions)
            for ins in comp.instructions:
                callee = self._opened(comp, ins)
                if callee is not None:
                    calls[callee] += calls[name]
        return [(comp, ins, calls[comp.name]) for comp, ins in found]

    def _walk(self) -> tuple[list[tuple[Computation, Instruction]], list[str]]:
        """One depth-first walk from the entry that opens each called computation at its first call:
        the instructions to cost, in the order met (parameters and opened calls aside), and the
        computations opened, each after those it calls. Iterative: no stack limit on a deep chain."""
        entry = self.hlo.entry
        found: list[tuple[Computation, Instruction]] = []
        finished: list[str] = []
        opened = {entry.name}
        stack = [(entry, iter(entry.instructions))]
        while stack:
            comp, pending = stack[-1]
            ins = next(pending, None)
            self.count.visited += 1
            if ins is None:
                stack.pop()
                finished.append(comp.name)
                continue
            callee = self._opened(comp, ins)
            if callee is None:
                if ins.opcode != "parameter":
                    found.append((comp, ins))
            elif callee not in opened:
                opened.add(callee)
                stack.append((self.by_name[callee], iter(self.by_name[callee].instructions)))
        return found, finished


def _shares(items: list[tuple[int, str]], n: int) -> list[list[tuple[int, str]]]:
    """``items`` in at most ``n`` chunks of about equal text size (largest first, each to the lightest
    chunk): one per worker of the pool, so that the modules are analysed side by side."""
    chunks: list[list[tuple[int, str]]] = [[] for _ in range(max(1, min(n, len(items))))]
    sizes = [0] * len(chunks)
    for item in sorted(items, key=lambda kv: -len(kv[1])):
        k = sizes.index(min(sizes))
        chunks[k].append(item)
        sizes[k] += len(item[1])
    return [c for c in chunks if c]


def _analyse(texts: list[str]) -> list[dict | str]:
    """XLA's analysis of each text in the workers (which strip its debug information first): its dict, or
    why it failed (a crash included)."""
    pool = default_pool()
    chunks = _shares(list(enumerate(texts)), pool.width)
    result = pool.map("hlo_costs", chunks, make_args=lambda chunk: (list(chunk),))
    out: list[dict | str] = [""] * len(texts)
    for key, value in result.results:
        out[key] = value
    for f in result.failures:
        last = f.diagnostics.strip().splitlines()[-1:] or [""]
        out[f.item[0]] = f"XLA's cost analysis {'crashed' if f.kind == 'crash' else 'timed out'} on it {last[0]}".strip()
    return out


def _count(value: float | None) -> int | None:
    """XLA's float count as an integer; XLA writes -1 for what it cannot cost (custom calls)."""
    if value is None or value < 0:
        return None
    return int(round(value))


def _prepared(text: str) -> tuple[_Module, list[tuple[Computation, Instruction, int]], list[str]]:
    """The module read, the instructions to cost (with their calls), and the module of each for XLA."""
    module = _Module(text)
    found = module.rows()
    return module, found, [module.alone(c, i) for c, i, _ in found]


@functools.lru_cache(maxsize=64)
def _op_costs(_key: str, text: str) -> pd.DataFrame:
    import pandas as pd

    module, found, texts = _prepared(text)
    analyses = _analyse(texts)
    rows = []
    for (comp, ins, calls), a in zip(found, analyses):
        row = {"computation": comp.name, "name": ins.name, "op": ins.opcode, "shape": ins.shape}
        if isinstance(a, str):
            row.update(flops=None, transcendentals=None, bytes=None, note=a)
        else:
            flops, trans, nbytes = (a.get(k, 0.0) for k in ("flops", "transcendentals", "bytes accessed"))
            unknown = flops < 0 or nbytes < 0
            note = "XLA cannot cost it (custom call)" if unknown else _note(module, comp, ins)
            if calls != 1:
                note = "; ".join(n for n in (note, f"%{comp.name} is called {calls} times: XLA's cost of one, "
                                                   f"x{calls}") if n)
            row.update(flops=_times(_count(flops), calls), transcendentals=_times(_count(trans), calls),
                       bytes=_times(_count(nbytes), calls), note=note)
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(HLO_COLUMNS))
    for c in ("flops", "transcendentals", "bytes"):
        df[c] = pd.array(df[c].tolist(), dtype="Int64")
    return df


def _times(value: int | None, calls: int) -> int | None:
    return None if value is None else value * calls


def _note(module: _Module, comp: Computation, ins: Instruction) -> str:
    callees = module.callees.get((comp.name, ins.name), [])
    if ins.opcode == "fusion" and callees:
        kind = attribute_value(ins.attributes, "kind") or ""
        return f"{kind + ' ' if kind else ''}fusion of {module.fused_ops(callees[0])} ops"
    if ins.opcode == "while":
        return "loop body counted once, as XLA does"
    return ""


def hlo_op_costs(text: str) -> pd.DataFrame:
    """One row per instruction of an HLO module's entry computation (calls opened up), costed by XLA's
    own HloCostAnalysis on CPU: ``computation, name, op, shape, flops, transcendentals, bytes, note``.

    A fusion is one row (one kernel), a while loop one row with its body counted once, the
    instructions of a computation that several calls open up one row each, costing all the calls. Unknown
    costs (custom calls, an instruction XLA refused to analyse alone) are ``<NA>`` with the reason
    in ``note``. Raises ModuleParseError for text that is not HLO.
    """
    return _op_costs(text_hash(text), text).copy()


def hlo_work(text: str) -> HloWork:
    """The work ``hlo_op_costs(text)`` does on its side, before and besides XLA's analyses: counted by the
    same code, without asking XLA (see ``HloWork``). For tests and benchmarks: it must grow with the
    module's text, never with its square."""
    module, found, texts = _prepared(text)
    for comp, ins, _ in found:
        _note(module, comp, ins)
    return module.count.done(modules=len(texts), module_chars=sum(map(len, texts)),
                             instructions=sum(len(comp.instructions) for comp in module.hlo.computations))


def hlo_module_costs(texts: list[str]) -> list[dict[str, float] | str]:
    """XLA's HloCostAnalysis of each whole HLO module on CPU, in the pool's workers (``_analyse``): a dict
    (``flops``, ``transcendentals``, ``bytes accessed`` and XLA's other keys), or why XLA could not."""
    return _analyse(list(texts))


def hlo_module_cost(text: str) -> dict[str, float]:
    """``hlo_module_costs`` of one module; ModuleParseError when XLA cannot take it."""
    (a,) = hlo_module_costs([text])
    if isinstance(a, str):
        raise ModuleParseError(f"XLA cannot read this HLO module: {a}")
    return a
