"""The numeric check's two readings of a module's floating point: the module promoted to float64, and
the narrowest floating type each result was computed through.

``promote_to_f64(text)`` rewrites a StableHLO module so that every floating-point operation computes in
float64 (complex ones in complex<f64>), with jaxlib's MLIR bindings: op results and block arguments get
the wider type, and ``@main`` keeps its signature -- its floating arguments are widened by a convert
at entry and its results rounded back by a convert before the return -- so the promoted module runs
wherever the original does, on the same arguments. What must stay narrow does, converted at its
boundary: a ``stablehlo.constant`` keeps its literal (widening it after is exact), and a
``stablehlo.bitcast_convert`` keeps its narrow type, with the value narrowed before it (float operand)
or widened after it (float result), so bit-level code -- JAX's random numbers, which build floats from
integer bits -- draws the same numbers. Integer and boolean ops are untouched. The promoted module is
the same computation as the original, evaluated with 29 more bits than float32: the numeric check's
reference. Rounding its results once to the original result types costs at most half an ulp of each
output, far below any tolerance the check uses.

It refuses (``Promotion.refused`` says why; nothing is guessed) a module it cannot promote faithfully:
host callbacks into Python (``custom_call @xla_python_cpu_callback`` and the FFI callbacks), any other
custom call (a library routine such as LAPACK's ``sgetrf`` is compiled for its element type),
``stablehlo.rng`` drawing floats (another element type draws other numbers), ops of dialects other
than StableHLO, CHLO, func and Shardy, floating constants held in other attributes, and anything
MLIR's verifier rejects after the rewrite.

``computed_in(text)`` reads, for each result of ``@main``, the narrowest floating type that rounded any
value it depends on: a bfloat16 matmul inside a float32 program makes the results downstream of it
"computed in bfloat16". It is one forward pass over the ops (a region or a callee counts as a whole),
so linear in the module's size.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModuleParseError
from .dtypes import element_type_named, float_with_mantissa, machine_eps
from .mlir import OpaqueAttribute, attribute, attribute_names

__all__ = ["Promotion", "promote_to_f64", "computed_in", "HOST_CALLBACK_TARGETS"]

HOST_CALLBACK_TARGETS = ("xla_python_cpu_callback", "xla_python_gpu_callback", "xla_ffi_python_cpu_callback",
                         "xla_ffi_python_gpu_callback", "xla_ffi_partitioned_python_cpu_callback")
# Custom calls that only annotate placement: any element type passes through them unchanged.
_TYPE_GENERIC_TARGETS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")
_DIALECTS = ("stablehlo", "chlo", "func", "sdy")


@dataclass(frozen=True)
class Promotion:
    """The module with its floating-point arithmetic in float64 (``text``), or why not (``refused``)."""

    text: str = ""
    refused: str = ""

    @property
    def ok(self) -> bool:
        return not self.refused


def _wide(t, ir):
    """``t`` with every floating element type narrower than f64 replaced by f64 (complex: complex<f64>)."""
    if isinstance(t, ir.RankedTensorType):
        e = _wide(t.element_type, ir)
        return t if e == t.element_type else ir.RankedTensorType.get(t.shape, e, t.encoding)
    if isinstance(t, ir.UnrankedTensorType):
        e = _wide(t.element_type, ir)
        return t if e == t.element_type else ir.UnrankedTensorType.get(e)
    if isinstance(t, ir.ComplexType):
        e = _wide(t.element_type, ir)
        return t if e == t.element_type else ir.ComplexType.get(e)
    if isinstance(t, ir.TupleType):
        parts = [t.get_type(i) for i in range(t.num_types)]
        wide = [_wide(p, ir) for p in parts]
        return t if wide == parts else ir.TupleType.get_tuple(wide)
    if isinstance(t, ir.FloatType) and not isinstance(t, ir.F64Type):
        return ir.F64Type.get()
    return t


def _element(t, ir):
    return t.element_type if isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType)) else t


def _is_float(t, ir) -> bool:
    e = _element(t, ir)
    if isinstance(e, ir.ComplexType):
        e = e.element_type
    return isinstance(e, ir.FloatType)


def _ops(block):
    """Every op in ``block`` and in the regions nested in it, parents before children."""
    for op in block.operations:
        yield op
        for region in op.regions:
            for inner in region.blocks:
                yield from _ops(inner)


def _target(op) -> str:
    from jaxlib.mlir import ir

    attr = attribute(op, "call_target_name")
    return ir.StringAttr(attr).value if attr is not None and not isinstance(attr, OpaqueAttribute) else ""


def _why_not(module) -> str:
    """Why the module cannot be promoted faithfully ("" when it can)."""
    from jaxlib.mlir import ir

    narrow = False
    for op in _ops(module.body):
        narrow = narrow or any(_wide(r.type, ir) != r.type for r in op.results) or any(
            _wide(a.type, ir) != a.type for region in op.regions for block in region.blocks for a in block.arguments)
        name = op.operation.name
        if name == "stablehlo.custom_call":
            target = _target(op)
            if target in HOST_CALLBACK_TARGETS:
                return (f"it calls back into Python (custom_call @{target}: jax.debug.print, pure_callback or "
                        "io_callback), whose code runs in its own types and cannot be widened")
            if target not in _TYPE_GENERIC_TARGETS:
                return (f"it calls custom_call @{target}, a routine compiled for its element types "
                        "(a float64 module would need another routine)")
        elif name == "stablehlo.rng" and any(_is_float(r.type, ir) for r in op.results):
            return "it draws floating-point random numbers with stablehlo.rng, and in float64 it would draw others"
        elif name.split(".", 1)[0] not in _DIALECTS and name != "builtin.module":
            return f"it holds {name}, and the promotion knows StableHLO, CHLO, func and Shardy ops only"
        for key in attribute_names(op):
            if name == "func.func" and key == "function_type" or name == "stablehlo.constant" and key == "value":
                continue
            attr = attribute(op, key)
            if isinstance(attr, OpaqueAttribute) or isinstance(attr, ir.TypeAttr) or (
                    isinstance(attr, ir.DenseElementsAttr) and _is_float(attr.type, ir)):
                return f"{name} holds a floating type in its attribute {key!r}, which the promotion does not rewrite"
    if not narrow:
        return "it computes in float64 throughout (or in no floating type), so there is no wider type to promote it to"
    return ""


def _convert(value, to, ir):
    from jax._src.lib.mlir.dialects import hlo

    return hlo.ConvertOp(to, value).result


def _operation(x):
    return getattr(x, "operation", x)


def _narrow_after(value, ir, keep: set) -> None:
    """``value`` stays narrow; every other use of it reads it widened to f64."""
    wide = _wide(value.type, ir)
    if wide == value.type:
        return
    where = (ir.InsertionPoint.after(value.owner) if isinstance(value, ir.OpResult)
             else ir.InsertionPoint.at_block_begin(value.owner))
    with where:
        widened = _convert(value, wide, ir)
    keep.add(_operation(widened.owner))
    value.replace_all_uses_except(widened, _operation(widened.owner))


def _narrow_operand(op, index: int, to, ir, keep: set) -> None:
    """Operand ``index`` of ``op`` is read in type ``to`` (its type now; the value becomes f64 later)."""
    with ir.InsertionPoint(_operation(op)):
        narrowed = _convert(op.operands[index], to, ir)
    keep.add(_operation(narrowed.owner))
    _operation(op).operands[index] = narrowed


def _promote(module) -> None:
    from jaxlib.mlir import ir

    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    main = next((f for f in funcs if ir.StringAttr(f.attributes["sym_name"]).value == "main"), None)
    if main is None:
        raise ValueError("the module has no @main function")
    entry = main.regions[0].blocks[0]
    main_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    keep: set = set()  # ops whose result types stay as they are
    # First, while every type is still the original one, the boundaries that stay narrow: @main's
    # results are rounded to their types, bitcasts read and write their own types, and constants,
    # bitcast results and @main's arguments are widened where they are used.
    for op in entry.operations:
        if op.operation.name == "func.return":
            for i, t in enumerate(main_type.results):
                if _wide(t, ir) != t:
                    _narrow_operand(op, i, t, ir, keep)
    ops = list(_ops(module.body))
    for op in ops:
        if op.operation.name == "stablehlo.bitcast_convert":
            keep.add(op.operation)
            if _wide(op.operands[0].type, ir) != op.operands[0].type:
                _narrow_operand(op, 0, op.operands[0].type, ir, keep)
            _narrow_after(op.result, ir, keep)
    for op in ops:
        if op.operation.name == "stablehlo.constant":
            keep.add(op.operation)
            _narrow_after(op.result, ir, keep)
    for arg in entry.arguments:
        _narrow_after(arg, ir, keep)
    # then every other value computes in float64
    for f in funcs:
        if f != main:
            ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
            f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
                [_wide(t, ir) for t in ftype.inputs], [_wide(t, ir) for t in ftype.results]))
    for op in list(_ops(module.body)):
        for region in op.regions:
            for block in region.blocks:
                if block != entry:
                    for arg in block.arguments:
                        arg.set_type(_wide(arg.type, ir))
        if op.operation not in keep:
            for result in op.results:
                result.set_type(_wide(result.type, ir))
    # a result that is one of @main's arguments as it is reads the argument widened by now: round it back
    for op in entry.operations:
        if op.operation.name == "func.return":
            for i, t in enumerate(main_type.results):
                if op.operands[i].type != t:
                    _narrow_operand(op, i, t, ir, keep)


def promote_to_f64(text: str) -> Promotion:
    """``text`` with its floating-point arithmetic promoted to float64 (see the module docstring)."""
    from jaxlib.mlir import ir

    from .mlir import parse_module

    try:
        module = parse_module(text, allow_unregistered=False)
    except ModuleParseError as e:
        return Promotion(refused=f"jaxlib cannot parse it ({str(e).splitlines()[0][:200]})")
    with module.context, ir.Location.unknown():
        why = _why_not(module)
        if why:
            return Promotion(refused=why)
        try:
            _promote(module)
            module.operation.verify()
        except (ir.MLIRError, ValueError, TypeError) as e:  # a type the rewrite cannot build, or the verifier's no
            first = str(e).strip().splitlines()
            return Promotion(refused=f"the promoted module is not valid ({first[0][:200] if first else type(e).__name__})")
        return Promotion(text=module.operation.get_asm(enable_debug_info=False))


# ---- the narrowest floating type each result was computed through ---------------------------------

# Ops whose floating results are exactly values of their operands (or constants, exact in their own
# type): they round nothing, so they pass their operands' precision on and add none.
_EXACT = {"stablehlo.constant", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
          "stablehlo.broadcast", "stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
          "stablehlo.concatenate", "stablehlo.pad", "stablehlo.reverse", "stablehlo.select", "stablehlo.gather",
          "stablehlo.copy", "stablehlo.tuple", "stablehlo.get_tuple_element", "stablehlo.optimization_barrier",
          "stablehlo.bitcast_convert", "stablehlo.real", "stablehlo.imag", "stablehlo.complex", "stablehlo.negate",
          "stablehlo.abs", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp", "stablehlo.sign",
          "stablehlo.compare", "stablehlo.is_finite", "stablehlo.sort", "stablehlo.return", "func.return",
          "stablehlo.get_dimension_size", "sdy.sharding_constraint", "sdy.reshard", "sdy.return"}


@dataclass(frozen=True, order=True)
class _Precision:
    eps: float
    name: str


_EXACTLY = _Precision(0.0, "")


def _precision_of(t, ir) -> _Precision:
    e = _element(t, ir)
    if isinstance(e, ir.ComplexType):
        e = e.element_type
    if not isinstance(e, ir.FloatType):
        return _EXACTLY
    key = str(e)
    try:
        known = element_type_named(key)
    except TypeError:  # a floating type the table does not have: a guess from its width
        return _Precision(2.0 ** -(e.width // 2), key)
    return _Precision(machine_eps(key), known.numpy or key)


class _Reader:
    """One forward pass: each value's precision is the coarsest of its operands' and of the rounding
    its own op does; an op with regions or a call takes the coarsest of everything inside as well."""

    def __init__(self, funcs: dict, ir):
        self.funcs, self.ir, self.at, self.callee = funcs, ir, {}, {}

    def block(self, block, entry: _Precision) -> _Precision:
        """The coarsest precision in ``block`` (its arguments given ``entry``)."""
        for arg in block.arguments:
            self.at[arg] = entry
        worst = entry
        for op in block.operations:
            worst = max(worst, self.op(op))
        return worst

    def op(self, op) -> _Precision:
        ir, name = self.ir, op.operation.name
        p = max((self.at.get(v, _EXACTLY) for v in op.operands), default=_EXACTLY)
        inputs = p
        for region in op.regions:
            for block in region.blocks:
                p = max(p, self.block(block, inputs))
        if name == "func.call":
            p = max(p, self.function(ir.FlatSymbolRefAttr(op.attributes["callee"]).value))
        elif name == "stablehlo.reduce_precision":  # rounds to a narrower format inside its own type
            mantissa = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
            p = max(p, _precision_of(op.results[0].type, ir),
                    _Precision(2.0 ** -mantissa, float_with_mantissa(mantissa) or f"{mantissa}-bit mantissa"))
        elif name == "stablehlo.convert":
            own = _precision_of(op.results[0].type, ir)
            source = _precision_of(op.operands[0].type, ir)
            if own.eps > source.eps or source == _EXACTLY:  # narrowing, or an integer rounded to a float
                p = max(p, own)
        elif name not in _EXACT:
            for r in op.results:
                p = max(p, _precision_of(r.type, ir))
        for r in op.results:
            self.at[r] = p
        return p

    def function(self, name: str) -> _Precision:
        if name not in self.callee:
            self.callee[name] = _EXACTLY  # a recursive call adds nothing new
            f = self.funcs.get(name)
            self.callee[name] = self.block(f.regions[0].blocks[0], _EXACTLY) if f is not None else _EXACTLY
        return self.callee[name]


def computed_in(text: str) -> tuple[str | None, ...] | None:
    """For each result of ``@main``: numpy's name of the narrowest floating type any value it depends on
    was rounded to ("bfloat16", "float32"), or None where it went through no floating rounding (an
    argument passed through). None when the module does not parse or has no ``@main``."""
    from jaxlib.mlir import ir

    from .mlir import parse_module

    try:
        module = parse_module(text)
    except ModuleParseError:
        return None
    with module.context:
        funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
                 if op.operation.name == "func.func"}
        main = funcs.get("main")
        if main is None or not main.regions[0].blocks:
            return None
        reader = _Reader(funcs, ir)
        entry = main.regions[0].blocks[0]
        reader.block(entry, _EXACTLY)
        ret = next((op for op in entry.operations if op.operation.name == "func.return"), None)
        if ret is None:
            return None
        return tuple(reader.at.get(v, _EXACTLY).name or None for v in ret.operands)
