"""The course's notebooks: each runs top to bottom on a fresh kernel without errors, as shipped (its
exercises blank, each saying "not answered yet"); each lesson holds its 2-4 exercises, ends with what
the reader learned and an open question; notebooks/README.md indexes them all. The execution test
prints each notebook's time (the course aims at under 2 minutes each on this machine)."""
import json
import pathlib
import re
import time

import nbformat
import pytest

import course_answers
from workbench import course

ROOT = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(ROOT.glob("*.ipynb"))
CHECK = re.compile(r"course\.check\(\s*[\"'](l\d+\.q\d+)[\"']")


def execute(run_notebook, nb, path):
    """Run ``nb`` top to bottom on a fresh kernel in ``path``'s folder (tests/conftest.py's run_notebook); the
    seconds it took."""
    pytest.importorskip("enzyme_ad.jax", reason="the lessons run Enzyme-JaX's patterns (CPython 3.11, x86-64 Linux)")
    start = time.perf_counter()
    run_notebook(nb, path.parent)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, [(e.ename, e.evalue) for e in errors]
    return time.perf_counter() - start


def shown(cell) -> str:
    return json.dumps([o.get("data", {}).get("text/plain", o.get("text", "")) for o in cell.outputs])


def cells(path, kind):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == kind]


def test_the_notebooks_are_the_course_in_order():
    assert [p.stem for p in NOTEBOOKS] == [nb for _, _, nb in course.LESSONS]


@pytest.mark.parametrize("lesson", course.LESSONS, ids=[nb for _, _, nb in course.LESSONS])
def test_each_lesson_holds_its_exercises_and_ends_with_what_was_learned(lesson):
    number, title, name = lesson
    path = ROOT / f"{name}.ipynb"
    code, prose = cells(path, "code"), cells(path, "markdown")
    asked = [q for c in code for q in CHECK.findall(c)]
    assert sorted(asked) == sorted(course.exercises(number).id), asked
    assert len(set(asked)) == len(asked)
    assert not any("sys.path" in c for c in code), "a lesson runs on the installed workbench"
    assert not any(c.get("outputs") for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"), \
        "notebooks are shipped without outputs"
    learned = [i for i, p in enumerate(prose) if re.search(r"^#+ What you learned", p, re.M)]
    assert learned, "no 'What you learned' section"
    assert any(re.search(r"^#+ An open question", p, re.M) for p in prose[learned[0]:]), \
        "no open question after 'What you learned'"
    if number:
        assert re.search(rf"^# Lesson {number}\b", prose[0], re.M), prose[0][:80]


def test_the_index_lists_every_lesson_and_the_tour_links_to_it():
    index = (ROOT / "README.md").read_text()
    for number, title, name in course.LESSONS:
        assert f"({name}.ipynb)" in index, name
        assert title.lower() in index.lower(), title
    assert "README.md" in "".join(cells(ROOT / "00_tour.ipynb", "markdown"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_lesson_carries_the_kernels_own_metadata_so_it_opens_unchanged(path):
    """JupyterLab writes the kernel's kernelspec and language_info into a notebook when its kernel starts,
    and a value that differs marks the notebook changed before the student typed anything (the tour
    opened "unsaved"): each lesson carries ipykernel's, for the Python the set-up installs (3.11).
    test_browser_tour_opens.py opens the tour in JupyterLab and checks it stays unchanged."""
    import platform

    from ipykernel.ipkernel import IPythonKernel

    meta = json.loads(path.read_text())["metadata"]
    assert meta["kernelspec"] == {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    shipped = dict(meta["language_info"])
    assert shipped.pop("version").split(".")[:2] == platform.python_version().split(".")[:2] == ["3", "11"]
    assert shipped == {k: v for k, v in IPythonKernel.language_info.items() if k != "version"}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_the_notebook_runs_as_shipped_and_a_student_who_writes_the_right_answers_is_told_right(
        run_notebook, path, capsys):
    """Two roads in one kernel (one run per notebook, the suite's slowest part before): the notebook as shipped,
    every cell in order, each exercise blank and saying "not answered yet"; and the student's road, where
    after each blank exercise cell the same cell follows with the right answer typed in (``answer = ...``),
    so each checker runs in the lesson's own kernel (lesson 9's on its 8 devices) and says right."""
    answers = course_answers.lessons()
    nb = nbformat.read(path, as_version=4)
    blank, answered, cells_in_order = [], [], []
    for c in nb.cells:
        cells_in_order.append(c)
        m = CHECK.search(c.source) if c.cell_type == "code" else None
        if m:
            qid = m.group(1)
            code = course_answers.notebook_answer(answers[int(qid[1:].split(".")[0])], qid)
            typed = nbformat.v4.new_code_cell(c.source)
            typed.source, n = re.subn(r"^answer = None\b", lambda _: f"answer = {code}", c.source, flags=re.M)
            assert n == 1, c.source
            blank.append(c)
            answered.append((qid, typed))
            cells_in_order.append(typed)
    nb.cells = cells_in_order
    seconds = execute(run_notebook, nb, path)
    with capsys.disabled():
        print(f"\n  {path.name} with its {len(answered)} exercises blank, then answered, executed in {seconds:.1f} s",
              flush=True)
    for c in blank:
        assert "not answered yet" in shown(c), (c.source, shown(c))
    for qid, c in answered:
        assert f"{qid}: right" in shown(c), (qid, c.source, shown(c))
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    if path.name == "00_tour.ipynb":
        assert "transposes without the pattern" in text and "one-shot-bufferize#1" in text
        # the failing pass reads as a compiler's error in a real kernel: the cell named as IPython names it,
        # none of the kernel's frames (ipykernel, tornado, asyncio) and not enzyme-ad's wrapper
        failed = next(c for c in nb.cells if "one-shot-bufferize" in c.source)
        error = "".join(o.get("text", "") for o in failed.get("outputs", []))
        assert re.search(r"\n  from: Cell In\[\d+\], line 1\n", error), error
        assert not [t for t in ("tornado", "kernelbase", "asyncio", "ipykernel", "Failed to parse pipeline")
                    if t in error], error
