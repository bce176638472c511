RIGHT = {"l1.q1": 4, "l1.q2": "%arg2", "l1.q3": "f32", "l1.q4": 75}
WRONG = {"l1.q1": [2, 3, 5, "four"], "l1.q2": [0, "%arg9", "w"], "l1.q3": ["bf16", "int32", 3.0],
         "l1.q4": [26, 120, 300]}
CLOSE = {"l1.q1": [3, 5], "l1.q4": [26, 120]}  # params as one argument plus steps; steps counted; steps=3; 10 x steps=1
