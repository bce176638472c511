"""The long calls (applicable, step, bisect, pattern_timing) with their defaults, progress bars
included, in a process without a terminal and in a notebook kernel: the user's road."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("enzyme_ad.jax", reason="enzyme-ad ships for CPython 3.11 on x86-64 Linux only")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Transposes that Enzyme's patterns fold away: a predicate that holds with every pattern and not
# with none, so bisect has something to find.
PROGRAM = textwrap.dedent("""
    import jax, jax.numpy as jnp
    import workbench as wb

    def f(x, y):
        return (x.T @ y.T).T + 1.0

    ex = wb.explore(f, jnp.ones((8, 4)), jnp.ones((6, 8)))
    print("applicable", len(ex.applicable()))
    print("step", len(ex.step().applied()))
    b = ex.bisect(lambda e: "stablehlo.transpose" not in e.default_run_stage().text)
    print("bisect", b.patterns, b.runs)
    print("timing", len(ex.pattern_timing()), len(ex.pattern_timing(per_pattern=True)))
""")


def test_defaults_in_a_process_without_a_terminal(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                       stdin=subprocess.DEVNULL, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert int(lines["applicable"]) > 0 and int(lines["step"]) > 0
    assert lines["bisect"].startswith("['")
    # stderr is a pipe, neither a terminal nor a notebook: no bar, so no line of redraws in a log
    for bar in ("patterns on stablehlo", "stepping patterns", "bisect runs", "pattern groups on", "it/s"):
        assert bar not in r.stderr, r.stderr[-3000:]
    assert "\r" not in r.stderr


@pytest.mark.slow
def test_defaults_in_a_notebook_kernel(run_notebook, tmp_path):
    """In a kernel each call draws a tqdm widget in an output of its own and replaces it with a one-line
    summary when it ends: the saved notebook keeps the summaries, not bars frozen at "0%| 0/576" (issue 49:
    a saved notebook kept the widget's text form as it was first drawn)."""
    import json

    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRAM)])
    run_notebook(nb, ROOT)
    nbformat.write(nb, tmp_path / "saved.ipynb")
    outputs = nbformat.read(tmp_path / "saved.ipynb", as_version=4).cells[0].outputs
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "bisect ['" in text and "timing" in text
    saved = json.dumps(outputs)
    assert "application/vnd.jupyter.widget-view+json" not in saved and "0%|" not in saved and "it/s" not in saved
    shown = [o.data["text/plain"] for o in outputs if o.output_type == "display_data"]
    assert len(shown) == 5, shown  # applicable, step, bisect and the two pattern_timing calls
    assert re.fullmatch(r"patterns on stablehlo: (\d+)/\1 patterns in [\d.]+ s", shown[0]), shown
    assert re.fullmatch(r"stepping patterns on stablehlo: \d+ steps? in [\d.]+ s", shown[1]), shown
    assert re.fullmatch(r"bisect runs: \d+ runs in [\d.]+ s", shown[2]), shown


TERMINAL_PROGRAM = textwrap.dedent("""
    import jax.numpy as jnp
    import workbench as wb

    def f(x, y):
        return (x.T @ y.T).T + 1.0

    ex = wb.explore(f, jnp.ones((8, 4)), jnp.ones((6, 8)))
    print("applicable", len(ex.applicable()))
    print("step", len(ex.step().applied()))
    print("quiet", len(ex.applicable(progress=False)))
""")


def _run_with_stderr_on_a_terminal(script) -> tuple[int, str, str]:
    """Run ``script`` with its stderr on a pseudo-terminal (stdout a pipe); (returncode, stdout, stderr)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal has a width
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, cwd=script.parent, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # every end of the terminal closed: the process (and its workers) are gone
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    return proc.wait(timeout=600), out, b"".join(chunks).decode(errors="replace")


def test_one_bar_redrawn_in_place_on_a_terminal(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(TERMINAL_PROGRAM)
    rc, out, err = _run_with_stderr_on_a_terminal(script)
    assert rc == 0, err[-3000:]
    assert "applicable" in out and "step" in out
    # each call drew its bar, and every redraw went back to the start of the same line
    assert "patterns on stablehlo" in err and "stepping patterns on stablehlo" in err
    assert "\n" not in err, err[-3000:]
    redraws = [seg for seg in err.split("\r") if seg.strip()]
    assert all("patterns on stablehlo" in seg for seg in redraws), redraws
    assert err.rstrip("\r").split("\r")[-1].strip() == ""  # the last write cleared the line (leave=False)
    # a bar starts by drawing its zero: one scan bar (the quiet call drew none), one stepping bar
    assert sum(seg.startswith("patterns on stablehlo:   0%") for seg in redraws) == 1, redraws
    assert sum(seg.startswith("stepping patterns on stablehlo: 0step") for seg in redraws) == 1, redraws


@pytest.fixture(scope="module")
def transposes():
    import jax.numpy as jnp
    import workbench as wb

    def f(x, y):
        return (x.T @ y.T).T + 1.0

    return wb.explore(f, jnp.ones((8, 4)), jnp.ones((6, 8)))


def test_on_progress_hears_every_long_call(transposes):
    ex = transposes
    seen = []
    names = ex.applicable(progress=False, on_progress=lambda done, total: seen.append((done, total)))
    tried = len(ex.applicable(details=True, progress=False))
    assert names and seen[0] == (0, tried) and seen[-1] == (tried, tried)
    assert all(t == tried for _, t in seen) and [d for d, _ in seen] == sorted({d for d, _ in seen})

    seen = []
    groups = ex.pattern_timing(progress=False, on_progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, len(groups)) and seen[-1] == (len(groups), len(groups))

    seen = []
    b = ex.bisect(lambda e: "stablehlo.transpose" not in e.default_run_stage().text, progress=False,
                  on_progress=lambda done, total: seen.append((done, total)))
    assert b.patterns and seen == [(k, None) for k in range(b.runs + 1)]  # one call per pipeline run

    seen = []
    s = ex.step(progress=False, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, None) for k in range(len(s.applied()) + 1)]


def test_a_callback_that_is_not_a_function_is_refused(transposes):
    with pytest.raises(TypeError, match="on_progress must be a function"):
        transposes.applicable(progress=False, on_progress=5)


def test_the_panels_status_line_shows_done_of_total(transposes):
    import re

    from workbench.views.widgets import Panel
    from workbench.views.widgets import html

    p = Panel(transposes, background=False)
    shown = []
    p.status.observe(lambda change: shown.append(change["new"]), "value")
    p.find_applicable("stablehlo")
    assert p.last_error is None
    tried = len(transposes.applicable(details=True, progress=False))
    bars = [re.search(r'<progress class="wb-progress" value="(\d+)" max="(\d+)"></progress>', v) for v in shown]
    counts = [(int(m.group(1)), int(m.group(2))) for m in bars if m]
    assert counts and counts[-1] == (tried, tried) and {t for _, t in counts} == {tried}
    assert any(f"{d}/{tried}" in v for v in shown for d, _ in counts[:1])
    # a bisection cannot know its length: the bar stays indeterminate
    shown.clear()
    p.bisect("op_count_above(op, n)", op="stablehlo.transpose", n=0)
    running = [v for v in shown if "wb-running" in v]
    assert running and all('<progress class="wb-progress"></progress>' in v for v in running)
    assert "3/" not in html.running("x", 1.0, done=3, total=None)  # no "done/total" without a total


def test_the_summary_says_what_was_done_in_how_long_or_where_it_stopped():
    from workbench.analysis.progress import Progress

    with Progress(576, "patterns on stablehlo", show=False, unit="pattern") as p:
        p.update(576)
    assert re.fullmatch(r"patterns on stablehlo: 576/576 patterns in [\d.]+ s", p.summary())
    with Progress(576, "patterns on stablehlo", show=False, unit="pattern") as p:
        p.update(24)  # interrupted: the line says so, no bar claims it finished
    assert p.summary().startswith("patterns on stablehlo: stopped at 24/576 patterns after ")
    with Progress(None, "bisect runs", show=False, unit="run") as p:
        p.update(1)
    assert p.summary().startswith("bisect runs: 1 run in ")
