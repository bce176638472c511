import workbench as wb
from course_answers import Make
from workbench.course import lesson10


def _reproducer(ex, predicate=None):
    predicate = predicate or wb.miscompiles("cpu:0")
    return Make(lambda tmp: str(ex().reproducer(tmp / "bug", predicate=predicate)))


def _pins(e):
    return "stablehlo.compare" in e.reference_stage().text and wb.lacks_op("stablehlo.compare")(e)


RIGHT = {"l10.q1": ["no_nan_compare_simplify"], "l10.q2": _pins, "l10.q3": 1, "l10.q4": _reproducer(lesson10.buggy)}
WRONG = {"l10.q1": [["no_nan_compare_simplify", "select_op_canon"], "select_op_canon", "no_such_pattern", 3],
         "l10.q2": [wb.miscompiles("cpu:0"), wb.lacks_op("stablehlo.compare"), wb.has_op("stablehlo.compare"),
                    lambda e: wb.has_op("stablehlo.compare", stage="stablehlo")(e) and wb.lacks_op("stablehlo.compare")(e),
                    "lacks_op", lambda e: 1 / 0,
                    # a compare in the input and no select at the end: the shrunk module compiled without no_nan
                    # (a bare compare, no select at all) satisfies it too
                    lambda e: "stablehlo.compare" in e.reference_stage().text and wb.lacks_op("stablehlo.select")(e)],
         "l10.q3": [0, 14, "one"],
         "l10.q4": [_reproducer(lesson10.honest), "/nonexistent/bug", 7,
                    # its repro.py prints "FAIL: lacks_op ... the predicate holds": a vanished select, not wrong numbers
                    _reproducer(lesson10.buggy, wb.lacks_op("stablehlo.select"))]}
CLOSE = {"l10.q1": [["no_nan_compare_simplify", "select_op_canon"]], "l10.q3": [0, 14]}

# the right answers that are code, as a student writes them in the notebook's answer cell
IN_NOTEBOOK = {
    "l10.q2": 'lambda e: "stablehlo.compare" in e.reference_stage().text and wb.lacks_op("stablehlo.compare")(e)',
    "l10.q4": 'str(bad.reproducer(work / "bug", predicate=wb.miscompiles("cpu:0")))',
}
