"""The moves of a reduction (``reduce.py``) and how a candidate is made: each move is a small rewrite
of a module through jaxlib's MLIR bindings:

- ``output k``: @main returns one value fewer (its function type and result attributes follow);
- ``root i``: @main returns the results of op ``i`` (of its body) instead of its outputs, so what
  comes after that op goes (several in one candidate: the results of each, in order);
- ``argument k``: an unused argument of @main goes (new arguments are the way ops are cut, below);
- ``to_arg i``: op ``i`` (of @main's body) is replaced by new arguments of @main of its result types;
- ``to_zero i``: op ``i`` (anywhere: a private function, a region) is replaced by zero constants,
  ``stablehlo.constant dense<0.0> : tensor<...>`` (static tensor types only); an op with regions
  (while, reduce, case) goes with them, so regions are cut this way;
- ``erase i``: op ``i`` whose results are unused goes, side effects or not;
- ``func i``: a private function nothing refers to goes;
- ``inline i``: call ``i`` of a private function called nowhere else is replaced by the callee's body.

Ops are named by their position in a pre-order walk of the module (``i``). After the moves of a
candidate, ops whose results became unused and that have no side effects are removed (to a fixpoint),
then unreferenced private functions (``symbol-dce``); a candidate that then fails jaxlib's verifier is
no candidate (``candidate`` answers None), and ``module_size`` is what the search makes strictly
smaller: (ops that are not zero constants, zero constants, @main's arguments, results, functions),
compared in that order.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ...ir.mlir import attribute, parse_module
from ...ir.ops import op_counts
from ...ir.text import function_references, strip_locations

__all__ = ["KINDS", "Move", "MoveKind", "apply_moves", "candidate", "count_ops", "module_size", "moves"]

KINDS = ("output", "root", "func", "erase", "inline", "to_arg", "to_zero", "argument")  # the order moves are tried in
_IMPURE = {f"{d}.{n}" for d in ("stablehlo", "mhlo") for n in ("send", "recv", "infeed", "outfeed")}
_PURE_DIALECTS = ("stablehlo", "chlo", "mhlo", "func", "arith", "math", "tensor", "shape", "sdy", "enzymexla")
_NOT_COUNTED = ("func.func", "func.return")


MoveKind = Literal["output", "root", "argument", "to_arg", "to_zero", "erase", "func", "inline"]
"""The rewrites a reduction tries (the module docstring says what each does)."""


@dataclass(frozen=True, order=True)
class Move:
    """One rewrite of a module: ``kind`` (see the module docstring) and an op's pre-order index, or
    @main's output or argument position."""

    kind: MoveKind
    index: int

    def __str__(self) -> str:
        return f"{self.kind} {self.index}"


def count_ops(text: str) -> int:
    """The ops the reduction counts: every op of the module (nested ones, region terminators such as
    ``stablehlo.return`` and constants included) but ``func.func`` and ``func.return``, as
    ``workbench.ir.ops.op_counts`` reads them."""
    return sum(n for name, n in op_counts(strip_locations(text)).items() if name not in _NOT_COUNTED)


# ---- the module model: ops in pre-order, @main ----------------------------------------------------


class _Op:
    __slots__ = ("end", "func", "in_main_body", "index", "op", "terminator")

    def __init__(self, op, index, terminator, func, in_main_body):
        self.op, self.index, self.end = op, index, index
        self.terminator, self.func, self.in_main_body = terminator, func, in_main_body


class _Survey:
    """One parse of a module: its ops in pre-order (each with the index range of its subtree), its
    functions by name and @main (the function named main, else the only public one)."""

    def __init__(self, module):
        self.ops: list[_Op] = []
        self.funcs: dict[str, _Op] = {}
        tops = [o.operation for o in module.body.operations]
        named = {_sym_name(o): o for o in tops if o.name == "func.func"}
        publics = ["main"] if "main" in named else [n for n, o in named.items() if _visibility(o) == "public"]
        single = len(publics) == 1 and len(named[publics[0]].regions[0].blocks) == 1
        self.main_name = publics[0] if single else None  # a function of one block: its last op returns
        for op in tops:
            self._visit(op, False, None, False)
        self.main = self.funcs.get(self.main_name) if self.main_name else None

    def _visit(self, op, terminator, func, in_main_body):
        rec = _Op(op, len(self.ops), terminator, func, in_main_body)
        self.ops.append(rec)
        if op.name == "func.func" and func is None:
            func = _sym_name(op)
            self.funcs[func] = rec
            body_of_main = func == self.main_name
        else:
            body_of_main = False
        for region in op.regions:
            for block in region.blocks:
                children = list(block.operations)
                for k, child in enumerate(children):
                    self._visit(child.operation, k == len(children) - 1, func, body_of_main)
        rec.end = len(self.ops) - 1

    @property
    def main_block(self):
        return self.main.op.regions[0].blocks[0]

    def main_return(self):
        return list(self.main_block.operations)[-1].operation


def _sym_name(op) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(op.attributes["sym_name"]).value


def _visibility(op) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(op.attributes["sym_visibility"]).value if "sym_visibility" in op.attributes else "public"


def _used(op) -> bool:
    return any(True for r in op.results for _ in r.uses)


def _zero(t) -> str | None:
    """The zero ``stablehlo.constant`` value of a static tensor type, as MLIR prints it, or None. Text, not an
    attribute: the bindings parse a complex one but cannot hand it over (``ir.mlir.OpaqueAttribute``)."""
    from jaxlib.mlir import ir

    t = t.maybe_downcast()
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    element = str(t.element_type)
    if element.startswith("complex"):
        text = f"dense<(0.000000e+00,0.000000e+00)> : {t}"
        value = "(0.0, 0.0)"
    else:
        text, value = None, ("false" if element == "i1" else "0" if element.startswith(("i", "si", "ui"))
                             or element == "index" else "0.0")
    try:
        parsed = ir.Attribute.parse(f"dense<{value}> : {t}")
    except ir.MLIRError:  # a quantized or otherwise exotic element type
        return None
    except TypeError:  # parsed, but not castable: a complex element type, whose text is the one above
        return text
    return str(parsed)


def _is_zero_constant(op) -> bool:
    if op.name != "stablehlo.constant" or len(op.results) != 1:
        return False
    zero = _zero(op.results[0].type)
    return zero is not None and str(attribute(op, "value")) == zero


def _pure(op, impure_funcs: set[str]) -> bool:
    """No side effects (by name: send/recv/infeed/outfeed, a custom_call with has_side_effect, a call
    of a function holding one, an op of an unknown dialect), nested ops included."""
    from jaxlib.mlir import ir

    name = op.name
    if name in _IMPURE or name.partition(".")[0] not in _PURE_DIALECTS:
        return False
    if name.endswith(".custom_call") and "has_side_effect" in op.attributes and \
            ir.BoolAttr(op.attributes["has_side_effect"]).value:
        return False
    if name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in impure_funcs:
        return False
    return all(_pure(child.operation, impure_funcs) for region in op.regions for block in region.blocks
               for child in block.operations if child.operation.name not in ("func.return", "stablehlo.return"))


def _references(module) -> dict[str, int]:
    """How often each function's symbol is mentioned outside its definition, read off the text."""
    return function_references(module.operation.get_asm())


# ---- moves ---------------------------------------------------------------------------------------


def moves(text: str) -> list[Move]:
    """Every move that applies to the module ``text``, in the order the search tries them."""
    module = parse_module(text)
    with module.context:
        s = _Survey(module)
        refs = _references(module)
        found: list[Move] = []
        if s.main is not None:
            outputs = list(s.main_return().operands)
            found += [Move("output", k) for k in range(len(outputs))]
            found += [Move("root", rec.index) for rec in s.ops if rec.in_main_body and not rec.terminator and
                      len(rec.op.results) and list(rec.op.results) != outputs]
            found += [Move("argument", k) for k, a in enumerate(s.main_block.arguments) if not any(True for _ in a.uses)]
        for rec in s.ops:
            op = rec.op
            if op.name == "func.func":
                if rec.func is None and _visibility(op) == "private" and refs.get(_sym_name(op), 1) == 0:
                    found.append(Move("func", rec.index))
                continue
            if rec.func is None or rec.terminator:
                continue  # module-level ops other than functions, and terminators, stay
            if not _used(op):
                found.append(Move("erase", rec.index))
                continue
            if op.name == "func.call":
                callee = _callee(op)
                if callee in s.funcs and callee != rec.func and refs.get(callee) == 1 and \
                        _visibility(s.funcs[callee].op) == "private" and len(s.funcs[callee].op.regions[0].blocks) == 1:
                    found.append(Move("inline", rec.index))
            if rec.in_main_body:
                found.append(Move("to_arg", rec.index))
            if not _is_zero_constant(op) and all(_zero(r.type) is not None for r in op.results):
                found.append(Move("to_zero", rec.index))
    return sorted(found, key=lambda m: (KINDS.index(m.kind), m.index))


def _callee(op) -> str:
    from jaxlib.mlir import ir

    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


def apply_moves(text: str, chosen) -> str | None:
    """The module ``text`` with the moves ``chosen`` applied and the dead code they leave removed,
    printed with its locations; None when the result does not verify (or a move cannot apply)."""
    made = candidate(text, chosen)
    return None if made is None else made[0]


def candidate(text: str, chosen) -> tuple[str, tuple[int, ...]] | None:
    """``apply_moves`` and the size of the result (see ``_size``)."""
    from jaxlib.mlir import ir

    module = parse_module(text)
    try:
        with module.context, ir.Location.unknown():
            _apply(module, sorted(chosen, key=lambda m: (m.kind == "argument", m.index)))
            _cleanup(module)
            module.operation.verify()
            return module.operation.get_asm(enable_debug_info=True), _size(_Survey(module))
    except (ir.MLIRError, _CannotApply):
        return None


class _CannotApply(Exception):
    """A move that does not fit the module (it names no @main, or a used argument)."""


def module_size(text: str) -> tuple[int, ...]:
    """What the search makes strictly smaller with each step: (ops that are not zero constants, zero
    constants, @main's arguments, @main's results, functions), func.func and func.return not counted."""
    module = parse_module(text)
    with module.context:
        return _size(_Survey(module))


def _size(s: _Survey) -> tuple[int, ...]:
    ops = [rec.op for rec in s.ops if rec.op.name not in _NOT_COUNTED]
    zeros = sum(map(_is_zero_constant, ops))
    main = (len(s.main_block.arguments), len(s.main_return().operands)) if s.main is not None else (0, 0)
    return (len(ops) - zeros, zeros) + main + (len(s.funcs),)


class _Edit:
    """The state of one candidate's moves on a module: its survey as parsed, the op indices already
    gone with an op erased or inlined (a move on one of them is skipped), and @main's argument and
    result attributes, which ``finish`` writes back with its new signature."""

    def __init__(self, module, chosen: list[Move]):
        from jaxlib.mlir import ir

        self.s = s = _Survey(module)
        self.gone: set[int] = set()
        main = s.main
        if main is None and any(m.kind in ("output", "root", "argument", "to_arg") for m in chosen):
            raise _CannotApply("the module has no @main")
        attrs = main.op.attributes if main else {}
        n_args = len(s.main_block.arguments) if main else 0
        self.arg_attrs = list(ir.ArrayAttr(attrs["arg_attrs"])) if main and "arg_attrs" in attrs else \
            [ir.DictAttr.get({})] * n_args
        self.res_attrs = list(ir.ArrayAttr(attrs["res_attrs"])) if main and "res_attrs" in attrs else None

    def kill(self, rec: _Op) -> None:
        """Mark ``rec`` and every op nested in it as gone."""
        self.gone.update(range(rec.index, rec.end + 1))

    def new_outputs(self, drop: set[int], roots: list) -> None:
        """``output`` and ``root`` moves: @main returns its outputs but those in ``drop``, or the results
        of the ``roots`` ops in order (its result attributes no longer fit those)."""
        from jaxlib.mlir import ir

        if not (drop or roots):
            return
        ret = self.s.main_return()
        kept = [k for k in range(len(ret.operands)) if k not in drop]
        values = [r for op in roots for r in op.results] if roots else [ret.operands[k] for k in kept]
        with ir.InsertionPoint(ret), ret.location:
            ir.Operation.create("func.return", operands=values)
        ret.erase()
        res_attrs = self.res_attrs
        self.res_attrs = None if roots else [res_attrs[k] for k in kept] if res_attrs is not None else None

    def target(self, m: Move) -> _Op | None:
        """The op a move on an op rewrites; None when it is gone already. _CannotApply for a move that
        names no op of the module, or an op of another kind than the move needs."""
        if m.kind not in _OP_MOVES or not 0 <= m.index < len(self.s.ops):
            raise _CannotApply(f"no such move here: {m}")
        if m.index in self.gone:
            return None
        op = self.s.ops[m.index].op
        if (m.kind == "func") != (op.name == "func.func") or (m.kind == "inline" and op.name != "func.call"):
            raise _CannotApply(f"no such move here: {m} is a {op.name}")
        return self.s.ops[m.index]

    def finish(self, drop_args: list[int]) -> None:
        """``argument`` moves (after the others, which may leave an argument unused), then @main's
        signature set from its block and return. _CannotApply for an argument still used."""
        main = self.s.main
        if main is None:
            return
        block = self.s.main_block
        for k in sorted(set(drop_args), reverse=True):
            if any(True for _ in block.arguments[k].uses):
                raise _CannotApply(f"argument {k} is used")
            block.erase_argument(k)
            del self.arg_attrs[k]
        _set_signature(main.op, block, self.s.main_return(), self.arg_attrs, self.res_attrs)


def _erase(edit: _Edit, rec: _Op) -> None:
    """``erase``: the op goes when its results are (still) unused."""
    if not _used(rec.op):
        edit.kill(rec)
        rec.op.erase()


def _erase_func(edit: _Edit, rec: _Op) -> None:
    """``func``: the private function goes."""
    edit.kill(rec)
    rec.op.erase()


def _replace(edit: _Edit, rec: _Op, new: list) -> None:
    """The op's results replaced by the values ``new``, and the op gone."""
    for r, v in zip(rec.op.results, new):
        r.replace_all_uses_with(v)
    edit.kill(rec)
    rec.op.erase()


def _to_arg(edit: _Edit, rec: _Op) -> None:
    """``to_arg``: the op's results become new arguments of @main (with empty attributes)."""
    from jaxlib.mlir import ir

    op = rec.op
    new = [edit.s.main_block.add_argument(r.type, op.location) for r in op.results]
    edit.arg_attrs += [ir.DictAttr.get({})] * len(new)
    _replace(edit, rec, new)


def _to_zero(edit: _Edit, rec: _Op) -> None:
    """``to_zero``: the op's results become zero constants made just before it."""
    from jaxlib.mlir import ir

    op = rec.op
    new = []
    with op.location:
        for r in op.results:  # parsed from its generic form: a complex value cannot pass through the bindings
            zero = ir.Operation.parse(f'%0 = "stablehlo.constant"() <{{value = {_zero(r.type)}}}> : () -> {r.type}')
            ir.InsertionPoint(op).insert(zero)
            new.append(zero.results[0])
    _replace(edit, rec, new)


def _inline_call(edit: _Edit, rec: _Op) -> None:
    """``inline``: the call is replaced by its callee's body, unless the callee is gone already."""
    callee = edit.s.funcs[_callee(rec.op)]
    if callee.index in edit.gone:
        return
    _inline(rec.op, callee.op)
    edit.kill(rec)
    edit.kill(callee)


# The moves on one op, by kind; "output", "root" and "argument" change @main's signature (``_Edit``).
_OP_MOVES: dict[MoveKind, Callable[[_Edit, _Op], None]] = {
    "erase": _erase, "func": _erase_func, "to_arg": _to_arg, "to_zero": _to_zero, "inline": _inline_call}


def _apply(module, chosen: list[Move]) -> None:
    """Apply the moves ``chosen`` to ``module`` in place: @main's new outputs first, then the moves
    on ops in order (one on an op already gone is skipped), then the arguments dropped and @main's
    signature set. _CannotApply when a move does not fit the module."""
    edit = _Edit(module, chosen)
    edit.new_outputs({m.index for m in chosen if m.kind == "output"},
                     [edit.s.ops[m.index].op for m in chosen if m.kind == "root"])
    for m in chosen:
        if m.kind in ("output", "root", "argument"):
            continue
        rec = edit.target(m)
        if rec is not None:
            _OP_MOVES[m.kind](edit, rec)
    edit.finish([m.index for m in chosen if m.kind == "argument"])


def _inline(call, callee) -> None:
    """Move the body of ``callee`` (a function called by ``call`` alone) in place of the call."""
    body = callee.regions[0].blocks[0]
    for arg, value in zip(body.arguments, call.operands):
        arg.replace_all_uses_with(value)
    ops = [o.operation for o in body.operations]
    for o in ops[:-1]:
        o.move_before(call)
    for r, v in zip(call.results, ops[-1].operands):
        r.replace_all_uses_with(v)
    call.erase()
    callee.erase()


def _set_signature(func, block, ret, arg_attrs, res_attrs) -> None:
    from jaxlib.mlir import ir

    inputs = [a.type for a in block.arguments]
    results = [v.type for v in ret.operands]
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    if "arg_attrs" in func.attributes or any(len(ir.DictAttr(a)) for a in arg_attrs):
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
    if res_attrs is not None:
        func.attributes["res_attrs"] = ir.ArrayAttr.get(res_attrs)
    elif "res_attrs" in func.attributes:  # new outputs: the old ones' names (jax.result_info) no longer fit
        del func.attributes["res_attrs"]


def _cleanup(module) -> None:
    """Remove ops without side effects whose results are unused (to a fixpoint), then unreferenced
    private functions with MLIR's own ``symbol-dce``."""
    from jaxlib.mlir import passmanager

    while True:
        s = _Survey(module)
        impure = _impure_funcs(s)
        erased = 0
        for rec in reversed(s.ops):  # users come after what they use: one pass removes chains
            op = rec.op
            if rec.func is None or rec.terminator or op.name == "func.func" or not len(op.results):
                continue
            if not _used(op) and _pure(op, impure):
                op.erase()
                erased += 1
        if not erased:
            break
    passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)


def _impure_funcs(s: _Survey) -> set[str]:
    impure: set[str] = set()
    while True:
        more = {name for name, rec in s.funcs.items() if name not in impure and not _pure(rec.op, impure)}
        if not more:
            return impure
        impure |= more
