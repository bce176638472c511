"""ir.dtypes: one table of element types, spelled as MLIR, XLA HLO and numpy spell them.

The expected data below are the tables the workbench kept in five places before it had this one
(the CLI's --args, pipeline/exported.py, ir/promote.py, lesson 1's checker, sharding/collectives.py):
every spelling they knew must still mean what it meant.
"""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jaxlib.mlir import ir

from workbench.analysis.cost.tensors import static_tensor
from workbench.course.lesson01 import _element_type_of
from workbench.errors import WorkbenchError
from workbench.ir.dtypes import (_NUMPY_NAMES, element_bits, element_bytes, element_dtype, element_type_named,
                                 float_with_mantissa, machine_eps, mantissa_bits, mlir_spelling)
from workbench.ir.mlir import parse_module
from workbench.ir.promote import computed_in
from workbench.pipeline.exported import main_signature
from workbench.views.cli import parse_args_spec
from workbench.views.cli_common import TargetError

CLI_ARGS = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
            "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "u32": "uint32", "pred": "bool",
            "bool": "bool"}
EXPORTED = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i1": np.bool_, "i8": np.int8,
            "i16": np.int16, "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "ui16": np.uint16,
            "ui32": np.uint32, "ui64": np.uint64, "complex<f32>": np.complex64, "complex<f64>": np.complex128,
            "bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
PROMOTE_EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "tf32": 2.0 ** -10, "f16": 2.0 ** -10, "bf16": 2.0 ** -7,
               "f8E4M3FN": 2.0 ** -3, "f8E4M3": 2.0 ** -3, "f8E4M3FNUZ": 2.0 ** -3, "f8E4M3B11FNUZ": 2.0 ** -3,
               "f8E5M2": 2.0 ** -2, "f8E5M2FNUZ": 2.0 ** -2, "f8E3M4": 2.0 ** -4}
PROMOTE_NUMPY = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
                 "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}
PROMOTE_BY_MANTISSA = {52: "float64", 23: "float32", 10: "float16", 7: "bfloat16", 3: "float8_e4m3fn",
                       2: "float8_e5m2"}
LESSON01 = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
            "int64": "i64", "int8": "i8", "bool": "i1", "uint8": "ui8", "uint32": "ui32"}
HLO_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s4": 1, "u4": 1, "s2": 1, "u2": 1, "s16": 2, "u16": 2, "f16": 2,
             "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
             "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3fnuz": 1, "f8e8m0fnu": 1, "f4e2m1fn": 1}
# ml_dtypes' types that JAX cannot lower (and int1/uint1, whose MLIR i1 is numpy's bool): not in the table
NOT_IN_JAX = {"int1", "uint1", "float8_e5m3fnu", "complex32", "bcomplex32"}


def test_the_cli_args_spellings_make_the_same_arrays():
    for spelling, name in CLI_ARGS.items():
        assert element_dtype(spelling) == np.dtype(name), spelling
    # parse_args_spec makes each array through element_dtype: two of them (each compiles) show it does
    arrays = parse_args_spec("bf16[2,3],pred[4]")
    assert [(a.dtype, a.shape) for a in arrays] == [(jnp.bfloat16, (2, 3)), (jnp.bool_, (4,))]
    with pytest.raises(TargetError, match="unknown dtype 'f8'; use one of " + ", ".join(CLI_ARGS)):
        parse_args_spec("f8[2]")


def test_main_signature_reads_every_element_type_it_read_before():
    args = ", ".join(f"%arg{k}: tensor<2x{t}>" for k, t in enumerate(EXPORTED))
    text = f"func.func public @main({args}) -> tensor<i32> {{\n  %c = stablehlo.constant dense<0> : tensor<i32>\n" \
           "  return %c : tensor<i32>\n}\n"
    ins, outs = main_signature(text)
    assert [a.dtype for a in ins] == [np.dtype(d) for d in EXPORTED.values()]
    assert outs[0].dtype == np.int32 and all(a.shape == (2,) for a in ins)
    index = "func.func public @main(%arg0: tensor<2xindex>) -> tensor<2xindex> {\n  return %arg0 : tensor<2xindex>\n}\n"
    with pytest.raises(WorkbenchError, match="element type index of @main has no JAX dtype here"):
        main_signature(index)


def test_promotes_tables_epsilon_numpy_name_and_mantissa_are_unchanged():
    for mlir, eps in PROMOTE_EPS.items():
        assert machine_eps(mlir) == eps, mlir
    for mlir, name in PROMOTE_NUMPY.items():
        assert element_type_named(mlir).numpy == name
    for bits, name in PROMOTE_BY_MANTISSA.items():
        assert float_with_mantissa(bits) == name
    assert float_with_mantissa(9) is None


def test_computed_in_names_every_float8_type_as_numpy_does():
    text = ("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %0 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf8E4M3FNUZ>\n"
            "  %1 = stablehlo.convert %0 : (tensor<4xf8E4M3FNUZ>) -> tensor<4xf32>\n"
            "  return %1 : tensor<4xf32>\n}\n")
    assert computed_in(text) == ("float8_e4m3fnuz",)  # its MLIR spelling before: not a name numpy knows


def test_lesson_one_reads_answers_as_before():
    for name, mlir in LESSON01.items():
        assert mlir_spelling(name) == mlir
        assert _element_type_of(name) == _element_type_of(mlir) == _element_type_of(f"jnp.{name}") == mlir
        assert _element_type_of(np.dtype(name)) == mlir
    assert _element_type_of(jnp.bfloat16) == "bf16" and _element_type_of("tensor<4x8xbf16>") == "bf16"
    assert _element_type_of("f32[4,8]") == "f32" and _element_type_of("float") is None


def test_hlo_element_sizes_are_collectives_bytes():
    for hlo, size in HLO_BYTES.items():
        assert element_bytes(hlo) == size, hlo
    assert (element_bits("s4"), element_bits("pred"), element_bits("f4e2m1fn"), element_bits("c64")) == (4, 1, 4, 64)


@pytest.mark.parametrize("call", [element_dtype, element_bytes, element_bits, mantissa_bits, machine_eps,
                                  mlir_spelling, element_type_named])
@pytest.mark.parametrize("name", ["f33", "index", "F32", "", "float", None])
def test_an_unknown_name_is_a_type_error_that_names_it(call, name):
    with pytest.raises(TypeError, match=f"no element type is spelled {name!r}"):
        call(name)


def test_what_a_type_does_not_have_is_a_type_error():
    with pytest.raises(TypeError, match="s32 is not a floating-point type"):
        mantissa_bits("s32")
    with pytest.raises(TypeError, match="tf32 is a compute format with no numpy dtype"):
        element_bytes("tf32")
    assert (mantissa_bits("tf32"), element_bits("tf32"), mlir_spelling("tf32")) == (10, 19, "tf32")
    with pytest.raises(TypeError, match=r"'f8E4M3F' in MLIR, XLA HLO or numpy \(did you mean .*f8E4M3FN"):
        element_dtype("f8E4M3F")


def test_every_ml_dtypes_type_jax_has_round_trips():
    for name in [n for n in dir(ml_dtypes) if n.startswith(("float", "int", "uint", "complex", "bcomplex"))]:
        if name in NOT_IN_JAX:
            continue
        dt = np.dtype(getattr(ml_dtypes, name))
        t = element_type_named(dt.name)
        assert element_dtype(t.mlir) == element_dtype(t.hlo) == dt and mlir_spelling(t.hlo) == t.mlir
        assert element_bytes(name) == dt.itemsize
        info = ml_dtypes.iinfo(dt) if name.startswith(("int", "uint")) else ml_dtypes.finfo(dt)
        assert element_bits(t.mlir) == info.bits
        if name.startswith("float"):
            assert machine_eps(t.hlo) == float(info.eps) and mantissa_bits(name) == info.nmant


def test_no_spelling_names_two_types():
    types = [element_type_named(n) for n in _NUMPY_NAMES]
    spellings = [s for t in types for s in dict.fromkeys((t.numpy, t.mlir, t.hlo))]
    assert len(spellings) == len(set(spellings))
    assert all(element_type_named(s) == t for t in types for s in (t.numpy, t.mlir, t.hlo))


def test_the_spellings_are_the_ones_jax_writes():
    """Every type's MLIR and HLO spelling, as JAX lowers an argument of it (x64 on: float64, int64)."""
    with jax.enable_x64(True):
        for name in _NUMPY_NAMES:
            t = element_type_named(name)
            lowered = jax.jit(lambda x: x).lower(jax.ShapeDtypeStruct((3,), element_dtype(name)))
            assert f"%arg0: tensor<3x{t.mlir}>" in lowered.as_text(), name
            assert f"{t.hlo}[3]" in lowered.as_text(dialect="hlo"), name


def test_the_cost_models_element_sizes_agree():
    """cost/tensors.py sizes an element from the MLIR type's width: the same bytes as the table."""
    module = parse_module("module {}")
    with module.context:
        for name in _NUMPY_NAMES:
            t = element_type_named(name)
            assert static_tensor(ir.Type.parse(f"tensor<2x{t.mlir}>")).element_bytes == element_bytes(name), name
