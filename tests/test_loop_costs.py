"""One loop-counting rule in every stage and column (issue 44, item 3).

A loop body counts ``trip count`` times wherever the trip count is known -- read from the loop's counter in
the MLIR stages (the analytic model), from XLA's ``known_trip_count`` or the loop's condition in XLA's HLO
stages (XLA's own HloCostAnalysis of each computation, times how often it runs) -- and once, marked
(``loops_unknown``), where it is not. XLA's own total (``xla_flops``) counts every body once: it is shown as
XLA's, beside ours.

The programs are written as users write them: a vmapped Metropolis sampler in a ``fori_loop`` (keys split per
step, a Gaussian log-density, acceptance by ``jnp.where``), a ``while_loop`` that stops on a value, a
``lax.cond`` inside a loop, and every program of tests/corpus. Where XLA's passes genuinely change the work (a
fusion that computes a producer in each of its consumers, converts around bf16 dots, CSE), the exception
names the passes and the test proves them the cause: with those passes switched off, the counts agree.
"""
from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

import workbench as wb
from workbench.analysis.cost import hlo_loop_costs, hlo_module_cost, hlo_op_costs, hlo_work
from workbench.analysis.cost.table import summary_columns
from workbench.ir.hlo import read_hlo
from tests.corpus import names
from tests.test_corpus import explored, last_mlir

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

CHAINS, DIM = 64, 8


def metropolis(steps: int):
    """A vmapped random-walk Metropolis sampler of a standard Gaussian, ``steps`` steps in a fori_loop."""

    def log_density(x):
        return -0.5 * jnp.sum(x * x)  # LINE: log density

    def chain(key, x0):
        def step(i, carry):
            key, x, lp = carry
            key, k_prop, k_acc = jax.random.split(key, 3)
            prop = x + 0.3 * jax.random.normal(k_prop, x.shape)  # LINE: proposal
            lp_prop = log_density(prop)
            accept = jnp.log(jax.random.uniform(k_acc)) < lp_prop - lp  # LINE: accept
            return key, jnp.where(accept, prop, x), jnp.where(accept, lp_prop, lp)

        _, x, lp = jax.lax.fori_loop(0, steps, step, (key, x0, log_density(x0)))
        return x, lp

    def sample(key, x0):
        return jax.vmap(chain)(jax.random.split(key, CHAINS), x0)

    return sample, (jax.random.key(0), jnp.zeros((CHAINS, DIM)))


def _line(marker: str) -> int:
    lines, first = inspect.getsourcelines(metropolis)
    return first + next(i for i, text in enumerate(lines) if f"# LINE: {marker}" in text)


_explorations: dict = {}


def sampler(steps: int, **xla):
    key = (steps, tuple(sorted((k, tuple(v)) for k, v in xla.items())))
    if key not in _explorations:
        base = _explorations.get((steps, ())) or wb.explore(*_fn_args(steps), device="cpu")  # XLA:CPU's passes
        _explorations[(steps, ())] = base
        _explorations[key] = base.with_xla(**xla) if xla else base
    return _explorations[key]


def _fn_args(steps):
    fn, args = metropolis(steps)
    return (fn, *args)


def _flops(table: pd.DataFrame, stage: str) -> int:
    value = table.set_index("stage").loc[stage, "flops"]
    assert not pd.isna(value), f"{stage} has no flops"
    return int(value)


def _agree(a: int, b: int, within: float = 0.05) -> bool:
    return abs(a - b) <= within * max(abs(a), abs(b), 1)


def _first_fusion(ex) -> str:
    """The backend's fusion pass (the CPU's "fusion", the TPU's "tpu_fusion", a GPU's "priority-fusion"): the first
    XLA stage whose pass name ends so."""
    return next(s.name for s in ex.stages if s.group == "xla" and s.name.partition(":")[2].partition("#")[0].endswith("fusion"))


# --- the sampler ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("steps", [50, 200])
def test_the_samplers_loop_costs_the_same_in_the_mlir_and_the_xla_stages(steps):
    ex = sampler(steps)
    table = ex.cost()
    mlir = _flops(table, last_mlir(ex).name)
    assert mlir > steps * CHAINS * DIM  # the body, times the steps
    fusion = _first_fusion(ex)
    xla = [s.name for s in ex.stages if s.group == "xla"]
    # every XLA stage before the fusion pass counts the loop as the last MLIR stage does: before XLA's while-loop
    # analysis the trip count is read from the loop's condition, after it from its known_trip_count
    for name in xla[:xla.index(fusion)]:
        assert _agree(_flops(table, name), mlir), (name, _flops(table, name), mlir)
    assert (table[table.group.isin(["mlir", "xla"])].loops_unknown == 0).all()
    # XLA's fusion pass computes the threefry rounds once in each fusion that uses them: work XLA adds, which
    # the stage's note names; with that one pass off, xla:optimized agrees with the last MLIR stage
    optimized = _flops(table, "xla:optimized")
    grown = _flops(table, fusion) - _flops(table, ex[fusion].parent)
    assert grown > 0.05 * mlir and "computed in each of them" in table.set_index("stage").loc[fusion, "note"]
    assert _agree(optimized - grown, mlir)
    unfused = sampler(steps, disable=["fusion"]).cost()
    assert _agree(_flops(unfused, "xla:optimized"), mlir)


def test_xlas_own_total_counts_the_body_once_and_is_shown_as_xlas():
    short, long = (sampler(n).cost().set_index("stage").loc["xla:optimized"] for n in (50, 200))
    # ours grows with the steps, XLA's own total does not: it is the body once, and says so
    assert _agree(long.flops, 4 * short.flops, 0.02)
    assert short.xla_flops == long.xla_flops == short.flops_body_once == long.flops_body_once
    assert short.loop_multiplied and "loop bodies once" in short.note and "x trip count" in short.note
    assert hlo_module_cost(sampler(50)["xla:optimized"].text)["flops"] == short.xla_flops


def test_the_per_instruction_table_covers_every_computation_that_runs():
    ex = sampler(50)
    for name in ("xla:before_optimizations", "xla:optimized"):
        text = ex[name].text
        df = hlo_op_costs(text)
        (totals,) = hlo_loop_costs([text])
        # the rows add up to the per-computation totals: two routes to XLA's analysis, one rule
        assert (int(df.flops.sum()), int(df.transcendentals.sum()), int(df.bytes.sum())) == (
            totals.flops, totals.transcendentals, totals.bytes)
        assert df.attrs["loops"] == totals.loops == 5 and df.attrs["loops_unknown"] == 0  # 1 + 4 threefry loops
        body = df[df.runs == 50]  # the step's body; the threefry loops inside it run 5 times a step
        assert len(body) > 10 and body.note.str.contains(r"runs 50 times \(body of %while").all()
        assert set(df.runs) >= {1, 5, 6, 50, 51, 250, 300}
        assert df[df.runs >= 50].flops.sum() > 0.9 * df.flops.sum()
        assert set(df[df.runs == 51].op) <= {"compare", "fusion", "get-tuple-element", "constant", "parameter"}
        loop = df[(df.op == "while") & (df.runs == 1) & df.note.str.contains("trip count 50")]
        assert len(loop) == 1 and loop.flops.iloc[0] == 0
        how = "XLA's known_trip_count" if name == "xla:optimized" else "its condition"
        assert how in loop.note.iloc[0]


def test_source_map_gives_the_loop_bodys_lines_their_flops():
    ex = sampler(50)
    sm = ex.source_map()
    here = sm[sm.file == __file__].set_index("line")
    for marker in ("proposal", "accept", "log density"):
        row = here.loc[_line(marker)]
        assert row.xla_flops > 0 and row.mlir_flops > 0, (marker, row)
    assert sm.xla_flops.sum() == hlo_op_costs(ex["xla:optimized"].text).flops.sum()
    assert sm.xla_flops.sum() == _flops(ex.cost(), "xla:optimized")


# --- loops of unknown trip count, conditionals --------------------------------------------------------------------
def halve_until_small(x):
    return jax.lax.while_loop(lambda h: h.sum() > 1.0, lambda h: jnp.sin(h) * 0.5, x)


def test_a_loop_of_unknown_trip_count_is_counted_once_and_marked_in_every_stage():
    ex = wb.explore(halve_until_small, jnp.ones((32,)))
    table = ex.cost()
    stages = table[table.group.isin(["mlir", "xla"]) | (table.stage == "stablehlo")]
    assert (stages.loops_unknown == 1).all(), stages[["stage", "loops_unknown"]]
    assert (stages.flops == stages.flops_body_once).all()
    assert "loops_unknown" in summary_columns(table)  # the Cost tab and the report show it
    assert "unknown trip count" in table.set_index("stage").loc["xla:optimized", "note"]
    assert "unknown trip count" in table.set_index("stage").loc["stablehlo", "note"]
    df = hlo_op_costs(ex["xla:optimized"].text)
    assert df.attrs["loops_unknown"] == 1
    assert df[df.op == "while"].note.str.contains("unknown trip count").all()
    assert "loops_unknown" not in summary_columns(sampler(50).cost())  # shown where there is one


def branchy(x):
    def step(i, h):
        return jax.lax.cond(i % 3 == 0, lambda v: jnp.tanh(v @ v.T) @ v, lambda v: v * 2.0, h)

    return jax.lax.fori_loop(0, 12, step, x)


def test_a_conditional_counts_its_costliest_branch_whole_in_mlir_and_xla_alike():
    ex = wb.explore(branchy, jnp.ones((16, 16)))
    table = ex.cost()
    mlir = _flops(table, last_mlir(ex).name)
    assert _agree(_flops(table, "xla:before_optimizations"), mlir)
    df = hlo_op_costs(ex["xla:before_optimizations"].text)
    cond = df[df.op == "conditional"]
    assert len(cond) == 1 and "costliest branch" in cond.note.iloc[0]
    cheap = df[df.note.str.contains("that does not count")]
    assert len(cheap) and set(cheap.runs) == {0} and cheap.flops.sum() == 0  # listed, counting 0
    costly = df[df.note.str.contains("that counts")]
    assert {"dot", "tanh"} <= set(costly.op) and set(costly.runs) == {12}  # every step, as the model counts it


# --- the work ---------------------------------------------------------------------------------------------------
def loops(n: int):
    def f(x):
        for k in range(n):
            x = jax.lax.fori_loop(0, 10 + k, lambda i, h: jnp.sin(h) * 1.5 + h, x)
        return x

    return f


def test_the_work_is_linear_in_the_module():
    works = {}
    for n in (4, 16):
        text = jax.jit(loops(n)).lower(jnp.ones((8,))).compile().as_text()
        work = hlo_work(text)
        assert work.opened == n and work.indexed <= work.instructions
        assert work.computation_modules <= len(read_hlo(text).computations)  # one per computation that runs, at most
        assert work.computation_chars <= 4 * len(text)
        assert work.visited <= 4 * work.instructions
        works[n] = work
    grown = works[16].instructions / works[4].instructions
    assert grown > 3
    for count in ("visited", "shapes_mapped", "indexed", "modules", "module_chars", "computation_modules",
                  "computation_chars"):
        assert getattr(works[16], count) <= 1.25 * grown * getattr(works[4], count), count


# --- a golden -----------------------------------------------------------------------------------------------------
def test_a_golden_of_the_50_step_sampler_fails_on_200_steps(tmp_path):
    golden = wb.testing.write_golden(sampler(50), tmp_path / "sampler50.hlox")
    fn, *args = _fn_args(200)
    verdict = wb.testing.check_golden(golden, fn, tuple(args), max_ops_growth="none", max_bytes_growth="none",
                                      max_memory_growth="none")
    assert not verdict.ok
    flops = next(r for r in verdict.rows if r.what == "flops")
    assert not flops.ok and flops.now > 3.5 * flops.golden


# --- every program of the corpus ----------------------------------------------------------------------------------
# Programs whose xla:optimized differs from their last MLIR stage by more than 5% because an XLA pass changes
# the work (not how loops are counted): the passes, and why. The test switches them off and expects agreement.
FUSION = "XLA's fusion computes a producer in each fusion that uses it"
CHANGED_BY_PASSES = {
    "linen_convnet": (["fusion"], FUSION),
    "eqx_module_argument": (["fusion"], FUSION),
    "pure_callback": (["fusion"], FUSION),
    "metropolis_sampler": (["fusion"], FUSION + ": the threefry rounds, +76%, as in the sampler above"),
    "nnx_transformer": (["fusion"], FUSION + " (+5%, at the edge)"),
    "spectral_burgers": (["fusion"], FUSION + " (+5%, at the edge)"),
    "diffrax_ode": (["fusion", "scatter_expander"],
                    FUSION + "; scatter_expander turns the solver's scatters into loops of element updates"),
    "linalg": (["algsimp", "cse", "fusion"],
               "XLA's algsimp and cse merge work the MLIR pipeline kept twice; " + FUSION + " (cse#2 merges it again)"),
    "checkpoint_scan_bf16": (["algsimp", "cse", "fusion"],
                             "float-normalization-bf16, which XLA:CPU cannot do without, wraps each bf16 dot in "
                             "converts to f32 (that stage's growth is its converts); algsimp and cse remove part of "
                             "them; " + FUSION),
}
BF16_CONVERTS = {"checkpoint_scan_bf16": "float-normalization-bf16"}


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_every_corpus_programs_loops_cost_the_same_in_the_last_mlir_stage_and_xla_optimized(name):
    ex = explored(name, device="cpu")  # what XLA:CPU's passes change (CHANGED_BY_PASSES), on any host
    table = ex.cost().set_index("stage")
    last = last_mlir(ex).name
    mlir, optimized = table.loc[last, "flops"], table.loc["xla:optimized", "flops"]
    assert not pd.isna(mlir) and not pd.isna(optimized)
    assert table.loc[last, "loops_unknown"] == table.loc["xla:optimized", "loops_unknown"]
    if name not in CHANGED_BY_PASSES:
        assert _agree(int(optimized), int(mlir)), (name, int(mlir), int(optimized))
        return
    passes, _why = CHANGED_BY_PASSES[name]
    off = ex.with_xla(disable=passes).cost().set_index("stage")
    expected = int(mlir)
    if name in BF16_CONVERTS:  # a pass that cannot be switched off: its growth is the converts it adds
        toggled = ex.with_xla(disable=passes)
        stage = next(s.name for s in toggled.stages if s.name.startswith(f"xla:{BF16_CONVERTS[name]}#"))
        parent = toggled[stage].parent
        converts = [int(hlo_op_costs(toggled[s].text).query("op == 'convert'").flops.sum()) for s in (parent, stage)]
        added = int(off.loc[stage, "flops"] - off.loc[parent, "flops"])
        assert added > 0.05 * expected and _agree(added, converts[1] - converts[0], 0.01), (added, converts)
        expected += added
    assert _agree(int(off.loc["xla:optimized", "flops"]), expected), (name, passes, expected,
                                                                      off.loc["xla:optimized", "flops"])


def test_the_tpus_optimized_sampler_counts_its_loop_fifty_times():
    """The TPU's optimized module of the 50-step sampler (recorded on a TPU v5e by explore's default pipeline:
    tests/fixtures/tpu/sampler_optimized.hlo.xz) has no known_trip_count, and starts its counter at
    ``copy(constant(0))`` -- the scheduler's copy into the counter's own memory: the count is read through it."""
    text = _tpu_fixture("sampler_optimized.hlo.xz")
    assert "known_trip_count" not in text and "copy(%constant.174)" in text
    _assert_fifty_runs(text)


@pytest.mark.parametrize("fixture, form", [
    ("sampler_licm.hlo.xz", "%add.4661 = s32[]{:T(128)} add(%get-tuple-element.50, %wide.region_1.5.in.0)"),
    ("sampler_copies.hlo.xz", "%copy.9 = s32[]{:T(128)} copy(%add.4682)"),
])
def test_the_tpus_sampler_counts_its_loop_fifty_times_after_licm_and_copy_insertion(fixture, form):
    """Two of the TPU's stages of the same sampler (recorded on a TPU v5e, 2026-12-07). After
    while-loop-invariant-code-motion the counter's step 1 is an element of the loop's tuple that enters as
    ``constant(1)`` and the body passes through; after copy insertion the counter is read and written through
    copies. Both are the counted loop of 50 steps; the cost table had said "unknown trip count" on eight stages."""
    text = _tpu_fixture(fixture)
    assert "known_trip_count" not in text and form in text
    _assert_fifty_runs(text)


def _tpu_fixture(name: str) -> str:
    import lzma
    from pathlib import Path

    return lzma.open(Path(__file__).parent / "fixtures" / "tpu" / name, "rt").read()


def _assert_fifty_runs(text: str) -> None:
    from workbench.analysis.cost.hlo import hlo_loop_costs

    (cost,) = hlo_loop_costs([text])
    assert cost.loops == 1 and cost.loops_unknown == 0, cost
    # the body runs 50 times: the loop's flops are nearly all of the module's
    assert cost.flops > 45 * cost.flops_body_once * 0.9, cost
