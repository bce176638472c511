RIGHT = {"l2.q1": "cse", "l2.q2": 1, "l2.q3": 3, "l2.q4": "inline,cse"}
WRONG = {"l2.q1": ["canonicalize", "inline", "dce", 7],
         "l2.q2": [2, 0, "one"],
         "l2.q3": [1, 0, 6],
         "l2.q4": ["cse,inline", "canonicalize", "inline,cse,canonicalize,cse", "enzyme-hlo-patterns", "inline,,cse",
                   "no-such-pass", 42, ["inline", "cse"]]}
CLOSE = {"l2.q2": [2], "l2.q3": [1], "l2.q4": ["cse,inline", "inline"]}
