RIGHT = {"l0.q1": 35, "l0.q2": 15}
WRONG = {"l0.q1": [3, 68, "many"], "l0.q2": [0, 1000, "fifteen"]}
CLOSE = {"l0.q2": [4]}  # the last MLIR stage's count
