"""``hlo-workbench graph`` and ``reproducer`` as a user types them: the installed script or ``python -m workbench``
in a fresh process, no terminal, on a corpus program written as a user's file. The graph has the nodes and
edges of ``ex.graph()`` in Python and its .svg is SVG; the bug folder holds the files ``ex.reproducer()`` writes,
and its repro.py, run as its README says, prints the verdict the command promised."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from workbench.ir.text import strip_locations

from tests.cli_runs import command, corpus_target, could_not, document

PROGRAM = "dot_product_attention"  # causal self-attention with projections: two dot_generals and a softmax


def _could_not(r: subprocess.CompletedProcess, says: str) -> dict:
    """Exit 2: one line on stderr saying ``says``, and the --json error document on stdout."""
    assert says in could_not(r), r.stderr
    return document(r, 2)["error"]


@pytest.fixture(scope="module")
def explored():
    from tests.corpus import program

    import workbench as wb

    inst = program(PROGRAM).build()
    return wb.explore(inst.fn, *inst.args)


@pytest.fixture
def target(tmp_path) -> str:
    return corpus_target(tmp_path, PROGRAM, "attn.py")


# -- graph ---------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_graph_writes_the_svg_of_the_stage_ex_graph_draws(tmp_path, target, explored):
    r = command("graph", target, "-o", "g.svg", "--json", cwd=tmp_path, installed=True)
    doc = document(r, 0)
    g = explored.graph()
    stage = explored.default_run_stage().name
    assert (doc["stage"], doc["nodes"], doc["edges"]) == (stage, g.nodes, g.edges) and g.nodes > 10
    assert doc["output"] == "g.svg" and doc["format"] == "svg" and doc["dot"] is None
    svg = ET.parse(tmp_path / "g.svg").getroot()  # a real SVG document: XML whose root is <svg>
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    drawn = [e for e in svg.iter() if e.get("class") == "node"]
    assert len(drawn) == g.nodes  # every op of the stage is a node of the picture (no more than 400 of them)


@pytest.mark.subprocess
def test_graph_without_output_prints_the_dot_source_a_pipe_into_dot_reads(tmp_path, target, explored):
    r = command("graph", target, "--stage", "xla:optimized", "--max-ops", "5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    g = explored.graph("xla:optimized", max_ops=5)  # above 5 ops: the top level of JAX's name stack
    assert r.stdout == g.source
    summary = f"# xla:optimized: {g.nodes} nodes, {g.edges} edges drawn -> stdout (DOT)"
    assert r.stderr.strip().splitlines()[-1] == summary
    laid = subprocess.run(["dot", "-Tsvg"], input=r.stdout, capture_output=True, text=True, timeout=120)
    assert laid.returncode == 0 and "<svg" in laid.stdout


@pytest.mark.subprocess
def test_graph_that_cannot_be_drawn_exits_2_saying_why(tmp_path, target):
    error = _could_not(command("graph", target, "--stage", "jaxpr", "-o", "g.svg", "--json", cwd=tmp_path),
                       "stage 'jaxpr' is not an MLIR or HLO module")
    assert error["type"] == "GraphUnavailableError" and not (tmp_path / "g.svg").exists()
    # dot stopped past its time limit: the API's reason, and the options that draw less
    r = command("graph", target, "--stage", "xla:optimized", "--layout-seconds", "0.001", "-o", "g.svg",
                 cwd=tmp_path)
    assert r.returncode == 2 and "could not lay out this graph" in r.stderr and "--max-ops" in r.stderr, r.stderr
    # a suffix that names no format: refused before anything is explored
    _could_not(command("graph", target, "-o", "g.txt", "--json", cwd=tmp_path), "give a file ending .svg, .png")


# -- reproducer ------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_reproducer_writes_the_folder_ex_reproducer_writes_and_its_script_fails_as_promised(tmp_path, target,
                                                                                             explored):
    import numpy as np

    import workbench as wb

    r = command("reproducer", target, "--has-op", "stablehlo.dot_general", "bug", "--json", cwd=tmp_path)
    doc = document(r, 1)  # the predicate holds on the program: found
    pred = wb.has_op("stablehlo.dot_general")
    mine = explored.reproducer(tmp_path / "mine", predicate=pred)
    bug = tmp_path / "bug"
    assert [f["name"] for f in doc["files"]] == ["input.mlir", "pipeline.txt", "inputs.npz", "repro.py", "README.md"]
    assert {f["name"] for f in doc["files"]} == {p.name for p in mine.iterdir()} == {p.name for p in bug.iterdir()}
    assert all(f["bytes"] == (bug / f["name"]).stat().st_size for f in doc["files"])
    assert (bug / "pipeline.txt").read_text() == (mine / "pipeline.txt").read_text()
    # the same module; its location aliases (#loc12) are numbered as each process's trace met them
    assert strip_locations((bug / "input.mlir").read_text()) == strip_locations((mine / "input.mlir").read_text())
    with np.load(bug / "inputs.npz") as a, np.load(mine / "inputs.npz") as b:
        assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
    assert f"at stage `{doc['stage']}`" in (mine / "README.md").read_text().splitlines()[0]
    assert doc["parent"] == explored.stage(doc["stage"]).parent
    assert doc["predicate"] == repr(pred) and doc["recipe"]["kind"] == "has_op" and doc["holds"] is True
    assert doc["run"] == "cd bug && python repro.py" and doc["directory"] == "bug"

    # as its README says: python repro.py, in the folder; FAIL (exit 1): the bug reproduces without the workbench
    ran = subprocess.run([sys.executable, "repro.py"], cwd=bug, capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stdout.strip().splitlines()[-1].startswith("FAIL: has_op")


@pytest.mark.subprocess
def test_reproducer_without_a_predicate_says_what_it_wrote_and_exits_0(tmp_path, target):
    r = command("reproducer", target, "--stage", "enzyme-hlo-patterns#1", "bug", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# wrote bug: a reproducer of ") and "from stage 'enzyme-hlo-patterns#1' on" in lines[0]
    assert "no predicate" in lines[0]
    listed = [line.split()[0] for line in lines[2:7]]
    assert listed == ["input.mlir", "pipeline.txt", "inputs.npz", "repro.py", "README.md"]
    assert "# run it: cd bug && python repro.py" in lines
    ran = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path / "bug", capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0 and ran.stdout.strip().splitlines()[-1].startswith("NO PREDICATE"), ran.stdout


@pytest.mark.subprocess
def test_reproducer_that_cannot_be_written_exits_2_in_one_line(tmp_path, target):
    error = _could_not(command("reproducer", target, "--drifts", "bug", "--json", cwd=tmp_path),
                       "--drifts: repro.py cannot decide drifts_at without the workbench")
    assert error["type"] == "WorkbenchError" and not (tmp_path / "bug").exists()
    error = _could_not(command("reproducer", target, "--stage", "xla:optimized", "bug", "--json", cwd=tmp_path),
                       "a reproducer starts at an MLIR pipeline stage")
    assert error["type"] == "ReproducerError"
