"""Turn any stage's MLIR text into a ``jax.export.Exported`` that JAX can compile, cost and call.

This is the one public route from "a module as text" back into JAX: parse the text with JAX's own
MLIR context, serialize it, and put it into an ``Exported`` whose avals match its ``@main``
(``dataclasses.replace(exported, mlir_module_serialized=...)``, then ``.call``).
"""
from __future__ import annotations

import dataclasses

import jax

from ..errors import ModuleParseError, WorkbenchError
from ..ir.dtypes import element_dtype
from ..ir.hlo_sharding import has_tiled_mhlo_sharding
from ..ir.mlir import parse_module, strip_enzymexla_attributes
from ..ir.text import host_callback_count, publish_functions
from .shardy import is_sharded
from .worker import PassFailure, default_worker, enzyme_available

__all__ = ["prepare_for_jax", "inlined_for_jax", "readable_module", "module_bytecode", "swap_module", "exported_for_text", "main_signature"]


def prepare_for_jax(text: str, publish: bool = True, scrub: bool = False) -> str:
    """Text that jaxlib can parse: Enzyme's ``enzymexla.*`` attributes dropped (by enzyme-ad's own
    ``drop-unsupported-attributes`` pass, or by a text scrubber without enzyme-ad or with ``scrub``), and
    with ``publish`` ``@main`` public again. The scrubber parses to the module the pass gives (every stage
    of the corpus's programs) at a tenth of its time, the pass's round trip to the worker included; a caller
    that takes it tries the pass where what it left does not parse."""
    if "enzymexla" in text:
        if enzyme_available() and not scrub:
            try:
                text = default_worker().call("run_pipeline", text, "drop-unsupported-attributes").value.text
            except PassFailure as e:
                raise WorkbenchError(f"cannot prepare the module for JAX: {e.message}\n{e.diagnostics}") from None
        else:
            text = strip_enzymexla_attributes(text)
    return publish_functions(text, {"main"}) if publish else text


def inlined_for_jax(text: str) -> str:
    """``prepare_for_jax(text)`` with its private functions inlined into their callers (MLIR's inliner as
    enzyme-ad runs it: JAX's own context has no inliner for StableHLO), locations kept; where enzyme-ad is
    missing, the calls stay."""
    if enzyme_available() and "call @" in text:
        try:
            text = default_worker().call("run_pipeline", text, "inline,symbol-dce,drop-unsupported-attributes").value.text
        except PassFailure as e:
            raise WorkbenchError(f"cannot inline the module's functions: {e.message}\n{e.diagnostics}") from None
    return prepare_for_jax(text)


def readable_module(text: str):
    """A stage's text as a jaxlib module for readers (cost, graph): Enzyme's attributes dropped, ops
    of dialects jaxlib does not register kept as opaque ops (the attributes dropped by the text scrubber, as
    for XLA's input; by enzyme-ad's pass where what it left does not parse). ModuleParseError if it does not
    parse."""
    try:
        return parse_module(prepare_for_jax(text, publish=False, scrub=True))
    except ModuleParseError as e:
        if "enzymexla" not in text:  # nothing was scrubbed: the pass would give the same text to parse again
            raise
        first = e
    try:
        return parse_module(prepare_for_jax(text, publish=False))
    except ModuleParseError:
        raise
    except WorkbenchError:  # enzyme-ad cannot read it either (an unregistered dialect): the parser's word stands
        raise first from None


def _parse(text: str):
    try:
        return parse_module(text, allow_unregistered=False)
    except ModuleParseError as e:
        raise WorkbenchError(str(e)) from None


def module_bytecode(text: str) -> bytes:
    from jax._src.interpreters import mlir as jmlir

    return jmlir.module_to_bytecode(_parse(prepare_for_jax(text)))


def _dtype(element: str):
    try:
        return element_dtype(element)
    except TypeError:
        raise WorkbenchError(f"element type {element} of @main has no JAX dtype here") from None


def _aval(t) -> jax.ShapeDtypeStruct:
    from jaxlib.mlir import ir

    rt = ir.RankedTensorType(t)
    return jax.ShapeDtypeStruct(tuple(rt.shape), _dtype(str(rt.element_type)))


def main_signature(text: str) -> tuple[tuple[jax.ShapeDtypeStruct, ...], tuple[jax.ShapeDtypeStruct, ...]]:
    """The argument and result shapes of ``@main``; WorkbenchError when there is no ``@main``."""
    from jaxlib.mlir import ir

    module = _parse(prepare_for_jax(text))
    with module.context:
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                return tuple(_aval(t) for t in ftype.inputs), tuple(_aval(t) for t in ftype.results)
    inner = [op.operation for op in module.body.operations]
    if len(inner) > 1 and all(op.name == "builtin.module" for op in inner):  # a lit file's modules, read as one
        raise WorkbenchError(f"the text holds {len(inner)} modules one after another, which MLIR reads as one module "
                             "around them, with no @main of its own: its passes run on every module, but XLA "
                             "compiles and runs one module; wb.explore_texts(text) explores each on its own")
    raise WorkbenchError("the module has no @main function: it can be transformed, but not compiled or run")


def swap_module(exported, text: str):
    """``exported`` with its module replaced by ``text`` (which must keep the same @main signature)."""
    return dataclasses.replace(exported, mlir_module_serialized=module_bytecode(text))


def exported_for_text(text: str, platform: str = "cpu"):
    """An Exported for a module given only as text, built from its ``@main`` signature.

    A placeholder function with the same argument and result shapes is exported (public API), then
    its module is replaced by ``text`` and every argument marked as kept.
    """
    ins, outs = main_signature(text)
    callbacks = host_callback_count(text)
    if callbacks:
        raise WorkbenchError(f"the module calls {callbacks} host callback(s) (jax.debug.print, pure_callback, "
                             "io_callback) whose Python functions are not part of its text: it can be transformed "
                             "and costed, not run. Explore the function itself (wb.explore) to run it.")
    # JAX writes an empty or maximal mesh into single-device programs (a PRNG key): not a sharding
    if is_sharded(text) or has_tiled_mhlo_sharding(text):
        raise WorkbenchError("a sharded module given as text cannot be compiled without its mesh; "
                             "explore the function with sharded arguments instead")

    def placeholder(*_):
        results = tuple(jax.numpy.zeros(o.shape, o.dtype) for o in outs)
        return results[0] if len(results) == 1 else results

    base = jax.export.export(jax.jit(placeholder), platforms=[platform])(*ins)
    return dataclasses.replace(base, module_kept_var_idx=tuple(range(len(ins))),
                               mlir_module_serialized=module_bytecode(text))
