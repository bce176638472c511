"""Lesson 8, XLA's pipeline: what XLA does to the MLP's training step after the MLIR stages -- its HLO
passes, fusion, layout and buffer assignment, memory -- and what each costs (notebooks/08).
"""
from __future__ import annotations

import re
from functools import cache

import workbench as wb
from workbench.examples import mlp
from workbench.ir.hlo import read_hlo

from .common import last_mlir
from .exercises import exercise, number_exercise
from .judge import judge_names, names_of, wrong

PEAK_DEVICE = "H100"


@cache
def exploration():
    """The MLP's loss and gradient through Reactant's default pipeline and XLA: ``wb.explore(mlp.fn, *mlp.args())``."""
    return wb.explore(mlp.fn, *mlp.args())


@cache
def without_fusion():
    """The same with XLA's ``fusion`` pass disabled: ``exploration().with_xla(disable=["fusion"])``."""
    return exploration().with_xla(disable=["fusion"])


@cache
def costs(dtype: str = "fp32"):
    """``ex.cost(device="H100", dtype=dtype)``, one row per stage, indexed by stage name."""
    return exploration().cost(device=PEAK_DEVICE, dtype=dtype).set_index("stage")


def xla_pass(stage_name: str) -> str:
    """``"xla:fusion#1"`` -> ``"fusion"``: the XLA pass that made a stage."""
    return stage_name.removeprefix("xla:").rsplit("#", 1)[0]


def entry_fusions(text: str) -> int:
    """How many ``fusion`` instructions the entry computation of an HLO module holds: one kernel each."""
    return sum(1 for ins in read_hlo(text).entry.instructions if ins.opcode == "fusion")


_ALLOCATION = re.compile(r"^allocation \d+: size (\d+), (.*)$")
_VALUE = re.compile(r"^\s*value: <.*?> \(size=(\d+),offset=(\d+)\)")


def temp_values(buffer_assignment: str) -> tuple[int, list[int]]:
    """The preallocated temp allocation of XLA's buffer assignment: its size, and the sizes of the values
    it holds (each at an offset of its own while it lives)."""
    size, values, inside = 0, [], False
    for line in buffer_assignment.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            inside = "preallocated-temp" in m.group(2)
            size += int(m.group(1)) if inside else 0
            continue
        v = _VALUE.match(line)
        if inside and v:
            values.append(int(v.group(1)))
        elif inside and line.strip() and not v:
            inside = False
    return size, values


def _bytes_cut_per_pass(ex) -> dict[str, float]:
    """For each XLA pass stage, how many bytes XLA's cost analysis counts fewer than in its parent."""
    c = costs()
    out = {}
    for s in ex.stages:
        if s.group != "xla" or s.name in ("xla:before_optimizations", "xla:optimized"):
            continue
        parent = ex.parent_of(s.name)
        if parent is not None and parent.group == "xla":
            out[s.name] = float(c.loc[parent.name, "xla_bytes"]) - float(c.loc[s.name, "xla_bytes"])
    return out


@exercise("l8.q1")
def q1(answer):
    ex = exploration()
    cut = _bytes_cut_per_pass(ex)
    top = max(cut.values())
    expected = {xla_pass(name) for name, v in cut.items() if v == top}
    names = names_of(answer)
    if names is None:
        return wrong(f"{answer!r} is not a pass name", "the answer is an XLA pass, as ex.xla_passes names it")
    names = [xla_pass(n) for n in names]
    return judge_names(names, expected, what="the XLA pass that cuts xla_bytes the most",
                       known=set(ex.xla_passes), kind="pass",
                       hint="ex.cost() has an xla_bytes value on every xla: stage; subtract each from the stage "
                            "before it")


@number_exercise("l8.q2", rel_close=0.0)
def q2():
    fused = entry_fusions(exploration()["xla:optimized"].text)
    return entry_fusions(without_fusion()["xla:optimized"].text), {
        fused: "the fusion pass runs: this is the count with it",
        0: "nothing wraps the ops into kernels: on the CPU fusion-wrapper still puts every op that is not in a "
           "fusion into one of its own"}


@number_exercise("l8.q3", rel_close=0.0)
def q3():
    size, values = temp_values(exploration()["backend:buffer-assignment"].text)
    return sum(values), {size: "you give the allocation's size: its values share it, one placed where another one "
                               "was once that one is dead",
                         costs().loc["xla:optimized", "temp_bytes"]: "you give temp_bytes: the memory they take with "
                                                                     "sharing"}


@number_exercise("l8.q4", rel_right=0.02, rel_close=0.15, near_within=0.05)
def q4():
    name = last_mlir(exploration()).name
    row, bf16 = costs().loc[name], costs("bf16").loc[name]
    expected = float(row["roofline_bytes_s"]) / float(row["roofline_flops_s"])
    tensor_cores = float(bf16["roofline_bytes_s"]) / float(bf16["roofline_flops_s"])
    return expected, {1 / expected: "you divide the other way round: the bytes take longer",
                      tensor_cores: "you use the bf16 tensor-core peak: this program computes in float32"}
