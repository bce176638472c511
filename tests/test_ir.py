"""Behaviour of workbench.ir's readers of program text: the lexer's additions, the HLO reader and the op
counter, on text printed by jax, Enzyme-JaX and XLA."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.cost import module_cost, op_costs
from workbench.ir.hlo import (attribute_value, drop_attribute, read_hlo, read_instruction, strip_debug_info,
                              without_layout, without_names)
from workbench.ir.ops import op_counts, op_counts_by_function
from workbench.ir.text import mask_strings, skip_brackets, split_strings

X = jnp.ones((8, 8), jnp.float32)


def program(x, y):
    s = jnp.tanh(x @ y)
    return jnp.sum(s * 2.0, axis=0), jnp.cumsum(x, axis=1)


@pytest.fixture(scope="module")
def lowered():
    return jax.jit(program).lower(X, X)


@pytest.fixture(scope="module")
def hlo_text(lowered) -> str:
    """``as_hlo_text()``: names without ``%``, operands without shapes, headers without a signature."""
    return lowered.compiler_ir("hlo").as_hlo_text()


@pytest.fixture(scope="module")
def optimized_text(lowered) -> str:
    """XLA's optimized module as its dumps print it: ``%`` names, signatures, metadata, debug sections."""
    return lowered.compile().as_text()


def instruction_lines(text: str) -> list[str]:
    return re.findall(r"^\s+(?:ROOT )?%?[\w.\-]+ = .*$", text, re.M)


# --- the lexer ------------------------------------------------------------------------------------


def test_skip_brackets_nests_all_three_kinds_and_skips_strings():
    text = 'f32[8]{1,0:T(8,128)} x(a, "b)]}", {c})rest'
    assert text[: skip_brackets(text, 3)] == "f32[8]"
    assert text[6: skip_brackets(text, 6)] == "{1,0:T(8,128)}"
    start = text.index("(", 20)
    assert text[start: skip_brackets(text, start)] == '(a, "b)]}", {c})'


def test_strings_are_split_out_and_masked_in_place():
    text = r'a = "x \" y" {b = "{"}'
    pieces = split_strings(text)
    assert pieces[1::2] == [r'"x \" y"', '"{"']
    assert "".join(pieces) == text
    masked = mask_strings(text)
    assert len(masked) == len(text) and masked.count("{") == 1 and masked.startswith('a = "      "')


# --- the HLO reader -------------------------------------------------------------------------------


def test_reads_computations_and_instructions_of_as_hlo_text(hlo_text):
    module = read_hlo(hlo_text)
    assert module.name == "jit_program"
    names = [c.name for c in module.computations]
    assert names == re.findall(r"^(?:ENTRY )?([\w.\-]+) \{$", hlo_text, re.M)
    assert module.entry is module.computations[-1] and module.entry.entry
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert dot.shape == "f32[8,8]{1,0}" and dot.operand_names == ("x.1", "y.1")
    assert dot.attributes == "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    assert [i.root for i in module.entry.instructions].count(True) == 1
    assert module.entry.instructions[-1].root and module.entry.instructions[-1].opcode == "tuple"
    assert sum(len(c.instructions) for c in module.computations) == len(instruction_lines(hlo_text))


def test_calls_name_attribute_and_callee_with_or_without_sigils(hlo_text, optimized_text):
    calls = {(c.caller, c.instruction.opcode, c.attribute, c.callee) for c in read_hlo(hlo_text).calls}
    assert ("main.5", "reduce", "to_apply", "region_0.1") in calls
    assert ("main.5", "call", "to_apply", "cumsum.4") in calls
    fusions = {c.instruction.name: (c.attribute, c.callee) for c in read_hlo(optimized_text).calls
               if c.instruction.opcode == "fusion"}
    printed = re.findall(r"%([\w.\-]+) = \S+ fusion\(.*?calls=%([\w.\-]+)", optimized_text)
    assert printed and fusions == {name: ("calls", callee) for name, callee in printed}


def test_dump_text_reads_past_debug_sections_and_metadata(optimized_text):
    assert "FileNames" in optimized_text and "metadata={" in optimized_text
    module = read_hlo(optimized_text)
    stripped = strip_debug_info(optimized_text)
    assert "FileNames" not in stripped and "StackFrames" not in stripped and "metadata=" not in stripped
    again = read_hlo(stripped)
    assert [c.name for c in again.computations] == [c.name for c in module.computations]
    for c, d in zip(module.computations, again.computations):
        assert [(i.name, i.opcode, i.operands, i.operand_names) for i in c.instructions] == \
               [(i.name, i.opcode, i.operands, i.operand_names) for i in d.instructions]
        assert [drop_attribute(i.attributes, "metadata") for i in c.instructions] == \
               [i.attributes for i in d.instructions]


def test_instruction_fields_of_a_tuple_shape_and_literal_operands():
    ins = read_instruction('  ROOT %t = (f32[2]{0}, /*index=1*/s32[]) tuple(f32[2]{0} %a, s32[] %b), '
                           'sharding={replicated}')
    assert ins.root and ins.name == "t" and ins.opcode == "tuple"
    assert ins.shape == "(f32[2]{0}, /*index=1*/s32[])" and ins.operand_names == ("a", "b")
    assert ins.attributes == "sharding={replicated}"
    constant = read_instruction("  %c = pred[] constant(true)")
    assert constant.operands == "true" and constant.operand_names == ()
    assert read_instruction("ENTRY %main (p: f32[]) -> f32[] {") is None
    assert read_instruction("}") is None


def test_attribute_helpers():
    attributes = 'kind=kLoop, calls=%fused_computation.3, custom_call_target="x, y", metadata={op_name="a={b}"}'
    assert attribute_value(attributes, "kind") == "kLoop"
    assert attribute_value(attributes, "custom_call_target") == "x, y"
    assert attribute_value('backend_config="kind=kOutput"', "kind") is None  # in a string: not an attribute
    assert drop_attribute(attributes, "metadata") == 'kind=kLoop, calls=%fused_computation.3, custom_call_target="x, y"'
    kept = 'custom_call_target="metadata={x}"'
    assert drop_attribute(kept, "metadata") == kept
    assert without_layout("(f32[8,4]{1,0}, s32[]{:T(128)})") == "(f32[8,4], s32[])"
    assert without_names("calls=%fused_computation.3") == "calls=%"


# --- counting ops ---------------------------------------------------------------------------------

_HANDWRITTEN = '''#loc1 = loc("x")
module @m attributes {mhlo.note = "stablehlo.add"} {
  func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] {note = "stablehlo.transpose, stablehlo.transpose"} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %2 = "stablehlo.negate"(%1) : (tensor<3xf32>) -> tensor<3xf32>
    %3:2 = call @pair(%2) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    %4 = stablehlo.while(%iterArg = %3#0) : tensor<3xf32>
    cond {
      %c = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      stablehlo.return %iterArg : tensor<3xf32>
    }
    return %4 : tensor<3xf32> loc(#loc1)
  }
  func.func private @pair(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    return %arg0, %arg0 : tensor<3xf32>, tensor<3xf32>
  }
}
'''


def test_ops_are_names_at_op_position_never_in_strings_or_attributes():
    counts = op_counts(_HANDWRITTEN)
    assert counts["stablehlo.transpose"] == 1  # not the two in the string attribute
    assert counts["stablehlo.add"] == 1  # the reduce body the compact form prints in a word
    assert counts["stablehlo.return"] == 3  # the reduce body's, and the while regions'
    assert counts["stablehlo.negate"] == 1  # the generic form
    assert counts["func.call"] == 1 and counts["func.return"] == 2 and counts["func.func"] == 2
    assert "builtin.module" not in counts  # the container
    assert all("." in name for name in counts)  # region keywords ("cond", "do") are not ops


def test_ops_by_function_follow_the_bodies():
    by_function = op_counts_by_function(_HANDWRITTEN)
    assert set(by_function) == {"", "main", "pair"}
    assert by_function[""] == Counter({"func.func": 2})
    assert by_function["pair"] == Counter({"func.return": 1})
    assert sum(by_function["main"].values()) == 12


def test_op_count_above_does_not_count_a_string_attribute():
    text = '''module {
  func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<3x4xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] {note = "stablehlo.transpose, stablehlo.transpose"} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
'''
    ex = wb.explore_text(text, pipeline="canonicalize")
    assert "stablehlo.transpose, stablehlo.transpose" in ex.default_run_stage().text
    assert wb.op_count_above("stablehlo.transpose", 0)(ex)
    assert not wb.op_count_above("stablehlo.transpose", 1)(ex)


def test_hlo_ops_are_the_opcodes_of_every_instruction(hlo_text, optimized_text):
    for text in (hlo_text, optimized_text):
        opcodes = [re.search(r"= .*?\s([\w\-]+)\(", line).group(1) for line in instruction_lines(text)]
        assert op_counts(text) == Counter(opcodes)
    assert op_counts(optimized_text)["fusion"] > 0
    assert op_counts("{ lambda ; a:f32[]. let b:f32[] = sin a in (b) }") == Counter()


@pytest.fixture(scope="module", params=examples.NAMES)
def example_stages(request):
    fn, args = examples.load(request.param)
    ex = wb.explore(fn, *args)
    mlir = [s for s in ex.stages if s.group == "mlir" and not s.error]
    assert mlir, "the example has an MLIR pipeline stage"
    return ex["stablehlo"].text, mlir[-1].text


def test_op_counts_agree_with_the_cost_models_walk_of_the_parsed_module(example_stages):
    for text in example_stages:
        counts = op_counts(text)
        by_dialect = Counter()
        for name, n in counts.items():
            by_dialect[name.partition(".")[0]] += n
        assert by_dialect == Counter(module_cost(text).ops_by_dialect)
        # op_costs has one row per op, func.func aside (each function of the examples is called once)
        assert counts - Counter({"func.func": counts["func.func"]}) == Counter(op_costs(text).op)
