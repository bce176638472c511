"""The small readers of IR text that moved into workbench/ir/ from their callers (issue 26), each on
text JAX writes (lowered here from a small function) or on the test files' own modules."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from workbench.ir.hlo import has_custom_calls, has_opcode, read_hlo
from workbench.ir.hlo_locations import op_name
from workbench.ir.hlo_sharding import has_tiled_mhlo_sharding, partition_count
from workbench.ir.locations import fast_name_stack, read_location
from workbench.ir.mlir import parse_module
from workbench.ir.sdy import names_mesh_with_axes
from workbench.ir.text import (comparison_direction, function_references, leading_td_patterns, split_pipeline,
                               unranked_element_type)


@pytest.fixture(scope="module")
def lowered():
    """A sharded (one-device mesh ``x``) and a PRNG-key program, as JAX lowers them."""
    mesh = jax.make_mesh((1,), ("x",))
    x = jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("x")))
    sharded = jax.jit(lambda a: a * 2).lower(x)
    key = jax.jit(lambda k: jax.random.normal(k, (3,))).lower(jax.random.key(0))
    return {"sharded": sharded.as_text(), "sharded_hlo": sharded.as_text(dialect="hlo"), "key": key.as_text()}


def test_names_mesh_with_axes_tells_a_mesh_from_jax_s_empty_one(lowered):
    assert 'sdy.mesh @mesh = <["x"=1]>' in lowered["sharded"] and names_mesh_with_axes(lowered["sharded"])
    assert "sdy.mesh @empty_mesh = <[]>" in lowered["key"] and not names_mesh_with_axes(lowered["key"])
    assert not names_mesh_with_axes('  %0 = "sdy.mesh @m = <[\\"x\\"=2]>"')  # not at a line's start


def test_partition_count_reads_the_module_attribute_and_hlo_s_header(lowered):
    assert partition_count(lowered["sharded"]) == 1  # mhlo.num_partitions = 1 : i32
    four = lowered["sharded"].replace("mhlo.num_partitions = 1", "mhlo.num_partitions = 4")
    assert partition_count(four) == 4
    assert partition_count("HloModule m, entry_computation_layout={()->f32[]}, num_partitions=8\n") == 8
    assert partition_count("module {\n}\n") is None


def test_has_tiled_mhlo_sharding_counts_only_a_split_over_devices():
    tiled = 'func.func private @decl(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) -> tensor<8xf32>'
    assert has_tiled_mhlo_sharding(tiled)
    replicated = '%1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{replicated}"}'
    assert not has_tiled_mhlo_sharding(replicated)
    assert not has_tiled_mhlo_sharding('%0 = stablehlo.add %a, %b {mhlo.sharding = "{maximal device=0}"}')


def test_has_custom_calls_finds_hlo_s_custom_call_not_stablehlo_s(lowered):
    # JAX lowers a sharding constraint to HLO's custom-call(...) with custom_call_target="Sharding"
    assert "custom-call(" in lowered["sharded_hlo"] and has_custom_calls(lowered["sharded_hlo"])
    # MLIR's spelling of one is not HLO's
    assert not has_custom_calls('%1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{replicated}"}')
    assert not has_custom_calls(lowered["sharded_hlo"].replace("custom-call(", "copy("))


def test_has_opcode_finds_an_instruction_of_that_opcode_only():
    hlo = jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, v: v * 2, x)).lower(jnp.ones(3)).as_text("hlo")
    assert has_opcode(hlo, "while") and not has_opcode(hlo, "conditional")
    assert not has_opcode(hlo.replace(" while(", " copy("), "while")  # names and metadata say "while", no opcode
    assert has_opcode("%a = f32[2]{0} all-reduce(%x), to_apply=%add", "all-reduce")
    assert not has_opcode("%a = f32[2]{0} all-reduce(%x), to_apply=%add", "reduce")  # inside a longer opcode


def test_op_name_reads_an_instruction_s_name_stack():
    hlo = jax.jit(lambda a: jnp.sin(a) * 2).lower(jnp.ones(3)).compile().as_text()
    names = {ins.opcode: op_name(ins.attributes) for c in read_hlo(hlo).computations
             for ins in c.instructions}
    assert names["sine"] == "jit(<lambda>)/sin" and names["multiply"] == "jit(<lambda>)/mul"
    assert op_name('metadata={op_name="jit(f)/\\"q\\"/add" source_line=3}') == 'jit(f)/"q"/add'
    assert op_name("metadata={source_file=\"f.py\" source_line=3}") == ""


def _ops(text: str) -> tuple:
    """A parsed module and the ops of its @main (the ops live only while the module does)."""
    module = parse_module(text)
    main = next(op for op in module.body.operations
                if op.operation.name == "func.func" and op.operation.attributes["sym_name"].value == "main")
    return module, list(main.regions[0].blocks[0].operations)


def test_fast_name_stack_reads_jax_s_location_and_a_bare_file_one():
    f = jax.jit(lambda a, b: jnp.where(a < b, a, b))
    _, ops = _ops(f.lower(jnp.ones(3), jnp.ones(3)).as_text(debug_info=True))
    locs = {op.operation.name: str(op.location) for op in ops}
    assert fast_name_stack(locs["stablehlo.compare"]) == "jit(<lambda>)/lt"
    assert fast_name_stack(locs["func.return"]) == "jit(<lambda>)"
    # a name around one frame, no call site (the return's location when jitted at a script's top level):
    # left to read_location, which finds the name
    top = 'loc("jit(<lambda>)"("<module>"("<string>":4:2 to :74)))'
    assert fast_name_stack(top) is None and read_location(top)[0].name == "jit(<lambda>)"
    plain, ops = _ops(jax.jit(lambda a: a + 1).lower(jnp.ones(3)).as_text())
    bare = [str(op.location) for op in ops]
    assert bare and all(fast_name_stack(loc) == "" for loc in bare)  # loc("-":3:12): text parsed without locations
    assert fast_name_stack('loc("jit(f)/\\"q\\""(callsite("f"("x.py":1:2) at "g"("x.py":3:4))))') == 'jit(f)/"q"'
    assert fast_name_stack('loc(fused["a"("x.py":1:2), "b"("x.py":3:4)])') is None


def test_aliases_in_jax_s_forms_read_as_the_same_location_written_out():
    """JAX's chains of frames are aliases of three forms (a link ``callsite(#a at #b)``, a function's frame
    ``"fn"(#a)``, a file's place ``"f.py":3:4 to :9``), read without the general parser: the same origins."""
    aliases = {"#f": '"dir/q\\"uote.py":3:4 to :9', "#g": '"g.py":7:1', "#fn": '"fn"(#f)', "#caller": '"caller"(#g)',
               "#link": "callsite(#fn at #caller)", "#op": '"jit(f)/add"(#link)', "#odd": '"a/b"(#f)',
               "#range": '"h.py":2:1 to 4:3'}
    written = ('"jit(f)/add"(callsite("fn"("dir/q\\"uote.py":3:4 to :9) at "caller"("g.py":7:1)))')
    got = read_location("#op", aliases)
    assert got == read_location(written)
    assert got[0].name == "jit(f)/add"
    assert [(f.file, f.line, f.column, f.function) for f in got[0].frames] == [
        ('dir/q"uote.py', 3, 4, "fn"), ("g.py", 7, 1, "caller")]
    assert read_location("#odd", aliases) == read_location('"a/b"("dir/q\\"uote.py":3:4 to :9)')  # a name stack
    assert read_location("#range", aliases)[0].frames[0].line == 2


def test_comparison_direction_and_unranked_element_type_on_what_jaxlib_prints():
    from jaxlib.mlir import ir

    module, ops = _ops(jax.jit(lambda a, b: a < b).lower(jnp.ones(3), jnp.ones(3)).as_text())
    compare = next(op for op in ops if op.operation.name == "stablehlo.compare")
    printed = str(compare.operation.attributes["comparison_direction"])
    assert printed == "#stablehlo<comparison_direction LT>" and comparison_direction(printed) == "LT"
    assert comparison_direction("<>") is None
    with module.context:
        assert unranked_element_type(str(ir.Type.parse("tensor<*xbf16>"))) == "bf16"
        assert unranked_element_type(str(ir.Type.parse("tensor<4xf32>"))) is None


def test_function_references_counts_calls_not_the_definition_or_strings():
    def f(a, b):
        return jnp.where(a < b, a, b) + jnp.where(b < a, a, b)  # JAX lowers jnp.where once, called twice

    text = jax.jit(f).lower(jnp.ones(3), jnp.ones(3)).as_text()
    assert "func.func private @_where" in text
    assert function_references(text) == {"main": 0, "_where": 2}
    quoted = text.replace('jax.result_info = "result"', 'jax.result_info = "@_where"')
    assert quoted != text and function_references(quoted) == {"main": 0, "_where": 2}


def test_leading_td_patterns_reads_the_pass_that_applies_a_pattern_list():
    from workbench.pipeline.catalog import patterns_pass
    from workbench.views.text import short_pass

    applied = patterns_pass(("transpose_transpose<16>", "add_simplify", "noop_slice"))
    assert leading_td_patterns(applied) == ["transpose_transpose<16>", "add_simplify", "noop_slice"]
    assert short_pass(applied) == "enzyme-hlo-generate-td{patterns=<3 patterns>},transform-interpreter,..."
    assert leading_td_patterns("canonicalize," + applied) is None  # only a pipeline that opens with it
    assert split_pipeline(applied)[1:] == ["transform-interpreter", "enzyme-hlo-remove-transform"]
