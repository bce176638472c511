RIGHT = {"l9.q1": 0, "l9.q2": ("all-reduce", "model"), "l9.q3": 4608, "l9.q4": 5}
WRONG = {"l9.q1": [1, 4, "none"], "l9.q2": [("all-gather", "data"), ("all-reduce", "data"), "all-reduce", ("psum", "model")],
         "l9.q3": [3072, 6144, 2304, 100000, "lots"], "l9.q4": [16, 1, 40, "five"]}
CLOSE = {"l9.q2": [("all-gather", "model"), ("all-reduce", "data")], "l9.q3": [3072, 2304], "l9.q4": [16]}
