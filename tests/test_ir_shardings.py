"""workbench.ir's readers of shardings -- ``ir/sdy.py`` (Shardy's meshes and tensor shardings),
``ir/hlo_sharding.py`` (XLA's HloSharding and replica groups), ``ir/written_shardings.py`` (which value of
a module's text carries which sharding) and ``ir/hlo.py``'s shape and attribute pieces -- on real modules:
the sharded module of tests/test_shardy.py after Shardy's propagation (in this process), and the built-in
sharded transformer block (workbench/examples/attention.py) on a 2 x 4 mesh, whose stages come from a
child Python that sees 8 CPU devices. Where jaxlib can parse a module, its own ``sdy`` bindings are the
reference for what every Shardy attribute in it says."""
from pathlib import Path

import pytest

import workbench as wb
from tests.test_shardy import SHARDED_TEXT
from workbench.errors import ModuleParseError
from workbench.ir.hlo import Array, array_sizes, arrays, attribute_text, read_hlo, read_instruction, tuple_shapes
from workbench.ir.hlo_sharding import HloSharding, group_size, is_partitioned, read_hlo_sharding, tuple_shardings
from workbench.ir.mlir import parse_module
from workbench.ir.sdy import (
    AxisRef,
    DimSharding,
    Mesh,
    TensorSharding,
    attribute_body,
    axis_refs,
    keyed_axes,
    per_value_shardings,
    read_mesh,
    read_meshes,
    read_sharding,
)
from workbench.ir.written_shardings import ShardedScope, WrittenSharding, hlo_shardings, mlir_shardings, tensor_dims

ROOT = str(Path(__file__).resolve().parents[1])


def test_shardy_attributes_in_each_form_they_are_written():
    s = read_sharding('#sdy.sharding<@mesh, [{"b":(1)2, "a", ?}, {}p1, {"c"}], replicated={"b":(2)2}, unreduced={"d"}>')
    assert s == TensorSharding("mesh", None, (DimSharding((AxisRef("b", (1, 2)), AxisRef("a")), open=True),
                                              DimSharding(()), DimSharding((AxisRef("c"),))),
                               replicated=(AxisRef("b", (2, 2)),), unreduced=(AxisRef("d"),))
    assert [a.written for a in s.dims[0].axes] == ["b:(1)2", "a"]
    mesh = Mesh("mesh", (("a", 2), ("b", 4)))
    assert s.mesh({"mesh": mesh}) is mesh and [a.size(mesh) for a in s.dims[0].axes] == [2, 2]
    assert s.mesh({}) == Mesh("mesh", ()) and AxisRef("a").size(s.mesh({})) is None  # a mesh the text lacks
    inline = read_sharding('<mesh<["x"=2, "y"=4]>, [{"y"}]>')
    assert inline.mesh({"mesh": mesh}) == Mesh("", (("x", 2), ("y", 4))) and inline.mesh_name == ""
    assert read_sharding("{devices=[2,1]<=[2]}") is None and read_sharding("") is None
    assert read_mesh('#sdy.mesh<["data"=2, "model"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>', "m") == Mesh(
        "m", (("data", 2), ("model", 4)))
    assert read_mesh("<[]>", "empty_mesh") == Mesh("empty_mesh", ()) and read_mesh("<[], device_ids=[3]>").size == 1
    per = '#sdy.sharding_per_value<[<mesh<["x"=2]>, [{"x"}, {}]>, <@mesh, [{}, {"b"}]>]>'
    assert per_value_shardings(per) == ['<mesh<["x"=2]>, [{"x"}, {}]>', '<@mesh, [{}, {"b"}]>']
    assert per_value_shardings('#sdy.sharding_per_value<[<@m, []>, <@m, [{"a"}]>]>') == ["<@m, []>", '<@m, [{"a"}]>']
    # the axes Shardy's collectives name, as jaxlib prints them and as the op writes them
    assert axis_refs('#sdy<list_of_axis_ref_lists[{}, {"b":(1)2, "a"}]>') == [AxisRef("b", (1, 2)), AxisRef("a")]
    assert axis_refs('[{"x"}: 0->1]') == [AxisRef("x")]
    assert attribute_body('#sdy<axis_ref_list{"model"}>') == '{"model"}' and attribute_body('{"x"}') == '{"x"}'
    line = 'sdy.manual_computation(%0) in_shardings=[<@m, [{"a"}]>] out_shardings=[<@m, [{"a"}]>] manual_axes={"a", "b"} ('
    assert keyed_axes(line, "manual_axes") == (AxisRef("a"), AxisRef("b")) and keyed_axes(line, "unreduced") == ()


def test_hlo_shardings_and_replica_groups_in_each_form_xla_prints():
    assert read_hlo_sharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}") == HloSharding(
        "tiled", (2, 1, 4), ("replicated",))
    manual = read_hlo_sharding("{devices=[2,1,4]<=[8] last_tile_dims={manual}}")
    assert manual == HloSharding("tiled", (2, 1, 4), ("manual",)) and manual.rank == 2
    assert read_hlo_sharding('{devices=[2,2]<=[4] metadata={op_name="x"}}') == HloSharding("tiled", (2, 2))
    assert read_hlo_sharding("{maximal device=3}") == HloSharding("maximal", device=3)
    assert [read_hlo_sharding(s).kind for s in ("{replicated}", "manual", "{unknown}", "{devices=}")] == [
        "replicated", "manual", "unknown", "unread"]
    assert tuple_shardings("{{devices=[2,1]<=[2]}, {replicated}, {maximal device=1}}") == [
        "{devices=[2,1]<=[2]}", "{replicated}", "{maximal device=1}"]
    assert group_size("{{0,1,2,3},{4,5,6,7}}", 8) == 4 and group_size("[2,4]<=[8]", 8) == 4
    assert group_size("[4,2]<=[2,4]T(1,0)", 8) == 2
    assert group_size("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}", 8) == 4
    assert group_size("mesh['x'=2,'y'=4] {'x','y':(1)2}", 8) == 4
    assert group_size("{}", 8) == group_size(None, 8) == 8  # no groups: every device
    assert group_size("{{0,1},{1,2},{2,3},{3,0}}", 8, pairs=True) == 4 and group_size(None, 8, pairs=True) is None


def test_an_hlo_instructions_sharding_shapes_and_attributes():
    ins = read_instruction('  %p = (f32[8,4]{1,0}, /*index=1*/s32[]) parameter(0), metadata={op_name="sharding={x}"}, '
                           "sharding={{devices=[2,1,2]<=[4] last_tile_dim_replicate}, {replicated}}")
    assert ins.sharding == "{{devices=[2,1,2]<=[4] last_tile_dim_replicate}, {replicated}}"  # not the string's
    assert tuple_shapes(ins.shape) == ["f32[8,4]{1,0}", "s32[]"] and array_sizes(ins.shape) is None
    assert read_instruction('  %a = f32[4]{0} add(%x, %y), metadata={op_name="sharding={replicated}"}').sharding is None
    assert array_sizes("f32[16,?]{1,0}") == (16, None) and array_sizes("pred[]") == () and tuple_shapes("f32[2]") == []
    found = arrays("(f32[8,<=4]{1,0}, token[], bf16[2])")
    assert found == [Array("f32", ("8", "<=4")), Array("token", ()), Array("bf16", ("2",))]
    assert found[0].bounds == (8, 4) and found[0].sizes == (8, None)
    attributes = "replica_groups=mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)) {'y'}, to_apply=%add.1"
    assert attribute_text(attributes, "replica_groups") == "mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)) {'y'}"
    assert attribute_text(attributes, "to_apply") == "%add.1" and attribute_text(attributes, "channel_id") is None
    assert tensor_dims("tensor<16x?x64xbf16>") == [16, None, 64] and tensor_dims("tensor<f32>") == []
    assert tensor_dims("!stablehlo.token") is None


def _bindings_reading(attr) -> TensorSharding:
    """What jaxlib's sdy bindings read in a TensorShardingAttr, as the text reader's values."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    def axes(refs) -> tuple[AxisRef, ...]:
        out = []
        for a in (sdy.AxisRefAttr(r) for r in refs):
            sub = sdy.SubAxisInfoAttr(a.sub_axis_info) if a.sub_axis_info is not None else None
            out.append(AxisRef(a.name, (sub.pre_size, sub.size) if sub else None))
        return tuple(out)

    s = sdy.TensorShardingAttr(attr)
    ref, inline = s.mesh_or_ref, None
    if not isinstance(ref, ir.FlatSymbolRefAttr):
        inline = Mesh("", tuple((a.name, a.size) for a in (sdy.MeshAxisAttr(x) for x in sdy.MeshAttr(ref).axes)))
    dims = tuple(DimSharding(axes(d.axes), not d.is_closed) for d in map(sdy.DimensionShardingAttr, s.dimension_shardings))
    return TensorSharding(ref.value if inline is None else "", inline, dims, axes(s.replicated_axes), axes(s.unreduced_axes))


def _attributes(op) -> tuple[list, list]:
    """The tensor shardings ``op`` carries, as jaxlib's bindings find them: those of values the text names
    (its arguments if a function; its results; a manual computation's body arguments), and those of a
    function's results, which have no name."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    def per_arg(key):
        attrs = [ir.DictAttr(d) for d in ir.ArrayAttr(op.attributes[key])] if key in op.attributes else []
        return [d["sdy.sharding"] for d in attrs if "sdy.sharding" in d]

    named = per_arg("arg_attrs")
    if "sdy.sharding" in op.attributes:
        named += list(sdy.TensorShardingPerValueAttr(op.attributes["sdy.sharding"]).shardings)
    named += [op.attributes[k] for k in ("out_sharding", "sharding") if op.name.startswith("sdy.") and k in op.attributes]
    for key in ("in_shardings", "out_shardings"):
        named += list(sdy.TensorShardingPerValueAttr(op.attributes[key]).shardings) if key in op.attributes else []
    return named, per_arg("res_attrs")


def _every_attribute_agrees(text: str) -> int:
    """Checks the text reader against jaxlib's bindings on every mesh and tensor sharding of the module
    ``text``; how many of those of named values it checked (what ``mlir_shardings`` should find)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    module = parse_module(text)
    checked = 0
    with module.context:
        ops = [o.operation for o in module.body.operations]
        for op in ops:  # the list grows by every op nested in the ones before
            ops += [o.operation for r in op.regions for b in r.blocks for o in b.operations]
            if op.name == "sdy.mesh":
                name = ir.StringAttr(op.attributes["sym_name"]).value
                axes = tuple((a.name, a.size) for a in map(sdy.MeshAxisAttr, sdy.MeshAttr(op.attributes["mesh"]).axes))
                assert read_meshes(text.split("\n"))[name] == Mesh(name, axes)
            if "sdy.sharding" in op.attributes:
                per_value = per_value_shardings(str(op.attributes["sdy.sharding"]))
                assert len(per_value) == len(op.results) and all(read_sharding(s) for s in per_value)
            named, results = _attributes(op)
            for attr in named + results:
                assert read_sharding(str(attr)) == _bindings_reading(attr), str(attr)
            checked += len(named)
    return checked


@pytest.fixture(scope="module")
def propagated():
    return wb.explore_text(SHARDED_TEXT, pipeline="canonicalize")["sdy-propagation-pipeline#1"].text


def test_the_values_shardy_propagation_annotated_as_written(propagated):
    lines = propagated.split("\n")
    assert lines[2].lstrip().startswith("func.func public @main(") and lines[6] == "  }"
    assert mlir_shardings(lines) == [ShardedScope("main", 2, 6, (
        WrittenSharding("%arg0", "sdy", '<@mesh, [{"x"}, {}]>', "tensor<8x4xf32>"),  # %arg1: none written
        WrittenSharding("%0", "sdy", '<@mesh, [{"x"}, {}]>', "tensor<8x6xf32>"),  # the dot_general
        WrittenSharding("%1", "sdy", '<@mesh, [{"x"}, {}]>', "tensor<8x6xf32>")))]  # the tanh
    assert read_meshes(lines) == {"mesh": Mesh("mesh", (("x", 2), ("y", 2)))}
    assert _every_attribute_agrees(propagated) == 3  # %arg0 and the two ops (and the result, no name)


def test_a_module_jaxlib_cannot_parse_is_read_all_the_same(propagated):
    """A pasted module whose op names a mesh it does not define: jaxlib's parser refuses it, the text
    reader reads every value, the undefined mesh without axis sizes."""
    tanh = next(line for line in propagated.split("\n") if "stablehlo.tanh" in line)
    text = propagated.replace(tanh, tanh.replace("<[<@mesh,", "<[<@elsewhere,"))
    with pytest.raises(ModuleParseError, match="unknown mesh"):
        parse_module(text)
    main, = mlir_shardings(text.split("\n"))
    assert [(v.name, v.sharding) for v in main.values] == [
        ("%arg0", '<@mesh, [{"x"}, {}]>'), ("%0", '<@mesh, [{"x"}, {}]>'), ("%1", '<@elsewhere, [{"x"}, {}]>')]
    assert read_sharding(main.values[2].sharding).mesh(read_meshes(text.split("\n"))) == Mesh("elsewhere", ())


def test_the_other_places_a_module_writes_a_sharding():
    """Shardy's collectives and reshards, a manual computation's results and body, an op's several results,
    ``mhlo.sharding`` strings, a declaration, and an op with regions whose sharding is on its closing line."""
    text = "\n".join([
        'module {',
        '  sdy.mesh @m = <["a"=2, "b"=2]>',
        '  func.func private @decl(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) -> tensor<8xf32>',
        '  func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {',
        '    %0:2 = "x.pair"(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"a"}, {}]>, <@m, [{}, {}]>]>} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<4xf32>)',
        '    %1 = sdy.reshard %0#0 <@m, [{}, {"b"}]> : tensor<8x8xf32>',
        '    %2 = sdy.all_gather [{}, {"b"}] %1 out_sharding=<@m, [{}, {}]> : tensor<8x8xf32>',
        '    %3 = sdy.manual_computation(%2) in_shardings=[<@m, [{"a"}, {}]>] out_shardings=[<@m, [{"a"}, {}]>] manual_axes={"a"} (%x: tensor<4x8xf32>) {',
        '      sdy.return %x : tensor<4x8xf32>',
        '    } : (tensor<8x8xf32>) -> tensor<8x8xf32>',
        '    %4 = "x.loop"(%3) ({',
        '      "x.yield"(%3) : (tensor<8x8xf32>) -> ()',
        '    }) {mhlo.sharding = "{{replicated}, {maximal device=1}}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>',
        '    return %4 : tensor<8x8xf32>',
        '  }',
        '}'])
    decl, main = mlir_shardings(text.split("\n"))
    assert decl == ShardedScope("decl", 2, 2, (WrittenSharding("%arg0", "hlo", "{devices=[2]<=[2]}", "tensor<8xf32>"),))
    assert (main.function, main.first, main.last) == ("main", 3, 14)
    assert main.values == (
        WrittenSharding("%0#0", "sdy", '<@m, [{"a"}, {}]>', "tensor<8x8xf32>"),
        WrittenSharding("%0#1", "sdy", "<@m, [{}, {}]>", "tensor<4xf32>"),
        WrittenSharding("%0", "group", parts=("%0#0", "%0#1")),
        WrittenSharding("%1", "sdy", '<@m, [{}, {"b"}]>', "tensor<8x8xf32>"),
        WrittenSharding("%2", "sdy", "<@m, [{}, {}]>", "tensor<8x8xf32>"),
        WrittenSharding("%x", "manual", '<@m, [{"a"}, {}]>', "tensor<4x8xf32>", manual_axes=("a",)),
        WrittenSharding("%3", "sdy", '<@m, [{"a"}, {}]>', "tensor<8x8xf32>"),  # read on its closing line
        WrittenSharding("%4", "hlo", "{replicated}", "tensor<8x8xf32>"))  # a tuple's first element: one result


# -- the built-in sharded example on 8 devices (a child Python) -------------------------------------------
SCRIPT = r"""
import sys
from pathlib import Path
sys.path.insert(0, %(root)r)
import workbench as wb
from workbench.examples import attention

out = Path(%(out)r)
ex = wb.explore(attention.fn, *attention.sharded_args())
for name in ("stablehlo", "sdy-propagation-pipeline#1", "sdy-reshard-to-collectives#1", "xla:before_optimizations",
             "xla:spmd-partitioning#1"):
    (out / name.replace(":", "_")).write_text(ex[name].text)
print("RESULT{}")
"""

# sharded_args' layout (Megatron's): the arguments in their pytree's order, x last, each with the mesh axes
# that split each of its dimensions, its type, and what XLA writes for it (devices=[...] last_tile_dim_replicate)
COLUMN, ROW, WHOLE = ((), ("model",)), (("model",), ()), ((),)
LAYOUT = [("ln1_b", WHOLE, "64", None), ("ln1_g", WHOLE, "64", None), ("ln2_b", WHOLE, "64", None),
          ("ln2_g", WHOLE, "64", None), ("w1", COLUMN, "64x128", (1, 4, 2)), ("w2", ROW, "128x64", (4, 1, 2)),
          ("wk", COLUMN, "64x64", (1, 4, 2)), ("wo", ROW, "64x64", (4, 1, 2)), ("wq", COLUMN, "64x64", (1, 4, 2)),
          ("wv", COLUMN, "64x64", (1, 4, 2)), ("x", (("data",), (), ()), "2x32x64", (2, 1, 1, 4))]


@pytest.fixture(scope="module")
def block(tmp_path_factory, cpu_devices):
    out = tmp_path_factory.mktemp("block_stages")
    script = tmp_path_factory.mktemp("block_script") / "block.py"
    script.write_text(SCRIPT % {"root": ROOT, "out": str(out)})
    cpu_devices(script)
    return {p.name: p.read_text() for p in out.iterdir()}


def _written(dims: tuple[tuple[str, ...], ...]) -> str:
    """``<@mesh, [{"model"}, {}]>``: a sharding over the block's mesh as Shardy writes it."""
    return "<@mesh, [" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims) + "]>"


def test_the_sharded_blocks_mlir_stages_as_written_and_as_jaxlib_reads_them(block):
    lines = block["stablehlo"].split("\n")
    assert read_meshes(lines) == {"mesh": Mesh("mesh", (("data", 2), ("model", 4)))}
    main, *private = mlir_shardings(lines)
    assert main.function == "main" and private and not any(s.values for s in private)  # jnp's helpers: none
    assert main.values == tuple(WrittenSharding(f"%arg{k}", "sdy", _written(dims), f"tensor<{shape}xf32>")
                                for k, (_, dims, shape, _) in enumerate(LAYOUT))
    assert read_sharding(main.values[10].sharding) == TensorSharding(
        "mesh", None, (DimSharding((AxisRef("data"),)), DimSharding(()), DimSharding(())))
    for name in ("stablehlo", "sdy-propagation-pipeline#1", "sdy-reshard-to-collectives#1"):
        text = block[name]
        read = [v for s in mlir_shardings(text.split("\n")) for v in s.values if v.kind != "group"]
        assert _every_attribute_agrees(text) == len(read) >= 11, name  # each argument's and result's once


def test_the_sharded_blocks_hlo_stages_as_written(block):
    before, spmd = block["xla_before_optimizations"], block["xla_spmd-partitioning#1"]
    assert not is_partitioned(before) and is_partitioned(spmd)
    entry = next(s for s in hlo_shardings(before.split("\n")) if s.function.startswith("ENTRY "))
    params = {int(i.operands): i for c in read_hlo(before).computations if c.entry for i in c.instructions
              if i.opcode == "parameter"}
    for k, (_, _, shape, tiles) in enumerate(LAYOUT):
        ins = params[k]
        written = next(v for v in entry.values if v.name == "%" + ins.name)
        assert (written.sharding, written.type) == (ins.sharding, ins.shape) and array_sizes(ins.shape) == tuple(
            int(d) for d in shape.split("x"))
        want = HloSharding("replicated") if tiles is None else HloSharding("tiled", tiles, ("replicated",))
        assert read_hlo_sharding(written.sharding) == want, k
    groups = {}
    for c in read_hlo(spmd).computations:
        for i in c.instructions:
            if i.opcode == "all-reduce":
                text = attribute_text(i.attributes, "replica_groups")
                groups[text] = group_size(text, 8)
    assert groups == {"{{0,1,2,3},{4,5,6,7}}": 4, "{{0,4},{1,5},{2,6},{3,7}}": 2,
                      "mesh['axis_0'=2,'axis_1'=1,'axis_2'=1,'axis_3'=4] {'axis_0'}": 2}
