"""A golden is of one program (issue 44, item 10): a check of another function, or of the golden's function
at other shapes, dtypes or argument tree, fails on its "program" row however its counts compare, unless the
user says it is the same program (``same_program=True``, ``--same-program``). A golden saved before the
signature was recorded still loads, is held to what it did record, and says what was not compared.
"""
from __future__ import annotations

import json
import zipfile

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.exploration.golden import check_golden

OFF = dict.fromkeys(("max_ops_growth", "max_flops_growth", "max_bytes_growth", "max_memory_growth"), "none")


def mm(x, w):
    return jnp.tanh(x @ w) * 2 + 1


def mm_params(p):
    x, w = (p["x"], p["w"]) if isinstance(p, dict) else p  # a dict of parameters once, a tuple later
    return jnp.tanh(x @ w) * 2 + 1


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    ex = wb.explore(mm, jnp.ones((16, 16)), jnp.ones((16, 8)))
    return wb.testing.write_golden(ex, tmp_path_factory.mktemp("golden") / "mm.hlox")


def program_row(verdict):
    rows = [r for r in verdict.rows if r.what == "program"]
    assert len(rows) == 1, verdict
    return rows[0]


def test_the_issues_call_fails_where_it_printed_passed(golden):
    """Every count of ``sin(z) * 3`` at 5x3 is below the 16x16 @ 16x8 golden's: without the program row it passed."""
    with pytest.raises(AssertionError) as e:
        wb.testing.assert_compiles_like(lambda z: jnp.sin(z) * 3, jnp.ones((5, 3)), golden=golden)
    said = str(e.value)
    assert "FAIL  program" in said and "'mm' in the golden and '<lambda>' now" in said
    assert "same_program=True" in said  # the way out, named
    # the counts alone would have passed: the growth rows are all ok
    verdict = check_golden(golden, lambda z: jnp.sin(z) * 3, (jnp.ones((5, 3)),))
    assert [r.what for r in verdict.failed] == ["program"]


def test_the_same_function_at_other_shapes_fails(golden):
    verdict = check_golden(golden, mm, (jnp.ones((8, 8)), jnp.ones((8, 4))))
    row = program_row(verdict)
    assert not verdict.ok and not row.ok and row.change == "differs"
    assert "argument args[0]'s shape: float32[16,16] in the golden, float32[8,8] now" in row.note
    assert "args[1]'s shape: float32[16,8] in the golden, float32[8,4] now" in row.note
    assert row.golden == "mm(float32[16,16], float32[16,8])" and row.now == "mm(float32[8,8], float32[8,4])"


def test_the_same_function_at_other_dtypes_fails(golden):
    verdict = check_golden(golden, mm, (jnp.ones((16, 16), jnp.bfloat16), jnp.ones((16, 8), jnp.bfloat16)), **OFF)
    row = program_row(verdict)
    assert not verdict.ok and "args[0]'s dtype: float32[16,16] in the golden, bfloat16[16,16] now" in row.note


def test_the_same_leaves_in_another_tree_fail(tmp_path):
    """Flattened, ``mm_params({"x", "w"})`` and ``mm_params((x, w))`` take the same two arrays: only the tree differs."""
    x, w = jnp.ones((16, 16)), jnp.ones((16, 8))
    path = wb.testing.write_golden(wb.explore(mm_params, {"x": x, "w": w}), tmp_path / "params.hlox")
    verdict = check_golden(path, mm_params, ((x, w),), **OFF)
    row = program_row(verdict)
    assert not row.ok and "the arguments' tree differs" in row.note
    assert "only in the golden: args[0]['w'], args[0]['x']" in row.note and "only now: args[0][0], args[0][1]" in row.note
    assert check_golden(path, mm_params, ({"x": x, "w": w},), same_final_module=True, numbers=True).ok


def test_the_golden_itself_passes_and_says_its_program_is_the_same(golden):
    verdict = check_golden(golden, mm, (jnp.ones((16, 16)), jnp.ones((16, 8))), same_final_module=True)
    row = program_row(verdict)
    assert verdict.ok and row.ok and row.change == "same" and row.note == ""
    assert not any(r.what == "program" for r in check_golden(golden).rows)  # its own module: nothing to hold it to


def test_same_program_allows_another_name_and_signature_and_says_so(golden):
    verdict = check_golden(golden, lambda z: jnp.sin(z) * 3, (jnp.ones((5, 3)),), same_program=True)
    row = program_row(verdict)
    assert verdict.ok and row.ok and row.change == "differs" and row.limit == "any (same_program=True)"
    assert row.note.startswith("allowed by same_program=True: the function is 'mm' in the golden and '<lambda>' now")
    assert wb.testing.assert_compiles_like(mm, jnp.ones((8, 8)), jnp.ones((8, 4)), golden=golden,
                                           same_program=True).ok


def test_the_command_line_fails_another_signature_and_takes_same_program(golden, tmp_path, cli):
    target = tmp_path / "small.py"
    target.write_text("import jax.numpy as jnp\n\ndef mm(x, w):\n    return jnp.tanh(x @ w) * 2 + 1\n\n"
                      "def args():\n    return jnp.ones((8, 8)), jnp.ones((8, 4))\n")
    r = cli("check", str(golden), "--target", f"{target}:mm")
    assert r.returncode == 1 and "FAIL  program" in r.stdout and "float32[8,8] now" in r.stdout
    r = cli("check", str(golden), "--target", f"{target}:mm", "--same-program")
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr


def _without_signature(src, dst):
    """``src`` as a golden saved before signatures were recorded: its manifest without the field."""
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w") as b:
        for info in a.infolist():
            data = a.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                assert "signature" in manifest
                del manifest["signature"]
                data = json.dumps(manifest).encode()
            b.writestr(info, data)
    return dst


def test_an_old_golden_loads_is_held_to_what_it_recorded_and_says_what_it_did_not(golden, tmp_path):
    old = _without_signature(golden, tmp_path / "old.hlox")
    sig = wb.load(old).spec.signature
    assert sig.function == "mm" and sig.leaves is None  # the title of a traced function: its name
    same = check_golden(old, mm, (jnp.ones((16, 16)), jnp.ones((16, 8))))
    row = program_row(same)
    assert same.ok and row.ok and "saved before goldens recorded their arguments' tree: the tree was not compared" in row.note
    other = check_golden(old, mm, (jnp.ones((8, 8)), jnp.ones((8, 4))))
    row = program_row(other)
    assert not other.ok and "the module's argument 0 is float32[16,16] in the golden and float32[8,8] now" in row.note
    renamed = check_golden(old, lambda x, w: jnp.tanh(x @ w) * 2 + 1, (jnp.ones((16, 16)), jnp.ones((16, 8))))
    assert not renamed.ok and "'mm' in the golden and '<lambda>' now" in program_row(renamed).note
