import workbench as wb

RIGHT = {
    "l4.q1": 16_809_984,
    "l4.q2": "no_nan_compare_simplify",
    "l4.q3": lambda e: not e.run(repeat=1).check.passed,
    "l4.q4": {"nan_all_finite", "inf_all_finite"},
}
WRONG = {
    "l4.q1": [1000, "lots", 2 * 256 * 512 * 64 * 2],
    "l4.q2": ["involution_neg_simplify", "no_nan_compare_simplfy", 7, ["no_nan_mul_simplify", "mul_simplify"]],
    "l4.q3": [lambda e: True, lambda e: False, wb.has_op("stablehlo.compare"), lambda e: 1 / 0, "miscompiles"],
    "l4.q4": [{"cancelling"}, "inf_no_nan, inf_into_nan_to_zero", {"nan"}, 4],
}
CLOSE = {
    "l4.q1": [33_570_816, 16_777_216],   # the program as lowered; the product without the sum a + b
    "l4.q3": [wb.lacks_op("stablehlo.compare")],   # looks at the text, not the numbers
    "l4.q4": [{"inf_all_finite"}, {"inf_all_finite", "nan_all_finite", "inf_no_nan"}],
}

# the right answers that are code, as a student writes them in the notebook's answer cell
IN_NOTEBOOK = {"l4.q3": "lambda e: not e.run(repeat=1).check.passed"}
