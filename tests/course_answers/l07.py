RIGHT = {"l7.q1": 8, "l7.q2": 25, "l7.q3": "transpose_dot_reorder", "l7.q4": 2.71}
WRONG = {"l7.q1": [2, 16, "eight"], "l7.q2": [3, 100],
         "l7.q3": ["dot_transpose", "transpose_transpose", "transpose_dot_reoder", 3], "l7.q4": [1.0, 5, "double"]}
CLOSE = {"l7.q1": [9, 3, 6], "l7.q2": [7, 40, 24], "l7.q4": [3.01, 2.5]}
