RIGHT = {
    "l3.q1": 0,
    "l3.q2": {"transpose_is_reshape", "mul_simplify"},
    "l3.q3": ["dot_transpose", "transpose_dot_reorder", "transpose_is_reshape", "transpose_transpose"],
    "l3.q4": ("dot_transpose", "reorder_elementwise_and_shape_op"),
}
WRONG = {
    "l3.q1": [7, 576, "none"],
    "l3.q2": [["transpose_transpose"], "broadcast_in_dim_op_canon, involution_neg_simplify", 3, "mul_simplfy"],
    "l3.q3": [["involution_neg_simplify"], "transpose_transpose", "transpose_transposes", 4],
    "l3.q4": [("transpose_transpose", "involution_neg_simplify"), ("dot_transpose",), "dot_transpose, dot_transpos",
              ("mul_simplify", "sine_simplify"), 12,
              # the orders end apart, but only because transpose_transpose creates transpose_is_reshape's match
              # (an identity transpose): one enables the other, they do not compete
              ("transpose_transpose", "transpose_is_reshape"), ("transpose_is_reshape", "transpose_transpose")],
}
# another 1-minimal set than bisect's (with a pattern the default options leave off): right too
OTHER_MINIMAL = {"dot_transpose", "reorder_elementwise_and_shape_op", "transpose_dot_reorder"}
CLOSE = {
    "l3.q1": [7],                   # the count on the program as lowered
    "l3.q2": [["mul_simplify"]],    # half the set
    "l3.q3": ["transpose_transpose",  # one of the four
              # every transpose goes, but involution_neg_simplify is not needed for that: not 1-minimal
              ["dot_transpose", "transpose_dot_reorder", "transpose_is_reshape", "transpose_transpose",
               "involution_neg_simplify"]],
}
