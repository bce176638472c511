"""Per-instruction cost of XLA's HLO stages, by XLA's own HloCostAnalysis, and the cost of every HLO stage.

Each instruction is analysed alone; HloCostAnalysis adds up over instructions, so the rows of every
HLO stage must sum exactly to the per-computation totals (``hlo_loop_costs``), and where no loop runs
more than once to XLA's analysis of the whole module -- and, for ``xla:optimized``, to the numbers of the
compile that produced the stages. With loops, XLA's own total counts each body once: the body-once totals
equal it (tests/test_loop_costs.py has the loop rule itself).
"""
import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.analysis.cost import hlo_loop_costs, hlo_module_cost, hlo_module_costs, hlo_op_costs
from workbench.errors import ModuleParseError


def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w) + x
    return (x ** 2).sum()


def loop(x):
    return jax.lax.fori_loop(0, 10, lambda i, v: jnp.sin(v) @ v, x)


@pytest.fixture(scope="module")
def grad_ex():
    # for the CPU on any host: the tests name XLA:CPU's stages (its LLVM IR, its fusions)
    return wb.explore(jax.grad(mlp), [jnp.full((8, 8), 0.01) for _ in range(6)], jnp.ones((4, 8)), device="cpu")


@pytest.fixture(scope="module")
def loop_ex():
    return wb.explore(loop, jnp.ones((16, 16)), device="cpu")


def _totals(df):
    return int(df["flops"].sum()), int(df["transcendentals"].sum()), int(df["bytes"].sum())


@pytest.mark.parametrize("which", ["grad_ex", "loop_ex"])
def test_the_instructions_of_every_hlo_stage_sum_to_xlas_analysis_of_the_module(which, request):
    ex = request.getfixturevalue(which)
    hlo = [s for s in ex.stages if s.group == "xla"]
    assert len(hlo) >= 3
    for s in hlo:
        df = ex.cost(s.name)
        assert list(df.columns) == ["computation", "name", "op", "shape", "runs", "flops", "transcendentals", "bytes",
                                    "note"]
        assert df["flops"].notna().all(), (s.name, df[df["flops"].isna()])
        (totals,) = hlo_loop_costs([s.text])
        assert _totals(df) == (totals.flops, totals.transcendentals, totals.bytes)
        whole = hlo_module_cost(s.text)
        xlas = (whole.get("flops", 0), whole.get("transcendentals", 0), whole.get("bytes accessed", 0))
        assert (totals.flops_body_once, totals.transcendentals_body_once, totals.bytes_body_once) == xlas
        if which == "grad_ex":
            assert _totals(df) == xlas
    optimized = ex.cost("xla:optimized")
    compiled = ex.xla_result.cost  # the compile that made the stages
    (totals,) = hlo_loop_costs([ex["xla:optimized"].text])
    assert totals.flops_body_once == compiled["flops"]
    assert totals.transcendentals_body_once == compiled["transcendentals"]
    if which == "grad_ex":
        assert int(optimized["flops"].sum()) == compiled["flops"]


@pytest.mark.parametrize("which", ["grad_ex", "loop_ex"])
def test_a_loop_free_modules_totals_are_xlas_whole_count_without_reading_it_again(which, request, monkeypatch):
    """A module with no while, conditional or custom call takes the loop rule's totals from XLA's analysis of it
    whole, which ``cost()`` has anyway: the same totals as the rule's, and the module is not read again (on a
    GPT-2 training step that reading was 6 of the 13 seconds of a first ``cost()``). A module with a loop is."""
    from workbench.analysis.cost import hlo as hlo_cost
    from workbench.ir.hlo import has_opcode

    texts = list(dict.fromkeys(s.text for s in request.getfixturevalue(which).stages if s.group == "xla"))
    by_the_rule = hlo_loop_costs(texts)
    read, reader = [], hlo_cost._Module
    monkeypatch.setattr(hlo_cost, "_Module", lambda text: read.append(text) or reader(text))
    assert hlo_loop_costs(texts, hlo_module_costs(texts)) == by_the_rule
    looping = [t for t in texts if has_opcode(t, "while")]
    assert read == looping and len(texts) >= 3
    assert (looping == []) == (which == "grad_ex")


def test_calls_and_loops_are_opened_and_fusions_are_one_row(grad_ex, loop_ex):
    before = grad_ex.cost("xla:before_optimizations")
    # the unoptimized entry is one call of the lowered function: its instructions are the rows
    assert "call" not in set(before["op"]) and {"dot", "tanh", "add"} <= set(before["op"])
    assert before.loc[before["op"] == "tanh", "transcendentals"].eq(32).all()  # tanh of a 4x8 array
    dots = before[before["op"] == "dot"]
    # per layer a forward dot, one for the weight's gradient and one for the input's -- except the first
    # layer's input, whose gradient nobody asked for
    assert len(dots) == 6 * 3 - 1 and dots["flops"].eq(2 * 4 * 8 * 8).all()
    fused = grad_ex.cost("xla:optimized")
    assert (fused["op"] == "fusion").sum() >= 6 and fused["note"].str.contains("fusion of").any()
    whiles = loop_ex.cost("xla:optimized")
    row = whiles[whiles["op"] == "while"].iloc[0]
    assert "trip count 10" in row["note"] and row["flops"] == 0  # its body's rows cost it
    assert whiles["transcendentals"].sum() == 10 * 16 * 16  # sin in the body, ten times
    assert (whiles[whiles["transcendentals"] > 0]["runs"] == 10).all()


def test_a_custom_call_has_no_cost_and_says_why():
    ex = wb.explore(lambda a: jnp.linalg.eigh(a @ a.T)[0], jnp.eye(6) + 0.1)
    df = ex.cost("xla:optimized")
    custom = df[df["op"] == "custom-call"]
    assert len(custom) >= 1 and custom["flops"].isna().all() and custom["note"].str.contains("custom call").all()
    row = ex.cost().set_index("stage").loc["xla:before_optimizations"]
    assert "custom calls" in row["note"]


def test_the_cost_table_has_xlas_numbers_for_every_hlo_stage(grad_ex):
    table = grad_ex.cost().set_index("stage")
    for s in grad_ex.stages:
        if s.group != "xla":
            continue
        whole = hlo_module_cost(s.text)
        assert table.loc[s.name, "xla_flops"] == whole["flops"]
        assert "XLA's analysis" in table.loc[s.name, "note"]


def test_stages_without_a_per_op_cost_say_which_have_one(grad_ex):
    with pytest.raises(KeyError) as e:
        grad_ex.cost("backend:llvm-ir")
    message = str(e.value)
    assert "backend output" in message and "XLA HLO stages" in message and "xla:optimized" in message
    with pytest.raises(KeyError, match="a jaxpr"):
        grad_ex.cost("jaxpr")


def test_text_that_is_not_hlo_is_refused_clearly(grad_ex):
    with pytest.raises(ModuleParseError, match="no ENTRY computation"):
        hlo_op_costs(grad_ex["stablehlo"].text)
    with pytest.raises(ModuleParseError, match="XLA cannot read"):
        hlo_module_cost("HloModule m\n\nENTRY %e {\n  ROOT %x = f32[2] frobnicate()\n}\n")


def test_the_panels_cost_tab_shows_an_hlo_stage_per_instruction(grad_ex):
    from workbench.views.widgets.panel import Panel

    p = Panel(grad_ex, background=False)
    try:
        p.pick("xla:optimized")
        p.show_cost()
        assert p.last_error is None
        ops = p.cost.data["ops"]
        assert ops["title"] == "Per instruction of xla:optimized" and "HloCostAnalysis" in ops["words"]
        assert "fusion" in [r[1] for r in ops["table"]["rows"]] and "error" not in ops
        p.pick("backend:llvm-ir")
        p.show_cost()
        ops = p.cost.data["ops"]
        assert ops["title"] == "Per op of backend:llvm-ir" and ops["error"]
        assert "per-op costs exist for MLIR stages" in ops["words"]
    finally:
        p.close()


def test_the_hlo_stages_are_shared_among_the_pools_workers_by_size():
    """Issue 28: XLA's analyses of a program's HLO stages go to every worker of the pool at once, in chunks
    of about equal text size, each module in exactly one chunk."""
    from workbench.analysis.cost.hlo_whole import shares

    items = list(enumerate(["x" * n for n in (900, 100, 500, 400, 300, 200, 50)]))
    chunks = shares(items, 2)
    assert sorted(i for c in chunks for i, _ in c) == list(range(7)) and len(chunks) == 2
    sizes = sorted(sum(len(t) for _, t in c) for c in chunks)
    assert sizes == [1200, 1250]  # 900+200+100 | 500+400+300+50: the largest first, each to the lighter
    assert shares(items[:1], 4) == [items[:1]] and shares([], 2) == []
    assert len(shares(items, 16)) == 7  # never an empty chunk
