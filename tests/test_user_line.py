"""Issue 44, item 5: every view that names a line leads with the user's own line (the innermost frame outside
installed packages, the standard library, jax and the workbench) and keeps the library's beside it.

The program is a Flax linen + Optax step in a module of its own (tests/user_code/flax_optax_step.py): its
ops' innermost frames are flax's ``linear.py`` and optax's ``transform.py``; the user's lines are that file's."""
from __future__ import annotations

import os

import pytest

import workbench as wb
from workbench.analysis.provenance import LIBRARY_ONLY, source_words, your_frame
from workbench.ir.attribution import is_library, own_frame
from workbench.ir.origins import Frame, Origin

pytest.importorskip("flax")
pytest.importorskip("optax")
from tests.user_code import flax_optax_step as step  # noqa: E402

USER_FILE = os.path.abspath(step.__file__)
# optax's scale_by_learning_rate (-lr * update), as the last MLIR stage splats it for the second layer's bias
LEARNING_RATE_CONSTANT = "dense<-1.000000e-03> : tensor<4xf32>"


def test_a_package_pip_installed_into_a_folder_on_sys_path_is_a_librarys(tmp_path, monkeypatch):
    """``pip install --target DIR`` with DIR on PYTHONPATH (how the TPU machine stages flax and optax) leaves no
    'site-packages' in the path: the folder's ``*.dist-info`` says packages were installed there."""
    target = tmp_path / "staged"
    (target / "optax" / "_src").mkdir(parents=True)
    (target / "optax-0.2.8.dist-info").mkdir()
    user = tmp_path / "project"
    user.mkdir()
    monkeypatch.syspath_prepend(str(user))
    monkeypatch.syspath_prepend(str(target))
    lib = str(target / "optax" / "_src" / "transform.py")
    mine = str(user / "train.py")
    assert is_library(lib) and not is_library(mine)
    lib_frame, mine_frame = Frame(lib, 507, 3, "update_fn"), Frame(mine, 42, 5, "train_step")
    assert source_words(lib_frame, mine_frame) == f"{mine}:42 (optax/_src/transform.py:507)"


@pytest.fixture(scope="module")
def ex():
    fn, args = step.example()
    return wb.explore(fn, *args, device="cpu")


def test_the_users_frame_is_the_innermost_outside_libraries_stdlib_jax_and_the_workbench():
    lib = Frame("/x/lib/python3.11/site-packages/optax/_src/transform.py", 507, 3, "update_fn")
    mine = Frame("/home/u/train.py", 42, 5, "train_step")
    std = Frame(os.path.join(os.path.dirname(os.__file__), "contextlib.py"), 81, 1, "inner")
    jaxf = Frame(os.path.join(os.path.dirname(wb.__file__), "..", "x.py"), 1)
    tool = Frame(os.path.join(os.path.dirname(os.path.abspath(wb.__file__)), "pipeline", "trace.py"), 289, 1)
    assert is_library(lib.file) and is_library(std.file) and not is_library(mine.file)
    import jax
    assert is_library(os.path.join(os.path.dirname(jax.__file__), "_src", "api.py"))
    assert own_frame(Origin("n", (lib, std, mine))) == mine
    assert your_frame(Origin("n", (tool, lib, mine))) == mine  # the workbench's own frames are no user's
    assert own_frame(Origin("n", (lib, std))) is None and jaxf  # every frame a library's: none
    assert source_words(lib, mine) == "/home/u/train.py:42 (optax/_src/transform.py:507)"
    assert source_words(mine, mine) == "/home/u/train.py:42"
    assert source_words(lib, None) == "optax/_src/transform.py:507 (library code only)"


def test_source_map_leads_with_the_users_line_and_keeps_the_librarys_beside_it(ex):
    sm = ex.source_map()
    assert list(sm.columns[:8]) == ["your_file", "your_line", "your_function", "your_code", "file", "line",
                                    "function", "code"]
    mine = sm[sm.your_file == USER_FILE]
    # the Dense layers: flax's linear.py innermost, the user's two nn.Dense lines theirs
    for marker in ("first dense", "second dense", "opt.update"):
        rows = mine[mine.your_line == step.line(marker)]
        assert len(rows) and rows.stablehlo_ops.sum() > 0 and rows.mlir_ops.sum() > 0, (marker, sm.to_string())
        assert rows.file.map(is_library).any(), rows[["file", "line"]]
    update = mine[mine.your_line == step.line("opt.update")]
    assert update.file.str.contains("optax/").all() and "opt.update" in update.your_code.iloc[0]
    dense = mine[mine.your_line == step.line("first dense")]
    assert dense.file.str.contains("flax/").any()
    # before, the rows named only the innermost frame: no row led with the user's opt.update line
    assert not sm.file.eq(USER_FILE).all()
    assert (sm.your_file == LIBRARY_ONLY).sum() < len(sm) // 2


def test_lineage_names_the_users_line_first(ex):
    locs = ex.locations("stablehlo")
    dot = locs[(locs.op == "stablehlo.dot_general") & (locs.your_line == step.line("first dense"))].iloc[0]
    assert dot.your_file == USER_FILE and "flax/" in dot.file
    df = ex.lineage("stablehlo", dot.result)
    want = f"{USER_FILE}:{step.line('first dense')}"
    assert any(s.startswith(want + " (") and "flax/" in s for s in df.attrs["your_sources"]), df.attrs
    rows = df[df.result != ""]
    assert len(rows) and rows.source.str.startswith(want).all(), rows.source.tolist()


def test_drift_says_the_users_line_with_the_librarys_beside_it(ex):
    from tests.test_drift import edited

    stage = ex.default_run_stage()
    old = LEARNING_RATE_CONSTANT
    assert stage.text_with_locations.count(old) == 1, "the step's learning-rate constant is not where the test expects"
    d = ex.drift(edited(stage, old, old.replace("-1.000000e-03", "-5.000000e-02")))
    assert d.found, d
    words = repr(d)
    assert f"at your line {USER_FILE}:{step.line('opt.update')} (optax/" in words, words
    assert d.op.source.startswith(f"{USER_FILE}:{step.line('opt.update')} (optax/")


def test_the_report_lists_the_users_lines_first(ex, tmp_path):
    page = open(ex.report(tmp_path / "r.html"), encoding="utf-8").read()
    assert "Your lines" in page
    i = page.index("Your lines")
    section = page[i:i + 200_000]
    assert f"{USER_FILE}:{step.line('opt.update')}" in section and "optax/_src/" in section
    first = section.index(f"{USER_FILE}:")
    assert first < section.index("optax/_src/")  # the user's line leads its row, the library's beside it


def test_the_source_tab_lists_the_users_lines_with_the_librarys_beside_them(ex):
    from workbench.views.widgets.source import listing_rows

    sm = ex.source_map(stage=ex.default_run_stage().name)
    rows = listing_rows(sm)
    files = [r["file"] for r in rows if r["k"] == "file"]
    assert files and files[0] == USER_FILE, files
    update = next(r for r in rows if r["k"] == "line" and r["file"] == USER_FILE
                  and r["line"] == step.line("opt.update"))
    assert update["ops"] > 0 and "optax/" in update["lib"] and "through optax/" in update["title"]
