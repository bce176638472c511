"""Provenance: which line of the user's Python became which op, in every stage (ex.locations, ex.source_map,
ex.lineage), on real programs: the transformer block gradient of the built-in examples, a function whose
transposes a pattern removes, jnp.linalg and a Flax linen model (whose ops JAX lowers into private functions
that carry no file of their own), the scan example, a function defined in a notebook cell (a real kernel,
through the magic), and a module given as text without locations."""
import json

import jax
import jax.numpy as jnp
import nbformat
import pytest

import workbench as wb
from workbench import examples
from workbench.analysis.cost import hlo_op_costs, module_cost, op_costs
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.ir.locations import Frame, mlir_op_locations, read_location
from tests.corpus import flax_programs

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

NO = "(no location)"


@pytest.fixture(scope="module")
def block():
    fn, args = examples.load("attention")
    return wb.explore(fn, *args)


def tb(x, y):
    return jnp.dot(x.T, y.T).T


@pytest.fixture(scope="module")
def transposes():
    return wb.explore(tb, jnp.ones((8, 16)), jnp.ones((4, 8)))


def test_the_location_forms_jax_and_the_passes_write():
    (o,) = read_location('loc("jit(f)/dot_general"(callsite("layer"("/m.py":3:17 to :22) at "/m.py":9:5)))')
    assert o.name == "jit(f)/dot_general" and o.frames == (Frame("/m.py", 3, 17, "layer"), Frame("/m.py", 9, 5))
    fused = read_location('loc(fused["a"("f.py":1:2), "g.py":3:4])')
    assert [x.frame for x in fused] == [Frame("f.py", 1, 2, "a"), Frame("g.py", 3, 4)]
    assert read_location("loc(unknown)") == ()
    # a range that ends on another line (a call written over two lines) keeps the frames after it
    (spread,) = read_location('loc(callsite("f"("/m.py":3:8 to 4:20) at "/r.py":9:4))')
    assert spread.frames == (Frame("/m.py", 3, 8, "f"), Frame("/r.py", 9, 4))
    (aliased,) = read_location("loc(#loc2)", {"#loc2": '"jit(f)/add"(#loc1)', "#loc1": '"x.py":7:1'})
    assert aliased.name == "jit(f)/add" and aliased.frame == Frame("x.py", 7, 1)


def test_an_inlined_op_without_a_file_takes_its_call_sites_name_stack_and_frames():
    """What MLIR's inliner writes for an op of a private function JAX gave only a name."""
    (o,) = read_location('loc(callsite("transpose" at "jit(f)/jit(cholesky)"(callsite("f"("/m.py":3:5) at '
                         '"/t.py":9:1))))')
    assert o.name == "jit(f)/jit(cholesky)/transpose"
    assert o.frames == (Frame("/m.py", 3, 5, "f"), Frame("/t.py", 9, 1))


def test_private_functions_calling_each_other_end_the_search_for_a_call_site():
    """A call cycle (no JAX program makes one, a module given as text can) leaves the ops where they were."""
    text = "\n".join([
        "module {",
        "  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {",
        "    %0 = call @a(%arg0) : (tensor<f32>) -> tensor<f32> loc(#loc3)",
        "    return %0 : tensor<f32> loc(#loc)",
        "  } loc(#loc)",
        "  func.func private @a(%arg0: tensor<f32>) -> tensor<f32> {",
        "    %0 = call @b(%arg0) : (tensor<f32>) -> tensor<f32> loc(#loc1)",
        "    return %0 : tensor<f32> loc(#loc)",
        "  } loc(#loc)",
        "  func.func private @b(%arg0: tensor<f32>) -> tensor<f32> {",
        "    %0 = call @a(%arg0) : (tensor<f32>) -> tensor<f32> loc(#loc2)",
        "    %1 = stablehlo.negate %0 : tensor<f32> loc(#loc2)",
        "    return %1 : tensor<f32> loc(#loc)",
        "  } loc(#loc)",
        "  func.func private @c(%arg0: tensor<f32>) -> tensor<f32> {",
        "    %0 = call @c(%arg0) : (tensor<f32>) -> tensor<f32> loc(#loc2)",
        "    return %0 : tensor<f32> loc(#loc)",
        "  } loc(#loc)",
        "} loc(#loc)",
        "#loc = loc(unknown)",
        '#loc1 = loc("b")',
        '#loc2 = loc("neg")',
        '#loc3 = loc("jit(f)/jit(a)"("/m.py":4:2))',
    ])
    ops = {(o.func, o.op, o.result): o for o in mlir_op_locations(text)}
    (neg,) = ops["b", "stablehlo.negate", "%1"].origins  # b is called from a, a from main
    assert neg.name == "jit(f)/jit(a)/b/neg" and neg.frame == Frame("/m.py", 4, 2)
    (loop,) = ops["c", "call", "%0"].origins  # c calls only itself: no call site outside it
    assert loop.name == "neg" and loop.frames == ()


def test_locations_name_each_op_its_line_of_the_users_code(block):
    src = examples.__file__.replace("__init__.py", "attention.py")
    for stage in ("stablehlo", "enzyme-hlo-patterns#1", "xla:optimized"):
        df = block.locations(stage)
        assert list(df.columns) == ["op", "result", "func", "fusion", "text_line", "your_file", "your_line",
                                    "your_function", "file", "line", "column", "function", "name", "origins",
                                    "how", "via"]
        text = block[stage].text.splitlines()
        located = df[df.file == src]
        assert len(located) > 20, stage
        assert set(located.function) >= {"attention", "layer_norm"}, set(located.function)
        for r in located.head(50).itertuples():  # text_line is the op's line in the stage's text as shown
            assert r.result in text[r.text_line], (stage, r.result, text[r.text_line])
    st = block.locations("stablehlo")
    dots = st[st.op == "stablehlo.dot_general"]
    assert (dots.file == src).all() and dots.name.str.endswith("dot_general").all()
    xla = block.locations("xla:optimized")
    inside = xla[xla.fusion != ""]
    assert len(inside) and set(inside.fusion) <= set(xla[xla.op == "fusion"].result)


def test_per_line_costs_add_up_to_each_stages_total(block):
    sm = block.source_map()
    assert sm.attrs["stages"]["stablehlo"] == "stablehlo" and sm.attrs["stages"]["xla"] == "xla:optimized"
    last = sm.attrs["stages"]["mlir"]
    assert last == block.pipeline_stages[-1].name
    for prefix, stage in (("stablehlo", "stablehlo"), ("mlir", last)):
        costs = op_costs(block[stage].text)
        assert sm[f"{prefix}_flops"].sum() == module_cost(block[stage].text).flops == costs.flops.sum()
        assert sm[f"{prefix}_bytes"].sum() == costs.bytes.sum()
        assert sm[f"{prefix}_ops"].sum() == len(costs)  # every op counted at one line, none dropped
    xla = hlo_op_costs(block["xla:optimized"].text)
    assert sm.xla_flops.sum() == xla.flops.sum() and sm.xla_ops.sum() == len(xla)
    # the lines are the block's, with their code; the ops without a line are a visible row, last
    src = examples.__file__.replace("__init__.py", "attention.py")
    lines = sm[sm.file == src]
    assert lines.line.is_monotonic_increasing and (lines.code != "").all()
    heavy = lines.sort_values("stablehlo_flops").iloc[-1]
    assert "@" in heavy.code or "einsum" in heavy.code, heavy.code
    assert sm.iloc[-1].file == NO and (sm.file == NO).sum() == 1
    assert any(lines.xla_fusions != "")
    # one stage alone, and by function
    one = block.source_map(stage="xla:optimized")
    assert {"ops", "flops", "bytes", "fusions"} <= set(one.columns) and one.flops.sum() == xla.flops.sum()
    funcs = block.source_map(by="function")
    assert {"attention", "layer_norm"} <= set(funcs.function)
    assert funcs.stablehlo_flops.sum() == sm.stablehlo_flops.sum()


def test_lineage_follows_an_op_and_says_which_stage_removed_it(transposes):
    ex = transposes
    src = __file__
    l = ex.lineage("canonicalize#2", "%0")  # x.T: the dot_transpose pattern folds it into the dot
    assert l.attrs["removed_by"] == "enzyme-hlo-patterns#1"
    assert l.attrs["sources"] == [f"{src}:{tb.__code__.co_firstlineno + 1}"]
    gone = l[(l.stage == "enzyme-hlo-patterns#1")]
    assert len(gone) == 1 and gone.iloc[0].result == "" and "removed by enzyme-hlo-patterns#1" in gone.iloc[0].text
    kept = l[(l.stage == "stablehlo") & (l.result != "")]
    assert list(kept.op) == ["stablehlo.transpose"] and "stablehlo.transpose %arg0" in kept.iloc[0].text
    lines = ex["stablehlo"].text.splitlines()
    assert all(r.text in lines[r.line].strip() or lines[r.line].strip().startswith(r.text[:40])
               for r in kept.itertuples())
    with pytest.raises(UnknownNameError, match="%99"):
        ex.lineage("stablehlo", "%99")


def test_lineage_of_a_fusion_names_the_lines_and_ops_it_holds(block):
    xla = block.locations("xla:optimized")
    fusion = xla[(xla.op == "fusion")].result.iloc[0]
    l = block.lineage("xla:optimized", fusion)
    src = examples.__file__.replace("__init__.py", "attention.py")
    assert l.attrs["sources"] and all(s.startswith(src + ":") for s in l.attrs["sources"])
    mlir = l[(l.stage == "stablehlo") & (l.result != "")]
    assert len(mlir) and mlir.op.str.startswith("stablehlo.").all()
    assert fusion in set(l[l.stage == "xla:optimized"].result)


def test_a_module_without_locations_says_why_source_map_cannot_work(transposes):
    stripped = wb.explore_text(transposes["stablehlo"].text, pipeline="canonicalize")
    with pytest.raises(WorkbenchError, match="has no source locations"):
        stripped.source_map()
    with pytest.raises(WorkbenchError, match="no source locations"):
        stripped.source_map(stage="canonicalize#1")
    with pytest.raises(WorkbenchError, match="holds no ops with locations"):
        transposes.locations("jaxpr")


@pytest.mark.slow
def test_a_function_in_a_notebook_cell_maps_to_the_cells_lines(tmp_path):
    """In a real kernel, through the magic: the lines are the cell's, with the cell's code."""
    from nbclient import NotebookClient

    cell = "%%hlo -o ex --no-panel\ndef g(x):\n    y = jnp.sin(x) @ x.T\n    return (y * 2).sum()\ng(jnp.ones((4, 4)))"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench\nimport jax.numpy as jnp"),
                nbformat.v4.new_code_cell(cell),
                nbformat.v4.new_code_cell("import json\nsm = ex.source_map()\n"
                                          "print(json.dumps(sm[['file', 'line', 'function', 'code', 'stablehlo_flops']]"
                                          ".to_dict('records')))")]
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    (out,) = [o for o in nb.cells[2].outputs if o.output_type == "stream"]
    rows = json.loads(out.text)
    mine = [r for r in rows if r["function"] == "g"]
    assert {(r["line"], r["code"]) for r in mine} == {(3, "y = jnp.sin(x) @ x.T"), (4, "return (y * 2).sum()")}
    assert len({r["file"] for r in mine}) == 1 and sum(r["stablehlo_flops"] for r in mine) > 0


# -- private functions: jnp.linalg, Flax linen, lax.scan -------------------------------------------------------
def linalg_program(x, y):
    k = x @ x.T + 0.5 * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    w = jax.scipy.linalg.solve_triangular(chol, y, lower=True)
    evals = jnp.linalg.eigh(k)[0]
    s = jnp.linalg.svd(x, compute_uv=False)
    q, r = jnp.linalg.qr(x)
    return w, evals, s, q @ r


CHOLESKY_LINE = linalg_program.__code__.co_firstlineno + 2
SOLVE_LINE = CHOLESKY_LINE + 1


@pytest.fixture(scope="module")
def linalg():
    x = jax.random.normal(jax.random.PRNGKey(0), (10, 10))
    return wb.explore(linalg_program, x, jnp.ones((10, 3)))


@pytest.fixture(scope="module")
def linen():
    step = flax_programs.linen_convnet()
    return wb.explore(step.fn, *step.args)


# what the function boundary adds, which no line of the user's made: constants (JAX hoists them into @main, XLA
# makes its own), the function, its return and parameters, the device mesh, XLA's output tuples and copies, and
# ops named after the jit itself ("jit(f)": the sharding constraints of arguments) or after an argument ("x")
BOUNDARY_OPS = {"stablehlo.constant", "func.return", "return", "func.func", "sdy.mesh", "constant", "parameter",
                "tuple", "get-tuple-element", "copy"}


def _unlocated(ex) -> dict[str, tuple[int, int]]:
    """For each column of ex.source_map (stablehlo, the last MLIR stage, xla:optimized): how many of its ops
    have no line of the user's, the function boundary's left out, read per op from ex.locations (for XLA the
    computations source_map costs: the entry and loop bodies), and how many ops it has."""
    sm = ex.source_map()
    xla = ex.locations("xla:optimized")
    arguments = set(xla[(xla.op == "parameter") & (xla.fusion == "")].name) - {""}
    counts = {}
    for column, stage in sm.attrs["stages"].items():
        df = ex.locations(stage)
        if column == "xla":
            df = df[df.func.isin(set(hlo_op_costs(ex[stage].text).computation))]
        none = df[df.file == ""]
        named_at_boundary = none.name.isin(arguments) | none.name.str.fullmatch(r"jit\([^/]*\)")
        lost = none[~none.op.isin(BOUNDARY_OPS) & ~named_at_boundary]
        assert sm.loc[sm.file == NO, f"{column}_ops"].sum() >= len(lost)  # the row holds them
        counts[column] = (len(lost), len(df))
    return counts


def _unlocated_flops(ex) -> dict[str, float]:
    """The share of each MLIR column's flops in ex.source_map's (no location) row."""
    sm = ex.source_map()
    return {c: sm.loc[sm.file == NO, f"{c}_flops"].sum() / sm[f"{c}_flops"].sum() for c in ("stablehlo", "mlir")}


@pytest.mark.parametrize("program", ["linalg", "linen"])
def test_ops_of_private_functions_count_at_the_line_that_called_them(program, request):
    """jnp.linalg's cholesky/eigh/svd/qr and linen's submodules, BatchNorm and Dropout (threefry) are lowered as
    private functions whose ops carry only a name: they count at their call site, in every column."""
    ex = request.getfixturevalue(program)
    counts = _unlocated(ex)
    assert all(lost <= 0.05 * total for lost, total in counts.values()), counts
    assert all(share <= 0.05 for share in _unlocated_flops(ex).values()), _unlocated_flops(ex)


@pytest.mark.parametrize("stage, target", [("stablehlo", "lapack_spotrf"), ("last", "lapack_spotrf"),
                                           ("xla:optimized", "lapack_spotrf"), ("stablehlo", "lapack_strsm"),
                                           ("last", "lapack_strsm"), ("xla:optimized", "lapack_strsm")])
def test_a_lapack_call_inside_jnp_linalg_maps_to_the_users_line(linalg, stage, target):
    """The factorization inside @cholesky (private in stablehlo, inlined after, a custom call in XLA) and the
    triangular solve inside @_solve_triangular name the user's line that called them, with the call's name stack."""
    stage = linalg.pipeline_stages[-1].name if stage == "last" else stage
    df = linalg.locations(stage)
    text = linalg[stage].text.splitlines()
    (row,) = [r for r in df.itertuples() if target in text[r.text_line] and r.fusion == ""]
    want = CHOLESKY_LINE if target == "lapack_spotrf" else SOLVE_LINE
    assert (row.file, row.line, row.function) == (__file__, want, "linalg_program"), row
    scope = "jit(cholesky)/" if target == "lapack_spotrf" else "jit(_solve_triangular)/"
    assert row.name.startswith("jit(linalg_program)/") and scope in row.name, row.name


def test_the_scan_examples_loops_and_bodies_name_their_lines():
    """A while loop's location is printed after its regions: the loop still has the line of lax.scan. With
    canonicalize alone the scan's body and the slicing helpers stay private functions down to XLA (which calls
    and inlines them itself); their ops still count at their lines."""
    fn, args = examples.load("scan")
    ex = wb.explore(fn, *args, pipeline="canonicalize")
    src = examples.__file__.replace("__init__.py", "scan.py")
    lines = open(src).read().splitlines()
    loops = ex.locations("stablehlo")
    loops = loops[loops.op == "stablehlo.while"]
    assert len(loops) == 2 and (loops.file == src).all()
    assert {lines[n - 1].strip().split(" = ")[0] for n in loops.line} == {"h, sums", "decay"}
    counts = _unlocated(ex)
    # XLA turns the splat constant that starts the sums (a tensor<16xf32> of zeros) into broadcast(constant) and
    # gives the broadcast no metadata: that one op of the XLA column has no line
    assert counts.pop("xla")[0] <= 1
    assert all(lost <= 0.05 * total for lost, total in counts.values()), counts
    assert all(share <= 0.05 for share in _unlocated_flops(ex).values()), _unlocated_flops(ex)


def _other_scan(w, u, xs):
    """Another program that scans over arrays of the scan example's shapes, from a line of this file."""
    return jax.lax.scan(lambda h, x: (jnp.sin(h @ w + x @ u), h.sum()), jnp.zeros((xs.shape[1], w.shape[0])), xs)


def test_a_program_explored_earlier_lends_no_lines_to_the_next():
    """The scan example explored after another scan of the same shapes has only its own lines. JAX caches the
    jaxpr of its jitted dynamic_index_in_dim (a scan's slicing) by argument types, with the lines of the program
    that traced it first: each explore forgets those jaxprs, so its four slicing ops are not lent the first
    program's line. The user's own compiled function is kept: a call after the explores does not trace again."""
    traced = []
    user_step = jax.jit(lambda x: (traced.append(1), x * 2)[1])
    user_step(jnp.ones(3))
    fn, args = examples.load("scan")
    wb.explore(_other_scan, *args)
    ex = wb.explore(fn, *args, pipeline="canonicalize")
    files = set(ex.locations("stablehlo").file) - {""}
    assert files == {examples.__file__.replace("__init__.py", "scan.py")}, files
    user_step(jnp.ones(3))
    assert len(traced) == 1


def _jaxprs_held_by_jax(word: str) -> list:
    """Weak references to the closed jaxprs JAX's trace cache holds whose text has ``word``."""
    import gc
    import weakref

    from jax._src import core
    from jax._src.interpreters import partial_eval

    seen, stack, found = set(), [gc.get_referents(partial_eval.trace_to_jaxpr)], []
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, core.ClosedJaxpr) and word in str(o):
            found.append(weakref.ref(o))
        elif isinstance(o, (tuple, list)):
            stack.extend(o)
    return found


def test_the_jaxprs_an_explore_forgets_are_freed_once_xla_compiles_and_not_during_its_trace():
    """Freeing the jaxprs of the user's earlier traces costs ~0.1-0.4 ms each (every function that dies with
    one has JAX's other caches drop their entries), so the trace only takes them out of JAX's caches and they
    are freed on a thread once XLA's compile runs (the compile's own set-up needs the GIL first): held while the
    trace runs, gone once the XLA stages are there."""
    from workbench.pipeline import trace as tracing

    jax.jit(lambda x: jnp.cosh(x) * 3)(jnp.ones(5))
    held = _jaxprs_held_by_jax("cosh")
    assert held and all(r() is not None for r in held)
    alive_during_trace = []

    def program(x):
        alive_during_trace.append(sum(r() is not None for r in held))
        return jnp.tanh(x) + 1

    ex = wb.explore(program, jnp.ones(4), pipeline="none")
    assert alive_during_trace == [len(held)]  # taken out of JAX's caches, not yet freed
    assert _jaxprs_held_by_jax("cosh") == []
    ex.stages  # noqa: B018 -- XLA's compile ran: the freeing was handed to its thread when it began
    tracing._RELEASER.submit(lambda: None).result(timeout=60)
    assert all(r() is None for r in held) and tracing._FORGOTTEN == []
    assert "tanh" in ex["stablehlo"].text


def test_a_lessons_program_is_the_students_code_where_the_workbench_is_installed_too():
    """The course's lesson modules hold the student's program (lesson 12's profile and drift name lines of
    lesson12.py): their frames are the user's, as the built-in examples' are, also from a wheel installed in
    site-packages; the rest of the workbench (how it called JAX) and the libraries are not."""
    from workbench.analysis.provenance import your_frame
    from workbench.ir.attribution import own_frame
    from workbench.ir.origins import Frame, Origin

    site = "/usr/lib/python3.11/site-packages/workbench/"
    lesson = Frame(site + "course/lesson12.py", 41, 5, "train_step")
    optax = Frame("/usr/lib/python3.11/site-packages/optax/_src/transform.py", 507, 1, "update_fn")
    tool = Frame(site + "pipeline/trace.py", 10, 1, "trace")
    origin = Origin("jit(train_step)/mul", (optax, lesson))
    assert own_frame(origin, (site,), (site + "course/",)) == lesson
    assert own_frame(Origin("x", (optax, tool)), (site,), (site + "course/",)) is None
    assert own_frame(origin, (site,)) is None  # without the course kept, an installed lesson is a library's

    import workbench.course.lesson12 as lesson12

    here = Frame(lesson12.__file__, 41, 5, "train_step")
    assert your_frame(Origin("jit(train_step)/mul", (optax, here))) == here


def test_the_ops_of_a_private_function_that_share_a_location_are_read_and_printed_once(monkeypatch):
    """A nested jit is lowered once, as a private function; the ops of one of its lines share a location. Both
    xla_locations (XLA's input) and mlir_op_locations (every view of a stage's lines) read each (location,
    function) once -- on a Diffrax solve 416 of 3,137 ops -- and give each op what reading it alone gives."""
    from workbench.ir import locations

    @jax.jit
    def inner(x):
        for _ in range(12):
            x = jnp.sin(x) * 2.0  # one line: 24 ops and two locations in @inner
        return x

    def outer(x):
        return inner(x) + 1.0

    text = jax.jit(outer).lower(jnp.ones(4)).as_text(debug_info=True)
    ops = [o for o in locations._read_module(text).ops if o.loc]
    pairs = {(o.loc, o.func) for o in ops}
    assert len(ops) >= 24 + len(pairs), (len(ops), len(pairs))  # the function's ops repeat their locations

    printed, read = [], []
    monkeypatch.setattr(locations._LocationPrinter, "location",
                        lambda self, p, f=locations._LocationPrinter.location: printed.append(1) or f(self, p))
    monkeypatch.setattr(locations, "_own", lambda m, o, memo, f=locations._own: read.append(o) or f(m, o, memo))
    located = locations.xla_locations(text)
    assert len(printed) <= len(pairs), (len(printed), len(pairs))
    read.clear()
    every = locations.mlir_op_locations(text)
    assert len([o for o in read if o.loc]) <= len(pairs) + len(locations._read_module(text).first_call)

    # each sin of @inner is at outer's call of inner, the user's line below, in XLA's input and in the views
    sins = [o for o in every if o.op == "stablehlo.sine"]
    assert len(sins) == 12 and all(any(f.function.endswith("outer") for g in o.origins for f in g.frames) for o in sins)
    rewritten = locations._read_module(located)  # XLA's input: each op's own location, as XLA reads it
    assert [read_location(o.loc, rewritten.aliases) for o in rewritten.ops if o.op == "stablehlo.sine"] == \
        [o.origins for o in sins]
