"""Bounded work on big programs (issue 25, defect 6), counted and never timed.

* ``ex.cost(stage)``: the per-instruction cost of an HLO stage does work linear in the module (it was
  quadratic: each instruction mapped its computation's shapes and scanned every computation), and so
  does the analytic model of an MLIR stage; both counted at two sizes of the same program.
* ``ex.graph``: graphviz's ``dot`` runs with a time limit and is stopped past it (GraphTooLargeError,
  a note in a notebook, no ``dot`` left), and no more than ``draw_limit`` ops are laid out one by one.
* ``ex.report``: what a report reads, normalizes, diffs and embeds stops at its ``ReportLimits``, which
  the report states, however big the program.

The program is a stack of ``layers`` matmul + tanh layers and its gradient, unrolled by JAX.
"""
import base64
import gzip
import html
import json
import os
import re

import jax
import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.artifacts import report_texts
from workbench.analysis.cost import hlo_op_costs, hlo_work, model_work, module_cost
from workbench.analysis.graph import GraphTooLargeError, StageGraph, stage_graph
from workbench.artifacts.report import ReportLimits, render_report
from workbench.ir.hlo import read_hlo, strip_debug_info


def stack(layers: int):
    def f(ws, x):
        for i in range(layers):
            x = jnp.tanh(x @ ws[i % len(ws)]) + x
        return (x ** 2).sum()

    return jax.grad(f), ([jnp.full((8, 8), 0.01) for _ in range(4)], jnp.ones((4, 8)))


def lowered(layers: int):
    fn, args = stack(layers)
    return jax.jit(fn).lower(*args)


SIZES = (6, 24)  # layers: the bigger program is four times the smaller


# --- cost ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hlo_texts():
    """XLA's HLO of the gradient at both sizes, before and after optimization."""
    out = {}
    for n in SIZES:
        lo = lowered(n)
        out[n] = {"before": lo.as_text(dialect="hlo"), "optimized": lo.compile().as_text()}
    return out


@pytest.mark.parametrize("which", ["before", "optimized"])
def test_the_hlo_cost_of_each_instruction_is_prepared_in_work_linear_in_the_module(hlo_texts, which):
    works = {}
    for n in SIZES:
        text = hlo_texts[n][which]
        work = hlo_work(text)
        module = read_hlo(strip_debug_info(text))
        assert work.instructions == sum(len(c.instructions) for c in module.computations)
        # each computation's shapes mapped once, each callee printed once, each fusion's body counted once
        assert work.shapes_mapped <= work.instructions
        assert work.computations_printed <= len(module.computations)
        assert work.fused_counted <= work.instructions
        assert work.visited <= 4 * work.instructions
        assert work.modules <= work.instructions and work.module_chars <= 4 * len(strip_debug_info(text))
        works[n] = work
    small, big = works[SIZES[0]], works[SIZES[1]]
    grown = big.instructions / small.instructions
    assert grown > 3
    for count in ("visited", "shapes_mapped", "fused_counted", "modules", "module_chars"):
        if getattr(small, count):
            assert getattr(big, count) / getattr(small, count) <= 1.25 * grown, count


def test_the_work_counted_is_the_work_of_the_rows_xla_costs(hlo_texts):
    text = hlo_texts[SIZES[0]]["optimized"]
    work = hlo_work(text)  # one module sent to XLA per row, but a while's or a conditional's (its callees' rows cost it)
    assert len(hlo_op_costs(text)) == work.modules + work.opened


def test_the_analytic_model_of_an_mlir_stage_is_linear_in_the_module():
    works = {}
    for n in SIZES:
        text = lowered(n).as_text()
        work, mc = model_work(text), module_cost(text)
        assert work.ops_costed == work.rows == mc.ops - 1  # every op once, func.func aside
        assert work.ops_visited <= 4 * mc.ops and work.constant_key_size <= len(text)
        works[n] = (mc.ops, work.ops_visited)
    (ops_small, small), (ops_big, big) = works[SIZES[0]], works[SIZES[1]]
    assert ops_big / ops_small > 3 and big / small <= 1.25 * ops_big / ops_small


# --- graph -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_ex():
    fn, args = stack(SIZES[0])
    return wb.explore(fn, *args)


@pytest.fixture(scope="module")
def big_ex():
    fn, args = stack(SIZES[1])
    return wb.explore(fn, *args)


def dot_children() -> list[int]:
    """This process's children that are graphviz's dot, alive or not yet reaped."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            comm = open(f"/proc/{d}/comm").read().strip()
            ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and comm == "dot":
            out.append(int(d))
    return out


def test_dot_past_its_time_limit_is_stopped_with_a_named_error_and_a_note(big_ex, monkeypatch):
    g = big_ex.graph("stablehlo")
    assert isinstance(g, StageGraph) and g.nodes > 100 and g.edges > 100
    g.layout_seconds = 0.001  # far less than starting dot takes: it is always past
    with pytest.raises(GraphTooLargeError) as e:
        g.pipe(format="svg")
    assert e.value.seconds == 0.001 and (e.value.nodes, e.value.edges) == (g.nodes, g.edges)
    assert "within 0.001 s" in str(e.value) and "max_ops" in str(e.value) and "group=" in str(e.value)
    assert dot_children() == []  # killed and reaped
    # the default limit is the class's: what a notebook shows of ex.graph(...) is the message, not a picture
    monkeypatch.setattr(StageGraph, "layout_seconds", 0.001)
    bundle = big_ex.graph("stablehlo")._repr_mimebundle_()
    assert list(bundle) == ["text/plain"] and "GraphTooLargeError" in bundle["text/plain"]
    assert dot_children() == []
    monkeypatch.undo()
    svg = big_ex.graph("stablehlo").pipe(format="svg", encoding="utf-8")  # within the default limit
    assert svg.lstrip().startswith("<?xml") and dot_children() == []


def test_the_panels_graph_tab_says_the_graph_is_too_large_to_lay_out(big_ex, monkeypatch):
    from workbench.views.widgets.panel import Panel

    monkeypatch.setattr(StageGraph, "layout_seconds", 0.001)
    p = Panel(big_ex, background=False)
    try:
        p.pick("stablehlo")
        p.show_graph()
        view = p.graph_view
        assert view.svg == "" and "could not lay out this graph" in view.message and "within 0.001 s" in view.message
        assert p.last_error is None and dot_children() == []
    finally:
        p.close()


def test_no_more_than_draw_limit_ops_are_laid_out_one_by_one(big_ex):
    stage = big_ex["stablehlo"]
    every = stage_graph(stage, max_ops=10**6)
    total = every.nodes
    assert total > 300
    capped = stage_graph(stage, max_ops=10**6, draw_limit=100)
    assert capped.nodes < 60  # the hierarchy's top level, not the ops
    assert "at most 100 are drawn one by one, whatever max_ops says" in capped.source


# --- report ----------------------------------------------------------------------------------------------
LIMITS = ReportLimits(text_chars=40_000, total_chars=150_000, diff_lines=500, diff_budget=3_000, graph_seconds=0.001)


def _packed(page: str) -> dict:
    m = re.search(r'id="wb-diffs" data-encoding="gzip\+base64">([A-Za-z0-9+/=]*)</script>', page)
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


def _counted_report(ex, monkeypatch) -> dict:
    """The report of ``ex`` under LIMITS, with what it normalized, diffed and embedded counted."""
    seen = {"normalized": 0, "diffs": 0, "diff_lines": 0}
    normalize, diff_texts = report_texts.normalize, report_texts.diff_texts

    def counted_normalize(text):
        seen["normalized"] += len(text)
        return normalize(text)

    def counted_diff(a, b, *names):
        d = diff_texts(a, b, *names)
        seen["diffs"] += 1
        seen["diff_lines"] += len(d.before) + len(d.after)
        return d

    monkeypatch.setattr(report_texts, "normalize", counted_normalize)
    monkeypatch.setattr(report_texts, "diff_texts", counted_diff)
    page = render_report(ex, limits=LIMITS)
    monkeypatch.undo()
    data = _packed(page)
    seen["embedded"] = sum(map(len, data["pool"]))
    seen["page"] = page
    seen["distinct"] = sum(len(t) for t in {s.text for s in ex.stages if not s.error})
    return seen


def test_a_report_reads_diffs_and_embeds_no_more_than_its_limits(small_ex, big_ex, monkeypatch):
    small, big = _counted_report(small_ex, monkeypatch), _counted_report(big_ex, monkeypatch)
    assert big["distinct"] > 1.8 * small["distinct"] > 2 * LIMITS.total_chars  # both over the limits
    for seen in (small, big):
        assert seen["normalized"] <= LIMITS.total_chars
        assert seen["diff_lines"] <= LIMITS.diff_budget and seen["diffs"] >= 1
        # the texts read, and the diffs' renamed lines of them: within twice the texts' budget
        assert seen["embedded"] <= 2 * LIMITS.total_chars
        graph = seen["page"][seen["page"].index('<section id="graph">'):]
        assert "GraphTooLargeError" in graph and "within 0.001 s" in graph  # dot's limit is the report's
    assert dot_children() == []
    # the caps, stated in the report itself, and what they left out of the big one
    note = html.unescape(re.search(r'<span id="wb-limits">(.*?)</span>', big["page"]).group(1))
    assert "at most 40,000 characters of one stage's text and 150,000 of all" in note
    assert "not embedded: " in note and "not precomputed (ex.diff has them)" in note
    data = _packed(big["page"])
    runs = data["texts"][data["stage_text"][big_ex.names.index("xla:optimized")]]
    last = data["pool"][runs[-2] + runs[-1] - 1]
    assert last.startswith("[hlo-workbench report: this text") and "ex.stage('xla:optimized').text" in last
