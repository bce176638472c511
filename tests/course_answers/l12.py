import inspect

from course_answers import Make
from workbench.course import lesson12


def _line_of(fn, text: str) -> int:
    """The line of lesson12.py in ``fn``'s source that holds ``text`` (found in the source, not by the workbench)."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


FORWARD = _line_of(lesson12.MLP.__call__, "return self.out")  # the products, forward and backward
LOSS = _line_of(lesson12.loss_fn, "softmax_cross_entropy")
GRADIENT = _line_of(lesson12.train_step, "value_and_grad")
UPDATE = _line_of(lesson12.train_step, "optimizer.update")
WHERE_WRITTEN = _line_of(lesson12.setup, "optax.sgd")  # where the bug is, not where drift sees it


def _hottest_line(_tmp):
    """The line of lesson12.py with the most measured time, summed from the source map's rows of a fresh
    profile (not through the lesson's helper)."""
    ex = lesson12.explore()
    table = ex.source_map(measured=ex.profile())
    mine = table[table.your_file.str.endswith("lesson12.py")]
    return int(mine.groupby("your_line").measured_us.sum().idxmax())


RIGHT = {"l12.q1": 8, "l12.q2": "stablehlo.broadcast_in_dim", "l12.q3": Make(_hottest_line), "l12.q4": UPDATE}
WRONG = {"l12.q1": [9, 4, 11, 3, "%arg20", "x", True],
         # constants grew (splats), func.call went in inline before the patterns, broadcast_in_dim misspelt
         "l12.q2": ["stablehlo.constant", "func.call", "stablehlo.transpose", "broadcast_in_dim", 5],
         "l12.q3": [UPDATE, LOSS, WHERE_WRITTEN, "other.py:30", "the matmul"],
         "l12.q4": [LOSS, GRADIENT, WHERE_WRITTEN, FORWARD, f"lesson12.py:{LOSS}", "optax/_src/transform.py:507"]}
CLOSE = {"l12.q1": [9]}

# the line a student reads off the notebook's own profile (device-dependent), typed in its answer cell
IN_NOTEBOOK = {"l12.q3": "int(by_line.line[0])"}
