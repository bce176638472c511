"""Compiler test files (issue 44, item 7): Enzyme-JaX lit files of both forms, copied under tests/fixtures/lit/
(origin and license in its README), run as ``enzymexlamlir-opt`` runs them and read by FileCheck.

- several modules one after another (``dividesqrttomulrsqrt.mlir``: 2, ``powint.mlir``: 3, each with its own
  ``@main``): MLIR reads one module around them and the pipeline reaches each; ``wb.opt`` gives that, and
  ``wb.explore_texts`` one exploration per module. They used to be refused ("explore each module on its own").
- ``// -----`` chunks (``select_select_neg_cond.mlir``, ``recognize_extend.mlir``, whose four chunks each define
  ``@main``, so only ``--split-input-file`` reads it): ``wb.opt(..., split_input_file=True)`` runs each chunk
  and joins the outputs with ``// -----``; ``wb.explore_texts`` one exploration per chunk.

The CHECK lines are held two ways: the ops and values they expect, checked here in Python on every machine,
and the file itself through LLVM's FileCheck where one is installed.
"""
from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import workbench as wb
from workbench.ir.lit import run_lines, split_input_file, top_level_modules
from workbench.ir.text import strip_locations

LIT = Path(__file__).parent / "fixtures" / "lit"
MODULES = ("dividesqrttomulrsqrt", "powint")
CHUNKS = ("select_select_neg_cond", "recognize_extend")


def text_of(name: str) -> str:
    return (LIT / f"{name}.mlir").read_text()


def filecheck(name: str, output: str) -> None:
    """The file's own CHECK lines on ``output``, by LLVM's FileCheck (skipped where none is installed)."""
    tool = shutil.which("FileCheck") or next(iter(sorted(glob.glob("/usr/bin/FileCheck-*"), reverse=True)), None)
    if tool is None:
        pytest.skip("no FileCheck here (Debian's llvm-*-tools has it); the Python checks above ran")
    r = subprocess.run([tool, str(LIT / f"{name}.mlir")], input=output, text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr


def functions(output: str) -> list[str]:
    return re.findall(r"func\.func (?:public |private )?(@[\w$.-]+)", output)


# -- the text: pieces and RUN lines, as the opt tool cuts them -------------------------------------------------
def test_the_pieces_are_cut_as_the_opt_tool_cuts_them():
    assert [(p.index, p.line) for p in top_level_modules(text_of("powint"))] == [(0, 3), (1, 17), (2, 31)]
    chunks = split_input_file(text_of("recognize_extend"))
    assert [c.line for c in chunks] == [1, 17, 45, 68] and all("// -----" not in c.text for c in chunks)
    assert chunks[1].file_line(3) == 19  # the chunk starts on the marker's line: its third line holds the second @main
    assert "".join(c.text for c in chunks) == text_of("recognize_extend").replace("// -----", "")
    assert split_input_file("a\n// -----") == split_input_file("a\n// -----")[:1]  # a marker at the very end: none
    assert len(split_input_file("a\n// ---\nb")) == 1  # too few dashes: a comment, as in MLIR
    run, = run_lines(text_of("select_select_neg_cond"))
    assert run.split and run.pipeline == ("builtin.module(enzyme-hlo-generate-td{patterns=select_select_neg_cond},"
                                          "transform-interpreter,enzyme-hlo-remove-transform)")
    run, = run_lines(text_of("dividesqrttomulrsqrt"))
    assert not run.split and run.pipeline == "builtin.module(enzyme-hlo-opt)"
    continued = "// RUN: mlir-opt %s \\\n// RUN:   --pass-pipeline='builtin.module(canonicalize)' | FileCheck %s\n"
    assert run_lines(continued)[0].pipeline == "builtin.module(canonicalize)"


# -- wb.opt over the whole file --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODULES)
def test_opt_runs_a_file_of_modules_as_the_opt_tool_does(name):
    out = strip_locations(wb.opt(text_of(name), "RUN"))
    assert out.count("module {") == len(top_level_modules(text_of(name))) + 1  # the inner ones, in one around them
    if name == "dividesqrttomulrsqrt":
        assert functions(out) == ["@t1", "@t2"]
        assert out.count("stablehlo.rsqrt") == 2 and "stablehlo.sqrt" not in out and "stablehlo.divide" not in out
        assert "stablehlo.multiply %cst, %0" in out  # @t2's 5 / sqrt(x) as 5 * rsqrt(x)
    else:  # 2^4, 6^0, 6^-1 in integers: each module's power folded to its constant, each @main public
        assert functions(out) == ["@main"] * 3 and "stablehlo.power" not in out
        assert [int(v) for v in re.findall(r"stablehlo\.constant dense<(-?\d+)>", out)] == [16, 1, 0]
        assert "func.func @main() -> tensor<i64>" in out  # printed as MLIR prints it: the CHECK lines' form
    filecheck(name, out)


@pytest.mark.parametrize("name", CHUNKS)
def test_opt_splits_a_file_as_split_input_file_does(name):
    text = text_of(name)
    out = strip_locations(wb.opt(text, "RUN"))  # the RUN line says --split-input-file
    parts = out.split("\n// -----\n")
    assert len(parts) == len(split_input_file(text)) == 4 and all(p.lstrip().startswith("module {") for p in parts)
    if name == "select_select_neg_cond":
        assert functions(out) == ["@false_branch_neg_cond", "@true_branch_neg_cond", "@false_branch_and_neg_cond",
                                  "@true_branch_and_neg_cond"]
        assert "stablehlo.select %arg0, %arg3, %arg1 : tensor<i1>, tensor<4xf32>" in parts[0]
        assert "stablehlo.select %arg0, %arg2, %arg3 : tensor<i1>, tensor<4xf32>" in parts[1]
        assert "stablehlo.not" not in parts[0] + parts[1]  # the negated condition is gone where it was folded
    else:
        assert functions(out) == ["@main"] * 4
        assert [p.count('"enzymexla.extend"') for p in parts] == [1, 1, 1, 0]  # the last chunk has none to make
        assert "stablehlo.concatenate" not in parts[0] and "stablehlo.concatenate" in parts[3]
    assert out == strip_locations(wb.opt(text, "RUN", split_input_file=True))
    filecheck(name, out)


def test_a_split_file_read_whole_is_what_mlir_opt_does_without_the_flag():
    """recognize_extend's chunks each define @main: one module cannot hold them (as mlir-opt without the flag)."""
    with pytest.raises(wb.MlirSyntaxError, match="redefinition of symbol named 'main'") as e:
        wb.opt(text_of("recognize_extend"), "RUN", split_input_file=False)
    with pytest.raises(wb.MlirSyntaxError, match=r"holds 4 `// -----` chunks") as e:
        wb.explore_text(text_of("recognize_extend"))
    assert "wb.explore_texts(text)" in str(e.value) and "split_input_file=True" in str(e.value)
    # without the flag select_select_neg_cond parses whole: its markers are comments and its names distinct
    whole = strip_locations(wb.opt(text_of("select_select_neg_cond"), "RUN", split_input_file=False))
    assert "// -----" not in whole and len(functions(whole)) == 4 and whole.count("module {") == 1


def test_a_chunk_that_fails_is_named_by_its_line_and_the_others_are_kept():
    text = text_of("select_select_neg_cond")
    chunks = split_input_file(text)
    broken = text.replace("%result = stablehlo.select %cond, %inner, %c", "%result = stablehlo.select %cond, %inner,", 1)
    with pytest.raises(wb.LitFileError) as e:
        wb.opt(broken, "RUN")
    err = e.value
    assert [label for label, _ in err.failed] == [f"chunk [1] at line {chunks[1].line}"]
    line = next(i for i, l in enumerate(broken.splitlines(), 1) if "%inner, :" in l)
    assert (f"1 of 4 `// -----` chunks failed:\n  chunk [1] at line 13: (the chunk's line {line - 12} is line {line} "
            "of the file) the text does not parse as MLIR") in str(err)
    assert [r is None for r in err.results] == [False, True, False, False]
    assert "@false_branch_neg_cond" in err.results[0] and "@true_branch_and_neg_cond" in err.results[3]


# -- explore_text and explore_texts ----------------------------------------------------------------------------
def test_explore_text_reads_a_file_of_modules_as_one_and_says_so():
    ex = wb.explore_text(text_of("powint"), pipeline="RUN")
    assert ex.spec.title == "text: 3 modules read as one" and "3 modules read as one" in repr(ex)
    assert [s.name for s in ex.pipeline_stages] == ["input", "enzyme-hlo-opt#1"]
    assert functions(ex.pipeline_stages[-1].text) == ["@main"] * 3 and "stablehlo.power" not in ex.pipeline_stages[-1].text
    with pytest.raises(wb.WorkbenchError, match="3 modules one after another.*wb.explore_texts"):
        ex.run()


@pytest.mark.parametrize("name", MODULES)
def test_explore_texts_gives_one_exploration_per_module(name):
    text = text_of(name)
    exs = wb.explore_texts(text, pipeline="RUN")
    n = len(top_level_modules(text))
    assert len(exs) == n and exs.form == "modules" and isinstance(exs, wb.Explorations)
    assert repr(exs).startswith(f"Explorations: {n} modules one after another in the text, each explored on its own")
    for ex, piece in zip(exs, exs.pieces):
        assert ex.spec.title == f"text: module [{piece.index}] at line {piece.line}"
        assert ex.pipeline_stages[-1].name == "enzyme-hlo-opt#1" and ex.error is None
    last = [strip_locations(ex.pipeline_stages[-1].text) for ex in exs]
    assert all(t.count("func.func") == 1 for t in last)  # each exploration holds its own module only
    if name == "powint":
        assert [re.findall(r"dense<(-?\d+)>", t) for t in last] == [["16"], ["1"], ["0"]]
        assert [int(ex.run(repeat=1).outputs) for ex in exs] == [16, 1, 0]  # each has its @main: it runs
    else:
        assert "stablehlo.rsqrt" in last[0] and "stablehlo.multiply" in last[1]


@pytest.mark.parametrize("name", CHUNKS)
def test_explore_texts_gives_one_exploration_per_chunk(name):
    text = text_of(name)
    exs = wb.explore_texts(text, pipeline="RUN")
    chunks = split_input_file(text)
    assert len(exs) == 4 and exs.form == "chunks"
    assert repr(exs).startswith("Explorations: 4 `// -----` chunks, each explored on its own")
    assert [ex.spec.title for ex in exs] == [f"text: chunk [{c.index}] at line {c.line}" for c in chunks]
    opt_parts = strip_locations(wb.opt(text, "RUN")).split("\n// -----\n")
    for ex, part in zip(exs, opt_parts):  # each exploration's last stage is what opt gave its chunk
        assert ex.pipeline_stages[-1].text.strip() == part.strip()
    assert len(wb.explore_texts(text, pipeline="RUN", split_input_file=True)) == 4


def test_explore_texts_of_one_module_gives_one():
    one = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
    exs = wb.explore_texts(one, pipeline="canonicalize")
    assert len(exs) == 1 and exs.form == "one" and exs[0].spec.title == "text"


def test_a_module_that_does_not_parse_is_named_and_the_others_kept():
    text = text_of("dividesqrttomulrsqrt").replace("%1 = stablehlo.divide %cst, %0 : tensor<4x1x3x1xf32>\n    return %1",
                                                   "%1 = stablehlo.divide %cst, %0 : tensor<4x1x3x1xf32>\n    return %9", 1)
    with pytest.raises(wb.LitFileError, match=r"1 of 2 modules failed:\n  module \[0\] at line 2: ") as e:
        wb.explore_texts(text, pipeline="RUN")
    assert e.value.results[0] is None and e.value.results[1].pipeline_stages[-1].name == "enzyme-hlo-opt#1"


def test_pipeline_run_without_a_run_line_says_so():
    with pytest.raises(wb.ArgumentError, match="no '// RUN:' line"):
        wb.opt("func.func @f() {\n  return\n}\n", "RUN")
    with pytest.raises(wb.ArgumentError, match="has 1 RUN line"):
        wb.opt(text_of("powint"), "RUN:2")


def test_the_command_line_splits_as_mlir_opt(cli):
    path = LIT / "recognize_extend.mlir"
    r = cli("opt", str(path), "--pass-pipeline", "RUN")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("// -----") == 3 and r.stdout.count('"enzymexla.extend"') == 3
    plain = cli("opt", str(LIT / "select_select_neg_cond.mlir"), "--split-input-file",
                "--pass-pipeline=" + run_lines(text_of("select_select_neg_cond"))[0].pipeline)
    assert plain.returncode == 0 and plain.stdout.count("// -----") == 3, plain.stderr
